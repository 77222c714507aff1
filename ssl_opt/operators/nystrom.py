r"""Low-rank kernels: the Nyström approximation ``K ≈ K̃ = C W⁺ Cᵀ = Φ Φᵀ``.

With landmarks ``z_1, …, z_m`` (sampled rows of X, chosen rows, or any points, e.g. k-means
centres), ``C = k(X, Z)`` (n×m) and ``W = k(Z, Z)`` (m×m), Williams & Seeger's approximation
is ``K̃ = C W⁺ Cᵀ``. With ``W = U Λ Uᵀ`` and the eigenvalues below ``rcond·λ_max`` dropped,
``Φ = C U_r Λ_r^{-1/2}`` (n×r, r ≤ m) is an explicit feature map: ``K̃ = ΦΦᵀ`` and a new
point's features are ``φ(x) = k(x, Z) U_r Λ_r^{-1/2}``.

:class:`NystromOperator` is K̃ as a ``scipy.sparse.linalg.LinearOperator``: a product is
``Φ(ΦᵀV)``, ``4nr`` flops per column, and memory is the ``n·r`` entries of Φ (1.6 GB at
n = 10⁶, r = 200). PCG runs on it unchanged; ``lowrank-newton`` (plugins/manifold) solves the
manifold problems in the r-dimensional feature space instead.

The approximation is reported, not hidden (:meth:`NystromOperator.approximation`):

* the relative trace error ``(tr K − tr K̃)/tr K`` — exact, in O(n), and equal to the nuclear
  norm ``‖K − K̃‖_*/tr K`` because ``K − K̃`` is PSD (the Schur complement of W);
* on a random sample S of rows, the exact block ``K_SS`` against ``Φ_S Φ_Sᵀ`` (spectral and
  Frobenius norms, relative) — the spectral error of a principal block is a lower bound for
  the whole matrix's.

The solution of a problem on K̃ is the solution of a different problem: its effect on the
objective and the predictions is measured against the exact kernel where both run
(``benchmarks/bench_scaling.py --parts d``, docs/scaling.md).
"""

from __future__ import annotations

import numbers
from functools import cached_property

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from ssl_opt._validation import as_float_matrix, check_int, check_positive
from ssl_opt.builders.kernels import KERNELS, check_kernel_inputs, kernel_diagonal
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.operators.symmetric import SymmetricOperator, check_kernel_arguments

#: Eigenvalues of W below this fraction of the largest are dropped (W⁺ is a pseudo-inverse).
DEFAULT_RCOND = 1e-10
#: Rows of X per block when Φ is built or new points are mapped (bounds the n×m temporaries).
BLOCK_BYTES = 64 * 2**20
#: Seconds per multiply-add of a product ``Φ(Φᵀv)`` on this 2-core machine (memory bound:
#: Φ is streamed twice), measured at n = 10⁵-10⁶, r = 100-500.
MADD_SECONDS = 4e-10


