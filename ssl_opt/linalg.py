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
from scipy.sparse.linalg import splu

from .exceptions import InvalidInputError

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
            try:
                self._lu = splu(sp.csc_matrix(A, dtype=np.float64), permc_spec="MMD_AT_PLUS_A",
                                diag_pivot_thresh=0.0, options={"SymmetricMode": True})
            except RuntimeError as exc:  # SuperLU: "Factor is exactly singular"
                raise InvalidInputError(
                    f"the matrix to factor is not positive definite ({exc}).") from exc
            # Without pivoting the LU of an SPD matrix is LDLᵀ with D = diag(U) > 0.
            pivots = self._lu.U.diagonal()
            if not np.all(pivots > 0):
                raise InvalidInputError(
                    f"the matrix to factor is not positive definite (pivot "
                    f"{float(pivots.min()):.3g} <= 0).")
            self.kind = "sparse"
            self.fill = int(self._lu.L.nnz + self._lu.U.nnz)

    def solve(self, B: np.ndarray) -> np.ndarray:
        B = np.asarray(B, dtype=np.float64)
        if B.size == 0:
            return np.zeros_like(B)
        if self.kind == "dense":
            return la.cho_solve(self._chol, B, check_finite=False)
        return self._lu.solve(B)
