r"""The contract of a model's terms and constraints (docs/design.md §6).

A :class:`Term` is ``h(z)`` with ``z = A(x)`` an affine expression of the variables (its
``argument``); its weight is part of ``h``. It must give its ``value`` and its CVXPY
expression; every other method it implements is a capability that unlocks solvers, read from
the methods it overrides (as a :class:`~ssl_opt.components.losses.MarginLoss` does):

==================  ====================================  ====================================
capability          method                                unlocks
==================  ====================================  ====================================
``gradient``        ``gradient(z)`` = ∇h(z)               L-BFGS, proximal gradient, PDHG
``hessp``           ``hessp(z, v)`` = ∇²h(z)·v            Newton-CG
``prox``            ``prox(v, t)`` = argmin t·h + ½‖·−v‖²  proximal gradient (on a variable),
                                                          PDHG (on any argument)
``subdifferential`` ``project_subgradient(z, u, tol)``    the certificate of a non-smooth term
``mirror``          ``mirror_step(z, g, t)``              Bregman (entropy) proximal gradient
``bounds``          ``bounds()`` = (lo, hi) (constraints)  L-BFGS-B (a box on a variable)
``hessian``         ``hessian(z)`` = ∇²h(z) assembled       assembled Newton and IRLS
                    (a diagonal, sparse or dense matrix)  (``irls-newton``)
``smoothing``       ``smoothed(z, δ)``: value, gradient   smoothing Newton (``irls-newton``)
                    and Hessian of a smoothing ``h_δ``    on a non-smooth norm term
                    (→ h as δ → 0)
==================  ====================================  ====================================

A constraint that gives ``distance_hessian(v)`` = ∇²(½dist²(v, C)) = I − ∂P_C(v) offers the
capability of that name: the augmented Lagrangian with Newton steps (``alm-newton``).

A smooth term's subdifferential is ``{∇h(z)}``, so ``gradient`` gives ``subdifferential``.
A :class:`Constraint` is the indicator of a convex set on its argument: its ``value`` is 0, its
CVXPY form is a list of constraints, ``feasibility(z)`` measures the violation, ``prox`` is the
projection (any ``t``) and ``project_subgradient`` projects onto the normal cone.

User components are checked before they are trusted (:func:`check_term`): gradients and
Hessian products against central finite differences of ``value``, a prox against its
optimality condition ``(v − p)/t ∈ ∂h(p)`` and against a sampled comparison of
``t·h(p) + ½‖p − v‖²`` with nearby points.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import scipy.sparse as sp

from ssl_opt.exceptions import InvalidInputError
from ssl_opt.modeling.expressions import Affine, as_expression
from ssl_opt.optional import cvxpy as cp

#: Capability → the methods a term must implement to offer it.
TERM_METHODS: dict[str, tuple[str, ...]] = {
    "value": ("value",),
    "cvxpy": ("cvxpy",),
    "gradient": ("gradient",),
    "hessp": ("hessp",),
    "prox": ("prox",),
    "subdifferential": ("project_subgradient",),
    "mirror": ("mirror_step",),
    "bounds": ("bounds",),
    "hessian": ("hessian",),
    "smoothing": ("smoothed",),
    "norm_structure": ("norm_structure",),
    "distance_hessian": ("distance_hessian",),
}
#: Capability → the flag (class or instance attribute) a term sets to offer it.
TERM_FLAGS: dict[str, str] = {
    "constant_hessian": "constant_hessian",
    "elementwise_prox": "elementwise_prox",
    "complementarity_budget": "measures_complementarity",
}

#: Program classes, from the simplest; a model's class is the largest of its terms'.
PROGRAM_CLASSES = ("LP", "QP", "SOCP", "exponential-cone", "SDP", "convex")


class Term:
    """``h(z)``, ``z`` the term's affine ``argument``; subclasses set ``name`` and implement
    ``value`` and ``cvxpy`` at least."""

    name: ClassVar[str] = "term"
    #: The reference's program class with this term (see :data:`PROGRAM_CLASSES`).
    program_class: ClassVar[str] = "convex"
    #: Convex in its argument (a model with a non-convex term has no certified optimum).
    convex: ClassVar[bool] = True
    #: ``prox(v, t)`` accepts ``t`` as an array of ``z``'s shape (per-entry steps), not only
    #: a scalar.
    elementwise_prox: ClassVar[bool] = False
    #: ``hessian(z)`` does not depend on ``z`` (a quadratic term): assembled once per solve.
    constant_hessian: ClassVar[bool] = False
    #: ``project_subgradient(z, u, tol, budget)`` takes a complementarity budget: entries near
    #: their bound may carry a multiplier ``w`` with ``|w z| ≤ budget`` (constraints).
    measures_complementarity: ClassVar[bool] = False

    def __init__(self, argument: Affine, weight: float = 1.0):
        self.argument = as_expression(argument, f"the argument of {type(self).__name__}")
        given = weight
        try:
            weight = float(weight) if np.ndim(weight) == 0 else np.nan
        except (TypeError, ValueError):
            weight = np.nan
        if not np.isfinite(weight) or weight < 0:
            raise InvalidInputError(f"weight of {type(self).__name__} must be a finite number "
                                    f"≥ 0, got {given!r}.")
        self.weight = weight

    # -- capabilities
    @property
    def capabilities(self) -> frozenset[str]:
        """What the term offers, read from the methods its class overrides."""
        cls = type(self)
        base = Constraint if isinstance(self, Constraint) else Term

        def implements(method: str) -> bool:
            found = getattr(cls, method, None)
            return found is not None and found is not getattr(base, method, None)

        offered = {cap for cap, methods in TERM_METHODS.items()
                   if all(implements(m) for m in methods)}
        offered |= {cap for cap, flag in TERM_FLAGS.items() if getattr(self, flag, False)}
        if isinstance(self, Constraint):
            offered |= {"value"}
        if "gradient" in offered:
            offered.add("subdifferential")
        return frozenset(offered)

    @property
    def smooth(self) -> bool:
        return "gradient" in self.capabilities

    @property
    def shape(self) -> tuple[int, ...]:
        return self.argument.shape

    # -- oracles (h of the argument value z, weight included)
    def value(self, z: np.ndarray) -> float:
        raise NotImplementedError

    def cvxpy(self, z: cp.Expression) -> cp.Expression:
        raise NotImplementedError

    def gradient(self, z: np.ndarray) -> np.ndarray:
        raise NotImplementedError(f"{self!r} has no gradient")

    def hessp(self, z: np.ndarray, v: np.ndarray) -> np.ndarray:
        raise NotImplementedError(f"{self!r} has no Hessian-vector product")

    def prox(self, v: np.ndarray, t) -> np.ndarray:
        raise NotImplementedError(f"{self!r} has no proximal operator")

    def hessian(self, z: np.ndarray):
        """``∇²h(z)`` in the C-order flattening of ``z``: a 1-D array (the diagonal), a scipy
        sparse matrix, a dense 2-D array or a :class:`LowRank` ``U diag(s) Uᵀ`` (generalized
        at kinks, as ``hessp``)."""
        raise NotImplementedError(f"{self!r} has no assembled Hessian")

    def smoothed(self, z: np.ndarray, delta: float, hessian: bool = True
                 ) -> tuple[float, np.ndarray, object]:
        """``(h_δ(z), ∇h_δ(z), ∇²h_δ(z))`` of a convex smoothing ``h_δ`` of a non-smooth term
        (``h_δ → h`` as ``δ → 0``, with ``∇h_δ(z)`` a subgradient of h up to O(√δ)); the
        Hessian in :meth:`hessian`'s formats (None when ``hessian`` is False)."""
        raise NotImplementedError(f"{self!r} has no smoothing")

    def project_subgradient(self, z: np.ndarray, u: np.ndarray, tol: float) -> np.ndarray:
        """The point of ``∂h(z')`` nearest ``u``, over the ``z'`` within ``tol`` of ``z``
        (entries within ``tol`` of a kink count as at the kink). Smooth terms: ∇h(z)."""
        return self.gradient(z)

    def mirror_step(self, z: np.ndarray, g: np.ndarray, t: float) -> np.ndarray:
        """``argmin_p ⟨g, p⟩ + h(p) + KL(p, z)/t`` (entropy-type terms on the simplex)."""
        raise NotImplementedError(f"{self!r} has no mirror step")

    def prox_seconds(self) -> float:
        """Predicted seconds of one ``prox`` beyond the elementwise work on the argument (an
        eigendecomposition for :class:`~ssl_opt.modeling.terms.PSD`), for the cost models of
        the solvers that apply it every iteration."""
        return 0.0

    def kink_scale(self, z: np.ndarray) -> float:
        """Scale of the argument entries that set the kink tolerance (``max|z|`` by
        default)."""
        return float(np.max(np.abs(z))) if np.size(z) else 0.0

    # -- lowering hints
    def describe(self) -> str:
        return f"{self.name}(weight={self.weight:g})"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.describe()} on {self.argument!r}>"


