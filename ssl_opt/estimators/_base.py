"""What every estimator shares: input validation at ``fit``, the solver choice, the fitted
problems and solutions, and ``certificate()``.

Fitted attributes common to all estimators:

* ``problem_`` / ``solution_``: the underlying :class:`~ssl_opt.problems.base.Problem` and its
  :class:`~ssl_opt.solution.Solution`; lists (one per class, in ``classes_`` order) where the
  estimator is one-vs-rest;
* ``n_features_in_`` (and ``feature_names_in_`` for data frames).

``certificate()`` runs :func:`ssl_opt.certify` on each (problem, solution) pair, so an estimator
user gets the same check against the reference optimum and the KKT residuals as a direct user.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted, validate_data

from ssl_opt import registry
from ssl_opt.api import BACKENDS, select, solve
from ssl_opt.certificate import CERTIFY_REFERENCE_BUDGET, Certificate, certify
from ssl_opt.estimators._labels import LabelLayout, label_layout
from ssl_opt.solution import Solution

#: The ``solver`` values that name a backend (the selector picks the solver), not a solver.
BACKEND_CHOICES = BACKENDS


def solve_with(problem, solver: str, options: dict | None, warm_start=None) -> Solution:
    """Solve ``problem`` with ``solver`` (``"auto"``, ``"fast"``, ``"reference"`` or a
    registered solver name) and the user's ``options``; ``warm_start`` is passed on to solvers
    that declare that option."""
    opts = dict(options or {})
    if solver in BACKEND_CHOICES:
        kwargs = {"backend": solver}
    else:
        kwargs = {"solver": solver}
    if warm_start is not None and _shapes_match(problem, warm_start):
        name = (solver if solver not in BACKEND_CHOICES
                else select(problem, solver, options=opts).solver)
        if "warm_start" in registry.get_solver(name).options:
            opts.setdefault("warm_start", warm_start)
            kwargs = {"solver": name}
    return solve(problem, **kwargs, **opts)


def _shapes_match(problem, solution: Solution) -> bool:
    x = solution.x
    return all(name in x and np.shape(x[name]) == tuple(shape)
               for name, shape in problem.variables.items())


class CertifiedMixin:
    """``certificate()`` and the checks shared by all estimators."""

    def certificate(self, **kwargs) -> Certificate | list[Certificate]:
        """Certify the fitted solution(s) against the problem data (and the reference optimum
        where its predicted time is within budget); keyword arguments go to
        :func:`ssl_opt.certify`. One certificate per class for one-vs-rest estimators."""
        check_is_fitted(self, "solution_")
        if isinstance(self.solution_, list):
            # the reference budget is for the whole fit, not for each class
            kwargs.setdefault("reference_budget",
                              CERTIFY_REFERENCE_BUDGET / max(1, len(self.solution_)))
            return [certify(p, s, **kwargs) for p, s in zip(self.problem_, self.solution_,
                                                             strict=True)]
        return certify(self.problem_, self.solution_, **kwargs)

    def _validate_X_y(self, X, y, *, accept_sparse, min_classes: int = 2,
                      allow_unlabeled: bool = True) -> tuple[np.ndarray, LabelLayout]:
        X = validate_data(self, X, accept_sparse=accept_sparse, dtype=np.float64,
                          ensure_min_samples=2)
        layout = label_layout(y, X.shape[0], min_classes=min_classes,
                              allow_unlabeled=allow_unlabeled)
        self.classes_ = layout.classes
        return X, layout

    def _check_solver_param(self) -> None:
        if not isinstance(self.solver, str) or not self.solver:
            raise ValueError(f"solver must be 'auto', 'fast', 'reference' or a registered "
                             f"solver name, got {self.solver!r}.")
        if self.solver_options is not None and not isinstance(self.solver_options, dict):
            raise ValueError(f"solver_options must be a dict of solver options or None, got "
                             f"{type(self.solver_options).__name__}.")

    def _previous_solutions(self) -> list | None:
        """The previous fit's solutions when ``warm_start=True`` and a fit exists."""
        if not getattr(self, "warm_start", False) or not hasattr(self, "solution_"):
            return None
        prev = self.solution_
        return prev if isinstance(prev, list) else [prev]
