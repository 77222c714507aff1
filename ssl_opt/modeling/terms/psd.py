r"""The positive semidefinite cone on a square matrix argument: NPKL's kernel ``Z ⪰ 0``
[003 eq. 1] as a constraint the core holds (docs/design.md §6).

``C = {Z : Z = Zᵀ, Z ⪰ 0}``, with ``sym(v) = (v + vᵀ)/2`` and ``skew(v) = (v − vᵀ)/2``:

* ``feasibility(z)``: the larger of ``max|z − zᵀ| / max(1, max|z|)`` and
  ``max(0, −λ_min(sym z)) / max(1, λ_max(sym z))`` (LAPACK up to
  :data:`~ssl_opt.numerics.eigen.DENSE_EIG_MAX`, shifted Lanczos above);
* ``prox(v, t)``: the Frobenius-nearest point of C, ``U max(Λ, 0) Uᵀ`` from ``sym(v) = UΛUᵀ``;
* the normal cone at ``Z ∈ C`` is ``{A − W : A skew, W ⪰ 0, WZ = 0}``. With ``U₀`` the
  eigenvectors of ``sym(z)`` whose eigenvalues are at most ``tol`` (the near-null space, the
  kink of this constraint), the projection of ``u`` onto the cone is
  ``skew(u) − U₀ Π₊(−U₀ᵀ sym(u) U₀) U₀ᵀ`` (``Π₊`` the PSD projection; the skew and symmetric
  parts are orthogonal, and ``S ↦ U₀SU₀ᵀ`` is an isometry). One eigendecomposition of ``z``
  serves every projection at the same ``z`` (the certificate's minimization projects many
  times).
"""

from __future__ import annotations

import weakref

import numpy as np

from ssl_opt.exceptions import InvalidInputError
from ssl_opt.modeling.term import Constraint
from ssl_opt.numerics.psd import PSDPoint


def _sym(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    return 0.5 * (v + v.T)


def psd_projection(v: np.ndarray) -> np.ndarray:
    """``Π₊(sym v)``: the nearest symmetric PSD matrix in the Frobenius norm."""
    w, U = np.linalg.eigh(_sym(v))
    keep = w > 0
    Uk = U[:, keep]
    return (Uk * w[keep]) @ Uk.T


#: Seconds per n³ of one symmetric eigendecomposition (LAPACK ``syevd`` on one thread, as the
#: generic solvers run it; measured at n = 300..1200 on 2 cores: 1.6e-10 to 3.4e-10).
EIGH_SECONDS_PER_CUBE = 2.5e-10


class PSD(Constraint):
    """``Z = Zᵀ, Z ⪰ 0`` on a square matrix argument (module docstring)."""

    name = "psd"
    program_class = "SDP"

    def __init__(self, argument):
        super().__init__(argument)
        if len(self.shape) != 2 or self.shape[0] != self.shape[1]:
            raise InvalidInputError(f"the argument of PSD must be a square matrix, got shape "
                                    f"{self.shape}.")
        self._eig: tuple | None = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_eig": None}  # the cached decomposition is not pickled

    def cvxpy(self, z):
        return [z == z.T, 0.5 * (z + z.T) >> 0]

    def feasibility(self, z):
        point = PSDPoint(self.shape[0], Z=np.asarray(z, dtype=np.float64))
        if not point.finite():
            return float("inf")
        point, symmetry = point.symmetric_part()
        lo, hi = point.extremes()
        return max(symmetry, max(0.0, -lo) / max(1.0, hi))

    def prox(self, v, t):
        return psd_projection(v)

    def prox_seconds(self) -> float:
        return 1e-5 + EIGH_SECONDS_PER_CUBE * float(self.shape[0]) ** 3

    def _null_space(self, z: np.ndarray, tol: float) -> np.ndarray | None:
        """The eigenvectors of ``sym(z)`` with eigenvalues ≤ ``tol``, None for a non-finite
        ``z`` (no cone to project onto); one decomposition, and one finiteness check, per
        ``z`` object."""
        if self._eig is None or self._eig[0]() is not z:
            decomposition = np.linalg.eigh(_sym(z)) if np.all(np.isfinite(z)) else (None, None)
            self._eig = (weakref.ref(z), *decomposition)  # z itself is not kept
        _, w, U = self._eig
        return None if w is None else U[:, w <= tol]

    def project_subgradient(self, z, u, tol):
        u = np.asarray(u, dtype=np.float64)
        skew = 0.5 * (u - u.T)
        U0 = self._null_space(np.asarray(z, dtype=np.float64), tol)
        if U0 is None or U0.shape[1] == 0:  # a non-finite z: the residual reports it
            return skew
        inner = psd_projection(-(U0.T @ _sym(u) @ U0))
        return skew - U0 @ inner @ U0.T

    def describe(self) -> str:
        return f"{self.name}({self.shape[0]}×{self.shape[1]})"
