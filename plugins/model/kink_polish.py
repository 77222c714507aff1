r"""Kink-set polish of ``irls-newton``: the exact minimizer once the groups at a kink are known.

A smoothed minimizer (``Σ_g w_g √(‖z_g‖² + δ)``) leaves every group that the exact solution
puts at its kink (a fused TV edge, a zero ℓ1 coefficient, a zero row of W) at ``‖z_g‖ ≈ √δ``,
so its certificate only converges like √δ. With the kink set ``Z`` read off a stage end
(``‖z_g‖ ≤ KAPPA·√δ``) the exact problem restricted to it,

    min_θ  smooth(θ) + Σ_{g∉Z} (w_g‖z_g(θ)‖ + ρ‖z_g‖²)   s.t.  z_g(θ) = 0, g ∈ Z,

is smooth near the current point (the other groups are away from 0), and is solved by the
method of multipliers: Newton (the solver's assembled Hessian, exact line search) on

    L(θ) = smooth + Σ_{g∉Z} (w_g‖z_g‖_{δ_s} + ρ‖z_g‖²) + Σ_{g∈Z} (⟨λ_g, z_g⟩ + ½c_g‖z_g‖²),

``c_g = STIFFEN·w_g/√δ`` (stiffer than the smoothing Newton already handled), the other
norms smoothed by a tiny ``δ_s = SMOOTH_REST·δ``, then ``λ_g ← λ_g + c_g z_g``, from λ the
smoothed multipliers. Once λ has settled (``z_Z = 0``) a group whose ``‖λ_g‖`` exceeds
``w_g`` leaves Z and a group that reached 0 joins it (active-set corrections, ``ROUNDS``
updates in all) — the vector-group generalization of ``plugins/ere/polish.py`` (scalar groups,
one linear solve). The caller certifies the point. Not used on kernel expansions (see
``irls_newton``): there :func:`huber_polish` holds the kink groups within ε of their kink
instead. :func:`refine_multipliers` serves every candidate the solver checks.
"""

from __future__ import annotations

import numpy as np

from ssl_opt.modeling.terms.norms import row_block_hessian
from ssl_opt.plugins.model.common import directional_slope, exact_step, linear_part

#: Groups with ‖z_g‖ ≤ KAPPA·√δ at a stage end form the kink set.
KAPPA = 10.0
#: Multiplier updates (with active-set corrections), and Newton steps per update.
ROUNDS = 8
INNER = 25
#: Share of the curvature w/‖z‖ kept along z by the other groups' Hessians (exactly 0 for a
#: norm; a little keeps the system definite where nothing else curves, e.g. ERE's rows).
RADIAL = 1e-4
#: The kink groups' penalty: STIFFEN times the smoothing's curvature at the kink, w/√δ.
STIFFEN = 1e2
#: The other groups' norms are smoothed with δ_s = SMOOTH_REST·δ (their slack ~ wδ_s/‖z‖).
SMOOTH_REST = 1e-8


class _Restricted:
    """One norm term with its kink groups replaced by their augmented Lagrangian and the
    other groups' norms smoothed by a tiny ``δ_s`` (so that a group leaving the kink set, at
    z = 0, has a gradient)."""

    def __init__(self, term, fused: np.ndarray, lam: np.ndarray, stiffness: np.ndarray,
                 delta_s: float):
        self.w, self.size, self.rho = term.norm_structure()
        self.fused, self.lam, self.c, self.delta_s = fused, lam, stiffness, delta_s

    def _rows(self, z):
        return np.reshape(z, (-1, self.size))

    def _radii(self, Z):
        return np.sqrt(np.sum(Z * Z, axis=1, keepdims=True) + self.delta_s)

    def value(self, z):
        Z = self._rows(z)
        r = self._radii(Z)[:, 0]
        al = np.sum(self.lam * Z, axis=1) + 0.5 * self.c * np.sum(Z * Z, axis=1)
        return float(np.sum(np.where(self.fused, al, self.w * r)) + self.rho * np.sum(Z * Z))

    def gradient(self, z):
        Z = self._rows(z)
        exact = self.w[:, None] * Z / self._radii(Z)
        g = np.where(self.fused[:, None], self.lam + self.c[:, None] * Z, exact)
        return (g + 2.0 * self.rho * Z).reshape(np.shape(z))

    def hessian(self, z):
        Z = self._rows(z)
        r = self._radii(Z)
        a = np.where(self.fused[:, None], self.c[:, None], self.w[:, None] / r)
        b = np.where(self.fused[:, None], 0.0, -(1.0 - RADIAL) * self.w[:, None] / r**3)
        return row_block_hessian(Z, a + 2.0 * self.rho, b)

    def multiplier(self, z) -> np.ndarray:
        """The subgradient at z: λ on the kink groups, ``w z/‖z‖ + 2ρz`` elsewhere."""
        Z = self._rows(z)
        norms = np.linalg.norm(Z, axis=1, keepdims=True)
        exact = self.w[:, None] * Z / np.maximum(norms, 1e-300)
        u = np.where(self.fused[:, None], self.lam, exact) + 2.0 * self.rho * Z
        return u.reshape(np.shape(z))


