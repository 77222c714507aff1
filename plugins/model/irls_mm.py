r"""Majorize–minimize IRLS for quadratic + norm + Huber models (``irls-mm``, docs/modeling.md).

Model ``Σ_q h_q(A_q θ) + Σ_j Σ_g w_g‖(B_j θ)_g‖ + Σ_h Σ_g w_g H_δh(‖(C_h θ)_g‖)``: quadratic
smooth terms (``constant_hessian``: ridge, squared error, linear, quadratic forms), norm terms
with a scalar weight per group (``norm_structure``: ℓ1, elastic net, group/row norms, graph TV)
and Huber norms (:class:`~ssl_opt.modeling.terms.HuberNorms`); constraints only
:class:`~ssl_opt.modeling.terms.FixedRows` of a variable, eliminated. Each step minimizes the
quadratic majorizer of the smoothed objective ``Φ_δ`` at the iterate [004 eqs. 13–15]::

    w√(‖z‖² + δ)  ≤  w‖z‖²/(2r₀) + w r₀/2,           r₀ = √(‖z₀‖² + δ)
    w H_δh(‖z‖)   ≤  ½ w min(1/δh, 1/‖z₀‖) ‖z‖² + c   (H_δh(√s) is concave in s: exact MM,
                                                       no smoothing needed for Huber)

so ``θ⁺ = θ − H(θ)⁻¹∇Φ_δ(θ)`` with ``H = Σ A_qᵀ∇²h_q A_q + Σ B_jᵀ diag(w/r₀) B_j +
Σ C_hᵀ diag(w min(1/δh, 1/‖z₀‖)) C_h`` — *scalar* weights per group, unlike the Newton Hessian
of ``√(‖z‖² + δ)`` (c×c blocks per group, ``irls-newton``) — and ``Φ_δ(θ⁺) ≤ Φ_δ(θ)``. The
step taken is that matrix's MM step improved by a few CG iterations on the true Newton
system, preconditioned by it, and an exact line search (:class:`MMStep`): same factorization,
the radial curvature the majorizer overstates recovered (Huber edges in their linear part).

**Column separability.** When every variable is n_v×c (or a length-c bias row), every map
acts on rows only (matrices, row selections, broadcasts, scalar scales), every group is a
row of an n×c argument and every quadratic Hessian is ``H_row ⊗ I_c``, H is ``I_c ⊗ H_row``:
one sparse LDLᵀ of the row-level ``H_row`` (ERE: ``n + d + 1`` unknowns, the structure
of [004 eqs. 19–26]) serves the c right-hand sides. Otherwise H is factored over all
unknowns. Its pattern is fixed: the upper-triangle entries are ``const + Σ_j M_j·(weights)``
with sparse maps ``M_j`` built once, and :class:`~ssl_opt.numerics.ldl.PatternLDL` refactors
numerically only.

**Driver** (:class:`_Run`, the ERE IRLS driver's scheme [004 Alg. 1–2], ``plugins/ere/irls.py``,
with these steps): δ-continuation from ``δ₀ = delta0·σ²`` (σ: the largest group at the
minimizer of the quadratic model), a stage ending when the smoothed stationarity is below
``STAGE_RTOL·√δ/σ``; Anderson acceleration safeguarded on Φ_δ; the next stage started from the
fit ``θ* + a√δ`` of the last two stage ends. Candidates checked at stage ends with the
**model's own** certificate (:meth:`ModelForm.certify`: the kink slack, then the stationarity
of :func:`~ssl_opt.modeling.stationarity.stationarity` at the candidate's multipliers, then
with the kink groups' entries refined by least squares, then its own minimization when within
``FULL_CHECK·tol``):

* from ``δ ≤ ELIM_DELTA·σ²`` (the first stage end), the **active-set polish by elimination**
  (:mod:`~ssl_opt.plugins.model.irls_mm_eliminate`): the groups with ``‖z_g‖ ≤ KAPPA·√δ``
  held at zero by eliminating one private unknown per kink row (ERE: ``F_i = X_i W + b``),
  Newton on the smooth rest, the kink multipliers from the eliminated rows' stationarity,
  groups leaving (``‖λ_g‖ > w_g``) and joining until the set is stable — when the reduced
  problem is small (at most ``FRACTION·N`` row unknowns);
* from ``CHECK_DELTA·σ²``, the Richardson extrapolation in √δ of the last two stage ends
  (points and multipliers) and, from ``POLISH_DELTA·σ²``, the kink-set polish by projected
  Newton on the KKT system (:mod:`~ssl_opt.plugins.model.irls_mm_polish`: kink sets without
  private unknowns, e.g. graph-TV edges sharing nodes), then the stage end itself.

Below ``DELTA_FLOOR·σ²``, after ``max_iter`` steps or past ``time_limit`` seconds the best
iterate is returned ``stalled`` / ``max_iterations`` / ``time_limit``. Modules:
:mod:`~ssl_opt.plugins.model.irls_mm_system` (the system and its pattern),
:mod:`~ssl_opt.plugins.model.irls_mm_step` (f, the certificate, the step), the two polishes
above, and this one (the driver and the solver).

Measured (this 2-core machine, best of 3; ``tests/modeling/test_irls_mm.py`` checks
correctness, not time): ere_group 0.05 / 0.10 / 0.27 / 1.0 s at n = 600 / 1,500 / 4,000 /
10,000 (Clarabel 12–13.7 s at 10,000), 4 factorizations (kept while the weights move by less
than a factor REUSE), objective within 1e-8 of Clarabel's;
ere_huber 0.13 / 0.22 / 0.36 / 0.95–1.03 s (Clarabel 22.3 s at 10,000), certified by the
elimination after the first stage (two factorizations), objective within 1e-13: nearly every
robust-fit group is at its kink, several nearly degenerate (‖u‖ ≈ 1), where the
δ-continuation alone reaches the √δ regime only below δ ≈ 1e-12σ² (48.6 s at n = 10,000
before the elimination).
"""


