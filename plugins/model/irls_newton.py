r"""Smoothing Newton with an assembled Hessian, for smooth terms plus norm terms
(docs/modeling.md; the IRLS of [004 Alg. 1–2] generalized to any smooth part).

Model ``Σ_smooth h_k(A_k θ) + Σ_norms g_j(B_j θ)`` (fixed rows of bare variables allowed),
each norm term ``g_j = Σ_i w_i‖z_i‖`` (ℓ1, elastic net, group/row norms, graph TV) replaced by
its smoothing ``Σ_i w_i √(‖z_i‖² + δ)`` [004 eq. 11] (a term's ``smoothed``). For a fixed δ
the smoothed objective ``Φ_δ`` is smooth and convex; each step

1. assembles ``∇²Φ_δ(θ) = Σ A_kᵀ∇²h_k A_k + Σ B_jᵀ∇²g_{j,δ} B_j`` as one matrix
   (:mod:`ssl_opt.plugins.model.assembly`: a kernel expansion's K enters once per block);
2. solves ``∇²Φ_δ d = −∇Φ_δ`` directly: in K's range by one LU when α enters only through
   ``Kα`` and the RKHS norm (:class:`~ssl_opt.plugins.model.assembly.KernelReduction`, the
   manifold family's reduced Newton system [000 §3.1]), else by a dense Cholesky (a relative
   shift of 1e-13 keeps a numerically singular K harmless) or a sparse LDLᵀ
   (:class:`~ssl_opt.numerics.ldl.PatternLDL`);
3. takes the exact minimizer of ``Φ_δ`` along d (gradient-only Brent search,
   :func:`~ssl_opt.plugins.model.common.exact_step`; quadratic terms as 1-D quadratics).

**δ-continuation.** ``δ₀ = delta0·σ²`` with σ the largest norm-term group at the minimizer
of the quadratic model where every norm is replaced by ``½w‖z‖²`` (one solve); a stage ends
when the smoothed stationarity is below ``max(tol/10, STAGE_RTOL·√δ/σ)`` (or at its round-off
floor) and δ is divided by ``delta_factor``; the next stage starts from the fit
``θ* + a√δ`` of the last two stage ends (the smoothed minimizer moves like
``θ(δ) = θ* + a√δ + O(δ)``, ``plugins/ere/irls.py``).

**Stopping, never early.** From ``δ ≤ CHECK_DELTA·σ²`` every stage end is a candidate, with
the Richardson extrapolation of the last two stage ends and, on sparse models, the kink-set
polish (:mod:`ssl_opt.plugins.model.kink_polish`: the exact minimizer with the groups at
their kink held at zero; on a kernel expansion, where they cannot be held at zero, the Huber
polish holds them within ε of their kink, inside the certificate's kink tolerance). A
candidate is returned ``optimal`` once the model's own certificate passes at ``tol``; it is
checked cheaply first — the kink slack ``Σ (g(z) − ⟨u, z⟩)``, then the certificate at
multipliers whose kink entries are refined by sparse least squares — and by the
certificate's own minimization only when that is within ``FULL_CHECK·tol`` and predicted to
cost less than another stage (``2·CHECK_ITERS`` gradients against the last stage's Newton
steps at their measured cost; at the lowest δ it always runs). Below
``delta_floor·σ²``, after ``max_iter`` steps or past ``time_limit`` seconds the best iterate is
returned ``stalled`` / ``max_iterations`` / ``time_limit``.

Cost per step: the assembly and one factorization (``⅔n³`` for a kernel expansion): some
10–50 steps where first-order methods need 10⁴ iterations on ``K·K``-conditioned problems.
"""


from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from ssl_opt._validation import check_bool, check_positive, greater_than, integer
from ssl_opt.hookspecs import hookimpl
from ssl_opt.modeling.model import Model
from ssl_opt.modeling.terms import FixedRows
from ssl_opt.numerics.continuation import continued, richardson
from ssl_opt.plugins.model.assembly import (
    DENSE_FRACTION,
    DENSE_MAX_UNKNOWNS,
    predicted_entries,
    unassemblable,
)
from ssl_opt.plugins.model.common import (
    ModelSolver,
    along_line,
    certificate_check,
    check_user_terms,
    directional_slope,
    exact_step,
    gradient_seconds,
    lacking,
    linear_part,
    model_solution,
    start_point,
    worst,
)
from ssl_opt.plugins.model.iterative import CERTIFICATE_TOL_OPTION, VERBOSE_OPTION, Run
from ssl_opt.plugins.model.kink_polish import (
    huber_polish,
    kink_sets,
    polish,
    refine_multipliers,
)
from ssl_opt.plugins.model.multipliers import (
    fixed_entries,
    kink_slack,
    smoothed_multipliers,
    with_fixed_multipliers,
)
from ssl_opt.plugins.model.newton_system import NewtonSystem
from ssl_opt.solution import MAX_ITERATIONS, OPTIMAL, STALLED, Solution
from ssl_opt.solvers import TIME_LIMIT_OPTION, Option

