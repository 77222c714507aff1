r"""The augmented Lagrangian with Newton inner solves, for constraints on affine expressions
(docs/modeling.md §10): a balance constraint or a box on ``f = Kα + b``, simplex rows on scores.

Model ``min_θ F(θ)`` subject to ``A_j θ + c_j ∈ C_j`` (each constraint's argument, any affine
expression: not only a variable). Each constraint becomes the penalty of the augmented
Lagrangian (Rockafellar 1974; the safeguarded form of ALGENCAN, Birgin & Martínez 2014)

    ψ_j(z) = ρ/2·dist²(z + λ_j/ρ, C_j) − ‖λ_j‖²/(2ρ),
    ∇ψ_j(z) = ρ(v − P_j(v)),  ∇²ψ_j(z) = ρ(I − ∂P_j(v)),  v = z + λ_j/ρ

(the constraint's projection ``prox`` and ``distance_hessian``: a 0/1 diagonal for a box, the
factored ``aaᵀ/‖a‖²`` of a linear equality, per-row blocks for the simplex), a smooth
piecewise-quadratic term like the squared hinge. Each outer iteration

1. minimizes ``F + Σ_j ψ_j`` (F smooth: with a non-smooth term ``irls-newton`` would restart
   its δ-continuation at every update) with ``irls-newton`` from the last point (an
   unconstrained model of the same structure: a kernel expansion keeps the reduced Newton
   system in K's range, a sparse one its LDLᵀ; a few Newton steps once warm);
2. sets ``λ_j ← ρ(v − P_j(v))`` — then ``∇F + Σ_j A_jᵀλ_j`` is the inner gradient, so the
   model's own certificate (stationarity with ``λ_j`` as the constraints' multipliers, and
   feasibility) is checked at every outer iteration and ends the run ``optimal``;
3. multiplies ρ by ``rho_factor`` when the constraint residual ``‖z − P_j(z + λ_j/ρ)‖_∞``
   relative to ``max(1, ‖z‖_∞)`` (violation and complementarity together) has not fallen below
   half its last value (nor below tol/10).

The first ρ is ALGENCAN's ``10·max(1, |F|)/max(1, ½Σ dist²)`` at the start, clipped to
[1e-4, 1e4]. Past ``RHO_MAX`` with the residual stagnant, or after ``STALL_ITERATIONS`` outer
iterations with the constraints met that do not halve the certificate's worst residual, the
run stops ``stalled`` (the model's diagnosis then names infeasible constraints,
``Solver.solve``). The stall is real on
ill-conditioned duals: a box on ``f = Kα + b`` needs ρ ≳ 1e6 before the multipliers settle,
where the inner gradient's round-off ``ρ·ε·|f|`` pulled through K is already ~1e-6.
"""

from __future__ import annotations

import numpy as np

from ssl_opt._validation import check_bool, check_positive, greater_than, integer, optional
from ssl_opt.hookspecs import hookimpl
from ssl_opt.modeling.maps import dense_entries
from ssl_opt.modeling.model import Model
from ssl_opt.modeling.term import Term, apply_hessian
from ssl_opt.modeling.terms import FixedRows
from ssl_opt.plugins.model.common import (
    ModelSolver,
    check_user_terms,
    lacking,
    model_solution,
    start_point,
    warm_start_point,
    worst,
)
from ssl_opt.plugins.model.iterative import CERTIFICATE_TOL_OPTION, VERBOSE_OPTION, Run
from ssl_opt.plugins.model.multipliers import fixed_rows_multiplier
from ssl_opt.solution import MAX_ITERATIONS, OPTIMAL, STALLED, TIME_LIMIT, Solution
from ssl_opt.solvers import TIME_LIMIT_OPTION, Option

