r"""The model form and the step of ``irls-mm`` (:mod:`ssl_opt.plugins.model.irls_mm`): f and its
gradient at the level of the system, the model's own certificate at a candidate
(:meth:`ModelForm.certify`, with the kink multipliers refined by :func:`refine_kinks`), and
the Newton–MM step (:class:`MMStep`: the majorizer's factored matrix as the preconditioner of
CG on the Newton system, then an exact line search) [004 eqs. 13–15].
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import lsqr

from ssl_opt.exceptions import InvalidInputError
from ssl_opt.modeling.model import Model
from ssl_opt.numerics.ldl import PatternLDL
from ssl_opt.plugins.model.common import certificate_check, worst
from ssl_opt.plugins.model.irls_mm_system import HessianPattern, MMSystem
from ssl_opt.plugins.model.multipliers import kink_slack, with_fixed_multipliers

#: The certificate's own minimization runs only when the residual at the refined
#: multipliers is within FULL_CHECK·tol; it then takes CHECK_ITERS iterations.
FULL_CHECK, CHECK_ITERS = 10.0, 300
#: LSQR iterations of the kink multipliers' refinement, and its projection rounds.
REFINE_ITERS, REFINE_ROUNDS = 50, 3
#: Relative diagonal shift tried when the weighted system does not factor.
SHIFT = 1e-12
#: CG iterations per step on the Newton system (preconditioned by the MM matrix) at most,
#: and the reduction of its preconditioned residual that ends them.
PCG_ITERS, PCG_RTOL = 10, 1e-2
#: The factor of H_MM is kept while every weight stays within a factor REUSE of the factored
#: one (either way): a weight that grew by √delta_factor per stage needs a new factor every
#: second stage (ere_group, n = 10,000: 4 factorizations instead of 8, 1.1 s instead of
#: 1.4 s; with 1 ± 0.3, its previous rule, every stage's first step refactored).
REUSE = 10.0


# ---------------------------------------------------------------------------- the form
class ModelForm:
    """The model seen by the steps: f (the quadratic and Huber terms, and elastic nets'
    ``ρ‖z‖²``) with its gradient at the level of the system, the norm terms' groups, and the
    model's own certificate (:meth:`certify`)."""

    def __init__(self, model: Model, system: MMSystem, tol: float, gap_tol: float):
        self.model, self.system, self.tol, self.gap_tol = model, system, tol, gap_tol
        offsets = [float(np.max(np.abs(p.O), initial=0.0)) for p in system.norms]
        self.value_scale = max(offsets, default=0.0) or 1.0  # σ when every group starts at 0
        self.checks = 0
        self.last_cert: dict = {}
        self.smooth_scale = 0.0

    # -- f and its gradient
    def _smooth(self, z, gradient: bool):
        s = self.system
        X = np.reshape(z, (-1, s.C))
        value, grad, scale = 0.0, np.zeros_like(X), 0.0
        for p in s.quads + s.hubers:
            Z = p.value_at(X)
            zt = p.as_term(Z)
            value += p.term.value(zt)
            if gradient:
                pulled = p.AT @ np.reshape(p.term.gradient(zt), Z.shape)
                scale = max(scale, float(np.max(np.abs(pulled), initial=0.0)))
                grad += pulled
        for p in s.norms:
            if p.rho:
                Z = p.value_at(X)
                value += p.rho * float(np.sum(Z * Z))
                if gradient:
                    grad += p.AT @ (2.0 * p.rho * Z)
        self.smooth_scale = scale
        return value, grad.ravel()

    def smooth_value(self, z):
        return self._smooth(z, False)[0]

    def smooth_gradient(self, z):
        return self._smooth(z, True)[1]

    # -- the model's certificate
    def multipliers(self, z, U, refine: bool = True) -> list:
        """The model's multipliers at the free unknowns ``z`` from unit-scale ``U`` (groups × k
        per norm term): ``w_g U_g`` (+ ``2ρz``), with the kink groups' entries refined
        (:func:`refine_kinks`) when ``refine``, then the fixed rows'
        (``with_fixed_multipliers``)."""
        s = self.system
        X = np.reshape(z, (-1, s.C))
        rough = refine_kinks(self, X, U, refine)
        return with_fixed_multipliers(self.model, s.theta(X), rough)

    def certify(self, X, U) -> list | None:
        """The model's multipliers at X when its certificate passes at ``tol``, else None:
        the kink slack ``Σ(g(z) − ⟨u, z⟩)/max(1, |F|)`` (≤ gap_tol) first, then the
        stationarity at the given multipliers, then at refined ones, minimized over them only
        when within FULL_CHECK·tol."""
        self.checks += 1
        theta = self.system.theta(X)
        if not np.all(np.isfinite(theta)):
            self.last_cert = {"finite": 0.0}
            return None
        multipliers = self.multipliers(X.ravel(), U, refine=False)
        slack = kink_slack(self.model, theta, multipliers)
        self.last_cert = {"kink_slack": slack}
        if slack > self.gap_tol:
            return None
        x = self.model.unpack_flat(theta)
        cert = certificate_check(self.model, x, multipliers, 0)
        if worst(cert) > self.tol:
            multipliers = self.multipliers(X.ravel(), U)
            cert = certificate_check(self.model, x, multipliers, 0)
        if self.tol < worst(cert) <= FULL_CHECK * self.tol:
            cert = certificate_check(self.model, x, multipliers, CHECK_ITERS)
        self.last_cert = {**cert, "kink_slack": slack}
        return multipliers if worst(cert) <= self.tol else None


