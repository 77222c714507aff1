r"""Multiple-switching TSVM [001 §3.1] for :class:`~ssl_opt.modeling.TransductiveModel`: any
margin loss, any convex penalty on ``w``; each convex inner problem solved by a model solver.

The loop is ``switching_loop`` of ``plugins/linear/tsvm.py`` (docs/design.md §4.2), with MFN
replaced by the best applicable solver of the inner :class:`~ssl_opt.modeling.Model`:

1. fit on the labeled rows (the unlabeled term at weight 0); the ``round(r·u)`` unlabeled rows
   with the largest outputs get the temporary label +1, the rest −1;
2. λ' is raised from ``lam_u_start`` by ``lam_u_factor`` up to its target; at each value the
   inner model is re-solved, warm-started from the last ``w``, then up to ``S`` improving
   label pairs are switched (``switch_labels`` of the TSVM solver, with the model's
   non-decreasing switch gain ``g(o) = φ(−o) − φ(o)``) and the inner model re-solved, while an
   improving pair exists. Each switch lowers the objective at fixed ``w`` by
   ``λ'/(2u)[g(o_j) − g(o_i)] > 0`` and each solve does not raise it, so no labeling repeats
   (up to the inner solver's accuracy: a labeling that comes back stops the solve with status
   ``stalled``; ``max_retrain`` caps the loop).

The inner solver is chosen once, by ``ssl_opt.select(inner, backend="fast")`` on the first
inner model (every inner model has the same terms, only labels and one weight change):
Newton-CG, L-BFGS, FISTA or PDHG by the penalty's and the loss's capabilities, or a family
solver through a lowering (the squared hinge with a ridge is an L2-SVM: MFN; on the named
:class:`~ssl_opt.problems.TSVM` the inner model *is* a ``LinearSVM``, so MFN again, 1.1–1.2×
the time of ``tsvm``, which calls MFN directly and seeds it with its last outputs). The result is
block-optimal — ``w`` optimal for the final labels, no improving switch — which is what
:meth:`TransductiveModel.kkt` checks; it is a local optimum of a non-convex problem.
"""

from __future__ import annotations

import weakref

import numpy as np

from ssl_opt import registry
from ssl_opt._validation import (
    check_bool,
    check_positive,
    instance_of,
    integer,
    optional,
)
from ssl_opt.exceptions import InvalidInputError, UnsupportedProblemError
from ssl_opt.hookspecs import hookimpl
from ssl_opt.modeling.transductive import TransductiveModel
from ssl_opt.plugins.linear.options import SWITCHING_OPTIONS
from ssl_opt.plugins.linear.tsvm import InnerSolveFailed, switching_loop
from ssl_opt.solution import FAILED, OPTIMAL, Solution
from ssl_opt.solvers import Option, Solver

#: Inner solves assumed by ``predicted_time`` (annealing stages plus switching retrainings).
PREDICTED_RETRAINS = 40

#: Problem → (inner solver name or None, reason it is None).
_inner_choice_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _initial_model(problem: TransductiveModel):
    """The inner model of the labeled fit: labels from zero outputs, unlabeled weight 0."""
    return problem.inner_model(problem.balanced_labels(np.zeros(problem.u)), lam_u=0.0)


def inner_choice(problem: TransductiveModel) -> tuple[str | None, str, float]:
    """``(solver name, "", predicted seconds)`` of the fast solver ``select`` picks for the
    inner models, or ``(None, why, nan)``; cached per problem."""
    if problem in _inner_choice_cache:
        return _inner_choice_cache[problem]
    from ssl_opt.selection.select import select

    try:
        selection = select(_initial_model(problem), backend="fast")
    except UnsupportedProblemError as exc:
        found = (None, str(exc), float("nan"))
    else:
        found = (selection.solver, "", float(selection.predicted_time[selection.solver]))
    _inner_choice_cache[problem] = found
    return found


