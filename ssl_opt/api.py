"""Public entry points: :func:`solve`, :func:`select`, :func:`list_solvers`."""

from __future__ import annotations

from ssl_opt import registry
from ssl_opt._validation import check_bool
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.problems.base import Problem
from ssl_opt.selection.race import RACE_EXCLUDES, run_race
from ssl_opt.selection.select import BACKENDS, Selection, select
from ssl_opt.solution import Solution

__all__ = ["BACKENDS", "Selection", "list_solvers", "select", "solve"]

def list_solvers() -> list[dict]:
    """Every registered solver: name, backend, problem classes, options and description."""
    return [s.describe() for s in registry.solvers().values()]


def solve(problem: Problem, backend: str = "auto", solver: str | None = None,
          time_budget: float | None = None, memory_budget: float | None = None,
          race: bool = True, **options) -> Solution:
    """Solve ``problem``; ``solver`` names a registered solver, otherwise :func:`select` picks
    among the solvers that take every option given (with ``time_budget`` seconds and
    ``memory_budget`` bytes, see :func:`select`).

    When the selection is too close to call and planned a race (``Selection.race``: an
    iterative candidate run for a slice of its rival's predicted time and extrapolated on its
    residual, :mod:`ssl_opt.selection.race`), ``race=True`` runs it; ``race=False``, or any of
    the options a race sets or that fix the run (``time_limit``, ``warm_start``,
    ``max_iter``, ``callback``, ``early_stopping``), runs the choice alone.
    ``solution.info["race"]`` says what the race saw and did.

    Options go to the solver (e.g. ``tol``, ``max_iter``, ``warm_start``, ``early_stopping``).
    """
    check_bool(race, "race")
    if solver is None:
        selection = select(problem, backend, time_budget, memory_budget, options=options)
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
    if (selection is not None and selection.race is not None and race
            and not RACE_EXCLUDES & set(options)):
        solution = run_race(problem, selection.race, options)
    else:
        solution = chosen.solve(problem, **options)
    if selection is not None:
        solution.info["selection"] = str(selection)
        solution.info["selection_seconds"] = selection.seconds
    return solution
