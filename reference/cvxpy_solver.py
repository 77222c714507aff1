"""The reference backend: build the exact convex program with CVXPY, solve it with an
interior-point solver (Clarabel by default; SCS or OSQP on request), retrying along other paths
when a solve ends short of optimal (``reference/attempts.py``).

Each family contributes a *formulation*: ``build(problem) -> (cp.Problem, handles)`` and
``recover(problem, handles) -> dict of variables``. The solver looks the problem type up in its
table, so a new family adds a formulation, not a solver.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ssl_opt._validation import check_bool, greater_than, instance_of, integer, optional
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.optional import cvxpy as cp
from ssl_opt.optional import installed
from ssl_opt.reference.attempts import Outcome, solve_until_optimal
from ssl_opt.solution import FAILED, INACCURATE, INFEASIBLE, OPTIMAL, UNBOUNDED, Solution
from ssl_opt.solvers import Option, Solver, lacking_capabilities


def installed_cvxpy_solver(value, name: str) -> str:
    """The name of a CVXPY solver installed here (``cvxpy.installed_solvers()``)."""
    installed = cp.installed_solvers()
    if not isinstance(value, str) or value.upper() not in installed:
        raise InvalidInputError(f"{name} must be one of the installed CVXPY solvers "
                                f"{sorted(installed)}, got {value!r}.")
    return value.upper()


#: The key of a formulation's recovered dict that holds the multipliers of the problem's
#: non-smooth terms and constraints, which the solution carries in ``info["multipliers"]``.
MULTIPLIERS = "__multipliers__"


@dataclass(frozen=True)
class Formulation:
    problem_type: type
    build: Callable
    recover: Callable
    missing: Callable = lambda problem: []  # noqa: E731
    #: Predicted seconds for ``problem`` (None: the generic dense-QP estimate).
    cost: Callable | None = None
    #: Capabilities the program needs from the problem's components, as ``Solver.requires``.
    requires: dict[str, tuple[str, ...]] = field(default_factory=dict)


def formulation_for(table: dict[type, Formulation], problem_type: type) -> Formulation | None:
    """The formulation of ``problem_type`` or of its nearest base class in ``table``."""
    for cls in problem_type.__mro__:
        if cls in table:
            return table[cls]
    return None


class CvxpyReference(Solver):
    backend = "reference"
    needs_packages = ("cvxpy",)
    tolerance_family = "reference"
    options = {
        "cvxpy_solver": Option(None, "CVXPY solver name (CLARABEL, SCS, OSQP, ...); None: "
                               "Clarabel, then SCS if no Clarabel path ends optimal",
                               optional(installed_cvxpy_solver)),
        "verbose": Option(False, "print the solver's log", check_bool),
        "solver_options": Option(None, "dict of options passed to the CVXPY solver",
                                 optional(instance_of(dict))),
        "time_limit": Option(None, "wall-clock limit in seconds for CLARABEL, SCS or OSQP, "
                             "retries included (the solve then fails with status 'user_limit')",
                             optional(greater_than(0))),
        "retries": Option(None, "attempts along other solver paths after a solve that ends "
                          "short of optimal (None: every one of reference/attempts.py; 0: none)",
                          optional(integer(0))),
    }

    def __init__(self, name: str, formulations: list[Formulation], description: str,
                 complexity: dict[str, tuple[float, str]] | None = None,
                 size_keys: dict[str, tuple[str, ...]] | None = None, preference: int = 1):
        self.name = name
        self.preference = preference
        self.description = description
        self.complexity = dict(complexity or {})
        self.size_keys = dict(size_keys or {})
        self.formulations = {f.problem_type: f for f in formulations}
        self.problem_types = tuple(self.formulations)

    def _formulation(self, problem) -> Formulation | None:
        return formulation_for(self.formulations, type(problem))

    def missing(self, problem) -> list[str]:
        form = self._formulation(problem)
        if form is None or not installed("cvxpy"):
            return super().missing(problem)
        return lacking_capabilities(problem, form.requires) + list(form.missing(problem))

    def predicted_time(self, problem) -> float:
        form = self._formulation(problem)
        if form is not None and form.cost is not None:
            return float(form.cost(problem))
        n = problem.structure.sizes.get("n", 0)
        return 2e-2 + 3e-9 * n**3  # interior point on the dense primal QP, measured order

    def _solve(self, problem, cvxpy_solver, verbose, solver_options, time_limit,
               retries) -> Solution:
        form = self._formulation(problem)
        prog, handles = form.build(problem)
        outcome = solve_until_optimal(prog, cvxpy_solver, solver_options,
                                      recover=lambda: form.recover(problem, handles),
                                      time_limit=time_limit, retries=retries, verbose=verbose)
        if outcome.attempt is None:
            return failed_solution(problem, outcome.reason, outcome)
        x = dict(outcome.value)
        extra = {"multipliers": x.pop(MULTIPLIERS)} if MULTIPLIERS in x else {}
        return Solution(
            x=x,
            objective=float("nan"),
            status=OPTIMAL if outcome.optimal else INACCURATE,
            iterations=outcome.stats["iterations"],
            time=0.0,
            backend=self.backend,
            solver=self.name,
            info={
                "cvxpy_status": outcome.status,
                "cvxpy_value": outcome.objective,
                **attempt_info(outcome),
                "solve_time": outcome.stats["solve_time"],
                "duality_gap": outcome.stats["duality_gap"],
                **extra,
            },
        )


def attempt_info(outcome: Outcome) -> dict:
    """What a solution reports of the ladder: the solver and attempt that produced it and the
    outcome of every attempt made (``reference/attempts.py``)."""
    chosen = outcome.attempt
    return {"cvxpy_solver": chosen.solver if chosen else None,
            "attempt": chosen.label if chosen else None,
            "attempts": outcome.attempts}


def failed_solution(problem, reason: str, outcome: Outcome | None = None) -> Solution:
    import numpy as np

    x = {k: np.full(shape, np.nan) for k, shape in problem.variables.items()}
    info = {"reason": reason, **(attempt_info(outcome) if outcome else {})}
    status = outcome.status if outcome and outcome.status in (INFEASIBLE, UNBOUNDED) else FAILED
    return Solution(x, float("nan"), status, 0, 0.0, "reference", "", info=info)
