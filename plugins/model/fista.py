r"""FISTA: accelerated proximal gradient with backtracking and adaptive restart
(docs/design.md §6; FISTA [Beck & Teboulle 2009], O'Donoghue & Candès 2015).

The model splits as ``F(θ) + Σ_j g_j(θ_{v_j})``: ``F`` the terms offering ``gradient``, each
``g_j`` a non-smooth term or a constraint on a whole variable ``v_j`` (at most one per
variable) offering ``prox`` (a constraint's prox is its projection). One iteration, step
``τ = 1/L``::

    x⁺ = prox_{τg}(y − τ∇F(y)),        u = (y − τ∇F(y) − x⁺)/τ ∈ ∂g(x⁺)

with ``L`` found by backtracking (doubled until ``F(x⁺) ≤ F(y) + ⟨∇F(y), d⟩ + (L/2)‖d‖²``,
``d = x⁺ − y``; when the two values agree to 1e-10 relative that test is round-off, and the
equivalent-for-quadratics ``⟨∇F(x⁺) − ∇F(y), d⟩ ≤ L‖d‖²`` is used instead, as TFOCS does),
then lowered by 5% per iteration so that the step can grow again. Momentum
``y = x⁺ + ((t_k − 1)/t_{k+1})(x⁺ − x)`` is reset (``t = 1``) when the gradient-mapping test
``⟨y − x⁺, x⁺ − x⟩ > 0`` (``restart="gradient"``) or an increase of the objective
(``restart="function"``) says it points uphill. The arguments of the smooth terms are
combined like the iterates (``A y = A x⁺ + β(A x⁺ − A x)``): one product with each map forward
(at x⁺) and one adjoint (at y) per iteration.

Stop: on the model's certificate, checked every ``check_every`` iterations (and every
iteration once the backtracking works on gradients): ``∇F(x⁺) + u`` scaled as in
:func:`~ssl_opt.modeling.stationarity.stationarity`, with ``u`` the better of the prox-step
multipliers above and the terms' ``project_subgradient(x⁺, −∇F(x⁺))``. The multipliers are
returned in ``Solution.info["multipliers"]`` (one array per non-smooth term, then per
constraint, in model order, shaped like its variable) for ``model.kkt`` to start from. When
the rate of the last half of the run cannot reach ``tol`` within ``max_iter``
(:func:`~ssl_opt.plugins.model.common.too_slow`; e.g. a kernel expansion ``f = Kα``, whose
Hessian carries K²) the solver stops with status ``stalled`` and says why in
``info["note"]``; the best iterate (lowest objective) is returned.
"""

from __future__ import annotations

import numpy as np

from ssl_opt._validation import check_bool, check_positive, choice, integer
from ssl_opt.hookspecs import hookimpl
from ssl_opt.modeling.model import Model
from ssl_opt.plugins.model.common import (
    ModelSolver,
    certificate_residual,
    check_user_terms,
    first_order_stall,
    gradient_seconds,
    kernel_expansion,
    linear_part,
    model_solution,
    prox_seconds,
    pulled_gradient,
    start_point,
    too_slow,
)
from ssl_opt.plugins.model.iterative import VERBOSE_OPTION, Run
from ssl_opt.solution import MAX_ITERATIONS, OPTIMAL, STALLED, Solution
from ssl_opt.solvers import TIME_LIMIT_OPTION, Option

#: ``L`` is multiplied by this after each accepted step (the step may grow back).
L_DECREASE = 0.95
#: Doublings of L tried in one iteration before giving up (F not finite along the step).
MAX_BACKTRACKS = 100
#: Relative agreement of F(x⁺) and F(y) below which the value test is round-off.
VALUE_TEST_LIMIT = 1e-10
#: Iterations assumed by ``predicted_time``; on a kernel expansion
#: (``common.kernel_expansion``) 3000 iterations left LapRLS models of 100 and 300 points at
#: stationarity ~3e-5, so the default cap is assumed.
PREDICTED_ITERATIONS = 500
PREDICTED_ITERATIONS_KERNEL = 20_000


