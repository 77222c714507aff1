r"""ADMM on the splitting of every non-smooth term and constraint (docs/modeling.md).

Model. ``F(θ) + Σ_k h_k(A_k θ + a_k)`` with ``F`` the sum of the smooth terms, every one of
them quadratic (a constant Hessian: squared error, ridge, linear, quadratic forms such as the
RKHS norm and the graph quadratic), and every ``h_k`` a non-smooth term or a constraint with
a prox (a projection) on its affine argument — simplex rows, ℓ1 / graph TV, boxes, …

Splitting (Boyd et al. 2011, §3; scaled dual ``u_k``, one penalty ρ)::

    θ⁺   = argmin_θ F(θ) + ρ/2 Σ_k ‖A_kθ + a_k − y_k + u_k‖²
    ẑ_k  = α(A_kθ⁺ + a_k) + (1 − α) y_k                    (over-relaxation, α = 1.6)
    y_k⁺ = prox_{h_k/ρ}(ẑ_k + u_k)
    u_k⁺ = u_k + ẑ_k − y_k⁺

The θ-update is one linear system ``(∇²F + ρ Σ A_kᵀA_k) θ = r`` whose matrix never changes:
it is factorized once (again only when ρ is adapted, OSQP-style: Stellato et al. 2020 §5.2,
at most ``MAX_REFACTORS`` times) and reused at every iteration.

* **Column view.** When every map acts on the rows of n×c variables the same way in each of
  the c columns (matrix products, row selections, bias broadcasts, scalar scales) and every
  smooth term's Hessian is ``H₀ ⊗ I_c``, the system is ``S₀ ⊗ I_c``: one factorization of the
  n×n ``S₀`` serves c right-hand sides (the prox still sees whole rows: simplex rows couple
  the columns). Otherwise the system is assembled on the flat vector θ.
* **Kernel expansions.** When a variable α enters only through ``Kα`` (K dense, square) and
  through RKHS norms ``w tr(αᵀKα)``, the equations are ``K·[(M K + ρ_K I) α + M_αo o − r_α] =
  0``; the bracket set to 0 is the reduced system of the manifold family's Newton [000 §3.1]
  (:class:`~ssl_opt.plugins.model.assembly.KernelReduction`): one LU, well conditioned,
  instead of a Cholesky of ``K M K + ρ_K K`` (whose condition number is K's squared).
* **Factorizations.** Dense: Cholesky (symmetric) or LU (reduced). Sparse: SuperLU with a
  symmetric ordering (``scipy.sparse.linalg.splu``, ``MMD_AT_PLUS_A``, no pivoting).

Fixed-point form and acceleration. With ``q_k = ẑ_k + u_k`` (the prox inputs), ``y = prox(q)``
and ``u = q − y``, so q is the whole state and one iteration is a map ``q ← T(q)``; it is
extrapolated by safeguarded type-II Anderson acceleration (memory ``anderson``, an extrapolated
point kept when its fixed-point residual ``‖T(q) − q‖`` is not larger; Walker & Ni 2011, as
the LASS ADMM does). Measured (tol 1e-8): LASS + ℓ1 graph at N = 20,000, 150 iterations
plain at the initial ρ, 50 with Anderson; the simplex-constrained kernel scores, 20–25.

ρ. ``RHO_SCALE`` times ``tr(∇²F)/tr(Σ A_kᵀA_k)`` (the unreduced matrices: on a kernel block
``tr(K B K) = Σ K ∘ (BK)ᵀ``, no n³ product), then residual balancing (Boyd et al. §3.4.1,
``ρ ← ρ√(r_p/r_d)``, u rescaled) when the relative residuals differ by more than
``ADAPT_RATIO``; each change refactorizes and restarts the Anderson memory. On the
simplex-constrained kernel scores the trace ratio beats the ratio of the reduced system's
diagonals: 15–20 iterations with ρ fixed at it against 25–30 (n = 90..1,000).

Multipliers and stop. ``λ_k = ρ u_k ∈ ∂h_k(y_k)`` (the prox's optimality), in model order
(non-smooth terms, then constraints): the certificate's starting point. Every
``check_every`` iterations the residuals at the end of the iteration (y⁺ = prox(T(q))) are
measured relative to their scales, as OSQP: primal ``max_k ‖A_kθ + a_k − y_k⁺‖∞`` and dual
``ρ‖Σ A_kᵀ(y_k⁺ − y_k)‖∞``. When both are below ``tol`` the model's own certificate decides
(:func:`certificate_check` at ``λ = ρu⁺``, kink tolerance ``min(1e-6, tol)``; without its own
minimization — an upper bound, cheap), together with the objective's stability (a relative
change below ``OBJECTIVE_STABLE`` since the last check). At a fixed point (residuals below
``FIXED_POINT·tol``) where that bound fails, the certificate's minimization runs; failing
``STALL_CHECKS`` times, the status is STALLED (a prox inconsistent with its term's
subdifferential). The certified iterate is returned, else the smallest-residual one with the
full certificate deciding its status.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp

from ssl_opt._validation import between, check_bool, check_positive, integer, optional
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.hookspecs import hookimpl
from ssl_opt.modeling.model import Model
from ssl_opt.modeling.terms.entropy import Entropy
from ssl_opt.numerics.anderson import SafeguardedAnderson
from ssl_opt.plugins.model.admm_view import (
    SystemFactor,
    column_hessian,
    is_quadratic,
    predicted_seconds,
    split_rows,
    view_of,
)
from ssl_opt.plugins.model.common import (
    ModelSolver,
    kernel_expansion,
    lacking,
    model_solution,
    warm_start_point,
    worst,
)
from ssl_opt.plugins.model.iterative import VERBOSE_OPTION, Run
from ssl_opt.solution import MAX_ITERATIONS, OPTIMAL, STALLED
from ssl_opt.solvers import TIME_LIMIT_OPTION, Option

#: Over-relaxation α (Boyd et al. 2011 §3.4.3: 1.5–1.8 works well).
RELAXATION = 1.6
#: ρ is adapted when the relative residuals differ by more than this factor, at most
#: MAX_REFACTORS times (each costs a factorization).
ADAPT_RATIO, MAX_REFACTORS = 10.0, 12
#: The default ρ: this factor times tr(∇²F)/tr(Σ A_kᵀA_k) (fitted on LASS + ℓ1 graph,
#: N = 150..20,000: 35–80 iterations for ρ in 1.6..4 times the ratio).
RHO_SCALE = 2.0
#: The objective is stable when it changed by less than this (relative) since the last check.
OBJECTIVE_STABLE = 1e-9
#: Iterations of the certificate's own minimization at a check; it runs only at a fixed point
#: (residuals below FIXED_POINT·tol) where the bound at the ADMM multipliers (no minimization)
#: failed; STALL_CHECKS such failures make the status STALLED.
CHECK_ITERS, FIXED_POINT, STALL_CHECKS = 300, 1e-2, 3
#: Relative diagonal shifts tried in turn when the θ-system is singular.
SINGULAR_SHIFTS = (1e-12, 1e-10, 1e-8)



# ------------------------------------------------------------------ the solver
class ADMMSplit(ModelSolver):
    name = "admm-split"
    description = ("ADMM on the splitting y_k = A_kθ + a_k of every non-smooth term and "
                   "constraint, quadratic smooth part: one factorization of the θ-system "
                   "(per column; reduced for kernel expansions), proxes for the y-updates, "
                   "over-relaxation, ρ adaptation; stops on the model's certificate.")
    complexity = {"model": (1.5, "one factorization, then a solve and the proxes per "
                                 "iteration (tens to hundreds)")}
    options = {
        "tol": Option(1e-8, "stop when the model's certificate (stationarity and feasibility, "
                      "started from the ADMM multipliers) is below this and the objective is "
                      "stable", check_positive),
        "max_iter": Option(20_000, "iterations at most (status MAX_ITERATIONS beyond)",
                           integer(1)),
        "check_every": Option(5, "iterations between residual checks", integer(1)),
        "rho": Option(None, "initial penalty ρ (None: RHO_SCALE × tr(∇²F)/tr(Σ A_kᵀA_k))",
                      optional(check_positive)),
        "adaptive_rho": Option(True, "adapt ρ to balance the residuals (refactorizes)",
                               check_bool),
        "relaxation": Option(RELAXATION, "over-relaxation α in (0, 2)", between(0.0, 2.0)),
        "anderson": Option(5, "memory of the safeguarded Anderson extrapolation of the "
                           "iteration (0: plain ADMM)", integer(0)),
        "warm_start": Option(None, "a previous Solution (its multipliers start the duals) or "
                             "a dict of the model's variables"),
        "time_limit": TIME_LIMIT_OPTION,
        "verbose": VERBOSE_OPTION,
    }

    def structure_reasons(self, model: Model) -> list[str]:
        reasons = []
        for t in model.smooth_terms:
            if not is_quadratic(t):
                reasons.append(f"{t.describe()} to be quadratic with an assembled Hessian "
                               "(admm-split factorizes the smooth part once)")
        free = model.nonsmooth_terms + model.constraints
        for t in free:
            if isinstance(t, Entropy):
                reasons.append(f"no entropy term ({t.describe()} is one: its subgradient is "
                               "unbounded at 0, so the split's multipliers diverge where "
                               "entries vanish; 'mirror' handles it)")
        reasons += lacking(free, ("prox",), "admm-split's y-updates")
        reasons += lacking(free, ("subdifferential",), "the model's certificate, admm-split's "
                           "stopping test")
        if not free:
            reasons.append("a non-smooth term or a constraint to split (a quadratic model is "
                           "one linear solve)")
        if reasons:
            return reasons
        view = view_of(model)
        if view.reason:
            return [view.reason]
        return []

    def inexact(self, problem) -> str:
        """A kernel expansion the reduction does not cover (K also enters a split term
        directly, or no RKHS norm on K): the θ-system then carries K·K and ADMM crawls."""
        if not isinstance(problem, Model) or self.structure_reasons(problem):
            return ""
        view = view_of(problem)
        if view.kernel is None and kernel_expansion(problem, problem.all_terms):
            return ("a kernel expansion the reduced system does not cover (α enters a split "
                    "term directly, or no RKHS norm on K): ADMM crawls on K·K (LapRLS + ℓ1 on "
                    "α: 6,000 iterations at n = 120, not certified in 20,000 at n = 500)")
        return ""

    def predicted_time(self, problem) -> float:
        """Setup (assembly and one factorization) + iterations × (the solve, the split maps
        and their adjoints, the proxes and the Anderson step), fitted on this 2-core machine
        (see :func:`predicted_seconds`)."""
        if not isinstance(problem, Model):
            return float("nan")
        view = view_of(problem)
        return float("nan") if view.reason else predicted_seconds(view)

    def _run(self, model: Model, tol, max_iter, check_every, rho, adaptive_rho, relaxation,
             anderson, warm_start, time_limit, verbose):
        return _Run(self, model, tol, max_iter, check_every, rho, adaptive_rho, relaxation,
                    anderson, time_limit, verbose).solve(warm_start)


class _Run(Run):
    def __init__(self, solver, model, tol, max_iter, check_every, rho, adaptive_rho,
                 relaxation, anderson, time_limit, verbose):
        super().__init__(solver.name, model, tol, max_iter, time_limit, verbose)
        self.solver, self.check_every = solver, check_every
        self.rho0, self.adaptive, self.alpha = rho, adaptive_rho, relaxation
        self.anderson = anderson
        self.view = view_of(model)
        v = self.view
        self.free = list(model.nonsmooth_terms + model.constraints)
        self.k_free = [v.terms.index(t) for t in self.free]
        self.k_smooth = [k for k, t in enumerate(v.terms) if t.smooth]
        zero = {n: np.zeros(s) for n, s in model.variables.items()}
        hess = [None] * len(v.terms)
        self.offsets = [None] * len(v.terms)
        self.r0 = np.zeros((v.size, v.columns))  # −Σ A_kᵀ∇h_k(a_k): the constant rhs
        for k, t in enumerate(v.terms):
            z0 = t.argument.value(zero)
            self.offsets[k] = v.term_array(k, z0) if np.any(z0) else 0.0
            if t.smooth:
                if k not in v.kernel_forms:
                    hess[k] = column_hessian(t, z0, v.columns)
                    v.adjoint(k, -v.term_array(k, t.gradient(z0)), self.r0)
        self.R_smooth, self.R_split = v.system(hess)
        self.symmetric = v.kernel is None
        self.refactors = 0
        sizes = [split_rows(v.terms[k].shape, v.columns) for k in self.k_free]
        bounds = np.concatenate([[0], np.cumsum(sizes)]) * v.columns
        self.layout = [(slice(int(a), int(b)), (m, v.columns))
                       for a, b, m in zip(bounds[:-1], bounds[1:], sizes, strict=True)]

    def _rho_guess(self) -> float:
        """RHO_SCALE × tr(∇²F) / tr(Σ A_kᵀA_k) (unreduced traces)."""
        smooth, split = self.view.traces
        if smooth <= 0 or split <= 0:
            return 1.0
        return RHO_SCALE * smooth / split

    def _factor(self, rho: float) -> SystemFactor:
        """The factorization at ρ; a singular matrix (a direction no term curves, e.g. a
        linear objective) gets a relative diagonal shift of SINGULAR_SHIFTS in turn (a bias far
        below the certificate's tolerance, which decides in any case)."""
        self.refactors += 1
        R = self.R_smooth + rho * self.R_split
        diag = R.diagonal() if sp.issparse(R) else np.diag(R)
        scale = float(np.max(np.abs(diag), initial=0.0)) or 1.0
        eye = sp.identity(R.shape[0], format="csr") if sp.issparse(R) else np.eye(R.shape[0])
        for shift in (0.0,) + SINGULAR_SHIFTS:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", la.LinAlgWarning)
                    factor = SystemFactor(R + (shift * scale) * eye if shift else R, self.symmetric)
                if factor.regular():
                    return factor
            except (la.LinAlgError, RuntimeError):
                pass
        raise InvalidInputError("admm-split: the θ-system is singular even after a diagonal "
                                "shift (a variable no term constrains?); check the model.")

    def solve(self, warm_start):
        v, model = self.view, self.model
        x0, mult0 = warm_start_point(model, warm_start)
        x = np.zeros((v.size, v.columns)) if x0 is None else v.to_x(x0)
        self.rho = float(self.rho0) if self.rho0 is not None else self._rho_guess()
        self.factor = self._factor(self.rho)
        Kx = self._kx(x)
        q = []
        for j, k in enumerate(self.k_free):
            t = self.free[j]
            z = v.apply(k, x, Kx) + self.offsets[k]
            y = v.term_array(k, t.prox(z.reshape(t.shape), 1.0 / self.rho))  # u = 0, or λ/ρ
            q.append(y if mult0 is None else y + v.term_array(k, mult0[j]) / self.rho)
        q = self._stack(q)
        aa = SafeguardedAnderson(q.size, self.anderson, clear_on_reject=True)
        self.last_obj = np.nan
        self.failed_at_fixed_point = 0
        status, next_check = None, self.check_every
        self.evaluations = 0  # iterations: applications of T (a rejected extrapolation too)
        step = self._T(q)
        aa.observe(q, step[0])
        while self.evaluations < self.max_iter:
            f_norm = float(np.linalg.norm(aa.residual))
            new = aa.propose(self._T, lambda s, f=f_norm: s[-1] <= f)
            if new is None and self.evaluations >= self.max_iter:
                break
            step = new if new is not None else self._T(step[0])
            aa.observe(step[1], step[0])
            if self.evaluations < next_check:
                continue
            next_check = self.evaluations + self.check_every
            status, adapt = self._check(self.evaluations, step)
            if status is not None:
                break
            if adapt is not None and self.evaluations < self.max_iter:
                q = self._rescale(step[0], adapt)
                aa.restart()
                step = self._T(q)
                aa.observe(q, step[0])
        it = self.evaluations
        if self.best is None:  # max_iter below check_every: measure the last iterate
            self._check(it, step)
        info = {"anderson_accepted": aa.accepted, "anderson_rejected": aa.rejected}
        return self._finish(status or MAX_ITERATIONS, it, info)

    def _stack(self, arrays) -> np.ndarray:
        return np.concatenate([np.ravel(a) for a in arrays])

    def _unstack(self, q: np.ndarray) -> list[np.ndarray]:
        return [q[sl].reshape(shape) for sl, shape in self.layout]

    def _T(self, q: np.ndarray):
        """One ADMM iteration from the prox inputs ``q_k = ẑ_k + u_k``: ``y = prox(q)``,
        ``u = q − y``, the θ-update, the relaxed ``ẑ`` and the next ``q = ẑ + u``. Returns
        ``(T(q), q, x, ys, zs, ‖T(q) − q‖)``."""
        self.evaluations += 1
        v, rho, a = self.view, self.rho, self.alpha
        qs = self._unstack(q)
        ys = []
        rhs = self.r0.copy()
        for j, k in enumerate(self.k_free):
            t = self.free[j]
            y = v.term_array(k, t.prox(qs[j].reshape(t.shape), 1.0 / rho))
            ys.append(y)
            w = 2.0 * y - qs[j] - self.offsets[k]  # y − u − a_k
            w *= rho
            v.adjoint(k, w, rhs)
        x = self.factor.solve(rhs)
        Kx = self._kx(x)
        zs = []
        image = np.empty_like(q)
        for j, k in enumerate(self.k_free):
            z = v.apply(k, x, Kx)
            z += self.offsets[k]
            zs.append(z)
            out = image[self.layout[j][0]].reshape(z.shape)
            # ẑ + u = αz + (1 − α)y + q − y = αz − αy + q
            np.subtract(z, ys[j], out=out)
            out *= a
            out += qs[j]
        return image, q, x, ys, zs, float(np.linalg.norm(image - q))

    def _rescale(self, q: np.ndarray, new_rho: float) -> np.ndarray:
        """The same (y, λ = ρu) at a new ρ: ``q = y + u·ρ/ρ_new``; refactorizes."""
        qs = self._unstack(q)
        out = []
        for j, _ in enumerate(self.k_free):
            t, k = self.free[j], self.k_free[j]
            y = self.view.term_array(k, t.prox(qs[j].reshape(t.shape), 1.0 / self.rho))
            out.append(y + (qs[j] - y) * (self.rho / new_rho))
        self.rho = new_rho
        self.factor = self._factor(new_rho)
        return self._stack(out)

    def _check(self, it, step):
        """Residuals, the certificate when they are small, ρ adaptation: ``(status, new ρ)``."""
        v, model, rho = self.view, self.model, self.rho
        image, _, x, ys, zs, _ = step
        # The end of the iteration: y⁺ = prox(T(q)), u⁺ = T(q) − y⁺; residuals as Boyd et al.
        # §3.3 (primal A_kθ + a_k − y⁺, dual ρAᵀ(y⁺ − y)), multipliers λ = ρu⁺ ∈ ∂h(y⁺).
        r_p, s_p = 0.0, 1.0
        dy = np.zeros((v.size, v.columns))
        aty = np.zeros((v.size, v.columns))
        us = []
        for j, (k, qk) in enumerate(zip(self.k_free, self._unstack(image), strict=True)):
            t = self.free[j]
            y = v.term_array(k, t.prox(qk.reshape(t.shape), 1.0 / rho))
            us.append(qk - y)
            r_p = max(r_p, float(np.max(np.abs(zs[j] - y), initial=0.0)))
            s_p = max(s_p, float(np.max(np.abs(zs[j]), initial=0.0)),
                      float(np.max(np.abs(y), initial=0.0)))
            v.adjoint(k, y - ys[j], dy)
            v.adjoint(k, rho * us[j], aty)
        s_d = max(1.0, float(np.max(np.abs(aty))), float(np.max(np.abs(self.r0))))
        rel_p, rel_d = r_p / s_p, rho * float(np.max(np.abs(dy))) / s_d
        score = max(rel_p, rel_d)
        values = v.to_values(x)
        mult = [rho * u.reshape(t.shape) for u, t in zip(us, self.free, strict=True)]
        # The objective only near the end (its stability is part of the stop).
        obj = model.objective(values) if score <= 100 * self.tol else np.nan
        row = {"iteration": it, "objective": obj, "primal": rel_p, "dual": rel_d, "rho": rho}
        self.keep(score, x, mult)
        status = None
        if score <= self.tol:
            cert = self.certify(values, mult, 0, 1e-6)
            row["certificate"] = worst(cert)
            if worst(cert) > self.tol and score <= FIXED_POINT * self.tol:
                # At a fixed point the bound at the ADMM multipliers failed: the certificate's
                # own minimization decides; failing repeatedly, the fixed point is STALLED (a
                # prox inconsistent with its term's subdifferential).
                cert = self.certify(values, mult, CHECK_ITERS, 1e-6)
                row["certificate"] = worst(cert)
                self.failed_at_fixed_point += worst(cert) > self.tol
                if self.failed_at_fixed_point >= STALL_CHECKS:
                    status = STALLED
            stable = abs(obj - self.last_obj) <= OBJECTIVE_STABLE * max(1.0, abs(obj))
            if row["certificate"] <= self.tol and stable:
                self.certified(x, mult)
                status = OPTIMAL
        self.last_obj = obj
        self.record(**row)
        status = status or self.interruption()
        adapt = None
        if (status is None and self.adaptive and self.refactors <= MAX_REFACTORS
                and rel_d > 0 and rel_p > 0
                and not (1 / ADAPT_RATIO <= rel_p / rel_d <= ADAPT_RATIO)):
            adapt = rho * float(np.sqrt(rel_p / rel_d))
        return status, adapt

    def _kx(self, x):
        v = self.view
        if v.kernel is None:
            return None
        return v.kernel @ v.block(x, v.kernel_var)

    def _finish(self, status, it, info):
        v, model = self.view, self.model
        _, x, mult = self.best
        values = v.to_values(x)
        info.update(multipliers=mult, refactorizations=self.refactors, rho=self.rho,
                    columns=v.columns, kernel_reduced=v.kernel is not None,
                    certificates=self.certificates)
        status = self.final_status(status, values, mult, info)
        return model_solution(model, model.pack(values), status, it, self.history, info)


@hookimpl
def register_solvers():
    return [ADMMSplit()]
