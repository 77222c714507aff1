r"""``NPKLKernel``: a kernel learned from must-link / cannot-link pairs [003], docs/npkl.md.

Hu, Wang & Chen (ICML 2011) learn a kernel matrix ``Z`` (n×n) on the training points from a
similarity graph ``S`` and pairwise constraints ``T`` [003 eq. 1], docs/design.md §4.4::

    min_{Z ⪰ 0}  tr(ΔZ) + C Σ_{{i,j}∈T} ℓ(T_ij Z_ij),    Δ = (1+δ)I − D^{-1/2} S D^{-1/2}

with ``T_ij = +1`` (must-link) or ``−1`` (cannot-link); ``δ`` defaults to ``(C/2)·l/n``
(``l`` constrained points; the class docstring says why). ``S`` is the kNN graph of the rows of
``X`` (``ssl_opt.builders.knn_graph``: binary weights, or heat weights with the mean kNN
distance as width; the paper uses a 5-NN binary graph). The problem is
:class:`ssl_opt.problems.NPKL`; ``solver="auto"`` picks BCD on the boundary kernel
[003 Alg. 1] (plugins/npkl), ``"reference"`` the SDP through its dual.

Constraints. ``pairs`` / ``pair_labels`` are used as given. Otherwise they come from the
labeled entries of ``y`` (``y == -1`` is unlabeled): the paper's budget is
``m = paper_constraint_count(n) = round(4n·30%)`` pairs [003 §4.2]; ``s`` labeled points are
drawn (seeded by ``random_state``), with ``s`` the largest size whose ``s(s−1)/2`` pairs fit
in ``m`` (all labeled points when there are fewer), and every pair among them is a constraint:
must-link for the same class, cannot-link otherwise. The draw takes one point of each class
first (as many classes as ``s`` allows, each point uniform in its class), then the rest
uniformly, so a sample of at least ``n_classes`` points holds every class. Few labels (the
usual semi-supervised case) thus give the complete constraint set of the labeled points.

Fitted factor. ``factor_`` (n×r) has ``factor_ @ factor_.T = kernel_``; its columns are the
principal axes of the learned embedding (decreasing norm, sign fixed so each column's largest
entry is positive): from an SVD of BCD's embedding ``Φ`` (``Z = ΦΦᵀ``) or, for solvers
returning only ``Z``, from its eigendecomposition.

Out-of-sample (``transform``). The optimum is a harmonic map away from the constrained points
[003 Prop. 1]: every unconstrained point's row satisfies ``φ_u = −Δ_uu⁻¹ Σ_{j≠u} Δ_uj φ_j``
(the rows of ``Φ_U = −Δ_UU⁻¹Δ_UL Φ_L``). A new point x is treated as one more unconstrained
node joined to its k nearest training points with the training graph's weights ``s(x, x_j)``
and the training embedding held fixed, which gives

    φ(x) = (1+δ)⁻¹ Σ_j s(x, x_j) φ_j / √(d(x) d_j),    d(x) = Σ_j s(x, x_j),

``d_j`` the training degrees. A row of ``X`` equal to a training row gets that row of
``factor_`` (so ``transform(X_train) == fit_transform(X_train)``). The extended kernel is
``k(x, x') = φ(x)ᵀφ(x')``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.neighbors import NearestNeighbors
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ssl_opt import registry
from ssl_opt._validation import check_bool, check_int, check_positive
from ssl_opt.api import select
from ssl_opt.builders import knn_graph
from ssl_opt.datasets.clusters import paper_constraint_count
from ssl_opt.estimators._base import BACKEND_CHOICES, CertifiedMixin, checked_X, solve_with
from ssl_opt.estimators._diagnostics import DegenerateProblemWarning
from ssl_opt.estimators._iterations import ITERATION_DOC, fitting, iteration_settings
from ssl_opt.estimators._kernels import check_graph_params, neighbours_for
from ssl_opt.estimators._labels import LabelLayout
from ssl_opt.exceptions import warn
from ssl_opt.problems import NPKL
from ssl_opt.problems.npkl.evaluation import kernel_factor, kernel_kmeans

__all__ = ["NPKLKernel", "EXPECTED_FAILED_CHECKS"]

#: scikit-learn checks that the semi-supervised setting makes meaningless: none for NPKLKernel
#: (its fit needs constraints, so it is tagged as requiring y, which the checks then pass).
EXPECTED_FAILED_CHECKS: dict[str, dict[str, str]] = {"NPKLKernel": {}}

#: Factor columns with σ² ≤ FACTOR_RTOL·σ_max² are dropped (as kernel_factor does).
FACTOR_RTOL = 1e-10


def constraint_sample_size(n_samples: int, n_labeled: int) -> int:
    """Labeled points whose complete pair set is the constraint set: the largest ``s`` with
    ``s(s−1)/2 ≤ paper_constraint_count(n_samples)`` [003 §4.2], at most ``n_labeled``."""
    m = paper_constraint_count(max(int(n_samples), 2))
    s = int((1.0 + np.sqrt(1.0 + 8.0 * m)) // 2)
    while s * (s - 1) // 2 > m:
        s -= 1
    while (s + 1) * s // 2 <= m:
        s += 1
    return min(s, int(n_labeled))


def _pairs_from_labels(layout: LabelLayout, rng: np.random.RandomState):
    """Every pair among a seeded sample of the labeled points (module docstring): (m, 2) int64
    pairs of original indices ``i < j`` and ±1 labels (+1 same class)."""
    labeled = layout.order[:layout.n_labeled]
    codes = layout.codes
    s = constraint_sample_size(layout.n, layout.n_labeled)
    if s < 2:
        raise ValueError(
            f"y has {layout.n_labeled} labeled sample, so no must-link / cannot-link pair can "
            "be formed from it; label at least 2 samples or pass pairs= and pair_labels=.")
    perm = rng.permutation(layout.n_labeled)
    _, first = np.unique(codes[perm], return_index=True)
    first = np.sort(first)  # classes in order of first appearance in the permutation
    priority = np.concatenate([perm[first], np.delete(perm, first)])
    chosen = np.sort(priority[:s])
    a, b = np.triu_indices(s, k=1)
    i, j = labeled[chosen[a]], labeled[chosen[b]]
    pairs = np.stack([np.minimum(i, j), np.maximum(i, j)], axis=1).astype(np.int64)
    labels = np.where(codes[chosen[a]] == codes[chosen[b]], 1, -1).astype(np.int64)
    return pairs, labels


def _check_pair_labels(pairs, pair_labels) -> tuple[np.ndarray, np.ndarray]:
    """``pair_labels`` as ±1 with one entry per row of ``pairs``; ``pairs`` itself is checked
    by :class:`~ssl_opt.problems.NPKL` (shape, integer indices in range, distinct, unique)."""
    if pair_labels is None:
        raise ValueError("pair_labels is required with pairs: pass one +1 (must-link) or -1 "
                         "(cannot-link) per row of pairs.")
    P = np.asarray(pairs)
    if P.ndim != 2 or P.shape[1] != 2 or P.shape[0] == 0:
        raise ValueError(f"pairs must be a non-empty (m, 2) array of training-sample indices, "
                         f"got shape {P.shape}; pass at least one pair or use y instead.")
    try:
        T = np.asarray(pair_labels, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"pair_labels must hold +1 (must-link) or -1 (cannot-link): {exc}") \
            from exc
    if T.ndim != 1 or T.shape[0] != P.shape[0]:
        raise ValueError(f"pair_labels must have one entry per pair: shape ({P.shape[0]},), "
                         f"got {T.shape}.")
    if not np.all(np.isin(T, (-1.0, 1.0))):
        raise ValueError("pair_labels must be +1 (must-link) or -1 (cannot-link); found "
                         f"{np.setdiff1d(T, (-1.0, 1.0))[:5]}.")
    return P, T


def _principal_factor(Phi, Z: np.ndarray) -> np.ndarray:
    """``F`` (n×r) with ``FFᵀ = Z`` on principal axes: ``UΣ`` of the SVD of ``Φ`` (``Z = ΦΦᵀ``)
    when given, else ``kernel_factor(Z)``; each column's largest-magnitude entry positive."""
    if Phi is None:
        F = kernel_factor(Z, rtol=FACTOR_RTOL)
    else:
        U, sv, _ = np.linalg.svd(np.asarray(Phi, dtype=np.float64), full_matrices=False)
        keep = sv**2 > FACTOR_RTOL * sv[0] ** 2 if sv.size and sv[0] > 0 else np.zeros(0, bool)
        F = U[:, keep] * sv[keep]
    if F.shape[1]:
        F = F * np.sign(F[np.argmax(np.abs(F), axis=0), np.arange(F.shape[1])])
    return np.ascontiguousarray(F)


