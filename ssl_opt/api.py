"""Public entry points: :func:`solve`, :func:`select`, :func:`list_solvers`."""

from __future__ import annotations

import weakref

from ssl_opt import registry
from ssl_opt.exceptions import InvalidInputError, UnsupportedProblemError
from ssl_opt.problems.base import Problem
from ssl_opt.selection.select import BACKENDS, Selection, select
from ssl_opt.solution import FAILED, Solution

__all__ = ["BACKENDS", "Selection", "list_solvers", "reference_for", "select", "solve"]

#: ``certify`` computes a reference on its own up to this size, and when the reference's cost
#: model predicts at most this many seconds (an SDP on a few hundred points takes minutes).
CERTIFY_REFERENCE_MAX_N = 600
CERTIFY_REFERENCE_MAX_SECONDS = 60.0

_reference_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def list_solvers() -> list[dict]:
    """Every registered solver: name, backend, problem classes, options and description."""
    return [s.describe() for s in registry.solvers().values()]


def solve(problem: Problem, backend: str = "auto", solver: str | None = None,
          time_budget: float | None = None, memory_budget: float | None = None,
          **options) -> Solution:
    """Solve ``problem``; ``solver`` names a registered solver, otherwise :func:`select` picks
    (with ``time_budget`` seconds and ``memory_budget`` bytes, see :func:`select`).

    Options go to the solver (e.g. ``tol``, ``max_iter``, ``warm_start``, ``early_stopping``).
    """
    if solver is None:
        selection = select(problem, backend, time_budget, memory_budget)
        chosen = registry.get_solver(selection.solver)
    else:
        if backend not in BACKENDS:
            raise InvalidInputError(f"backend must be one of {BACKENDS}, got {backend!r}.")
        chosen = registry.get_solver(solver)
        if backend != "auto" and chosen.backend != backend:
            raise InvalidInputError(
                f"solver {solver!r} is a {chosen.backend} solver, not {backend!r}; "
                "drop backend= or pick a matching solver."
            )
        selection = None
    solution = chosen.solve(problem, **options)
    if selection is not None:
        solution.info["selection"] = str(selection)
    return solution


def reference_for(problem: Problem) -> tuple[Solution | None, str]:
    """The reference optimum of ``problem`` (cached per problem), or ``(None, reason)``."""
    if problem in _reference_cache:
        return _reference_cache[problem], ""
    n = problem.structure.sizes.get("n", 0)
    if n > CERTIFY_REFERENCE_MAX_N:
        return None, f"n = {n} > {CERTIFY_REFERENCE_MAX_N} is too large for the reference"
    try:
        selection = select(problem, "reference")
    except UnsupportedProblemError as exc:
        return None, str(exc)
    solver = registry.get_solver(selection.solver)
    predicted = selection.predicted_time[solver.name]
    if predicted > CERTIFY_REFERENCE_MAX_SECONDS:
        return None, (f"the reference ({solver.name}) is predicted to take {predicted:.0f} s > "
                      f"{CERTIFY_REFERENCE_MAX_SECONDS:.0f} s; pass reference= to certify "
                      "against one you computed")
    ref = solver.solve(problem)
    if ref.status == FAILED:
        return None, f"the reference solver failed: {ref.info.get('reason')}"
    _reference_cache[problem] = ref
    return ref, ""
