r"""Safeguarded Anderson acceleration of fixed-point iterations ``x ← T(x)``, shared by the
generic solvers (``admm-split``, ``pdhg``, ``mirror``, ``irls-mm``), BCD (NPKL) and IRLS (ERE).

Type II (Walker & Ni 2011): from the last pair ``(x, T(x))``, with residual ``f = T(x) − x``
and the stored differences ``ΔF`` of consecutive residuals and ``ΔG`` of consecutive images,
the extrapolated point is::

    x_AA = T(x) − ΔGᵀγ,   γ = argmin_γ ‖f − ΔFᵀγ‖   (normal equations, a tiny ridge)

A solver keeps ``x_AA`` only when its own safeguard holds (a decrease of the fixed-point
residual, of the objective, ...): :class:`SafeguardedAnderson` owns the memory, the
extrapolation and the counts, the solver passes the rule.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import numpy as np

Candidate = TypeVar("Candidate")


class AndersonMemory:
    """Ring buffers of the last ``m`` differences of residuals ``ΔF`` and of images ``ΔG``
    (stored as rows); the Gram matrix ``ΔFΔFᵀ`` is updated one row at a time, so a step costs
    O(m·dim)."""

    def __init__(self, dim: int, m: int):
        self.dF = np.zeros((m, dim))
        self.dG = np.zeros((m, dim))
        self.gram = np.zeros((m, m))
        self.m, self.size, self.head = m, 0, 0

    def clear(self) -> None:
        self.size = self.head = 0

    def push(self, df: np.ndarray, dg: np.ndarray) -> None:
        j = self.head
        self.dF[j] = df.ravel()
        self.dG[j] = dg.ravel()
        self.size = min(self.size + 1, self.m)
        row = self.dF[: self.size] @ self.dF[j]
        self.gram[j, : self.size] = row
        self.gram[: self.size, j] = row
        self.head = (j + 1) % self.m

    def extrapolate(self, g: np.ndarray, f: np.ndarray) -> np.ndarray:
        """``g − ΔGᵀγ`` with ``(ΔFΔFᵀ + εI)γ = ΔF f``, ``ε = 1e-10·tr(ΔFΔFᵀ)``."""
        k = self.size
        gram = self.gram[:k, :k].copy()
        gram[np.diag_indices(k)] += 1e-10 * max(float(np.trace(gram)), 1e-300)
        gamma = np.linalg.solve(gram, self.dF[:k] @ f.ravel())
        return g - (gamma @ self.dG[:k]).reshape(g.shape)


class SafeguardedAnderson:
    """Anderson acceleration with memory ``memory`` (0: off) of a map the caller applies.

    The caller reports every pair it computes with :meth:`observe` ``(x, T(x))``; consecutive
    pairs push their differences into the memory. :meth:`propose` extrapolates from the last
    pair, has the caller ``evaluate`` the extrapolated point and returns that evaluation when
    the caller's rule ``acceptable`` holds, else None (the caller then takes the plain step
    ``T(x)``). Accepted and rejected proposals are counted; a rejection also empties the
    memory when ``clear_on_reject`` (a restart from the plain step). :meth:`restart` forgets
    memory and last pair, for when the map itself changes (a new penalty, a new δ).
    """

    def __init__(self, dim: int, memory: int, *, clear_on_reject: bool):
        self._memory = AndersonMemory(dim, memory) if memory else None
        self.clear_on_reject = clear_on_reject
        self.accepted = self.rejected = 0
        self._last: tuple[np.ndarray, np.ndarray] | None = None  # (residual, image)

    @property
    def residual(self) -> np.ndarray:
        """``T(x) − x`` of the last observed pair."""
        return self._last[0]

    def observe(self, x: np.ndarray, image: np.ndarray) -> None:
        """Record the pair ``(x, T(x))``."""
        residual = image - x
        if self._last is not None and self._memory is not None:
            self._memory.push(residual - self._last[0], image - self._last[1])
        self._last = (residual, image)

    def propose(self, evaluate: Callable[[np.ndarray], Candidate],
                acceptable: Callable[[Candidate], bool]) -> Candidate | None:
        """``evaluate(x_AA)`` when the memory holds a difference and ``acceptable`` takes it;
        None when the memory is empty or the rule rejects the point."""
        if self._memory is None or not self._memory.size:
            return None
        residual, image = self._last
        candidate = evaluate(self._memory.extrapolate(image, residual))
        if acceptable(candidate):
            self.accepted += 1
            return candidate
        self.rejected += 1
        if self.clear_on_reject:
            self._memory.clear()
        return None

    def restart(self) -> None:
        """Forget the differences and the last pair."""
        if self._memory is not None:
            self._memory.clear()
        self._last = None
