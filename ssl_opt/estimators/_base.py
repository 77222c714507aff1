"""What every estimator shares: input validation at ``fit``, the solver choice, the fitted
problems and solutions, and ``certificate()``.

Fitted attributes common to all estimators:

* ``problem_`` / ``solution_``: the underlying :class:`~ssl_opt.problems.base.Problem` and its
  :class:`~ssl_opt.solution.Solution`; lists (one per class, in ``classes_`` order) where the
  estimator is one-vs-rest;
* ``n_features_in_`` (and ``feature_names_in_`` for data frames);
* ``n_iter_``: the solver's iterations (one per class where one-vs-rest);
* classifiers: ``probability_scale_``, the temperature ``A`` of ``predict_proba``
  (:mod:`ssl_opt.estimators._probability`).

``certificate()`` runs :func:`ssl_opt.certify` on each (problem, solution) pair, so an estimator
user gets the same check against the reference optimum and the KKT residuals as a direct user.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import ClassifierMixin
from sklearn.utils import _safe_indexing
from sklearn.utils.validation import check_is_fitted, validate_data

from ssl_opt import registry
from ssl_opt.api import BACKENDS, select, solve
from ssl_opt.certificate import CERTIFY_REFERENCE_BUDGET, Certificate, certify
from ssl_opt.estimators._diagnostics import DegenerateProblemWarning
from ssl_opt.estimators._iterations import settings_for
from ssl_opt.estimators._labels import UNLABELED, LabelLayout, label_layout, unlabeled_mask
from ssl_opt.estimators._probability import fit_scale, log_probabilities, probabilities
from ssl_opt.solution import Solution

#: The ``solver`` values that name a backend (the selector picks the solver), not a solver.
BACKEND_CHOICES = BACKENDS


def checked_X(estimator, X, *, name: str = "X", **kwargs):
    """scikit-learn's ``validate_data`` (float64), with the failures a user can fix named.

    Non-numeric entries raise a ``ValueError`` naming ``name`` and the fix, an error about
    another array than ``X`` (``X_val``) names it, and so does a scale whose squares overflow
    float64: kernels, distances and Gram products square X's entries, so ``max|x|² · n · d``
    must be finite (X scaled by 1e200 would otherwise give inf kernels or chance-level
    predictions).
    """
    try:
        X = validate_data(estimator, X, dtype=np.float64, **kwargs)
    except ValueError as exc:
        text = str(exc)
        if "convert" in text and ("string" in text or "float" in text):
            raise ValueError(f"{name} must hold numbers only ({text}); encode categorical "
                             "columns first, e.g. with sklearn.preprocessing.OneHotEncoder."
                             ) from exc
        if name != "X":
            raise ValueError(f"{name} is invalid: {text} (said of {name}, not of X).") from exc
        raise
    values = X.data if sp.issparse(X) else X
    if values.size:
        top = float(np.max(np.abs(values)))
        if not np.isfinite(top * top * X.shape[0] * X.shape[1]):
            raise ValueError(f"{name} has entries up to {top:.3g} in magnitude: their squares "
                             "overflow float64, so kernels, distances and Gram products would "
                             f"be inf. Scale {name} first, e.g. with "
                             "sklearn.preprocessing.StandardScaler.")
    return X


def solve_with(problem, solver: str, options: dict | None, warm_start=None,
               settings: dict | None = None, strict: bool | None = None) -> Solution:
    """Solve ``problem`` with ``solver`` (``"auto"``, ``"fast"``, ``"reference"`` or a
    registered solver name) and the user's ``options``; ``warm_start`` is passed on to solvers
    that declare that option.

    ``settings`` (the estimator's ``max_iter``/``tol``, :mod:`._iterations`) go to the solver
    after it is chosen, only where it declares them (to each class's solver through
    ``class_defaults`` for ``one-vs-rest``), so they never steer ``select``; ``strict`` (default:
    ``solver`` is a name, not a backend) makes a setting the solver lacks an error.
    """
    opts = dict(options or {})
    settings = {k: v for k, v in (settings or {}).items() if k not in opts}
    is_backend = solver in BACKEND_CHOICES
    if is_backend and warm_start is None and not settings:
        return solve(problem, backend=solver, **opts)
    selection = select(problem, solver, options=opts) if is_backend else None
    name = solver if selection is None else selection.solver
    chosen = registry.get_solver(name)
    if warm_start is not None and _shapes_match(problem, warm_start) \
            and "warm_start" in chosen.options:
        opts.setdefault("warm_start", warm_start)
    if settings and "class_defaults" in chosen.options:
        opts.setdefault("class_defaults", settings)
    elif settings:
        opts.update(settings_for(chosen, settings,
                                 strict=not is_backend if strict is None else strict))
    solution = solve(problem, solver=name, **opts)
    if selection is not None:
        solution.info.setdefault("selection", str(selection))
    return solution


def _shapes_match(problem, solution: Solution) -> bool:
    x = solution.x
    return all(name in x and np.shape(x[name]) == tuple(shape)
               for name, shape in problem.variables.items())


class SemiSupervisedClassifierMixin(ClassifierMixin):
    """scikit-learn's classifier mixin whose ``score`` leaves out the unlabeled targets, with
    ``predict_proba`` from the decision values by one temperature fitted on the labeled
    points (:mod:`ssl_opt.estimators._probability`)."""

    def _fit_probability(self, decision_labeled, indicator, multilabel: bool = False) -> None:
        """Fit ``probability_scale_`` from the labeled points' decision values (binary (l,),
        else (l, c)) and their 0/1 class indicator (l, c)."""
        self.probability_scale_ = fit_scale(decision_labeled, indicator, multilabel)

    def _multilabel(self) -> bool:
        return getattr(self, "_multilabel_dtype", None) is not None

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities, (n, n_classes) in the order of ``classes_``.

        ``softmax(A · s(X))`` of the decision values ``s`` (two classes:
        ``σ(A · decision_function(X))`` for ``classes_[1]``), one temperature ``A =
        probability_scale_`` fitted at ``fit`` on the labeled points against Platt's smoothed
        targets: ``argmax`` is ``predict``, and few labels give moderate probabilities. In
        multi-label mode, column k is ``σ(A (S_k − τ_k))``, label k's probability. See
        ``docs/estimators.md`` ("Probabilities").
        """
        check_is_fitted(self, "probability_scale_")
        return probabilities(self.decision_function(X), self.probability_scale_,
                             self._multilabel())

    def predict_log_proba(self, X) -> np.ndarray:
        """``log predict_proba(X)``, computed without underflow."""
        check_is_fitted(self, "probability_scale_")
        return log_probabilities(self.decision_function(X), self.probability_scale_,
                                 self._multilabel())

    def score(self, X, y, sample_weight=None) -> float:
        """Mean accuracy on the labeled targets of ``y``: entries equal to ``-1`` (rows of
        ``-1`` in a 2-D ``y``), the unlabeled mark of ``fit``, are left out.

        Raises ``ValueError`` when no target is labeled, as in a cross-validation test fold
        of unlabeled points only: split with
        :class:`~ssl_opt.model_selection.LabeledKFold`, which tests on labeled points only.

        NaN, with a :class:`DegenerateProblemWarning`, when the fit is degenerate
        (``degenerate_``: a constant model, every unlabeled point in one class): a grid
        search then ranks it last instead of preferring it on a fold where one class happens
        to score well.
        """
        reason = getattr(self, "degenerate_", None)
        if reason:
            warnings.warn(f"score is NaN: this fit is degenerate ({reason}), so its accuracy "
                          "says nothing about its parameters; a grid search ranks it last.",
                          DegenerateProblemWarning, stacklevel=2)
            return float("nan")
        y = np.asarray(y)
        unlabeled = (np.all(y == UNLABELED, axis=1) if y.ndim == 2 and y.dtype.kind in "iuf"
                     else unlabeled_mask(y) if y.ndim == 1 else np.zeros(len(y), dtype=bool))
        if unlabeled.all():
            raise ValueError("y has no labeled target (every entry is -1, the unlabeled "
                             "mark), so there is nothing to score; in cross-validation "
                             "use ssl_opt.model_selection.LabeledKFold as cv.")
        if not unlabeled.any():
            return super().score(X, y, sample_weight=sample_weight)
        keep = np.flatnonzero(~unlabeled)
        weights = None if sample_weight is None else np.asarray(sample_weight)[keep]
        return super().score(_safe_indexing(X, keep), y[keep], sample_weight=weights)


class CertifiedMixin:
    """``certificate()``, ``n_iter_`` and the checks shared by all estimators."""

    @property
    def n_iter_(self) -> int | np.ndarray:
        """The solver's iterations in the last fit (as it counts them: Newton steps, sweeps,
        switches): an int, or an array with one entry per class for a one-vs-rest fit."""
        check_is_fitted(self, "solution_")
        if isinstance(self.solution_, list):
            return np.array([s.iterations for s in self.solution_], dtype=np.int64)
        return int(self.solution_.iterations)

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
        X = checked_X(self, X, accept_sparse=accept_sparse, ensure_min_samples=2)
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
