r"""The boundary-kernel reduction of NPKL [003 Prop. 1], docs/design.md §4.4.

With L the constrained points (in at least one pair) and U the others, the optimum of NPKL is
``Z = Q Z_BD Qᵀ`` where ``Z_BD`` (l×l) solves the same problem with ``Δ`` replaced by the Schur
complement and the pairs re-indexed into L::

    Δ̃ = Δ_LL − Δ_LU Δ_UU⁻¹ Δ_UL,        Q = [I_L; −Δ_UU⁻¹ Δ_UL]   (rows in the order L, U).

``Δ_UU`` is factored once (sparse when S is a kNN graph) and never inverted. ``λ_min(Δ̃) ≥
λ_min(Δ)`` (``Δ̃⁻¹ = (Δ⁻¹)_LL``), so the reduced problem inherits the parent's eigenvalue bound.
A factor of the boundary kernel lifts to a factor of the full one: ``Z_BD = FFᵀ`` gives
``Z = ΦΦᵀ`` with ``Φ = QF`` (n×r), which is how BCD's kernels are built without n×n products.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ssl_opt.numerics.factor import SPDFactor

#: Right-hand sides solved at once when forming Δ̃ (bounds the u×block work array).
SCHUR_BLOCK_ENTRIES = 20_000_000


class BoundaryReduction:
    """The reduced problem on the constrained points and the maps between the two problems.

    Attributes: ``parent`` (the NPKL), ``constrained`` (L, sorted), ``unconstrained`` (U),
    ``reduced`` (an :class:`~ssl_opt.problems.NPKL` over L with the dense regularizer Δ̃).
    """

    def __init__(self, problem):
        self.parent = problem
        n = problem.n
        L = problem.constrained_points
        U = np.setdiff1d(np.arange(n), L)
        self.constrained, self.unconstrained = L, U
        Delta = problem.Delta
        sparse = sp.issparse(Delta)
        D = sp.csr_matrix(Delta) if sparse else np.asarray(Delta)
        D_LL = D[L][:, L]
        self._D_LL = D_LL if sparse else None  # for schur_times
        D_LL = D_LL.toarray() if sparse else D_LL
        if U.size:
            self._D_UL = D[U][:, L]
            self._factor = SPDFactor(D[U][:, U])
            self.schur = D_LL - self._schur_correction()
        else:
            self._D_UL, self._factor = None, None
            self.schur = np.array(D_LL, dtype=np.float64)
        self.schur = 0.5 * (self.schur + self.schur.T)
        position = np.full(n, -1, dtype=np.int64)
        position[L] = np.arange(L.size)
        self.reduced = type(problem).from_regularizer(
            self.schur, position[problem.pairs], problem.labels, problem.C, problem.loss,
            lambda_min_bound=problem.lambda_min_bound)
        if self.factored_schur:  # the reduced certificate's Lanczos products: Δ̃x factored
            object.__setattr__(self.reduced, "_delta_times", self.schur_times)

    def _schur_correction(self) -> np.ndarray:
        """``Δ_LU Δ_UU⁻¹ Δ_UL``, solving for blocks of columns of ``Δ_UL``."""
        D_UL = self._D_UL
        u, l = D_UL.shape
        block = max(1, SCHUR_BLOCK_ENTRIES // max(u, 1))
        out = np.empty((l, l))
        D_LU = D_UL.T.tocsr() if sp.issparse(D_UL) else D_UL.T
        for start in range(0, l, block):
            cols = slice(start, min(l, start + block))
            rhs = D_UL[:, cols]
            rhs = rhs.toarray() if sp.issparse(rhs) else rhs
            out[:, cols] = D_LU @ self._factor.solve(rhs)
        return out

    @property
    def factored_schur(self) -> bool:
        """Whether :meth:`schur_times` is cheaper than a product with the dense ``Δ̃``: Δ is
        sparse and ``Δ_UU`` has a sparse factor."""
        return (self._D_LL is not None and self._factor is not None
                and self._factor.kind == "sparse")

    def schur_times(self, X: np.ndarray) -> np.ndarray:
        """``Δ̃X = Δ_LL X − Δ_LU (Δ_UU⁻¹ (Δ_UL X))`` for X (l,) or (l, k), from the sparse
        blocks and the factor of ``Δ_UU`` (without the dense ``Δ̃``); ``Δ̃X`` with the dense
        ``Δ̃`` when Δ is dense."""
        if self._D_LL is None:
            return self.schur @ X
        out = np.asarray(self._D_LL @ X)
        if self._factor is None:
            return out
        return out - np.asarray(self._D_UL.T @ self._factor.solve(np.asarray(self._D_UL @ X)))

    @property
    def n(self) -> int:
        return self.parent.n

    def lift_factor(self, F: np.ndarray) -> np.ndarray:
        """``Φ = QF`` (n×r) for a factor ``F`` (l×r) of the boundary kernel ``Z_BD = FFᵀ``."""
        F = np.asarray(F, dtype=np.float64)
        Phi = np.zeros((self.n, F.shape[1]))
        Phi[self.constrained] = F
        if self.unconstrained.size:
            Phi[self.unconstrained] = -self._factor.solve(np.asarray(self._D_UL @ F))
        return Phi

    def lift(self, Z_BD: np.ndarray) -> np.ndarray:
        """``Z = Q Z_BD Qᵀ`` (n×n) for any boundary kernel (two multi-column solves)."""
        Z_BD = np.asarray(Z_BD, dtype=np.float64)
        L, U = self.constrained, self.unconstrained
        Z = np.zeros((self.n, self.n))
        Z[np.ix_(L, L)] = Z_BD
        if U.size:
            Z_UL = -self._factor.solve(np.asarray(self._D_UL @ Z_BD))  # −Δ_UU⁻¹Δ_UL Z_BD
            Z[np.ix_(U, L)] = Z_UL
            Z[np.ix_(L, U)] = Z_UL.T
            Z_UU = -self._factor.solve(np.asarray(self._D_UL @ Z_UL.T))
            Z[np.ix_(U, U)] = 0.5 * (Z_UU + Z_UU.T)
        return Z

    def restrict(self, Z: np.ndarray) -> np.ndarray:
        """``Z_LL``: the boundary kernel of a full kernel."""
        return np.asarray(Z)[np.ix_(self.constrained, self.constrained)]
