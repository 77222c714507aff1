r"""Margin losses of labeled outputs: ``h(z) = w Σ_i c_i φ(y_i z_i)`` (docs/design.md §4.1,
§6).

``φ`` is a :class:`~ssl_opt.components.losses.MarginLoss` (a registered name or an object),
``y`` holds ±1 labels of the argument's shape and ``c`` optional per-entry weights
``sample_weight ≥ 0`` (1 when not given; SVMlin's per-example costs [001 eq. 2]). With
``m = y∘z`` (``y² = 1``) and ``s = w c``:

* ``∇h = s∘y∘φ'(m)``, ``∇²h·v = s∘φ''(m)∘v`` — offered only when φ has ``derivative`` /
  ``second_derivative`` (a hinge term has neither);
* ``∂h(z)_i = s_i y_i ∂φ(m_i)``, from ``φ.subgradient_interval(m, kink_tol)`` (an interval, a
  point where φ is differentiable);
* ``prox(v, t)_i = y_i P(y_i v_i)`` with ``P(u) = argmin_m t s_i φ(m) + ½(m − u)²``,
  the loss's own ``prox`` (:meth:`~ssl_opt.components.losses.MarginLoss.prox`: closed forms
  for the built-in piecewise-quadratic losses, none for the logistic, which is smooth; a
  user's loss that implements ``prox`` offers it here too).

The capabilities are the loss's: the class implements every oracle and :attr:`capabilities`
drops those the loss cannot back.
"""

from __future__ import annotations

import numpy as np

from ssl_opt.components.losses import (
    MarginLoss,
    get_margin_loss,
)
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.modeling.term import Term
from ssl_opt.modeling.terms._common import data_array
from ssl_opt.optional import cvxpy as cp


class MarginLossTerm(Term):
    """``w Σ_i c_i φ(y_i z_i)``; see the module docstring. Attributes ``.y`` (±1, the
    argument's shape), ``.loss`` (the MarginLoss object) and ``.sample_weight`` (``c``, an
    array of the argument's shape, or None for 1)."""

    name = "margin_loss"
    elementwise_prox = True

    def __init__(self, argument, y, loss: str | MarginLoss = "squared_hinge", weight=1.0, *,
                 sample_weight=None):
        super().__init__(argument, weight)
        self.sample_weight = None
        #: ``w c``: the weight of each entry (the scalar w without sample weights).
        self.scale = self.weight
        if sample_weight is not None:
            c = data_array(sample_weight, "sample_weight", self.shape, "MarginLossTerm",
                           allow_scalar=False)
            if np.any(c < 0):
                raise InvalidInputError("sample_weight of MarginLossTerm must be ≥ 0 "
                                        "(a weight per entry).")
            self.sample_weight = c
            self.scale = self.weight * c
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
        losses = self.loss.value(self.y * z)
        if self.sample_weight is not None:
            return float(self.weight * (self.sample_weight.ravel() @ np.ravel(losses)))
        return float(self.weight * np.sum(losses))

    def cvxpy(self, z):
        m = cp.multiply(self.y, z) if self.shape else float(self.y) * z
        losses = self.loss.cvxpy(m)
        if self.sample_weight is not None:
            losses = cp.multiply(self.sample_weight, losses)
        return self.weight * cp.sum(losses)

    def gradient(self, z):
        return self.scale * self.y * self.loss.derivative(self.y * z)

    def hessp(self, z, v):
        return self.scale * self.loss.second_derivative(self.y * z) * v

    def hessian(self, z):
        return np.ravel(self.scale * self.loss.second_derivative(self.y * z)
                        * np.ones(np.shape(z)))

    def prox(self, v, t):
        if "prox" not in self.loss.capabilities:
            raise NotImplementedError(f"{self!r} has no closed-form prox (loss "
                                      f"{self.loss.name!r})")
        u = self.y * np.asarray(v, dtype=np.float64)
        return self.y * self.loss.prox(u, t * self.scale)

    def project_subgradient(self, z, u, tol):
        m = self.y * np.asarray(z, dtype=np.float64)
        if self.loss.smooth:
            return self.gradient(z)
        lo, hi = self.loss.subgradient_interval(m, tol)
        a, b = self.scale * self.y * lo, self.scale * self.y * hi
        return np.clip(u, np.minimum(a, b), np.maximum(a, b))

    def describe(self) -> str:
        weighted = "" if self.sample_weight is None else ", sample_weight"
        return f"{self.name}(loss={self.loss.name}, weight={self.weight:g}{weighted})"