#: ρ grows by rho_factor when the constraint residual has not halved.
SUFFICIENT_DECREASE = 0.5
#: Beyond this ρ, with the residual stagnant, the run stops (the constraints are infeasible
#: or the inner solves have reached their round-off floor: ρ·ε·|z| pulled through a kernel).
RHO_MAX = 1e10
#: Outer iterations with the constraints met to tol/10 that do not halve the certificate's
#: worst residual before ``stalled``.
STALL_ITERATIONS = 3
#: ``predicted_time`` in cold ``irls-newton`` solves of the augmented model (8 Newton steps
#: each, see its ``predicted_time``), by the hardest constraint: an affine set (a balance,
#: fixed rows of an expression) settles in 2-4 Newton steps; an inequality on a sparse map or
#: a variable (simplex rows of label spreading) in 14-17; an active inequality on a kernel
#: expansion (a box on f = Kα + b: its dual is as ill-conditioned as K) in 30-85 (measured on
#: the variants of docs/modeling.md, n = 500-5,000, 2026-11-29). An inactive inequality
#: costs one cold solve: the prediction is then pessimistic.
OUTER_COST = {"affine": 0.5, "sparse": 5.0, "kernel": 8.0}
#: Iterations of the certificate's own minimization when the cheap check is within
#: FULL_CHECK·tol.
CHECK_ITERS, FULL_CHECK = 300, 10.0


class AugmentedPenalty(Term):
    r"""``ρ/2·dist²(z + λ/ρ, C) − ‖λ‖²/(2ρ)`` of a constraint ``z ∈ C`` (module docstring): a
    smooth term whose gradient at the inner minimizer is the constraint's next multiplier."""

    name = "augmented_penalty"
    program_class = "QP"

    def __init__(self, constraint, rho: float):
        super().__init__(constraint.argument, 1.0)
        self.constraint, self.rho = constraint, float(rho)
        self.lam = np.zeros(constraint.shape)
        # An affine set's distance Hessian does not depend on the point.
        self.constant_hessian = _affine(constraint)

    def describe(self) -> str:
        return f"augmented[{self.constraint.describe()}]"

    def _shifted(self, z) -> tuple[np.ndarray, np.ndarray]:
        v = np.asarray(z, dtype=np.float64) + self.lam / self.rho
        return v, v - self.constraint.prox(v, 1.0)

    def value(self, z):
        _, d = self._shifted(z)
        return 0.5 * self.rho * float(np.sum(d * d)) - float(np.sum(self.lam**2)) / (2 * self.rho)

    def gradient(self, z):
        return self.rho * self._shifted(z)[1]

    def hessian(self, z):
        v, _ = self._shifted(z)
        return self.rho * self.constraint.distance_hessian(v)

    def hessp(self, z, v):
        return apply_hessian(self.hessian(z), np.ravel(v)).reshape(np.shape(v))

    def residual(self, z) -> float:
        """``‖z − P(z + λ/ρ)‖_∞ / max(1, ‖z‖_∞)``: the violation and the complementarity at
        once, on the scale of ``Constraint.feasibility``."""
        z = np.asarray(z, dtype=np.float64)
        v, d = self._shifted(z)
        scale = max(1.0, float(np.max(np.abs(z), initial=0.0)))
        return float(np.max(np.abs(z - (v - d)), initial=0.0)) / scale


def _affine(constraint) -> bool:
    from ssl_opt.modeling.terms import LinearEquality

    return isinstance(constraint, (FixedRows, LinearEquality))


def _kind(constraint) -> str:
    """``affine``, ``kernel`` (an inequality through a dense map) or ``sparse``."""
    if _affine(constraint):
        return "affine"
    dense = any(dense_entries(linear) for _, linear in constraint.argument.parts)
    return "kernel" if dense else "sparse"


def _kept(constraint) -> bool:
    """Fixed rows of a bare variable: ``irls-newton`` eliminates them itself."""
    return isinstance(constraint, FixedRows) and constraint.argument.is_variable()


