"""The iteration of ``pdhg`` (:mod:`ssl_opt.plugins.model.pdhg`, whose docstring derives it):
the preconditioned Condat–Vũ loop with restarts and primal-weight updates, its FISTA form when
no term sits on a map, and the checks on the model's certificate (the bookkeeping is
:class:`~ssl_opt.plugins.model.iterative.Run`'s)."""

from __future__ import annotations

import numpy as np

from ssl_opt.numerics.anderson import SafeguardedAnderson
from ssl_opt.plugins.model.common import (
    ModelSolver,
)
from ssl_opt.plugins.model.iterative import Run
from ssl_opt.plugins.model.pdhg_split import (
    Split,
    lipschitz,
    preconditioner,
)
from ssl_opt.solution import MAX_ITERATIONS, OPTIMAL, STALLED, Solution

#: Slack ε in ``T⁻¹ = ωT₀⁻¹ + (L/2)(1 + ε)`` (the convergence condition is strict).
STEP_SLACK = 0.05
#: PDLP's restart thresholds (Applegate et al. 2021): sufficient, necessary, artificial.
RESTART_SUFFICIENT, RESTART_NECESSARY, RESTART_ARTIFICIAL = 0.2, 0.8, 0.36
#: Iterations and relative accuracy of the certificate's minimization at a check (both can
#: only overstate the residual); the final status uses the model's defaults.
CHECK_ITERS, CHECK_TOL = 300, 1e-6
#: Checks between two certificates at most (each costs up to CHECK_ITERS products).
CERTIFY_EVERY = 50
#: Checks in a row whose certificate fails at a fixed point before STALLED.
STALL_CHECKS = 3
#: A fixed point: the step's residuals below this fraction of ``tol``.
FIXED_POINT = 1e-2


