r"""Active-set polish of ``irls-mm`` by elimination (docs/modeling.md, ``irls-mm``).

When most groups of the norm terms sit at their kink (ERE's robust fit ``‖X_i W + b − F_i‖``
[004 eq. 5]: nearly every unlabeled row at the optimum), the kink set K is held at ``z_g = 0``
*exactly* by eliminating one unknown per kink row: a **pivot**, a column of the system that
no other kink row touches (ERE: ``F_i``). With ``A_K X + O_K = 0`` and ``a_r`` the pivot
coefficient of kink row r,

    X_P = −(A_{K,R} X_R + O_K)/a,   i.e.   X = E Y + e₀   (Y = X_R, the other unknowns),

which leaves a smooth problem in Y (the Huber terms are C¹ and piecewise C², the free
groups' norms smooth away from 0; a vanishing smoothing ``√(‖z‖² + δ_s)`` keeps the first
steps defined): minimized by Newton with the assembled reduced Hessian ``Eᵀ∇²Φ E`` (the
groups' ``w(aI + b zzᵀ)`` blocks, :func:`reduced_hessian`) and an Armijo line search. The
kink groups' multipliers then follow from the stationarity in the pivot rows alone,

    λ_r = −(∇f + Σ_{g∉K} A_gᵀ w_g z_g/‖z_g‖)_{p_r} / a_r,

so the stationarity holds exactly in every unknown, and the active set is updated like a
primal active-set method: a group with ``‖λ_g‖ > w_g`` leaves K, a free group that reached 0
joins it. Rows without a pivot (all their columns shared with other kink rows, or fixed —
ERE's labeled rows) stay free. The certificate (:meth:`_ModelForm.certify`) decides; a
nearly degenerate group (``‖λ_g‖ ≈ w_g``) is fine for it either way.

The reduced problem has ``|R| = N − |K|`` row unknowns (ERE at the optimum: ``d + 1`` plus
the free rows), so the polish is tried only when that is at most ``FRACTION·N`` (or
``SMALL`` scalars); a run is abandoned after ``BUDGET`` Newton steps (the driver stops trying
after ``ELIM_TRIES`` such failures). The free groups' smoothing δ_s starts at the driver's δ
and is divided by ``1/DELTA_STEP`` after every full (or failed) Newton step.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.sparse.linalg import splu

#: The polish runs when the reduced unknowns are at most FRACTION of the system's (or at
#: most SMALL scalars).
FRACTION, SMALL = 0.3, 300
#: Active-set rounds, Newton steps per round and in all (per polish), Armijo halvings,
#: Newton steps at the final smoothing without halving the reduced gradient before a stop.
ROUNDS, NEWTON_ITERS, BUDGET, HALVINGS, STALL = 12, 40, 100, 40, 5
#: A kink group leaves when ‖λ_g‖ > w_g(1 + LEAVE); a free one joins when ‖z_g‖ ≤ JOIN·σ.
LEAVE, JOIN = 1e-9, 1e-8
#: Free groups' smoothing: from the driver's δ, divided by DELTA_STEP per Newton step down
#: to DELTA_END·σ² (its gradient error w·δ_s/(2‖z‖²) is then below round-off).
DELTA_STEP, DELTA_END = 1e-2, 1e-20
#: Newton stops when the reduced gradient is below NEWTON_RTOL·tol (relative to the
#: gradient's scale); the reduced Hessian is solved densely up to DENSE unknowns.
NEWTON_RTOL, DENSE = 1e-3, 3000
#: The reduced Hessian is assembled densely up to DENSE_HESSIAN unknowns (and DENSE_ENTRIES
#: entries of each dense map B = A E).
DENSE_HESSIAN, DENSE_ENTRIES = 600, 5e4
#: Relative round-off of the objective below which the line search compares gradients.
ROUNDOFF = 1e-13


def pivots(AK: sp.csr_matrix, N: int):
    """``(pivot column, coefficient, ok)`` per row of ``A_K``: the largest-magnitude entry
    among the row's columns that no other row touches (``ok`` False when there is none)."""
    AK = sp.csr_matrix(AK)
    AK.eliminate_zeros()
    m = AK.shape[0]
    counts = np.bincount(AK.indices, minlength=N)
    score = np.abs(AK.data) * (counts[AK.indices] == 1)
    lengths = np.diff(AK.indptr)
    row_of = np.repeat(np.arange(m), lengths)
    order = np.lexsort((-score, row_of))
    piv, coef, ok = np.zeros(m, dtype=np.int64), np.ones(m), np.zeros(m, dtype=bool)
    has = lengths > 0
    first = order[AK.indptr[:-1][has]]
    piv[has], coef[has] = AK.indices[first], AK.data[first]
    ok[has] = score[first] > 0
    return piv, coef, ok


