"""Anderson acceleration of fixed-point iterations, shared by ADMM and BCD."""

from __future__ import annotations

import numpy as np


class AndersonMemory:
    """Type-II Anderson acceleration (Walker & Ni 2011) with ring buffers of the last ``m``
    differences of residuals ``ΔF`` and of images ``ΔG`` (stored as rows); the Gram matrix
    ``ΔFΔFᵀ`` is updated one row at a time, so a step costs O(m·NK)."""

    def __init__(self, dim: int, m: int):
        self.dF = np.zeros((m, dim))
        self.dG = np.zeros((m, dim))
        self.gram = np.zeros((m, m))
        self.m, self.size, self.head = m, 0, 0

    def clear(self) -> None:
        self.size = self.head = 0

    def push(self, df: np.ndarray, dg: np.ndarray) -> None:
        j = self.head
        self.dF[j] = df.ravel()
        self.dG[j] = dg.ravel()
        self.size = min(self.size + 1, self.m)
        row = self.dF[: self.size] @ self.dF[j]
        self.gram[j, : self.size] = row
        self.gram[: self.size, j] = row
        self.head = (j + 1) % self.m

    def extrapolate(self, g: np.ndarray, f: np.ndarray) -> np.ndarray:
        k = self.size
        gram = self.gram[:k, :k].copy()
        gram[np.diag_indices(k)] += 1e-10 * max(float(np.trace(gram)), 1e-300)
        gamma = np.linalg.solve(gram, self.dF[:k] @ f.ravel())
        return g - (gamma @ self.dG[:k]).reshape(g.shape)
