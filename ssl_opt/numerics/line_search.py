"""Exact line search for the manifold family along a direction d [000 §3.2.1].

Along ``z + s·d`` the objective's derivative is

    ψ(s) = ½ Σ_i t_i φ'(m_i + s t_i) + a0 + s·a1,

with ``t = y ∘ f_d`` on the labeled points, ``a0 = γ_A αᵀK d_α + γ_I f_dᵀ L f`` and
``a1 = γ_A d_αᵀ K d_α + γ_I f_dᵀ L f_d``. ψ is non-decreasing (convexity); the step is its root.

A loss with the ``"exact_step"`` capability computes the step itself
(:meth:`~ssl_opt.components.MarginLoss.exact_step`):

* squared hinge: ψ is piecewise linear; sort the break points ``s_i = (1 − m_i)/t_i`` and take
  the first linear piece whose zero lies inside it — O(l log l), exact
  (:func:`squared_hinge_step`);
* square loss: ψ is linear, closed form ``s = −ψ(0)/ψ'`` [000 §5].

Any other smooth loss: Brent's method on a bracket (ψ is monotone).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from scipy.optimize import brentq

if TYPE_CHECKING:
    from ssl_opt.components import MarginLoss


def step_along(problem, f, Ka, Lf, d_a, Kd, f_d, Lf_d) -> float:
    """Exact step for ``problem`` at ``f = Kα + b`` along ``(d_α, d_b)`` from the products
    ``Kα``, ``L f``, ``K d_α``, ``f_d = K d_α + d_b`` and ``L f_d`` the solver already has."""
    a0 = problem.gamma_A * float(Ka @ d_a) + problem.gamma_I * float(f_d @ Lf)
    a1 = problem.gamma_A * float(d_a @ Kd) + problem.gamma_I * float(f_d @ Lf_d)
    y, l = problem.y, problem.l
    return exact_step(problem.loss, y * f[:l], y * f_d[:l], a0, a1)


def exact_step(loss: MarginLoss, m: np.ndarray, t: np.ndarray, a0: float, a1: float) -> float:
    """The minimizing step ``s* ≥ 0`` of the objective along the direction: the loss's own
    exact step when it offers one, else the root of ψ by Brent's method."""
    if "exact_step" in loss.capabilities:
        return loss.exact_step(m, t, a0, a1)
    return _generic_step(loss, m, t, a0, a1)


def weighted_squared_hinge_step(gap, t, c, a0, a1) -> float:
    """Root of ``ψ(s) = a0 + s·a1 − Σ_i c_i t_i max(0, gap_i − s t_i)``, ``c ≥ 0`` — the MFN
    line search [001 eq. 5]; rescaling each term by ``√c_i`` keeps the break points."""
    sc = np.sqrt(c)
    return squared_hinge_step(1.0 - sc * gap, sc * t, a0, a1)


#: Up to this many terms the step is computed with Python scalars, walking the pieces in order
#: and stopping at the root: for the few labeled points of a kernel LapSVM the numpy calls of
#: the vectorized scan cost more than the scan itself (a sixth of a PCG iteration at n = 1,000).
WALK_MAX_TERMS = 64


def squared_hinge_step(m: np.ndarray, t: np.ndarray, a0: float, a1: float) -> float:
    """Root of ``ψ(s) = a0 + s·a1 − Σ_i t_i max(0, 1 − m_i − s t_i)``: the exact step of the
    squared hinge, by sorting the break points of the piecewise linear ψ."""
    if m.size <= WALK_MAX_TERMS:
        return _walk_pieces(m.tolist(), t.tolist(), float(a0), float(a1))
    # On a piece with active set A: ψ(s) = a0 − Σ_A t_i(1 − m_i) + s (a1 + Σ_A t_i²).
    gap = 1.0 - m
    active0 = (gap > 0) | ((gap == 0) & (t < 0))  # active just after s = 0
    icpt = a0 - float(np.sum(t[active0] * gap[active0]))
    slope = a1 + float(np.sum(t[active0] ** 2))
    if icpt >= 0:
        return 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        brk = gap / t
    switching = (t != 0) & (brk > 0)
    order = np.argsort(brk[switching])
    s_brk = brk[switching][order]
    # Entering the active set adds its term; leaving removes it.
    sign = np.where(active0[switching], -1.0, 1.0)[order]
    d_icpt = -sign * t[switching][order] * gap[switching][order]
    d_slope = sign * t[switching][order] ** 2
    icpts = icpt + np.concatenate([[0.0], np.cumsum(d_icpt)])
    slopes = slope + np.concatenate([[0.0], np.cumsum(d_slope)])
    lower = np.concatenate([[0.0], s_brk])
    upper = np.concatenate([s_brk, [np.inf]])
    with np.errstate(divide="ignore", invalid="ignore"):
        roots = np.where(slopes > 0, -icpts / slopes, np.inf)
    inside = (roots <= upper) & (slopes > 0)
    # First piece whose end has ψ ≥ 0 holds the root (ψ is non-decreasing).
    psi_end = icpts + slopes * np.where(np.isfinite(upper), upper, 0.0)
    ends_nonneg = np.where(np.isfinite(upper), psi_end >= 0, inside)
    j = int(np.argmax(ends_nonneg)) if np.any(ends_nonneg) else len(roots) - 1
    return float(np.clip(roots[j], lower[j], upper[j])) if np.isfinite(roots[j]) else 0.0


def _walk_pieces(m: list, t: list, a0: float, a1: float) -> float:
    """:func:`squared_hinge_step` with Python scalars: the pieces of ψ in order of their break
    points, stopping at the first whose end has ψ ≥ 0."""
    icpt, slope, breaks = a0, a1, []
    for m_i, t_i in zip(m, t, strict=True):
        gap = 1.0 - m_i
        active = gap > 0 or (gap == 0 and t_i < 0)  # active just after s = 0
        if active:
            icpt -= t_i * gap
            slope += t_i * t_i
        if t_i != 0 and gap / t_i > 0:
            # entering the active set adds the term to ψ, leaving removes it
            sign = -1.0 if active else 1.0
            breaks.append((gap / t_i, -sign * t_i * gap, sign * t_i * t_i))
    if icpt >= 0:
        return 0.0
    lower = 0.0
    for upper, d_icpt, d_slope in sorted(breaks):
        if icpt + slope * upper >= 0:
            return min(max(-icpt / slope, lower), upper) if slope > 0 else 0.0
        icpt, slope, lower = icpt + d_icpt, slope + d_slope, upper
    return max(-icpt / slope, lower) if slope > 0 else 0.0


def _generic_step(loss, m, t, a0, a1) -> float:
    def psi(s: float) -> float:
        return 0.5 * float(t @ loss.derivative(m + s * t)) + a0 + s * a1

    if psi(0.0) >= 0:
        return 0.0
    hi = 1.0
    for _ in range(200):
        if psi(hi) > 0:
            break
        hi *= 2.0
    else:
        return hi
    return float(brentq(psi, 0.0, hi, xtol=1e-14, rtol=4 * np.finfo(float).eps, maxiter=200))