class ALMNewton(ModelSolver):
    name = "alm-newton"
    description = ("Augmented Lagrangian for constraints on affine expressions (a balance or a "
                   "box on f = Kα + b, simplex rows on scores): each constraint a smooth "
                   "penalty ρ/2·dist²(z + λ/ρ, C), minimized by irls-newton from the last "
                   "point, multipliers λ ← ρ(v − P(v)); stops on the model's certificate.")
    complexity = {"model": (3.0, "a few warm irls-newton solves (n³ per Newton step on a "
                                 "kernel expansion)")}
    options = {
        "tol": CERTIFICATE_TOL_OPTION,
        "max_iter": Option(60, "outer (multiplier) iterations", integer(1)),
        "inner_max_iter": Option(300, "Newton steps of one inner solve", integer(1)),
        "rho0": Option(None, "first penalty ρ (None: ALGENCAN's rule at the start)",
                       optional(check_positive)),
        "rho_factor": Option(10.0, "ρ grows by this factor when the constraint residual has "
                             "not halved", greater_than(1)),
        "warm_start": Option(None, "a previous Solution (its multipliers start λ) or dict of "
                             "the model's variables"),
        "check_terms": Option(True, "check user terms' gradients and Hessians by finite "
                              "differences before trusting them", check_bool),
        "time_limit": TIME_LIMIT_OPTION,
        "verbose": VERBOSE_OPTION,
    }

    def structure_reasons(self, model: Model) -> list[str]:
        hard = [c for c in model.constraints if not _kept(c)]
        if not hard:
            return ["a constraint other than fixed rows of a variable (irls-newton takes "
                    "those)"]
        reasons = lacking(hard, ("prox", "distance_hessian"),
                          "alm-newton penalizes the distance to each constraint's set")
        reasons += [f"smooth terms only ({t.describe()} is not: irls-newton would restart its "
                    "δ-continuation at every multiplier update, 980 Newton steps on LASS + ℓ1 "
                    "graph at N = 60)" for t in model.nonsmooth_terms[:1]]
        if reasons:
            return reasons
        inner = _augmented(model, 1.0)[0]
        return [r for r in _inner_solver().missing(inner)]

    def predicted_time(self, problem) -> float:
        """:data:`OUTER_COST` cold ``irls-newton`` solves of the augmented model, by its hardest
        constraint."""
        kinds = [_kind(c) for c in problem.constraints if not _kept(c)]
        factor = max((OUTER_COST[k] for k in kinds), default=1.0)
        return factor * _inner_solver().predicted_time(_augmented(problem, 1.0)[0])

    def _run(self, model: Model, tol, max_iter, inner_max_iter, rho0, rho_factor, warm_start,
             check_terms, time_limit, verbose) -> Solution:
        theta = start_point(model, warm_start)
        if check_terms:
            check_user_terms(model, model.terms, theta)
        run = Run(self.name, model, tol, max_iter, time_limit, verbose)
        rho = _first_rho(model, theta) if rho0 is None else rho0
        inner, penalties = _augmented(model, rho)
        given = warm_start_point(model, warm_start)[1]
        if given is not None:  # the warm start's multipliers of the penalized constraints
            rough = len(model.nonsmooth_terms)
            hard = [u for c, u in zip(model.constraints, given[rough:], strict=True)
                    if not _kept(c)]
            for p, u in zip(penalties, hard, strict=True):
                p.lam = np.array(u, dtype=np.float64)
        newton = _inner_solver()
        status, it, steps, last, multipliers = MAX_ITERATIONS, 0, 0, np.inf, None
        best, stalls, values = np.inf, 0, model.unpack_flat(theta)
        while True:
            left = None if time_limit is None else max(time_limit - run.elapsed, 1e-3)
            sol = newton.solve(inner, tol=0.5 * tol, max_iter=inner_max_iter,
                               warm_start=values, check_terms=False, time_limit=left)
            steps += sol.iterations
            if not all(np.all(np.isfinite(v)) for v in sol.x.values()):
                status = STALLED  # the model's diagnosis names what is not finite
                break
            theta = model.pack(sol.x)
            values = model.unpack_flat(theta)
            zs = [p.argument.value(values) for p in penalties]  # one product each (Kα)
            residual = max(p.residual(z) for p, z in zip(penalties, zs, strict=True))
            for p, z in zip(penalties, zs, strict=True):
                p.lam = p.gradient(z)
            multipliers = _multipliers(model, inner, penalties, sol, values)
            cert = run.certify(values, multipliers, 0, 1e-6)
            # The certificate's own minimization lowers stationarity only (10 s at n = 4,000).
            if cert.get("feasibility", 0.0) <= tol and tol < worst(cert) <= FULL_CHECK * tol:
                cert = run.certify(values, multipliers, CHECK_ITERS, 1e-10)
            it += 1
            run.record(iteration=it, objective=float(model.objective(values)),
                       feasibility=cert.get("feasibility", 0.0), residual=residual,
                       stationarity=cert.get("stationarity", 0.0), rho=rho,
                       newton_steps=sol.iterations)
            if worst(cert) <= tol:
                status = OPTIMAL
                break
            if sol.status == TIME_LIMIT or run.out_of_time():
                status = TIME_LIMIT
                break
            if it >= max_iter:
                break
            # Feasible to tol but not stationary: the inner solves' floor, not the multipliers.
            score = worst(cert)
            settled = residual <= 0.1 * tol
            stalls = stalls + 1 if settled and score > SUFFICIENT_DECREASE * best else 0
            best = min(best, score) if settled else best
            if stalls >= STALL_ITERATIONS:
                status = STALLED
                break
            if not settled and residual > SUFFICIENT_DECREASE * last:
                if rho >= RHO_MAX:
                    status = STALLED
                    break
                rho = min(rho * rho_factor, RHO_MAX)
                for p in penalties:
                    p.rho = rho
            last = residual
        info = {"outer_iterations": it, "newton_steps": steps, "rho": rho,
                "multipliers": multipliers}
        status = run.final_status(status, values, multipliers, info)
        return model_solution(model, theta, status, it, run.history, info)