class TransductiveModelSolver(Solver):
    name = "tsvm-model"
    complexity = {"model": (1.0, "inner solves of O(nnz) gradients; retrainings grow with u")}
    tolerance_family = "iterative"
    problem_types = (TransductiveModel,)
    description = ("Multiple-switching TSVM [001 §3.1] on a TransductiveModel (any margin loss, "
                   "any convex penalty on w): gradual λ', up to S label pairs switched per "
                   "retraining, each inner Model solved warm by the best fast model solver.")
    options = {
        **SWITCHING_OPTIONS,
        "tol": Option(None, "the inner solver's 'tol' (None: its own default)",
                      optional(check_positive)),
        "max_retrain": Option(100_000, "cap on inner solves (then stops with max_iterations)",
                              integer(0)),
        "inner_solver": Option(None, "name of the inner Model solver (None: the one "
                               "ssl_opt.select(inner, backend='fast') picks)",
                               optional(instance_of(str))),
        "inner_options": Option(None, "other options for the inner solver (a dict)",
                                optional(instance_of(dict))),
        "warm_start": Option(None, "a Solution or dict with 'w' and balanced ±1 'y_u': start "
                             "at the target λ' from it, skipping the labeled fit and "
                             "annealing"),
        "verbose": Option(False, "print one progress line per λ' stage", check_bool),
    }

    def missing(self, problem) -> list[str]:
        reasons = super().missing(problem)
        if reasons:
            return reasons
        name, why, _ = inner_choice(problem)
        return [] if name is not None else [f"a fast solver for the inner model ({why})"]

    def predicted_time(self, problem) -> float:
        _, _, seconds = inner_choice(problem)
        return 1e-2 + PREDICTED_RETRAINS * seconds

    def _solve(self, problem: TransductiveModel, S, lam_u_start, lam_u_factor, time_limit, tol,
               max_retrain, inner_solver, inner_options, warm_start, verbose) -> Solution:
        solver, extra = self._inner_solver(problem, inner_solver, inner_options, tol)
        counts = {"iterations": 0, "non_optimal": 0}
        last: list[Solution] = []

        def fit(y_u, lam_u, weights):
            opts = dict(extra)
            if last and last[-1].status != FAILED:
                opts["warm_start"] = last[-1]  # its w, and its multipliers for primal-dual solvers
            elif weights is not None:
                opts["warm_start"] = weights
            res = solver.solve(problem.inner_model(y_u, lam_u=lam_u), **opts)
            if res.status == FAILED:
                raise InnerSolveFailed(f"inner solver {res.solver!r} failed: "
                                       f"{res.info.get('reason')}")
            counts["iterations"] += int(res.iterations)
            counts["non_optimal"] += res.status != OPTIMAL
            last[:] = [res]
            weights = _weights(problem, res.x)
            return weights, problem.outputs(weights), res.objective, res.status

        def start():
            return fit(problem.balanced_labels(np.zeros(problem.u)), 0.0, None)[0], 1

        run = switching_loop(problem, fit, start, S, lam_u_start, lam_u_factor, time_limit,
                             max_retrain, warm_start, verbose, self.name)
        x = {**run.weights, "y_u": run.y_u}
        if run.status == FAILED:
            return Solution(x, float("nan"), FAILED, run.retrains, 0.0, self.backend, self.name,
                            run.history, info={"reason": run.reason})
        info = {"switches": run.switches, "retrains": run.retrains, "stages": run.stages,
                "inner_solver": solver.name, "inner_iterations": counts["iterations"],
                "inner_non_optimal": counts["non_optimal"],
                "inner_status": last[-1].status if last else None}
        if last and "multipliers" in last[-1].info:
            info["multipliers"] = last[-1].info["multipliers"]
        return Solution(x, problem.objective(x), run.status, run.retrains, 0.0, self.backend,
                        self.name, run.history, info=info)

    @staticmethod
    def _inner_solver(problem, name, inner_options, tol) -> tuple[Solver, dict]:
        if name is None:
            name, why, _ = inner_choice(problem)
            if name is None:
                raise UnsupportedProblemError(f"no fast solver applies to the inner model: {why}")
        solver = registry.get_solver(name)
        reasons = solver.missing(_initial_model(problem))
        if reasons:
            raise InvalidInputError(f"inner_solver {name!r} cannot solve the inner model: "
                                    + "; ".join(reasons) + ".")
        extra = dict(inner_options or {})
        for key in ("warm_start",):
            if key in extra:
                raise InvalidInputError(f"inner_options must not set {key!r} (the solver "
                                        "warm-starts every inner solve itself).")
        if tol is not None and "tol" in solver.options:
            extra.setdefault("tol", tol)
        return solver, extra


def _weights(problem: TransductiveModel, values) -> dict[str, np.ndarray]:
    """The weight variables (``w``, and ``b`` with a bias) of ``values``, copied."""
    return {k: np.array(values[k], dtype=np.float64) for k in problem.variables if k != "y_u"}


@hookimpl
def register_solvers():
    return [TransductiveModelSolver()]