def kink_sets(model, theta: np.ndarray, delta: float, multipliers) -> list | None:
    """Per non-smooth term: (kink mask per group, starting λ per group) read off a stage
    end; None when a term has no ``norm_structure``."""
    values = model.unpack_flat(theta)
    out = []
    for t, u in zip(model.nonsmooth_terms, multipliers, strict=False):
        if "norm_structure" not in t.capabilities:
            return None
        _, size, _ = t.norm_structure()
        Z = np.reshape(t.argument.value(values), (-1, size))
        fused = np.sum(Z * Z, axis=1) <= KAPPA**2 * delta
        out.append((fused, np.reshape(u, (-1, size)).copy()))
    return out


def polish(model, terms, rough_ids, theta: np.ndarray, delta: float, system, free,
           sets, tol: float):
    """The restricted problem's solution from ``theta`` (see the module docstring):
    ``(θ, multipliers of the non-smooth terms)``, or None when it does not settle."""
    rough = [t for t in terms if id(t) in rough_ids]
    pieces = {}
    for t, (fused, lam) in zip(rough, sets, strict=True):
        w, size, _ = t.norm_structure()
        stiffness = STIFFEN * w / np.sqrt(delta)
        pieces[id(t)] = _Restricted(t, fused.copy(), np.where(fused[:, None], lam, 0.0),
                                    np.where(stiffness > 0, stiffness, 1.0),
                                    SMOOTH_REST * delta)
    objects = [pieces.get(id(t), t) for t in terms]
    for _ in range(ROUNDS):
        theta = _newton(model, terms, objects, theta, system, free, tol)
        if theta is None:
            return None
        zs = model.arguments(model.unpack_flat(theta), rough)
        settled, changed = True, False
        for t, z in zip(rough, zs, strict=True):
            piece = pieces[id(t)]
            Z = piece._rows(z)
            norms = np.linalg.norm(Z, axis=1)
            scale = max(1.0, float(np.max(norms, initial=0.0)))
            piece.lam = np.where(piece.fused[:, None], piece.lam + piece.c[:, None] * Z, 0.0)
            if np.any(norms[piece.fused] > 1e-12 * scale):
                settled = False
        if not settled:
            continue
        for t, z in zip(rough, zs, strict=True):  # active-set corrections, once λ settled
            piece = pieces[id(t)]
            norms = np.linalg.norm(piece._rows(z), axis=1)
            scale = max(1.0, float(np.max(norms, initial=0.0)))
            leave = piece.fused & (np.linalg.norm(piece.lam, axis=1) > piece.w * (1 + 1e-7))
            join = ~piece.fused & (norms <= 1e-10 * scale)
            if leave.any() or join.any():
                changed = True
                piece.fused = (piece.fused & ~leave) | join
                piece.lam[leave | join] = 0.0
        if not changed:
            return theta, [pieces[id(t)].multiplier(z) for t, z in zip(rough, zs, strict=True)]
    return None