class Constraint(Term):
    """``ι_C(z)``: 0 on the convex set C, +∞ outside. Subclasses implement ``cvxpy``
    (a list of CVXPY constraints), ``feasibility`` and, where they can, ``prox`` (the
    projection onto C) and ``project_subgradient`` (onto the normal cone)."""

    name = "constraint"
    program_class = "LP"

    def __init__(self, argument: Affine):
        super().__init__(argument, 1.0)

    def value(self, z: np.ndarray) -> float:
        return 0.0

    def cvxpy(self, z: cp.Expression) -> list:  # type: ignore[override]
        raise NotImplementedError

    def feasibility(self, z: np.ndarray) -> float:
        """The violation of ``z ∈ C``, relative to ``max(1, scale of z)``; 0 when feasible."""
        raise NotImplementedError

    def project_subgradient(self, z: np.ndarray, u: np.ndarray, tol: float) -> np.ndarray:
        """The point of the normal cone ``N_C(z)`` nearest ``u`` (active within ``tol``)."""
        raise NotImplementedError(f"{self!r} has no normal-cone projection")

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """``(lo, hi)`` arrays of the argument's shape when C is a box (±inf allowed)."""
        raise NotImplementedError(f"{self!r} is not a box")

    def distance_hessian(self, v: np.ndarray):
        """``∇²(½ dist²(v, C)) = I − ∂P_C(v)`` (a generalized Jacobian of the projection where
        it has kinks), in :meth:`Term.hessian`'s formats: the curvature of the augmented
        Lagrangian's penalty ``ρ/2·dist²(z + λ/ρ, C)``."""
        raise NotImplementedError(f"{self!r} has no distance Hessian")

    def describe(self) -> str:
        return self.name