class NystromOperator(SymmetricOperator):
    """The Nyström approximation ``K̃ = ΦΦᵀ`` of the kernel matrix of the rows of ``X``.

    Parameters
    ----------
    X : (n, d) array or sparse matrix.
    kind : "rbf", "polynomial" or "linear" (as :func:`ssl_opt.builders.kernel_matrix`).
    landmarks : int m (m rows of X sampled uniformly without replacement, seeded by ``seed``),
        a 1-D integer array (those rows of X), or an (m, d) array of points.
    seed : seed of the landmark sample.
    rcond : eigenvalues of W below ``rcond·λ_max(W)`` are dropped (the rank r ≤ m).
    dtype : np.float64 (default) or np.float32, the precision Φ is stored in (half the memory;
        products accumulate in float64).
    **params : the kernel's parameters (``sigma``; ``degree``, ``coef0``, ``scale``).
    """

    dense_hint = "solver='lowrank-newton' or 'pcg'"

    def __init__(self, X, kind: str = "rbf", landmarks=100, seed: int | None = 0,
                 rcond: float = DEFAULT_RCOND, dtype=np.float64, **params):
        dtype = check_kernel_arguments(kind, params, dtype)
        self.rcond = check_positive(rcond, "rcond")
        Xm, _, _ = check_kernel_inputs(X, None)
        self.kind, self.params = kind, dict(params)
        self._kernel = KERNELS[kind]
        self.X = Xm
        n = Xm.shape[0]
        self.landmark_indices, Z = _landmarks(Xm, landmarks, seed)
        self.Z = Z
        W = self._kernel(Z, **self.params)
        lam, U = sla.eigh(W, check_finite=False)
        if not np.isfinite(lam).all() or lam[-1] <= 0:
            raise InvalidInputError(
                "the landmarks' kernel matrix W has no positive eigenvalue; choose other "
                "landmarks (distinct points) or kernel parameters.")
        keep = lam > self.rcond * lam[-1]
        #: ``U_r Λ_r^{-1/2}``: maps kernel values to the landmarks into features.
        self.map = U[:, keep] / np.sqrt(lam[keep])
        self.rank = int(keep.sum())
        self.block_dtype = dtype
        self.factor = self._features(Xm).astype(dtype, copy=False)
        self.products = 0  # columns multiplied so far (instrumentation)
        super().__init__(dtype=np.float64, shape=(n, n))

    # ------------------------------------------------------------------ features
    def features(self, X_new) -> np.ndarray:
        """``φ(x) = k(x, Z) U_r Λ_r^{-1/2}`` for the rows of ``X_new`` (float64, k × r), so
        that a decision function ``K̃α + b`` extends to new points as ``φ(x)ᵀ(Φᵀα) + b``."""
        Xn = as_float_matrix(X_new, "X_new")
        if Xn.shape[1] != self.Z.shape[1]:
            raise InvalidInputError(
                f"X_new must have {self.Z.shape[1]} columns like the training X, got "
                f"{Xn.shape[1]}.")
        return self._features(Xn)

    def _features(self, Xn) -> np.ndarray:
        """``k(Xn, Z) U_r Λ_r^{-1/2}`` for validated rows, in blocks of ``BLOCK_BYTES``."""
        rows = max(1, BLOCK_BYTES // (8 * max(1, self.Z.shape[0])))
        out = np.empty((Xn.shape[0], self.rank))
        for start in range(0, Xn.shape[0], rows):
            block = slice(start, min(start + rows, Xn.shape[0]))
            out[block] = self._kernel(Xn[block], self.Z, **self.params) @ self.map
        return out

    # ------------------------------------------------------------------ products
    def _matmat(self, V: np.ndarray) -> np.ndarray:
        V = np.asarray(V, dtype=np.float64)
        Phi = self.factor
        inner = Phi.T @ V.astype(Phi.dtype, copy=False)
        self.products += V.shape[1]
        return np.asarray(Phi @ inner, dtype=np.float64)

    # ------------------------------------------------------------------ what solvers ask for
    def diagonal(self) -> np.ndarray:
        """``diag(K̃) = ‖φ_i‖²`` (≤ ``diag K``)."""
        Phi = self.factor
        return np.einsum("ij,ij->i", Phi, Phi, dtype=np.float64)

    def columns(self, idx) -> np.ndarray:
        """``K̃[:, idx]`` (n × len(idx), float64)."""
        idx = np.atleast_1d(np.asarray(idx, dtype=np.int64))
        Phi = self.factor
        return np.asarray(Phi @ Phi[idx].T, dtype=np.float64)

    def product_seconds(self, columns: int = 1, measure: bool = False) -> float:
        """Predicted seconds of ``K̃ @ V``: ``2nr`` multiply-adds per column, memory bound
        (``measure`` is accepted for the operators' common signature; a GEMM is predictable)."""
        return 2.0 * self.shape[0] * self.rank * max(1, columns) * MADD_SECONDS

    def dense_seconds(self) -> float:
        """Predicted seconds to form K̃ densely: an n×n×r GEMM (~20 GFlop/s here)."""
        return 2.0 * self.shape[0] ** 2 * self.rank / 2e10

    @property
    def bytes_in_flight(self) -> int:
        """Memory of one product beyond its result: the r×k inner product (Φ is stored)."""
        return int(8 * self.rank)

    @property
    def nbytes(self) -> int:
        """Memory held by the factor Φ."""
        return int(self.factor.nbytes)

    # ------------------------------------------------------------------ the approximation
    def approximation(self, sample: int = 1000, seed: int | None = 0) -> dict[str, float]:
        """How far K̃ is from the exact K, without forming K.

        Returns ``rank``, ``landmarks``, ``trace_error`` (``(tr K − tr K̃)/tr K``: exact, the
        relative nuclear-norm error), and on ``sample`` random rows S (all rows when n is
        smaller) ``sample_spectral_error`` ``‖K_SS − K̃_SS‖₂/‖K_SS‖₂`` (a lower bound for the
        whole matrix's relative spectral error up to the ratio of norms) and
        ``sample_frobenius_error``."""
        n = self.shape[0]
        s = check_int(sample, "sample", 1)
        # A stream of its own: the same seed as the landmark sample must not draw the
        # landmarks again (K̃ is exact on their block).
        rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(2)[1])
        S = np.arange(n) if s >= n else np.sort(rng.choice(n, size=s, replace=False))
        K_SS = self._kernel(self.X[S], **self.params)
        Phi_S = np.asarray(self.factor[S], dtype=np.float64)
        E = K_SS - Phi_S @ Phi_S.T  # the s×s block only (K̃[:, S] would be n×s)
        norm = float(np.linalg.norm(K_SS, 2))
        return {
            "rank": self.rank,
            "landmarks": int(self.Z.shape[0]),
            "trace_error": self.trace_error,
            "sample_rows": int(S.size),
            "sample_spectral_error": float(np.linalg.norm(E, 2)) / max(norm, 1e-300),
            "sample_frobenius_error": float(np.linalg.norm(E)) / max(
                float(np.linalg.norm(K_SS)), 1e-300),
        }

    @cached_property
    def trace_error(self) -> float:
        """``(tr K − tr K̃)/tr K`` (exact, O(n·(d + r))): the relative nuclear-norm error."""
        trace = float(kernel_diagonal(self.kind, self.params, self.X).sum())
        return max(0.0, trace - float(self.diagonal().sum())) / max(trace, 1e-300)

    def approximation_note(self) -> str:
        """One line for solutions and certificates: what K̃ is and its trace error."""
        return (f"K is a rank-{self.rank} Nyström approximation ({self.Z.shape[0]} landmarks, "
                f"relative trace error {self.trace_error:.2e}): results are for K̃, not the "
                "exact kernel")

    def __repr__(self) -> str:
        extra = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return (f"<NystromOperator {self.kind}({extra}) n={self.shape[0]}, rank {self.rank} of "
                f"{self.Z.shape[0]} landmarks, {self.block_dtype.name}>")