def _newton(model, terms, objects, theta, system, free, tol, inner: int = INNER):
    """Newton on the augmented Lagrangian to a stationarity below ``tol/10`` (or its
    round-off floor), at most ``inner`` steps."""
    previous, best = np.inf, np.inf
    for _ in range(inner):
        values = model.unpack_flat(theta)
        zs = [t.argument.value(values) for t in terms]
        grad, gradients, scale, value = np.zeros(model.size), [], 0.0, 0.0
        for t, o, z in zip(terms, objects, zs, strict=True):
            g = o.gradient(z)
            pulled = model.pack(t.argument.adjoint(g))
            scale = max(scale, float(np.max(np.abs(pulled[free]), initial=0.0)))
            grad += pulled
            gradients.append(g)
            value += o.value(z)
        if not np.isfinite(value):
            return None
        stat = float(np.max(np.abs(grad[free]), initial=0.0)) / max(1.0, scale)
        if stat <= 0.1 * tol or (stat > 0.5 * best and value >= previous
                                 - 1e-14 * max(1.0, abs(value))):
            return theta
        best, previous = min(best, stat), value
        hessians = [o.hessian(z) for o, z in zip(objects, zs, strict=True)]
        d = system.direction(hessians, grad, theta, gradients)
        dzs = [linear_part(t.argument, model.unpack_flat(d)) for t in terms]
        slope = directional_slope(objects, zs, dzs, 0.0)
        if not slope < 0:
            return theta
        step = exact_step(objects, zs, dzs, value, slope)
        if step == 0.0:
            return theta
        theta = theta + step * d
    return theta


__all__ = ["KAPPA", "huber_polish", "kink_sets", "polish", "refine_multipliers"]


