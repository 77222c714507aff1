r"""ERE — elastic and robust embedding [004], and its rigid baseline LRL; docs/design.md §4.5.

Data rows ``x_i ∈ R^d`` (``X`` n×d; the paper stores X as d×n), a symmetric non-negative
similarity ``A`` (n×n, a sparse kNN graph typically), and the 0/1 label matrix ``Y`` (l×c) of the
first ``l`` points (multi-label rows allowed). Variables ``F`` (n×c) with ``F_l = Y`` fixed,
``W`` (d×c), ``b`` (c,). With ``f_i`` the rows of F and ``r_i = Wᵀx_i + b − f_i``:

* robust ERE [004 eq. 9]   ``½ Σ_{i,j} A_ij ‖f_i − f_j‖₂ + α Σ_i ‖r_i‖₂ + β‖W‖_F²``
* squared ERE [004 eq. 8]  ``½ Σ_{i,j} A_ij ‖f_i − f_j‖₂² + α Σ_i ‖r_i‖₂² + β‖W‖_F²``
  ``= tr(FᵀLF) + α‖XW + 1bᵀ − F‖_F² + β‖W‖_F²``  (L = D − A)
* LRL [004 eq. 5] (:class:`LRL`, variables W, b)
  ``tr(WᵀXᵀLXW) + α‖X_l W + 1bᵀ − Y‖_F² + β‖W‖_F²``

``½ Σ_{i,j}`` counts every undirected edge twice, so the graph term is ``Σ_{i<j} A_ij ‖f_i − f_j‖``
over the upper triangle of A (``edges``). Robust ERE is the sum of norms of [004 eq. 10] with
one group of c rows per edge (weight A_ij) and per point (weight α), f(z) = β‖W‖², in the
packed ``z = (vec F_u, vec W, b)`` (row-major vecs): :meth:`ERE.as_sum_of_norms` gives that
instance with an explicit G, and :attr:`ERE.groups` (:class:`EREGroups`) applies the same
operator in structured form (incidence matrix of the graph, X, no G matrix). With those
groups, ``smooth_value``/``smooth_gradient_vector`` and ``pack_vector``/``unpack_vector``
robust ERE is a :class:`~ssl_opt.problems.ere.groups.SumOfNormsForm`, on which the IRLS
plugin's generic loop and its stopping test run unchanged.

ERE and LRL are named models (docs/design.md §2a): the terms below are the problem, and its
certificate (stationarity from the terms, feasibility of ``F_l = Y``) and CVXPY reference are
the model's.

Prediction [004 "Classification rules"]: argmax of a row of scores (single label);
multi-label: class k when the score is ``≥ τ_k``, ``τ_k`` the mean score of the labeled
positives of class k. F_l is clamped to Y (so its τ_k would be 1), so the thresholds are taken on
the decision scores of the linear model on the labeled points, ``X_l W + 1bᵀ``.
Out-of-sample scores are ``Wᵀx + b``.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import scipy.sparse as sp

from ssl_opt._validation import (
    as_float_matrix,
    check_bool,
    check_positive,
    reject_complex,
    warn_if_badly_scaled,
)
from ssl_opt.builders.laplacian import incidence_matrix, validated_adjacency
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.modeling.expressions import Variable, matmul
from ssl_opt.modeling.model import Model
from ssl_opt.modeling.terms import (
    FixedRows,
    GraphQuadratic,
    GraphTV,
    GroupNorms,
    Ridge,
    SquaredError,
)
from ssl_opt.problems.base import Problem, Structure
from ssl_opt.problems.ere.groups import GroupOperator, smoothed_norms
from ssl_opt.problems.ere.sum_of_norms import KKT_OPTIONS, SumOfNorms

# ---------------------------------------------------------------------------- helpers


def check_label_matrix(Y, n: int, name: str = "Y") -> np.ndarray:
    """A non-empty (l, c) matrix of 0/1 with ``1 <= l <= n``."""
    reject_complex(Y, name)
    if sp.issparse(Y):
        Y = Y.toarray()
    try:
        arr = np.asarray(Y, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name} must be an (l, c) matrix of 0/1 labels: {exc}") from exc
    if arr.ndim != 2:
        raise InvalidInputError(
            f"{name} must be 2-D (l, c) with one 0/1 column per class, got shape {arr.shape}; "
            "one-hot encode class indices, e.g. np.eye(c)[y].")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise InvalidInputError(
            f"{name} is empty (shape {arr.shape}): at least one labeled point (l >= 1) and one "
            "class (c >= 1) are needed.")
    if not np.all(np.isfinite(arr)):
        raise InvalidInputError(f"{name} contains NaN or inf; labels must be 0 or 1.")
    if not np.all((arr == 0) | (arr == 1)):
        bad = np.unique(arr[(arr != 0) & (arr != 1)])[:5]
        raise InvalidInputError(
            f"{name} must hold only 0 and 1, found {bad.tolist()}; Y[i, k] = 1 when labeled "
            "point i belongs to class k.")
    if arr.shape[0] > n:
        raise InvalidInputError(
            f"{name} has l = {arr.shape[0]} labeled rows but there are only n = {n} points; "
            "the labeled points are the first l rows of X.")
    return arr


def class_thresholds(Y: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """``τ_k = Σ_i Y_ik S_ik / Σ_i Y_ik`` over the labeled points [004]; ``+inf`` for a class
    without labeled positives (never assigned)."""
    pos = Y.sum(axis=0)
    tot = (Y * scores).sum(axis=0)
    return np.where(pos > 0, tot / np.where(pos > 0, pos, 1.0), np.inf)


def predict_from_scores(scores: np.ndarray, thresholds: np.ndarray | None = None) -> np.ndarray:
    """Argmax class per row (single label, ``thresholds=None``) or the 0/1 matrix
    ``scores ≥ τ`` (multi-label)."""
    if thresholds is None:
        return np.argmax(scores, axis=1)
    return (scores >= thresholds[None, :]).astype(np.int64)


class LabelEmbedding(Problem):
    """Data, validation and prediction helpers shared by :class:`ERE` and :class:`LRL`."""

    family = "ere"

    def _setup(self, X, A, Y, alpha, beta) -> None:
        Xm = as_float_matrix(X, "X")
        # Own copies: the problem is immutable and must not freeze or share the caller's data.
        self.X = sp.csr_matrix(Xm, copy=True) if sp.issparse(Xm) else np.array(Xm)
        n, d = self.X.shape
        if n == 0 or d == 0:
            raise InvalidInputError(f"X must be a non-empty (n, d) matrix, got shape {(n, d)}.")
        Am = validated_adjacency(A, "A")
        if Am.shape != (n, n):
            raise InvalidInputError(
                f"A must be n x n = {n}x{n} to match the rows of X, got shape {Am.shape}.")
        self.A = Am.copy()
        self.Y = np.array(check_label_matrix(Y, n))
        self.alpha = check_positive(alpha, "alpha")
        self.beta = check_positive(beta, "beta")
        self.n, self.d = n, d
        self.l, self.c = self.Y.shape
        self.u = n - self.l
        upper = sp.triu(Am, k=1).tocoo()
        self.edge_i = upper.row.astype(np.int64)
        self.edge_j = upper.col.astype(np.int64)
        self.edge_w = upper.data.astype(np.float64)
        self.degree = np.asarray(Am.sum(axis=1)).ravel()

    @property
    def n_edges(self) -> int:
        return int(self.edge_w.size)

    @cached_property
    def incidence(self) -> sp.csr_matrix:
        """``B`` (E×n): row e is ``e_i − e_j`` for edge ``(i, j)``, i < j (unweighted)."""
        return incidence_matrix(self.edge_i, self.edge_j, self.n)

    @cached_property
    def laplacian(self) -> sp.csr_matrix:
        """``L = D − A``."""
        return sp.csr_matrix(sp.diags(self.degree) - self.A)

    def _sizes(self) -> dict[str, int]:
        return {"n": self.n, "l": self.l, "u": self.u, "d": self.d, "c": self.c,
                "nnz_A": int(self.A.nnz), "edges": self.n_edges}

    # ------------------------------------------------------------------ prediction helpers
    def model_scores(self, x, X_new=None) -> np.ndarray:
        """Out-of-sample decision values ``X_new W + 1bᵀ`` [004] (``X_new=None``: the training
        points)."""
        v = self.unpack(x)
        if X_new is None:
            Xn = self.X
        else:
            Xn = as_float_matrix(X_new, "X_new")
            if Xn.shape[1] != self.d:
                raise InvalidInputError(
                    f"X_new must have d = {self.d} columns like X, got shape {Xn.shape}.")
        return np.asarray(Xn @ v["W"]) + v["b"][None, :]

    def thresholds(self, x) -> np.ndarray:
        """Per-class thresholds ``τ_k``: mean model score of the labeled positives of class k
        (module docstring); ``+inf`` for a class without labeled positives."""
        S_l = self.model_scores(x)[: self.l]
        return class_thresholds(self.Y, S_l)

    def predict(self, x, X_new=None, multilabel: bool = False) -> np.ndarray:
        """Labels of the training points from :meth:`scores` (``X_new=None``) or of new points
        from ``Wᵀx + b``: argmax class indices (n,), or with ``multilabel=True`` the 0/1
        matrix of ``score ≥ τ_k``."""
        multilabel = check_bool(multilabel, "multilabel")
        S = self.scores(x) if X_new is None else self.model_scores(x, X_new)
        return predict_from_scores(S, self.thresholds(x) if multilabel else None)

    def scores(self, x) -> np.ndarray:
        raise NotImplementedError

    def prediction(self, x) -> np.ndarray:
        return self.scores(x)


# ---------------------------------------------------------------------------- ERE


class ERE(LabelEmbedding, Model):
    r"""Elastic and robust embedding [004 eq. 9] (``robust=False``: [004 eq. 8]).

    Parameters
    ----------
    X : (n, d) array or sparse matrix
        Data rows; the first ``l`` are the labeled points.
    A : (n, n) array or sparse matrix
        Symmetric non-negative similarities with zero diagonal (e.g. ``knn_graph(X)``).
    Y : (l, c) array of 0/1
        Labels of the first ``l`` points (one-hot, or several 1s per row for multi-label).
    alpha, beta : float > 0
        Weight of the elastic fit ``Σ‖Wᵀx_i + b − f_i‖`` and of ``‖W‖_F²``.
    robust : bool
        Non-squared norms [004 eq. 9] (default) or squared norms [004 eq. 8].

    Variables ``F`` (n, c) (``F_l`` must equal Y), ``W`` (d, c), ``b`` (c,). A named model
    (docs/design.md §2a), ``F_l = Y`` a ``FixedRows`` constraint: robust [004 eq. 9]
    ``GraphTV(F, A, 1, "l2") + GroupNorms(X @ W + b − F, α) + Ridge(W, β)``; squared
    [004 eq. 8] ``GraphQuadratic(F, D − A) + SquaredError(X @ W + b − F, 0, α) + Ridge(W, β)``.
    Its certificate (``stationarity``, ``feasibility``) and CVXPY reference are the model's;
    ``labels_fixed`` (``max|F_l − Y|``, relative like every feasibility) is the
    feasibility under the family's name.
    """

    residual_tolerances = {**Model.residual_tolerances, "labels_fixed": "feasibility"}
    kkt_options = KKT_OPTIONS

    def __init__(self, X, A, Y, alpha, beta, robust: bool = True):
        self._setup(X, A, Y, alpha, beta)
        self.robust = check_bool(robust, "robust")
        x_max = float(abs(self.X).max()) if self.X.size else 0.0
        warn_if_badly_scaled(
            "ERE", {"max degree(A)": float(self.degree.max(initial=0.0)),
                    "alpha·max(1, max|X|)": self.alpha * max(1.0, x_max), "beta": self.beta},
            "Multiply A, alpha and beta by one factor (the minimizer is unchanged) so that "
            "they are of order 1.")
        F = Variable("F", (self.n, self.c))
        W, b = Variable("W", (self.d, self.c)), Variable("b", (self.c,))
        residual = matmul(self.X, W) + b - F
        if self.robust:
            terms = [GraphTV(F, self.A, 1.0, norm="l2"), GroupNorms(residual, self.alpha)]
        else:
            terms = [GraphQuadratic(F, self.laplacian, 1.0, validated=True),
                     SquaredError(residual, 0.0, self.alpha)]
        terms.append(Ridge(W, self.beta))
        # Squared: strictly convex in (F_u, W, b). Robust: the sums of norms are not strictly
        # convex, so F_u and b need not be unique (W is, through β‖W‖²).
        Model.__init__(self, terms, [FixedRows(F, np.arange(self.l), self.Y)], prediction=F,
                       name="ere-robust" if self.robust else "ere-squared",
                       unique_prediction=not self.robust)

    # ------------------------------------------------------------------ declaration
    @property
    def structure(self) -> Structure:
        sizes = self._sizes()
        sizes["variables"] = self.u * self.c + (self.d + 1) * self.c
        if self.robust:
            return Structure(self.family, "robust", True, False, "SOCP", sizes, True)
        return Structure(self.family, "squared", True, True, "QP", sizes, True)

    def _kkt(self, x, **options) -> dict[str, float]:
        """The model's certificate; ``labels_fixed`` is its feasibility (FixedRows ``F_l = Y``
        is the only constraint)."""
        out = super()._kkt(x, **options)
        out["labels_fixed"] = out.get("feasibility", float("inf"))
        return out

    # ------------------------------------------------------------------ evaluation
    def edge_differences(self, F: np.ndarray) -> np.ndarray:
        """(E, c): ``f_i − f_j`` per edge (i < j)."""
        return F[self.edge_i] - F[self.edge_j]

    def point_residuals(self, F: np.ndarray, W: np.ndarray, b: np.ndarray) -> np.ndarray:
        """(n, c): ``r_i = Wᵀx_i + b − f_i``."""
        return np.asarray(self.X @ W) + b[None, :] - F

    def gradient(self, x) -> dict[str, np.ndarray]:
        """The gradient of squared ERE [004 eq. 8] in every entry of F (the labeled rows too,
        as :meth:`objective` reads them), W and b. Robust ERE is not smooth: its certificate
        uses subgradients and :meth:`smoothed_objective` is its smoothing."""
        if self.robust:
            raise NotImplementedError(
                "robust ERE (robust=True) is not smooth: it has no gradient. Use "
                "smoothed_objective or the sum-of-norms form (groups), or robust=False.")
        return self.smooth_gradient(x)

    def smoothed_objective(self, x, delta: float) -> float:
        """``φ_δ`` [004 eq. 11]: every norm ``‖g‖`` replaced by ``√(‖g‖² + δ)`` (robust only)."""
        self._require_robust("smoothed_objective")
        v = self.unpack(x)
        F, W, b = v["F"], v["W"], v["b"]
        g = np.vstack([self.edge_differences(F), self.point_residuals(F, W, b)])
        return (smoothed_norms(self.groups.weights, np.einsum("ij,ij->i", g, g), delta)
                + self.beta * float(np.sum(W * W)))

    def scores(self, x) -> np.ndarray:
        """The label matrix F (n, c) (``F_l = Y``)."""
        return self.unpack(x)["F"]

    # ------------------------------------------------------------------ the general form
    def pack_vector(self, x) -> np.ndarray:
        """``(vec F_u, vec W, b)`` (row-major vecs): the variable of :meth:`as_sum_of_norms`."""
        v = self.unpack(x)
        return np.concatenate([v["F"][self.l:].ravel(), v["W"].ravel(), v["b"]])

    def vector_blocks(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Views ``(F_u, W, b)`` of a packed vector (no copy, no check)."""
        uc, dc = self.u * self.c, self.d * self.c
        return z[:uc].reshape(self.u, self.c), z[uc:uc + dc].reshape(self.d, self.c), z[uc + dc:]

    def unpack_vector(self, z: np.ndarray) -> dict[str, np.ndarray]:
        """The variables ``F`` (with ``F_l = Y``), ``W``, ``b`` of a packed vector (own
        arrays)."""
        z = np.asarray(z, dtype=np.float64).ravel()
        size = (self.u + self.d + 1) * self.c
        if z.shape != (size,):
            raise InvalidInputError(
                f"the packed vector must have (u + d + 1)·c = {size} entries, got {z.shape}.")
        Fu, W, b = self.vector_blocks(z)
        return {"F": np.vstack([self.Y, Fu]), "W": W.copy(), "b": b.copy()}

    def model_multipliers(self, U: np.ndarray) -> list[np.ndarray] | None:
        """The model's multipliers (one per non-smooth term, in model order) of the groups'
        unit-ball multipliers ``U`` (:class:`EREGroups`, edges then points): ``A_e U_e`` for
        the graph term, ``α U_i`` for the fit; None when the graph term's edges are not this
        problem's (an explicit zero weight in A)."""
        self._require_robust("model_multipliers")
        graph = self.terms[0]
        if not (np.array_equal(graph.edges[0], self.edge_i)
                and np.array_equal(graph.edges[1], self.edge_j)):
            return None
        E = self.n_edges
        return [self.edge_w[:, None] * U[:E], self.alpha * U[E:]]

    # f(z) = β‖W‖² of the packed form (robust ERE as f + Σ w_i‖g_i‖, :attr:`groups`)
    def smooth_value(self, z: np.ndarray) -> float:
        """``β‖W‖_F²`` of a packed vector."""
        W = self.vector_blocks(z)[1]
        return self.beta * float(np.sum(W * W))

    def smooth_gradient_vector(self, z: np.ndarray) -> np.ndarray:
        """``2βW`` in the W block of a packed vector, 0 elsewhere."""
        out = np.zeros_like(z)
        uc, dc = self.u * self.c, self.d * self.c
        out[uc:uc + dc] = 2.0 * self.beta * z[uc:uc + dc]
        return out

    def smooth_magnitude(self, z: np.ndarray) -> np.ndarray:
        return np.abs(self.smooth_gradient_vector(z))

    @cached_property
    def groups(self) -> EREGroups:
        """The edge and point groups in the packed variable (:class:`EREGroups`)."""
        return EREGroups(self)

    def as_sum_of_norms(self) -> SumOfNorms:
        """The equivalent :class:`SumOfNorms` in ``x = (vec F_u, vec W, b)`` [004 eq. 10]:
        ``Q = 2β`` on the W block, one group of c rows per edge (weight A_ij, value
        ``f_i − f_j``) then per point (weight α, value ``Wᵀx_i + b − f_i``); the labeled rows
        of F enter h. The objectives agree exactly for every F with ``F_l = Y``."""
        self._require_robust("as_sum_of_norms")
        n, l, c, d, E = self.n, self.l, self.c, self.d, self.n_edges
        uc, dc = self.u * c, d * c
        nvar = uc + dc + c
        Yc = np.zeros((n, c))
        Yc[:l] = self.Y
        ks = np.arange(c)
        # Edge groups: +1 at F_u(i), −1 at F_u(j) when unlabeled; h = −(Yc_i − Yc_j).
        rows, cols, vals = [], [], []
        for end, sign in ((self.edge_i, 1.0), (self.edge_j, -1.0)):
            e = np.flatnonzero(end >= l)
            rows.append((e[:, None] * c + ks[None, :]).ravel())
            cols.append(((end[e] - l)[:, None] * c + ks[None, :]).ravel())
            vals.append(np.full(e.size * c, sign))
        h_edges = -(Yc[self.edge_i] - Yc[self.edge_j]).ravel()
        # Point groups: x_i at W(:, k), 1 at b_k, −1 at F_u(i); h = Yc_i.
        base = E * c
        Xd = self.X.toarray() if sp.issparse(self.X) else self.X
        pi, pj = np.nonzero(Xd)
        xv = Xd[pi, pj]
        rows.append((base + (pi * c)[:, None] + ks[None, :]).ravel())
        cols.append((uc + (pj * c)[:, None] + ks[None, :]).ravel())
        vals.append(np.repeat(xv, c))
        rows.append(base + np.arange(n * c))
        cols.append(uc + dc + np.tile(ks, n))
        vals.append(np.ones(n * c))
        iu = np.arange(l, n)
        rows.append((base + (iu * c)[:, None] + ks[None, :]).ravel())
        cols.append(((iu - l)[:, None] * c + ks[None, :]).ravel())
        vals.append(-np.ones(self.u * c))
        G = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                          shape=((E + n) * c, nvar))
        h = np.concatenate([h_edges, Yc.ravel()])
        qdiag = np.zeros(nvar)
        qdiag[uc:uc + dc] = 2.0 * self.beta
        weights = np.concatenate([self.edge_w, np.full(n, self.alpha)])
        return SumOfNorms(sp.diags(qdiag, format="csr"), np.zeros(nvar), G, h, c, weights)

    def _require_robust(self, what: str) -> None:
        if not self.robust:
            raise InvalidInputError(
                f"{what} applies to robust ERE only (robust=True); the squared variant is a "
                "smooth QP.")


