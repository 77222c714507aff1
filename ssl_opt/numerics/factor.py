"""Factorizations of symmetric positive definite matrices, reused across many solves.

:class:`SPDFactor` factors ``A`` once and solves ``A X = B`` for any number of right-hand
sides: SuperLU in symmetric mode for a sparse ``A`` (no pivoting, minimum-degree ordering of
``A + Aᵀ``, which for an SPD matrix is a Cholesky factorization in LU form), or LAPACK's
Cholesky when ``A`` is dense or more than :data:`DENSE_FILL` full. The inverse is never formed.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp
from scipy.sparse.csgraph import breadth_first_order
from scipy.sparse.linalg import splu

from ssl_opt.exceptions import InvalidInputError

#: Fraction of nonzeros above which a sparse matrix is factored as a dense one.
DENSE_FILL = 0.2


class SPDFactor:
    """One factorization of an SPD matrix ``A`` (n×n), then ``solve(B)`` for ``B`` (n,) or (n, k).

    Raises :class:`InvalidInputError` when ``A`` is found not positive definite: the dense
    Cholesky fails, or a pivot of the unpivoted sparse LU (``diag(U)``) is not positive.
    """

    def __init__(self, A):
        n = A.shape[0]
        self.n = n
        dense = not sp.issparse(A) or (n and A.nnz > DENSE_FILL * n * n)
        if dense:
            M = A.toarray() if sp.issparse(A) else np.asarray(A, dtype=np.float64)
            try:
                self._chol = la.cho_factor(M, lower=True, check_finite=False)
            except la.LinAlgError as exc:
                raise InvalidInputError(
                    f"the matrix to factor is not positive definite ({exc})."
                ) from exc
            self.kind = "dense"
            self.fill = n * (n + 1) // 2
        else:
            self._A = sp.csc_matrix(A, dtype=np.float64)
            self._lu = _symmetric_lu(self._A)
            # Without pivoting the LU of an SPD matrix is LDLᵀ with D = diag(U) > 0.
            pivots = self._lu.U.diagonal()
            if not np.all(pivots > 0):
                raise InvalidInputError(
                    f"the matrix to factor is not positive definite (pivot "
                    f"{float(pivots.min()):.3g} <= 0).")
            self.kind = "sparse"
            self.fill = int(self._lu.L.nnz + self._lu.U.nnz)

    def __getstate__(self) -> dict:
        """A SuperLU factor cannot be pickled: the sparse matrix is, and is factored again."""
        return {k: v for k, v in self.__dict__.items() if k != "_lu"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if self.kind == "sparse":
            self._lu = _symmetric_lu(self._A)

    def solve(self, B: np.ndarray) -> np.ndarray:
        B = np.asarray(B, dtype=np.float64)
        if B.size == 0:
            return np.zeros_like(B)
        if self.kind == "dense":
            return la.cho_solve(self._chol, B, check_finite=False)
        return self._lu.solve(B)


def _symmetric_lu(A: sp.csc_matrix):
    """SuperLU in symmetric mode without pivoting: Cholesky in LU form for an SPD ``A``."""
    try:
        return splu(A, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                    options={"SymmetricMode": True})
    except RuntimeError as exc:  # SuperLU: "Factor is exactly singular"
        raise InvalidInputError(
            f"the matrix to factor is not positive definite ({exc}).") from exc


def predicted_fill(A, probe_sizes: tuple[int, int]) -> float:
    """Fill of :class:`SPDFactor` on the sparse SPD ``A`` (n×n), predicted without factoring
    it: factor two breadth-first balls of its graph (``probe_sizes`` points, grown from the
    row with the largest diagonal), read the growth exponent ``e`` of ``fill(m) ∝ m^e`` off
    them (at least 1) and extrapolate to n. Fill depends on the graph's intrinsic dimension,
    which the sizes alone do not show (measured in ``docs/lass.md``)."""
    A = sp.csr_matrix(A)
    n = A.shape[0]
    order = breadth_first_order(A, int(np.argmax(A.diagonal())), directed=False,
                                return_predecessors=False)
    fills, sizes = [], []
    for m in probe_sizes:
        m = min(m, order.size)
        ball = np.sort(order[:m])
        fills.append(SPDFactor(sp.csc_matrix(A[ball][:, ball])).fill)
        sizes.append(m)
    if sizes[1] <= sizes[0]:
        return float(fills[1]) * n / max(sizes[1], 1)
    exponent = max(1.0, np.log(fills[1] / fills[0]) / np.log(sizes[1] / sizes[0]))
    return float(fills[1] * (n / sizes[1]) ** exponent)


def psd_factor(K: np.ndarray, rtol: float) -> tuple[np.ndarray, np.ndarray]:
    """``K ≈ ΦΦᵀ`` from the eigen-decomposition of the symmetric ``K``: ``Φ = V_S √λ_S``
    over the eigenvalues ``S = {λ > rtol·λ_max}``, in decreasing order; returns ``(Φ, λ_S)``
    (``Φ/λ_S`` is then ``V_S/√λ_S``, the factor of the pseudo-inverse). Negative eigenvalues
    are dropped, so ``ΦΦᵀ`` is the projection of ``K`` onto the PSD cone up to the dropped
    small positive ones; ``Φ`` has no column when ``K`` has no positive eigenvalue."""
    w, V = la.eigh(0.5 * (K + K.T))
    w, V = w[::-1], V[:, ::-1]
    if not (w.size and w[0] > 0):
        return np.zeros((K.shape[0], 0)), np.zeros(0)
    keep = w > rtol * w[0]
    return np.ascontiguousarray(V[:, keep] * np.sqrt(w[keep])), w[keep]
