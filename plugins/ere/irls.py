r"""IRLS for sums of norms and ERE [004 Alg. 1–2]: δ-continuation, Anderson, extrapolation.

Problem ``φ(x) = f(x) + Σ_i w_i ‖g_i(x)‖₂`` (:class:`~ssl_opt.problems.SumOfNorms`, robust
:class:`~ssl_opt.problems.ERE`), read only through its sum-of-norms form
(:class:`~ssl_opt.problems.ere.groups.SumOfNormsForm`: f, the groups' operator, pack/unpack).
Smoothed ``φ_δ = f + Σ_i w_i √(‖g_i‖² + δ)`` [004 eq. 11]. One IRLS step [004 Alg. 1] from
``x``::

    s_i = 1 / (2√(‖g_i(x)‖² + δ))                                           [004 eq. 13]
    x⁺  = argmin_z f(z) + Σ_i w_i s_i ‖g_i(z)‖²                              [004 eq. 15]

and ``φ_δ(x⁺) ≤ φ_δ(x)`` (majorize–minimize, [004 Th. 1]). The same map ``T(x) = x⁺`` is used as
a fixed-point iteration with:

* **δ-continuation** — ``δ₀ = delta0·σ²`` (σ the largest group norm at the start, the
  squared-norm solution), divided by ``delta_factor`` when the stage's smoothed stationarity
  is below ``max(√δ/σ, kkt_tol)``, when the stage makes no progress for ``FLAT_STEPS`` steps
  (its numerical floor) or after ``stage_max_iter`` steps, warm started. Plain IRLS at a
  small fixed δ (``continuation=False, anderson=0``) crawls on kinked problems: the weights
  of the groups at the kink are ~1/√δ and a step moves them by O(√δ).
* **Anderson acceleration** (type II, memory ``anderson``) of ``T``, safeguarded on the smoothed
  objective: the extrapolated point is taken only when ``φ_δ(x_AA) < φ_δ(T(x))``, else ``T(x)``
  (the memory is kept: clearing it on a rejection cost several times more steps on the small
  kinked instances, measured in docs/ere.md). Both candidates are evaluated anyway, so the
  safeguard costs one objective evaluation, and ``φ_δ`` decreases monotonically within a stage
  (``history["monotone"]``; ``info["monotone_violations"]`` counts relative increases above
  1e-12, which only inexact CG solves can cause).
* **Richardson extrapolation in √δ** (``extrapolate``) — the smoothed minimizer moves like
  ``x(δ) = x* + a√δ + O(δ)`` (a kinked group sits at ‖g‖ ≈ √δ‖u‖/√(1 − ‖u‖²)), so the ends of
  two consecutive stages give ``z = (q x(δ/q²) − x(δ))/(q − 1)``, ``q = √delta_factor``. Its
  true objective converges ~10× per stage where the stage ends converge ~√10× (measured in
  docs/ere.md). Once two consecutive extrapolations agree to ``max(tol, 0.1·gap_tol)``, z is
  certified and returned (``info["extrapolated"]``; it carries no δ: it is not the minimizer
  of any φ_δ).
* **Kink-set polish** (sums of scalar norms only) — at stage ends with δ ≤ POLISH_DELTA·σ²,
  the minimizer with the identified zero set and signs fixed, one linear solve
  (:mod:`ssl_opt.plugins.ere.polish`), returned when certified (``info["polished"]``).
* **Stopping, never early** — only when the stopping test holds
  (:mod:`ssl_opt.plugins.ere.stopping`, per coordinate: ``subgradient ≤ kkt_tol`` with the
  (near-)zero groups' multipliers optimized, and ``kink_slack ≤ gap_tol``) and the model
  certificate from the test's multipliers too (``stationarity ≤`` its iterative tolerance,
  1e-6): at an extrapolated point as above, or in the final
  stage (δ = ``delta_min·σ²``) when the true objective's relative change is below ``tol`` and
  the smoothed stationarity below ``kkt_tol`` (or the stage is at its numerical floor), after a
  free estimate of the kink slack with the smoothed multipliers. Otherwise δ is lowered
  further (down to ``delta_floor·σ²``) and checks back off geometrically. ``max_iter`` →
  ``MAX_ITERATIONS``, no progress for ``stall_iter`` steps at the lowest δ → ``STALLED``; both
  return the best iterate (lowest true objective, extrapolations included).

The weighted least-squares step ``x⁺`` (structured for ERE, a sparse factorization for a
:class:`SumOfNorms`) is :mod:`ssl_opt.plugins.ere.weighted_ls`; this module is the solver and
the continuation/extrapolation driver. Squared ERE [004 eq. 8] is the ERE step with ``s ≡ 1``
(one structured solve) and LRL [004 eq. 5] its (d+1)×(d+1) normal equations (Cholesky): both
are returned as ``OPTIMAL`` after one solve.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.linalg as la
from threadpoolctl import threadpool_limits

from ssl_opt._validation import (
    check_bool,
    check_positive,
    choice,
    greater_than,
    integer,
)
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.hookspecs import hookimpl
from ssl_opt.numerics.anderson import SafeguardedAnderson
from ssl_opt.numerics.continuation import richardson
from ssl_opt.plugins.ere.polish import polish_scalar_groups
from ssl_opt.plugins.ere.stopping import (
    CERTIFICATE_ITERS,
    KINK_TOL,
    certificate_multipliers,
    stop_check,
)
from ssl_opt.plugins.ere.warm_start import certified_warm_start, warm_start_point
from ssl_opt.plugins.ere.weighted_ls import weighted_ls_step
from ssl_opt.problems.ere.groups import smoothed_multipliers, smoothed_norms, stationarity
from ssl_opt.problems.ere.lrl import LRL
from ssl_opt.problems.ere.problem import ERE
from ssl_opt.problems.ere.sum_of_norms import SumOfNorms
from ssl_opt.solution import MAX_ITERATIONS, OPTIMAL, STALLED, History, Solution
from ssl_opt.solvers import Option, Solver

#: A stage is solved to its numerical floor after this many steps without progress.
FLAT_STEPS = 10
#: FISTA iterations of the solver's stopping checks (:func:`stopping_residuals`).
CHECK_ITERS = 100
#: Sums of scalar norms: the kink-set polish is tried at the end of every stage with
#: δ ≤ POLISH_DELTA·σ² (:mod:`ssl_opt.plugins.ere.polish`).
POLISH_DELTA = 1e-6
#: The groups are all zero at the start when their largest norm is below this times the
#: problem's value scale: the start is then certified as it is, or σ falls back to the scale.
ZERO_GROUPS = 1e-8


def irls_weights(sq: np.ndarray, delta: float) -> np.ndarray:
    """``s_i = 1 / (2√(‖g_i‖² + δ))`` from ``sq_i = ‖g_i‖²`` [004 eq. 13]."""
    return 0.5 / np.sqrt(sq + delta)


@dataclass(frozen=True)
class IRLSOptions:
    """:class:`IRLS`'s options but ``warm_start``, each already checked by ``Solver.solve``
    against ``IRLS.options``; the one rule across options is checked here."""

    tol: float
    kkt_tol: float
    gap_tol: float
    max_iter: int
    delta0: float
    delta_min: float
    delta_floor: float
    delta_factor: float
    extrapolate: bool
    continuation: bool
    stage_max_iter: int
    anderson: int
    stall_iter: int
    linear_solver: str
    verbose: bool

    def __post_init__(self):
        if self.delta_floor > self.delta_min:
            raise InvalidInputError(
                f"delta_floor ({self.delta_floor}) must be <= delta_min ({self.delta_min}).")


# ---------------------------------------------------------------------------- the solver


class IRLS(Solver):
    name = "irls"
    complexity = {"ere": (1.0, "O(nnz(A)·c) per reweighted solve")}
    tolerance_family = "iterative"
    problem_types = (ERE, LRL, SumOfNorms)
    description = ("IRLS [004 Alg. 1-2] for sums of norms and robust ERE: δ-continuation, "
                   "Anderson acceleration safeguarded on φ_δ, Richardson extrapolation in √δ, "
                   "structured u×u solves (sparse factor + Woodbury, or PCG); squared ERE and "
                   "LRL in closed form.")
    options = {
        "tol": Option(1e-9, "relative change of the true objective below which the final "
                      "stage checks the certificate", check_positive),
        "kkt_tol": Option(1e-7, "stop when the subgradient residual of the stopping test "
                          "(plugins/ere/stopping.py) is below this", check_positive),
        "gap_tol": Option(5e-7, "... and its kink_slack (the objective excess of the groups "
                          "treated as zero, relative) below this", check_positive),
        "max_iter": Option(10_000, "IRLS steps at most (status MAX_ITERATIONS beyond)",
                           integer(1)),
        "delta0": Option(1e-2, "initial δ relative to σ² (σ: scale of the group values)",
                         check_positive),
        "delta_min": Option(1e-12, "δ of the final stage relative to σ²", check_positive),
        "delta_floor": Option(1e-18, "lowest δ/σ² tried when the certificate is not met at "
                              "delta_min (<= delta_min)", check_positive),
        "delta_factor": Option(10.0, "δ is divided by this between stages", greater_than(1)),
        "extrapolate": Option(True, "Richardson extrapolation in √δ of consecutive stage ends "
                              "(x* ≈ (q x(δ/q²) − x(δ))/(q − 1), q = √delta_factor), certified "
                              "and returned when it passes", check_bool),
        "continuation": Option(True, "δ-continuation (False: δ = delta_min from the start)",
                               check_bool),
        "stage_max_iter": Option(100, "steps per intermediate stage at most", integer(1)),
        "anderson": Option(10, "Anderson memory (0: off, the paper's plain iteration)",
                           integer(0)),
        "stall_iter": Option(500, "steps without a better true objective at the lowest δ before "
                             "STALLED", integer(1)),
        "linear_solver": Option("auto", "ERE u×u solves: 'factor' (SuperLU of N + Woodbury), "
                                "'cg' (block PCG on M_uu) or 'auto' (by size and predicted "
                                "fill)", choice("auto", "factor", "cg")),
        "warm_start": Option(None, "a previous Solution or dict of the problem's variables; the "
                             "continuation resumes at the δ it ended with (info['delta'] or "
                             "x['delta']) when it says"),
        "verbose": Option(False, "print progress every 20 steps", check_bool),
    }

    def predicted_time(self, problem) -> float:
        s = problem.structure.sizes
        if isinstance(problem, SumOfNorms):
            return 1e-2 + 100 * 2e-7 * (s["nnz_G"] + s["n"])
        if isinstance(problem, LRL) or not problem.robust:
            return 1e-2 + 1e-8 * (s["nnz_A"] * s["d"] + s["n"] * s["d"] ** 2)
        per_step = 5e-8 * (s["nnz_A"] + s["n"] * (s["d"] + 1)) * s["c"] * 3
        return 0.05 + 150 * per_step

    def _solve(self, problem, warm_start, **options) -> Solution:
        opts = IRLSOptions(**options)
        x0, warm_delta = warm_start_point(problem, warm_start)  # checked even where unused (LRL)
        if isinstance(problem, LRL):
            return self._lrl(problem)
        step = weighted_ls_step(problem, opts.linear_solver)
        if x0 is not None and (isinstance(problem, SumOfNorms) or problem.robust):
            done = certified_warm_start(self, problem, warm_start, opts.kkt_tol, opts.gap_tol,
                                            CHECK_ITERS, warm_delta)
            if done is not None:
                return done
        with threadpool_limits(1):
            if isinstance(problem, ERE) and not problem.robust:
                return self._squared(problem, step, x0, opts.kkt_tol)
            return _irls(self, problem, step, x0, opts, warm_delta)

    def _squared(self, problem: ERE, step, x0, kkt_tol: float) -> Solution:
        """Squared ERE: one structured step with ``s ≡ 1``."""
        sol = problem.unpack_vector(step(x0, np.ones(problem.groups.n_groups), 1e-13))
        # One linear solve; with block CG it can stop at its iteration cap, so the status
        # comes from the problem's own stationarity, not from having solved.
        residuals = problem.kkt(sol)
        status = OPTIMAL if max(residuals.values()) <= kkt_tol else MAX_ITERATIONS
        return Solution(sol, problem.objective(sol), status, 1, 0.0, self.backend, self.name,
                        History(), info={"linear_solver": step.kind, "kkt": residuals})

    def _lrl(self, problem: LRL) -> Solution:
        H, R = problem.normal_equations()
        Theta = la.cho_solve(la.cho_factor(H, lower=True), R)
        x = {"W": Theta[: problem.d], "b": Theta[problem.d].copy()}
        return Solution(x, problem.objective(x), OPTIMAL, 1, 0.0, self.backend, self.name,
                        History(), info={"linear_solver": "cholesky (d+1)x(d+1)"})


# ---------------------------------------------------------------------------- the driver


def _irls(solver, problem, step, x0, opts: IRLSOptions, warm_delta=None) -> Solution:
    """The IRLS loop of the module docstring (δ stages, Anderson, extrapolation, stopping) on
    a problem's sum-of-norms form, with the weighted least-squares ``step``."""
    tol, kkt_tol, gap_tol = opts.tol, opts.kkt_tol, opts.gap_tol
    groups = problem.groups
    start = time.perf_counter()
    w = groups.weights
    history = History()
    if x0 is None:  # uniform weights (‖g_i‖ = σ₀, δ = 0): the squared-norm problem
        x0 = step(None, np.full(w.size, 0.5 / groups.value_scale), 1e-10)
    st = _State(problem, x0)
    sigma = float(np.sqrt(st.sq.max(initial=0.0)))
    if not sigma > ZERO_GROUPS * groups.value_scale:
        # Every group is (numerically) zero at the start: if ∇f vanishes too, the start is
        # optimal with zero multipliers (e.g. ERE with a single class: F ≡ 1, W = 0).
        point = problem.unpack_vector(st.x)
        point.update(groups.multipliers(np.zeros_like(st.g)))
        cert, ok, _, multipliers = stop_check(problem, st.x, point, kkt_tol, gap_tol,
                                               CHECK_ITERS)
        if ok:
            info = _run_info(step, sigma, delta=None, stages=0, checks=1, last_cert=cert)
            info["multipliers"] = multipliers
            return Solution(point, st.phi, OPTIMAL, 0, 0.0, solver.backend, solver.name,
                            history, info=info)
        sigma = groups.value_scale
    final_delta = opts.delta_min * sigma**2
    lowest_delta = opts.delta_floor * sigma**2
    delta = max(opts.delta0 * sigma**2, final_delta) if opts.continuation else final_delta
    if warm_delta is not None and warm_delta > 0:
        delta = max(min(delta, warm_delta), lowest_delta)
    st.set_delta(delta)
    best = (st.phi, st.x, st.delta, st.U)
    # Safeguarded on φ_δ; a rejection keeps the memory (module docstring).
    aa = SafeguardedAnderson(st.x.size, opts.anderson, clear_on_reject=False)
    status, it, stage_it, flat, since_best = MAX_ITERATIONS, 0, 0, 0, 0
    violations = checks = 0
    next_check, check_gap, last_cert = 0, 5, None
    stage_ends, extrap, result = [], [], None
    can_polish = isinstance(problem, SumOfNorms) and problem.k == 1
    polished, last_pattern = False, None
    certified_U = None

    def certificate(x, U, delta, iterations=CHECK_ITERS):
        nonlocal checks, certified_U
        checks += 1
        point = problem.unpack_vector(x)
        point.update(groups.multipliers(U))
        if delta is not None:
            point["delta"] = np.array(delta)
        cert, ok, U_test, _ = stop_check(problem, x, point, kkt_tol, gap_tol, iterations)
        if ok:  # the multipliers that attain the residual: where the certificate starts
            certified_U = U_test
        return cert, ok

    def polish():
        """A sum of scalar norms: the minimizer on the stage end's kink set
        (:mod:`ssl_opt.plugins.ere.polish`), returned when it is certified."""
        nonlocal best, last_cert, polished, last_pattern
        tau = KINK_TOL * max(groups.value_scale, float(np.sqrt(st.sq.max(initial=0.0))))
        pattern = np.sign(st.g[:, 0]) * (np.abs(st.g[:, 0]) > tau)  # 0: the kink set
        if last_pattern is not None and np.array_equal(pattern, last_pattern):
            return None  # the same kink set and signs as the last attempt
        last_pattern = pattern
        out = polish_scalar_groups(problem, pattern, tau)
        if out is None:
            return None
        xp, Up = out
        gp = groups.values(xp)
        phi_p = st.true_obj(xp, np.einsum("ij,ij->i", gp, gp))
        if phi_p < best[0]:
            best = (phi_p, xp, st.delta, Up)
        # The zero groups' multipliers of a rank-deficient G_Z are not unique: the full FISTA
        # budget of the certificate moves them into the balls.
        last_cert, ok = certificate(xp, Up, None, iterations=CERTIFICATE_ITERS)
        polished = bool(ok)
        return (xp, phi_p) if ok else None

    def end_stage():
        """Record the stage's end point; Richardson-extrapolate the last two in √δ and certify
        the extrapolation once consecutive extrapolations agree; for scalar groups at small δ,
        try the kink-set polish. Returns the certified point."""
        nonlocal best, since_best, last_cert
        stage_ends.append((st.delta, st.x.copy()))
        if can_polish and st.delta <= POLISH_DELTA * sigma**2:
            done = polish()
            if done is not None:
                return done
        if not opts.extrapolate or len(stage_ends) < 2:
            return None
        (d0, x0), (d1, x1) = stage_ends[-2:]
        if d0 <= d1 * (1.0 + 1e-9):  # two ends at the same δ (a stage resumed): nothing to
            return None              # extrapolate
        z = richardson(d0, x0, d1, x1)
        gz = groups.values(z)
        phi_z = st.true_obj(z, np.einsum("ij,ij->i", gz, gz))
        change_z = abs(phi_z - extrap[-1][2]) / max(1.0, abs(phi_z)) if extrap else np.inf
        extrap.append([it, d1, phi_z, change_z, None])
        history.rows[-1]["extrapolated_objective"] = float(phi_z)
        if phi_z < best[0]:
            best, since_best = (phi_z, z, d1, st.U), 0
        if change_z <= max(tol, 0.1 * gap_tol):
            last_cert, ok = certificate(z, st.U, None)
            extrap[-1][4] = dict(last_cert)
            if ok:
                return z, phi_z
        return None

    def next_stage(delta):
        nonlocal stage_it, flat
        st.set_delta(delta)
        stage_it, flat = 0, 0
        aa.restart()

    def stage_done(floor) -> bool:
        """End the stage; True when its extrapolation is certified (``result``), else start
        the next stage at ``δ / delta_factor``, not below ``floor``."""
        nonlocal result
        result = end_stage()
        if result is None:
            next_stage(max(st.delta / opts.delta_factor, floor))
        return result is not None

    while it < opts.max_iter:
        it += 1
        stage_it += 1
        rtol = max(1e-14, min(1e-4, 1e-4 * st.r))
        y = step(st.x, irls_weights(st.sq, st.delta), rtol)
        plain = st.evaluate(y)
        aa.observe(st.x, y)
        accelerated = aa.propose(st.evaluate, _below(plain[3]))
        used_aa = accelerated is not None
        cand = accelerated if used_aa else plain
        old_phi, old_phi_s = st.phi, st.phi_s
        monotone = cand[3] <= old_phi_s + 1e-12 * max(1.0, abs(old_phi_s))
        violations += not monotone
        st.accept(*cand)
        change = abs(old_phi - st.phi) / max(1.0, abs(st.phi))
        flat = flat + 1 if (change <= tol and old_phi_s - st.phi_s
                            <= 1e-15 * max(1.0, abs(st.phi_s))) else 0
        if st.phi < best[0]:
            best, since_best = (st.phi, st.x, st.delta, st.U), 0
        else:
            since_best += 1
        history.append(iteration=it, objective=st.phi, smoothed_objective=st.phi_s,
                       delta=st.delta, residual=st.r, anderson=float(used_aa),
                       monotone=float(monotone), time=time.perf_counter() - start)
        if opts.verbose and it % 20 == 0:
            print(f"[irls] it {it:5d}  φ={st.phi:.12g}  φ_δ={st.phi_s:.12g}  δ={st.delta:.1e}  "
                  f"r={st.r:.2e}  t={time.perf_counter() - start:.2f}s", flush=True)
        stuck = flat >= FLAT_STEPS  # the smoothed problem is solved to its numerical floor
        if st.delta > final_delta:  # an intermediate stage of the continuation
            if (st.r <= max(np.sqrt(st.delta) / sigma, kkt_tol) or stuck
                    or stage_it >= opts.stage_max_iter):
                if stage_done(final_delta):
                    status = OPTIMAL
                    break
            continue
        if change <= tol and (st.r <= kkt_tol or stuck) and it >= next_check:
            # The kink slack with the smoothed multipliers costs nothing: the certificate
            # (a FISTA solve) only runs when it can pass.
            slack = float(w @ (np.sqrt(st.sq) - st.sq / np.sqrt(st.sq + st.delta)))
            slack /= max(1.0, abs(st.phi))
            if slack <= gap_tol:
                last_cert, ok = certificate(st.x, st.U, st.delta)
                if ok:
                    status = OPTIMAL
                    break
            else:
                last_cert = {"kink_slack_estimate": slack, "smoothed_stationarity": st.r}
            next_check, check_gap = it + check_gap, 2 * check_gap
            if st.delta > lowest_delta * (1 + 1e-12):
                if stage_done(lowest_delta):
                    status = OPTIMAL
                    break
                continue
        if st.delta <= lowest_delta * (1 + 1e-12) and since_best >= opts.stall_iter:
            status = STALLED
            break
    extrapolated = False
    if result is not None and polished:
        x, phi, delta, U = result[0], result[1], stage_ends[-1][0], best[3]
    elif result is not None:
        x, phi, delta, U, extrapolated = result[0], result[1], stage_ends[-1][0], st.U, True
    elif status != OPTIMAL and best[0] < st.phi:
        phi, x, delta, U = best
        extrapolated = any(e[2] == phi for e in extrap)
    else:
        x, phi, delta, U = st.x, st.phi, st.delta, st.U
    if status == OPTIMAL and certified_U is not None:
        U = certified_U
    out = problem.unpack_vector(x)
    out.update(groups.multipliers(U))
    if not extrapolated and x is st.x and st.r <= kkt_tol:
        # The point minimizes φ_δ (to kkt_tol), so its smoothed stationarity is certifiable.
        # Not so for an extrapolation, a best iterate from earlier, or a stage stuck at its
        # numerical floor (the δ stays in info for warm starts).
        out["delta"] = np.array(delta)
    info = _run_info(step, sigma, delta=delta, stages=len(stage_ends) + 1, checks=checks,
                     last_cert=last_cert, extrapolated=extrapolated, polished=polished,
                     violations=int(violations), aa=aa, extrapolations=extrap)
    if U is not None:
        info["multipliers"] = certificate_multipliers(problem, x, U)
    return Solution(out, phi, status, it, 0.0, solver.backend, solver.name, history, info=info)