def reduced_hessian(B, Z, a, b, size: int, C: int):
    r"""``Kᵀ blkdiag(a_g I + b_g z_g z_gᵀ) K`` with ``K = B ⊗ I_C`` (row-major unknowns): the
    scalar part ``(Bᵀ diag(a) B) ⊗ I_C`` plus ``Vᵀ diag(b) V`` with ``V = [V_1 … V_C]``,
    ``V_c = Σ_s z_{g,s,c} B_{g,s}`` (each group's rows weighted by its c-th column), whose
    column-major unknowns are permuted to row-major. B sparse: a sparse result; B a dense
    array (small reduced problems, where sparse overhead dominates): a dense one."""
    G, n = a.size, B.shape[1]
    used = np.flatnonzero((a != 0) | (b != 0))
    rows = (used[:, None] * size + np.arange(size)[None, :]).ravel()
    B, a, b = B[rows], a[used], b[used]
    Zs = np.reshape(np.reshape(Z, (G, size, C))[used], (used.size, size, C))
    if not sp.issparse(B):
        out = np.kron((B * np.repeat(a, size)[:, None]).T @ B, np.eye(C))
        V = np.reshape(np.einsum("gsc,gsi->gic", Zs, np.reshape(B, (used.size, size, n))),
                       (used.size, n * C))
        return out + V.T @ (b[:, None] * V)
    B = sp.csr_matrix(B)
    out = sp.kron(B.T @ sp.diags(np.repeat(a, size)) @ B, sp.identity(C), format="csr")
    bend = np.flatnonzero(b != 0)
    if bend.size == 0:
        return out
    sub = (bend[:, None] * size + np.arange(size)[None, :]).ravel()
    Bs = sp.csr_matrix(B[sub])
    Zb = np.reshape(Zs[bend], (-1, C))
    owner = np.repeat(np.arange(bend.size), size)
    V = sp.hstack([sp.csr_matrix((Zb[:, c], (owner, np.arange(sub.size))),
                                 shape=(bend.size, sub.size)) @ Bs for c in range(C)],
                  format="csr")
    V = V[:, (np.arange(C)[None, :] * n + np.arange(n)[:, None]).ravel()]
    return out + V.T @ sp.diags(b[bend]) @ V


