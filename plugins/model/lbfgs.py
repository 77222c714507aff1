r"""L-BFGS-B for smooth models with boxes on whole variables (docs/design.md §6).

Every term offers ``gradient``; a constraint is allowed when it offers ``bounds`` and its
argument is a whole variable, so the feasible set is the box ``lo ≤ θ ≤ hi`` (the intersection
of the constraints' boxes) that ``scipy.optimize.minimize(method="L-BFGS-B")`` keeps its
iterates in. ``F(θ) = Σ_k h_k(A_k θ)`` and ``∇F = Σ_k A_kᵀ∇h_k(A_k θ)`` are evaluated from the
terms alone.

Stop: on the model's own certificate, checked after every L-BFGS-B iteration (the callback
raises ``StopIteration``): with ``g = ∇F(θ)`` and, for each constraint on variable v, the
point ``u`` of its normal cone nearest ``−g_v`` (``Constraint.project_subgradient`` with the
certificate's kink tolerance, else from ``bounds()``),

    stationarity = ‖g + u‖_∞ / max(1, max_k ‖A_kᵀ∇h_k‖_∞, ‖u‖_∞) ≤ tol,

an upper bound of what :func:`~ssl_opt.modeling.stationarity.stationarity` computes (it
minimizes over u). scipy's own tests are switched off (``ftol = gtol = 0``). Its Wolfe line
search compares values of F, which stop changing below ``eps·|F|``: it stops near
stationarity ~1e-8 (measured on ridge least squares and a squared-hinge SVM). The iterations
then go on from the best point with L-BFGS directions on the free face of the box and exact
line searches on the gradient alone (:func:`_endgame`, the step capped at the first bound).
``model.kkt`` confirms the result, started from the multipliers ``u``
(``Solution.info["multipliers"]``). When the rate of the last half of the run cannot reach
``tol`` within ``max_iter`` (:func:`~ssl_opt.plugins.model.common.too_slow`; e.g. a kernel
expansion ``f = Kα``, whose Hessian carries K² — use ``newton-cg`` there) the solver stops
with status ``stalled`` and says why in ``info["note"]``. The best iterate (lowest
objective) is returned.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import Bounds, minimize

from ssl_opt._validation import check_bool, check_positive, integer
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.hookspecs import hookimpl
from ssl_opt.modeling.model import Model
from ssl_opt.plugins.model.common import (
    ModelSolver,
    certificate_residual,
    check_user_terms,
    directional_slope,
    exact_step,
    first_order_stall,
    gradient_seconds,
    kernel_expansion,
    lacking,
    linear_part,
    model_solution,
    pulled_gradient,
    start_point,
    too_slow,
    worst,
)
from ssl_opt.plugins.model.iterative import Run
from ssl_opt.solution import MAX_ITERATIONS, OPTIMAL, STALLED, TIME_LIMIT, Solution
from ssl_opt.solvers import TIME_LIMIT_OPTION, Option

#: L-BFGS iterations assumed by ``predicted_time`` (capped by the number of unknowns + 50);
#: on a kernel expansion (``common.kernel_expansion``) 3000 iterations left LapRLS models of
#: 100 and 300 points at stationarity ~1e-5, so the default cap is assumed.
PREDICTED_ITERATIONS = 300
PREDICTED_ITERATIONS_KERNEL = 10_000


class LBFGS(ModelSolver):
    name = "lbfgs"
    description = ("L-BFGS-B (scipy) for smooth models, with boxes on whole variables; stops "
                   "on the model's certificate (checked every iteration).")
    complexity = {"model": (1.0, "O(cost of a gradient) per iteration")}
    options = {
        "tol": Option(1e-8, "stop when the certificate's stationarity (gradient plus the "
                      "nearest normal-cone elements, scaled) is at most tol", check_positive),
        "max_iter": Option(10_000, "iterations (L-BFGS-B and the endgame together)", integer(0)),
        "memory": Option(20, "L-BFGS memory (scipy's maxcor)", integer(1)),
        "warm_start": Option(None, "a previous Solution or dict of the model's variables "
                             "(clipped into the bounds)"),
        "check_terms": Option(True, "check user terms' gradients by finite differences "
                              "before trusting them", check_bool),
        "time_limit": TIME_LIMIT_OPTION,
        "verbose": Option(False, "print the certificate every 50 iterations", check_bool),
    }

    def structure_reasons(self, model: Model) -> list[str]:
        reasons = lacking(model.terms, ("gradient",), "lbfgs differentiates every term")
        for c in model.constraints:
            if "bounds" not in c.capabilities:
                reasons.append(f"{c.describe()} to be a box (offer bounds()) for lbfgs")
            elif not c.argument.is_variable():
                reasons.append(f"{c.describe()} to constrain a whole variable (its argument "
                               f"{c.argument!r} is a map of the variables) for lbfgs")
        return reasons

    def inexact(self, problem) -> str:
        return first_order_stall(problem, problem.terms)

    def predicted_time(self, problem) -> float:
        iterations = min(PREDICTED_ITERATIONS, problem.size + 50)
        if kernel_expansion(problem, problem.terms):
            iterations = PREDICTED_ITERATIONS_KERNEL
        # ~1.1 gradient per iteration, plus scipy's O(memory·N) two-loop recursion.
        per_iteration = (1.1 * gradient_seconds(problem, problem.terms)
                         + 4e-9 * 20 * problem.size + 2e-5)
        return 1e-3 + iterations * per_iteration

    def _run(self, model: Model, tol, max_iter, memory, warm_start, check_terms,
             time_limit, verbose) -> Solution:
        run = Run(self.name, model, tol, max_iter, time_limit, verbose)
        terms, constraints = model.terms, model.constraints
        lo, hi = _box(model)
        theta = np.clip(start_point(model, warm_start), lo, hi)
        if check_terms:
            check_user_terms(model, terms + constraints, theta)
        kink_tol = float(Model.kkt_options["kink_tol"].default)
        state = {"theta": None, "iterations": 0, "evaluations": 0, "best": None, "slow": "",
                 "trace": [], "timed_out": False, "diverged": False}

        def evaluate(theta):
            values = model.unpack_flat(theta)
            zs = [t.argument.value(values) for t in terms]
            value = float(sum(t.value(z) for t, z in zip(terms, zs, strict=True)))
            grad, scale = pulled_gradient(model, terms, zs)
            state["evaluations"] += 1
            state.update(theta=theta.copy(), value=value, grad=grad, scale=scale, zs=zs)
            return value, grad

        def record(theta) -> float:
            """Certificate at an iterate; keeps the best iterate: the first that meets the
            certificate, else the lowest objective (within round-off, the lower
            stationarity)."""
            if state["theta"] is None or not np.array_equal(theta, state["theta"]):
                evaluate(theta)
            stat, us = _stationarity(model, theta, state["grad"], state["scale"], kink_tol)
            value = state["value"]
            run.watch_divergence(value, theta)
            state["diverged"] = run.verdict is not None
            run.history.append(iteration=state["iterations"], objective=value,
                               stationarity=stat, time=run.elapsed)
            state["timed_out"] = run.out_of_time()
            best = state["best"]
            same = best is not None and abs(value - best[1]) <= 1e-14 * max(1.0, abs(value))
            if best is None or (best[2] > tol and (
                    stat <= tol or (value < best[1] and not same)
                    or (same and stat < best[2]))):
                state["best"] = (theta.copy(), value, stat, us)
            trace = state["trace"]
            trace.append((state["iterations"], min(stat, trace[-1][1]) if trace else stat))
            if state["iterations"] % 100 == 0 and stat > tol:
                state["slow"] = too_slow(trace, tol, max_iter)
            if verbose and state["iterations"] % 50 == 0:
                print(f"[lbfgs] it {state['iterations']:5d}  F = {value:.12g}  stationarity "
                      f"{stat:.2e}", flush=True)
            return stat

        def callback(intermediate_result):
            state["iterations"] += 1
            if record(np.asarray(intermediate_result.x, dtype=np.float64)) <= tol:
                raise StopIteration
            if (state["iterations"] >= max_iter or state["slow"] or state["timed_out"]
                    or run.verdict is not None):
                raise StopIteration

        message, polished = "", 0
        bounds = Bounds(lo, hi) if (np.isfinite(lo).any() or np.isfinite(hi).any()) else None
        stat = record(theta)
        if stat > tol and max_iter > 0:
            result = minimize(
                evaluate, theta, jac=True, method="L-BFGS-B", bounds=bounds,
                callback=callback,
                options={"maxiter": max_iter, "maxcor": memory,
                         "maxfun": 20 * max(1, max_iter), "ftol": 0.0, "gtol": 0.0,
                         "maxls": 50})
            message = str(result.message)
            stat = state["best"][2]
        if stat > tol and state["iterations"] < max_iter and not (
                state["slow"] or state["timed_out"] or run.verdict is not None):
            # scipy stopped short (its line search compares values, which stop changing
            # at round-off): go on with gradient-only line searches.
            before = state["iterations"]
            stalled = _endgame(model, state["best"][0], lo, hi, memory, tol, max_iter,
                               state, evaluate, record)
            polished = state["iterations"] - before
            stat = state["best"][2]
        else:
            stalled = False
        theta, _, _, us = state["best"]
        residuals = certificate_residual(model, model.unpack_flat(theta), us or None)
        if stat <= tol:
            status = OPTIMAL if worst(residuals) <= tol else STALLED
        else:
            status = (STALLED if stalled or state["slow"] else
                      TIME_LIMIT if state["timed_out"] else MAX_ITERATIONS)
        info = {"multipliers": us, "certificate": residuals,
                "stationarity": residuals.get("stationarity", np.nan),
                "evaluations": state["evaluations"], "endgame_iterations": polished,
                "scipy_message": message, "note": state["slow"]}
        status = run.verdict_status(status, info)
        return model_solution(model, theta, status, state["iterations"], run.history, info)


def _endgame(model: Model, theta, lo, hi, memory, tol, max_iter, state, evaluate,
             record) -> bool:
    """L-BFGS on the free face of the box with exact line searches on the gradient
    (:func:`~ssl_opt.plugins.model.common.exact_step`), capped at the first bound the step
    meets. A coordinate at a bound whose gradient pushes outward is held; the pairs
    ``(Δθ, Δ∇F)`` with positive curvature feed the two-loop recursion. Returns True when
    it stalls (no step decreases F), False at the certificate, the iteration cap or the time
    limit."""
    terms = model.terms
    pairs: list[tuple[np.ndarray, np.ndarray, float]] = []
    evaluate(theta)
    grad, zs, value = state["grad"], state["zs"], state["value"]
    while state["iterations"] < max_iter:
        free = ~(((theta <= lo) & (grad > 0)) | ((theta >= hi) & (grad < 0)))
        q = np.where(free, grad, 0.0)
        d = -np.where(free, _two_loop(q, pairs), 0.0)
        if not float(d @ grad) < 0:
            pairs.clear()
            d = -q
        if not np.any(d):
            return True
        with np.errstate(divide="ignore", invalid="ignore"):
            limits = np.where(d < 0, (lo - theta) / d, np.where(d > 0, (hi - theta) / d, np.inf))
        s_max = float(np.min(limits, initial=np.inf))
        dzs = [linear_part(t.argument, model.unpack_flat(d)) for t in terms]
        slope = directional_slope(terms, zs, dzs, 0.0)
        if not slope < 0:
            return True
        step = exact_step(terms, zs, dzs, value, slope, s_max)
        if step == 0.0:
            return True
        new = theta + step * d
        if step == s_max:
            new = np.where(limits <= s_max, np.where(d < 0, lo, hi), new)
        new = np.clip(new, lo, hi)
        old_grad = grad
        evaluate(new)
        grad, zs, value = state["grad"], state["zs"], state["value"]
        s_k, y_k = new - theta, grad - old_grad
        curvature = float(s_k @ y_k)
        if curvature > 1e-14 * float(np.linalg.norm(s_k) * np.linalg.norm(y_k)):
            pairs.append((s_k, y_k, 1.0 / curvature))
            if len(pairs) > memory:
                pairs.pop(0)
        theta = new
        state["iterations"] += 1
        if record(theta) <= tol or state["slow"] or state["timed_out"] or state["diverged"]:
            return False
    return False


def _two_loop(q: np.ndarray, pairs) -> np.ndarray:
    """``H q`` for the L-BFGS inverse-Hessian approximation of ``pairs`` (Nocedal & Wright,
    Algorithm 7.4), initial scaling ``sᵀy/yᵀy`` of the newest pair."""
    q = q.copy()
    alphas = []
    for s, y, rho in reversed(pairs):
        a = rho * float(s @ q)
        q -= a * y
        alphas.append(a)
    if pairs:
        s, y, _ = pairs[-1]
        q *= float(s @ y) / float(y @ y)
    for (s, y, rho), a in zip(pairs, reversed(alphas), strict=True):
        b = rho * float(y @ q)
        q += (a - b) * s
    return q


def _box(model: Model) -> tuple[np.ndarray, np.ndarray]:
    """Flat ``(lo, hi)``: the intersection of the constraints' boxes (±inf elsewhere)."""
    lo, hi = np.full(model.size, -np.inf), np.full(model.size, np.inf)
    for c in model.constraints:
        c_lo, c_hi = c.bounds()
        name = c.argument.parts[0][0].name
        part_lo = model.pack({name: np.broadcast_to(c_lo, c.shape)})
        part_hi = model.pack({name: np.broadcast_to(c_hi, c.shape)})
        mask = model.pack({name: np.ones(c.shape)}) > 0
        lo[mask] = np.maximum(lo[mask], part_lo[mask])
        hi[mask] = np.minimum(hi[mask], part_hi[mask])
    if np.any(lo > hi):
        names = [c.describe() for c in model.constraints]
        raise InvalidInputError(f"the boxes of the constraints {names} do not intersect "
                                "(some lower bound exceeds an upper bound): the model is "
                                "infeasible.")
    return lo, hi


