"""Public entry points: :func:`solve`, :func:`select`, :func:`list_solvers`."""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

from . import registry
from .exceptions import InvalidInputError, UnsupportedProblemError
from .problems.base import Problem
from .solution import FAILED, Solution

BACKENDS = ("auto", "fast", "reference")

#: ``backend="auto"`` uses the exact reference up to this many points (variables' leading
#: size), where an interior-point solve of the dense program takes about a second here.
AUTO_REFERENCE_MAX_N = 300
#: ``certify`` computes a reference on its own up to this size, and when the reference's cost
#: model predicts at most this many seconds (an SDP on a few hundred points takes minutes).
CERTIFY_REFERENCE_MAX_N = 600
CERTIFY_REFERENCE_MAX_SECONDS = 60.0

_reference_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass
class Selection:
    solver: str
    backend: str
    reason: str
    predicted_time: dict[str, float] = field(default_factory=dict)
    unsupported: dict[str, list[str]] = field(default_factory=dict)

    def __str__(self) -> str:
        times = ", ".join(f"{k} ~{v:.2g}s" for k, v in sorted(self.predicted_time.items()))
        return f"{self.solver} ({self.backend}): {self.reason} [predicted: {times}]"


def list_solvers() -> list[dict]:
    """Every registered solver: name, backend, problem classes, options and description."""
    return [s.describe() for s in registry.solvers().values()]


def select(problem: Problem, backend: str = "auto") -> Selection:
    """Choose a solver for ``problem`` and say why (a documented size/structure rule).

    * ``"reference"``: the exact CVXPY program (primal if available).
    * ``"fast"``: the applicable fast solver with the smallest predicted time.
    * ``"auto"``: the reference when ``n ≤ AUTO_REFERENCE_MAX_N`` (exact and about a second),
      otherwise the fastest applicable fast solver; the reference again if no fast solver
      applies.
    """
    if backend not in BACKENDS:
        raise InvalidInputError(f"backend must be one of {BACKENDS}, got {backend!r}.")
    if not isinstance(problem, Problem):
        raise InvalidInputError(
            f"problem must be an ssl_opt Problem (e.g. ssl_opt.problems.LapSVM), "
            f"got {type(problem).__name__}."
        )
    table = registry.solvers()
    if not table:
        raise UnsupportedProblemError(
            "no solver is registered: install the package (pip install .) so its entry points "
            "load."
        )
    ok = {name: s for name, s in table.items() if s.supports(problem)}
    unsupported = {name: s.missing(problem) for name, s in table.items() if name not in ok}
    predicted = {name: s.predicted_time(problem) for name, s in ok.items()}
    # The fastest predicted reference; on a tie the primal "cvxpy" program.
    refs = sorted((n for n, s in ok.items() if s.backend == "reference"),
                  key=lambda n: (_finite(predicted[n]), n != "cvxpy", n))
    fast = sorted((n for n, s in ok.items() if s.backend == "fast"), key=lambda n: predicted[n])
    n = problem.structure.sizes.get("n", 0)

    def pick(name, reason):
        return Selection(name, table[name].backend, reason, predicted, unsupported)

    if backend == "reference":
        if not refs:
            raise _nothing_applies(problem, "reference", unsupported)
        return pick(refs[0], "reference backend requested")
    if backend == "fast":
        if not fast:
            raise _nothing_applies(problem, "fast", unsupported)
        return pick(fast[0], "fastest applicable fast solver by the cost model")
    if refs and n <= AUTO_REFERENCE_MAX_N:
        return pick(refs[0], f"n = {n} <= {AUTO_REFERENCE_MAX_N}: the exact reference is cheap")
    if fast:
        return pick(fast[0], f"n = {n} > {AUTO_REFERENCE_MAX_N}: fastest applicable fast solver "
                             "by the cost model")
    if refs:
        return pick(refs[0], "no fast solver applies to this problem; using the reference")
    raise _nothing_applies(problem, "any", unsupported)


def solve(problem: Problem, backend: str = "auto", solver: str | None = None,
          **options) -> Solution:
    """Solve ``problem``; ``solver`` names a registered solver, otherwise :func:`select` picks.

    Options go to the solver (e.g. ``tol``, ``max_iter``, ``warm_start``, ``early_stopping``).
    """
    if solver is None:
        selection = select(problem, backend)
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
    predicted = solver.predicted_time(problem)
    if predicted > CERTIFY_REFERENCE_MAX_SECONDS:
        return None, (f"the reference ({solver.name}) is predicted to take {predicted:.0f} s > "
                      f"{CERTIFY_REFERENCE_MAX_SECONDS:.0f} s; pass reference= to certify "
                      "against one you computed")
    ref = solver.solve(problem)
    if ref.status == FAILED:
        return None, f"the reference solver failed: {ref.info.get('reason')}"
    _reference_cache[problem] = ref
    return ref, ""


def _finite(seconds: float) -> float:
    return seconds if seconds == seconds else float("inf")  # NaN (no model) sorts last


def _nothing_applies(problem, kind, unsupported) -> UnsupportedProblemError:
    why = "; ".join(f"{name}: {', '.join(r)}" for name, r in unsupported.items())
    return UnsupportedProblemError(
        f"no {kind} solver can solve this {type(problem).__name__} ({problem.structure.variant})."
        f" Why each registered solver refuses: {why}"
    )
