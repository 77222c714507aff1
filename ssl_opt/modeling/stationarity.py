r"""The certificate of a model, from its terms alone (docs/design.md §6).

At ``x``, with ``z_k = A_k x`` the argument of term (or constraint) ``k``::

    r(u) = Σ_{smooth k} A_kᵀ ∇h_k(z_k) + Σ_{other k} A_kᵀ u_k,    u_k ∈ ∂h_k(z_k)  (N_C for
                                                                   a constraint)
    stationarity = min_u ‖r(u)‖_∞ / s,   s = max(1, max_k ‖A_kᵀ ∇h_k‖_∞, max_k ‖A_kᵀ u_k‖_∞)

``x`` is optimal iff the minimum is 0 (and x is feasible). The minimum over the ``u_k`` — each
in a convex set the term projects onto (``Term.project_subgradient``; entries within
``kink_tol·max(1, scale)`` of a kink count as at the kink; a constraint that
``measures_complementarity`` — ``NonNegative``, ``SimplexRows`` — lets an entry farther from
its bound, up to ``√budget``, carry a multiplier ``w`` with ``|w z| ≤ budget =
kink_tol·max(1, max_k ‖A_kᵀ ∇h_k‖_∞)``, the ε-complementarity of a KKT point, instead of none
when the residual with complementarity imposed exceeds ``kink_tol`` (the smaller is
reported; ``complementarity="imposed"`` skips it): an interior-point solution whose
degenerate entries have both ``z`` and ``w`` small, e.g. ``z = 1.4e-5``, ``w = 8e-5``, is
stationary as the paper's KKT conditions judge it) — is taken by FISTA with adaptive restart on
``½‖r(u)‖²``, step ``1/‖A‖²`` (power iteration), started from the multipliers a
solver attached to its solution (``Solution.info["multipliers"]``, one array per non-smooth
term and constraint in model order) or from the projection of 0; ``max_iter = 0`` evaluates
the residual at (the projection of) those multipliers only, the cheap upper bound a solver
checks before paying for the minimization. Any feasible ``u`` bounds the
minimum from above, so an early stop never understates the residual.

With one :class:`~ssl_opt.modeling.terms.PSD` constraint on a whole variable, the conic reading
of the same conditions (``G ⪰ 0``, ``⟨G, Z⟩ = 0`` at the other terms' multipliers,
:func:`~ssl_opt.modeling.conic.psd_stationarity`) is computed too and the smaller reported:
the normal cone above depends on which eigenvalues of ``Z`` count as 0.

A non-smooth term that cannot project onto its subdifferential (a user term with only a value
and a CVXPY expression) leaves stationarity unmeasurable: it is not reported, and the
certificate rests on the gap to the reference and on feasibility.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse.linalg as spla

from ssl_opt.modeling.conic import psd_stationarity
from ssl_opt.modeling.terms.psd import PSD


def stationarity(model, x, kink_tol: float = 1e-6, max_iter: int = 2000, tol: float = 1e-10,
                 verbose: bool = False, complementarity: str = "measured",
                 target: float = 0.0, cone: str = "conic") -> dict[str, float]:
    """The certificate of the module docstring; ``target`` > 0 (a solver's check, not
    ``kkt``) stops the minimization once the residual, as reported (relative to the largest
    of the terms' parts at the multipliers reached), is below ``target``."""
    values = model.unpack(x)
    out: dict[str, float] = {}
    if model.constraints:
        out["feasibility"] = max(
            c.feasibility(c.argument.value(values)) for c in model.constraints)
    free = [t for t in model.nonsmooth_terms + model.constraints]
    if any("subdifferential" not in t.capabilities for t in free):
        return out
    fixed = model.pack(model.smooth_gradient(values))
    zs = [t.argument.value(values) for t in free]
    tols = [kink_tol * max(1.0, t.kink_scale(z)) for t, z in zip(free, zs, strict=True)]
    start = _start(x, model, free, zs, tols)
    fixed_scale = _smooth_scale(model, values)
    if not free:
        out["stationarity"] = float(np.max(np.abs(fixed), initial=0.0)) / max(1.0, fixed_scale)
        return out

    def pull(us) -> np.ndarray:
        total = np.zeros(model.size)
        for t, u in zip(free, us, strict=True):
            total += model.pack(t.argument.adjoint(u))
        return total

    def push(r) -> list[np.ndarray]:
        vals = model.unpack_flat(r)
        return [t.argument.value(vals) - _offset(t) for t in free]

    def projector(budget: float):
        def project(us) -> list[np.ndarray]:
            return [t.project_subgradient(z, u, tau, budget)
                    if budget > 0.0 and t.measures_complementarity
                    else t.project_subgradient(z, u, tau)
                    for t, z, u, tau in zip(free, zs, us, tols, strict=True)]
        return project

    # The step 1/‖A‖² of the minimization, shared by both passes (power iteration, once).
    step = (0.0 if max_iter == 0 else
            1.0 / max(_norm_squared(pull, push, [np.zeros(t.shape) for t in free]), 1e-300))
    def reported_scale(us) -> float:
        """The scale :func:`_finish` divides by at the multipliers ``us``."""
        return _reported_scale(model, free, us, fixed_scale)

    maps = (fixed, pull, push, step, fixed_scale, max_iter, tol, verbose, target,
            reported_scale)
    best_u, best = _minimize(projector(0.0), start, *maps)
    result = _finish(dict(out), model, free, best_u, best, fixed_scale)
    if (complementarity == "measured" and result["stationarity"] > kink_tol
            and any(t.measures_complementarity for t in free)):
        budget = kink_tol * max(1.0, fixed_scale)
        measured_u, best = _minimize(projector(budget), best_u, *maps)
        measured = _finish(dict(out), model, free, measured_u, best, fixed_scale)
        if measured["stationarity"] < result["stationarity"]:
            result, best_u = measured, measured_u
    cones = [k for k, t in enumerate(free) if isinstance(t, PSD)]
    if cone == "conic" and len(cones) == 1 and result["stationarity"] > 0.0:
        # The conic reading (G ⪰ 0, ⟨G, Z⟩ = 0) at the other terms' multipliers; the smaller
        # of the two is reported, as with the complementarity budget above.
        others = [np.zeros(u.shape) if k == cones[0] else u for k, u in enumerate(best_u)]
        conic = psd_stationarity(model, free[cones[0]],
                                 model.unpack_flat(fixed + pull(others)), values,
                                 _reported_scale(model, free, others, fixed_scale))
        if conic is not None and conic < result["stationarity"]:
            result["stationarity"] = conic
    return result


def _minimize(project, start, fixed, pull, push, step, fixed_scale, max_iter, tol, verbose,
              target=0.0, reported_scale=None):
    """``(u, ‖r(u)‖∞)``: the best multipliers found from ``start`` (module docstring). With
    ``target`` > 0 it stops once ``‖r(u)‖∞ ≤ target·reported_scale(u)``, the residual as
    :func:`_finish` reports it; the scale is read only near the goal (below ``target`` times
    twice the start's scale)."""
    u = project(start)
    best_u, best = u, _sup(fixed + pull(u))
    near = 2.0 * target * (reported_scale(u) if target > 0 else 1.0)

    def reached(value, us) -> bool:
        return target > 0 and value <= near and value <= target * reported_scale(us)

    if max_iter == 0 or reached(best, best_u):  # at the given multipliers: an upper bound
        return best_u, best
    y, t_k, previous = u, 1.0, np.inf
    for it in range(max_iter):
        r = fixed + pull(y)
        grad = push(r)
        new = project([a - step * g for a, g in zip(y, grad, strict=True)])
        residual = fixed + pull(new)
        value = 0.5 * float(residual @ residual)
        sup = _sup(residual)
        if sup < best:
            best, best_u = sup, new
        if verbose and it % 100 == 0:
            print(f"certificate it {it}: ‖r‖∞ = {sup:.3e}")
        if value > previous:  # adaptive restart (O'Donoghue & Candès 2015)
            y, t_k, previous = u, 1.0, np.inf
            continue
        t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t_k * t_k))
        y = [a + ((t_k - 1.0) / t_next) * (a - b) for a, b in zip(new, u, strict=True)]
        u, t_k = new, t_next
        if (abs(previous - value) <= tol * max(value, 1e-300)
                or (sup == best and reached(best, best_u))
                or sup <= 1e-15 * max(1.0, fixed_scale)):
            break
        previous = value
    if best > 1e-12 * max(1.0, fixed_scale) and not reached(best, best_u):
        best_u, best = _refine(best_u, best, fixed, pull, push, project)
    return best_u, best


