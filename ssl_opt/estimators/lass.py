r"""LASS on raw data: a semi-supervised classifier by Laplacian assignment [002]
(docs/lass.md, docs/design.md §4.3, §7).

``fit(X, y)`` builds the item–item similarity ``W`` of the training points (a kNN graph with
heat or binary weights, or the ``affinity`` passed to ``fit``), the item–category similarities
``G`` from the labels, and solves

    min_Z  λ tr(ZᵀLZ) − tr(GᵀZ)   s.t.   Z 1_K = 1_N,  Z ≥ 0        [002 eq. 1]

(``L = D − W``, one row of ``Z`` per training point, one column per class).

The label-to-G map: ``G[i, k] = 1`` when sample i is labeled with class ``classes_[k]``, and row
i of G is zero when sample i is unlabeled (``y[i] == -1``: "no category information"). The
paper's "positive similarity for the labeled points" [002 §3.7]; scaling G by a factor is the
same as dividing λ by it, so λ alone sets the trade-off. By [002 Th. 2.7], an unlabeled point
gets the weighted average of its neighbours' rows, and a labeled point keeps its class exactly
(a one-hot row) when ``1/(2λ d_i)`` outweighs its neighbours' disagreement (``d_i`` its degree):
small λ is label propagation with clamped labels, large λ pulls every row toward the class with
the most labels. The default ``lam = 0.01`` keeps the labels for degrees up to ~50.

Prediction on new points is the paper's out-of-sample map [002 §4], ``LASS.out_of_sample``:

    z = Π_simplex(z̄ + g/(2λd)),   z̄ = W_new Z / d,   d = W_new 1,

with ``W_new`` the similarities of the new points to the training points (the same kNN rule and
weights as the training graph, or an ``affinity`` passed to ``predict_proba``) and ``g`` their
item–category similarities (``label_similarity``, default 0: the neighbours' average).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.neighbors import NearestNeighbors
from sklearn.utils.validation import check_is_fitted

from ssl_opt._validation import check_bool, check_positive
from ssl_opt.builders import knn_graph
from ssl_opt.builders.laplacian import validated_adjacency
from ssl_opt.components.simplex import project_rows_to_simplex
from ssl_opt.estimators._base import (
    CertifiedMixin,
    SemiSupervisedClassifierMixin,
    checked_X,
    solve_with,
)
from ssl_opt.estimators._diagnostics import warn_if_disconnected, warn_if_one_class_takes_all
from ssl_opt.estimators._iterations import ITERATION_DOC, fitting, iteration_settings
from ssl_opt.estimators._kernels import check_graph_params, neighbours_for
from ssl_opt.problems.lass.problem import LASS

#: Checks of scikit-learn's suite that cannot hold for these estimators, with the reason.
EXPECTED_FAILED_CHECKS: dict[str, dict[str, str]] = {
    "LaplacianAssignment": {"check_classifiers_classes": (
        "its last case labels the classes -1 and 1, but -1 marks an unlabeled sample in "
        "scikit-learn's semi-supervised convention (the check exempts LabelSpreading by name "
        "for this reason), so only one class is labeled and fit refuses it; its string and "
        "object labels are tested in tests/estimators/test_lass.py")},
}


class LaplacianAssignment(CertifiedMixin, SemiSupervisedClassifierMixin, BaseEstimator):
    __doc__ = r"""Semi-supervised classification by Laplacian assignment (LASS) [002].

    Solves ``min_Z λ tr(ZᵀLZ) − tr(GᵀZ)`` over row-stochastic ``Z ≥ 0`` (module docstring):
    the rows of Z are class distributions of the training points, natively multi-class.

    Parameters
    ----------
    lam : float > 0, default 0.01
        Weight λ of the Laplacian term (G holds 1 at each labeled point's class).
    n_neighbors : int >= 1, default 10
        Neighbours per point of the kNN graph (cut to n − 1 with a warning), also used for the
        out-of-sample similarities.
    graph_weights : {"heat", "binary"}, default "heat"
        ``exp(−‖x_i − x_j‖²/(2σ²))`` or 1 on each kNN edge.
    sigma : float > 0 or None
        Heat-kernel width; None: the mean kNN distance of the training points (``sigma_``).
    solver : str, default "auto"
        ``"auto"``, ``"fast"``, ``"reference"`` or a registered solver (``"fista"``,
        ``"admm-split"``, ``"pdhg"``, ``"cvxpy"``).
    solver_options : dict or None
        Options passed to the solver (e.g. ``{"tol": 1e-10}``).
    warm_start : bool, default False
        Start the solver from the previous fit's Z when the shapes match.
""" + ITERATION_DOC + r"""
    Attributes
    ----------
    n_iter_ : the solver's iterations.
    label_distributions_ : (n_samples, n_classes) rows of Z (projected onto the simplex to
        remove round-off), in the original sample order, like ``LabelSpreading``.
    transduction_ : labels of the training points, ``classes_[argmax Z_i]``.
    classes_, n_features_in_, problem_ (:class:`~ssl_opt.problems.LASS`), solution_,
    sigma_ (heat width used, None for binary weights or a precomputed affinity),
    n_neighbors_ (the graph's), n_components_ (connected components of the graph).
    """

    def __init__(self, lam: float = 0.01, *, n_neighbors: int = 10, graph_weights: str = "heat",
                 sigma: float | None = None, solver: str = "auto",
                 solver_options: dict | None = None, warm_start: bool = False,
                 max_iter: int | None = None, tol: float | None = None, verbose: int = 0):
        self.lam = lam
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
        return tags

    def _check_params(self) -> None:
        self._check_solver_param()
        check_positive(self.lam, "lam")
        check_graph_params(self.n_neighbors, self.graph_weights, self.sigma)
        check_bool(self.warm_start, "warm_start")

    # ------------------------------------------------------------------ fit
    @fitting
    def fit(self, X, y, affinity=None) -> LaplacianAssignment:
        """Fit on ``X`` (n, d) and labels ``y`` (any values, ``-1`` for unlabeled samples).

        ``affinity`` (n, n), optional: a precomputed symmetric non-negative similarity with zero
        diagonal, in the order of X's rows, used instead of the kNN graph; ``predict_proba``
        then needs the new points' similarities to the training points.
        """
        self._check_params()
        X, layout = self._validate_X_y(X, y, accept_sparse="csr")
        n = X.shape[0]
        if affinity is not None:
            W = validated_adjacency(affinity, "affinity")
            if W.shape != (n, n):
                raise ValueError(f"affinity must be (n_samples, n_samples) = ({n}, {n}) to "
                                 f"match X, got shape {W.shape}.")
            self.sigma_, self.n_neighbors_, self._nn = None, None, None
        else:
            W = self._knn_graph(X)
        labeled = np.zeros(n, dtype=bool)
        labeled[layout.order[: layout.n_labeled]] = True
        self.n_components_ = warn_if_disconnected(W, labeled)
        G = np.zeros((n, layout.n_classes))
        G[layout.order[: layout.n_labeled], layout.codes] = 1.0
        problem = LASS(W, G, self.lam)
        previous = self._previous_solutions()
        solution = solve_with(problem, self.solver, self.solver_options,
                              previous[0] if previous else None, iteration_settings(self))
        self.problem_, self.solution_ = problem, solution
        self.label_distributions_ = project_rows_to_simplex(problem.prediction(solution))
        self.transduction_ = self.classes_[np.argmax(self.label_distributions_, axis=1)]
        self.degenerate_ = warn_if_one_class_takes_all(self.transduction_[~labeled],
                                                       layout.n_classes)
        return self

    def _knn_graph(self, X):
        """kNN graph of the training points; fixes ``n_neighbors_``, ``sigma_`` and the
        neighbour index used out of sample."""
        k = neighbours_for(self.n_neighbors, X.shape[0])
        self.n_neighbors_ = k
        self._nn = NearestNeighbors(n_neighbors=k).fit(X)
        if self.graph_weights == "heat":
            if self.sigma is None:
                dist, _ = self._nn.kneighbors(None)
                mean = float(dist.mean())  # knn_graph's default width, fixed for prediction
                self.sigma_ = mean if mean > 0 else 1.0
            else:
                self.sigma_ = float(self.sigma)
        else:
            self.sigma_ = None
        return knn_graph(X, n_neighbors=k, weights=self.graph_weights, sigma=self.sigma_)

    # ------------------------------------------------------------------ prediction
    def _new_similarities(self, X) -> sp.csr_matrix:
        """(m, n_train) kNN similarities of new points to the training points, with the
        training graph's weights."""
        dist, ind = self._nn.kneighbors(X)
        m, k = ind.shape
        if self.sigma_ is None:
            vals = np.ones(dist.size)
        else:
            vals = np.exp(-(dist.ravel() ** 2) / (2.0 * self.sigma_ ** 2))
        return sp.csr_matrix((vals, (np.repeat(np.arange(m), k), ind.ravel())),
                             shape=(m, self.problem_.N))

    def predict_proba(self, X, affinity=None, label_similarity=None) -> np.ndarray:
        """Class distributions of new points by the out-of-sample map [002 §4]
        ``Π_simplex(W_new Z/d + g/(2λd))`` (module docstring).

        ``affinity`` (m, n_train): similarities of the new points to the training points
        (required when ``fit`` was given an affinity; default: the kNN rule of the training
        graph). ``label_similarity`` (m, n_classes): their item–category similarities ``g``
        (default 0). A point with no similarity to any training point gets the argmax of
        ``g`` (uniform over ties).
        """
        check_is_fitted(self, "solution_")
        X = checked_X(self, X, accept_sparse="csr", reset=False)
        m = X.shape[0]
        if affinity is None:
            if self._nn is None:
                raise ValueError("this LaplacianAssignment was fitted on a precomputed "
                                 "affinity: pass affinity=(n_new, n_train) similarities of the "
                                 "new points to the training points to predict_proba/predict.")
            W_new = self._new_similarities(X)
        else:
            W_new = affinity if sp.issparse(affinity) else np.asarray(affinity, dtype=float)
            if W_new.shape != (m, self.problem_.N):
                raise ValueError(f"affinity must be (n_new, n_train) = ({m}, "
                                 f"{self.problem_.N}), got shape {W_new.shape}.")
        if label_similarity is None:
            G_new = np.zeros((m, self.classes_.size))
        else:
            G_new = np.asarray(label_similarity, dtype=float)
            if G_new.shape != (m, self.classes_.size):
                raise ValueError(f"label_similarity must be (n_new, n_classes) = ({m}, "
                                 f"{self.classes_.size}), got shape {G_new.shape}.")
        return self.problem_.out_of_sample(self.label_distributions_, W_new, G_new)

    def predict_log_proba(self, X, affinity=None, label_similarity=None) -> np.ndarray:
        """``log predict_proba(X, ...)`` (same arguments): ``-inf`` where the projection onto
        the simplex puts an exact 0."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X, affinity=affinity,
                                             label_similarity=label_similarity))

    def predict(self, X, affinity=None, label_similarity=None) -> np.ndarray:
        """``classes_[argmax predict_proba(X, ...)]`` (same arguments)."""
        proba = self.predict_proba(X, affinity=affinity, label_similarity=label_similarity)
        return self.classes_[np.argmax(proba, axis=1)]
