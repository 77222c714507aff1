r"""Richardson extrapolation for smoothing continuation: a smoothed problem's solution (or its
multipliers) behaves as ``a(δ) = a* + c√δ`` for small δ [004 §3.3]; two stage ends give the
limit ``a*`` and the start of the next stage. Used by the ERE IRLS solver and the generic
``irls-newton`` and ``irls-mm``."""

from __future__ import annotations

import numpy as np


def richardson(d1: float, a1, d2: float, a2):
    """``(q a₂ − a₁)/(q − 1)``, ``q = √(δ₁/δ₂)``: the limit δ → 0 of ``a(δ) = a* + c√δ`` fitted
    to ``a(δ₁) = a₁`` and ``a(δ₂) = a₂`` (δ₁ > δ₂)."""
    q = np.sqrt(d1 / d2)
    return (q * a2 - a1) / (q - 1.0)


def continued(d1: float, a1, d2: float, a2, delta: float):
    """``a(δ) ≈ a* + (a₂ − a*)√(δ/δ₂)`` at a smaller ``delta``, from the same fit."""
    star = richardson(d1, a1, d2, a2)
    return star + (a2 - star) * np.sqrt(delta / d2)