#: A stage ends when the smoothed stationarity is below STAGE_RTOL·√δ/σ.
STAGE_RTOL = 0.1
#: Newton steps assumed by ``predicted_time`` with and without non-smooth terms (measured
#: 41-52 on kernel expansions with norms, 10-26 on sparse ones (half), 1-8 on smooth ones).
STEPS_NONSMOOTH, STEPS_SMOOTH = 40, 8
#: Stage ends with δ ≤ CHECK_DELTA·σ² are checked with the model's certificate.
CHECK_DELTA = 1e-6
#: Stage ends with δ ≤ POLISH_DELTA·σ² try the kink-set polish, at most POLISH_TRIES times
#: without success.
POLISH_DELTA = 1e-8
POLISH_TRIES = 3
#: Iterations of the certificate's own minimization at a check; it runs only when the residual
#: at the solver's multipliers (an upper bound, no minimization) is within FULL_CHECK·tol.
CHECK_ITERS = 300
FULL_CHECK = 10.0


class IRLSNewton(ModelSolver):
    name = "irls-newton"
    description = ("Smoothing Newton with an assembled Hessian: norm terms smoothed as "
                   "Σ w√(‖z‖² + δ) with δ-continuation and Richardson extrapolation [004], one "
                   "direct solve per step (dense Cholesky or sparse LDLᵀ), exact line search; "
                   "stops on the model's certificate.")
    complexity = {"model": (3.0, "one assembled Hessian and one factorization per step "
                                 "(n³ for a kernel expansion); 10-40 steps")}
    options = {
        "tol": CERTIFICATE_TOL_OPTION,
        "max_iter": Option(300, "Newton steps in all", integer(1)),
        "delta0": Option(1e-2, "first smoothing δ relative to σ² (σ: the largest norm-term "
                         "group at the start)", check_positive),
        "delta_factor": Option(10.0, "δ is divided by this between stages", greater_than(1)),
        "delta_floor": Option(1e-20, "smallest δ/σ² tried", check_positive),
        "warm_start": Option(None, "a previous Solution or dict of the model's variables"),
        "check_terms": Option(True, "check user terms' gradients and Hessian products by "
                              "finite differences before trusting them", check_bool),
        "time_limit": TIME_LIMIT_OPTION,
        "verbose": VERBOSE_OPTION,
    }

    def structure_reasons(self, model: Model) -> list[str]:
        smooth, rough = model.smooth_terms, model.nonsmooth_terms
        reasons = lacking(smooth, ("gradient", "hessian"), "irls-newton assembles the Hessian")
        reasons += lacking(rough, ("smoothing",), "irls-newton smooths the non-smooth terms")
        for c in model.constraints:
            if not (isinstance(c, FixedRows) and c.argument.is_variable()):
                reasons.append(f"no constraint other than fixed rows of a variable "
                               f"({c.describe()} is one; 'pdhg' takes projections)")
        reasons += unassemblable(model, model.terms)
        if not reasons and model.size > DENSE_MAX_UNKNOWNS and _kernel_sized(model):
            reasons.append(f"a dense Hessian of at most {DENSE_MAX_UNKNOWNS} unknowns (this "
                           f"model has {model.size} and a dense matrix in its maps)")
        return reasons

    def predicted_time(self, problem) -> float:
        """Steps × (one factorization + the step's products) + the certificate checks; the
        constants fitted on the modelling variants (docs/modeling.md) on this 2-core machine:
        a dense step costs ``N³/3e10 + 1e-8·N² + 2.5 ms`` (LU or Cholesky at ~30 Gflop/s with
        the assembly; refitted at n = 60..1,000 after the Huber polish, 2026-11-24), a
        sparse one ``2.5e-9·E^1.3`` with E the Hessian's predicted entries (QDLDL with AMD
        fill on kNN graphs); 40 steps with norm terms, 8 without."""
        N = float(problem.size)
        entries = predicted_entries(problem, problem.terms)
        steps = STEPS_NONSMOOTH if problem.nonsmooth_terms else STEPS_SMOOTH
        dense = entries > DENSE_FRACTION * N**2 and N <= DENSE_MAX_UNKNOWNS
        if dense:
            per_step = N**3 / 3e10 + 1e-8 * N**2 + 2.5e-3
        else:  # with the kink polish, sparse models took 10-26 steps
            steps /= 2
            per_step = 2.5e-9 * entries**1.3 + 1e-3
        # The certificate's own minimization now runs only when cheaper than another stage.
        checks = (1 if dense else 2) * CHECK_ITERS * gradient_seconds(problem, problem.terms)
        return 1e-3 + steps * per_step + checks

    def _run(self, model: Model, tol, max_iter, delta0, delta_factor, delta_floor,
             warm_start, check_terms, time_limit, verbose) -> Solution:
        theta = start_point(model, warm_start)
        run = _Run(self.name, model, theta, tol, max_iter, time_limit, verbose)
        if check_terms:
            check_user_terms(model, model.terms, run.theta)
        return run.solve(max_iter, delta0, delta_factor, delta_floor)