def refine_multipliers(model, terms, rough_ids, theta: np.ndarray, multipliers: list, system,
                       free: np.ndarray, kink_tol: float = 1e-6, rounds: int = 4) -> list:
    r"""Multipliers for the kink groups that cancel the gradient, by sparse least squares.

    The certificate forces ``u_g = w z_g/‖z_g‖`` on every group away from its kink (within
    ``kink_tol·max(1, scale)``, as :func:`~ssl_opt.modeling.stationarity.stationarity`) and
    lets the kink groups' ``u_g`` range over their balls; the smoothed ``w z/√(‖z‖² + δ)`` are
    only O(√δ) right there. Here ``min ‖r₀ + Σ_j P_{j,Z}ᵀ λ_j‖₂`` over the kink entries (r₀:
    the rest of the gradient) is solved by LSQR, projected onto the balls and re-solved on the
    entries left inside (``rounds`` times). With a kernel expansion solved in K's range
    (``system.reduction``) the rows are those of the f-space gradient ``u + ρα`` — sparse and
    free of K's conditioning — else the free entries of θ.
    """
    import scipy.sparse as sp
    from scipy.sparse.linalg import lsqr

    values = model.unpack_flat(theta)
    rough = [t for t in terms if id(t) in rough_ids]
    zs = [t.argument.value(values) for t in terms]
    out = [np.array(u, dtype=np.float64) for u in multipliers]
    kinks, exact = [], []
    for k, t in enumerate(rough):
        z = model.arguments(values, [t])[0]
        tol = kink_tol * max(1.0, t.kink_scale(z))
        w, size, rho = t.norm_structure()
        Z = np.reshape(z, (-1, size))
        norms = np.linalg.norm(Z, axis=1, keepdims=True)
        at_kink = norms[:, 0] <= tol
        U = np.reshape(out[k], (-1, size))
        U = np.where(at_kink[:, None], U, w[:, None] * Z / np.maximum(norms, 1e-300))
        out[k] = (U + 2.0 * rho * Z).reshape(t.shape)
        kinks.append(np.repeat(at_kink, size))
        exact.append(out[k])
    if not any(m.any() for m in kinks):
        return out
    # r₀ and the columns of the kink entries, in the rows of the reduced space.
    gradients = []
    j = 0
    for t, z in zip(terms, zs, strict=True):
        if id(t) in rough_ids:
            gradients.append(np.where(kinks[j].reshape(t.shape), 0.0, exact[j]))
            j += 1
        else:
            gradients.append(t.gradient(z))
    assembler = system.assembler
    reduction = system.reduction
    N = model.size
    grad = np.zeros(N)
    for t, g in zip(terms, gradients, strict=True):
        grad += model.pack(t.argument.adjoint(g))
    if reduction is not None:
        a = reduction.alpha
        others = np.setdiff1d(free, np.arange(a.start, a.stop))
        rho = sum(reduction.quadratic.values())
        r0 = np.concatenate([reduction.pulled_core(gradients) + rho * theta[a], grad[others]])
        n = a.stop - a.start
        position = np.full(N, -1)
        position[a] = np.arange(n)
        position[others] = n + np.arange(others.size)
        rows_total = n + others.size
    else:
        r0 = grad[free]
        position = np.full(N, -1)
        position[free] = np.arange(free.size)
        rows_total = free.size
    blocks = []
    j = 0
    for t, parts in zip(assembler.terms, assembler.parts, strict=True):
        if id(t) not in rough_ids:
            continue
        cols = np.flatnonzero(kinks[j])
        j += 1
        column_block = sp.csr_matrix((rows_total, cols.size))
        for p in parts:
            PT = sp.csr_matrix(p.P.T)[:, cols]  # core (or variable) entries × kink entries
            if p.core and reduction is not None and p.block == reduction.alpha:
                rows = np.arange(p.P.shape[1])
            elif p.core:
                PT = sp.csr_matrix(np.asarray(p.C.T @ PT.toarray()))
                rows = position[np.arange(p.block.start, p.block.stop)]
            else:
                rows = position[np.arange(p.block.start, p.block.stop)]
            keep = rows >= 0
            PT = sp.csr_matrix(PT)[np.flatnonzero(keep)]
            lift = sp.csr_matrix((np.ones(keep.sum()), (rows[keep], np.arange(keep.sum()))),
                                 shape=(rows_total, keep.sum()))
            column_block = column_block + lift @ PT
        blocks.append((cols, column_block))
    A = sp.hstack([b for _, b in blocks]).tocsr()
    lam = np.concatenate([np.ravel(out[k])[cols] for k, (cols, _) in enumerate(blocks)])
    movable = np.ones(lam.size, dtype=bool)
    bounds = np.cumsum([0] + [cols.size for cols, _ in blocks])
    for _ in range(rounds):
        residual = r0 + A @ lam
        index = np.flatnonzero(movable)
        if index.size == 0:
            break
        step = lsqr(A[:, index], -residual, atol=1e-15, btol=1e-15, iter_lim=2000)[0]
        trial = lam.copy()
        trial[index] += step
        projected = trial.copy()
        for k, (cols, _) in enumerate(blocks):
            t = rough[k]
            full = np.zeros(t.shape).ravel()
            full[cols] = trial[bounds[k]:bounds[k + 1]]
            at = np.zeros(t.shape)
            ball = t.project_subgradient(at, full.reshape(t.shape), 0.0)
            projected[bounds[k]:bounds[k + 1]] = np.ravel(ball)[cols]
        moved = np.abs(projected - trial) > 1e-12 * max(1.0, float(np.max(np.abs(trial))))
        lam = projected
        if not moved.any():
            break
        movable &= ~moved
    for k, (cols, _) in enumerate(blocks):
        flat = np.ravel(out[k]).copy()
        flat[cols] = lam[bounds[k]:bounds[k + 1]]
        out[k] = flat.reshape(rough[k].shape)
    return out


# ------------------------------------------------------------------------------------------
# The Huber polish: kink groups held within ε of their kink (kernel expansions).

#: The Huber zone's radius relative to max(1, the term's kink scale): a tenth of the
#: certificate's kink tolerance (1e-6), so that a group inside it counts as at its kink.
HUBER_EPS = 1e-7
#: Active-set rounds, and Newton steps per round after the first (which takes one: a kink set
#: far off shows at once, for one factorization).
HUBER_ROUNDS = 4
HUBER_INNER = 4
#: A round that moves more than this share of the kink set (or 2 groups) gives up.
HUBER_MOVES = 0.1
#: A kink group shrinks like √δ between stage ends (by 1/√10 at the default factor): groups
#: that shrank by less than SHRINK stay out of the starting set.
SHRINK = 0.7


