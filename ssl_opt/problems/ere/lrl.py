r"""LRL — the linearly regularized Laplacian, the rigid baseline of ERE [004 eq. 5];
docs/design.md §4.5: ``min_{W,b} tr(WᵀXᵀLXW) + α‖X_l W + 1bᵀ − Y‖_F² + β‖W‖_F²`` (L = D − A),
on the data of :class:`~ssl_opt.problems.ere.problem.ERE`."""

from __future__ import annotations

from functools import cached_property

import numpy as np
import scipy.sparse as sp

from ssl_opt.problems.base import Structure
from ssl_opt.problems.ere.problem import LabelEmbedding


class LRL(LabelEmbedding):
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

    def as_model(self):
        """This problem as a :class:`~ssl_opt.modeling.Model` in W and b (docs/design.md §6):
        ``GraphQuadratic(X @ W, L) + SquaredError((X @ W + b)[:l], Y, α) + Ridge(W, β)``;
        prediction ``X @ W + b``."""
        from ssl_opt.modeling import GraphQuadratic, Model, Ridge, SquaredError, Variable, matmul

        W, b = Variable("W", (self.d, self.c)), Variable("b", (self.c,))
        XW = matmul(self.X, W)
        scores = XW + b
        terms = [GraphQuadratic(XW, self.laplacian, 1.0),
                 SquaredError(scores[: self.l], self.Y, self.alpha), Ridge(W, self.beta)]
        return Model(terms, prediction=scores, name="lrl", unique_prediction=True)

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

    def _gradient_terms(self, W, b) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The terms of the gradient of [004 eq. 5], ``(2XᵀLXW, 2αX_lᵀR_l, 2βW, R_l)`` with
        ``R_l = X_l W + 1bᵀ − Y``: ``∇_W`` is the sum of the first three, ``∇_b = 2αR_lᵀ1``."""
        Xl = self.X[: self.l]
        Rl = np.asarray(Xl @ W) + b[None, :] - self.Y
        t1 = 2.0 * self._XLX @ W
        t2 = 2.0 * self.alpha * np.asarray(Xl.T @ Rl)
        t3 = 2.0 * self.beta * W
        return t1, t2, t3, Rl

    def gradient(self, x) -> dict[str, np.ndarray]:
        """``∇_W = 2XᵀLXW + 2αX_lᵀ(X_l W + 1bᵀ − Y) + 2βW``, ``∇_b = 2α(X_l W + 1bᵀ − Y)ᵀ1``
        [004 eq. 5] (twice the residual of :meth:`normal_equations`)."""
        v = self.unpack(x)
        t1, t2, t3, Rl = self._gradient_terms(v["W"], v["b"])
        return {"W": t1 + t2 + t3, "b": 2.0 * self.alpha * Rl.sum(axis=0)}

    residual_tolerances = {"stationarity": "stationarity"}

    def _kkt(self, x) -> dict[str, float]:
        """``stationarity``: ``|∇_j| / max(1, Σ|terms_j|)`` of [004 eq. 5] in (W, b)."""
        v = self.unpack(x)
        if not all(np.all(np.isfinite(a)) for a in v.values()):
            return {"stationarity": float("inf")}
        t1, t2, t3, Rl = self._gradient_terms(v["W"], v["b"])
        gW = t1 + t2 + t3
        sW = np.abs(t1) + np.abs(t2) + np.abs(t3)
        gb = 2.0 * self.alpha * Rl.sum(axis=0)
        sb = 2.0 * self.alpha * np.abs(Rl).sum(axis=0)
        grad = np.concatenate([gW.ravel(), gb])
        scale = np.maximum(1.0, np.concatenate([sW.ravel(), sb]))
        return {"stationarity": float(np.max(np.abs(grad) / scale))}
