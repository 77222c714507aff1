"""Extreme eigenvalues of symmetric matrices and operators: LAPACK on small dense matrices,
Lanczos (ARPACK) above, with the shift that makes the smallest eigenvalue of a PSD kernel
cheap (used by NPKL's certificate and the :class:`~ssl_opt.modeling.terms.PSD` constraint),
and Lanczos in a metric ``⟨u, v⟩_M`` for the spectrum of a preconditioned operator (selection's
conditioning probes)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.linalg import eigvalsh_tridiagonal
from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, aslinearoperator, eigsh

#: Up to this size eigenvalues come from a dense decomposition, above it from Lanczos.
DENSE_EIG_MAX = 1500
#: ARPACK tolerance for λ_min(Z) on Z − λ_max I (relative to λ_max: the PSD residual's scale).
PSD_LANCZOS_TOL = 1e-12


def lanczos(A, which: str, tol: float = 1e-10) -> float:
    """One extreme eigenvalue (``"SA"``/``"LA"``) by Lanczos (ARPACK), its best Ritz value if
    it does not converge. The start vector is seeded: without one ARPACK starts from an
    unseeded random vector (SciPy ≥ 1.15), and a solver that stops on this value would end
    differently from run to run."""
    n = A.shape[0]
    v0 = np.random.default_rng(0).uniform(-1.0, 1.0, n)
    try:
        w = eigsh(A, k=1, which=which, tol=tol, v0=v0, maxiter=20 * n,
                  return_eigenvectors=False)
    except ArpackNoConvergence as exc:
        w = exc.eigenvalues
    return float(w[0]) if len(w) else float("nan")


def psd_extremes(Z) -> tuple[float, float]:
    """``(λ_min, λ_max)`` of a symmetric ``Z`` expected to be PSD (a kernel), by Lanczos:
    ``λ_max`` first, then ``λ_min`` as ``λ_max + λ_min(Z − λ_max I)``. ARPACK's stopping test
    is relative to the Ritz value, so on ``Z`` itself the smallest eigenvalue (0 up to
    round-off, with multiplicity n − rank) is chased to ~1e-10 of itself, for hundreds of
    products; on the shifted operator the test is relative to ``λ_max``, the scale of a PSD
    residual ``max(0, −λ_min) / max(1, λ_max)``, and a few dozen suffice."""
    n = Z.shape[0]
    hi = lanczos(aslinearoperator(Z), "LA")
    shift = max(hi, 0.0)
    shifted = LinearOperator((n, n), dtype=np.float64, matvec=lambda v: Z @ v.ravel()
                             - shift * v.ravel())
    return lanczos(shifted, "SA", tol=PSD_LANCZOS_TOL) + shift, hi


def extreme_eigenvalues(A, dense_max: int = DENSE_EIG_MAX) -> tuple[float, float]:
    """``(λ_min, λ_max)`` of a symmetric matrix: LAPACK up to ``dense_max``, Lanczos (ARPACK)
    above, falling back to its best Ritz values if it does not converge."""
    n = A.shape[0]
    if n == 0:
        return 0.0, 0.0
    if n <= dense_max:
        dense = A.toarray() if sp.issparse(A) else np.asarray(A)
        w = np.linalg.eigvalsh(0.5 * (dense + dense.T))
        return float(w[0]), float(w[-1])
    return lanczos(A, "SA"), lanczos(A, "LA")


@dataclass(frozen=True)
class RitzTrace:
    """What ``steps`` Lanczos steps saw: the largest and smallest Ritz values, and the wall
    seconds of one step (one ``operator`` call and one ``metric`` product; the median step, as
    the first ones pay for warming caches and thread pools)."""

    steps: int
    largest: float
    smallest: float
    seconds_per_step: float


def metric_lanczos(operator: Callable[[np.ndarray, np.ndarray], np.ndarray],
                   metric: Callable[[np.ndarray], np.ndarray], start: np.ndarray,
                   steps: int) -> RitzTrace:
    """Lanczos for an ``A`` self-adjoint in the inner product ``⟨u, v⟩_M = uᵀMv`` (M PSD).

    ``operator(q, Mq)`` returns ``A q`` given ``M q``, so A's own use of M (e.g.
    ``A = (D + γ_I L)K + γ_A I`` in ``M = K``) and the inner product share one product:
    a step costs one ``operator`` call and one ``metric`` product (the new vector's ``M r``
    becomes the next ``M q``). Without reorthogonalization: the extreme Ritz values, which
    converge first, are what is read. Stops early at an invariant subspace (``⟨r, r⟩_M`` at
    round-off)."""
    q = np.asarray(start, dtype=np.float64).copy()
    Mq = metric(q)
    norm = math.sqrt(max(float(q @ Mq), 0.0))
    if not norm > 0:
        return RitzTrace(0, math.nan, math.nan, math.nan)
    q, Mq = q / norm, Mq / norm
    previous, beta = np.zeros_like(q), 0.0
    alphas: list[float] = []
    betas: list[float] = []
    seconds = []
    for _ in range(steps):
        began = time.perf_counter()
        Aq = operator(q, Mq)
        alpha = float(Aq @ Mq)
        alphas.append(alpha)
        r = Aq - alpha * q - beta * previous
        Mr = metric(r)
        seconds.append(time.perf_counter() - began)
        squared = float(r @ Mr)
        if not squared > 1e-24 * max(alpha * alpha, 1e-300):
            break
        beta = math.sqrt(squared)
        betas.append(beta)
        previous, q, Mq = q, r / beta, Mr / beta
    ritz = _ritz(alphas, betas)
    return RitzTrace(len(alphas), float(ritz[-1]), float(ritz[0]), float(np.median(seconds)))


def _ritz(alphas: list[float], betas: list[float]) -> np.ndarray:
    """Eigenvalues (ascending) of the Lanczos tridiagonal."""
    m = len(alphas)
    return eigvalsh_tridiagonal(np.asarray(alphas), np.asarray(betas[: m - 1]))