from __future__ import annotations

import weakref

import numpy as np

from ssl_opt._validation import check_bool, check_positive, greater_than, integer
from ssl_opt.hookspecs import hookimpl
from ssl_opt.modeling.model import Model
from ssl_opt.modeling.terms import FixedRows, HuberNorms
from ssl_opt.numerics.continuation import continued, richardson
from ssl_opt.plugins.model.assembly import unassemblable
from ssl_opt.plugins.model.common import (
    ModelSolver,
    certificate_check,
    check_user_terms,
    kernel_expansion,
    model_solution,
    worst,
)
from ssl_opt.plugins.model.irls_mm_eliminate import Elimination
from ssl_opt.plugins.model.irls_mm_polish import KAPPA, KinkPolish
from ssl_opt.plugins.model.irls_mm_step import MMStep, ModelForm
from ssl_opt.plugins.model.irls_mm_system import (  # noqa: F401 (the tests' entry points)
    MMSystem,
    NotSeparable,
    build_system,
    pair_count,
)
from ssl_opt.plugins.model.iterative import VERBOSE_OPTION, Run
from ssl_opt.plugins.model.multipliers import with_fixed_multipliers
from ssl_opt.solution import MAX_ITERATIONS, OPTIMAL, STALLED
from ssl_opt.solvers import TIME_LIMIT_OPTION, Option

#: Upper-triangle contributions ``Σ_rows q_r(q_r + 1)/2`` (q_r: the nonzeros of a row of a
#: term's map) beyond which the weighted system is not built (a dense map: use irls-newton).
MAX_PAIRS = 3e7
#: A stage ends when the smoothed stationarity is below STAGE_RTOL·√δ/σ; from δ ≤
#: CHECK_DELTA·σ² its end is checked, from δ ≤ POLISH_DELTA·σ² also polished (at most
#: POLISH_TRIES failures); δ never goes below DELTA_FLOOR·σ².
STAGE_RTOL, CHECK_DELTA, POLISH_DELTA, POLISH_TRIES, DELTA_FLOOR = 0.1, 1e-6, 1e-8, 3, 1e-20
#: From δ ≤ ELIM_DELTA·σ² each stage end is polished by elimination (irls_mm_eliminate),
#: until ELIM_TRIES attempts have spent Newton steps without a candidate.
ELIM_DELTA, ELIM_TRIES = 1e-2, 2


