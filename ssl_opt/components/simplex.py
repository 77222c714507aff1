"""Euclidean projection of each row of a matrix onto the probability simplex.

``Π(v) = argmin_{z ≥ 0, 1ᵀz = 1} ‖z − v‖`` is ``max(v − τ, 0)`` with the threshold
``τ = (Σ_{k≤ρ} u_k − 1)/ρ``, ``u`` the entries sorted in decreasing order and ``ρ`` the largest
``k`` with ``u_k > (Σ_{j≤k} u_j − 1)/k`` (Duchi et al., ICML 2008; the sort-based algorithm,
exact in a finite number of steps). Vectorized over rows: O(M·K log K).
"""

from __future__ import annotations

import numpy as np


def project_rows_to_simplex(V: np.ndarray) -> np.ndarray:
    """Rows of ``V`` (M×K) projected onto ``{z ≥ 0, Σz = 1}``."""
    V = np.atleast_2d(np.asarray(V, dtype=np.float64))
    # Π(v + c1) = Π(v) for any c: shifting each row to max 0 keeps the threshold exact.
    V = V - V.max(axis=1, keepdims=True)
    K = V.shape[1]
    U = -np.sort(-V, axis=1)
    css = np.cumsum(U, axis=1) - 1.0
    ks = np.arange(1, K + 1)
    rho = np.count_nonzero(U * ks > css, axis=1)  # the condition holds for a prefix of k
    tau = css[np.arange(V.shape[0]), rho - 1] / rho
    return np.maximum(V - tau[:, None], 0.0)