class _Run(Run):
    """One solve: the smoothed objective, the Newton steps, the stages and their checks."""

    def __init__(self, name: str, model: Model, theta: np.ndarray, tol: float, max_iter: int,
                 time_limit: float | None, verbose: bool):
        super().__init__(name, model, tol, max_iter, time_limit, verbose)
        self.terms = model.terms
        self.rough_ids = {id(t) for t in model.nonsmooth_terms}
        self.fixed, self.fixed_values = fixed_entries(model)
        theta[self.fixed] = self.fixed_values
        self.theta = theta
        self.free = np.setdiff1d(np.arange(model.size), self.fixed)
        self.newton = NewtonSystem(model, self.terms, self.free)
        # No kink polish on a kernel expansion: its kink sets are numerically inconsistent
        # with f ∈ range(K) (measured: LapSVM + TV, the multipliers of the fused edges grow
        # without bound) or leave K's null directions free (LapRLS + ℓ1 on α).
        # There the Huber polish (kink groups held within ε of their kink, not at 0) is tried.
        self.huber_polish = _kernel_sized(model)
        self.polish_tries = 0 if self.huber_polish else POLISH_TRIES
        self.checks, self.last_cert = 0, {}
        #: Predicted seconds of the certificate's own minimization (CHECK_ITERS gradients of
        #: the maps, twice): at a stage end it runs only when another stage would cost more.
        self.full_check_seconds = 2 * CHECK_ITERS * gradient_seconds(model, model.terms)

    def log(self, message: str) -> None:
        if self.verbose:
            print(f"[{self.name}] {message}", flush=True)

    # ------------------------------------------------------------------ the smoothed objective
    def evaluate(self, theta: np.ndarray, delta: float):
        """``(Φ_δ, ∇Φ_δ (flat), scale, argument values, Hessians of the smoothed terms,
        argument gradients)`` at θ."""
        model, free = self.model, self.free
        values = model.unpack_flat(theta)
        zs = [t.argument.value(values) for t in self.terms]
        phi, grad, scale, hessians, gradients = 0.0, np.zeros(model.size), 0.0, [], []
        for t, z in zip(self.terms, zs, strict=True):
            if id(t) in self.rough_ids:
                v, g, H = t.smoothed(z, delta)
            else:
                v, g, H = t.value(z), t.gradient(z), None
            pulled = model.pack(t.argument.adjoint(g))
            scale = max(scale, float(np.max(np.abs(pulled[free]), initial=0.0)))
            phi += v
            grad += pulled
            hessians.append(H)
            gradients.append(g)
        return phi, grad, max(1.0, scale), zs, hessians, gradients

    def smoothed_value(self, theta: np.ndarray, delta: float) -> float:
        """``Φ_δ(θ)`` alone (no gradients, no Hessians)."""
        values = self.model.unpack_flat(theta)
        return float(sum(t.smoothed(z, delta, hessian=False)[0] if id(t) in self.rough_ids
                         else t.value(z)
                         for t in self.terms for z in [t.argument.value(values)]))

    def sigma(self) -> float:
        """The largest norm-term group at the minimizer of the quadratic model with every
        norm replaced by ``½w‖z‖²`` (one Newton solve from the start)."""
        model, terms = self.model, self.terms
        zs = model.arguments(model.unpack_flat(self.theta), terms)
        hessians, gradients, grad = [], [], np.zeros(model.size)
        for t, z in zip(terms, zs, strict=True):
            if id(t) in self.rough_ids:
                H0 = t.smoothed(np.zeros_like(z), 1.0)[2]  # w per entry (the curvature at 0)
                g = H0 @ np.ravel(z) if sp.issparse(H0) else np.asarray(H0) * np.ravel(z)
                g = np.reshape(g, np.shape(z))
            else:
                H0, g = t.hessian(z), t.gradient(z)
            hessians.append(H0)
            gradients.append(g)
            grad += model.pack(t.argument.adjoint(g))
        d = self.newton.direction(hessians, grad, self.theta, gradients)
        probe = model.unpack_flat(self.theta + d)
        sigma = max((t.kink_scale(t.argument.value(probe)) for t in model.nonsmooth_terms),
                    default=0.0)
        return sigma if sigma > 0 and np.isfinite(sigma) else 1.0

    # ------------------------------------------------------------------ one Newton step
    def step(self, theta, zs, smoothed, grad, gradients, phi, delta) -> tuple[np.ndarray, float]:
        model, free = self.model, self.free
        hessians = [H if id(t) in self.rough_ids else t.hessian(z)
                    for t, z, H in zip(self.terms, zs, smoothed, strict=True)]
        d = self.newton.direction(hessians, grad, theta, gradients)
        if not float(grad[free] @ d[free]) < 0:  # round-off: steepest descent
            d = np.zeros(model.size)
            d[free] = -grad[free]
        dzs = [linear_part(t.argument, model.unpack_flat(d)) for t in self.terms]
        line_terms, line_zs, line_dzs = along_line(self.terms, zs, dzs, gradients,
                                                    self.rough_ids, delta)
        slope = directional_slope(line_terms, line_zs, line_dzs, 0.0)
        step = exact_step(line_terms, line_zs, line_dzs, phi, slope) if slope < 0 else 0.0
        return theta + step * d, step

    # ------------------------------------------------------------------ checks at stage ends
    def candidates(self, theta, delta, multipliers, stage_ends, sigma) -> list:
        """``(θ, multipliers, kind)`` to check at a stage end: the kink-set polish (sparse
        models, δ ≤ POLISH_DELTA·σ²), the stage end, the extrapolation of the last two."""
        out = [(theta, multipliers, "stage end")]
        if delta <= POLISH_DELTA * sigma**2 and self.polish_tries > 0:
            polished = _polished(self.model, self.terms, self.rough_ids, theta, delta,
                                 multipliers, self.newton, self.free, self.tol)
            if polished is None:
                self.polish_tries -= 1
            else:
                polished[0][self.fixed] = self.fixed_values
                out.insert(0, (*polished, "polished"))
        if self.huber_polish and delta <= POLISH_DELTA * sigma**2:
            before = stage_ends[-2][1] if len(stage_ends) >= 2 else None
            found = huber_polish(self.model, self.terms, self.rough_ids, theta, delta,
                                 multipliers, self.newton, self.free, self.tol, before)
            if found is not None:
                point, rough = found
                point[self.fixed] = self.fixed_values
                out.insert(0, (point, with_fixed_multipliers(self.model, point, rough),
                               "huber polish"))
        if len(stage_ends) >= 2 and stage_ends[-2][0] > 2.0 * delta:
            point, mults = _extrapolate(self.model, stage_ends[-2], stage_ends[-1])
            point[self.fixed] = self.fixed_values
            out.append((point, mults, "extrapolated"))
        return out

    def certified(self, point, multipliers, kind, full: bool = True) -> list | None:
        """The multipliers that certify ``point`` (checked cheaply first: the kink slack, then
        the certificate at refined multipliers, then — when ``full`` — its own minimization),
        or None."""
        model, tol = self.model, self.tol
        if not np.all(np.isfinite(point)):
            return None
        slack = kink_slack(model, point, multipliers)
        self.log(f"  check ({kind}): kink slack {slack:.2e}")
        if slack > tol:
            return None
        x = model.unpack_flat(point)
        rough = refine_multipliers(model, self.terms, self.rough_ids, point,
                                   multipliers[:len(self.rough_ids)], self.newton, self.free)
        multipliers = with_fixed_multipliers(model, point, rough)
        cert = certificate_check(model, x, multipliers, 0)
        self.log(f"  at the multipliers {cert}")
        if full and tol < worst(cert) <= FULL_CHECK * tol:
            cert = certificate_check(model, x, multipliers, CHECK_ITERS)
            self.log(f"  certificate {cert}")
        self.checks, self.last_cert = self.checks + 1, cert
        return multipliers if worst(cert) <= tol else None

    # ------------------------------------------------------------------ the stages
    def solve(self, max_iter, delta0, delta_factor, delta_floor) -> Solution:
        model, terms, tol, free = self.model, self.terms, self.tol, self.free
        rough = bool(self.rough_ids)
        sigma = self.sigma() if rough else 1.0
        delta = delta0 * sigma**2 if rough else 0.0
        lowest = delta_floor * sigma**2
        theta, history = self.theta, self.history
        status, it, step = MAX_ITERATIONS, 0, 0.0
        best, best_value = theta.copy(), np.inf
        stage_ends: list[tuple[float, np.ndarray, list]] = []
        result, endpoint = None, "best iterate"
        previous, stalls, stage_best, floor_steps = np.inf, 0, np.inf, 0
        stage_steps, step_seconds = 0, 0.0
        while True:
            phi, grad, scale, zs, smoothed, gradients = self.evaluate(theta, delta)
            stat = float(np.max(np.abs(grad[free]), initial=0.0)) / scale
            true_value = sum(t.value(z) for t, z in zip(terms, zs, strict=True))
            if not np.isfinite(phi) or not np.all(np.isfinite(theta)):
                status = STALLED
                break
            if true_value < best_value:
                best, best_value = theta.copy(), true_value
            self.watch_divergence(true_value, theta)
            history.append(iteration=it, objective=true_value, smoothed=phi, delta=delta,
                           stationarity=stat, step=step, time=self.elapsed)
            self.log(f"it {it:3d}  F = {true_value:.12g}  Φ_δ = {phi:.12g}  δ = {delta:.1e}  "
                     f"stationarity {stat:.2e}  step {step:.3g}")
            # Round-off floor of a stage: Φ_δ flat, or two flat steps that do not halve the
            # best stationarity of the stage.
            progress = phi < previous - 1e-15 * max(1.0, abs(phi))
            if stat < 0.5 * stage_best:
                stage_best, floor_steps = stat, 0
            elif not phi < previous - 1e-13 * max(1.0, abs(phi)):
                floor_steps += 1
            stalls = 0 if progress and floor_steps < 2 else max(stalls + 1,
                                                                 3 * (floor_steps >= 2))
            previous = phi
            if not rough and stat <= tol:
                cert = certificate_check(model, model.unpack_flat(theta), None, CHECK_ITERS)
                self.checks, self.last_cert = self.checks + 1, cert
                if worst(cert) <= tol:
                    status, result, endpoint = OPTIMAL, (theta, None), "newton"
                    break
            if not rough and stalls >= 3:
                status = STALLED
                break
            stage_done = (stat <= max(0.1 * tol, STAGE_RTOL * np.sqrt(delta) / sigma)
                          or stalls >= 3)
            if rough and stage_done:
                multipliers = smoothed_multipliers(model, terms, zs, self.rough_ids, delta,
                                                   grad)
                stage_ends.append((delta, theta.copy(), multipliers))
                if delta <= CHECK_DELTA * sigma**2:
                    full = delta <= lowest or self.full_check_seconds <= (
                        stage_steps * step_seconds / max(it, 1))
                    for point, mults, kind in self.candidates(theta, delta, multipliers,
                                                              stage_ends, sigma):
                        certified = self.certified(point, mults, kind, full)
                        if certified is not None:
                            status, result, endpoint = OPTIMAL, (point, certified), kind
                            break
                    if result is not None:
                        break
                if delta <= lowest:
                    status = STALLED
                    break
                new_delta = max(delta / delta_factor, lowest)
                if len(stage_ends) >= 2 and stage_ends[-2][0] > 2.0 * delta > 4.0 * new_delta:
                    theta = _predict(stage_ends[-2:], new_delta, theta, self.fixed,
                                     self.fixed_values, self.smoothed_value)
                delta = new_delta
                previous, stalls, stage_best, floor_steps = np.inf, 0, np.inf, 0
                stage_steps = 0
                continue
            if self.budget_status(it):
                status = self.budget_status(it)
                break
            step_start = time.perf_counter()
            theta, step = self.step(theta, zs, smoothed, grad, gradients, phi, delta)
            step_seconds += time.perf_counter() - step_start
            it += 1
            stage_steps += 1
        point, multipliers = (best, None) if result is None else result
        newton = self.newton
        info = {"delta": delta, "sigma": sigma, "certificate_checks": self.checks,
                "certificate": self.last_cert, "stages": len(stage_ends),
                "dense": newton.dense, "factorizations": newton.factorizations,
                "kernel_reduced": newton.reduction is not None, "endpoint": endpoint}
        if multipliers is None and rough:
            _, grad, _, zs, _, _ = self.evaluate(point, delta)
            multipliers = smoothed_multipliers(model, terms, zs, self.rough_ids, delta, grad)
        if multipliers is not None:
            info["multipliers"] = multipliers
        status = self.verdict_status(status, info)
        return model_solution(model, point, status, it, history, info)