def refine_kinks(form: ModelForm, X: np.ndarray, Us: list, refine: bool = True) -> list:
    r"""Each norm term's multiplier ``u = w_g U_g + 2ρz``, its kink groups' entries (``‖z_g‖ ≤
    1e-6·max(1, scale)``, the certificate's rule) replaced by the least-squares solution of
    ``min ‖r₀ + Σ_j B_{j,K}ᵀ λ‖`` (r₀: the gradient with the other groups at their exact
    ``w z/‖z‖``) per column by LSQR, projected onto the balls ``‖λ_g‖ ≤ w_g`` and re-solved on
    the groups left inside (``REFINE_ROUNDS``): the smoothed multipliers are only O(√δ) right
    at the kink."""
    s = form.system
    out, kinks, blocks = [], [], []
    grad = np.reshape(form.smooth_gradient(X.ravel()), X.shape)
    for p, U in zip(s.norms, Us, strict=True):  # U: unit scale, groups × k
        Z = p.value_at(X)
        G = np.reshape(Z, (p.w.size, -1))
        norms = np.linalg.norm(G, axis=1)
        tau = 1e-6 * max(1.0, float(np.max(norms, initial=0.0)))
        at = norms <= tau
        exact = p.w[:, None] * G / np.maximum(norms, 1e-300)[:, None]
        Ug = np.where(at[:, None], p.w[:, None] * np.reshape(U, G.shape), exact)
        rows_at = np.repeat(at, p.size)
        grad += p.AT @ np.where(rows_at[:, None], 0.0, np.reshape(Ug, Z.shape))
        out.append(Ug)
        kinks.append(at)
        if at.any():
            blocks.append(sp.csr_matrix(p.AT[:, np.flatnonzero(rows_at)]))
    if blocks and refine:
        B = sp.hstack(blocks).tocsr()
        lam = np.vstack([np.reshape(Ug[at], (-1, s.C)) if p.size == 1 or s.C > 1
                         else np.reshape(Ug[at], (-1, 1))
                         for p, Ug, at in zip(s.norms, out, kinks, strict=True) if at.any()])
        lam = _lsqr_balls(B, grad, lam, [(p, at) for p, at in zip(s.norms, kinks,
                                                                   strict=True) if at.any()],
                          s.C)
        start = 0
        for p, Ug, at in zip(s.norms, out, kinks, strict=True):
            if not at.any():
                continue
            rows = int(at.sum()) * p.size
            Ug[at] = np.reshape(lam[start:start + rows], (int(at.sum()), -1))
            start += rows
    result = []
    for p, Ug in zip(s.norms, out, strict=True):
        Z = p.value_at(X)
        u = np.reshape(Ug, Z.shape) + 2.0 * p.rho * Z
        result.append(p.as_term(u))
    return result