class FISTA(ModelSolver):
    name = "fista"
    description = ("Accelerated proximal gradient (FISTA) with backtracking and adaptive "
                   "restart: smooth terms by gradients, one prox-term or projection per "
                   "variable; stops on the model's certificate.")
    complexity = {"model": (1.0, "O(cost of a gradient) per iteration")}
    options = {
        "tol": Option(1e-8, "stop when the certificate's stationarity (∇F plus the "
                      "multipliers of the prox terms, scaled) is at most tol",
                      check_positive),
        "max_iter": Option(20_000, "iterations", integer(0)),
        "restart": Option("gradient", "adaptive restart test: 'gradient', 'function' or "
                          "'none' (O'Donoghue & Candès 2015)",
                          choice("gradient", "function", "none")),
        "check_every": Option(10, "iterations between certificate checks (each costs one "
                              "gradient)", integer(1)),
        "warm_start": Option(None, "a previous Solution or dict of the model's variables"),
        "check_terms": Option(True, "check user terms' gradients and proxes numerically "
                              "before trusting them", check_bool),
        "time_limit": TIME_LIMIT_OPTION,
        "verbose": VERBOSE_OPTION,
    }

    def structure_reasons(self, model: Model) -> list[str]:
        reasons = []
        owner: dict[str, object] = {}
        for t in model.nonsmooth_terms + model.constraints:
            kind = "constraint" if t in model.constraints else "non-smooth term"
            if "prox" not in t.capabilities:
                reasons.append(f"{t.describe()} to offer prox (fista handles a {kind} by its "
                               "proximal operator)")
            if not t.argument.is_variable():
                reasons.append(f"{t.describe()} to act on a whole variable (its argument "
                               f"{t.argument!r} is a map of the variables; fista applies "
                               "proxes to variables — a primal–dual method takes maps)")
                continue
            name = t.argument.parts[0][0].name
            if name in owner:
                reasons.append(f"at most one prox term or constraint per variable for fista "
                               f"({owner[name].describe()} and {t.describe()} both act on "
                               f"{name!r})")
            else:
                owner[name] = t
        return reasons

    def inexact(self, problem) -> str:
        return first_order_stall(problem, problem.smooth_terms)

    def predicted_time(self, problem) -> float:
        per_iteration = (1.3 * gradient_seconds(problem, problem.smooth_terms)
                         + prox_seconds(problem) + 2e-5)
        iterations = (PREDICTED_ITERATIONS_KERNEL
                      if kernel_expansion(problem, problem.smooth_terms)
                      else PREDICTED_ITERATIONS)
        return 1e-3 + iterations * per_iteration

    def _run(self, model: Model, tol, max_iter, restart, check_every, warm_start,
             check_terms, time_limit, verbose) -> Solution:
        run = Run(self.name, model, tol, max_iter, time_limit, verbose)
        split = _Split(model)
        theta = start_point(model, warm_start)
        if check_terms:
            check_user_terms(model, model.all_terms, theta)
        kink_tol = float(Model.kkt_options["kink_tol"].default)

        x, zx = theta, split.forward(theta)
        Fx = split.F(zx)
        gy, gy_scale = pulled_gradient(model, split.smooth, zx)
        L = split.initial_lipschitz(zx, gy)
        y, zy, Fy, t_k = x, zx, Fx, 1.0
        phi_x = np.inf
        best = None  # (Φ, θ, prox multipliers)
        status, it, stat, multipliers, restarts = MAX_ITERATIONS, 0, np.inf, None, 0
        gx = None
        if split.feasible(x):
            phi_x = Fx + split.g(x)
            best = (phi_x, x, None)
            stat, multipliers = split.certificate(x, gy, gy_scale, None, kink_tol)
            run.record(iteration=0, objective=phi_x, stationarity=stat, L=L)
        stalled, backtracks, why = False, 0, ""
        trace: list[tuple[int, float]] = [] if best is None else [(0, stat)]
        while stat > tol and it < max_iter:
            it += 1
            tries = 0
            while True:
                tau = 1.0 / L
                v = y - tau * gy
                xn = split.prox(v, tau)
                d = xn - y
                zxn = split.forward(xn)
                Fxn = split.F(zxn)
                dd = float(d @ d)
                gx = None
                if abs(Fxn - Fy) > VALUE_TEST_LIMIT * max(abs(Fxn), abs(Fy), 1e-300):
                    accept = Fxn <= Fy + float(gy @ d) + 0.5 * L * dd
                else:
                    gx, gx_scale = pulled_gradient(model, split.smooth, zxn)
                    accept = float((gx - gy) @ d) <= L * dd
                if accept or dd == 0.0 or tries >= MAX_BACKTRACKS:
                    break
                L *= 2.0
                tries += 1
            backtracks += tries
            if not accept and dd > 0.0:  # F is not finite or not L-smooth along d
                stalled, why = True, "no step length satisfies the backtracking test"
                break
            u = (v - xn) / tau
            phi_n = Fxn + split.g(xn)
            if restart == "gradient":
                uphill = float((y - xn) @ (xn - x)) > 0.0
            else:
                uphill = restart == "function" and phi_n > phi_x
            if uphill:
                t_k, restarts = 1.0, restarts + 1
                y, zy = xn, zxn
            else:
                t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t_k * t_k))
                beta = (t_k - 1.0) / t_next
                y = xn + beta * (xn - x)
                zy = [a + beta * (a - b) for a, b in zip(zxn, zx, strict=True)]
                t_k = t_next
            x, zx, phi_x = xn, zxn, phi_n
            if best is None or phi_n < best[0]:
                best = (phi_n, x, u)
            if gx is not None or it % check_every == 0 or it == max_iter:
                if gx is None:
                    gx, gx_scale = pulled_gradient(model, split.smooth, zx)
                stat, multipliers = split.certificate(x, gx, gx_scale, u, kink_tol)
                run.record(iteration=it, objective=phi_n, stationarity=stat, L=L,
                           restarts=restarts)
                run.watch_divergence(phi_n, x)
                if stat <= tol:
                    break
                if run.interruption():
                    status = run.interruption()
                    break
                trace.append((it, min(stat, trace[-1][1]) if trace else stat))
                if it % 100 == 0:
                    why = too_slow(trace, tol, max_iter)
                    if why:
                        stalled = True
                        break
            # The next gradient at y: reuse ∇F(x⁺) when y = x⁺ (after a restart).
            gy = gx if (uphill and gx is not None) else pulled_gradient(
                model, split.smooth, zy)[0]
            Fy = Fxn if uphill else split.F(zy)
            L *= L_DECREASE
        if stat <= tol:
            point = x
        else:
            _, point, u_best = best if best is not None else (None, x, None)
            z_point = split.forward(point)
            g_point, g_scale = pulled_gradient(model, split.smooth, z_point)
            stat, multipliers = split.certificate(point, g_point, g_scale, u_best, kink_tol)
        residuals = certificate_residual(model, model.unpack_flat(point), multipliers)
        measured = residuals.get("stationarity", stat)
        if stat <= tol:
            ok = measured <= tol and residuals.get("feasibility", 0.0) <= tol
            status = OPTIMAL if ok else STALLED
        elif stalled:
            status = STALLED
        info = {"multipliers": multipliers, "certificate": residuals,
                "stationarity": measured, "restarts": restarts,
                "backtracks": backtracks, "lipschitz": L,
                "note": why or ("" if "stationarity" in residuals else
                                "a prox term offers no subdifferential: "
                                "optimality rests on the prox-gradient residual")}
        status = run.verdict_status(status, info)
        return model_solution(model, point, status, it, run.history, info)