def huber_polish(model, terms, rough_ids, theta: np.ndarray, delta: float, multipliers,
                 system, free, tol: float, before: np.ndarray | None = None):
    r"""The minimizer of the problem with each norm term's kink groups ``Z`` smoothed as
    ``w‖z‖²/(2ε)`` (inside the Huber zone, ε = ``HUBER_EPS``·max(1, kink scale)) and the other
    groups exact: ``(θ, multipliers)`` when the set is consistent, else None.

    On a kernel expansion the kink groups cannot be held at 0 (:func:`polish`: ``f ∈
    range(K)``), but they need not be: the certificate counts a group within its kink
    tolerance as at the kink, and a group inside the Huber zone has the multiplier
    ``u = w z/ε`` inside its ball. With the set fixed the problem is piecewise quadratic near
    the stage end, so a few Newton steps (:func:`_newton`, on :class:`_Restricted` with λ = 0
    and stiffness w/ε) reach it; a group whose ``‖u‖`` exceeds ``w`` leaves the set, one that
    reached the zone joins it. ``before`` (the previous stage end) removes from the starting
    set the groups that do not shrink like √δ (small but away from their kink).
    """
    sets = kink_sets(model, theta, delta, multipliers)
    if sets is None:
        return None
    rough = [t for t in terms if id(t) in rough_ids]
    zs = model.arguments(model.unpack_flat(theta), rough)
    if before is not None:
        earlier = model.arguments(model.unpack_flat(before), rough)
        for k, (t, z, z0) in enumerate(zip(rough, zs, earlier, strict=True)):
            _, size, _ = t.norm_structure()
            now = np.linalg.norm(np.reshape(z, (-1, size)), axis=1)
            then = np.linalg.norm(np.reshape(z0, (-1, size)), axis=1)
            sets[k] = (sets[k][0] & (now <= SHRINK * then), sets[k][1])
    # The kink slack of a group inside the zone is w‖z‖(1 − ‖z‖/ε) ≤ wε/4: ε is also capped
    # so that the set's slack stays below a tenth of tol·max(1, |F|) (the solver's check).
    budget = 0.4 * tol * max(1.0, abs(model.objective(model.unpack_flat(theta))))
    total_w = sum(float(np.sum(t.norm_structure()[0][fused])) for t, (fused, _) in
                  zip(rough, sets, strict=True))
    pieces = {}
    for t, z, (fused, _) in zip(rough, zs, sets, strict=True):
        w, size, _ = t.norm_structure()
        eps = min(HUBER_EPS * max(1.0, t.kink_scale(z)), budget / max(total_w, 1e-300))
        pieces[id(t)] = _Restricted(t, fused, np.zeros((fused.size, size)),
                                    np.where(w > 0, w / eps, 1.0), SMOOTH_REST * delta)
    objects = [pieces.get(id(t), t) for t in terms]
    point = theta.copy()
    for round_ in range(HUBER_ROUNDS):
        point = _newton(model, terms, objects, point, system, free, tol,
                        1 if round_ == 0 else HUBER_INNER)
        if point is None or not np.all(np.isfinite(point)):
            return None
        zs = model.arguments(model.unpack_flat(point), rough)
        out, changed = [], False
        for t, z in zip(rough, zs, strict=True):
            piece = pieces[id(t)]
            Z = piece._rows(z)
            norms = np.linalg.norm(Z, axis=1)
            inner = piece.c[:, None] * Z
            exact = piece.w[:, None] * Z / np.maximum(norms, 1e-300)[:, None]
            u = np.where(piece.fused[:, None], inner, exact) + 2.0 * piece.rho * Z
            out.append(u.reshape(np.shape(z)))
            leave = piece.fused & (np.linalg.norm(inner, axis=1) > piece.w * (1 + 1e-7))
            join = ~piece.fused & (norms * piece.c <= piece.w)
            moves = int(leave.sum() + join.sum())
            if moves > max(2, HUBER_MOVES * piece.fused.sum()):
                return None  # the kink set is far off: left to a later stage
            if moves:
                changed = True
                piece.fused = (piece.fused & ~leave) | join
        if not changed:
            return point, out
    return None
