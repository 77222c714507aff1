r"""Margin losses of labeled outputs: ``h(z) = w Σ_i φ(y_i z_i)`` (docs/design.md §4.1, §6).

``φ`` is a :class:`~ssl_opt.components.losses.MarginLoss` (a registered name or an object) and
``y`` holds ±1 labels of the argument's shape. With ``m = y∘z`` (``y² = 1``):

* ``∇h = w y∘φ'(m)``, ``∇²h·v = w φ''(m)∘v`` — offered only when φ has ``derivative`` /
  ``second_derivative`` (a hinge term has neither);
* ``∂h(z)_i = w y_i ∂φ(m_i)``, from ``φ.subgradient_interval(m, kink_tol)`` (an interval, a
  point where φ is differentiable);
* ``prox(v, t)_i = y_i P(y_i v_i)`` with ``P(u) = argmin_m s φ(m) + ½(m − u)²``, ``s = t w``,
  the loss's own ``prox`` (:meth:`~ssl_opt.components.losses.MarginLoss.prox`: closed forms
  for the built-in piecewise-quadratic losses, none for the logistic, which is smooth; a
  user's loss that implements ``prox`` offers it here too).

The capabilities are the loss's: the class implements every oracle and :attr:`capabilities`
drops those the loss cannot back.
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np

from ssl_opt.components.losses import (
    MarginLoss,
    get_margin_loss,
)
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.modeling.term import Term
from ssl_opt.modeling.terms._common import data_array


class MarginLossTerm(Term):
    """``w Σ_i φ(y_i z_i)``; see the module docstring. Attributes ``.y`` (±1, the argument's
    shape) and ``.loss`` (the MarginLoss object)."""

    name = "margin_loss"
    elementwise_prox = True

    def __init__(self, argument, y, loss: str | MarginLoss = "squared_hinge", weight=1.0):
        super().__init__(argument, weight)
        y = data_array(y, "y", self.shape, "MarginLossTerm", allow_scalar=False)
        if not np.all(np.isin(y, (-1.0, 1.0))):
            bad = np.unique(y[~np.isin(y, (-1.0, 1.0))])[:5]
            raise InvalidInputError(f"y of MarginLossTerm must hold only -1 and +1, found "
                                    f"{bad.tolist()}; map your classes to ±1.")
        self.y = y
        self.loss = get_margin_loss(loss)
        self.program_class = self.loss.program_class

    @property
    def capabilities(self) -> frozenset[str]:
        caps = set(super().capabilities)
        offered = self.loss.capabilities
        if "derivative" not in offered:
            caps -= {"gradient", "hessp", "hessian"}
        if "second_derivative" not in offered:
            caps -= {"hessp", "hessian"}
        if "prox" not in offered:
            caps.discard("prox")
        if "subgradient" not in offered and "derivative" not in offered:
            caps.discard("subdifferential")
        return frozenset(caps)

    def value(self, z):
        return float(self.weight * np.sum(self.loss.value(self.y * z)))

    def cvxpy(self, z):
        m = cp.multiply(self.y, z) if self.shape else float(self.y) * z
        return self.weight * cp.sum(self.loss.cvxpy(m))

    def gradient(self, z):
        return self.weight * self.y * self.loss.derivative(self.y * z)

    def hessp(self, z, v):
        return self.weight * self.loss.second_derivative(self.y * z) * v

    def hessian(self, z):
        return np.ravel(self.weight * self.loss.second_derivative(self.y * z)
                        * np.ones(np.shape(z)))

    def prox(self, v, t):
        if "prox" not in self.loss.capabilities:
            raise NotImplementedError(f"{self!r} has no closed-form prox (loss "
                                      f"{self.loss.name!r})")
        u = self.y * np.asarray(v, dtype=np.float64)
        return self.y * self.loss.prox(u, t * self.weight)

    def project_subgradient(self, z, u, tol):
        m = self.y * np.asarray(z, dtype=np.float64)
        if self.loss.smooth:
            return self.gradient(z)
        lo, hi = self.loss.subgradient_interval(m, tol)
        a, b = self.weight * self.y * lo, self.weight * self.y * hi
        return np.clip(u, np.minimum(a, b), np.maximum(a, b))

    def describe(self) -> str:
        return f"{self.name}(loss={self.loss.name}, weight={self.weight:g})"
