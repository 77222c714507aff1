r"""ERE and LRL on raw data: semi-supervised linear classifiers with a graph embedding [004]
(docs/ere.md, docs/design.md §4.5, §7).

``fit(X, y)`` builds the similarity ``A`` of the training points (a kNN graph, heat weights by
default, or the ``affinity`` passed to ``fit``), puts the labeled points first
(``LabelLayout.order``), and solves, with ``r_i = Wᵀx_i + b − f_i`` and ``F_l = Y``:

* ``EREClassifier(robust=True)`` [004 eq. 9]:
  ``Σ_{i<j} A_ij ‖f_i − f_j‖₂ + α Σ_i ‖r_i‖₂ + β‖W‖_F²``;
* ``EREClassifier(robust=False)`` [004 eq. 8]: the same with squared norms;
* ``LRLClassifier`` [004 eq. 5]: ``tr(WᵀXᵀLXW) + α‖X_l W + 1bᵀ − Y‖_F² + β‖W‖_F²``.

Targets. A 1-D ``y`` (any label values, ``-1`` for unlabeled samples) is single-label: Y is the
one-hot matrix of the labeled points, natively multi-class (two classes are two columns too).
A 2-D 0/1 indicator ``y`` (n, c) with c >= 2 is multi-label: a row of ``-1`` in every column
marks an unlabeled sample, a row of zeros a labeled sample in no class; ``classes_`` is
``arange(c)``.

Prediction is out of sample through the linear model, ``S = X_new W + 1bᵀ`` [004]:
single-label ``classes_[argmax S]``; multi-label class k when ``S_k ≥ τ_k``, with ``τ_k`` the
mean score ``X_l W + b`` of the labeled positives of class k (``problem.thresholds``,
``thresholds_``). ``decision_function`` follows scikit-learn's conventions: ``S`` (n, c) for more
than two classes, ``S_1 − S_0`` (n,) for two, and ``S − τ`` in multi-label mode (positive where
the class is assigned). ``coef_`` is ``Wᵀ`` (c, d) and ``intercept_`` is ``b`` (c,), in every
mode. ``transduction_`` labels the training points from F (ERE; ``XW + b`` for LRL), with the
given labels on the labeled points.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from ssl_opt._validation import check_bool, check_positive
from ssl_opt.builders import knn_graph
from ssl_opt.builders.laplacian import validated_adjacency
from ssl_opt.estimators._base import (
    CertifiedMixin,
    SemiSupervisedClassifierMixin,
    checked_X,
    solve_with,
)
from ssl_opt.estimators._diagnostics import (
    DegenerateProblemWarning,
    one_class_takes_all,
    warn_if_disconnected,
    warn_if_one_class_takes_all,
)
from ssl_opt.estimators._iterations import ITERATION_DOC, fitting, iteration_settings
from ssl_opt.estimators._kernels import check_graph_params, neighbours_for
from ssl_opt.estimators._labels import UNLABELED, label_layout
from ssl_opt.exceptions import warn
from ssl_opt.problems.ere.lrl import LRL
from ssl_opt.problems.ere.problem import ERE

_MINUS_ONE_IS_UNLABELED = (
    "its last case labels the classes -1 and 1, but -1 marks an unlabeled sample in "
    "scikit-learn's semi-supervised convention (the check exempts LabelSpreading by name for "
    "this reason), so only one class is labeled and fit refuses it; its string and object "
    "labels are tested in tests/estimators/test_ere.py")

#: ``EREClassifier(alpha="auto")`` doubles α from the graph's mean degree at most this often.
AUTO_ALPHA_DOUBLINGS = 6

#: Checks of scikit-learn's suite that cannot hold for these estimators, with the reason.
EXPECTED_FAILED_CHECKS: dict[str, dict[str, str]] = {
    "EREClassifier": {"check_classifiers_classes": _MINUS_ONE_IS_UNLABELED},
    "LRLClassifier": {"check_classifiers_classes": _MINUS_ONE_IS_UNLABELED},
}


def _targets(y, n: int) -> tuple[np.ndarray, np.ndarray, int, np.ndarray, np.dtype | None]:
    """``(classes, order, n_labeled, Y, multilabel_dtype)`` of single- or multi-label ``y``:
    ``order`` puts the labeled samples first (stable), ``Y`` (l, c) is the 0/1 label matrix of
    the labeled samples in that order, and ``multilabel_dtype`` is y's dtype in multi-label mode
    (None for single-label)."""
    if y is None:
        raise ValueError("This estimator requires y to be passed, but the target y is None; "
                         "pass one label per sample (-1 for unlabeled).")
    arr = np.asarray(y)
    if not (arr.ndim == 2 and arr.shape[1] >= 2):
        layout = label_layout(y, n)
        return layout.classes, layout.order, layout.n_labeled, layout.indicator(), None
    if arr.shape[0] != n:
        raise ValueError(f"y has {arr.shape[0]} rows but X has {n} samples; pass one row per "
                         "sample (all -1 for unlabeled).")
    if arr.dtype.kind not in "iub" and not (
            arr.dtype.kind == "f" and np.all(np.isfinite(arr))
            and np.array_equal(arr, np.round(arr))):
        raise ValueError("a 2-D y is a multi-label indicator matrix: it must hold 0/1 (and rows "
                         f"of -1 for unlabeled samples), got dtype {arr.dtype}.")
    unlabeled = np.all(arr == UNLABELED, axis=1)
    Yl = arr[~unlabeled]
    if not np.all((Yl == 0) | (Yl == 1)):
        raise ValueError("a 2-D y is a multi-label indicator matrix: labeled rows must hold "
                         "only 0 and 1, and an unlabeled sample has -1 in every column.")
    if Yl.shape[0] == 0:
        raise ValueError("y has no labeled sample (every row is -1); label at least one "
                         "sample of each class.")
    empty = np.flatnonzero(Yl.sum(axis=0) == 0)
    if empty.size:
        raise ValueError(f"columns {empty.tolist()} of y have no labeled positive: a class "
                         "needs at least one labeled sample to be learned (drop the column).")
    order = np.concatenate([np.flatnonzero(~unlabeled), np.flatnonzero(unlabeled)])
    return np.arange(arr.shape[1]), order, Yl.shape[0], Yl.astype(np.float64), arr.dtype


def _collapsed(problem, solution, scores: np.ndarray, n_labeled: int, multilabel) -> bool:
    """A constant linear model, or (single label) every unlabeled point in one class."""
    if _is_constant(scores):
        return True
    return multilabel is None and one_class_takes_all(problem.predict(solution)[n_labeled:],
                                                      scores.shape[1])


def _is_constant(scores: np.ndarray) -> bool:
    """The linear model's scores ``XW + 1bᵀ`` on the training points span less than 1e-3 in
    every class (labels are 0/1, so a working model spreads them by O(1)): W ≈ 0 and every
    point gets the same prediction."""
    return scores.shape[0] > 1 and float(np.ptp(scores, axis=0).max()) < 1e-3


def _warn_if_constant(scores: np.ndarray) -> str | None:
    """Warn when :func:`_is_constant`; returns the reason, or None."""
    if not _is_constant(scores):
        return None
    warn("The fitted linear model is nearly constant (W ≈ 0): every point gets the "
         "same prediction. With few labels robust ERE's total-variation graph term "
         "keeps each label on its own point [004 eq. 9] (docs/ere.md); raise alpha "
         "(alpha='auto' does), use robust=False, or more labels.",
         DegenerateProblemWarning)
    return "the fitted linear model is constant (W ≈ 0)"


class _EmbeddingClassifier(CertifiedMixin, SemiSupervisedClassifierMixin, BaseEstimator):
    """Shared by :class:`EREClassifier` and :class:`LRLClassifier` (parameters there)."""

    def __init__(self, alpha: float = 1.0, beta: float = 0.01, *, n_neighbors: int = 10,
                 graph_weights: str = "heat", sigma: float | None = None, solver: str = "auto",
                 solver_options: dict | None = None, warm_start: bool = False,
                 max_iter: int | None = None, tol: float | None = None, verbose: int = 0):
        self.alpha = alpha
        self.beta = beta
        self.n_neighbors = n_neighbors
        self.graph_weights = graph_weights
        self.sigma = sigma
        self.solver = solver
        self.solver_options = solver_options
        self.warm_start = warm_start
        self.max_iter = max_iter
        self.tol = tol
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.multi_output = True
        tags.classifier_tags.multi_label = True
        return tags

    def _problem(self, X, A, Y, alpha: float):
        raise NotImplementedError

    def _auto_alpha(self) -> bool:
        return False

    def _alphas(self, A) -> list[float]:
        """The values of α to try, in order (the first whose fit is not degenerate is kept)."""
        return [float(self.alpha)]

    def _check_params(self) -> None:
        self._check_solver_param()
        if not self._auto_alpha():
            check_positive(self.alpha, "alpha")
        check_positive(self.beta, "beta")
        check_graph_params(self.n_neighbors, self.graph_weights, self.sigma)
        check_bool(self.warm_start, "warm_start")

    @fitting
    def fit(self, X, y, affinity=None):
        """Fit on ``X`` (n, d) and ``y``: 1-D labels (any values, ``-1`` unlabeled) or a 2-D
        0/1 multi-label indicator (rows of ``-1`` unlabeled).

        ``affinity`` (n, n), optional: a precomputed symmetric non-negative similarity with
        zero diagonal, in the order of X's rows, used instead of the kNN graph.
        """
        self._check_params()
        X = checked_X(self, X, accept_sparse="csr", ensure_min_samples=2)
        n = X.shape[0]
        self.classes_, order, n_labeled, Y, self._multilabel_dtype = _targets(y, n)
        if affinity is not None:
            A = validated_adjacency(affinity, "affinity")
            if A.shape != (n, n):
                raise ValueError(f"affinity must be (n_samples, n_samples) = ({n}, {n}) to "
                                 f"match X, got shape {A.shape}.")
        else:
            A = knn_graph(X, n_neighbors=neighbours_for(self.n_neighbors, n),
                          weights=self.graph_weights, sigma=self.sigma)
        labeled = np.zeros(n, dtype=bool)
        labeled[order[:n_labeled]] = True
        self.n_components_ = warn_if_disconnected(A, labeled)
        Xo, Ao = X[order], A[order][:, order]
        previous = self._previous_solutions()
        start = previous[0] if previous else None
        for alpha in self._alphas(A):
            problem = self._problem(Xo, Ao, Y, alpha)
            solution = solve_with(problem, self.solver, self.solver_options, start,
                                  iteration_settings(self))
            scores = problem.model_scores(solution)
            if not _collapsed(problem, solution, scores, n_labeled, self._multilabel_dtype):
                break
            start = solution
        self.alpha_ = alpha
        self.problem_, self.solution_ = problem, solution
        self.degenerate_ = _warn_if_constant(scores)
        W, b = solution.x["W"], solution.x["b"]
        self.coef_ = np.array(W.T)
        self.intercept_ = np.array(b)
        multilabel = self._multilabel_dtype is not None
        self.thresholds_ = problem.thresholds(solution) if multilabel else None
        self._fit_probability(self._decision(scores[:n_labeled]), Y, multilabel)
        pred = problem.predict(solution, multilabel=multilabel)
        if multilabel:
            pred[:n_labeled] = Y  # the given labels (F_l = Y); τ is a rule for unknown points
            trans = pred.astype(self._multilabel_dtype)
        else:
            trans = self.classes_[pred]
        inverse = np.empty_like(order)
        inverse[order] = np.arange(n)
        self.transduction_ = trans[inverse]
        if not multilabel and self.degenerate_ is None:
            self.degenerate_ = warn_if_one_class_takes_all(trans[n_labeled:], len(self.classes_))
        return self

    def _scores(self, X) -> np.ndarray:
        check_is_fitted(self, "solution_")
        X = checked_X(self, X, accept_sparse="csr", reset=False)
        return self.problem_.model_scores(self.solution_, X)

    def decision_function(self, X) -> np.ndarray:
        """``S = X W + 1bᵀ`` [004] in scikit-learn's shapes: (n, c) for c > 2 classes,
        ``S_1 − S_0`` (n,) for two, ``S − τ`` (n, c) in multi-label mode."""
        return self._decision(self._scores(X))

    def _decision(self, S: np.ndarray) -> np.ndarray:
        if self._multilabel_dtype is not None:
            return S - self.thresholds_[None, :]
        if S.shape[1] == 2:
            return S[:, 1] - S[:, 0]
        return S

    def predict(self, X) -> np.ndarray:
        """``classes_[argmax S]``, or in multi-label mode the 0/1 matrix ``S ≥ τ`` (y's
        dtype), ``S = X W + 1bᵀ`` (``problem_.predict`` with ``X_new``)."""
        check_is_fitted(self, "solution_")
        X = checked_X(self, X, accept_sparse="csr", reset=False)
        if self._multilabel_dtype is not None:
            pred = self.problem_.predict(self.solution_, X_new=X, multilabel=True)
            return pred.astype(self._multilabel_dtype)
        return self.classes_[self.problem_.predict(self.solution_, X_new=X)]


_ALPHA_DOC = """
    alpha : float > 0, default 1.0
        Weight α of the fit of the linear model, ``α‖X_l W + 1bᵀ − Y‖²``."""

_ERE_ALPHA_DOC = """
    alpha : "auto" or float > 0, default "auto"
        Weight α of the fit of the linear model to the embedding, ``α Σ‖r_i‖``. ``"auto"``:
        the graph's mean weighted degree, doubled (six times at most) until the fit is not
        degenerate; with few labels a small α lets the total-variation graph term keep each
        label on its own point and make F constant (module docstring). The value used is
        ``alpha_``."""

_PARAMS_DOC = """
    beta : float > 0
        Weight β of ``‖W‖_F²``.
    n_neighbors : int >= 1, default 10
        Neighbours per point of the kNN graph (cut to n − 1 with a warning).
    graph_weights : {"heat", "binary"}, default "heat"
    sigma : float > 0 or None
        Heat-kernel width; None: the mean kNN distance (``knn_graph``'s default).
    solver : str, default "auto"
        ``"auto"``, ``"fast"``, ``"reference"`` or a registered solver (``"irls"``,
        ``"cvxpy"``).
    solver_options : dict or None
        Options passed to the solver.
    warm_start : bool, default False
        Start the solver from the previous fit's solution when the shapes match.
""" + ITERATION_DOC + """
    Attributes
    ----------
    n_iter_, classes_, coef_ (c, d) = Wᵀ, intercept_ (c,) = b, thresholds_ (multi-label τ,
    else None), transduction_, n_components_, n_features_in_, problem_, solution_, alpha_
    (the α used), probability_scale_ (``predict_proba``'s temperature), degenerate_ (why the fit is
    degenerate, or None: ``score`` is then NaN).
"""


class EREClassifier(_EmbeddingClassifier):
    __doc__ = r"""Elastic and robust embedding (ERE) [004 eq. 9], or its squared form [004 eq. 8]
    with ``robust=False`` (module docstring): a linear classifier ``Wᵀx + b`` fitted to a label
    embedding F that is smooth on the graph, with F clamped to the labels on labeled points.

    Parameters
    ----------
    robust : bool, default True
        Non-squared norms (total variation on the graph and robust fit) [004 eq. 9].""" \
        + _ERE_ALPHA_DOC + _PARAMS_DOC

    def __init__(self, alpha: float | str = "auto", beta: float = 0.01, *, robust: bool = True,
                 n_neighbors: int = 10, graph_weights: str = "heat", sigma: float | None = None,
                 solver: str = "auto", solver_options: dict | None = None,
                 warm_start: bool = False, max_iter: int | None = None,
                 tol: float | None = None, verbose: int = 0):
        super().__init__(alpha, beta, n_neighbors=n_neighbors, graph_weights=graph_weights,
                         sigma=sigma, solver=solver, solver_options=solver_options,
                         warm_start=warm_start, max_iter=max_iter, tol=tol, verbose=verbose)
        self.robust = robust

    def _check_params(self) -> None:
        super()._check_params()
        check_bool(self.robust, "robust")

    def _problem(self, X, A, Y, alpha: float):
        return ERE(X, A, Y, alpha, self.beta, robust=self.robust)

    def _auto_alpha(self) -> bool:
        return isinstance(self.alpha, str) and self.alpha == "auto"

    def _alphas(self, A) -> list[float]:
        """``alpha="auto"``: the mean weighted degree of the graph, doubled until the fit is
        not degenerate, six times at most (module docstring)."""
        if not self._auto_alpha():
            return super()._alphas(A)
        degree = float(A.sum()) / A.shape[0]
        base = degree if degree > 0 else 1.0
        return [base * 2.0**k for k in range(AUTO_ALPHA_DOUBLINGS + 1)]


class LRLClassifier(_EmbeddingClassifier):
    __doc__ = r"""Linearly regularized Laplacian (LRL), ERE's rigid baseline [004 eq. 5]:
    ``min tr(WᵀXᵀLXW) + α‖X_l W + 1bᵀ − Y‖_F² + β‖W‖_F²``, one (d+1)×(d+1) linear solve.

    Parameters
    ----------""" + _ALPHA_DOC + _PARAMS_DOC

    def _problem(self, X, A, Y, alpha: float):
        return LRL(X, A, Y, alpha, self.beta)


__all__ = ["EXPECTED_FAILED_CHECKS", "EREClassifier", "LRLClassifier"]
