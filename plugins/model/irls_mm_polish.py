r"""The kink-set polish of ``irls-mm`` by projected Newton (:mod:`ssl_opt.plugins.model.irls_mm`):
the exact problem with the kink groups held at zero as linear constraints ``A_K X + O_K = 0``,
each step a quasi-definite KKT solve (constraint preconditioner) and projected CG (Gould,
Hribar & Nocedal 2001). Used when the kink set has no pivots for the elimination of
:mod:`ssl_opt.plugins.model.irls_mm_eliminate` (e.g. graph-TV edges sharing their nodes).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ssl_opt.exceptions import InvalidInputError
from ssl_opt.numerics.ldl import PatternLDL

#: The polish: kink groups ‖z_g‖ ≤ KAPPA·√δ that shrank by SHRINK since the previous stage
#: end, the other norms smoothed by SMOOTH_REST·δ; POLISH_ROUNDS active-set rounds of at most
#: POLISH_INNER projected Newton steps each.
KAPPA, SHRINK, SMOOTH_REST, POLISH_ROUNDS, POLISH_INNER = 10.0, 0.6, 1e-8, 4, 10
#: The polish's inner solves: PCG iterations and reduction, steps without halving the
#: stationarity before they stop.
POLISH_PCG_ITERS, POLISH_PCG_RTOL, POLISH_STALL = 20, 1e-6, 3
#: Regularization of the polish's quasi-definite KKT matrix (relative to its largest
#: diagonal entry) and iterative-refinement steps of its solves.
KKT_EPS, REFINE_KKT = 1e-12, 2


class KinkPolish:
    """The polish as methods of the driver (:class:`~ssl_opt.plugins.model.irls_mm._Run`:
    ``system``, ``step``, ``opts``, ``radii``, ``last_pattern``)."""

    def polish(self, X, delta, previous):
        """The exact minimizer with the kink groups (``‖z_g‖ ≤ KAPPA·√δ`` and shrinking like
        √δ: at most SHRINK times their value at the ``previous`` stage end; a group that
        tends to a small non-zero value does not shrink, and holding it at zero can make the
        constraints inconsistent — ERE's labeled points, whose W, b fit has d + 1 unknowns
        per column) held at zero — the
        linear constraints ``A_K X + O_K = 0`` — by projected Newton (:meth:`_restricted`), the
        other norms smoothed by ``δ_s = SMOOTH_REST·δ``; then a kink group whose multiplier
        leaves its ball (``‖ν_g‖ > w_g``) leaves the set and a group that reached 0 joins it,
        at most POLISH_ROUNDS times (the role of ``plugins/model/kink_polish.py``, without its
        penalty: a stiffness c on the kink groups leaves a floor ~n·c·eps on the
        stationarity, measured 5e-6 on ere_huber, n = 1,500). Returns ``(X, U per norm term
        (unit scale))`` or None."""
        sys_ = self.system
        masks = []
        for p in sys_.norms:
            sq = np.sum(np.reshape(p.value_at(X), (p.w.size, -1)) ** 2, axis=1)
            before = np.sum(np.reshape(p.value_at(previous), (p.w.size, -1)) ** 2, axis=1)
            masks.append((sq <= KAPPA**2 * delta) & (sq <= SHRINK**2 * before))
        pattern = np.concatenate(masks)
        if not pattern.any() or (self.last_pattern is not None
                                 and np.array_equal(pattern, self.last_pattern)):
            return None
        self.last_pattern = pattern
        for _ in range(POLISH_ROUNDS):
            if not any(mask.any() for mask in masks):
                return None
            found = self._restricted(X, SMOOTH_REST * delta, delta, masks)
            if found is None:
                return None
            X, nus = found
            changed = False
            for k, p in enumerate(sys_.norms):
                G = np.reshape(p.value_at(X), (p.w.size, -1))
                norms = np.linalg.norm(G, axis=1)
                tiny = 1e-10 * max(1.0, float(np.max(norms, initial=0.0)))
                # leave: the multiplier is outside the ball, or the group could not be held
                # at zero (inconsistent constraints, e.g. more labeled points than W, b fit)
                leave = masks[k] & ((np.linalg.norm(nus[k], axis=1) > p.w * (1 + 1e-7))
                                    | (norms > tiny))
                join = ~masks[k] & (norms <= tiny)
                if leave.any() or join.any():
                    changed = True
                    masks[k] = (masks[k] & ~leave) | join
            if not changed:
                U = []
                for p, mask, nu in zip(sys_.norms, masks, nus, strict=True):
                    G = np.reshape(p.value_at(X), (p.w.size, -1))
                    exact = G / np.maximum(np.linalg.norm(G, axis=1), 1e-300)[:, None]
                    U.append(np.where(mask[:, None], nu / np.where(p.w > 0, p.w, 1.0)[:, None],
                                      exact))
                return X, U
        return None

    def _restricted(self, X, delta_s, delta, masks):
        """Projected Newton on ``f + Σ_{g∉K} w_g√(‖z_g‖² + δ_s)`` subject to ``z_K = 0``: each
        step solves ``min ½dᵀ∇²Φ d + ∇Φᵀd  s.t. A_K d = −z_K`` by projected CG with the
        constraint preconditioner ``[H_MM A_Kᵀ; A_K −εI]`` (one quasi-definite LDLᵀ; ``H_MM``
        carries ``w/√δ·A_KᵀA_K``, which changes nothing on the feasible directions and keeps
        it definite), then the exact line search. Returns ``(X, ν per norm term (groups ×
        k, zero off K))`` — ν from the KKT system at the end — or None."""
        sys_, step = self.system, self.step
        rows, blocks_K = [], []
        for p, mask in zip(sys_.norms, masks, strict=True):
            r = np.flatnonzero(np.repeat(mask, p.size))
            rows.append(r)
            blocks_K.append(p.A[r])
        AK = sp.vstack(blocks_K).tocsr()
        m = AK.shape[0]

        def zK(X):
            return np.vstack([p.value_at(X)[r] for p, r in zip(sys_.norms, rows, strict=True)])

        lagrangian = [(mask, np.zeros((p.w.size, p.size * sys_.C)),
                       np.where(p.w > 0, p.w, 1.0) / np.sqrt(delta))
                      for p, mask in zip(sys_.norms, masks, strict=True)]
        ldl = PatternLDL()
        best, since = np.inf, 0
        for _ in range(POLISH_INNER):
            radii = self.radii(X, delta_s)
            grad, scale, blocks = step.prepare(X, radii, lagrangian)
            H = step.pattern.matrix(step._pending)
            step._pending = None
            eps = KKT_EPS * max(1.0, float(np.max(np.abs(H.diagonal()), initial=0.0)))
            KKT = sp.bmat([[H, AK.T], [None, -eps * sp.identity(m)]], format="csc")
            try:
                ldl.factor_upper(_upper_sorted(KKT))
            except InvalidInputError:
                return None
            step.factorizations += 1
            kkt_solve = _kkt_solver(ldl, H, AK)

            # r₀ = the gradient without the kink groups' part; ν cancels it on K
            base = grad - AK.T @ (np.concatenate([np.repeat(lg[2][mk], p.size)
                                                  for p, mk, lg in zip(sys_.norms, masks,
                                                                       lagrangian,
                                                                       strict=True)])[:, None]
                                  * zK(X))
            y, nu = kkt_solve(-base, np.zeros((m, sys_.C)))
            stat = float(np.max(np.abs(base + AK.T @ nu), initial=0.0)) / scale
            feas = float(np.max(np.abs(zK(X)), initial=0.0))
            if not np.isfinite(stat):
                return None
            if stat <= 0.1 * self.opts["tol"] and feas <= 1e-13 * max(1.0, scale):
                break
            best, since = (stat, 0) if stat < 0.5 * best else (best, since + 1)
            if since >= POLISH_STALL and feas <= 1e-13 * max(1.0, scale):
                break
            D = self._projected_pcg(X, grad, blocks, AK, zK(X), kkt_solve)
            t = step._line(grad, D, blocks)
            if t == 0.0:
                break
            X = X + t * D
        nus, start = [], 0
        for p, r in zip(sys_.norms, rows, strict=True):
            block = np.zeros((p.w.size * p.size, sys_.C))
            block[r] = nu[start:start + r.size]
            start += r.size
            nus.append(np.reshape(block, (p.w.size, -1)))
        return X, nus

    def _projected_pcg(self, X, grad, blocks, AK, zk, kkt_solve):
        """``d`` with ``A_K d = −z_K`` minimizing the Newton model: the KKT (MM) solution, then
        CG in the null space of A_K preconditioned by the KKT solve (Gould, Hribar & Nocedal
        2001)."""
        step = self.step
        D, _ = kkt_solve(-grad, -zk)
        r = -(grad + step._hessp(D, blocks))
        y, _ = kkt_solve(r, np.zeros_like(zk))
        P = y.copy()
        ry = float(np.sum(r * y))
        target = (POLISH_PCG_RTOL ** 2) * max(ry, 1e-300)
        for _ in range(POLISH_PCG_ITERS):
            HP = step._hessp(P, blocks)
            curvature = float(np.sum(P * HP))
            if not curvature > 0 or not ry > 0:
                break
            a = ry / curvature
            D = D + a * P
            r = r - a * HP
            step.cg_iterations += 1
            y, _ = kkt_solve(r, np.zeros_like(zk))
            ry_new = float(np.sum(r * y))
            if ry_new <= target:
                break
            P = y + (ry_new / ry) * P
            ry = ry_new
        return D


def _kkt_solver(ldl, H_upper, AK):
    """``(x, μ)`` of ``[H Aᵀ; A 0][x; μ] = [top; bottom]`` from the LDLᵀ of its regularized
    form (−εI in the corner), with REFINE_KKT steps of iterative refinement on the exact
    system (the regularization would leave ``A x`` off by ε·μ)."""
    H = sp.csr_matrix(H_upper + sp.triu(H_upper, k=1).T)
    n = H.shape[0]

    def solve(top, bottom):
        rhs = np.vstack([top, bottom])
        sol = ldl.solve(rhs)
        for _ in range(REFINE_KKT):
            x, mu = sol[:n], sol[n:]
            residual = rhs - np.vstack([H @ x + AK.T @ mu, AK @ x])
            sol = sol + ldl.solve(residual)
        return sol[:n], sol[n:]

    return solve


def _upper_sorted(M) -> sp.csc_matrix:
    upper = sp.triu(M, format="csc")
    upper.sort_indices()
    return upper
