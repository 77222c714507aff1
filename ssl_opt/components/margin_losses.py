"""Margin losses φ(m) on margins m = y·f for the kernel manifold family (DESIGN.md §4.1).

A loss is a small object: ``value`` (numpy, elementwise), ``cvxpy`` (a CVXPY expression of the
margin vector, summed by the caller), and, when smooth, ``derivative`` and
``second_derivative``. The capability flags tell solvers what they may assume:

* ``smooth``: ``derivative`` exists everywhere (needed by PCG and Newton); by default true
  exactly when the class implements ``derivative``;
* ``piecewise_quadratic``: φ is piecewise quadratic with kinks where ``1 - m`` changes sign, so
  the line-search derivative is piecewise linear [000 §3.2.1] and Newton with the generalized
  Hessian terminates finitely [000 §3.1];
* ``unique_decision``: the optimal decision values f are unique (strictly convex loss part),
  so certificates may compare f with a reference.

A user-defined loss subclasses :class:`MarginLoss` and implements ``value`` and ``cvxpy``; the
reference backend then solves it and ``certify`` checks it with no other code.
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np

from ssl_opt._validation import check_positive


class MarginLoss:
    """Base class of convex margin losses φ(m)."""

    name: str = "custom"
    piecewise_quadratic: bool = False
    unique_decision: bool = False

    @property
    def smooth(self) -> bool:
        """A loss that implements ``derivative`` is smooth unless it says otherwise."""
        return type(self).derivative is not MarginLoss.derivative

    def value(self, m: np.ndarray) -> np.ndarray:
        """Elementwise φ(m)."""
        raise NotImplementedError

    def cvxpy(self, m: cp.Expression) -> cp.Expression:
        """CVXPY expression of the elementwise loss of the margin vector ``m`` (DCP convex)."""
        raise NotImplementedError

    def derivative(self, m: np.ndarray) -> np.ndarray:
        """Elementwise φ'(m); defined for smooth losses only."""
        raise NotImplementedError(f"loss {self.name!r} has no derivative (it is not smooth)")

    def second_derivative(self, m: np.ndarray) -> np.ndarray:
        """Elementwise φ''(m) (a generalized second derivative at kinks)."""
        raise NotImplementedError(f"loss {self.name!r} has no second derivative")

    def subgradient_interval(
        self, m: np.ndarray, kink_tol: float = 0.0
    ) -> tuple[np.ndarray, np.ndarray]:
        """Bounds ``(lo, hi)`` of ∂φ at margins within ``kink_tol`` of ``m``.

        Smooth losses return φ'(m) twice; a non-smooth user loss overrides this to be
        certifiable on residuals.
        """
        g = self.derivative(m)
        return g, g

    @property
    def has_second_derivative(self) -> bool:
        return type(self).second_derivative is not MarginLoss.second_derivative

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class SquaredHinge(MarginLoss):
    """φ(m) = max(0, 1 − m)²: the L2 loss of primal LapSVM [000 eq. 7]."""

    name = "squared_hinge"
    piecewise_quadratic = True
    unique_decision = True

    def value(self, m):
        return np.maximum(0.0, 1.0 - m) ** 2

    def cvxpy(self, m):
        return cp.square(cp.pos(1 - m))

    def derivative(self, m):
        return -2.0 * np.maximum(0.0, 1.0 - m)

    def second_derivative(self, m):
        return np.where(m < 1.0, 2.0, 0.0)


class Square(MarginLoss):
    """φ(m) = (1 − m)² = (y − f)² for y = ±1: LapRLS [000 §5]."""

    name = "squared"
    piecewise_quadratic = True
    unique_decision = True

    def value(self, m):
        return (1.0 - m) ** 2

    def cvxpy(self, m):
        return cp.square(1 - m)

    def derivative(self, m):
        return -2.0 * (1.0 - m)

    def second_derivative(self, m):
        return np.full_like(np.asarray(m, dtype=float), 2.0)


class Hinge(MarginLoss):
    """φ(m) = max(0, 1 − m): the original LapSVM loss [000 eq. 4]; not smooth."""

    name = "hinge"

    def value(self, m):
        return np.maximum(0.0, 1.0 - m)

    def cvxpy(self, m):
        return cp.pos(1 - m)

    def subgradient_interval(self, m, kink_tol: float = 0.0):
        m = np.asarray(m, dtype=float)
        lo = np.where(m <= 1.0 + kink_tol, -1.0, 0.0)
        hi = np.where(m < 1.0 - kink_tol, -1.0, 0.0)
        return lo, hi


class HuberHinge(MarginLoss):
    """Huber-smoothed hinge with width δ > 0.

    φ(m) = 0 for m ≥ 1, (1 − m)²/(2δ) for 1 − δ < m < 1, and 1 − m − δ/2 for m ≤ 1 − δ.
    """

    name = "huber"

    def __init__(self, delta: float = 0.5):
        self.delta = check_positive(delta, "delta")

    def value(self, m):
        t = np.maximum(0.0, 1.0 - m)
        return np.where(t <= self.delta, t**2 / (2 * self.delta), t - self.delta / 2)

    def cvxpy(self, m):
        return cp.huber(cp.pos(1 - m), self.delta) / (2 * self.delta)

    def derivative(self, m):
        t = np.maximum(0.0, 1.0 - m)
        return -np.minimum(t, self.delta) / self.delta

    def second_derivative(self, m):
        t = 1.0 - np.asarray(m, dtype=float)
        return np.where((t > 0) & (t < self.delta), 1.0 / self.delta, 0.0)

    def __repr__(self) -> str:
        return f"HuberHinge(delta={self.delta!r})"


class Logistic(MarginLoss):
    """φ(m) = log(1 + exp(−m))."""

    name = "logistic"

    unique_decision = True

    def value(self, m):
        return np.logaddexp(0.0, -np.asarray(m, dtype=float))

    def cvxpy(self, m):
        return cp.logistic(-m)

    def derivative(self, m):
        return -_sigmoid(-np.asarray(m, dtype=float))

    def second_derivative(self, m):
        s = _sigmoid(np.asarray(m, dtype=float))
        return s * (1.0 - s)


def _sigmoid(t: np.ndarray) -> np.ndarray:
    return np.exp(-np.logaddexp(0.0, -t))


MARGIN_LOSSES: dict[str, type[MarginLoss]] = {
    cls.name: cls for cls in (SquaredHinge, Square, Hinge, HuberHinge, Logistic)
}


def get_margin_loss(loss: str | MarginLoss) -> MarginLoss:
    """Resolve a loss name or instance; raise a clear error otherwise."""
    from ssl_opt.exceptions import InvalidInputError

    if isinstance(loss, MarginLoss):
        return loss
    if isinstance(loss, type) and issubclass(loss, MarginLoss):
        return loss()
    if isinstance(loss, str) and loss in MARGIN_LOSSES:
        return MARGIN_LOSSES[loss]()
    raise InvalidInputError(
        f"loss must be one of {sorted(MARGIN_LOSSES)} or a MarginLoss instance, got {loss!r}."
    )