def _inner_solver():
    from ssl_opt import registry

    return registry.get_solver("irls-newton")


def _augmented(model: Model, rho: float) -> tuple[Model, list[AugmentedPenalty]]:
    """The unconstrained model ``F + Σ_j ψ_j`` (fixed rows of bare variables kept) and its
    penalties, in the order of the model's other constraints."""
    penalties = [AugmentedPenalty(c, rho) for c in model.constraints if not _kept(c)]
    kept = [c for c in model.constraints if _kept(c)]
    inner = Model(list(model.terms) + penalties, kept, prediction=model.prediction_expression,
                  name=f"{model.name} (augmented)")
    return inner, penalties


def _first_rho(model: Model, theta: np.ndarray) -> float:
    """ALGENCAN's ``10·max(1, |F|)/max(1, ½Σ dist²)`` at the start, clipped to [1e-4, 1e4]."""
    values = model.unpack_flat(theta)
    F = float(model.objective(values))
    dist2 = 0.0
    for c in model.constraints:
        if not _kept(c):
            z = np.asarray(c.argument.value(values), dtype=np.float64)
            dist2 += float(np.sum((z - c.prox(z, 1.0)) ** 2))
    rho = 10.0 * max(1.0, abs(F)) / max(1.0, 0.5 * dist2)
    return float(np.clip(rho, 1e-4, 1e4)) if np.isfinite(rho) else 1.0


def _multipliers(model: Model, inner: Model, penalties, sol: Solution, values: dict) -> list:
    """The model's multipliers in its order (non-smooth terms, then constraints): the inner
    solve's for the non-smooth terms, λ for the penalized constraints, and for the fixed rows
    the normal-cone element that cancels the rest of the gradient on their rows."""
    rough = len(model.nonsmooth_terms)
    given = sol.info.get("multipliers")
    out = list(given[:rough]) if given is not None and len(given) >= rough else [
        np.zeros(t.shape) for t in model.nonsmooth_terms]
    grad = model.pack(inner.smooth_gradient(values))
    for t, u in zip(model.nonsmooth_terms, out, strict=True):
        grad += model.pack(t.argument.adjoint(u))
    lam = iter(p.lam for p in penalties)
    return out + [fixed_rows_multiplier(model, c, grad) if _kept(c) else np.array(next(lam))
                  for c in model.constraints]


@hookimpl
def register_solvers():
    return [ALMNewton()]
