"""Repeated solves with ``A = 2λL + ρI`` for many right-hand-side columns [002 §3.2].

* :class:`FactorSolve` — one sparse LU of A in SuperLU's symmetric mode (no pivoting, the
  symmetric minimum-degree ordering of ``AᵀA``-free ``A + Aᵀ``): for an SPD matrix this is a
  Cholesky factorization in LU form; every later solve is two triangular sweeps for all K
  columns at once. Fill grows with the graph's intrinsic dimension: a 10-NN graph of 2-D points
  factors quickly and sparsely, one of 10-D points of the same size does not (measured in
  docs/lass.md, ``python benchmarks/ablations.py``).
* :class:`BlockCG` — Jacobi-preconditioned conjugate gradients on all K columns at once
  (:func:`~ssl_opt.numerics.block_cg.block_cg_solve`: one sparse matrix × dense block product
  per iteration), warm-started from the previous solution, to a tolerance the caller can
  loosen while far from the optimum (inexact ADMM).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ssl_opt.numerics.block_cg import block_cg_solve
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
        X, iterations = block_cg_solve(self.A.__matmul__, B, self.inv_diag,
                                       lambda b_norms, _: np.maximum(tol * b_norms, atol),
                                       X0=X0, norm="max", max_iter=self.max_iter)
        self.iterations += iterations
        return X