def _run_info(step, sigma: float, *, delta, stages: int, checks: int, last_cert=None,
              extrapolated: bool = False, polished: bool = False, violations: int = 0,
              aa: SafeguardedAnderson | None = None, extrapolations=()) -> dict:
    """The ``info`` of an IRLS solution (``aa``: the Anderson accelerator, None when no step
    was taken)."""
    info = {"extrapolated": extrapolated, "polished": polished, "delta": delta, "sigma": sigma,
            "stages": stages, "monotone_violations": violations,
            "anderson_accepted": aa.accepted if aa else 0,
            "anderson_rejected": aa.rejected if aa else 0,
            "certificate_checks": checks, "linear_solver": step.kind,
            "cg_iterations": step.cg_iterations, "factor_fill": step.factor_fill,
            "predicted_fill": step.predicted_fill, "extrapolations": list(extrapolations)}
    if last_cert is not None:
        info["last_certificate"] = dict(last_cert)
    return info


def _below(phi_s: float):
    """IRLS's Anderson safeguard: an extrapolated candidate (:meth:`_State.evaluate`) is taken
    when its ``φ_δ`` is finite and below ``phi_s``, the plain step's."""
    return lambda candidate: bool(np.isfinite(candidate[3]) and candidate[3] < phi_s)


class _State:
    """The current iterate of a sum-of-norms form with its group values, φ, φ_δ
    [004 eq. 11], the smoothed multipliers ``U = g/√(‖g‖² + δ)`` and the smoothed
    stationarity ``r`` [004 eq. 12]."""

    def __init__(self, form, x):
        self.form = form
        self.w = form.groups.weights
        self.delta = 0.0
        self.accept(*self.evaluate(x))

    def true_obj(self, x, sq):
        return self.form.smooth_value(x) + smoothed_norms(self.w, sq, 0.0)

    def evaluate(self, x):
        g = self.form.groups.values(x)
        sq = np.einsum("ij,ij->i", g, g)
        return x, g, sq, self.form.smooth_value(x) + smoothed_norms(self.w, sq, self.delta)

    def accept(self, x, g, sq, phi_s):
        self.x, self.g, self.sq, self.phi_s = x, g, sq, phi_s
        self.phi = self.true_obj(x, sq)
        if self.delta > 0:
            self.U = smoothed_multipliers(g, self.delta, sq)
            self.r = stationarity(self.form, x, self.U)
        else:
            self.U, self.r = None, np.inf

    def set_delta(self, delta):
        self.delta = delta
        self.accept(*self.evaluate(self.x))


@hookimpl
def register_solvers():
    return [IRLS()]