class _Split:
    """The smooth part F (its terms' arguments) and the prox part (terms on variables)."""

    def __init__(self, model: Model):
        self.model = model
        self.smooth = model.smooth_terms
        self.free = model.nonsmooth_terms + model.constraints
        offsets, start = {}, 0
        for name, shape in model.variables.items():
            size = int(np.prod(shape, dtype=int))
            offsets[name] = slice(start, start + size)
            start += size
        self.slices = [offsets[t.argument.parts[0][0].name] for t in self.free]

    def forward(self, theta) -> list[np.ndarray]:
        values = self.model.unpack_flat(theta)
        return [t.argument.value(values) for t in self.smooth]

    def F(self, zs) -> float:
        return float(sum(t.value(z) for t, z in zip(self.smooth, zs, strict=True)))

    def g(self, theta) -> float:
        return float(sum(t.value(theta[sl].reshape(t.shape))
                         for t, sl in zip(self.free, self.slices, strict=True)))

    def prox(self, v: np.ndarray, tau: float) -> np.ndarray:
        out = v.copy()
        for t, sl in zip(self.free, self.slices, strict=True):
            out[sl] = np.ravel(t.prox(v[sl].reshape(t.shape), tau))
        return out

    def feasible(self, theta) -> bool:
        return all(c.feasibility(theta[sl].reshape(c.shape)) == 0.0
                   for c, sl in zip(self.free, self.slices, strict=True)
                   if c in self.model.constraints)

    def initial_lipschitz(self, zs, grad) -> float:
        """``‖∇F(θ + εδ) − ∇F(θ)‖ / ‖εδ‖`` for a random δ: a lower estimate of L that
        backtracking raises."""
        if not self.smooth:
            return 1.0
        rng = np.random.default_rng(0)
        delta = rng.standard_normal(self.model.size)
        eps = 1e-4 / max(1.0, float(np.linalg.norm(delta)))
        dz = [linear_part(t.argument, self.model.unpack_flat(delta)) for t in self.smooth]
        moved, _ = pulled_gradient(self.model, self.smooth,
                                   [z + eps * d for z, d in zip(zs, dz, strict=True)])
        L = float(np.linalg.norm(moved - grad)) / (eps * float(np.linalg.norm(delta)))
        return L if np.isfinite(L) and L > 0 else 1.0

    def certificate(self, theta, grad, fixed_scale, u_prox, kink_tol) -> tuple[float, list]:
        """``(stationarity, multipliers)`` at θ: ``‖∇F + u‖_∞ / max(1, max_k‖A_kᵀ∇h_k‖_∞,
        ‖u‖_∞)`` for the better of the prox-step multipliers and the projections of
        ``−∇F`` onto the terms' subdifferentials (normal cones)."""
        candidates = []
        projected = []
        for t, sl in zip(self.free, self.slices, strict=True):
            z = theta[sl].reshape(t.shape)
            if "subdifferential" in t.capabilities:
                tol = kink_tol * max(1.0, t.kink_scale(z))
                projected.append(np.asarray(t.project_subgradient(
                    z, -grad[sl].reshape(t.shape), tol), dtype=np.float64))
            elif u_prox is not None:
                projected.append(u_prox[sl].reshape(t.shape))
            else:
                projected = None
                break
        if projected is not None:
            candidates.append(projected)
        if u_prox is not None:
            candidates.append([u_prox[sl].reshape(t.shape)
                               for t, sl in zip(self.free, self.slices, strict=True)])
        best = (np.inf, None)
        for us in candidates:
            r = grad.copy()
            scale = fixed_scale
            for u, sl in zip(us, self.slices, strict=True):
                r[sl] += np.ravel(u)
                scale = max(scale, float(np.max(np.abs(u), initial=0.0)))
            stat = float(np.max(np.abs(r), initial=0.0)) / max(1.0, scale)
            if stat < best[0]:
                best = (stat, us)
        return best

@hookimpl
def register_solvers():
    return [FISTA()]