# ---------------------------------------------------------------------------- the driver
class _Run(KinkPolish):
    """δ-continuation with Newton–MM steps, safeguarded Anderson acceleration, Richardson
    extrapolation in √δ, the kink-set polish, and the stop on the model's certificate
    (module docstring)."""

    def __init__(self, form: ModelForm, step: MMStep, opts: dict):
        self.form, self.step, self.opts = form, step, opts
        self.system = form.system
        self.log_on = opts["verbose"]
        self.polish_tries = POLISH_TRIES
        self.last_pattern = None
        self.elim, self.elim_patterns = None, []

    def log(self, message: str) -> None:
        if self.log_on:
            print(f"[irls-mm] {message}", flush=True)

    def radii(self, X, delta):
        return [np.sqrt(np.sum(np.reshape(p.value_at(X), (p.w.size, -1)) ** 2, axis=1)
                        + delta) for p in self.system.norms]

    def phi(self, X, delta) -> tuple[float, float]:
        """``(Φ_δ(X), Φ(X))``."""
        f = self.form.smooth_value(X.ravel())
        norms = [np.linalg.norm(np.reshape(p.value_at(X), (p.w.size, -1)), axis=1)
                 for p in self.system.norms]
        smoothed = sum(float(p.w @ np.sqrt(n * n + delta))
                       for p, n in zip(self.system.norms, norms, strict=True))
        exact = sum(float(p.w @ n) for p, n in zip(self.system.norms, norms, strict=True))
        return f + smoothed, f + exact

    def smoothed_multipliers(self, X, delta):
        """``U_g = z_g/√(‖z_g‖² + δ)`` per norm term (groups × k)."""
        out = []
        for p, r in zip(self.system.norms, self.radii(X, delta), strict=True):
            out.append(np.reshape(p.value_at(X), (p.w.size, -1)) / r[:, None])
        return out

    def solve(self):
        from ssl_opt.numerics.anderson import SafeguardedAnderson

        opts, step, form = self.opts, self.step, self.form
        run = Run("irls-mm", form.model, opts["tol"], opts["max_iter"], opts.get("time_limit"))
        C, nf = self.system.C, self.system.free.size
        X = np.zeros((nf, C)) if opts["x0"] is None else np.reshape(opts["x0"], (nf, C))
        if opts["x0"] is None:  # the quadratic model: every norm as ½‖z‖²
            grad, _, _ = step.prepare(X, [np.ones(p.w.size) for p in self.system.norms])
            X = step.mm(X, grad)
        sigma = max((float(np.max(r)) for r in self.radii(X, 0.0) if r.size), default=0.0)
        sigma = sigma if sigma > 1e-12 * form.value_scale else form.value_scale
        delta = opts["delta0"] * sigma**2
        lowest = DELTA_FLOOR * sigma**2
        history, it, status = run.history, 0, MAX_ITERATIONS
        aa = SafeguardedAnderson(X.size, opts["anderson"], clear_on_reject=False)
        ends, result, best = [], None, (np.inf, X)
        previous, stalls, t = np.inf, 0, 0.0
        while True:
            radii = self.radii(X, delta)
            grad, scale, blocks = step.prepare(X, radii)
            stat = float(np.max(np.abs(grad), initial=0.0)) / scale
            phi_s, phi = self.phi(X, delta)
            if phi < best[0]:
                best = (phi, X)
            history.append(iteration=it, objective=phi, smoothed=phi_s, delta=delta,
                           stationarity=stat, step=t, time=run.elapsed)
            self.log(f"it {it:4d}  F = {phi:.12g}  Φ_δ = {phi_s:.12g}  δ = {delta:.1e}  "
                     f"stationarity {stat:.2e}  step {t:.3g}")
            stalls = stalls + 1 if not phi_s < previous - 1e-15 * max(1.0, abs(phi_s)) else 0
            previous = phi_s
            if stat <= max(0.1 * opts["tol"], STAGE_RTOL * np.sqrt(delta) / sigma) or \
                    stalls >= 3:
                ends.append((delta, X.copy(), self.smoothed_multipliers(X, delta)))
                if delta <= max(CHECK_DELTA, ELIM_DELTA) * sigma**2:
                    result = self.check(ends, X, delta, sigma)
                    if result is not None:
                        status = OPTIMAL
                        break
                if delta <= lowest:
                    status = STALLED
                    break
                new_delta = max(delta / opts["delta_factor"], lowest)
                X = self.predict(ends, X, new_delta)
                delta, previous, stalls = new_delta, np.inf, 0
                aa.restart()
                continue
            if run.budget_status(it):
                status = run.budget_status(it)
                break
            Y, t = step.newton(X, grad, blocks)
            it += 1
            X = self.accelerated(aa, X, Y, delta)
        if result is None:
            X_out, kind = best[1], "best iterate"
            multipliers = form.multipliers(X_out.ravel(), self.smoothed_multipliers(
                X_out, delta))
        else:
            X_out, multipliers, kind = result
        info = {"delta": delta, "sigma": sigma, "stages": len(ends), "endpoint": kind,
                "anderson_accepted": aa.accepted, "anderson_rejected": aa.rejected,
                "certificate_checks": form.checks, "certificate": form.last_cert,
                "factorizations": step.factorizations, "cg_iterations": step.cg_iterations,
                "factors_reused": step.reused,
                "multipliers": multipliers}
        return X_out, status, it, history, info

    def accelerated(self, aa, X, Y, delta):
        """Y = T(X), or the Anderson extrapolation of T's last pairs when its Φ_δ is lower
        (the ERE driver's safeguard, ``plugins/ere/irls.py``; the memory is kept on a
        rejection)."""
        aa.observe(X.ravel(), Y.ravel())
        plain = self.phi(Y, delta)[0]

        def evaluate(v):
            return v, self.phi(np.reshape(v, X.shape), delta)[0]

        proposal = aa.propose(evaluate, lambda cand: bool(np.isfinite(cand[1])
                                                          and cand[1] < plain))
        return Y if proposal is None else np.reshape(proposal[0], X.shape)

    def predict(self, ends, X, delta):
        """The next stage's start ``θ* + a√δ`` fitted to the last two stage ends, kept when
        its Φ_δ is below the last end's (``plugins/model/irls_newton.py``)."""
        if len(ends) < 2 or not ends[-2][0] > 2.0 * ends[-1][0] > 4.0 * delta:
            return X
        (d1, x1, _), (d2, x2, _) = ends[-2:]
        guess = continued(d1, x1, d2, x2, delta)
        if np.all(np.isfinite(guess)) and self.phi(guess, delta)[0] < self.phi(X, delta)[0]:
            return guess
        return X

    def check(self, ends, X, delta, sigma):
        """The candidates of a stage end — the kink-set polish (δ ≤ POLISH_DELTA·σ²), the
        Richardson extrapolation of the last two ends, the end itself — checked with the
        model's certificate; ``(X, multipliers, kind)`` of the first that passes, or None."""
        candidates = []
        eliminated = self.eliminated(X, delta, sigma)
        if eliminated is not None:
            candidates.append((*eliminated, "eliminated"))
        if delta > CHECK_DELTA * sigma**2:
            return self._first_certified(candidates, X, delta)
        if delta <= POLISH_DELTA * sigma**2 and self.polish_tries > 0 and len(ends) >= 2:
            polished = self.polish(X, delta, ends[-2][1])
            if polished is None:
                self.polish_tries -= 1
            else:
                candidates.append((*polished, "polished"))
        if len(ends) >= 2 and ends[-2][0] > 2.0 * delta:
            (d1, x1, u1), (d2, x2, u2) = ends[-2:]
            # the multipliers too (U(δ) = U* + b√δ), each group back in its unit ball
            U = [richardson(d1, a, d2, b) for a, b in zip(u1, u2, strict=True)]
            U = [V / np.maximum(1.0, np.linalg.norm(V, axis=1))[:, None] for V in U]
            candidates.append((richardson(d1, x1, d2, x2), U, "extrapolated"))
        candidates.append((X, None, "stage end"))
        return self._first_certified(candidates, X, delta)

    def _first_certified(self, candidates, X, delta):
        for point, U, kind in candidates:
            if U is None:
                U = self.smoothed_multipliers(X, delta)
            multipliers = self.form.certify(point, U)
            self.log(f"  check ({kind}): {self.form.last_cert}")
            if multipliers is not None:
                return point, multipliers, kind
        return None

    def eliminated(self, X, delta, sigma):
        """The active-set polish by elimination (:mod:`irls_mm_eliminate`) from the groups
        with ``‖z_g‖ ≤ KAPPA·√δ``, once per kink pattern; ``(X, U)`` or None."""
        if self.elim is None:
            self.elim = Elimination(self.form, self.step.Q, sigma)
        if self.elim.failures >= ELIM_TRIES:
            return None
        masks = [np.sum(np.reshape(p.value_at(X), (p.w.size, -1)) ** 2, axis=1)
                 <= KAPPA**2 * delta for p in self.system.norms]
        pattern = np.concatenate(masks)
        if not pattern.any() or any(np.array_equal(pattern, q) for q in self.elim_patterns):
            return None
        self.elim_patterns.append(pattern)
        found = self.elim.run(X, masks, delta)
        self.log(f"  eliminated: {'none' if found is None else 'candidate'} "
                 f"({self.elim.rounds} rounds, {self.elim.newton_steps} Newton steps)")
        return found



