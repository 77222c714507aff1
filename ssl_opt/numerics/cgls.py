"""CGLS for weighted regularized least squares [001 §2.1].

Solves ``min_β λ‖β‖² + Σ_r C_r (x̃_rᵀβ − b_r)²``, i.e. the normal equations

    (λI + X̃ᵀ C X̃) β = X̃ᵀ C b                                              [001 eq. 4]

by conjugate gradients written on the residuals ``z = C(b − X̃β)`` and ``r = X̃ᵀz − λβ``, so
each iteration costs one product with ``X̃`` and one with ``X̃ᵀ`` — O(nnz) — and never forms
``X̃ᵀCX̃``. Seeded from any ``β`` (SVMlin's "seeding"); stops when
``‖r‖ ≤ max(min(tol·‖X̃ᵀCb‖, atol), η‖r₀‖)`` with ``η = min(forcing, √(‖r₀‖/‖X̃ᵀCb‖))``
(``forcing > 0`` gives an inexact Newton step; ``atol``, default ∞, an absolute bound), or
after ``max_iter`` iterations; ``converged`` means the ``tol``/``atol`` test was met.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ssl_opt.numerics.design import LinearDesign


@dataclass
class CGLSResult:
    beta: np.ndarray
    iterations: int
    converged: bool
    residual: float  # ‖X̃ᵀCb − (λI + X̃ᵀCX̃)β‖ / ‖X̃ᵀCb‖


def stopping_targets(omega: float, rhs_norm: float, tol: float,
                     forcing: float, atol: float = np.inf) -> tuple[float, float]:
    """``(tight, target)`` on ``ω = ‖r‖²`` from the start residual: ``tight =
    min(tol·‖X̃ᵀCb‖, atol)²`` is convergence; ``target = max(tight, η²ω₀)`` with the
    Eisenstat–Walker-style forcing ``η = min(forcing, √(‖r₀‖/‖X̃ᵀCb‖))`` (loose while far)
    ends an inexact step."""
    tight = min(tol * rhs_norm, atol) ** 2
    eta = min(forcing, np.sqrt(np.sqrt(omega) / rhs_norm))
    return tight, max(tight, eta**2 * omega)


@dataclass
class CGLSStart:
    """The start of a CGLS solve from ``X̃ᵀ[C(b − X̃β₀), Cb]``: the residual ``r₀``, ``ω₀ =
    ‖r₀‖²``, ``‖X̃ᵀCb‖``, the :func:`stopping_targets`, and ``result`` when β₀ already meets
    them (or ``X̃ᵀCb = 0``: β = 0) — shared by the in-memory and the distributed CGLS."""

    r: np.ndarray
    omega: float
    rhs_norm: float
    tight: float
    target: float
    result: CGLSResult | None


def cgls_start(beta: np.ndarray, both: np.ndarray, lam: float, tol: float,
               forcing: float, atol: float = np.inf) -> CGLSStart:
    """:class:`CGLSStart` from ``both = X̃ᵀ[C(b − X̃β), Cb]`` (dim × 2)."""
    r = both[:, 0] - lam * beta
    rhs_norm = float(np.linalg.norm(both[:, 1]))
    if rhs_norm == 0.0:
        return CGLSStart(r, 0.0, 0.0, 0.0, 0.0, CGLSResult(np.zeros_like(beta), 0, True, 0.0))
    omega = float(r @ r)
    tight, target = stopping_targets(omega, rhs_norm, tol, forcing, atol)
    done = (CGLSResult(beta, 0, omega <= tight, np.sqrt(omega) / rhs_norm)
            if omega <= target else None)
    return CGLSStart(r, omega, rhs_norm, tight, target, done)


def iteration_cap(dim: int, max_iter: int | None) -> int:
    """``max_iter``, or ``10·dim + 1000`` when None."""
    return 10 * dim + 1000 if max_iter is None else int(max_iter)


def cgls(design: LinearDesign, C: np.ndarray, b: np.ndarray, lam: float, beta0: np.ndarray,
         outputs0: np.ndarray | None = None, tol: float = 1e-6,
         max_iter: int | None = None, forcing: float = 0.0,
         atol: float = np.inf) -> CGLSResult:
    """CGLS from ``beta0`` (``outputs0 = X̃ beta0`` if already known). A design that offers
    its own ``design.cgls`` (a distributed one, fusing each iteration's products into one
    synchronization) runs this iteration with these stopping rules there."""
    fused = getattr(design, "cgls", None)
    if fused is not None:
        return fused(C, b, lam, beta0, outputs0, tol, max_iter, forcing, atol)
    beta = beta0.copy()
    o = design.matvec(beta) if outputs0 is None else outputs0
    z = C * (b - o)
    both = design.rmatvec(np.column_stack([z, C * b]))  # residual and right-hand side, one pass
    start = cgls_start(beta, both, lam, tol, forcing, atol)
    if start.result is not None:
        return start.result
    r, omega, rhs_norm, tight, target = (start.r, start.omega, start.rhs_norm, start.tight,
                                         start.target)
    p = r.copy()
    cap = iteration_cap(design.dim, max_iter)
    k = 0
    while k < cap:
        k += 1
        q = design.matvec(p)
        gamma = omega / (lam * float(p @ p) + float(C @ (q * q)))
        beta += gamma * p
        z -= gamma * (C * q)
        r = design.rmatvec(z) - lam * beta
        omega_new = float(r @ r)
        if omega_new <= target:
            return CGLSResult(beta, k, omega_new <= tight, np.sqrt(omega_new) / rhs_norm)
        p *= omega_new / omega
        p += r
        omega = omega_new
    return CGLSResult(beta, k, False, np.sqrt(omega) / rhs_norm)