def _reported_scale(model, free, us, fixed_scale) -> float:
    return max(1.0, fixed_scale, max(_sup(model.pack(t.argument.adjoint(a)))
                                     for t, a in zip(free, us, strict=True)))


def _finish(out, model, free, best_u, best, fixed_scale) -> dict[str, float]:
    out["stationarity"] = best / _reported_scale(model, free, best_u, fixed_scale)
    return out


def _refine(u, best, fixed, pull, push, project, rounds: int = 8):
    """Active-set refinement of the FISTA point: least squares by LSQR over the multiplier
    entries the projection lets move both ways (those strictly inside their sets), then a
    projected, backtracked step kept only when it lowers ``‖r‖∞``. Krylov steps resolve the
    ill-conditioned directions (a kernel K inside the maps) that projected gradient crawls
    along; every accepted point is still feasible, so the residual stays an upper bound."""
    shapes = [a.shape for a in u]
    bounds = np.cumsum([0] + [a.size for a in u])

    def flat(us):
        return np.concatenate([np.ravel(a) for a in us])

    def split(v):
        return [v[a:b].reshape(shape) for a, b, shape in zip(bounds[:-1], bounds[1:], shapes,
                                                              strict=True)]

    rng = np.random.default_rng(1)
    for _ in range(rounds):
        base = flat(u)
        probe = 1e-7 * max(1.0, _sup(base)) * rng.choice([-1.0, 1.0], base.size)
        moved = ((np.abs(flat(project(split(base + probe))) - base) > 0)
                 & (np.abs(flat(project(split(base - probe))) - base) > 0))
        if not moved.any():
            break
        index = np.flatnonzero(moved)
        residual = fixed + pull(u)

        def scatter(d, index=index, size=base.size):
            full = np.zeros(size)
            full[index] = d
            return full

        operator = spla.LinearOperator(
            (residual.size, index.size), dtype=np.float64,
            matvec=lambda d: pull(split(scatter(d))),
            rmatvec=lambda g, index=index: flat(push(g))[index])
        step = spla.lsqr(operator, -residual, atol=1e-14, btol=1e-14, iter_lim=300)[0]
        for fraction in (1.0, 0.5, 0.25, 0.1):
            candidate = project(split(base + fraction * scatter(step)))
            value = _sup(fixed + pull(candidate))
            if value < best:
                u, best = candidate, value
                break
        else:
            break
    return u, best