def _polished(model, terms, rough_ids, theta, delta, multipliers, system, free, tol):
    """The kink-set polish (:mod:`ssl_opt.plugins.model.kink_polish`) from a stage end, as a
    candidate ``(θ, multipliers)``, or None."""
    sets = kink_sets(model, theta, delta, multipliers)
    if sets is None or not any(fused.any() for fused, _ in sets):
        return None
    found = polish(model, terms, rough_ids, theta, delta, system, free, sets, tol)
    if found is None:
        return None
    point, rough = found
    return point, with_fixed_multipliers(model, point, rough)


#: A dense matrix with at least this many columns in a non-smooth term's argument makes its
#: groups a dense image of the variables (a kernel expansion in a pivoted factor of K:
#: f = R h + b, ``kernel-factor``), polished as a kernel expansion is. ERE's X has 3.
WIDE_DENSE_COLUMNS = 64


def _kernel_sized(model: Model) -> bool:
    """A kernel expansion, or a non-smooth term on a wide dense image of the variables: the
    kink polish's groups held at zero would be dense constraints on the variables (LapSVM +
    TV at n = 1,000 in K's pivoted factor: 54 steps, 6.9 s with it, 41 steps, 1.1 s with the
    Huber polish)."""
    from ssl_opt.modeling.maps import matrices
    from ssl_opt.plugins.model.common import kernel_expansion

    if kernel_expansion(model, model.terms):
        return True
    return any(isinstance(M, np.ndarray) and M.ndim == 2 and M.shape[1] >= WIDE_DENSE_COLUMNS
               for t in model.nonsmooth_terms for _, m in t.argument.parts
               for M in matrices(m))