def _stationarity(model: Model, theta, grad, scale, kink_tol) -> tuple[float, list]:
    """``‖∇F + Σ_c u_c‖_∞ / max(1, scale, ‖u_c‖_∞)`` with each ``u_c`` the point of the
    constraint's normal cone nearest minus the current residual on its variable (the
    constraints taken in model order)."""
    values = model.unpack_flat(theta)
    residual = model.unpack_flat(grad.copy())
    us = []
    for c in model.constraints:
        name = c.argument.parts[0][0].name
        z = values[name]
        u = _normal_cone(c, z, -residual[name], kink_tol * max(1.0, c.kink_scale(z)))
        residual[name] = residual[name] + u
        scale = max(scale, float(np.max(np.abs(u), initial=0.0)))
        us.append(u)
    r = model.pack(residual)
    return float(np.max(np.abs(r), initial=0.0)) / max(1.0, scale), us


def _normal_cone(c, z, target, tol) -> np.ndarray:
    """The point of ``N_C(z)`` nearest ``target``: the constraint's own projection, or the
    box rule (≤ 0 at an active lower bound, ≥ 0 at an active upper one, 0 inside)."""
    if "subdifferential" in c.capabilities:
        return np.asarray(c.project_subgradient(z, target, tol), dtype=np.float64)
    c_lo, c_hi = (np.broadcast_to(b, z.shape) for b in c.bounds())
    at_lo, at_hi = z <= c_lo + tol, z >= c_hi - tol
    return np.where(at_lo & at_hi, target, np.where(at_lo, np.minimum(target, 0.0),
                                                    np.where(at_hi, np.maximum(target, 0.0),
                                                             0.0)))


@hookimpl
def register_solvers():
    return [LBFGS()]
