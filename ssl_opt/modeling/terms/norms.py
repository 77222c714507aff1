r"""Separable norms of a term's argument (docs/design.md §6).

* ``L1``: ``h(z) = Σ_i w_i |z_i|`` (``w`` a scalar or an array of z's shape, ≥ 0); prox: soft
  thresholding ``sign(v)·max(|v| − t·w, 0)``; ``∂h(z)_i = w_i sign(z_i)`` for ``z_i ≠ 0`` and
  ``[−w_i, w_i]`` at 0.
* ``ElasticNet``: ``l1·‖z‖₁ + l2·‖z‖²_F``; prox ``soft(v, t·l1)/(1 + 2t·l2)``.
* ``GroupNorms`` (aliases ``GroupL21``, ``SumOfRowNorms``): ``Σ_i w_i ‖z_i‖₂`` over the rows of
  the argument (a 1-D argument: each entry is a row, the weighted ℓ1); prox: block soft
  thresholding ``(1 − t w_i / max(‖v_i‖, t w_i)) v_i``; ``∂h(z)_i = w_i z_i/‖z_i‖`` for
  ``z_i ≠ 0``, the ball of radius ``w_i`` at 0.
* ``HuberNorms``: ``Σ_i w_i H_δ(‖z_i‖₂)``, ``H_δ(r) = r²/(2δ)`` for ``r ≤ δ``, ``r − δ/2``
  above (Huber 1964; the circular Huber of O'Donoghue, Stathopoulos & Boyd 2013):
  ``∇ = w_i z_i / max(‖z_i‖, δ)``; prox ``(1 − s/max(‖v_i‖, s + δ)) v_i`` with ``s = t w_i``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ssl_opt.exceptions import InvalidInputError
from ssl_opt.modeling.term import Term
from ssl_opt.modeling.terms._common import as_rows, row_step, row_weights, scalar
from ssl_opt.optional import cvxpy as cp


def _weights(w, shape, owner: str) -> np.ndarray | float:
    if np.ndim(w) == 0:
        w = float(w)
        if not np.isfinite(w) or w < 0:
            raise InvalidInputError(f"weight of {owner} must be finite and ≥ 0, got {w!r}.")
        return w
    w = np.asarray(w, dtype=np.float64)
    try:
        w = np.broadcast_to(w, shape)
    except ValueError as exc:
        raise InvalidInputError(f"weight of {owner} must be a scalar or broadcast to the "
                                f"argument's shape {shape}, got {w.shape}.") from exc
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise InvalidInputError(f"weight of {owner} must be finite and ≥ 0 everywhere.")
    return w


def _pseudo_huber(Z: np.ndarray, w, delta: float, hessian: bool = True):
    """``Σ_i w_i r_i``, ``r_i = √(‖z_i‖² + δ)``, over the rows of ``Z`` [004 eq. 11], its
    gradient ``w_i z_i/r_i`` and its Hessian, one block ``w_i(I/r_i − z_i z_iᵀ/r_i³)`` per row
    (``w_i δ/r_i³`` for one column)."""
    r = np.sqrt(np.sum(Z * Z, axis=1, keepdims=True) + delta)
    wr = w / r
    return (float(np.sum(w * r)), wr * Z,
            row_block_hessian(Z, wr, -wr / r**2) if hessian else None)


def row_block_hessian(Z: np.ndarray, a: np.ndarray, b: np.ndarray):
    """The block-diagonal matrix with one block ``a_i I + b_i z_i z_iᵀ`` per row ``z_i`` of
    ``Z`` (``a, b`` columns of length n), in the C-order flattening of Z: its diagonal (a 1-D
    array) for one column, else a CSR matrix."""
    n, c = Z.shape
    if c == 1:
        return np.ravel(a + b * Z * Z)
    blocks = (a[:, :, None] * np.eye(c) + b[:, :, None] * Z[:, :, None] * Z[:, None, :])
    base = np.arange(n)[:, None, None] * c
    rows = np.broadcast_to(base + np.arange(c)[None, :, None], blocks.shape)
    cols = np.broadcast_to(base + np.arange(c)[None, None, :], blocks.shape)
    return sp.csr_matrix((blocks.ravel(), (rows.ravel(), cols.ravel())), shape=(n * c, n * c))


def _soft(v, s):
    return np.sign(v) * np.maximum(np.abs(v) - s, 0.0)


def _l1_subgradient(z, u, w, tol):
    w = np.broadcast_to(w, np.shape(z))
    return np.where(np.abs(z) <= tol, np.clip(u, -w, w), w * np.sign(z))


class L1(Term):
    """``Σ_i w_i |z_i|``."""

    name = "l1"
    program_class = "LP"
    elementwise_prox = True

    def __init__(self, argument, weight=1.0):
        super().__init__(argument, 1.0)
        self.w = _weights(weight, self.shape, "L1")
        self.weight = float(np.max(self.w)) if np.ndim(self.w) else self.w

    def value(self, z):
        return float(np.sum(self.w * np.abs(z)))

    def cvxpy(self, z):
        w = self.w
        return cp.sum(cp.multiply(w, cp.abs(z))) if np.ndim(w) else w * cp.sum(cp.abs(z))

    def prox(self, v, t):
        return _soft(v, t * self.w)

    def project_subgradient(self, z, u, tol):
        return _l1_subgradient(z, u, self.w, tol)

    def norm_structure(self):
        """``(w per group, group size, ρ)`` of ``Σ_g w_g‖z_g‖ + ρ‖z‖²`` (groups: entries)."""
        return np.ravel(np.broadcast_to(self.w, self.shape)).astype(np.float64), 1, 0.0

    def smoothed(self, z, delta, hessian=True):
        """``Σ w_i √(z_i² + δ)``, see :func:`_pseudo_huber`."""
        z = np.asarray(z, dtype=np.float64)
        w = np.reshape(np.broadcast_to(self.w, z.shape), (-1, 1))
        value, grad, hess = _pseudo_huber(z.reshape(-1, 1), w, delta, hessian)
        return value, grad.reshape(z.shape), hess


class ElasticNet(Term):
    """``l1·‖z‖₁ + l2·‖z‖²_F`` (``l1`` a scalar or an array of z's shape, ``l2`` a scalar,
    both ≥ 0); prox ``soft(v, t·l1)/(1 + 2t·l2)``; ``∂h = l1·∂‖z‖₁ + 2 l2 z``."""

    name = "elastic_net"
    program_class = "QP"
    elementwise_prox = True

    def __init__(self, argument, l1, l2):
        super().__init__(argument, 1.0)
        self.l1 = _weights(l1, self.shape, "ElasticNet (l1)")
        self.l2 = scalar(l2, "l2", "ElasticNet", low=0.0)
        self.weight = float(np.max(self.l1)) if np.ndim(self.l1) else self.l1

    def value(self, z):
        return float(np.sum(self.l1 * np.abs(z)) + self.l2 * np.sum(np.square(z)))

    def cvxpy(self, z):
        l1 = cp.sum(cp.multiply(self.l1, cp.abs(z))) if np.ndim(self.l1) else (
            self.l1 * cp.sum(cp.abs(z)))
        return l1 + self.l2 * cp.sum_squares(z)

    def prox(self, v, t):
        return _soft(v, t * self.l1) / (1.0 + 2.0 * t * self.l2)

    def project_subgradient(self, z, u, tol):
        smooth = 2.0 * self.l2 * np.asarray(z, dtype=np.float64)
        return smooth + _l1_subgradient(z, u - smooth, self.l1, tol)

    def norm_structure(self):
        """``(l1 per entry, 1, l2)``: see :meth:`L1.norm_structure`."""
        return (np.ravel(np.broadcast_to(self.l1, self.shape)).astype(np.float64), 1,
                self.l2)

    def smoothed(self, z, delta, hessian=True):
        """``Σ l1_i √(z_i² + δ) + l2‖z‖²`` (the quadratic part exact)."""
        z = np.asarray(z, dtype=np.float64)
        w = np.reshape(np.broadcast_to(self.l1, z.shape), (-1, 1))
        value, grad, hess = _pseudo_huber(z.reshape(-1, 1), w, delta, hessian)
        return (value + self.l2 * float(np.sum(z * z)), grad.reshape(z.shape) + 2 * self.l2 * z,
                None if hess is None else hess + 2 * self.l2)

    def describe(self) -> str:
        return f"{self.name}(l1={self.weight:g}, l2={self.l2:g})"


class GroupNorms(Term):
    """``Σ_i w_i ‖z_i‖₂`` over the rows ``z_i`` of a 2-D argument (a 1-D argument: each entry
    is a row, ``Σ_i w_i |z_i|``); ``w`` a scalar or a length-n vector ≥ 0.

    Also named ``GroupL21`` (the row-group ℓ2,1 norm) and ``SumOfRowNorms`` (a sum of ℓ2 norms
    of affine maps ``‖G_i x − h_i‖``: state the argument as the (m, k) expression whose rows
    are those maps).
    """

    name = "group_norms"
    program_class = "SOCP"

    def __init__(self, argument, weight=1.0):
        super().__init__(argument, 1.0)
        self.w = row_weights(weight, self.shape, type(self).__name__)
        self.weight = float(np.max(self.w)) if np.ndim(self.w) else self.w
        if len(self.shape) < 2 or self.shape[1] == 1:
            self.program_class = "LP"  # entrywise: a weighted ℓ1
            self.elementwise_prox = True

    def _w_rows(self):
        return np.reshape(self.w, (-1, 1)) if np.ndim(self.w) else self.w

    def value(self, z):
        norms = np.linalg.norm(as_rows(z), axis=1)
        return float(np.sum(self.w * norms))

    def cvxpy(self, z):
        if len(self.shape) == 2:
            norms = cp.norm(z, 2, axis=1)
        else:
            norms = cp.abs(z)
        if np.ndim(self.w):
            return cp.sum(cp.multiply(self.w, norms)) if len(self.shape) else (
                float(self.w[0]) * norms)
        return self.w * cp.sum(norms)

    def prox(self, v, t):
        V = as_rows(v)
        s = row_step(t, self.shape) * self._w_rows()
        norms = np.linalg.norm(V, axis=1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            factor = np.where(norms > s, 1.0 - s / np.where(norms > 0, norms, 1.0), 0.0)
        return (factor * V).reshape(np.shape(v))

    def project_subgradient(self, z, u, tol):
        Z, U = as_rows(z), as_rows(u)
        w = np.broadcast_to(self._w_rows(), (Z.shape[0], 1))
        norms = np.linalg.norm(Z, axis=1, keepdims=True)
        at_kink = norms <= tol
        unorms = np.linalg.norm(U, axis=1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            ball = U * np.minimum(1.0, w / np.where(unorms > 0, unorms, 1.0))
            smooth = w * Z / np.where(at_kink, 1.0, norms)
        return np.where(at_kink, ball, smooth).reshape(np.shape(z))

    def kink_scale(self, z):
        return float(np.max(np.linalg.norm(as_rows(z), axis=1))) if np.size(z) else 0.0

    def norm_structure(self):
        """``(w per row, row size, 0)``: see :meth:`L1.norm_structure`."""
        rows = self.shape[0] if self.shape else 1
        size = int(np.prod(self.shape[1:], dtype=int)) if len(self.shape) > 1 else 1
        return np.broadcast_to(np.ravel(self.w), (rows,)).astype(np.float64), size, 0.0

    def smoothed(self, z, delta, hessian=True):
        """``Σ w_i √(‖z_i‖² + δ)``, see :func:`_pseudo_huber`."""
        Z = as_rows(z)
        w = np.broadcast_to(self._w_rows(), (Z.shape[0], 1))
        value, grad, hess = _pseudo_huber(Z, w, delta, hessian)
        return value, grad.reshape(np.shape(z)), hess


#: The row-group ℓ2,1 norm ``Σ_i w_i ‖z_i‖₂`` (the same class as :class:`GroupNorms`).
GroupL21 = GroupNorms
#: Sums of ℓ2 norms of affine maps, ``Σ_i w_i ‖G_i x − h_i‖₂`` with the argument the (m, k)
#: expression whose rows are the maps (the same class as :class:`GroupNorms`).
SumOfRowNorms = GroupNorms


class HuberNorms(Term):
    """``Σ_i w_i H_δ(‖z_i‖₂)`` over rows (a 1-D argument: entries), ``H_δ(r) = r²/(2δ)`` for
    ``r ≤ δ`` and ``r − δ/2`` above; ``w`` a scalar or a length-n vector ≥ 0, ``δ > 0``.

    Smooth (``∇H`` is 1/δ-Lipschitz): ``∇_i = w_i z_i / max(‖z_i‖, δ)``;
    ``∇²_i·v = (w_i/δ) v_i`` for ``‖z_i‖ ≤ δ`` and ``w_i (v_i/r − z_i ⟨z_i, v_i⟩/r³)`` above;
    prox per row ``(1 − s/max(‖v_i‖, s + δ)) v_i``, ``s = t w_i`` (radius ``r δ/(δ + s)``
    inside, ``r − s`` outside). CVXPY: ``huber(‖z_i‖, δ)/(2δ)``.
    """

    name = "huber_norms"
    program_class = "SOCP"

    def __init__(self, argument, weight=1.0, delta=1.0):
        super().__init__(argument, 1.0)
        self.w = row_weights(weight, self.shape, "HuberNorms")
        self.weight = float(np.max(self.w)) if np.ndim(self.w) else self.w
        self.delta = scalar(delta, "delta", "HuberNorms", low=0.0, strict=True)
        if len(self.shape) < 2 or self.shape[1] == 1:
            self.program_class = "QP"
            self.elementwise_prox = True

    def _w_rows(self):
        return np.reshape(self.w, (-1, 1)) if np.ndim(self.w) else self.w

    def value(self, z):
        r = np.linalg.norm(as_rows(z), axis=1)
        d = self.delta
        return float(np.sum(self.w * np.where(r <= d, r * r / (2 * d), r - d / 2)))

    def cvxpy(self, z):
        norms = cp.norm(z, 2, axis=1) if len(self.shape) == 2 else z
        h = cp.huber(norms, self.delta) / (2 * self.delta)
        if np.ndim(self.w):
            return cp.sum(cp.multiply(self.w, h)) if len(self.shape) else float(self.w[0]) * h
        return self.w * cp.sum(h)

    def gradient(self, z):
        Z = as_rows(z)
        r = np.linalg.norm(Z, axis=1, keepdims=True)
        return (self._w_rows() * Z / np.maximum(r, self.delta)).reshape(np.shape(z))

    def hessp(self, z, v):
        Z, V = as_rows(z), as_rows(v)
        r = np.linalg.norm(Z, axis=1, keepdims=True)
        inside = r <= self.delta
        rs = np.where(inside, 1.0, r)
        outer = V / rs - Z * np.sum(Z * V, axis=1, keepdims=True) / rs**3
        out = self._w_rows() * np.where(inside, V / self.delta, outer)
        return out.reshape(np.shape(z))

    def hessian(self, z):
        """Block diagonal, one ``c×c`` block per row (the diagonal for a 1-D argument)."""
        Z = as_rows(z)
        w = np.broadcast_to(self._w_rows(), (Z.shape[0], 1))
        r = np.linalg.norm(Z, axis=1, keepdims=True)
        inside = r <= self.delta
        rs = np.where(inside, 1.0, r)
        return row_block_hessian(Z, w * np.where(inside, 1.0 / self.delta, 1.0 / rs),
                                 w * np.where(inside, 0.0, -1.0 / rs**3))

    def prox(self, v, t):
        V = as_rows(v)
        s = row_step(t, self.shape) * self._w_rows()
        norms = np.linalg.norm(V, axis=1, keepdims=True)
        return ((1.0 - s / np.maximum(norms, s + self.delta)) * V).reshape(np.shape(v))

    def describe(self) -> str:
        return f"{self.name}(weight={self.weight:g}, delta={self.delta:g})"
