r"""A primal–dual solver for any convex model whose non-smooth parts offer a prox
(docs/design.md §6).

Splitting. A model ``Σ_k h_k(A_k θ + c_k)`` subject to constraints is read as::

    min_θ  F(θ) + Σ_v g_v(θ_v) + Σ_k h_k(A_k θ + c_k)

* ``F`` — the terms with a gradient;
* ``g_v`` — one non-smooth term or constraint per variable whose argument is that whole
  variable (a constraint first: its projection keeps the iterates feasible);
* ``h_k`` — every other non-smooth term or constraint (A_k = identity for a second one on the
  same variable), each used through its prox.

Iteration (Condat 2013 / Vũ 2013; Chambolle & Pock 2011 when F = 0) in a primal metric ``D``
with diagonal steps T, Σ::

    θ⁺ = prox_{Tg}(θ − T D⁻¹(∇F(θ) + Σ_k A_kᵀ y_k))
    y_k⁺ = prox_{Σ_k h_k*}(y_k + Σ_k(A_k(2θ⁺ − θ) + c_k))

the dual prox by Moreau's identity, ``prox_{σh*}(v) = v − σ·prox_{h/σ}(v/σ)`` (the offset c_k
enters through ``A_k x̄ + c_k``: ``h_k(· + c_k)`` has conjugate ``h_k*(y) − ⟨c_k, y⟩``). It
converges when ``(TD)⁻¹ − AᵀΣA ⪰ (L/2)(1 + ε)D`` with ``L`` the Lipschitz constant of ∇F in the
metric D (the cocoercivity of ∇F in the metric of the iteration; Condat 2013 Thm. 3.1 in
those coordinates).

* **Metric.** ``D = I`` except on a kernel-expansion variable α (no g; a quadratic form
  ``w tr(αᵀKα)`` on it, and every other map on α starts with the same matrix, ``K @ alpha``):
  there ``D = K`` (the RKHS metric). ``D⁻¹Aᵀ`` and ``D⁻¹∇F`` are then the adjoints without their
  first factor K (``K⁻¹Kᵀ = I``), so K is never inverted, and the step on α is as well
  conditioned as the problem in f = Kα. Measured on the hinge + RKHS + graph quadratic + graph
  TV model of the tests (RBF kernel, eigenvalues down to 1e-9, n = 60): 400–900 iterations with
  it, stationarity still 2e-6 after 20,000 without.
* **Diagonal preconditioning** (Pock & Chambolle 2011, α = 1). ``precondition="elementwise"``:
  ``Σ₀ = 1/(|A|1)`` per row and ``T₀ = 1/(|A|ᵀ1)`` per column, from products with the entrywise
  absolute maps (explicit matrices; a products-only operator or a kernel variable contributes
  its block norm), elementwise where the term declares ``elementwise_prox`` (and the variable's
  g does), the smallest step otherwise. ``"blocks"``: Pock–Chambolle on the small matrix of
  block norms ``‖A_kv D_v^{-½}‖`` (power iteration): one σ per term, one τ per variable.
  Either way ``‖Σ₀^{½} A (T₀D⁻¹)^{½}‖`` is then measured by power iteration over the stacked maps
  and both are rescaled so that it is 1. Measured (iterations to the default tol):
  least-absolute-deviation regression with column scales 10^±1.5, 5,600 elementwise against
  more than 50,000 by blocks or with no preconditioning; the kernel models, 512–864 by blocks
  against 896–3,456 elementwise (the dense rows of K tie every entry to every other); TV
  denoising, the same within 10 %. ``"auto"`` (the default) takes blocks when a kernel metric
  is in use, elementwise otherwise.
* ``Σ = ωΣ₀``, ``T⁻¹ = ωT₀⁻¹ + (L/2)(1 + ε)`` satisfy the condition for every primal weight
  ω > 0; ``L`` by power iteration on the terms' ``hessp`` when every smooth term has it, from
  gradient differences otherwise; unless every smooth term is quadratic it is doubled whenever
  ``F(θ⁺) ≤ F(θ) + ⟨∇F(θ), θ⁺ − θ⟩ + (L/2)‖θ⁺ − θ‖²_D`` fails (the step is then redone).
* **Restarts with primal-weight updates** (Applegate et al. 2021, restarted PDHG / PDLP):
  every ``check_every`` iterations the fixed-point residual ``‖z − T(z)‖_P`` (P the metric of
  the iteration) of the current iterate and of the average since the last restart are
  compared; the iteration restarts from the better one when it is below 0.2× the residual at
  the last restart, or below 0.8× and no longer decreasing, or after 36 % of the iterations so
  far; at a restart ``ω ← √(ω · ‖Δy‖/‖Δθ‖)`` (distances travelled since the last restart, in
  the preconditioned norms). Plain PDHG (``restart=False``) needed 5× the iterations on 1-D TV
  denoising (2,720 against 512 at n = 2,000) and did not reach 1e-6 in 20,000 on the kernel
  models. Balancing the primal and dual residuals instead (Goldstein et al. 2015,
  ``weight_update="residual"``) saved up to 20 % on TV denoising but cost up to 3× on the
  kernel models.

* **Anderson extrapolation** (``anderson`` memory, off by default): safeguarded type-II Anderson
  acceleration (Walker & Ni 2011) of the pairs (z, T(z)), an extrapolated point kept when its
  fixed-point residual is not larger. Measured: 2–10× fewer iterations on TV denoising and LASS
  + entropy (1,312 → 128), but most proposals rejected — 1.5–3× the time — on the kernel
  models, least absolute deviations and the LapSVM + TV example.

The smooth part is not accelerated: its condition number in the metric D sets the iteration
count when it dominates (the LapSVM + TV example of ``ssl_opt.modeling.examples``, n = 60: about
14,000 iterations; the simplex-constrained multiclass example, n = 45: about 43,000).

A model whose dual solution does not exist cannot converge: Entropy with FixedRows fixing
zeros on the same variable (the entropy's subgradient is unbounded at 0) ends at
``MAX_ITERATIONS`` here; the ``mirror`` solver handles it.

With no ``h`` the iteration is proximal gradient; it is then run as FISTA with gradient-based
adaptive restart (O'Donoghue & Candès 2015), step 1/L, in the same metric.

Multipliers and stopping. The dual iterates are the multipliers of the ``h_k``; for a ``g_v``
the prox step gives ``u_v = (θ̃_v − θ⁺_v)/τ_v ∈ ∂g_v(θ⁺_v)`` (θ̃ the point before the prox), so
``∇F(θ⁺) + u + Aᵀy⁺`` is exactly the step's primal residual. The solution carries them in
``info["multipliers"]`` (one array per non-smooth term, then per constraint, in model order,
each of its argument's shape). The solver stops only when the model's own certificate
(:func:`~plugins.model.common.certificate_check`, started from those multipliers, with the
kink tolerance lowered to ``tol`` when that is below the model's 1e-6) has stationarity and
feasibility ≤ ``tol``. The certificate runs when the step's residuals are below ``tol``, each
time they have fallen 10× since the last one, and at least every 50 checks (it can pass first:
at entries of an entropy near 0 the dual step's subgradient is far from the one at the
iterate). A fixed point that fails the certificate (a prox inconsistent with its term's
subdifferential) is ``STALLED``; the best iterate (smallest residual) is returned, its status
from the full certificate.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from ssl_opt._validation import check_bool, check_positive, choice, integer
from ssl_opt.hookspecs import hookimpl
from ssl_opt.modeling.model import Model
from ssl_opt.modeling.terms.constraints import FixedRows
from ssl_opt.modeling.terms.entropy import Entropy
from ssl_opt.numerics.anderson import SafeguardedAnderson
from ssl_opt.plugins.model.common import (
    ModelSolver,
    certificate_check,
    kernel_expansion,
    kink_tolerance,
    lacking,
    pass_seconds,
    prox_seconds,
    warm_start_point,
)
from ssl_opt.plugins.model.iterative import TIME_LIMIT_OPTION, VERBOSE_OPTION, Run
from ssl_opt.plugins.model.pdhg_split import (
    Split,
    innermost_matmul,
    lipschitz,
    preconditioner,
)
from ssl_opt.solution import MAX_ITERATIONS, OPTIMAL, STALLED, TIME_LIMIT, History, Solution
from ssl_opt.solvers import Option

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


# ------------------------------------------------------------------ the solver
class PDHG(ModelSolver):
    name = "pdhg"
    description = ("Primal–dual hybrid gradient (Condat–Vũ) for models whose non-smooth terms "
                   "and constraints offer a prox: diagonal preconditioning (Pock & Chambolle "
                   "2011), the RKHS metric on kernel expansions, restarts with primal-weight "
                   "updates (Applegate et al. 2021), FISTA with adaptive restart when every "
                   "non-smooth part sits on a whole variable; stops on the model's certificate.")
    complexity = {"model": (1.0, "O(products with the maps) per iteration")}
    options = {
        "tol": Option(1e-8, "stop when the model's certificate (stationarity and feasibility, "
                      "started from the solver's multipliers) is below this", check_positive),
        "max_iter": Option(50_000, "iterations at most (status MAX_ITERATIONS beyond)",
                           integer(1)),
        "check_every": Option(32, "iterations between restart decisions and certificate "
                              "checks", integer(1)),
        "restart": Option(True, "restarts with primal-weight updates (False: plain PDHG at a "
                          "fixed primal weight; FISTA without restarts)", check_bool),
        "precondition": Option("auto", "diagonal steps (Pock & Chambolle 2011): 'elementwise' "
                               "(row and column sums of |A| where the proxes allow), 'blocks' "
                               "(one σ per term and one τ per variable from the block norms), "
                               "'none' (one σ, one τ) or 'auto' (blocks with a kernel metric, "
                               "elementwise otherwise)",
                               choice("auto", "blocks", "elementwise", "none")),
        "kernel_metric": Option(True, "the RKHS metric K on kernel-expansion variables "
                                "(False: Euclidean)", check_bool),
        "weight_update": Option("distance", "primal-weight update at restarts: 'distance' "
                                "(PDLP), 'residual' (balance the primal and dual residuals, "
                                "Goldstein et al. 2015) or 'none'",
                                choice("distance", "residual", "none")),
        "anderson": Option(0, "memory of a safeguarded Anderson extrapolation of the "
                           "iteration (0: off)", integer(0)),
        "primal_weight": Option(1.0, "initial ratio ω of the dual to the primal steps (in the "
                                "preconditioned norms)", check_positive),
        "warm_start": Option(None, "a previous Solution (its info['multipliers'] start the dual "
                             "iterates) or a dict of the model's variables"),
        "time_limit": TIME_LIMIT_OPTION,
        "verbose": VERBOSE_OPTION,
    }

    # -- structure
    def structure_reasons(self, model: Model) -> list[str]:
        free = model.nonsmooth_terms + model.constraints
        return lacking(free, ("prox",), "PDHG's proximal and dual steps") + lacking(
            free, ("subdifferential",), "the model's certificate, PDHG's stopping test")

    def inexact(self, problem) -> str:
        """Two structures measured not to converge: a kernel expansion without the RKHS
        metric, and Entropy with FixedRows fixing zeros on the same variable."""
        if not isinstance(problem, Model) or self.structure_reasons(problem):
            return ""
        split = Split(problem)
        for t in problem.all_terms:
            for var, m in t.argument.parts:
                inner = innermost_matmul(m)
                if (inner is not None and var.name not in split.metric and var.shape
                        and not sp.issparse(inner.M)
                        and inner.M.shape == (var.shape[0], var.shape[0]) and var.shape[0] > 1):
                    return (f"{t.describe()} applies a dense square matrix to {var.name!r} "
                            "without an RKHS term on the same matrix (no kernel metric): "
                            "PDHG in the Euclidean metric crawls on kernel expansions")
        fixed_zero = {c.argument.parts[0][0].name for c in problem.constraints
                      if isinstance(c, FixedRows) and c.argument.is_variable()
                      and np.any(c.values == 0)}
        for t in problem.nonsmooth_terms:
            if isinstance(t, Entropy) and t.argument.is_variable() and (
                    t.argument.parts[0][0].name in fixed_zero):
                return (f"{t.describe()} with FixedRows fixing zeros of the same variable has "
                        "no dual solution (the entropy's subgradient is unbounded at 0); the "
                        "mirror solver handles it")
        return ""

    def predicted_time(self, problem) -> float:
        """Iterations × the products of one iteration (about three passes over every map,
        with the smooth terms' own matrices): a few hundred iterations with restarts on the
        test models, more with constraints on affine maps."""
        if not isinstance(problem, Model):
            return float("nan")
        split = Split(problem)
        iterations = 1000.0 if split.h else 300.0
        if kernel_expansion(problem, problem.all_terms):
            # Measured on the kernel variants (docs/modeling.md, n = 45..120): 800 to 40,000
            # iterations, the smooth part's conditioning is that of K·K.
            iterations *= 10.0
        per_iteration = (3.0 * pass_seconds(problem) + prox_seconds(problem)
                         + 2e-5 * len(problem.all_terms))
        return 0.02 + iterations * per_iteration

    # -- solve
    def _solve(self, model: Model, tol, max_iter, check_every, restart, precondition,
               kernel_metric, weight_update, anderson, primal_weight, warm_start,
               time_limit, verbose) -> Solution:
        split = Split(model, kernel_metric)
        x0, mult0 = warm_start_point(model, warm_start)
        if x0 is not None:  # a warm start that already passes is returned as is
            cert = certificate_check(model, x0, mult0, CHECK_ITERS, CHECK_TOL,
                                     kink_tolerance(tol))
            if max(cert.values(), default=0.0) <= tol:
                x = {k: np.array(v) for k, v in x0.items()}
                return Solution(x, model.objective(x), OPTIMAL, 0, 0.0, self.backend,
                                self.name, History(), info={"warm_start_certified": True,
                                                            "certificate": cert,
                                                            "multipliers": mult0})
        theta = np.zeros(split.size) if x0 is None else np.concatenate(
            [np.ravel(x0[name]) for name in split.shapes])
        y0 = [np.zeros(t.shape) for t in split.h]
        if mult0 is not None:
            for (role, key), u in zip(split.roles, mult0, strict=True):
                if role == "h":
                    y0[key] = np.array(u)
        run = _Run(self, split, tol, max_iter, check_every, restart, weight_update, anderson,
                   time_limit, verbose)
        # One BLAS thread: the loop alternates many small products, and idle pool threads
        # spinning between them cost milliseconds per call on a loaded machine.
        with threadpool_limits(1):
            if not split.h:
                return run.fista(theta)
            return run.pdhg(theta, y0, precondition, primal_weight)


class _Run(Run):
    """One solve: the loops and the checks (the bookkeeping is :class:`Run`'s)."""

    def __init__(self, solver: PDHG, split: Split, tol, max_iter, check_every, restart,
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
        return status or (TIME_LIMIT if self.out_of_time() else None)

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


@hookimpl
def register_solvers():
    return [PDHG()]