class NPKLKernel(ClassNamePrefixFeaturesOutMixin, TransformerMixin, CertifiedMixin,
                 BaseEstimator):
    __doc__ = """Non-parametric kernel learned from pairwise constraints [003] (see the module
    docstring).

    Parameters
    ----------
    C : float > 0
        Weight of the constraint loss (the paper tunes it on {0.1, …}; 1 on iris [003 Table 3]).
    loss : {"square", "squared_hinge", "hinge", "logistic", "huber"}
        ℓ of [003 §3.2.2] (``"square"``: closed-form BCD columns).
    delta : float > 0 or None
        ``Δ = (1+δ)I − D^{-1/2}SD^{-1/2}``. None: ``δ = (C/2)·l/n``, the paper's ``C/2``
        [003 §4.2] scaled by the fraction ``l/n`` of constrained points. Away from them the
        embedding shrinks by about ``1/(1+δ)`` per graph hop: the paper's protocol constrains
        most points (l/n ≈ 0.9 on iris), where the two agree, but with the few points a handful
        of labels constrains, ``C/2`` collapses the unconstrained points to the origin (NMI of
        kernel k-means 0.1–0.4 against 0.7–1.0 with the scaled value on blobs, moons, spirals,
        iris and wine with 10 % labels). Pass ``delta=C/2`` for the paper's exact value.
    n_neighbors : int
        k of the kNN similarity graph S (cut to n − 1 with a warning).
    graph_weights : {"binary", "heat"}
    rank : int or None
        Rank of BCD's boundary factor (default from [003 Prop. 3]); ignored by solvers without
        a ``rank`` option.
    n_clusters : int or None
        Clusters of :meth:`fit_predict`; None takes the number of classes in y.
    solver : str
        ``"auto"``, ``"fast"``, ``"reference"`` or a registered solver name (``"bcd"``,
        ``"cvxpy"``, ``"cvxpy-boundary"``).
    solver_options : dict or None
        Extra solver options (e.g. ``tol``, ``max_iter``); they take precedence over
        ``rank`` and the seed derived from ``random_state``.
    warm_start : bool
        Start BCD from the previous fit's factor when the constrained points have the same
        count.
    random_state : int, RandomState or None
        Seeds the constraint sample drawn from y, BCD's start and the k-means restarts.
""" + ITERATION_DOC + """
    Attributes
    ----------
    n_iter_ : int
        The solver's iterations (BCD sweeps).
    problem_ : NPKL
    solution_ : Solution
    kernel_ : ndarray (n, n)
        The learned kernel ``Z`` on the training points.
    factor_ : ndarray (n, r)
        ``factor_ @ factor_.T == kernel_``; the embedding ``transform`` returns.
    pairs_, pair_labels_ : ndarray
        The constraints used (original sample indices, ``i < j`` when derived from y).
    affinity_ : sparse (n, n)
        The kNN similarity S.
    delta_ : float
        The δ used.
    sigma_ : float or None
        Heat-kernel width of S (None for binary weights).
    classes_ : ndarray
        Classes of the labeled entries of y (only when y is given).
    labels_ : ndarray (n,)
        Cluster labels of the last :meth:`fit_predict`.
    n_features_in_ : int
    """

    def __init__(self, C=1.0, loss="square", delta=None, n_neighbors=5, graph_weights="binary",
                 rank=None, n_clusters=None, solver="auto", solver_options=None,
                 warm_start=False, random_state=None, max_iter=None, tol=None, verbose=0):
        self.C = C
        self.loss = loss
        self.delta = delta
        self.n_neighbors = n_neighbors
        self.graph_weights = graph_weights
        self.rank = rank
        self.n_clusters = n_clusters
        self.solver = solver
        self.solver_options = solver_options
        self.warm_start = warm_start
        self.random_state = random_state
        self.max_iter = max_iter
        self.tol = tol
        self.verbose = verbose

    #: Added to the ConvergenceWarning of a solve that stopped short (:mod:`._iterations`).
    _convergence_hint = ("the hinge loss makes BCD stall [003 Fig. 1]: use "
                         "loss='squared_hinge' or solver='reference'")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True  # constraints come from y unless pairs are given
        tags.input_tags.sparse = True
        return tags

    # ------------------------------------------------------------------ fitting
    def _check_params(self) -> None:
        check_positive(self.C, "C")
        if self.delta is not None:
            check_positive(self.delta, "delta")
        check_graph_params(self.n_neighbors, self.graph_weights)
        if self.rank is not None:
            check_int(self.rank, "rank", 1)
        if self.n_clusters is not None:
            check_int(self.n_clusters, "n_clusters", 1)
        check_bool(self.warm_start, "warm_start")
        self._check_solver_param()

    @fitting
    def fit(self, X, y=None, *, pairs=None, pair_labels=None) -> NPKLKernel:
        """Learn the kernel of the rows of X from ``pairs``/``pair_labels`` (indices into the
        rows of X, ±1) or, when ``pairs`` is None, from the labeled entries of ``y`` (module
        docstring). With both, the pairs are the constraints and y sets ``classes_`` only."""
        self._check_params()
        if y is None and pairs is None:
            raise ValueError(
                "NPKLKernel requires y to be passed, but the target y is None, and no pairs "
                "were given: pass y (class labels, -1 for unlabeled) or pairs= and "
                "pair_labels= (must-link / cannot-link constraints).")
        if pairs is None and pair_labels is not None:
            raise ValueError("pair_labels was given without pairs: pass pairs= (an (m, 2) "
                             "array of sample indices) with it.")
        if y is not None:
            X, layout = self._validate_X_y(X, y, accept_sparse="csr", min_classes=1)
        else:
            X = checked_X(self, X, accept_sparse="csr", ensure_min_samples=2)
            layout = None
            self.__dict__.pop("classes_", None)
        rng = check_random_state(self.random_state)
        if pairs is None:
            P, T = _pairs_from_labels(layout, rng)
        else:
            P, T = _check_pair_labels(pairs, pair_labels)
        solver_seed, self._kmeans_seed = (int(v) for v in rng.randint(0, 2**31 - 1, size=2))

        n = X.shape[0]
        k = neighbours_for(self.n_neighbors, n)
        self._nn = NearestNeighbors(n_neighbors=k).fit(X)
        self.sigma_ = None
        if self.graph_weights == "heat":
            self.sigma_ = float(self._nn.kneighbors(return_distance=True)[0].mean()) or 1.0
        S = knn_graph(X, n_neighbors=k, weights=self.graph_weights, sigma=self.sigma_)
        self.affinity_ = S
        delta = self.delta
        if delta is None:
            delta = 0.5 * float(self.C) * np.unique(np.asarray(P)).size / n
        self.problem_ = NPKL(S, P, T, self.C, loss=self.loss, delta=delta)
        self.solution_ = self._solve(self.problem_, solver_seed)

        Z = np.asarray(self.solution_.x["Z"], dtype=np.float64)
        self.kernel_ = 0.5 * (Z + Z.T)
        self.factor_ = _principal_factor(self.solution_.x.get("Phi"), self.kernel_)
        self.delta_ = float(self.problem_.delta)
        self.pairs_, self.pair_labels_ = self.problem_.pairs, self.problem_.labels.astype(int)
        self._X_fit = X
        self._degrees = np.asarray(S.sum(axis=1)).ravel()
        self._warn_degenerate()
        return self

    def _solve(self, problem: NPKL, seed: int):
        name = (select(problem, self.solver, options=self.solver_options or {}).solver
                if self.solver in BACKEND_CHOICES else self.solver)
        declared = registry.get_solver(name).options
        opts = dict(self.solver_options or {})
        if self.rank is not None and "rank" in declared:
            opts.setdefault("rank", int(self.rank))
        if "seed" in declared:
            opts.setdefault("seed", seed)
        previous = self._previous_solutions()
        warm = None
        if previous is not None:
            V = previous[0].x.get("V")
            if V is not None and np.shape(V)[1] == problem.constrained_points.size:
                warm = previous[0]
        return solve_with(problem, name, opts, warm, iteration_settings(self),
                          strict=self.solver not in BACKEND_CHOICES)

    def _warn_degenerate(self) -> None:
        n_comp, comp = connected_components(self.affinity_, directed=False)
        if n_comp > 1:
            reached = np.unique(comp[self.problem_.constrained_points]).size
            if reached < n_comp:
                warn(
                    f"The kNN graph has {n_comp} connected components and {n_comp - reached} "
                    "of them hold no constrained point: their points get a zero embedding. "
                    "Increase n_neighbors or add pairs (labels) in every component.",
                    DegenerateProblemWarning)

    # ------------------------------------------------------------------ transforming
    @property
    def _n_features_out(self) -> int:
        return self.factor_.shape[1]

    def fit_transform(self, X, y=None, *, pairs=None, pair_labels=None) -> np.ndarray:
        """Fit, then return ``factor_`` (the training points' rows of the learned embedding)."""
        return self.fit(X, y, pairs=pairs, pair_labels=pair_labels).factor_.copy()

    def transform(self, X) -> np.ndarray:
        """Rows of the learned embedding: ``factor_`` rows for training rows, the harmonic
        extension ``φ(x) = (1+δ)⁻¹ Σ_j s(x, x_j) φ_j / √(d(x) d_j)`` for other points (module
        docstring), so ``transform(A) @ transform(B).T`` extends ``kernel_``."""
        check_is_fitted(self, "factor_")
        X = checked_X(self, X, accept_sparse="csr", reset=False)
        dist, ind = self._nn.kneighbors(X, return_distance=True)
        if self.sigma_ is None:
            w = np.ones_like(dist)
        else:
            w = np.exp(-(dist**2) / (2.0 * self.sigma_**2))
        d_new = w.sum(axis=1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            coef = np.where(d_new > 0, w / np.sqrt(d_new * self._degrees[ind]), 0.0)
        m, k = ind.shape
        n = self._X_fit.shape[0]
        W = sp.csr_matrix((coef.ravel(), ind.ravel(), np.arange(0, m * k + 1, k)), shape=(m, n))
        out = np.asarray(W @ self.factor_) / (1.0 + self.delta_)
        rows, train = self._training_matches(X, ind)
        out[rows] = self.factor_[train]
        return out

    def _training_matches(self, X, ind: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rows of X, training indices) where a row of X equals one of its kNN training rows
        exactly (the first such neighbour)."""
        match = np.full(ind.shape[0], -1, dtype=np.int64)
        for c in range(ind.shape[1]):
            cand = self._X_fit[ind[:, c]]
            if sp.issparse(X):
                diff = sp.csr_matrix(cand - X)
                diff.eliminate_zeros()
                equal = diff.getnnz(axis=1) == 0
            else:
                equal = np.all(cand == X, axis=1)
            new = equal & (match < 0)
            match[new] = ind[new, c]
        rows = np.flatnonzero(match >= 0)
        return rows, match[rows]

    # ------------------------------------------------------------------ clustering
    def fit_predict(self, X, y=None, *, pairs=None, pair_labels=None) -> np.ndarray:
        """Fit, then kernel k-means on the learned kernel (k-means on the rows of ``factor_``,
        10 seeded restarts, the evaluation of [003 §4]) with ``n_clusters`` clusters (default:
        the number of classes in y). Returns and stores ``labels_``."""
        if self.n_clusters is None and y is None:
            raise ValueError("n_clusters is required when y is not given: set n_clusters= to "
                             "the number of clusters wanted.")
        self.fit(X, y, pairs=pairs, pair_labels=pair_labels)
        k = self.n_clusters if self.n_clusters is not None else self.classes_.size
        self.labels_ = kernel_kmeans(factor=self.factor_, n_clusters=k, seed=self._kmeans_seed)
        return self.labels_
