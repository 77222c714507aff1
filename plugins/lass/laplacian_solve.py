"""Repeated solves with ``A = 2λL + ρI`` for many right-hand-side columns [002 §3.2].

* :class:`FactorSolve` — one sparse LU of A in SuperLU's symmetric mode (no pivoting, the
  symmetric minimum-degree ordering of ``AᵀA``-free ``A + Aᵀ``): for an SPD matrix this is a
  Cholesky factorization in LU form; every later solve is two triangular sweeps for all K
  columns at once. Fill grows with the graph's intrinsic dimension: a 10-NN graph of 10,000
  points in 2-D factors in 0.05 s (0.5M entries), of 10-D Gaussian points in 17 s (37M)
  (``python benchmarks/ablations.py``).
* :class:`BlockCG` — Jacobi-preconditioned conjugate gradients on all K columns at once (one
  sparse matrix × dense block product per iteration), warm-started from the previous solution,
  to a relative tolerance the caller can loosen while far from the optimum (inexact ADMM).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ssl_opt.numerics.block_cg import block_jacobi_cg
from ssl_opt.numerics.factor import SPDFactor


class FactorSolve:
    kind = "factor"

    def __init__(self, A: sp.spmatrix):
        self._factor = SPDFactor(sp.csc_matrix(A))
        self.iterations = 0

    @property
    def fill(self) -> int:
        return self._factor.fill

    def solve(self, B: np.ndarray, X0: np.ndarray | None = None, tol: float = 0.0,
              atol: float = 0.0) -> np.ndarray:
        return self._factor.solve(B)


class BlockCG:
    kind = "cg"

    def __init__(self, A: sp.spmatrix, max_iter: int = 1000):
        self.A = sp.csr_matrix(A)
        self.inv_diag = 1.0 / self.A.diagonal()
        self.max_iter = max_iter
        self.iterations = 0  # total CG iterations over all solves

    def solve(self, B: np.ndarray, X0: np.ndarray | None = None, tol: float = 1e-10,
              atol: float = 0.0) -> np.ndarray:
        """Columns stop at ``max|b − Ax| ≤ max(tol·max|b|, atol)`` (max-norms: the caller's
        residuals are entrywise)."""
        X = np.zeros_like(B) if X0 is None else X0.copy()
        R = B - self.A @ X
        target = np.maximum(tol * np.abs(B).max(axis=0), atol)
        if np.all(np.abs(R).max(axis=0) <= target):
            return X
        self.iterations += block_jacobi_cg(
            self.A.__matmul__, X, R, self.inv_diag,
            lambda res: bool(np.all(np.abs(res).max(axis=0) <= target)), self.max_iter)
        return X
