"""Margin losses φ(m), m = y·f, and the one registry of them used by every family.

LapSVM/LapRLS (docs/design.md §4.1), the linear S3VMs (§4.2, the squared hinge) and NPKL (§4.4, on
the pair margins ``T_ij Z_ij``) all store a :class:`MarginLoss` object, never its name. A loss
lists what it offers in ``capabilities``; solvers declare what they need from it
(``Solver.requires = {"loss": (...)}``) and code asks the loss, never its name:

* ``"value"``, ``"cvxpy"``: φ(m) elementwise in numpy, and a CVXPY expression (every loss);
* ``"derivative"``, ``"second_derivative"``: φ'(m) and φ''(m) (a generalized second
  derivative at kinks), needed by PCG and Newton;
* ``"subgradient"``: :meth:`~MarginLoss.subgradient_interval` (bounds of ∂φ near m) and
  :meth:`~MarginLoss.subgradient_residual`; a smooth loss has them from φ', a non-smooth one
  implements ``subgradient_interval``;
* ``"piecewise_quadratic"``: φ is smooth and piecewise quadratic with its kink where
  ``1 − m`` changes sign, so the line-search derivative is piecewise linear [000 §3.2.1] and
  Newton with the generalized Hessian terminates finitely [000 §3.1];
* ``"quadratic"``: φ'' is constant, so J is quadratic and one linear solve minimizes it
  (LapRLS [000 eq. 14]);
* ``"piecewise_linear"``: ``φ(m) = max(lo(1 − m), hi(1 − m))``, linear on both sides of its
  kink at m = 1, with ``conjugate_form = (0, lo, hi)``: LapSVM's dual [000 §2.1] is then a
  box-constrained QP;
* ``"exact_step"``: :meth:`~MarginLoss.exact_step` returns the exact line-search step in closed
  form or by a finite search (otherwise a bracketing root finder is used);
* ``"conjugate"``: the convex conjugate φ*(s) = sup_m (s·m − φ(m)) (:meth:`~MarginLoss.conjugate`)
  and the dual term ``Σ_p −C φ*(−y_p/C)`` in CVXPY (:meth:`~MarginLoss.dual_cvxpy`, the form
  NPKL's reference solves [003 eq. 1]);
* ``"quadratic_conjugate"``: ``conjugate_form = (κ, lo, hi)`` with ``φ*(−g) = −g + κg²/2`` for
  ``lo ≤ g ≤ hi`` and +∞ elsewhere, g = −φ'(m) the loss's multiplier: NPKL's BCD column
  subproblems are then box-constrained QPs [003 eqs. 9–11].

``program_class`` names the class of the reference program with this loss (and quadratic
regularizers); ``unique_decision`` says the optimal decision values are unique (strictly convex
loss part), so certificates may compare them with a reference.

The conjugates, with ``φ(m) = h(1 − m)`` and ``φ*(s) = s + h*(−s)``:

====================  ==========================  ===============================
loss                   φ(m)                         φ*(−g)
====================  ==========================  ===============================
squared hinge          max(0, 1 − m)²               −g + g²/4,  g ≥ 0
square                 (1 − m)²                     −g + g²/4,  any g
hinge                  max(0, 1 − m)                −g,         0 ≤ g ≤ 1
Huber hinge (δ)        see :class:`HuberHinge`      −g + δg²/2, 0 ≤ g ≤ 1
logistic               log(1 + e^{−m})              g log g + (1−g) log(1−g), 0 ≤ g ≤ 1
====================  ==========================  ===============================

(the logistic's conjugate is not quadratic: it has ``conjugate`` without
``quadratic_conjugate``).

A user-defined loss subclasses :class:`MarginLoss` and implements ``value`` and ``cvxpy``; its
capabilities are then read from the methods it implements (``derivative`` makes it smooth and
PCG runs on it, ``second_derivative`` adds Newton), the reference backend solves it and
``certify`` checks it with no other code. Its ``derivative`` and ``second_derivative`` are
checked against central finite differences of ``value`` when the loss is resolved for a problem
and when a solution is certified (:func:`check_loss_derivatives`); a loss whose derivatives are
discontinuous somewhere lists those margins in ``kinks`` so the check stays away from them.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from scipy.special import xlogy

from ssl_opt._validation import check_positive
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.numerics.line_search import squared_hinge_step
from ssl_opt.optional import cvxpy as cp


class MarginLoss:
    """Base class of convex margin losses φ(m)."""

    name: ClassVar[str] = "custom"
    #: Other names the registry accepts for this loss.
    aliases: ClassVar[tuple[str, ...]] = ()
    program_class: ClassVar[str] = "convex"
    unique_decision: ClassVar[bool] = False
    #: ``(κ, lo, hi)``: ``φ*(−g) = −g + κg²/2`` on ``lo ≤ g ≤ hi`` (±inf allowed), else +∞.
    conjugate_form: ClassVar[tuple[float, float, float] | None] = None
    #: Margins where φ' or φ'' jumps; the finite-difference check of the derivatives avoids them.
    kinks: ClassVar[tuple[float, ...]] = ()

    @property
    def capabilities(self) -> frozenset[str]:
        """What this loss offers. The built-in losses declare it; for a subclass that does not,
        it is read from the methods the subclass implements."""
        return implemented_capabilities(type(self))

    @property
    def smooth(self) -> bool:
        """φ is differentiable everywhere (it offers ``derivative``)."""
        return "derivative" in self.capabilities

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

    def subgradient_residual(self, m: np.ndarray, d: np.ndarray) -> np.ndarray:
        """Elementwise violation of ``d ∈ ∂φ(m)``, zero exactly when it holds; by default the
        distance from d to the interval ∂φ(m) (``|d − φ'(m)|`` for a smooth loss)."""
        lo, hi = self.subgradient_interval(m)
        d = np.asarray(d, dtype=float)
        return np.maximum(0.0, np.maximum(lo - d, d - hi))

    def exact_step(self, m: np.ndarray, t: np.ndarray, a0: float, a1: float) -> float:
        """The step ``s ≥ 0`` minimizing ``½ Σ φ(m + s t) + a0·s + ½ a1·s²`` (``a1 ≥ 0``), i.e.
        the root of ``ψ(s) = ½ tᵀφ'(m + s t) + a0 + s·a1`` [000 §3.2.1]; losses with the
        ``"exact_step"`` capability only."""
        raise NotImplementedError(f"loss {self.name!r} has no exact line-search step")

    def prox(self, u: np.ndarray, s) -> np.ndarray:
        """``argmin_m s φ(m) + ½(m − u)²`` entrywise (``s`` > 0, a scalar or u's shape):
        the proximal operator of the loss, which first-order splitting methods use."""
        raise NotImplementedError(f"{self!r} has no closed-form proximal operator")

    def conjugate(self, s: np.ndarray) -> np.ndarray:
        """Elementwise ``φ*(s) = sup_m (s·m − φ(m))``, +inf outside its domain."""
        kappa, lo, hi = self._conjugate_form()
        g = -np.asarray(s, dtype=float)
        inside = (g >= lo) & (g <= hi)
        return np.where(inside, -g + 0.5 * kappa * g * g, np.inf)

    def dual_cvxpy(self, y: cp.Variable, C: float) -> tuple[cp.Expression, list]:
        """``Σ_p −C φ*(−y_p/C) = Σ_p min_t (C φ(t) + y_p t)`` as a concave CVXPY expression of
        the multipliers ``y``, and the constraints of its domain ``C·lo ≤ y ≤ C·hi``."""
        kappa, lo, hi = self._conjugate_form()
        value = cp.sum(y)
        if kappa:
            value = value - cp.sum_squares(y) / (2.0 * C / kappa)
        constraints = []
        if np.isfinite(lo):
            constraints.append(y >= C * lo)
        if np.isfinite(hi):
            constraints.append(y <= C * hi)
        return value, constraints

    def _conjugate_form(self) -> tuple[float, float, float]:
        if self.conjugate_form is None:
            raise NotImplementedError(f"loss {self.name!r} declares no conjugate")
        return self.conjugate_form

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    def __hash__(self) -> int:
        return hash((type(self), tuple(sorted(vars(self).items()))))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


#: Capability → the methods a subclass must implement to offer it (any one of the groups).
METHOD_CAPABILITIES: dict[str, tuple[tuple[str, ...], ...]] = {
    "value": (("value",),),
    "cvxpy": (("cvxpy",),),
    "derivative": (("derivative",),),
    "second_derivative": (("second_derivative",),),
    "subgradient": (("derivative",), ("subgradient_interval",)),
    "exact_step": (("exact_step",),),
    "conjugate": (("conjugate", "dual_cvxpy"),),
    "prox": (("prox",),),
}


def implemented_capabilities(cls: type[MarginLoss]) -> frozenset[str]:
    """The capabilities ``cls`` offers by the methods it implements and its ``conjugate_form``
    (a declared form gives ``conjugate`` and ``quadratic_conjugate``)."""
    def implements(method: str) -> bool:
        return getattr(cls, method) is not getattr(MarginLoss, method)

    offered = {cap for cap, groups in METHOD_CAPABILITIES.items()
               if any(all(implements(m) for m in group) for group in groups)}
    if cls.conjugate_form is not None:
        offered |= {"conjugate", "quadratic_conjugate"}
    return frozenset(offered)


_SMOOTH = frozenset({"value", "cvxpy", "derivative", "second_derivative", "subgradient"})


class SquaredHinge(MarginLoss):
    """φ(m) = max(0, 1 − m)²: the L2 loss of primal LapSVM [000 eq. 7], of L2-SVM-MFN
    [001 eq. 2] and NPKL's squared hinge [003 §3.2.2]."""

    name = "squared_hinge"
    program_class = "QP"
    unique_decision = True
    conjugate_form = (0.5, 0.0, np.inf)
    capabilities = _SMOOTH | {"piecewise_quadratic", "exact_step", "conjugate",
                              "quadratic_conjugate", "prox"}

    def value(self, m):
        return np.maximum(0.0, 1.0 - m) ** 2

    def prox(self, u, s):
        """``(u + 2s)/(1 + 2s)`` if ``u < 1``; u otherwise."""
        return np.where(u < 1.0, (u + 2.0 * s) / (1.0 + 2.0 * s), u)

    def cvxpy(self, m):
        return cp.square(cp.pos(1 - m))

    def derivative(self, m):
        return -2.0 * np.maximum(0.0, 1.0 - m)

    def second_derivative(self, m):
        return np.where(m < 1.0, 2.0, 0.0)

    def exact_step(self, m, t, a0, a1):
        """ψ is piecewise linear: the root by sorting its break points, O(l log l)."""
        return squared_hinge_step(m, t, a0, a1)


class Square(MarginLoss):
    """φ(m) = (1 − m)² = (y − f)² for y = ±1: LapRLS [000 §5] and NPKL's square loss."""

    name = "square"
    aliases = ("squared",)
    program_class = "QP"
    unique_decision = True
    conjugate_form = (0.5, -np.inf, np.inf)
    capabilities = _SMOOTH | {"piecewise_quadratic", "quadratic", "exact_step", "conjugate",
                              "quadratic_conjugate", "prox"}

    def value(self, m):
        return (1.0 - m) ** 2

    def prox(self, u, s):
        """``(u + 2s)/(1 + 2s)``."""
        return (u + 2.0 * s) / (1.0 + 2.0 * s)

    def cvxpy(self, m):
        return cp.square(1 - m)

    def derivative(self, m):
        return -2.0 * (1.0 - m)

    def second_derivative(self, m):
        return np.full_like(np.asarray(m, dtype=float), 2.0)

    def exact_step(self, m, t, a0, a1):
        """ψ is linear: ``s = −ψ(0)/ψ'`` [000 §5]."""
        slope = float(t @ t) + a1
        psi0 = -float(t @ (1.0 - m)) + a0
        return max(0.0, -psi0 / slope) if slope > 0 else 0.0


class Hinge(MarginLoss):
    """φ(m) = max(0, 1 − m): the original LapSVM loss [000 eq. 4] and NPKL's hinge
    (half the paper's ℓ [003 eq. 9]); not smooth."""

    name = "hinge"
    program_class = "QP"
    conjugate_form = (0.0, 0.0, 1.0)
    capabilities = frozenset({"value", "cvxpy", "subgradient", "piecewise_linear", "conjugate",
                              "quadratic_conjugate", "prox"})

    def value(self, m):
        return np.maximum(0.0, 1.0 - m)

    def prox(self, u, s):
        """``u + s`` if ``u < 1 − s``; 1 if ``1 − s ≤ u ≤ 1``; u if ``u > 1``."""
        return np.where(u < 1.0 - s, u + s, np.where(u <= 1.0, 1.0, u))

    def cvxpy(self, m):
        return cp.pos(1 - m)

    def subgradient_interval(self, m, kink_tol: float = 0.0):
        m = np.asarray(m, dtype=float)
        lo = np.where(m <= 1.0 + kink_tol, -1.0, 0.0)
        hi = np.where(m < 1.0 - kink_tol, -1.0, 0.0)
        return lo, hi

    def subgradient_residual(self, m, d):
        """``(−d)(m − 1)₊ + (1 + d)(1 − m)₊`` plus the distance of d outside [−1, 0]: d must
        be −1 where m < 1 and 0 where m > 1, weighted by how far m is from the kink."""
        m, d = np.asarray(m, dtype=float), np.asarray(d, dtype=float)
        slack = -d * np.maximum(0.0, m - 1.0) + (1.0 + d) * np.maximum(0.0, 1.0 - m)
        return slack + np.maximum(0.0, d) + np.maximum(0.0, -1.0 - d)


class HuberHinge(MarginLoss):
    """Huber-smoothed hinge with width δ > 0.

    φ(m) = 0 for m ≥ 1, (1 − m)²/(2δ) for 1 − δ < m < 1, and 1 − m − δ/2 for m ≤ 1 − δ.
    """

    name = "huber"
    aliases = ("huber_hinge",)
    program_class = "QP"
    capabilities = _SMOOTH | {"conjugate", "quadratic_conjugate", "prox"}

    def __init__(self, delta: float = 0.5):
        self.delta = check_positive(delta, "delta")

    def prox(self, u, s):
        """``u + s`` if ``u ≤ 1 − δ − s``; ``(δu + s)/(δ + s)`` if ``u < 1``; u otherwise."""
        d = self.delta
        with np.errstate(divide="ignore", invalid="ignore"):
            mid = (d * u + s) / (d + s)
        return np.where(u <= 1.0 - d - s, u + s, np.where(u < 1.0, mid, u))

    @property
    def conjugate_form(self) -> tuple[float, float, float]:
        return (self.delta, 0.0, 1.0)

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
    """φ(m) = log(1 + exp(−m)).

    Its conjugate is the negative binary entropy: with g = −s = −φ'(m) = σ(−m) ∈ [0, 1],
    ``φ*(−g) = g log g + (1 − g) log(1 − g)`` (0 log 0 = 0) and +∞ outside [0, 1]. It is not
    quadratic, so the loss offers ``conjugate`` but not ``quadratic_conjugate``; NPKL's dual
    reference then is an exponential-cone SDP (docs/design.md §4.4).
    """

    name = "logistic"
    program_class = "exponential-cone"
    unique_decision = True
    capabilities = _SMOOTH | {"conjugate"}

    def value(self, m):
        return np.logaddexp(0.0, -np.asarray(m, dtype=float))

    def cvxpy(self, m):
        return cp.logistic(-m)

    def derivative(self, m):
        return -_sigmoid(-np.asarray(m, dtype=float))

    def second_derivative(self, m):
        s = _sigmoid(np.asarray(m, dtype=float))
        return s * (1.0 - s)

    def conjugate(self, s):
        """``φ*(s) = g log g + (1 − g) log(1 − g)`` with ``g = −s`` on ``−1 ≤ s ≤ 0`` (the
        supremum of ``s·m − φ(m)`` is attained at ``m = log((1 − g)/g)``, and at infinity,
        with value 0, on the ends), +inf elsewhere."""
        g = -np.asarray(s, dtype=float)
        inside = (g >= 0.0) & (g <= 1.0)
        gc = np.clip(g, 0.0, 1.0)
        return np.where(inside, xlogy(gc, gc) + xlogy(1.0 - gc, 1.0 - gc), np.inf)

    def dual_cvxpy(self, y, C):
        """``Σ_p −C φ*(−y_p/C) = C Σ_p [entr(y_p/C) + entr(1 − y_p/C)]`` (concave,
        ``entr(x) = −x log x``) on its domain ``0 ≤ y ≤ C``."""
        u = y / C
        return C * cp.sum(cp.entr(u) + cp.entr(1 - u)), [y >= 0, y <= C]


def _sigmoid(t: np.ndarray) -> np.ndarray:
    return np.exp(-np.logaddexp(0.0, -t))


#: The built-in losses by canonical name.
MARGIN_LOSSES: dict[str, type[MarginLoss]] = {
    cls.name: cls for cls in (SquaredHinge, Square, Hinge, HuberHinge, Logistic)
}
#: Every accepted name (canonical names and aliases) → its loss class.
LOSS_NAMES: dict[str, type[MarginLoss]] = {
    **MARGIN_LOSSES,
    **{alias: cls for cls in MARGIN_LOSSES.values() for alias in cls.aliases},
}


def get_margin_loss(loss: str | MarginLoss | type[MarginLoss]) -> MarginLoss:
    """The loss object for a registered name or alias, a MarginLoss class, or an instance
    (returned as is); a clear error otherwise."""
    if isinstance(loss, MarginLoss):
        return check_loss_derivatives(loss)
    if isinstance(loss, type) and issubclass(loss, MarginLoss):
        return check_loss_derivatives(loss())
    if isinstance(loss, str) and loss in LOSS_NAMES:
        return LOSS_NAMES[loss]()
    raise InvalidInputError(
        f"loss must be one of {sorted(LOSS_NAMES)} or a MarginLoss instance, got {loss!r}."
    )


#: Margins where a user loss's derivatives are compared with finite differences of its value:
#: spread over [−3, 3], away from 0 and from the hinge kink at m = 1.
DERIVATIVE_CHECK_MARGINS = np.array([-2.9, -2.1, -1.3, -0.6, 0.3, 0.55, 1.45, 2.2, 2.95])
#: Relative finite-difference step, relative tolerance and the floor of the tolerance (relative
#: to the largest |φ| at the check margins); a derivative off by a factor agrees with neither.
DERIVATIVE_CHECK_STEP = 1e-4
DERIVATIVE_CHECK_RTOL = 1e-3
DERIVATIVE_CHECK_FLOOR = 1e-6


def check_loss_derivatives(loss: MarginLoss) -> MarginLoss:
    """Check a user loss's ``derivative`` (and ``second_derivative``, when implemented) against
    central finite differences of its ``value``; returns ``loss`` or raises InvalidInputError
    naming the loss and the method.

    With ``h = DERIVATIVE_CHECK_STEP·max(1, |m|)`` at each check margin m farther than 2h from
    every declared kink::

        φ'(m)  ≈ (φ(m + h) − φ(m − h)) / 2h,   φ''(m) ≈ (φ(m + h) − 2φ(m) + φ(m − h)) / h²,

    and a derivative ``d`` passes when ``|d − fd| ≤ rtol·max(|d|, |fd|) + floor·max(1, max|φ|)``.
    The built-in losses are not checked (their tests compare them with closed forms).
    """
    if type(loss) in MARGIN_LOSSES.values():
        return loss
    offered = loss.capabilities
    methods = [name for name in ("derivative", "second_derivative") if name in offered]
    if not methods:
        return loss
    m = DERIVATIVE_CHECK_MARGINS
    h = DERIVATIVE_CHECK_STEP * np.maximum(1.0, np.abs(m))
    kinks = np.asarray(getattr(loss, "kinks", ()), dtype=float).reshape(-1)
    if kinks.size:
        m_far = np.min(np.abs(m[:, None] - kinks[None, :]), axis=1) > 2.0 * h
        m, h = m[m_far], h[m_far]
    if m.size == 0:
        return loss
    with np.errstate(all="ignore"):
        plus, mid, minus = (np.asarray(loss.value(v), dtype=float) for v in (m + h, m, m - h))
        estimates = {"derivative": (plus - minus) / (2.0 * h),
                     "second_derivative": (plus - 2.0 * mid + minus) / (h * h)}
        floor = DERIVATIVE_CHECK_FLOOR * max(1.0, float(np.nanmax(np.abs(mid), initial=0.0)))
        for name in methods:
            claimed = np.asarray(getattr(loss, name)(m.copy()), dtype=float)
            fd = estimates[name]
            usable = np.isfinite(fd)
            bad = usable & ~(np.abs(claimed - fd)
                             <= DERIVATIVE_CHECK_RTOL * np.maximum(np.abs(claimed), np.abs(fd))
                             + floor)
            if np.any(bad):
                i = int(np.argmax(bad))
                raise InvalidInputError(
                    f"loss {loss!r} ({type(loss).__name__}.{name}) disagrees with finite "
                    f"differences of its value: at m = {m[i]:g} it returns {claimed[i]:.6g}, "
                    f"the central difference of value() gives {fd[i]:.6g}. Fix {name}(), or "
                    f"declare the margins where the loss has a kink in its 'kinks' attribute.")
    return loss