class LowRank:
    """A Hessian ``U diag(s) Uᵀ`` kept factored (``U``: size × r, ``s``: r): a linear
    equality's penalty curvature, which as a dense matrix would cost size² per step."""

    def __init__(self, U: np.ndarray, s: np.ndarray):
        self.U = np.asarray(U, dtype=np.float64).reshape(np.shape(U)[0], -1)
        self.s = np.asarray(s, dtype=np.float64).reshape(-1)

    def __matmul__(self, v: np.ndarray) -> np.ndarray:
        return self.U @ (self.s * (self.U.T @ np.ravel(v)))

    def __mul__(self, c: float) -> LowRank:
        return LowRank(self.U, c * self.s)

    __rmul__ = __mul__

    def toarray(self) -> np.ndarray:
        return (self.U * self.s) @ self.U.T


def apply_hessian(H, v: np.ndarray) -> np.ndarray:
    """``H·v`` for a Hessian in :meth:`Term.hessian`'s formats (diagonal, sparse, dense, low
    rank)."""
    if isinstance(H, LowRank):
        return H @ v
    if sp.issparse(H) or np.ndim(H) == 2:
        return np.ravel(H @ v)
    return np.asarray(H, dtype=np.float64) * v


def check_term(term: Term, z: np.ndarray, rng: np.random.Generator | None = None,
               rtol: float = 1e-4) -> None:
    """Check a term's oracles at the argument value ``z`` numerically; raise
    :class:`~ssl_opt.exceptions.InvalidInputError` naming the oracle that is wrong.

    * gradient: ``⟨∇h(z), d⟩`` against the central difference ``(h(z+εd) − h(z−εd))/2ε``;
    * Hessian product and assembled Hessian: ``∇²h(z)d`` against ``(∇h(z+εd) −
      ∇h(z−εd))/2ε``;
    * smoothing: its gradient and Hessian the same way, and ``h_δ(z) → h(z)`` as δ → 0;
    * prox: at ``p = prox(v, t)``, ``t·h(p) + ½‖p − v‖²`` is not above its value at sampled
      nearby points of C (for constraints: ``p ∈ C`` and no sampled feasible point closer to
      v).
    """
    rng = np.random.default_rng(0) if rng is None else rng
    z = np.asarray(z, dtype=np.float64)
    scale = max(1.0, float(np.max(np.abs(z))) if z.size else 1.0)
    caps = term.capabilities
    if not isinstance(term, Constraint) and np.isnan(term.value(z)):
        raise InvalidInputError(f"the value of {term!r} is NaN at its argument value; fix "
                                "value().")
    if "gradient" in caps:
        for _ in range(2):
            d = rng.standard_normal(z.shape)
            eps = 1e-6 * scale
            fd = (term.value(z + eps * d) - term.value(z - eps * d)) / (2 * eps)
            an = float(np.sum(term.gradient(z) * d))
            if abs(fd - an) > rtol * max(1.0, abs(fd), abs(an)):
                raise InvalidInputError(
                    f"the gradient of {term!r} disagrees with finite differences of its value "
                    f"(directional derivative {an:.6g} vs {fd:.6g}); fix gradient().")
            if "hessp" in caps:
                fd_h = (term.gradient(z + eps * d) - term.gradient(z - eps * d)) / (2 * eps)
                an_h = term.hessp(z, d)
                err = float(np.max(np.abs(fd_h - an_h))) if z.size else 0.0
                if err > rtol * max(1.0, float(np.max(np.abs(fd_h)))):
                    raise InvalidInputError(
                        f"the Hessian product of {term!r} disagrees with finite differences "
                        f"of its gradient (max error {err:.3g}); fix hessp().")
    if "hessian" in caps and "gradient" in caps:
        d = rng.standard_normal(z.shape)
        eps = 1e-6 * scale
        fd_h = np.ravel(term.gradient(z + eps * d) - term.gradient(z - eps * d)) / (2 * eps)
        an_h = apply_hessian(term.hessian(z), np.ravel(d))
        err = float(np.max(np.abs(fd_h - an_h))) if z.size else 0.0
        if err > rtol * max(1.0, float(np.max(np.abs(fd_h)))):
            raise InvalidInputError(
                f"the assembled Hessian of {term!r} disagrees with finite differences of its "
                f"gradient (max error {err:.3g}); fix hessian().")
    if "smoothing" in caps:
        delta = (1e-2 * scale) ** 2
        d = rng.standard_normal(z.shape)
        eps = 1e-6 * scale
        value, grad, hess = term.smoothed(z, delta)
        fd = (term.smoothed(z + eps * d, delta)[0] - term.smoothed(z - eps * d, delta)[0]) / (
            2 * eps)
        an = float(np.sum(grad * d))
        fd_h = np.ravel(term.smoothed(z + eps * d, delta)[1]
                        - term.smoothed(z - eps * d, delta)[1]) / (2 * eps)
        err_h = float(np.max(np.abs(fd_h - apply_hessian(hess, np.ravel(d))))) if z.size else 0
        if abs(fd - an) > rtol * max(1.0, abs(fd), abs(an)) or err_h > rtol * max(
                1.0, float(np.max(np.abs(fd_h), initial=0.0))):
            raise InvalidInputError(
                f"the smoothing of {term!r} has a gradient or Hessian that disagrees with "
                "finite differences of its value; fix smoothed().")
        tiny = term.smoothed(z, 1e-16 * scale**2, hessian=False)[0]
        if abs(tiny - term.value(z)) > 1e-6 * max(1.0, abs(term.value(z))):
            raise InvalidInputError(
                f"the smoothing of {term!r} does not tend to its value as δ → 0 "
                f"({tiny:.6g} at δ ≈ 0 vs {term.value(z):.6g}); fix smoothed().")
    if "prox" in caps:
        v = z + rng.standard_normal(z.shape) * scale
        t = 0.7
        p = term.prox(v, t)
        if "subdifferential" in caps:
            # Optimality of the prox: (v − p)/t ∈ ∂h(p) (the normal cone for a constraint).
            u = (v - p) / t
            nearest = term.project_subgradient(p, u, 1e-9 * scale)
            err = float(np.max(np.abs(nearest - u))) if u.size else 0.0
            if err > 1e-6 * max(1.0, float(np.max(np.abs(u))) if u.size else 1.0):
                raise InvalidInputError(
                    f"the prox of {term!r} violates its optimality condition (v − p)/t ∈ ∂h(p) "
                    f"by {err:.3g}; fix prox() (or project_subgradient()).")
        if isinstance(term, Constraint):
            if term.feasibility(p) > 1e-8:
                raise InvalidInputError(f"the projection of {term!r} returns an infeasible "
                                        "point; fix prox().")
            base = 0.5 * float(np.sum((p - v) ** 2))
            for _ in range(20):
                q = term.prox(p + 1e-3 * scale * rng.standard_normal(z.shape), t)
                if 0.5 * float(np.sum((q - v) ** 2)) < base - 1e-9 * max(1.0, base):
                    raise InvalidInputError(f"the projection of {term!r} is not the nearest "
                                            "point of its set; fix prox().")
            return
        base = t * term.value(p) + 0.5 * float(np.sum((p - v) ** 2))
        for _ in range(20):
            q = p + 1e-3 * scale * rng.standard_normal(z.shape)
            other = t * term.value(q) + 0.5 * float(np.sum((q - v) ** 2))
            if other < base - 1e-9 * max(1.0, abs(base)):
                raise InvalidInputError(
                    f"the prox of {term!r} is not a minimizer of t·h(p) + ½‖p − v‖² (a nearby "
                    f"point is lower by {base - other:.3g}); fix prox().")


def is_builtin_term(term: Term) -> bool:
    """The term's class is one of ssl_opt's own (tested), not a user's."""
    return type(term).__module__.startswith("ssl_opt.")


def user_oracle_errors(terms, values: dict, seed: int = 0) -> list[str]:
    """:func:`check_term` on every user (non built-in) term of ``terms`` at its argument value
    at the variable values ``values``, moved by a small random jitter (so that a kink of a
    piecewise-quadratic term does not sit under the finite differences): one message per term
    with a wrong oracle."""
    rng = np.random.default_rng(seed)
    errors = []
    for t in terms:
        if is_builtin_term(t):
            continue
        z = np.asarray(t.argument.value(values), dtype=np.float64)
        scale = max(1.0, float(np.max(np.abs(z), initial=0.0)))
        jittered = z + 1e-3 * scale * rng.standard_normal(z.shape)
        with np.errstate(all="ignore"):
            usable = np.isfinite(t.value(jittered))
        try:
            check_term(t, jittered if usable else z, rng=rng)
        except InvalidInputError as exc:
            errors.append(str(exc))
    return errors
