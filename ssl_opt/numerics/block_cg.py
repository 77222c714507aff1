"""Block Jacobi-preconditioned conjugate gradients: many right-hand sides of one SPD system,
each column with its own step sizes, sharing every product with the matrix.

:func:`block_cg_solve` is the entry point (warm start, per-column stopping targets in a chosen
column norm); :func:`block_jacobi_cg` is its iteration."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

#: Column norms a solve can stop in: ``"max"`` (entrywise, for callers whose residuals are
#: entrywise) and ``"2"`` (Euclidean).
COLUMN_NORMS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "max": lambda A: np.abs(A).max(axis=0),
    "2": lambda A: np.linalg.norm(A, axis=0),
}


def block_cg_solve(matvec: Callable[[np.ndarray], np.ndarray], B: np.ndarray,
                   inv_diag: np.ndarray,
                   target: Callable[[np.ndarray, np.ndarray], np.ndarray], *,
                   X0: np.ndarray | None = None, norm: str = "max",
                   max_iter: int) -> tuple[np.ndarray, int]:
    """Solve ``MX = B`` (``matvec(P) = MP``, M SPD, ``inv_diag = 1/diag(M)``) by
    Jacobi-preconditioned block CG from ``X0`` (zero when None).

    Column j is done once ``‖b_j − Mx_j‖ ≤ t_j``, ``t = target(‖B‖, ‖R₀‖)`` computed from the
    column norms of B and of the start's residual ``R₀ = B − MX₀``, all in the column norm
    ``norm`` (:data:`COLUMN_NORMS`). Returns X and the number of iterations (0 when the start
    already meets every target)."""
    column_norm = COLUMN_NORMS[norm]
    X = np.zeros_like(B) if X0 is None else X0.copy()
    R = B - matvec(X)
    r0 = column_norm(R)
    goal = target(column_norm(B), r0)
    if np.all(r0 <= goal):
        return X, 0
    iterations = block_jacobi_cg(matvec, X, R, inv_diag,
                                 lambda res: bool(np.all(column_norm(res) <= goal)), max_iter)
    return X, iterations


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
