r"""Negative entropy ``h(z) = w Σ_i z_i log z_i`` (``0 log 0 = 0``, ``+∞`` for ``z_i < 0``).

The regularizer of entropic label propagation and of soft assignments on the simplex
(docs/design.md §6). Its derivative ``w(log z + 1)`` is unbounded near 0, so the term offers no
``gradient`` (it is not Lipschitz-smooth); it offers:

* ``prox(v, t)``: per entry, ``p = argmin s p log p + ½(p − v)²`` (``s = t w``) solves
  ``s(log p + 1) + p = v``, i.e. ``p = s W₀(e^{v/s − 1}/s)`` (Lambert W). It is computed in
  log space, overflow-free: with ``x = v/s − 1 − log s`` and ``p = s e^y``, ``y`` solves
  ``y + e^y = x`` — Newton's method from ``y₀ = x`` (``x ≤ 1``) or ``log x`` (``x > 1``),
  where the convex increasing residual is ≥ 0, converges monotonically and quadratically
  (to ~1e-16 in y, i.e. ~1e-16 relative in p). ``s = 0`` gives ``max(v, 0)``.
* ``project_subgradient(z, u, tol)``: ``∂h(z) = {w(log z + 1)}`` for ``z > tol``; entries
  within ``tol`` of the boundary ``z = 0`` take the set of ``w(log z' + 1)`` over
  ``0 < z' ≤ z + tol``, i.e. ``u`` clipped to ``(−∞, w(log(z + tol) + 1)]``.
* ``mirror_step(z, g, t) = argmin_p ⟨g, p⟩ + w Σ p log p + KL(p, z)/t`` over ``p > 0``, with
  the generalized KL ``Σ p log(p/z) − p + z``: stationarity ``g + w(log p + 1) +
  (log p − log z)/t = 0`` gives, per entry,
  ``log p = (log z − t g − t w)/(1 + t w)``.
  On ``SimplexRows`` the row normalization adds a multiplier ``ν_i`` to ``g`` on row i, so the
  constrained step is the row-wise softmax of ``(log z − t g)/(1 + t w)`` (the constant
  ``−t w/(1 + t w)`` cancels); that normalization is the mirror solver's job.
"""

from __future__ import annotations

import numpy as np
from scipy.special import xlogy

from ssl_opt.modeling.term import Term
from ssl_opt.optional import cvxpy as cp


def log_lambertw_exp(x: np.ndarray, max_iter: int = 100) -> np.ndarray:
    """``y = log W₀(e^x)``, i.e. the root of ``y + e^y = x``, elementwise and overflow-free."""
    shape = np.shape(x)
    x = np.asarray(x, dtype=np.float64).ravel()
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.where(x <= 1.0, x, np.log(np.maximum(x, 1.0)))
    active = np.isfinite(y)
    for _ in range(max_iter):
        if not np.any(active):
            break
        ya, xa = y[active], x[active]
        e = np.exp(ya)
        step = (ya + e - xa) / (1.0 + e)
        y[active] = ya - step
        done = np.abs(step) <= 4e-16 * np.maximum(1.0, np.abs(ya))
        idx = np.flatnonzero(active)
        active[idx[done]] = False
    return y.reshape(shape)


class Entropy(Term):
    """``w Σ z log z``; see the module docstring. CVXPY: ``−w·sum(entr(z))``."""

    name = "entropy"
    program_class = "exponential-cone"
    elementwise_prox = True

    def value(self, z):
        z = np.asarray(z, dtype=np.float64)
        if np.any(z < 0):
            return float("inf")
        return float(self.weight * np.sum(xlogy(z, z)))

    def cvxpy(self, z):
        return -self.weight * cp.sum(cp.entr(z))

    def prox(self, v, t):
        v = np.asarray(v, dtype=np.float64)
        s = np.broadcast_to(np.asarray(t, dtype=np.float64) * self.weight, v.shape)
        pos = s > 0
        safe = np.where(pos, s, 1.0)
        x = v / safe - 1.0 - np.log(safe)
        with np.errstate(over="ignore"):
            p = safe * np.exp(log_lambertw_exp(x))
        return np.where(pos, p, np.maximum(v, 0.0))

    def project_subgradient(self, z, u, tol):
        z = np.asarray(z, dtype=np.float64)
        if self.weight == 0:
            return np.zeros(z.shape)
        with np.errstate(divide="ignore"):
            grad = self.weight * (np.log(np.maximum(z, 0.0)) + 1.0)
            top = self.weight * (np.log(np.maximum(z, 0.0) + tol) + 1.0)
        return np.where(z > tol, grad, np.minimum(u, top))

    def mirror_step(self, z, g, t):
        tw = t * self.weight
        with np.errstate(divide="ignore"):
            logz = np.log(np.asarray(z, dtype=np.float64))
        return np.exp((logz - t * np.asarray(g, dtype=np.float64) - tw) / (1.0 + tw))
