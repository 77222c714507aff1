r"""ERE — elastic and robust embedding [004], and its rigid baseline LRL; DESIGN.md §4.5.

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
one group of c rows per edge (weight A_ij) and per point (weight α), f(x) = β‖W‖²:
:meth:`ERE.as_sum_of_norms` gives that instance in ``x = (vec F_u, vec W, b)`` (row-major
vecs), and the certificate is the one of :mod:`ssl_opt.problems.ere.sum_of_norms`, with the
operators applied in structured form (incidence matrix of the graph, X, no G matrix).

Relative residuals are per coordinate, ``|v_j| / max(1, s_j)`` with ``s_j`` the sum of the
magnitudes the terms of the optimality condition can take at coordinate j (robust: the
subgradient scale ``Σ_i w_i‖J_i e_j‖`` plus ``|∂f/∂x_j|``; smooth: the sum of the absolute values
of the gradient's terms).

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

from ssl_opt._validation import as_float_matrix, check_bool, check_positive
from ssl_opt.builders.laplacian import incidence_matrix, validated_adjacency
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.problems.base import Problem, Structure
from ssl_opt.problems.ere.sum_of_norms import (
    CERTIFICATE_OPTIONS,
    CERTIFICATE_RESIDUALS,
    SumOfNorms,
    check_delta,
    multiplier_block,
    smoothed_stationarity,
    subgradient_certificate,
)

# ---------------------------------------------------------------------------- helpers


def check_label_matrix(Y, n: int, name: str = "Y") -> np.ndarray:
    """A non-empty (l, c) matrix of 0/1 with ``1 <= l <= n``."""
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


class _LabelEmbedding(Problem):
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


class ERE(_LabelEmbedding):
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

    Variables ``F`` (n, c) (``F_l`` must equal Y), ``W`` (d, c), ``b`` (c,).
    """

    def __init__(self, X, A, Y, alpha, beta, robust: bool = True):
        self._setup(X, A, Y, alpha, beta)
        self.robust = check_bool(robust, "robust")
        self._freeze()

    # ------------------------------------------------------------------ declaration
    @property
    def variables(self) -> dict[str, tuple[int, ...]]:
        return {"F": (self.n, self.c), "W": (self.d, self.c), "b": (self.c,)}

    @property
    def structure(self) -> Structure:
        sizes = self._sizes()
        sizes["variables"] = self.u * self.c + (self.d + 1) * self.c
        if self.robust:
            return Structure(self.family, "robust", True, False, "SOCP", sizes, True)
        return Structure(self.family, "squared", True, True, "QP", sizes, True)

    @property
    def unique_prediction(self) -> bool:
        # Squared: strictly convex in (F_u, W, b). Robust: the sums of norms are not strictly
        # convex, so F_u and b need not be unique (W is, through β‖W‖²).
        return not self.robust

    # ------------------------------------------------------------------ evaluation
    def edge_differences(self, F: np.ndarray) -> np.ndarray:
        """(E, c): ``f_i − f_j`` per edge (i < j)."""
        return F[self.edge_i] - F[self.edge_j]

    def point_residuals(self, F: np.ndarray, W: np.ndarray, b: np.ndarray) -> np.ndarray:
        """(n, c): ``r_i = Wᵀx_i + b − f_i``."""
        return np.asarray(self.X @ W) + b[None, :] - F

    def objective(self, x) -> float:
        v = self.unpack(x)
        F, W, b = v["F"], v["W"], v["b"]
        D = self.edge_differences(F)
        R = self.point_residuals(F, W, b)
        if self.robust:
            graph = float(self.edge_w @ np.linalg.norm(D, axis=1))
            fit = float(np.linalg.norm(R, axis=1).sum())
        else:
            graph = float(self.edge_w @ np.einsum("ij,ij->i", D, D))
            fit = float(np.sum(R * R))
        return graph + self.alpha * fit + self.beta * float(np.sum(W * W))

    def smoothed_objective(self, x, delta: float) -> float:
        """``φ_δ`` [004 eq. 11]: every norm ``‖g‖`` replaced by ``√(‖g‖² + δ)`` (robust only)."""
        self._require_robust("smoothed_objective")
        v = self.unpack(x)
        F, W, b = v["F"], v["W"], v["b"]
        D = self.edge_differences(F)
        R = self.point_residuals(F, W, b)
        return (float(self.edge_w @ np.sqrt(np.einsum("ij,ij->i", D, D) + delta))
                + self.alpha * float(np.sqrt(np.einsum("ij,ij->i", R, R) + delta).sum())
                + self.beta * float(np.sum(W * W)))

    def scores(self, x) -> np.ndarray:
        """The label matrix F (n, c) (``F_l = Y``)."""
        return self.unpack(x)["F"]

    # ------------------------------------------------------------------ the general form
    def pack(self, x) -> np.ndarray:
        """``(vec F_u, vec W, b)`` (row-major vecs): the variable of :meth:`as_sum_of_norms`."""
        v = self.unpack(x)
        return np.concatenate([v["F"][self.l:].ravel(), v["W"].ravel(), v["b"]])

    def unpack_vector(self, z: np.ndarray) -> dict[str, np.ndarray]:
        """The variables ``F`` (with ``F_l = Y``), ``W``, ``b`` of a packed vector."""
        z = np.asarray(z, dtype=np.float64).ravel()
        uc, dc = self.u * self.c, self.d * self.c
        if z.shape != (uc + dc + self.c,):
            raise InvalidInputError(
                f"the packed vector must have (u + d + 1)·c = {uc + dc + self.c} entries, got "
                f"{z.shape}.")
        F = np.vstack([self.Y, z[:uc].reshape(self.u, self.c)])
        return {"F": F, "W": z[uc:uc + dc].reshape(self.d, self.c), "b": z[uc + dc:].copy()}

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

    # ------------------------------------------------------------------ certificate
    def adjoint(self, Ue: np.ndarray, Up: np.ndarray) -> np.ndarray:
        """Packed ``Σ_i w_i J_iᵀ u_i`` for edge multipliers ``Ue`` (E, c) and point
        multipliers ``Up`` (n, c) (robust ERE as a sum of norms)."""
        gF = np.asarray(self.incidence.T @ (self.edge_w[:, None] * Ue)) - self.alpha * Up
        gW = self.alpha * np.asarray(self.X.T @ Up)
        gb = self.alpha * Up.sum(axis=0)
        return np.concatenate([gF[self.l:].ravel(), gW.ravel(), gb])

    def forward(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(w_i J_i z)_i`` for a packed direction z: edge (E, c) and point (n, c) parts."""
        v = self.unpack_vector(z)
        dF = v["F"].copy()
        dF[: self.l] = 0.0
        De = self.edge_w[:, None] * np.asarray(self.incidence @ dF)
        Dp = self.alpha * (np.asarray(self.X @ v["W"]) + v["b"][None, :] - dF)
        return De, Dp

    @cached_property
    def _subgradient_scale(self) -> np.ndarray:
        """Per packed coordinate ``Σ_i w_i ‖J_i e_j‖`` (the ∇f part and the floor 1 are added
        by the callers)."""
        absX = abs(self.X) if sp.issparse(self.X) else np.abs(self.X)
        sF = np.repeat(self.degree[self.l:] + self.alpha, self.c)
        sW = np.repeat(self.alpha * np.asarray(absX.sum(axis=0)).ravel(), self.c)
        sb = np.full(self.c, self.alpha * self.n)
        return np.concatenate([sF, sW, sb])

    def _require_robust(self, what: str) -> None:
        if not self.robust:
            raise InvalidInputError(
                f"{what} applies to robust ERE only (robust=True); the squared variant is a "
                "smooth QP.")

    def group_values(self, x) -> tuple[np.ndarray, np.ndarray]:
        v = self.unpack(x)
        return (self.edge_differences(v["F"]),
                self.point_residuals(v["F"], v["W"], v["b"]))

    kkt_options = CERTIFICATE_OPTIONS
    residual_tolerances = {"labels_fixed": "feasibility", "stationarity": "stationarity",
                           **CERTIFICATE_RESIDUALS}

    def _kkt(self, x, kink_tol: float, multipliers: str, target: float,
             iterations: int) -> dict[str, float]:
        """Relative optimality residuals (0 at an optimum; module docstrings):

        * ``labels_fixed`` ``max|F_l − Y|``;
        * robust: ``subgradient`` (min over the multipliers of the (near-)zero norms, τ =
          ``kink_tol``·max(1, max‖g_i‖)), ``kink_slack`` and, when ``x["delta"]`` is given,
          ``smoothed_stationarity`` (:mod:`ssl_opt.problems.ere.sum_of_norms`); the solver's
          multipliers ``x["U_edges"]`` (E, c) and ``x["U_points"]`` (n, c) are a warm start
          (``target``: stop that minimization once below it);
        * squared: ``stationarity`` ``|∇_j| / max(1, Σ|terms_j|)`` of [004 eq. 8] in
          ``(F_u, W, b)``.
        """
        v = self.unpack(x)
        if not all(np.all(np.isfinite(a)) for a in v.values()):
            return {"labels_fixed": float("inf")}
        F, W, b = v["F"], v["W"], v["b"]
        out = {"labels_fixed": float(np.abs(F[: self.l] - self.Y).max())}
        Fc = F.copy()
        Fc[: self.l] = self.Y  # residuals of the feasible point with the labels clamped
        D = self.edge_differences(Fc)
        R = self.point_residuals(Fc, W, b)
        if not self.robust:
            LF = 2.0 * np.asarray(self.incidence.T @ (self.edge_w[:, None] * D))
            aLF = 2.0 * np.asarray(abs(self.incidence).T @ (self.edge_w[:, None] * np.abs(D)))
            gF = LF - 2.0 * self.alpha * R
            sF = aLF + 2.0 * self.alpha * np.abs(R)
            XR = 2.0 * self.alpha * np.asarray(self.X.T @ R)
            absX = abs(self.X) if sp.issparse(self.X) else np.abs(self.X)
            gW = XR + 2.0 * self.beta * W
            sW = 2.0 * self.alpha * np.asarray(absX.T @ np.abs(R)) + 2.0 * self.beta * np.abs(W)
            gb = 2.0 * self.alpha * R.sum(axis=0)
            sb = 2.0 * self.alpha * np.abs(R).sum(axis=0)
            grad = np.concatenate([gF[self.l:].ravel(), gW.ravel(), gb])
            scale = np.concatenate([sF[self.l:].ravel(), sW.ravel(), sb])
            out["stationarity"] = float(np.max(np.abs(grad) / np.maximum(1.0, scale)))
            return out
        values = getattr(x, "x", x)
        E = self.n_edges
        g = np.vstack([D, R])
        weights = np.concatenate([self.edge_w, np.full(self.n, self.alpha)])
        gradf = np.concatenate([np.zeros(self.u * self.c), 2.0 * self.beta * W.ravel(),
                                np.zeros(self.c)])
        scale = np.maximum(1.0, self._subgradient_scale + np.abs(gradf))

        def adjoint(U):
            return self.adjoint(U[:E], U[E:])

        def forward(z):
            De, Dp = self.forward(z)
            return np.vstack([De, Dp])

        U0 = None
        if (multipliers == "auto" and hasattr(values, "get")
                and values.get("U_edges") is not None and values.get("U_points") is not None):
            U0 = np.vstack([multiplier_block(values["U_edges"], E, self.c, "U_edges"),
                            multiplier_block(values["U_points"], self.n, self.c, "U_points")])
        sigma = max(1.0, float(np.linalg.norm(g, axis=1).max(initial=0.0)))
        cert = subgradient_certificate(gradf, g, weights, adjoint, forward, scale,
                                       kink_tol * sigma, U0, max_iter=iterations,
                                       target=target)
        phi = self.objective({"F": Fc, "W": W, "b": b})
        out["subgradient"] = cert["subgradient"]
        out["kink_slack"] = cert["kink_slack"] / max(1.0, abs(phi))
        delta = check_delta(values)
        if delta is not None:
            out["smoothed_stationarity"] = smoothed_stationarity(gradf, g, delta, adjoint, scale)
        return out


# ---------------------------------------------------------------------------- LRL


class LRL(_LabelEmbedding):
    r"""Linearly regularized Laplacian, the rigid baseline [004 eq. 5]:

    ``min_{W,b} tr(WᵀXᵀLXW) + α‖X_l W + 1bᵀ − Y‖_F² + β‖W‖_F²``     (L = D − A)

    Same arguments as :class:`ERE` (no ``robust``). Variables ``W`` (d, c), ``b`` (c,); the
    scores of every point are ``XW + 1bᵀ``. The minimizer solves the (d+1)×(d+1) normal
    equations :meth:`normal_equations` (SPD since β > 0 and l ≥ 1).
    """

    def __init__(self, X, A, Y, alpha, beta):
        self._setup(X, A, Y, alpha, beta)
        self._freeze()

    @property
    def variables(self) -> dict[str, tuple[int, ...]]:
        return {"W": (self.d, self.c), "b": (self.c,)}

    @property
    def structure(self) -> Structure:
        sizes = self._sizes()
        sizes["variables"] = (self.d + 1) * self.c
        return Structure(self.family, "lrl", True, True, "QP", sizes, True)

    def scores(self, x) -> np.ndarray:
        """``XW + 1bᵀ`` (n, c)."""
        return self.model_scores(x)

    @cached_property
    def _XLX(self) -> np.ndarray:
        """``XᵀLX`` (d×d) through the graph's incidence: ``Σ_e A_e (x_i − x_j)(x_i − x_j)ᵀ``."""
        DX = self.incidence @ self.X
        DX = DX.toarray() if sp.issparse(DX) else np.asarray(DX)
        return (DX * self.edge_w[:, None]).T @ DX

    def normal_equations(self) -> tuple[np.ndarray, np.ndarray]:
        """``(H, R)`` with ``H [W; bᵀ] = R``: ``H = [[XᵀLX + αX_lᵀX_l + βI, αX_lᵀ1],
        [α1ᵀX_l, αl]]``, ``R = α[X_lᵀY; 1ᵀY]`` (the gradient of [004 eq. 5] set to 0, ÷2)."""
        Xl = self.X[: self.l]
        Xl = Xl.toarray() if sp.issparse(Xl) else Xl
        d = self.d
        H = np.empty((d + 1, d + 1))
        H[:d, :d] = self._XLX + self.alpha * Xl.T @ Xl + self.beta * np.eye(d)
        H[:d, d] = H[d, :d] = self.alpha * Xl.sum(axis=0)
        H[d, d] = self.alpha * self.l
        R = self.alpha * np.vstack([Xl.T @ self.Y, self.Y.sum(axis=0)[None, :]])
        return H, R

    def objective(self, x) -> float:
        v = self.unpack(x)
        W, b = v["W"], v["b"]
        DXW = np.asarray(self.incidence @ (self.X @ W))
        Rl = np.asarray(self.X[: self.l] @ W) + b[None, :] - self.Y
        return (float(self.edge_w @ np.einsum("ij,ij->i", DXW, DXW))
                + self.alpha * float(np.sum(Rl * Rl)) + self.beta * float(np.sum(W * W)))

    residual_tolerances = {"stationarity": "stationarity"}

    def _kkt(self, x) -> dict[str, float]:
        """``stationarity``: ``|∇_j| / max(1, Σ|terms_j|)`` of [004 eq. 5] in (W, b)."""
        v = self.unpack(x)
        if not all(np.all(np.isfinite(a)) for a in v.values()):
            return {"stationarity": float("inf")}
        W, b = v["W"], v["b"]
        Xl = self.X[: self.l]
        Rl = np.asarray(Xl @ W) + b[None, :] - self.Y
        t1 = 2.0 * self._XLX @ W
        t2 = 2.0 * self.alpha * np.asarray(Xl.T @ Rl)
        t3 = 2.0 * self.beta * W
        gW = t1 + t2 + t3
        sW = np.abs(t1) + np.abs(t2) + np.abs(t3)
        gb = 2.0 * self.alpha * Rl.sum(axis=0)
        sb = 2.0 * self.alpha * np.abs(Rl).sum(axis=0)
        grad = np.concatenate([gW.ravel(), gb])
        scale = np.maximum(1.0, np.concatenate([sW.ravel(), sb]))
        return {"stationarity": float(np.max(np.abs(grad) / scale))}