class EREGroups(GroupOperator):
    r"""Robust ERE's norms as groups of the packed ``z = (vec F_u, vec W, b)`` [004 eq. 9]:
    first one group per edge e = (i, j), i < j (weight A_ij, value ``f_i − f_j``), then one
    per point i (weight α, value ``r_i = Wᵀx_i + b − f_i``), with ``F_l = Y`` entering the
    offset h. The same J as the explicit G of :meth:`ERE.as_sum_of_norms`, applied through the
    graph's incidence matrix and X. The labels are 0/1, so ``‖h‖_∞ = 1`` and σ = 1.
    Multipliers are stored as ``U_edges`` (E, c) and ``U_points`` (n, c).
    """

    def __init__(self, problem: ERE):
        p = self.problem = problem
        self.weights = np.concatenate([p.edge_w, np.full(p.n, p.alpha)])
        self.weights.setflags(write=False)
        self.group_size = p.c
        self.size = (p.u + p.d + 1) * p.c
        self.multiplier_blocks = (("U_edges", p.n_edges), ("U_points", p.n))

    def values(self, z: np.ndarray) -> np.ndarray:
        p = self.problem
        Fu, W, b = p.vector_blocks(z)
        F = np.vstack([p.Y, Fu])
        return np.vstack([p.edge_differences(F), p.point_residuals(F, W, b)])

    def forward(self, v: np.ndarray) -> np.ndarray:
        p = self.problem
        dFu, dW, db = p.vector_blocks(v)
        dF = np.vstack([np.zeros((p.l, p.c)), dFu])
        De = p.edge_w[:, None] * np.asarray(p.incidence @ dF)
        Dp = p.alpha * (np.asarray(p.X @ dW) + db[None, :] - dF)
        return np.vstack([De, Dp])

    def adjoint(self, U: np.ndarray) -> np.ndarray:
        p = self.problem
        Ue, Up = U[: p.n_edges], U[p.n_edges:]
        gF = np.asarray(p.incidence.T @ (p.edge_w[:, None] * Ue)) - p.alpha * Up
        gW = p.alpha * np.asarray(p.X.T @ Up)
        gb = p.alpha * Up.sum(axis=0)
        return np.concatenate([gF[p.l:].ravel(), gW.ravel(), gb])

    @cached_property
    def norm_scale(self) -> np.ndarray:
        """``deg_i + α`` for F_u(i, ·), ``α Σ_i |x_ij|`` for W(j, ·), ``α n`` for b."""
        p = self.problem
        absX = abs(p.X) if sp.issparse(p.X) else np.abs(p.X)
        sF = np.repeat(p.degree[p.l:] + p.alpha, p.c)
        sW = np.repeat(p.alpha * np.asarray(absX.sum(axis=0)).ravel(), p.c)
        sb = np.full(p.c, p.alpha * p.n)
        return np.concatenate([sF, sW, sb])
