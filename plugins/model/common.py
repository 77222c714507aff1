r"""What the generic model solvers share: the flat-vector view of a model, the capability
checks that name the term a solver cannot handle, the stop on the model's own certificate and
the exact line search on the terms (with smoothed norms and quadratics along the line).

A model's variables are one flat vector θ (:meth:`~ssl_opt.modeling.Model.pack`); for a set of
terms ``S`` the smooth part is ``F(θ) = Σ_{k∈S} h_k(A_k θ)``, with ``∇F = Σ A_kᵀ∇h_k`` and
``∇²F·v = Σ A_kᵀ ∇²h_k A_k v`` — products only, no Hessian is formed.
"""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_limits

from ssl_opt.modeling.maps import matrices
from ssl_opt.modeling.model import Model
from ssl_opt.solution import History, Solution
from ssl_opt.solvers import Solver


class SmoothPart:
    """``F(θ) = Σ_{k∈terms} h_k(A_k θ)`` over the flat vector θ of ``model``."""

    def __init__(self, model: Model, terms):
        self.model = model
        self.terms = tuple(terms)

    def _z(self, theta):
        values = self.model.unpack_flat(theta)
        return values, [t.argument.value(values) for t in self.terms]

    def value(self, theta: np.ndarray) -> float:
        _, zs = self._z(theta)
        return float(sum(t.value(z) for t, z in zip(self.terms, zs, strict=True)))

    def value_and_gradient(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        _, zs = self._z(theta)
        value, grad = 0.0, np.zeros(self.model.size)
        for t, z in zip(self.terms, zs, strict=True):
            value += t.value(z)
            grad += self.model.pack(t.argument.adjoint(t.gradient(z)))
        return float(value), grad

    def gradient(self, theta: np.ndarray) -> np.ndarray:
        return self.value_and_gradient(theta)[1]

    def hessp(self, theta: np.ndarray, v: np.ndarray) -> np.ndarray:
        """``∇²F(θ)·v`` (generalized at kinks of piecewise-quadratic terms)."""
        _, zs = self._z(theta)
        dv = self.model.unpack_flat(v)
        out = np.zeros(self.model.size)
        for t, z in zip(self.terms, zs, strict=True):
            dz = t.argument.value(dv) - (0.0 if t.argument.offset is None else t.argument.offset)
            out += self.model.pack(t.argument.adjoint(t.hessp(z, dz)))
        return out


def lacking(terms, capabilities: tuple[str, ...], role: str) -> list[str]:
    """One reason per term lacking any of ``capabilities`` (``role`` says why it is needed)."""
    reasons = []
    for t in terms:
        missing = [c for c in capabilities if c not in t.capabilities]
        if missing:
            reasons.append(f"{t.describe()} to offer {', '.join(missing)} ({role})")
    return reasons


class ModelSolver(Solver):
    """Base of the generic solvers: subclasses implement :meth:`structure_reasons`."""

    problem_types = (Model,)
    tolerance_family = "iterative"
    preference = 5  # a paper's solver that applies is preferred on ties

    def missing(self, problem) -> list[str]:
        reasons = super().missing(problem)
        if reasons:
            return reasons
        if not problem.structure.convex:
            return ["a convex model"]
        return self.structure_reasons(problem)

    def structure_reasons(self, model: Model) -> list[str]:
        raise NotImplementedError

    def _solve(self, model: Model, **options) -> Solution:
        # One BLAS thread: the products are matrix-vector (memory bound) and idle OpenBLAS
        # threads spinning between them made them up to 20x slower (measured on 2 cores).
        with threadpool_limits(1):
            return self._run(model, **options)

    def _run(self, model: Model, **options) -> Solution:
        raise NotImplementedError


def certificate_residual(model: Model, x: dict, multipliers=None) -> dict[str, float]:
    """The model's certificate at ``x`` (with the solver's multipliers as the starting point of
    the certificate's minimization over subgradients)."""
    return certificate_of(model, x, multipliers)


def certificate_of(model: Model, x: dict, multipliers=None, **options) -> dict[str, float]:
    """The certificate ``certify`` judges ``model`` by at ``x`` (``model.kkt``: the terms'
    certificate, with a named model's readable views of it), started from the solver's
    ``multipliers``; of ``options``, those the model's ``kkt_options`` declare. Complementarity
    is imposed unless ``options`` say otherwise: the stricter test (a solver that stops on it
    passes ``certify``), and no second minimization at the checks of an unconverged run."""
    options = {"complementarity": "imposed", **options}
    point = Solution(x=x, objective=np.nan, status="", iterations=0, time=0.0, backend="",
                     solver="", info={} if multipliers is None else
                     {"multipliers": multipliers})
    return model.kkt(point, **{k: v for k, v in options.items() if k in model.kkt_options})


def worst(residuals: dict[str, float]) -> float:
    """The largest residual (0 when none is measured; a NaN counts as +inf)."""
    return max((v if v == v else np.inf for v in residuals.values()), default=0.0)


__all__ = ["History", "ModelSolver", "SmoothPart", "certificate_residual", "lacking", "worst"]


# ------------------------------------------------------------------------------------------
# Helpers of the smooth and proximal-gradient solvers (plugins/model/newton_cg.py, lbfgs.py,
# fista.py). Appended; nothing above depends on them.

#: Seconds per matrix entry touched by one product: dense (BLAS gemv, memory bound) and sparse
#: (CSR), and per linear-map call (Python overhead of the expression layer); measured with
#: numpy/scipy on 2 cores (n = 300..3000 dense, 10-NN sparse).
SECONDS_PER_DENSE_ENTRY = 1.5e-10
SECONDS_PER_SPARSE_ENTRY = 1.2e-9
SECONDS_PER_CALL = 1e-5


def linear_part(expr, values: dict) -> np.ndarray:
    """``A(v)``: the linear part of the affine ``expr`` at the variable values ``values``
    (its offset left out), e.g. the direction ``A d`` of a term's argument along ``d``."""
    out = np.zeros(expr.shape)
    for var, linear in expr.parts:
        out = out + linear.apply(values[var.name])
    return out


def start_point(model: Model, warm_start) -> np.ndarray:
    """The flat starting vector: zeros, or a Solution / dict of the model's variables
    (checked by ``model.warm_start_values``: every error names ``warm_start``)."""
    if warm_start is None:
        return np.zeros(model.size)
    return model.pack(model.warm_start_values(warm_start))


def pulled_gradient(model: Model, terms, zs) -> tuple[np.ndarray, float]:
    """``(Σ_k A_kᵀ∇h_k(z_k), max_k ‖A_kᵀ∇h_k(z_k)‖_∞)`` over ``terms`` at their argument values
    ``zs``, flat. The certificate of a smooth unconstrained model is the ratio
    ``‖Σ‖_∞ / max(1, max_k ‖·‖_∞)`` (ssl_opt/modeling/stationarity.py)."""
    grad, scale = np.zeros(model.size), 0.0
    for t, z in zip(terms, zs, strict=True):
        pulled = model.pack(t.argument.adjoint(t.gradient(z)))
        scale = max(scale, float(np.max(np.abs(pulled), initial=0.0)))
        grad += pulled
    return grad, scale


def scaled_stationarity(residual: np.ndarray, scale: float) -> float:
    """``‖r‖_∞ / max(1, scale)``: the certificate's stationarity measure."""
    return float(np.max(np.abs(residual), initial=0.0)) / max(1.0, scale)


def _map_seconds(linear, columns: int) -> float:
    """Seconds of one application of a linear map (the sum over its factors)."""
    import scipy.sparse as sp

    from ssl_opt.modeling.maps import MatMul

    seconds = 0.0
    for factor in linear.factors():
        seconds += SECONDS_PER_CALL
        if not isinstance(factor, MatMul):
            seconds += SECONDS_PER_DENSE_ENTRY * float(np.prod(factor.out_shape))
        elif sp.issparse(factor.M):
            seconds += SECONDS_PER_SPARSE_ENTRY * factor.M.nnz * columns
        else:  # dense arrays and LinearOperators (assumed as costly as their dense form)
            seconds += SECONDS_PER_DENSE_ENTRY * factor.M.shape[0] * factor.M.shape[1] * columns
    return seconds


def gradient_seconds(model: Model, terms) -> float:
    """Predicted seconds of one gradient of ``Σ_{k∈terms} h_k(A_k x)``: one forward and one
    adjoint application of every map in the terms' arguments (walked as in the reference's
    ``cost``: dense size, sparse nnz, a products-only operator as its dense size), plus the
    terms' own work on their arguments (a quadratic form's matrix ``M`` applied once)."""
    seconds = 0.0
    for t in terms:
        for _, linear in t.argument.parts:
            columns = int(linear.in_shape[1]) if len(linear.in_shape) == 2 else 1
            seconds += 2.0 * _map_seconds(linear, columns)
        seconds += SECONDS_PER_CALL + 20 * SECONDS_PER_DENSE_ENTRY * float(np.prod(t.shape))
        own = getattr(t, "M", None)  # a quadratic form's own matrix: one product per gradient
        if own is not None and len(getattr(own, "shape", ())) == 2:
            from ssl_opt.modeling.maps import MatMul

            seconds += _map_seconds(MatMul(own, tuple(t.shape)), 1)
    return seconds


def check_user_terms(model: Model, terms, theta: np.ndarray, seed: int = 0) -> None:
    """Raise :class:`~ssl_opt.exceptions.InvalidInputError` naming the first wrong oracle of a
    user term (:func:`~ssl_opt.modeling.term.user_oracle_errors` at ``theta``)."""
    from ssl_opt.exceptions import InvalidInputError
    from ssl_opt.modeling.term import user_oracle_errors

    errors = user_oracle_errors(terms, model.unpack_flat(theta), seed)
    if errors:
        raise InvalidInputError(f"{errors[0]} (option check_terms=False skips this check)")


def model_solution(model: Model, theta: np.ndarray, status: str, iterations: int,
                   history: History, info: dict) -> Solution:
    """A Solution at the flat point ``theta`` (``Solver.solve`` fills in the objective, the
    time, the backend and the solver's name)."""
    x = {k: np.array(v, dtype=np.float64) for k, v in model.unpack_flat(theta).items()}
    return Solution(x=x, objective=float(model.objective(x)), status=status,
                    iterations=int(iterations), time=0.0, backend="", solver="",
                    history=history, info=info)


# ------------------------------------------------------------------ appended helpers (PDHG,
# mirror descent): a capped certificate check, warm starts with multipliers, product work.
def certificate_check(model: Model, x: dict, multipliers, max_iter: int = 200,
                      tol: float = 1e-6, kink_tol: float = 1e-6) -> dict[str, float]:
    """The model's certificate at ``x`` started from the solver's ``multipliers``, its own
    minimization over subgradients capped at ``max_iter`` iterations and stopped at a relative
    change ``tol`` of its objective. Any feasible choice of subgradients bounds the residual
    from above, so both can only overstate it: a solver may stop when this passes. A
    ``kink_tol`` below the model's default (1e-6) makes the test stricter: fewer entries count
    as at a kink."""
    return certificate_of(model, x, multipliers, max_iter=max_iter, tol=tol, kink_tol=kink_tol)


def kink_tolerance(tol: float) -> float:
    """The certificate's kink tolerance for a solver's stopping test at target ``tol``: the
    model's default 1e-6, or ``tol`` when smaller (at 1e-6 a point 1e-7 away from a kink of TV
    passes, and the objective is then only ~1e-6 accurate)."""
    return min(1e-6, tol)


def warm_start_point(model: Model, warm_start) -> tuple[dict | None, list | None]:
    """``(variables, multipliers)`` of a solver's ``warm_start``: a previous Solution (whose
    ``info["multipliers"]`` are returned when they are a list with one finite array per
    non-smooth term and constraint, of each argument's shape) or a dict of the model's
    variables; ``(None, None)`` without one. Errors name ``warm_start``."""
    if warm_start is None:
        return None, None
    values = model.warm_start_values(warm_start)
    info = getattr(warm_start, "info", None) or {}
    given = info.get("multipliers")
    free = model.nonsmooth_terms + model.constraints
    multipliers = None
    if isinstance(given, (list, tuple)) and len(given) == len(free):
        arrays = [np.asarray(u, dtype=np.float64) for u in given]
        if all(a.shape == t.shape and np.all(np.isfinite(a))
               for a, t in zip(arrays, free, strict=True)):
            multipliers = arrays
    return values, multipliers


#: Seconds per matrix entry of a dense product, per stored entry of a sparse one, and per
#: element of the elementwise work (proxes, steps) — measured on the test models of
#: tests/modeling/test_primal_dual.py (a 5000×200 dense map, 1-D TV on 10⁵ nodes).
DENSE_ENTRY_SECONDS, SPARSE_ENTRY_SECONDS, ELEMENT_SECONDS = 0.7e-9, 3e-9, 1e-8


def pass_seconds(model: Model) -> float:
    """Predicted seconds of one pass over the model: every term's linear map and its adjoint
    (dense matrices by their size, sparse ones by nnz, times the columns of a 2-D argument),
    each term's own matrix ``M`` (a quadratic form) and the elementwise work on the variables
    and arguments — the unit of an iteration's cost in the analytic ``predicted_time`` of the
    first-order solvers (a few passes per iteration)."""
    import scipy.sparse as sp

    from ssl_opt.modeling.maps import MatMul

    def cost(M, cols: float) -> float:
        if sp.issparse(M):
            return SPARSE_ENTRY_SECONDS * M.nnz * cols
        shape = getattr(M, "shape", None)
        if shape is None or len(shape) != 2:
            return 0.0
        return DENSE_ENTRY_SECONDS * float(np.prod(shape, dtype=float)) * cols

    def walk(m) -> float:
        return sum(cost(f.M, float(np.prod(f.in_shape[1:], dtype=float)))
                   for f in m.factors() if isinstance(f, MatMul))

    elements = float(model.size)
    seconds = 0.0
    for term in model.all_terms:
        seconds += 2.0 * sum(walk(m) for _, m in term.argument.parts)
        elements += float(np.prod(term.shape, dtype=float))
        own = getattr(term, "M", None)
        if own is not None:
            seconds += cost(own, float(np.prod(term.shape[1:], dtype=float)))
    return seconds + ELEMENT_SECONDS * elements


def prox_seconds(model: Model) -> float:
    """Predicted seconds of the proxes of one iteration beyond their elementwise work (the
    terms' own :meth:`~ssl_opt.modeling.term.Term.prox_seconds`)."""
    return float(sum(t.prox_seconds() for t in model.all_terms if not t.smooth))


# ------------------------------------------------------------------ appended helpers (Newton-CG,
# L-BFGS, FISTA): the kernel-expansion heuristic of their cost models and the exact line search.
def _dense_matrices(linear):
    """The dense arrays and products-only operators of a linear map (through compositions)."""
    import scipy.sparse as sp

    return [M for M in matrices(linear) if not sp.issparse(M)]


def kernel_expansion(model: Model, terms) -> bool:
    """Some term applies a dense square n×n matrix to a whole variable of length n > 1 — a
    kernel expansion ``f = Kα``. Its Hessian in α carries ``K·K`` (the condition number of K
    squared: ~1e16 for an RBF kernel), where first-order methods need thousands of
    iterations and CG needs re-orthogonalization (measured on LapRLS models, n = 100..1000)."""
    for t in terms:
        for var, linear in t.argument.parts:
            n = var.shape[0] if var.shape else 1
            for M in _dense_matrices(linear):
                if n > 1 and M.shape == (n, n):
                    return True
    return False


def directional_slope(terms, zs, dzs, s: float) -> float:
    """``φ'(s) = Σ_k ⟨∇h_k(z_k + s·dz_k), dz_k⟩``: the derivative of ``F(θ + s d)`` from the
    argument values ``z_k`` and directions ``dz_k = A_k d`` (no product with the maps)."""
    return float(sum(np.sum(t.gradient(z + s * dz) * dz)
                     for t, z, dz in zip(terms, zs, dzs, strict=True)))


def exact_step(terms, zs, dzs, value: float, slope: float, s_max: float = np.inf,
               armijo: float = 1e-4) -> float:
    """The minimizer over ``[0, s_max]`` of ``φ(s) = F(θ + s d)`` for a descent direction
    (``slope = φ'(0) < 0``): the root of the monotone ``φ'`` (convex terms) by bracketing from
    ``s = 1`` and Brent's method — gradients only, so it stays exact where ``φ`` itself is
    round-off (near the optimum ``F`` changes by less than ``eps·|F|``). Safeguard: the step
    must meet the Armijo condition on values (to round-off); otherwise it is halved (a wrong
    gradient), and 0 is returned when nothing decreases ``F``."""
    from scipy.optimize import brentq

    def dphi(s):
        return directional_slope(terms, zs, dzs, s)

    s = min(1.0, s_max)
    g1 = dphi(s)
    if g1 < 0 and s == s_max:
        pass  # the whole segment descends: stop at its end
    elif abs(g1) > 1e-12 * abs(slope):
        lo, hi = (0.0, s) if g1 > 0 else (s, min(2.0 * s, s_max))
        if g1 < 0:
            while dphi(hi) < 0 and hi < min(s_max, 2.0**40):
                lo, hi = hi, min(2.0 * hi, s_max)
        s = hi if dphi(hi) < 0 else brentq(dphi, lo, hi, xtol=1e-14 * hi, rtol=1e-15,
                                          maxiter=200)
    slack = 1e-13 * max(1.0, abs(value))
    for _ in range(60):
        trial = float(sum(t.value(z + s * dz) for t, z, dz in zip(terms, zs, dzs, strict=True)))
        if trial <= value + armijo * s * slope + slack:
            return s
        s *= 0.5
    return 0.0



class SmoothedTerm:
    """A norm term seen through its smoothing at δ (value and gradient, for the line search)."""

    def __init__(self, term, delta: float):
        self.term, self.delta = term, delta

    def value(self, z):
        return self.term.smoothed(z, self.delta, hessian=False)[0]

    def gradient(self, z):
        return self.term.smoothed(z, self.delta, hessian=False)[1]


class QuadraticAlongLine:
    """A quadratic term restricted to the search line, ``s ↦ c₀ + c₁s + ½c₂s²``, seen as a term
    of the 1-vector ``[s]`` (so that the line search costs no product with its matrix)."""

    def __init__(self, c0: float, c1: float, c2: float):
        self.c0, self.c1, self.c2 = c0, c1, c2

    def value(self, u):
        s = float(u[0])
        return self.c0 + self.c1 * s + 0.5 * self.c2 * s * s

    def gradient(self, u):
        return np.array([self.c1 + self.c2 * float(u[0])])


def along_line(terms, zs, dzs, gradients, rough_ids, delta):
    """The line search's terms, arguments and directions: smoothed norms, quadratic terms as
    :class:`QuadraticAlongLine` (one Hessian product each), the others as they are."""
    out_terms, out_zs, out_dzs = [], [], []
    one, unit = np.zeros(1), np.ones(1)
    for t, z, dz, g in zip(terms, zs, dzs, gradients, strict=True):
        if id(t) in rough_ids:
            out_terms.append(SmoothedTerm(t, delta))
        elif {"constant_hessian", "hessp"} <= t.capabilities:
            out_terms.append(QuadraticAlongLine(
                t.value(z), float(np.sum(g * dz)), float(np.sum(dz * t.hessp(z, dz)))))
            out_zs.append(one)
            out_dzs.append(unit)
            continue
        else:
            out_terms.append(t)
        out_zs.append(z)
        out_dzs.append(dz)
    return out_terms, out_zs, out_dzs

def too_slow(trace: list[tuple[int, float]], tol: float, max_iter: int,
             min_iterations: int = 1000, factor: float = 2.0) -> str:
    """Why to stop a first-order solver as stalled ("" to go on). ``trace`` holds
    ``(iteration, best stationarity so far)`` at its checks. After ``min_iterations``, the
    rate of the second half of the run, ``r = log(s(k/2)/s(k)) / (k/2)`` per iteration,
    predicts ``log(s(k)/tol)/r`` more iterations; beyond ``factor`` times what ``max_iter``
    leaves, the target is out of reach (measured: L-BFGS and FISTA on kernel expansions,
    where the stationarity halves every ~4000 iterations, stop at 1200 and 3400 iterations;
    FISTA on LapRLS + ℓ1, converging at 8174, is never stopped)."""
    import bisect

    it, best = trace[-1]
    if it < min_iterations or best <= tol:
        return ""
    j = bisect.bisect_left([k for k, _ in trace], it / 2)
    half_it, half_best = trace[j]
    if half_it >= it:
        return ""
    rate = np.log(half_best / best) / (it - half_it)
    needed = np.inf if rate <= 0 else np.log(best / tol) / rate
    if needed <= factor * (max_iter - it):
        return ""
    return (f"progress too slow: stationarity {best:.2e} after {it} iterations, and at the rate "
            f"of the last {it - half_it} (×{np.exp(-rate * 1000):.3g} per 1000) reaching "
            f"{tol:.0e} needs ~{needed:.3g} more, beyond max_iter = {max_iter}")


def first_order_stall(problem, terms) -> str:
    """Why first-order steps (FISTA, L-BFGS) do not certify a kernel expansion, or ""."""
    if isinstance(problem, Model) and kernel_expansion(problem, terms):
        return ("a kernel expansion f = Kα: the Hessian in α carries K·K, and first-order "
                "steps stall short of the certificate (LapRLS models, n = 100..1000)")
    return ""