def _lsqr_balls(B, r0, lam, kinked, C: int):
    """``λ`` (rows × C) minimizing ``‖r0 + B λ‖`` per column, projected onto the groups'
    balls; groups the projection moves are frozen and the rest re-solved."""
    movable = np.ones(lam.shape[0], dtype=bool)
    for _ in range(REFINE_ROUNDS):
        residual = r0 + B @ lam
        index = np.flatnonzero(movable)
        if index.size == 0:
            break
        Bi = B[:, index]
        trial = lam.copy()
        for col in range(C):
            trial[index, col] += lsqr(Bi, -residual[:, col], atol=1e-15, btol=1e-15,
                                      iter_lim=REFINE_ITERS)[0]
        projected, moved = trial.copy(), np.zeros(lam.shape[0], dtype=bool)
        start = 0
        for p, at in kinked:
            m, rows = int(at.sum()), int(at.sum()) * p.size
            G = np.reshape(trial[start:start + rows], (m, -1))
            w = p.w[at]
            norms = np.linalg.norm(G, axis=1)
            over = norms > w * (1 + 1e-12)
            G = np.where(over[:, None], G * (w / np.maximum(norms, 1e-300))[:, None], G)
            projected[start:start + rows] = np.reshape(G, (rows, C))
            moved[start:start + rows] = np.repeat(over, p.size)
            start += rows
        lam = projected
        if not moved.any():
            break
        movable &= ~moved
    return lam