class Elimination:
    """The polish of the module docstring on the system of a :class:`_ModelForm` (and the
    constant Hessian part ``Q`` of its :class:`_Step`)."""

    def __init__(self, form, Q, sigma: float):
        self.form, self.system, self.Q, self.sigma = form, form.system, Q, sigma
        self.rounds = self.newton_steps = self.failures = 0

    # -- the elimination of a kink set
    def _eliminate(self, masks):
        """``(masks, E, e₀, pivots, a, R)`` with the groups of rows without a pivot dropped
        from K; None when K is empty or the reduced problem too large."""
        s = self.system
        N = s.free.size
        for _ in range(6):
            rows = [np.flatnonzero(np.repeat(m, p.size)) for p, m in zip(s.norms, masks,
                                                                         strict=True)]
            total = sum(r.size for r in rows)
            if total == 0:
                return None
            AK = sp.vstack([p.A[r] for p, r in zip(s.norms, rows, strict=True)]).tocsr()
            piv, coef, ok = pivots(AK, N)
            if ok.all():
                break
            start, changed = 0, False
            for k, (p, r) in enumerate(zip(s.norms, rows, strict=True)):
                bad = ~ok[start:start + r.size]
                start += r.size
                if bad.any():
                    groups = np.unique(r[bad] // p.size)
                    masks[k] = masks[k].copy()
                    masks[k][groups] = False
                    changed = True
            if not changed:
                return None
        else:
            return None
        if N - total > max(FRACTION * N, SMALL / s.C):
            return None
        OK = np.vstack([p.O[r] for p, r in zip(s.norms, rows, strict=True)])
        rest = np.setdiff1d(np.arange(N), piv)
        sub = sp.coo_matrix(sp.diags(-1.0 / coef) @ AK[:, rest])
        E = sp.csr_matrix((np.concatenate([np.ones(rest.size), sub.data]),
                           (np.concatenate([rest, piv[sub.row]]),
                            np.concatenate([np.arange(rest.size), sub.col]))),
                          shape=(N, rest.size))
        e0 = np.zeros((N, s.C))
        e0[piv] = -OK / coef[:, None]
        return masks, E, e0, piv, coef, rest

    # -- the reduced problem
    def _norm_parts(self, X, masks, delta_s):
        """Per norm term ``(Z, groups, r, free)``: free groups' radii ``√(‖z‖² + δ_s)``."""
        out = []
        for p, m in zip(self.system.norms, masks, strict=True):
            Z = p.value_at(X)
            G = np.reshape(Z, (p.w.size, -1))
            out.append((Z, G, np.sqrt(np.sum(G * G, axis=1) + delta_s), ~m))
        return out

    def _value(self, X, masks, delta_s) -> float:
        total = self.form.smooth_value(X.ravel())
        for p, (_, _, r, free) in zip(self.system.norms, self._norm_parts(X, masks, delta_s),
                                      strict=True):
            total += float(p.w[free] @ r[free])
        return total

    def _gradient(self, X, masks, delta_s):
        """The level gradient ``∇f + Σ_{g∉K} A_gᵀ w z/r`` (N × C) and its scale."""
        form = self.form
        grad = np.reshape(form.smooth_gradient(X.ravel()), X.shape)
        scale = form.smooth_scale
        for p, (Z, G, r, free) in zip(self.system.norms, self._norm_parts(X, masks, delta_s),
                                      strict=True):
            U = np.where(free[:, None], (p.w / np.maximum(r, 1e-300))[:, None] * G, 0.0)
            pulled = p.AT @ np.reshape(U, Z.shape)
            scale = max(scale, float(np.max(np.abs(pulled), initial=0.0)))
            grad += pulled
        return grad, max(1.0, scale)

    def _hessian(self, X, masks, delta_s, E, Bs):
        s = self.system
        H = sp.kron(E.T @ self.Q @ E, sp.identity(s.C), format="csr")
        if not sp.issparse(Bs[0]):
            H = H.toarray()
        for p, B in zip(s.hubers, Bs[len(s.norms):], strict=True):
            Z = p.value_at(X)
            norms = np.linalg.norm(np.reshape(Z, (p.w.size, -1)), axis=1)
            inside = norms <= p.term.delta
            safe = np.where(inside, 1.0, norms)
            a = p.w * np.where(inside, 1.0 / p.term.delta, 1.0 / safe)
            H = H + reduced_hessian(B, Z, a, np.where(inside, 0.0, -p.w / safe**3), p.size,
                                    s.C)
        for p, B, (Z, _, r, free) in zip(s.norms, Bs[:len(s.norms)],
                                         self._norm_parts(X, masks, delta_s),
                                         strict=True):
            a = np.where(free, p.w / r, 0.0)
            H = H + reduced_hessian(B, Z, a, np.where(free, -p.w / r**3, 0.0), p.size, s.C)
        return H

    def _newton(self, X, masks, E, e0, rest, delta_s):
        """Newton on the reduced problem from X (its Y = X_R); returns (X, delta_s)."""
        s, form = self.system, self.form
        Bs = [sp.csr_matrix(p.A @ E) for p in s.norms + s.hubers]
        if E.shape[1] * s.C <= DENSE_HESSIAN and max(B.shape[0] for B in Bs) * E.shape[1] \
                <= DENSE_ENTRIES:
            Bs = [B.toarray() for B in Bs]
        Y = X[rest].copy()
        end = DELTA_END * self.sigma**2
        best, since = np.inf, 0
        for _ in range(NEWTON_ITERS):
            X = E @ Y + e0
            grad, scale = self._gradient(X, masks, delta_s)
            g = E.T @ grad
            stat = float(np.max(np.abs(g), initial=0.0)) / scale
            if delta_s <= end and stat <= NEWTON_RTOL * form.tol:
                break
            if delta_s <= end:
                best, since = (stat, 0) if stat < 0.5 * best else (best, since + 1)
                if since >= STALL:
                    break
            D = np.reshape(_solve(self._hessian(X, masks, delta_s, E, Bs), -g.ravel()), Y.shape)
            self.newton_steps += 1
            slope = float(np.sum(g * D))
            if not slope < 0:
                if delta_s <= end:
                    break
                delta_s = max(delta_s * DELTA_STEP, end)
                continue
            t = self._line(X, g, D, slope, masks, delta_s, E, e0, Y)
            Y = Y + t * D
            if t == 0.0 and delta_s <= end:
                break
            if t == 0.0 or t == 1.0:  # a damped step: the same δ_s again
                delta_s = max(delta_s * DELTA_STEP, end)
        return E @ Y + e0, delta_s

    def _line(self, X, g, D, slope, masks, delta_s, E, e0, Y) -> float:
        """Armijo backtracking from t = 1; where the decrease is below the objective's
        round-off (ROUNDOFF·|Φ|), a smaller reduced gradient accepts the step instead."""
        base, t = self._value(X, masks, delta_s), 1.0
        for _ in range(HALVINGS):
            trial = E @ (Y + t * D) + e0
            value = self._value(trial, masks, delta_s)
            if value <= base + 1e-4 * t * slope:
                return t
            if value <= base + ROUNDOFF * abs(base):
                g_t = E.T @ self._gradient(trial, masks, delta_s)[0]
                if np.max(np.abs(g_t)) < np.max(np.abs(g)):
                    return t
            t *= 0.5
        return 0.0

    def run(self, X, masks, delta):
        """``(X, U per norm term (unit scale))`` of the active-set polish from the kink masks,
        or None (no pivots, too many free rows, or the rounds exhausted)."""
        s = self.system
        masks = [m.copy() for m in masks]
        delta_s, spent = delta, self.newton_steps
        for _ in range(ROUNDS):
            if self.newton_steps - spent > BUDGET:
                break
            self.rounds += 1
            found = self._eliminate(masks)
            if found is None:
                self.failures += self.newton_steps > spent
                return None
            masks, E, e0, piv, coef, rest = found
            try:
                X, delta_s = self._newton(X, masks, E, e0, rest, delta_s)
            except (np.linalg.LinAlgError, RuntimeError, ValueError):
                self.failures += 1
                return None
            if not np.all(np.isfinite(X)):
                self.failures += 1
                return None
            grad, _ = self._gradient(X, masks, 0.0)
            lam = -grad[piv] / coef[:, None]
            start, changed, U = 0, False, []
            for k, (p, (_, G, r, free)) in enumerate(zip(
                    s.norms, self._norm_parts(X, masks, 0.0), strict=True)):
                m = masks[k]
                count = int(m.sum())
                L = np.reshape(lam[start:start + count * p.size], (count, p.size * s.C))
                start += count * p.size
                w = np.where(p.w > 0, p.w, 1.0)
                size = np.linalg.norm(L, axis=1)
                leave = np.zeros_like(m)
                leave[m] = size > p.w[m] * (1 + LEAVE)
                join = free & (r <= JOIN * self.sigma)
                Uk = np.where(free[:, None], G / np.maximum(r, 1e-300)[:, None], 0.0)
                Uk[m] = L / np.maximum(w[m], size)[:, None]
                U.append(Uk)
                if leave.any() or join.any():
                    changed = True
                    masks[k] = (m & ~leave) | join
                    delta_s = max(delta_s, delta) if leave.any() else delta_s
            if not changed:
                return X, U
        self.failures += self.newton_steps > spent
        return None


def _solve(H, rhs):
    """``H⁻¹ rhs`` for the reduced (positive semidefinite) Hessian: dense Cholesky up to
    DENSE unknowns, else sparse LU, with a relative diagonal shift 1e-13."""
    n = H.shape[0]
    shift = 1e-13 * max(1.0, float(np.max(np.abs(H.diagonal()), initial=0.0)))
    if n <= DENSE:
        M = (H.toarray() if sp.issparse(H) else H) + shift * np.eye(n)
        try:
            return sla.cho_solve(sla.cho_factor(M, check_finite=False), rhs)
        except np.linalg.LinAlgError:
            return sla.lstsq(M, rhs)[0]
    return splu(sp.csc_matrix(H + shift * sp.identity(n))).solve(rhs)