def _extrapolate(model: Model, first, second) -> tuple[np.ndarray, list]:
    """Richardson extrapolation in √δ (:func:`~ssl_opt.numerics.continuation.richardson`) of
    two stage ends ``(δ₁, θ₁, u₁)``, ``(δ₂, θ₂, u₂)``, and of the multipliers, each projected
    back onto its term's subdifferential at 0 (the norm's dual ball)."""
    (d1, t1, u1), (d2, t2, u2) = first, second
    multipliers = [richardson(d1, a, d2, b) for a, b in zip(u1, u2, strict=True)]
    for k, t in enumerate(model.nonsmooth_terms):
        multipliers[k] = t.project_subgradient(np.zeros(t.shape), multipliers[k], 0.0)
    return richardson(d1, t1, d2, t2), multipliers


def _predict(ends, delta: float, theta: np.ndarray, fixed, fixed_values,
             smoothed_value) -> np.ndarray:
    """The start of the stage at ``delta``: ``θ(δ) ≈ θ* + a√δ`` fitted to the last two stage
    ends (:func:`~ssl_opt.numerics.continuation.continued`), kept only when its smoothed
    objective at the new δ is below the last stage end's."""
    (d1, t1, _), (d2, t2, _) = ends
    guess = continued(d1, t1, d2, t2, delta)
    guess[fixed] = fixed_values
    if not np.all(np.isfinite(guess)):
        return theta
    return guess if smoothed_value(guess, delta) < smoothed_value(theta, delta) else theta


@hookimpl
def register_solvers():
    return [IRLSNewton()]
