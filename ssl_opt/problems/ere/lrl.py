r"""LRL — the linearly regularized Laplacian, the rigid baseline of ERE [004 eq. 5];
docs/design.md §4.5: ``min_{W,b} tr(WᵀXᵀLXW) + α‖X_l W + 1bᵀ − Y‖_F² + β‖W‖_F²`` (L = D − A),
on the data of :class:`~ssl_opt.problems.ere.problem.ERE`."""

from __future__ import annotations

from functools import cached_property

import numpy as np
import scipy.sparse as sp

from ssl_opt.modeling.expressions import Variable, matmul
from ssl_opt.modeling.model import Model
from ssl_opt.modeling.terms import GraphQuadratic, Ridge, SquaredError
from ssl_opt.problems.base import Structure
from ssl_opt.problems.ere.problem import LabelEmbedding


class LRL(LabelEmbedding, Model):
    r"""Linearly regularized Laplacian, the rigid baseline [004 eq. 5]:

    ``min_{W,b} tr(WᵀXᵀLXW) + α‖X_l W + 1bᵀ − Y‖_F² + β‖W‖_F²``     (L = D − A)

    Same arguments as :class:`ERE` (no ``robust``). Variables ``W`` (d, c), ``b`` (c,); the
    scores of every point are ``XW + 1bᵀ``. A named model (docs/design.md §2a): the model
    ``GraphQuadratic(X @ W, L) + SquaredError((X @ W + b)[:l], Y, α) + Ridge(W, β)``, whose
    certificate (``stationarity``, from the terms) and CVXPY reference are the model's; the
    minimizer solves the (d+1)×(d+1) normal equations :meth:`normal_equations` (SPD since
    β > 0 and l ≥ 1), the ``irls`` solver's closed form.
    """

    residual_tolerances = {"stationarity": "stationarity"}  # unconstrained: no feasibility

    def __init__(self, X, A, Y, alpha, beta):
        self._setup(X, A, Y, alpha, beta)
        W, b = Variable("W", (self.d, self.c)), Variable("b", (self.c,))
        XW = matmul(self.X, W)
        scores = XW + b
        Model.__init__(self, [GraphQuadratic(XW, self.laplacian, 1.0, validated=True),
                              SquaredError(scores[: self.l], self.Y, self.alpha),
                              Ridge(W, self.beta)],
                       prediction=scores, name="lrl", unique_prediction=True)

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
        """The model's objective, the graph term through the incidence (no n×n product)."""
        v = self.unpack(x)
        W, b = v["W"], v["b"]
        DXW = np.asarray(self.incidence @ (self.X @ W))
        Rl = np.asarray(self.X[: self.l] @ W) + b[None, :] - self.Y
        return (float(self.edge_w @ np.einsum("ij,ij->i", DXW, DXW))
                + self.alpha * float(np.sum(Rl * Rl)) + self.beta * float(np.sum(W * W)))
