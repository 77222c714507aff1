"""Block Jacobi-preconditioned conjugate gradients: many right-hand sides of one SPD system,
each column with its own step sizes, sharing every product with the matrix."""

from __future__ import annotations

import numpy as np


def block_jacobi_cg(matvec, X: np.ndarray, R: np.ndarray, inv_diag: np.ndarray, done,
                    max_iter: int) -> int:
    """Jacobi-preconditioned conjugate gradients on all columns of ``X`` at once (per-column
    step sizes), updating ``X`` and its residual ``R = B − MX`` in place; ``matvec(P)`` is
    ``MP`` for an SPD M. Stops after the first update with ``done(R)`` true, or after
    ``max_iter`` iterations; returns the number of iterations."""
    Zp = inv_diag[:, None] * R
    P = Zp.copy()
    rz = np.einsum("ij,ij->j", R, Zp)
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007
        MP = matvec(P)
        pMp = np.einsum("ij,ij->j", P, MP)
        alpha = np.divide(rz, pMp, out=np.zeros_like(rz), where=pMp > 0)
        X += alpha * P
        R -= alpha * MP
        if done(R):
            break
        Zp = inv_diag[:, None] * R
        rz_new = np.einsum("ij,ij->j", R, Zp)
        beta = np.divide(rz_new, rz, out=np.zeros_like(rz), where=rz > 0)
        P *= beta
        P += Zp
        rz = rz_new
    return it