def _landmarks(X, landmarks, seed) -> tuple[np.ndarray | None, np.ndarray]:
    """``(row indices or None, landmark points)`` from a count, indices or points."""
    n, d = X.shape
    if isinstance(landmarks, numbers.Integral) and not isinstance(landmarks, bool):
        m = check_int(landmarks, "landmarks", 1)
        if m > n:
            raise InvalidInputError(
                f"landmarks = {m} exceeds the {n} rows of X; pass at most n landmarks.")
        idx = np.sort(np.random.default_rng(seed).choice(n, size=m, replace=False))
        return idx, _rows(X, idx)
    arr = landmarks.toarray() if sp.issparse(landmarks) else np.asarray(landmarks)
    if arr.ndim == 1 and arr.size and np.issubdtype(arr.dtype, np.integer):
        if arr.min() < 0 or arr.max() >= n:
            raise InvalidInputError(
                f"landmarks indices must lie in [0, {n}); got the range "
                f"[{arr.min()}, {arr.max()}].")
        if np.unique(arr).size != arr.size:
            raise InvalidInputError("landmarks indices must be distinct rows of X.")
        return arr.astype(np.intp), _rows(X, arr)
    if arr.ndim == 2 and arr.shape[1] == d and arr.shape[0] >= 1:
        Z, _, _ = check_kernel_inputs(arr, None)
        return None, Z
    raise InvalidInputError(
        "landmarks must be a count m >= 1, a 1-D array of distinct row indices of X, or an "
        f"(m, {d}) array of points; got {type(landmarks).__name__} of shape "
        f"{getattr(arr, 'shape', None)}.")


def _rows(X, idx):
    Z = X[idx]
    return Z.toarray() if sp.issparse(Z) else np.array(Z, dtype=np.float64)
