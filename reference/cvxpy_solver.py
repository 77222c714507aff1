"""The reference backend: build the exact convex program with CVXPY, solve it with an
interior-point solver chosen explicitly (Clarabel by default; SCS on request for large SDPs).

Each family contributes a *formulation*: ``build(problem) -> (cp.Problem, handles)`` and
``recover(problem, handles) -> dict of variables``. The solver looks the problem type up in its
table, so a new family adds a formulation, not a solver.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import cvxpy as cp

from ssl_opt._validation import check_bool, greater_than, instance_of, optional
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.solution import FAILED, INACCURATE, OPTIMAL, Solution
from ssl_opt.solvers import Option, Solver, lacking_capabilities

#: Tighter than Clarabel's 1e-8 defaults: the reference is the ground truth of certificates.
DEFAULT_SOLVER_OPTIONS = {
    "CLARABEL": {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10},
    "SCS": {"eps_abs": 1e-9, "eps_rel": 1e-9, "max_iters": 200_000},
    "OSQP": {"eps_abs": 1e-10, "eps_rel": 1e-10, "max_iter": 1_000_000, "polishing": True},
}


#: How each CVXPY solver names its wall-clock limit in seconds.
TIME_LIMIT_KEYS = {"CLARABEL": "time_limit", "SCS": "time_limit_secs", "OSQP": "time_limit"}


def installed_cvxpy_solver(value, name: str) -> str:
    """The name of a CVXPY solver installed here (``cvxpy.installed_solvers()``)."""
    installed = cp.installed_solvers()
    if not isinstance(value, str) or value.upper() not in installed:
        raise InvalidInputError(f"{name} must be one of the installed CVXPY solvers "
                                f"{sorted(installed)}, got {value!r}.")
    return value.upper()


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


class CvxpyReference(Solver):
    backend = "reference"
    tolerance_family = "reference"
    options = {
        "cvxpy_solver": Option("CLARABEL", "CVXPY solver name (CLARABEL, SCS, ...)",
                               installed_cvxpy_solver),
        "verbose": Option(False, "print the solver's log", check_bool),
        "solver_options": Option(None, "dict of options passed to the CVXPY solver",
                                 optional(instance_of(dict))),
        "time_limit": Option(None, "wall-clock limit in seconds for CLARABEL, SCS or OSQP "
                             "(the solve then fails with status 'user_limit')",
                             optional(greater_than(0))),
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
        for cls in type(problem).__mro__:
            if cls in self.formulations:
                return self.formulations[cls]
        return None

    def missing(self, problem) -> list[str]:
        form = self._formulation(problem)
        if form is None:
            return super().missing(problem)
        return lacking_capabilities(problem, form.requires) + list(form.missing(problem))

    def predicted_time(self, problem) -> float:
        form = self._formulation(problem)
        if form is not None and form.cost is not None:
            return float(form.cost(problem))
        n = problem.structure.sizes.get("n", 0)
        return 2e-2 + 3e-9 * n**3  # interior point on the dense primal QP, measured order

    def _solve(self, problem, cvxpy_solver, verbose, solver_options, time_limit) -> Solution:
        form = self._formulation(problem)
        prog, handles = form.build(problem)
        kwargs = dict(DEFAULT_SOLVER_OPTIONS.get(cvxpy_solver, {}))
        if time_limit is not None and cvxpy_solver in TIME_LIMIT_KEYS:
            kwargs[TIME_LIMIT_KEYS[cvxpy_solver]] = float(time_limit)
        kwargs.update(solver_options or {})
        try:
            prog.solve(solver=cvxpy_solver, verbose=verbose, **kwargs)
        except cp.error.SolverError as exc:
            return _failed(problem, f"{cvxpy_solver} failed: {exc}")
        if prog.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
            return _failed(problem, f"{cvxpy_solver} returned status {prog.status!r}")
        x = form.recover(problem, handles)
        stats = prog.solver_stats
        return Solution(
            x=x,
            objective=float("nan"),
            status=OPTIMAL if prog.status == cp.OPTIMAL else INACCURATE,
            iterations=int(getattr(stats, "num_iters", 0) or 0),
            time=0.0,
            backend=self.backend,
            solver=self.name,
            info={
                "cvxpy_status": prog.status,
                "cvxpy_value": float(prog.value),
                "cvxpy_solver": cvxpy_solver,
                "solve_time": getattr(stats, "solve_time", None),
                "duality_gap": _duality_gap(stats),
            },
        )


def _duality_gap(stats) -> float | None:
    """|primal − dual| objective reported by Clarabel, when available."""
    extra = getattr(stats, "extra_stats", None)
    p, d = getattr(extra, "obj_val", None), getattr(extra, "obj_val_dual", None)
    if p is None or d is None:
        return None
    return abs(float(p) - float(d))


def _failed(problem, reason: str) -> Solution:
    import numpy as np

    x = {k: np.full(shape, np.nan) for k, shape in problem.variables.items()}
    return Solution(x, float("nan"), FAILED, 0, 0.0, "reference", "", info={"reason": reason})