# ---------------------------------------------------------------------------- the solver
_SYSTEMS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _system_of(model: Model) -> MMSystem:
    try:
        found = _SYSTEMS.get(model)
    except TypeError:
        found = None
    if found is None:
        found = build_system(model)
        try:
            _SYSTEMS[model] = found
        except TypeError:
            pass
    return found


class IRLSMM(ModelSolver):
    name = "irls-mm"
    description = ("Majorize–minimize IRLS: norms and Huber norms majorized by quadratics with "
                   "a scalar weight per group, one sparse LDLᵀ per step (of the row-level "
                   "system, shared by the c columns, when the terms act identically on them); "
                   "δ-continuation, Anderson, Richardson extrapolation [004]; stops on the "
                   "model's certificate.")
    complexity = {"model": (1.5, "one sparse refactorization per step (kNN fill); ~10 "
                                 "factorizations with norms, ~100 with Huber terms")}
    options = {
        "tol": Option(1e-8, "stop when the model's certificate (stationarity) is at most tol",
                      check_positive),
        "gap_tol": Option(1e-7, "... and the kink slack Σ(g(z) − ⟨u, z⟩)/max(1, |F|) at most "
                          "this", check_positive),
        "max_iter": Option(2000, "MM steps in all", integer(1)),
        "delta0": Option(1e-2, "first smoothing δ relative to σ²", check_positive),
        "delta_factor": Option(20.0, "δ is divided by this between stages", greater_than(1)),
        "anderson": Option(10, "Anderson memory (0: plain MM)", integer(0)),
        "warm_start": Option(None, "a previous Solution or dict of the model's variables"),
        "check_terms": Option(True, "check user terms' oracles by finite differences",
                              check_bool),
        "time_limit": TIME_LIMIT_OPTION,
        "verbose": VERBOSE_OPTION,
    }

    def structure_reasons(self, model: Model) -> list[str]:
        reasons = []
        for t in model.smooth_terms:
            if isinstance(t, HuberNorms):
                continue
            if not {"constant_hessian", "gradient", "hessian"} <= t.capabilities:
                reasons.append(f"{t.describe()} to be quadratic (constant_hessian with an "
                               "assembled Hessian) or Huber norms (irls-mm majorizes the "
                               "rest by quadratics)")
        for t in model.nonsmooth_terms:
            if not {"norm_structure", "subdifferential"} <= t.capabilities:
                reasons.append(f"{t.describe()} to be a norm with a scalar weight per group "
                               "(norm_structure) and a subdifferential")
        for c in model.constraints:
            if not (isinstance(c, FixedRows) and c.argument.is_variable()):
                reasons.append(f"no constraint other than fixed rows of a variable "
                               f"({c.describe()} is one; 'pdhg' takes projections)")
        reasons += unassemblable(model, model.terms)
        if reasons:
            return reasons
        for t in model.terms:
            if kernel_expansion(model, [t]):
                return [f"{t.describe()} not on a kernel expansion f = Kα (a dense n×n map: "
                        "'irls-newton' solves it in K's range)"]
        try:
            system = _system_of(model)
        except (NotSeparable, NotImplementedError, ValueError) as exc:
            return [f"an assemblable system ({exc})"]
        pairs = sum(pair_count(p.A) for p in system.pieces)
        if pairs > MAX_PAIRS:
            heavy = max(system.pieces, key=lambda p: pair_count(p.A))
            return [f"{heavy.term.describe()} to have a sparse enough map ({pairs:.3g} "
                    f"weighted entries > {MAX_PAIRS:.0e}; 'irls-newton' or 'pdhg')"]
        return []

    def predicted_time(self, problem) -> float:
        """``0.02 + STEPS·1.1e-9·E^1.5`` with E the weighted system's pattern entries (the rows'
        pairs, :func:`pair_count`): the sparse refactorizations and the solves with them
        dominate (kNN fill; 0.075 s per factorization at E = 2.7e5); fitted on ere_group,
        n = 600..10,000 (0.05, 0.10, 0.27, 1.0 s measured, best of 3; E = 1.7e4..2.7e5), this
        2-core machine. With Huber terms the first stage (two factorizations) and the polish
        by elimination dominate: ``0.1 + 0.1·min(1, 5,500/E) + 6.2e-9·E^1.5`` — the middle
        term the active-set rounds of small instances, whose reduced problems are not small
        relative to n — fitted on ere_huber at n = 60, 200, 600, 1,500, 4,000, 10,000: 0.18,
        0.22, 0.12, 0.22, 0.37, 1.0 s (best of 3; E = 1.6e3..2.7e5)."""
        system = _system_of(problem)
        E = sum(pair_count(p.A) for p in system.pieces) + system.free.size
        if system.hubers:
            return 0.1 + 0.1 * min(1.0, 5500.0 / E) + 6.2e-9 * E**1.5
        return 0.02 + STEPS_NORMS * 1.1e-9 * E**1.5 * max(1.0, system.C / 3.0) ** 0.5

    def _run(self, model: Model, tol, gap_tol, max_iter, delta0, delta_factor, anderson,
             warm_start, check_terms, time_limit, verbose):
        system = _system_of(model)
        form = ModelForm(model, system, tol, gap_tol)
        step = MMStep(form)
        x0 = None
        if warm_start is not None:
            x0 = system.level(model.pack(model.warm_start_values(warm_start))).ravel()
        if check_terms:
            check_user_terms(model, model.terms, system.theta(
                np.zeros((system.free.size, system.C)) if x0 is None
                else np.reshape(x0, (-1, system.C))))
        opts = {"tol": tol, "max_iter": max_iter, "delta0": delta0, "delta_factor": delta_factor,
                "anderson": anderson, "x0": x0, "time_limit": time_limit, "verbose": verbose}
        if not system.norms:
            return self._smooth_only(model, form, step, x0, opts)
        X, status, it, history, info = _Run(form, step, opts).solve()
        info.update({"columns": system.C, "separable": system.separable,
                     "unknowns": int(system.free.size), "pattern_entries": int(
                         step.pattern.nnz)})
        return model_solution(model, system.theta(X), status, it, history, info)

    def _smooth_only(self, model, form, step, x0, opts):
        """No norm term (quadratics and Huber norms only): Newton–MM steps until the model's
        certificate passes (the fixed rows' multipliers cancel the gradient there)."""
        system = form.system
        X = np.zeros((system.free.size, system.C)) if x0 is None else np.reshape(
            x0, (-1, system.C))
        run = Run("irls-mm", model, form.tol, opts["max_iter"], opts["time_limit"])
        history, status, it, multipliers = run.history, MAX_ITERATIONS, 0, None
        best = (np.inf, X)
        while True:
            theta = system.theta(X)
            multipliers = with_fixed_multipliers(model, theta, [])
            cert = certificate_check(model, model.unpack_flat(theta), multipliers, 0)
            objective = float(model.objective(model.unpack_flat(theta)))
            history.append(iteration=it, objective=objective, stationarity=worst(cert))
            if worst(cert) <= form.tol:
                status = OPTIMAL
                break
            if objective < best[0]:
                best = (objective, X)
            run.watch_divergence(objective, theta)
            if run.budget_status(it):
                status = run.budget_status(it)
                break
            grad, _, blocks = step.prepare(X, [])
            X, t = step.newton(X, grad, blocks)
            it += 1
            if t == 0.0:
                status = STALLED
                break
        info = {"columns": system.C, "separable": system.separable, "multipliers": multipliers,
                "certificate": cert}
        if status != OPTIMAL:  # the best iterate, not the last (a singular system diverges)
            X = best[1]
            info.pop("multipliers")
            info.pop("certificate")
        status = run.verdict_status(status, info)
        return model_solution(model, system.theta(X), status, it, history, info)


#: Factorization equivalents assumed by ``predicted_time`` without Huber terms: 4 new
#: factors on the ERE variants (REUSE = 10) and the PCG iterations (~50 solves) besides.
STEPS_NORMS = 7


@hookimpl
def register_solvers():
    return [IRLSMM()]