# ---------------------------------------------------------------------------- the step
class MMStep:
    """One step of ``irls-mm`` at the free unknowns X, given per norm group either its
    smoothed radius ``r_g = √(‖z_g‖² + δ)`` or, for a kink group of the polish, its augmented
    Lagrangian ``⟨λ_g, z_g⟩ + ½c_g‖z_g‖²``:

    1. the majorizer's matrix ``H_MM`` (scalar weights ``w/r_g``, ``c_g`` and the Huber
       ``w min(1/δh, 1/‖z_g‖)``) is factored (LDLᵀ in its fixed pattern); a solve with it is
       the MM step;
    2. ``∇²Φ d = −∇Φ`` is solved by CG preconditioned by ``H_MM`` (``∇²Φ ≼ H_MM``, equal but
       for each group's radial curvature: ``w(I/r − zzᵀ/r³)``) from d = 0, for at most
       ``PCG_ITERS`` products or a preconditioned residual reduction ``PCG_RTOL``: its first
       iterate is the (optimally scaled) MM step, the later ones recover the curvature the
       majorizer overstates (Huber edges in their linear part: the MM steps alone took
       ~100 steps per δ stage on ere_huber, n = 600);
    3. the exact minimizer of Φ along d (``φ'`` is monotone: bracketing and Brent), the norms
       as ``√(r_g² + 2t⟨z_g, d_g⟩ + t²‖d_g‖²)`` — free of δ and of cancellation.

    Hence Φ decreases at every step, as with an MM step."""

    def __init__(self, form: ModelForm):
        self.form = form
        s = self.system = form.system
        Q = sp.csr_matrix((s.free.size, s.free.size))
        for p in s.quads:
            Q = Q + p.AT @ p.hess @ p.A
        for p in s.norms:
            if p.rho:
                Q = Q + 2.0 * p.rho * (p.AT @ p.A)
        self.Q = sp.csr_matrix(Q)
        weighted = [p.A for p in s.norms + s.hubers]
        self.pattern = HessianPattern(s.free.size, weighted, self.Q if self.Q.nnz else None)
        self.ldl = PatternLDL()
        self.factorizations = self.cg_iterations = 0
        self._pending = self._factored = None
        self._checked = False
        self.reused = 0

    # -- gradient, weights and Hessian blocks at X
    def prepare(self, X, radii, lagrangian=None):
        """``(∇Φ (level), scale, blocks)`` at X; factors ``H_MM``. ``radii``: per norm term,
        ``r_g``; ``lagrangian``: per norm term None or ``(kink mask, λ (groups × k), c)``."""
        sys_, form = self.system, self.form
        grad = np.reshape(form.smooth_gradient(X.ravel()), X.shape)
        scale = form.smooth_scale
        row_weights, blocks = [], []
        for k, p in enumerate(sys_.norms):
            r = radii[k]
            Z = p.value_at(X)
            G = np.reshape(Z, (p.w.size, -1))
            a, b = p.w / r, -p.w / r**3
            Gr = a[:, None] * G
            al = None if lagrangian is None else lagrangian[k]
            if al is not None:
                mask, lam, c = al
                a = np.where(mask, c, a)
                b = np.where(mask, 0.0, b)
                Gr = np.where(mask[:, None], lam + c[:, None] * G, Gr)
            pulled = p.AT @ np.reshape(Gr, Z.shape)
            scale = max(scale, float(np.max(np.abs(pulled), initial=0.0)))
            grad += pulled
            row_weights.append(np.repeat(a, p.size))
            blocks.append((p, Z, a, b, r, al))
        for p in sys_.hubers:
            Z = p.value_at(X)
            G = np.reshape(Z, (p.w.size, -1))
            norms = np.linalg.norm(G, axis=1)
            inside = norms <= p.term.delta
            safe = np.where(inside, 1.0, norms)
            a = p.w * np.where(inside, 1.0 / p.term.delta, 1.0 / safe)
            row_weights.append(np.repeat(a, p.size))
            blocks.append((p, Z, a, np.where(inside, 0.0, -p.w / safe**3), None, None))
        self._pending = row_weights  # factored by the first solve that needs it
        self._splits = np.cumsum([w.size for w in row_weights])[:-1]
        return grad, max(1.0, scale), blocks

    def _ready(self) -> None:
        """Factor ``H_MM`` at the pending weights — unless every weight is within a factor
        REUSE of the factored ones: the factor then stays as the preconditioner of the Newton
        system's PCG, whose condition number the weights' ratio bounds (the last steps of a
        stage move the weights little; the next stage scales the kink groups' by √factor)."""
        if self._pending is None:
            return
        weights = np.concatenate(self._pending) if self._pending else np.zeros(0)
        self._pending = None
        old = self._factored
        if old is not None and old.size == weights.size and np.all(
                (weights <= REUSE * old) & (old <= REUSE * weights)):
            self.reused += 1
            return
        # a smooth model has no weighted block: no weights to split
        parts = np.split(weights, self._splits) if self.pattern.maps else []
        self._factor(self.pattern.matrix(parts))
        self._factored = weights

    def mm(self, X, grad):
        """The MM step: the minimizer of the majorizer."""
        self._ready()
        return X - self.ldl.solve(grad)

    def newton(self, X, grad, blocks, iters: int = 0, rtol: float = 0.0):
        """``(X + t d, t)``: steps 2 and 3 of the class docstring (``iters``, ``rtol``: the
        PCG's, PCG_ITERS and PCG_RTOL by default)."""
        self._ready()
        D = self._pcg(grad, blocks, iters or PCG_ITERS, rtol or PCG_RTOL)
        t = self._line(grad, D, blocks)
        return X + t * D, t

    # -- the Newton system by PCG
    def _hessp(self, V, blocks):
        out = self.Q @ V
        for p, Z, a, b, _, _ in blocks:
            ZV = p.A @ V
            G, GV = np.reshape(Z, (a.size, -1)), np.reshape(ZV, (a.size, -1))
            HV = a[:, None] * GV + (b * np.sum(G * GV, axis=1))[:, None] * G
            out = out + p.AT @ np.reshape(HV, ZV.shape)
        return out

    def _pcg(self, grad, blocks, iters: int, rtol: float):
        r = -grad
        y = self.ldl.solve(r)
        D, P = np.zeros_like(r), y.copy()
        ry = float(np.sum(r * y))
        target = (rtol ** 2) * ry
        for _ in range(iters):
            HP = self._hessp(P, blocks)
            curvature = float(np.sum(P * HP))
            if not curvature > 0:
                break
            step = ry / curvature
            D += step * P
            r -= step * HP
            self.cg_iterations += 1
            y = self.ldl.solve(r)
            ry_new = float(np.sum(r * y))
            if ry_new <= target:
                break
            P = y + (ry_new / ry) * P
            ry = ry_new
        if not float(np.sum(grad * D)) < 0:  # round-off: the MM direction
            D = -self.ldl.solve(grad)
        return D

    # -- the exact line search
    def _line(self, grad, D, blocks) -> float:
        from scipy.optimize import brentq

        slope0 = float(np.sum(grad * D))
        if not slope0 < 0:
            return 0.0
        c2 = float(np.sum(D * (self.Q @ D)))
        pieces = []
        for p, Z, _, _, r, al in blocks:
            dZ = p.A @ D
            if r is None:
                g0 = np.reshape(p.term.gradient(p.as_term(Z)), Z.shape)
                pieces.append((p, Z, dZ, float(np.sum(g0 * dZ)), None, None, None, None))
                continue
            G, dG = np.reshape(Z, (r.size, -1)), np.reshape(dZ, (r.size, -1))
            zd, dd = np.sum(G * dG, axis=1), np.sum(dG * dG, axis=1)
            mask = np.zeros(r.size, dtype=bool) if al is None else al[0]
            c = 0.0 if al is None else float(np.sum(al[2][mask] * dd[mask]))
            keep = ~mask
            pieces.append((None, p.w[keep], zd[keep], dd[keep], r[keep], c, None, None))

        def dphi(t):
            value = slope0 + t * c2
            for p, w, zd, dd, r, c, _, _ in pieces:
                if p is None:
                    value += float(np.sum(w * ((zd + t * dd) / np.sqrt(
                        r * r + t * (2.0 * zd + t * dd)) - zd / r))) + t * c
                else:
                    Z, dZ, base = w, zd, dd
                    g = np.reshape(p.term.gradient(p.as_term(Z + t * dZ)), Z.shape)
                    value += float(np.sum(g * dZ)) - base
            return value

        hi = 1.0
        g_hi = dphi(hi)
        while g_hi < 0 and hi < 64.0:
            hi *= 2.0
            g_hi = dphi(hi)
        if g_hi <= 0:
            return hi
        lo = hi / 2.0 if hi > 1.0 else 0.0
        return brentq(dphi, lo, hi, xtol=1e-10 * hi, rtol=1e-12, maxiter=100)

    def _factor(self, H):
        self.factorizations += 1
        base = float(np.max(np.abs(H.diagonal()), initial=0.0)) or 1.0
        shift = 0.0
        for _ in range(4):
            try:
                A = H
                if shift:
                    A = sp.csc_matrix(H + shift * sp.identity(H.shape[0], format="csc"))
                    A.sort_indices()
                self.ldl.factor_upper(A)
                if not self._checked:  # H_MM is positive definite once it is (weights > 0)
                    self.ldl.check_positive()
                    self._checked = True
                return
            except InvalidInputError:
                shift = SHIFT * base if shift == 0 else shift * 1e3
        raise InvalidInputError(
            "the weighted least-squares system of irls-mm is singular: some unknowns are "
            "reached by no quadratic term and no norm; add a small ridge on them.")