class PDHGRun(Run):
    """One solve: the loops and the checks (the bookkeeping is :class:`Run`'s)."""

    def __init__(self, solver: ModelSolver, split: Split, tol, max_iter, check_every, restart,
                 weight_update, anderson, time_limit, verbose):
        super().__init__(solver.name, split.model, tol, max_iter, time_limit, verbose)
        self.solver, self.split = solver, split
        self.check_every, self.restart = check_every, restart
        self.weight_update, self.anderson = weight_update, anderson
        self.rng = np.random.default_rng(0)
        self.failed_at_fixed_point = 0
        self.last_certified, self.since_certified = np.inf, 0

    # ---------------------------------------------------------------- shared checks
    def _check(self, it: int, theta, u_g, ys, grad, aty, d_rel, extra: dict) -> str | None:
        """Record a history row (``grad``, ``aty``: the true ∇F and Aᵀy at θ); run the
        certificate when the step's residuals say it may pass; a status to stop with, or
        None."""
        split = self.split
        p = grad + u_g + aty
        scale = max(1.0, *(float(np.max(np.abs(a), initial=0.0)) for a in (grad, aty, u_g)))
        p_rel = float(np.max(np.abs(p), initial=0.0)) / scale
        score = max(p_rel, d_rel)
        mult = split.multipliers(u_g, ys)
        self.keep(score, theta, mult)
        x = split.unpack(theta)
        row = {"iteration": it, "objective": self.model.objective(x), "stationarity": p_rel,
               "feasibility": self._feasibility(x), "dual_residual": d_rel, **extra}
        status = None
        # The certificate (its own minimization over subgradients, with kink tolerances) can
        # pass before the step's residuals do — e.g. at entries of an entropy near 0 — so it
        # runs on a geometric schedule of the residual, and at least every CERTIFY_EVERY
        # checks, besides whenever the residual is below tol.
        self.since_certified += 1
        if (score <= self.tol or score <= 0.1 * self.last_certified
                or self.since_certified >= CERTIFY_EVERY):
            cert = self.certify(x, mult, CHECK_ITERS, CHECK_TOL)
            self.last_certified, self.since_certified = score, 0
            row["certificate"] = max(cert.values(), default=0.0)
            if row["certificate"] <= self.tol:
                self.certified(theta, mult)
                status = OPTIMAL
            elif score <= FIXED_POINT * self.tol:
                self.failed_at_fixed_point += 1
                if self.failed_at_fixed_point >= STALL_CHECKS:
                    status = STALLED
        self.record(**row)
        self.watch_divergence(row["objective"], self.model.pack(x))
        return status or self.interruption()

    def _feasibility(self, x) -> float:
        if not self.model.constraints:
            return 0.0
        return max(c.feasibility(c.argument.value(x)) for c in self.model.constraints)

    def _finish(self, status: str, it: int, info: dict) -> Solution:
        _, theta, mult = self.best
        x = {k: np.array(v) for k, v in self.split.unpack(theta).items()}
        status = self.final_status(status, x, mult, info)
        info.update(multipliers=mult, certificates=self.certificates,
                    roles=[f"{r}:{k}" for r, k in self.split.roles],
                    kernel_metric=sorted(self.split.metric))
        if status == STALLED:
            info["note"] = ("the iteration reached a fixed point that fails the model's "
                            "certificate: a prox inconsistent with its term's "
                            "subdifferential, or a kink the certificate does not see")
        return Solution(x, self.model.objective(x), status, it, 0.0, self.solver.backend,
                        self.solver.name, self.history, info=info)

    def _descent_fails(self, F_old, d_old, theta_old, theta_new, F_new, L) -> bool:
        """The descent inequality in the metric D fails (never checked for quadratic F)."""
        if self.split.quadratic:
            return False
        dx = theta_new - theta_old
        Ddx = self.split.D(dx)
        bound = F_old + float(d_old @ Ddx) + 0.5 * L * float(dx @ Ddx)
        return F_new > bound + 1e-12 * max(1.0, abs(F_old))

    # ---------------------------------------------------------------- FISTA (no h)
    def fista(self, theta: np.ndarray) -> Solution:
        """Accelerated proximal gradient with gradient-based adaptive restart (O'Donoghue &
        Candès 2015), step 1/L in the metric D, backtracking, on ``F + Σ g_v``."""
        split = self.split
        L = max(lipschitz(split, theta, self.rng), 1e-12)
        theta = split.prox_g(theta, np.full(split.size, 1.0 / L))
        y, t_k, prev = theta.copy(), 1.0, theta.copy()
        restarts = backtracks = 0
        status, it = None, 0
        while it < self.max_iter:
            it += 1
            Fy, dy = split.smooth(y)
            while True:
                v = y - dy / L
                new = split.prox_g(v, np.full(split.size, 1.0 / L))
                if not split.has_smooth or L >= 1e300 or not self._descent_fails(
                        Fy, dy, y, new, split.smooth_value(new), L):
                    break
                L *= 2.0
                backtracks += 1
            u_g = (v - new) * L  # zero on a kernel variable (no g there)
            if self.restart and float((y - new) @ split.D(new - prev)) > 0:
                t_k, y = 1.0, new.copy()
                restarts += 1
            else:
                t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t_k * t_k))
                y = new + ((t_k - 1.0) / t_next) * (new - prev)
                t_k = t_next
            prev = new
            if it % self.check_every == 0 or it == self.max_iter:
                grad = split.D(split.smooth(new)[1])
                status = self._check(it, new, u_g, [], grad, np.zeros(split.size), 0.0,
                                     {"L": L, "restarts": restarts})
                if status is not None:
                    break
        return self._finish(status or MAX_ITERATIONS, it,
                            {"method": "fista", "L": L, "restarts": restarts,
                             "backtracks": backtracks})

    # ---------------------------------------------------------------- PDHG
    def pdhg(self, theta: np.ndarray, y: list[np.ndarray], precondition: str,
             omega: float) -> Solution:
        split = self.split
        if precondition == "auto":
            precondition = "blocks" if split.metric else "elementwise"
        sigma0, tinv0, norm_A = preconditioner(self.split, precondition, self.rng)
        # A floor: a smooth part flat at the start (the Huber hinge at 0) would leave the
        # backtracking doubling 0 forever.
        L = max(lipschitz(split, theta, self.rng), 1e-12)
        backtracks = restarts = 0

        def steps(omega, L):
            tinv = omega * tinv0 + 0.5 * L * (1.0 + STEP_SLACK)
            floor = max(1e-12 * float(np.max(tinv, initial=0.0)), 1e-300)
            return 1.0 / np.maximum(tinv, floor), [omega * s for s in sigma0]

        tau, sigma = steps(omega, L)

        def point(theta, y):
            F, d = split.smooth(theta)
            return {"theta": theta, "y": y, "Ax": split.A(theta), "ATy": split.AT(y),
                    "F": F, "d": d}

        def step(pt, tau, sigma):
            """One iteration from ``pt``: the new point and u_g, or (None, None) when the
            descent inequality fails."""
            v = pt["theta"] - tau * (pt["d"] + pt["ATy"])
            new = split.prox_g(v, tau)
            F, d = split.smooth(new)
            if split.has_smooth and L < 1e300 and self._descent_fails(
                    pt["F"], pt["d"], pt["theta"], new, F, L):
                return None, None
            u_g = (v - new) / tau  # zero on a kernel variable (no g there)
            Ax = split.A(new)
            ys = [split.prox_conjugate(k, yk + s * (2.0 * a - a_old + c), s)
                  for k, (yk, s, a, a_old, c) in enumerate(zip(
                      pt["y"], sigma, Ax, pt["Ax"], split.offsets, strict=True))]
            return {"theta": new, "y": ys, "Ax": Ax, "ATy": split.AT(ys), "F": F, "d": d}, u_g

        def fixed_point_residual(old, new, u_g, tau, sigma) -> tuple[float, float, float]:
            """``(‖z − T(z)‖_P, relative dual residual, balance)`` of the step old → new: the
            dual residual ``d = A(θ⁺ − θ) − (y⁺ − y)/σ`` is how far z(θ⁺) is from the point
            where y⁺ is a subgradient; ``balance = ‖√σ d‖ / ‖√T p‖`` (p the step's primal
            residual) is the ratio Goldstein et al. 2015 balance."""
            dx = new["theta"] - old["theta"]
            fp, d_rel, d_bal = float(dx @ split.D(dx / tau)), 0.0, 0.0
            for yo, yn, ao, an, s, c in zip(old["y"], new["y"], old["Ax"], new["Ax"], sigma,
                                            split.offsets, strict=True):
                dy, dA = yn - yo, an - ao
                d = dA - dy / s
                fp += float(np.sum(dy * dy / s)) - 2.0 * float(np.sum(dy * dA))
                d_bal += float(np.sum(s * d * d))
                d_rel = max(d_rel, float(np.max(np.abs(d), initial=0.0))
                            / max(1.0, float(np.max(np.abs(an + c), initial=0.0))))
            p = new["d"] + u_g + new["ATy"]
            p_bal = float(p @ split.D(tau * p))
            ratio = np.sqrt(d_bal / p_bal) if p_bal > 0 and d_bal > 0 else 1.0
            return float(np.sqrt(max(fp, 0.0))), d_rel, float(ratio)

        sizes = [int(np.prod(t.shape, dtype=int)) for t in split.h]
        cuts = np.cumsum([split.size] + sizes)[:-1]

        def vec(pt) -> np.ndarray:
            return np.concatenate([pt["theta"]] + [y.ravel() for y in pt["y"]])

        def evaluate(v):
            """``(z, T(z), u_g, residual)`` at an extrapolated z, or None (descent fails)."""
            parts = np.split(v, cuts)
            q = point(parts[0].copy(), [a.reshape(t.shape) for a, t in zip(
                parts[1:], split.h, strict=True)])
            image, u = step(q, tau, sigma)
            if image is None:
                return None
            return q, image, u, fixed_point_residual(q, image, u, tau, sigma)[0]

        def advance(pt):
            """``(T(pt), u_g)``, doubling L until the descent inequality holds."""
            nonlocal L, tau, sigma, backtracks
            while True:
                image, u = step(pt, tau, sigma)
                if image is not None:
                    return image, u
                L *= 2.0
                backtracks += 1
                tau, sigma = steps(omega, L)
                aa.restart()

        aa = SafeguardedAnderson(split.size + sum(sizes), self.anderson, clear_on_reject=True)
        # The pair (pt, img = T(pt)): img is the iterate; Anderson extrapolates the pairs.
        pt = point(theta, y)
        img, u_g = advance(pt)
        aa.observe(vec(pt), vec(img))
        it, status = 1, None
        anchor = pt  # the last restart point
        avg_theta, avg_y, n_avg = img["theta"].copy(), [a.copy() for a in img["y"]], 1
        r_anchor = fixed_point_residual(pt, img, u_g, tau, sigma)[0]
        r_prev, last_restart = np.inf, 0
        while it < self.max_iter:
            before, found = it, None
            if self.anderson:
                base = fixed_point_residual(pt, img, u_g, tau, sigma)[0]
                tried = aa.accepted + aa.rejected
                found = aa.propose(evaluate, lambda c, base=base: c is not None
                                   and c[3] <= base)
                it += aa.accepted + aa.rejected - tried  # the extrapolated point's step
            if found is not None:
                pt, img, u_g = found[:3]
            else:
                nxt, u_g = advance(img)
                pt, img = img, nxt
                it += 1
            aa.observe(vec(pt), vec(img))
            avg_theta += img["theta"]
            for a, yk in zip(avg_y, img["y"], strict=True):
                a += yk
            n_avg += 1
            if it // self.check_every == before // self.check_every and it < self.max_iter:
                continue
            fp, d_rel, ratio = fixed_point_residual(pt, img, u_g, tau, sigma)
            extra = {"omega": omega, "fixed_point_residual": fp, "L": L, "restarts": restarts}
            status = self._check(it, img["theta"], u_g, img["y"], split.D(img["d"]),
                                 split.D(img["ATy"]), d_rel, extra)
            if status is not None:
                break
            if not self.restart or it >= self.max_iter:
                continue
            # Restart decision (PDLP): the current iterate or the average since the restart.
            candidate, r_cand, r_ratio = img, fp, ratio
            if n_avg > 1:
                mean = point(avg_theta / n_avg, [a / n_avg for a in avg_y])
                trial, u_mean = step(mean, tau, sigma)
                if trial is not None:
                    r_mean, _, ratio_mean = fixed_point_residual(mean, trial, u_mean, tau, sigma)
                    if r_mean < r_cand:
                        candidate, r_cand, r_ratio = mean, r_mean, ratio_mean
            restart = (r_cand <= RESTART_SUFFICIENT * r_anchor
                       or (r_cand <= RESTART_NECESSARY * r_anchor and r_cand > r_prev)
                       or it - last_restart >= RESTART_ARTIFICIAL * it)
            r_prev = r_cand
            if not restart:
                continue
            restarts += 1
            if self.weight_update == "distance":
                omega = self._primal_weight(omega, anchor, candidate, sigma0, tinv0)
            elif self.weight_update == "residual":
                omega *= float(np.clip(r_ratio, 0.1, 10.0))
            tau, sigma = steps(omega, L)
            pt = anchor = candidate
            img, u_g = advance(pt)
            it += 1
            aa.restart()
            aa.observe(vec(pt), vec(img))
            avg_theta, avg_y, n_avg = img["theta"].copy(), [a.copy() for a in img["y"]], 1
            last_restart, r_prev = it, np.inf
            r_anchor = fixed_point_residual(pt, img, u_g, tau, sigma)[0]
        return self._finish(status or MAX_ITERATIONS, it,
                            {"method": "pdhg", "L": L, "omega": omega, "restarts": restarts,
                             "backtracks": backtracks, "norm_A_preconditioned": norm_A,
                             "precondition": precondition,
                             "anderson_accepted": aa.accepted,
                             "anderson_rejected": aa.rejected})

    def _primal_weight(self, omega, anchor, candidate, sigma0, tinv0) -> float:
        """PDLP's update ``ω ← exp(½ log(Δy/Δθ) + ½ log ω)`` in the preconditioned norms."""
        dtheta = candidate["theta"] - anchor["theta"]
        dx = float(np.sqrt(max(float(dtheta @ self.split.D(dtheta * tinv0)), 0.0)))
        dy = float(np.sqrt(sum(float(np.sum((a - b) ** 2 / s)) for a, b, s in zip(
            candidate["y"], anchor["y"], sigma0, strict=True))))
        if dx > 1e-12 * max(1.0, float(np.linalg.norm(candidate["theta"]))) and dy > 0:
            return float(np.exp(0.5 * np.log(dy / dx) + 0.5 * np.log(omega)))
        return omega