def _offset(term) -> np.ndarray | float:
    return 0.0 if term.argument.offset is None else term.argument.offset


def _sup(v: np.ndarray) -> float:
    return float(np.max(np.abs(v), initial=0.0))


def _smooth_scale(model, values) -> float:
    scale = 0.0
    for t in model.smooth_terms:
        g = t.gradient(t.argument.value(values))
        scale = max(scale, _sup(model.pack(t.argument.adjoint(g))))
    return scale


def _start(x, model, free, zs, tols) -> list[np.ndarray]:
    """The solver's multipliers when ``x`` is a Solution carrying them, else zeros."""
    info = getattr(x, "info", None) or {}
    given = info.get("multipliers")
    if isinstance(given, (list, tuple)) and len(given) == len(free):
        out = []
        for t, u in zip(free, given, strict=True):
            u = np.asarray(u, dtype=np.float64)
            out.append(u if u.shape == t.shape and np.all(np.isfinite(u))
                       else np.zeros(t.shape))
        return out
    return [np.zeros(t.shape) for t in free]


def _norm_squared(pull, push, zeros, iters: int = 30) -> float:
    """``‖A‖²`` of the stacked map ``u ↦ Σ A_kᵀ u_k`` by power iteration on ``A Aᵀ``."""
    rng = np.random.default_rng(0)
    v = [rng.standard_normal(z.shape) for z in zeros]
    est = 0.0
    for _ in range(iters):
        norm = np.sqrt(sum(float(np.sum(a * a)) for a in v))
        if norm == 0:
            return 0.0
        v = [a / norm for a in v]
        w = push(pull(v))
        new = np.sqrt(sum(float(np.sum(a * a)) for a in w))
        if abs(new - est) <= 1e-3 * new:
            est = new
            break
        est, v = new, w
    return 1.01 * est
