"""The spectrum PCG works against on a LapSVM / LapRLS, estimated by a few Lanczos steps.

PCG [000 Alg. 1] preconditions ``J`` with ``P = diag(1, K)``. In α its Hessian is
``K(D + γ_I L)K + γ_A K`` with ``D = ½ diag(φ''(m))`` on the labeled points, so the operator
whose spectrum sets PCG's iteration count is

    A = (D + γ_I L) K + γ_A I,

self-adjoint in the inner product ``⟨u, v⟩_K``, with eigenvalues ``γ_A + μ_i``, ``μ_i ≥ 0``.
:func:`preconditioned_spectrum` runs ``PROBE_STEPS`` steps of
:func:`~ssl_opt.numerics.eigen.metric_lanczos` on it (one K and one L product per step, D at
the start ``m = 0``): its largest Ritz value is λ_max within a few percent. The bottom of the
spectrum is taken as ``γ_A``, a lower bound of λ_min, so ``κ = λ_max/γ_A`` bounds the
condition number above. It is close on kernels whose eigenvalues decay to 0 (two moons,
digits, breast cancer: most data in few effective dimensions), where the spectrum of A reaches
down to γ_A. On a kernel that is nearly the identity plus a low-rank part (a Gaussian kernel in
50 dimensions) the spectrum stops above γ_A and κ is pessimistic; reading that bottom from the
smallest Ritz value was tried and dropped: it needed twice the steps and under-predicted PCG's
iterations there 2–3× (benchmarks/bench_instance_selection.py, g50c-like data), where the
direct solve and Newton were the faster solvers anyway.

The measured seconds per step are one K product and one L product: PCG's per-iteration cost
less its vector work.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from ssl_opt.numerics.eigen import metric_lanczos

#: Lanczos steps of the probe (its cost: about as many PCG iterations); λ_max is then within a
#: few percent.
PROBE_STEPS = 10


@dataclass(frozen=True)
class Conditioning:
    """Extreme eigenvalues of PCG's preconditioned operator, and what measuring them cost."""

    largest: float
    #: The bottom of the spectrum used: ``γ_A``, a lower bound of λ_min.
    smallest: float
    steps: int
    #: Wall seconds of one step: one K product and one L product on this instance.
    seconds_per_step: float
    #: Wall seconds of the whole probe.
    seconds: float

    @property
    def condition(self) -> float:
        return self.largest / self.smallest if self.smallest > 0 else math.inf

    def describe(self) -> str:
        return (f"λ_max ≈ {self.largest:.3g}, λ_min ≥ γ_A = {self.smallest:.3g}, "
                f"κ ≤ {self.condition:.3g}; {self.steps} Lanczos steps, "
                f"{1e3 * self.seconds_per_step:.3g} ms per K and L product, "
                f"probe {1e3 * self.seconds:.3g} ms")


def preconditioned_spectrum(problem, steps: int = PROBE_STEPS) -> Conditioning:
    """:class:`Conditioning` of ``A = (D + γ_I L)K + γ_A I`` on a LapSVM ``problem`` (module
    docstring); ``D = ½φ''(0)`` on the labeled points (1 for the squared and squared hinge
    losses), ``½`` where the loss has no second derivative."""
    began = time.perf_counter()
    n, l = problem.n, problem.l
    curvature = np.zeros(n)
    if "second_derivative" in problem.loss.capabilities:
        curvature[:l] = 0.5 * np.asarray(problem.loss.second_derivative(np.zeros(l)))
    else:
        curvature[:l] = 0.5
    gamma_A, gamma_I = problem.gamma_A, problem.gamma_I

    def operator(q, Kq):
        return curvature * Kq + gamma_I * problem.L_dot(Kq) + gamma_A * q

    start = np.random.default_rng(0).standard_normal(n)
    trace = metric_lanczos(operator, problem.K_dot, start, steps)
    return Conditioning(trace.largest, gamma_A, trace.steps, trace.seconds_per_step,
                        time.perf_counter() - began)
