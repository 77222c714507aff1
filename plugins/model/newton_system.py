"""The Newton system ``H_ff d_f = −g_f`` of a smoothed model over its free entries
(``irls-newton``): H assembled from the terms' Hessians (:mod:`ssl_opt.plugins.model.assembly`),
solved dense (shifted Cholesky), sparse (LDLᵀ in a reused pattern) or in K's range for a
kernel expansion."""

from __future__ import annotations

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp

from ssl_opt.modeling.model import Model
from ssl_opt.numerics.ldl import PatternLDL
from ssl_opt.plugins.model.assembly import (
    HessianAssembler,
    KernelReduction,
)

#: Relative diagonal shift of the dense Cholesky (kernel matrices are numerically singular).
DENSE_SHIFT = 1e-13


class NewtonSystem:
    """``H_ff d_f = −g_f`` over the free entries, H assembled from the terms' Hessians."""

    def __init__(self, model: Model, terms, free: np.ndarray):
        self.model, self.free = model, free
        self.assembler = HessianAssembler(model, terms)
        self.ldl = PatternLDL()
        self.dense: bool | None = None
        self.factorizations = 0
        self.reduction = None
        if self.assembler.has_dense_core:
            reduction = KernelReduction(self.assembler, model)
            alpha = reduction.alpha
            if reduction.applies and np.isin(np.arange(alpha.start, alpha.stop), free).all():
                self.reduction = reduction
                self.dense = True

    def direction(self, hessians, grad: np.ndarray, theta: np.ndarray,
                  gradients) -> np.ndarray:
        self.factorizations += 1
        if self.reduction is not None:
            u = self.reduction.pulled_core(gradients)
            return self.reduction.direction(hessians, u, grad, theta, self.free)
        H = self.assembler.assemble(hessians, dense=self.dense)
        self.dense = not sp.issparse(H)
        f = self.free
        rhs = -grad[f]
        d = np.zeros(self.model.size)
        if self.dense:
            Hf = H[np.ix_(f, f)] if f.size < H.shape[0] else H
            d[f] = _dense_solve(Hf, rhs)
        else:
            Hf = H[f][:, f] if f.size < H.shape[0] else H
            d[f] = _sparse_solve(self.ldl, Hf, rhs)
        return d


def _dense_solve(H: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Cholesky with a relative shift (raised ×100 until it factors)."""
    diag = np.abs(np.diag(H))
    base = float(np.max(diag, initial=0.0)) or 1.0
    shift = DENSE_SHIFT * base
    for _ in range(8):
        try:
            A = H + shift * np.eye(H.shape[0]) if shift else H
            return la.cho_solve(la.cho_factor(A, lower=False, check_finite=False), rhs,
                                check_finite=False)
        except la.LinAlgError:
            shift *= 100.0
    return la.lstsq(H, rhs, check_finite=False)[0]


def _sparse_solve(ldl: PatternLDL, H, rhs: np.ndarray) -> np.ndarray:
    """Sparse LDLᵀ in a reused pattern; a shifted retry, then SuperLU, when it is not positive
    definite."""
    from ssl_opt.exceptions import InvalidInputError

    H = sp.csc_matrix(H)
    base = float(np.max(np.abs(H.diagonal()), initial=0.0)) or 1.0
    shift = 0.0
    for _ in range(6):
        try:
            A = H + shift * sp.identity(H.shape[0], format="csc") if shift else H
            ldl.factor(A)
            ldl.check_positive()
            return ldl.solve(rhs)
        except (InvalidInputError, RuntimeError, ValueError):
            shift = DENSE_SHIFT * base if shift == 0 else shift * 100.0
    return np.zeros_like(rhs)  # no direction: the caller falls back to the gradient
