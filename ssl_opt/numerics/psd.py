r"""A PSD matrix as the certificates see it: given densely, as a factor ``Φ`` (``Z = ΦΦᵀ``), or
both, with the products and extreme eigenvalues they need and nothing formed that a factor
makes unnecessary (NPKL's kernel [003], the core's :class:`~ssl_opt.modeling.terms.PSD`
constraint and conic certificate, :mod:`ssl_opt.modeling.conic`)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ssl_opt.numerics import eigen


def matrix_inner(C, Z: np.ndarray) -> float:
    """``⟨C, Z⟩ = Σ_ij C_ij Z_ij``, over the stored entries of ``C`` when it is sparse (no dense
    copy of C)."""
    if sp.issparse(C):
        C = sp.csr_matrix(C)
        rows = np.repeat(np.arange(C.shape[0]), np.diff(C.indptr))
        return float(np.dot(C.data, np.asarray(Z)[rows, C.indices]))
    return float(np.sum(C * Z))


#: Above ``eigen.DENSE_EIG_MAX``, a factor Φ carried with Z gives Z's eigenvalues (from the
#: r×r ΦᵀΦ) when ‖Z − ΦΦᵀ‖_F is at most this times max(1, λ_max(ΦΦᵀ)).
FACTOR_MATCH_TOL = 1e-10


class PSDPoint:
    r"""A square matrix ``Z`` (n×n) given densely, as a factor ``Φ`` (n×r, ``Z = ΦΦᵀ``), or
    both; the products a conic certificate needs without forming what is absent.

    Eigenvalues: with ``Φ``, ``λ(ΦΦᵀ) = λ(ΦᵀΦ) ∪ {0}^{n−r}`` (an r×r problem). With both ``Z``
    and ``Φ`` (above ``eigen.DENSE_EIG_MAX``), ``e = ‖Z − ΦΦᵀ‖_F ≥ ‖Z − ΦΦᵀ‖₂`` is computed by
    blocks of rows and, when ``e ≤ FACTOR_MATCH_TOL · max(1, λ_max(ΦΦᵀ))``, Weyl's inequality
    gives ``λ_min(Z) ≥ λ_min(ΦΦᵀ) − e`` and ``λ_max(Z) ≤ λ_max(ΦΦᵀ) + e``: those bounds are
    returned (rigorous, within e of the eigenvalues). Otherwise the dense ``Z``: LAPACK up to
    ``eigen.DENSE_EIG_MAX``, shifted Lanczos above (:func:`~ssl_opt.numerics.eigen.psd_extremes`).
    """

    def __init__(self, n: int, Z: np.ndarray | None = None, Phi: np.ndarray | None = None):
        self.n, self.Z, self.Phi = n, Z, Phi

    def finite(self) -> bool:
        if self.Z is None:
            return bool(np.all(np.isfinite(self.Phi)))
        # max and min propagate NaN and reach ±inf: no n×n boolean temporary
        return self.Z.size == 0 or bool(np.isfinite(self.Z.max()) and np.isfinite(self.Z.min()))

    def abs_max(self) -> float:
        """``max|Z_ij|`` (``max_i ‖Φ_i‖²`` for a factor, by Cauchy–Schwarz)."""
        if self.Z is None:
            return float(np.einsum("ij,ij->i", self.Phi, self.Phi).max(initial=0.0))
        return max(float(self.Z.max()), -float(self.Z.min())) if self.Z.size else 0.0

    def symmetric_part(self) -> tuple[PSDPoint, float]:
        """``((Z + Zᵀ)/2, symmetry)``: the point itself when ``Z = Zᵀ``, and the ``symmetry``
        residual of the module docstring."""
        asymmetry = 0.0 if self.Z is None else _max_asymmetry(self.Z)
        symmetry = asymmetry / max(1.0, self.abs_max())
        if asymmetry == 0.0:
            return self, symmetry
        return PSDPoint(self.n, Z=0.5 * (self.Z + self.Z.T), Phi=self.Phi), symmetry

    def entries(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """``Z_ij`` for index arrays (``Φ_i · Φ_j`` for a factor, by chunks)."""
        if self.Z is not None:
            return self.Z[i, j]
        out = np.empty(len(i))
        step = max(1, 4_000_000 // max(1, self.Phi.shape[1]))
        for s in range(0, len(i), step):
            out[s:s + step] = np.einsum("ij,ij->i", self.Phi[i[s:s + step]],
                                        self.Phi[j[s:s + step]])
        return out

    def rows(self, idx: np.ndarray) -> np.ndarray:
        """``Z[idx]`` (``Φ[idx] Φᵀ``)."""
        return self.Z[idx] if self.Z is not None else self.Phi[idx] @ self.Phi.T

    def left_product(self, A) -> np.ndarray:
        """``AZ`` for a (sparse) k×n ``A`` (``(AΦ)Φᵀ``)."""
        if self.Z is not None:
            return np.asarray(A @ self.Z)
        return np.asarray(A @ self.Phi) @ self.Phi.T

    def inner(self, G) -> float:
        """``⟨G, Z⟩`` over the nonzeros of a sparse ``G``; ``⟨GΦ, Φ⟩`` for a dense one."""
        if self.Z is not None:
            return matrix_inner(G, self.Z)
        if sp.issparse(G):
            G = sp.csr_matrix(G)
            rows = np.repeat(np.arange(G.shape[0]), np.diff(G.indptr))
            return float(np.dot(G.data, self.entries(rows, G.indices)))
        return float(np.sum((np.asarray(G) @ self.Phi) * self.Phi))

    def extremes(self) -> tuple[float, float]:
        """``(λ_min(Z), λ_max(Z))`` (see the class docstring)."""
        if self.Phi is not None and (self.Z is None or self.n > eigen.DENSE_EIG_MAX):
            lo, hi = _factor_extremes(self.Phi)
            if self.Z is None:
                return lo, hi
            e = _factor_mismatch(self.Z, self.Phi)
            if e <= FACTOR_MATCH_TOL * max(1.0, hi):
                return lo - e, hi + e
        if self.n <= eigen.DENSE_EIG_MAX:
            return eigen.extreme_eigenvalues(self.Z, eigen.DENSE_EIG_MAX)
        return eigen.psd_extremes(self.Z)


def _factor_extremes(Phi: np.ndarray) -> tuple[float, float]:
    """``(λ_min, λ_max)`` of ``ΦΦᵀ`` (n×n) from the r×r ``ΦᵀΦ``: its eigenvalues, and 0 when
    r < n."""
    n, r = Phi.shape
    w = np.linalg.eigvalsh(Phi.T @ Phi) if r else np.zeros(0)
    if r < n:
        w = np.append(w, 0.0)
    return (float(w.min()), float(w.max())) if w.size else (0.0, 0.0)


def _factor_mismatch(Z: np.ndarray, Phi: np.ndarray, rows: int = 1024) -> float:
    """``‖Z − ΦΦᵀ‖_F`` by blocks of rows (one GEMM per block, no n×n temporary)."""
    total = 0.0
    for start in range(0, Z.shape[0], rows):
        block = slice(start, start + rows)
        D = Z[block] - Phi[block] @ Phi.T
        total += float(np.einsum("ij,ij->", D, D))
    return float(np.sqrt(total))


def _max_asymmetry(Z: np.ndarray, tile: int = 256) -> float:
    """``max|Z − Zᵀ|`` over the tiles on and above the diagonal (no n×n temporary; square
    tiles read the transposed side with far fewer cache misses than strided columns)."""
    out = 0.0
    n = Z.shape[0]
    for a in range(0, n, tile):
        for b in range(a, n, tile):
            D = Z[a:a + tile, b:b + tile] - Z[b:b + tile, a:a + tile].T
            out = max(out, float(D.max(initial=0.0)), -float(D.min(initial=0.0)))
    return out
