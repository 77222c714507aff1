r"""``kernel-factor``: a model with a kernel expansion solved in the coordinates of a pivoted
Cholesky factor of its kernel (docs/modeling.md §11).

Each kernel variable α (one entering only through ``Kα`` and RKHS terms of the same K) is
restated as ``h`` with ``Kα = R h``, ``αᵀKα = ‖h‖²`` and ``R`` the n×r factor of K's r
leading pivots (:mod:`ssl_opt.modeling.kernel_range`); the restated model goes to the solver
of :data:`INNER_SOLVERS` predicted fastest on it (or the one named by ``inner``), and its
solution comes back as a point of the stated model, α zero off the pivots. The factor costs
O(n² r) once (LAPACK ``dpstrf``); a Newton step on the restated model O(n r² + r³) where the
stated model's kernel-range system costs O(n³): on an RBF kernel of n = 3,000
two-dimensional points, r ≈ 360 at the factor's tolerance.

The solution is judged by the **stated** model's certificate, with the inner solver's
multipliers (the arguments of the terms and constraints keep their shapes, so their
multipliers carry over): a restated optimum that misses it (a kernel whose left-out part
matters at the tolerance) ends ``stalled`` with the reason, never ``optimal``.

Applies to plain models (a paper's named model keeps its family's solvers) whose kernels have
rank at most ``MAX_RANK_FRACTION·n`` by a sampled estimate (any kernel of at most
``RANK_SAMPLE`` rows, whose factor is cheap); ``select`` weighs the measured factor plus the
inner solver's prediction on the restated model (r rows where the stated model has n) against
the stated model's solvers. A non-smooth term on ``f = R h + b`` (graph TV) goes to
``irls-newton``, which polishes it as it does a kernel expansion (the groups held near their
kink, not at it: ``irls_newton.WIDE_DENSE_COLUMNS``).
"""

from __future__ import annotations

import math
import time
import weakref

from ssl_opt import registry
from ssl_opt._validation import check_bool, check_positive, integer, optional
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.hookspecs import hookimpl
from ssl_opt.modeling.kernel_range import (
    FACTOR_RTOL,
    RANK_SAMPLE,
    KernelRange,
    kernel_substitutions,
    rank_estimate,
)
from ssl_opt.modeling.model import Model
from ssl_opt.plugins.model.common import (
    ModelSolver,
    certificate_check,
    certificate_of,
    kink_tolerance,
    worst,
)
from ssl_opt.solution import OPTIMAL, STALLED, Solution
from ssl_opt.solvers import TIME_LIMIT_OPTION, Option

#: The restated model's candidate solvers when ``inner="fast"``: those that factor (Newton
#: systems, ADMM's θ-system), whose work the factor shrinks from n to r rows. A first-order
#: method keeps K's conditioning in h (the restated Hessian has K's spectrum): pdhg on the
#: LapSVM box at n = 250 ran 36,000 iterations.
INNER_SOLVERS = ("irls-newton", "alm-newton", "admm-split", "newton-cg")
#: Kernels estimated (``rank_estimate``) above this fraction of their size are refused before
#: the factor is computed: no gain in the factor's coordinates, and the factorization would
#: cost a Cholesky's n³/3 inside ``select``. The variants' kernels cross it near n = 600.
MAX_RANK_FRACTION = 0.5
#: Options handed to the inner solver when it declares them.
PASSED_ON = ("tol", "max_iter", "time_limit", "check_terms")

_RANGES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: The inner solver :func:`inner_choice` picked for a model while predicting it.
_CHOSEN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def kernel_range(model: Model) -> tuple[KernelRange, float]:
    """The model's :class:`KernelRange` and the seconds its factors took (computed once per
    model)."""
    if model not in _RANGES:
        start = time.perf_counter()
        found = KernelRange.of(model, FACTOR_RTOL)
        _RANGES[model] = (found, time.perf_counter() - start)
    return _RANGES[model]


def _inner_name(value, name: str) -> str:
    if value == "fast" or (isinstance(value, str) and value in registry.solvers()
                           and value != KernelFactor.name):
        return value
    raise InvalidInputError(f"{name} must be 'fast' (the fastest predicted of "
                            f"{', '.join(INNER_SOLVERS)}) or the name of another registered "
                            f"solver, got {value!r}.")


class KernelFactor(ModelSolver):
    name = "kernel-factor"
    description = ("A kernel expansion restated in the coordinates of a pivoted Cholesky "
                   "factor of K (r pivots: Kα = R h, αᵀKα = ‖h‖²), solved by the fastest "
                   "predicted of irls-newton, alm-newton, admm-split and newton-cg; judged "
                   "by the stated model's certificate.")
    options = {
        "inner": Option("fast", "the restated model's solver: 'fast' (the fastest predicted "
                        "of INNER_SOLVERS) or a solver name", _inner_name),
        "tol": Option(None, "the inner solver's tol (None: its default); the stated model's "
                      "certificate must meet it too", optional(check_positive)),
        "max_iter": Option(None, "the inner solver's max_iter (None: its default)",
                           optional(integer(1))),
        "warm_start": Option(None, "a solution or dict of the stated model's variables (α is "
                             "restated as Rᵀα)"),
        "check_terms": Option(True, "passed to the inner solver when it takes it", check_bool),
        "time_limit": TIME_LIMIT_OPTION,
    }

    def structure_reasons(self, model: Model) -> list[str]:
        if type(model) is not Model:
            return ["a plain model (a paper's named model keeps its family's solvers)"]
        kernels = kernel_substitutions(model)
        if not kernels:
            return ["a kernel variable: one entering only through K @ alpha (K dense, "
                    "symmetric) and RKHS terms of the same K"]
        for name, K in kernels.items():
            n, rank = K.shape[0], rank_estimate(K, FACTOR_RTOL)
            if n > RANK_SAMPLE and rank > MAX_RANK_FRACTION * n:
                return [f"a kernel of numerical rank at most {MAX_RANK_FRACTION:g}·n (the K "
                        f"of {name!r} has rank ~{rank:.0f} of {n}, estimated from a "
                        f"{RANK_SAMPLE}-point sample)"]
        try:
            found, _ = kernel_range(model)
        except InvalidInputError as exc:
            return [f"a factorable kernel ({exc})"]
        if inner_choice(found.model, measure=False)[0] is None:
            return [f"one of {', '.join(INNER_SOLVERS)} to apply to the restated model"]
        return []

    def predicted_time(self, problem: Model) -> float:
        return self._predicted(problem, measure=False)[0]

    def instance_time(self, problem: Model) -> tuple[float, str] | None:
        seconds, note = self._predicted(problem, measure=True)
        return None if not math.isfinite(seconds) else (seconds, note)

    def _predicted(self, problem: Model, measure: bool) -> tuple[float, str]:
        found, factor_seconds = kernel_range(problem)
        name, inner = inner_choice(found.model, measure)
        if measure and name is not None:
            _CHOSEN[problem] = name
        ranks = ", ".join(f"{n}: {f.rank}" for n, f in found.factors.items())
        return factor_seconds + inner, (
            f"pivoted factor (rank {ranks}) measured {factor_seconds:.3g} s; "
            f"{name} predicted {inner:.3g} s on the restated model")

    def _solve(self, model: Model, **options) -> Solution:
        return self._run(model, **options)  # the inner solver sets its own BLAS threads

    def _run(self, model: Model, inner, tol, max_iter, warm_start, check_terms,
             time_limit) -> Solution:
        start = time.perf_counter()
        found, factor_seconds = kernel_range(model)
        given = dict(zip(PASSED_ON, (tol, max_iter, time_limit, check_terms), strict=True))
        given = {k: v for k, v in given.items() if v is not None}
        if inner == "fast":
            inner = _CHOSEN.get(model) or inner_choice(found.model, True)[0]
        solver = registry.get_solver(inner)
        opts = {k: v for k, v in given.items() if k in solver.options}
        if time_limit is not None and "time_limit" in opts:
            opts["time_limit"] = max(time_limit - (time.perf_counter() - start), 1e-3)
        if warm_start is not None and "warm_start" in solver.options:
            opts["warm_start"] = _restated_start(found, model, warm_start)
        sol = solver.solve(found.model, **opts)
        x = found.expand(sol.x)
        multipliers = sol.info.get("multipliers")
        need = opts.get("tol", solver.options["tol"].default if "tol" in solver.options
                        else 1e-8)
        # At the inner solver's multipliers first (an upper bound, no K product per
        # iteration of the certificate's own minimization), then a capped minimization.
        cert = certificate_of(model, x, multipliers, max_iter=0)
        if not worst(cert) <= need:
            cert = certificate_check(model, x, multipliers, kink_tol=kink_tolerance(need))
        status, info = sol.status, dict(sol.info)
        if status == OPTIMAL and not worst(cert) <= need:
            status = STALLED
            info["reason"] = (f"the restated model's optimum misses the stated model's "
                              f"certificate ({worst(cert):.2g} > {need:g}): the kernel's "
                              "left-out part matters at this tolerance")
        info.update(inner_solver=solver.name, kernel_ranks={
            n: f.rank for n, f in found.factors.items()}, factor_seconds=factor_seconds,
            certificate=cert, tolerance_family=sol.info.get("tolerance_family",
                                                            self.tolerance_family))
        return Solution(x=x, objective=float(model.objective(x)), status=status,
                        iterations=sol.iterations, time=0.0, backend="", solver="",
                        history=sol.history, info=info)


def _restated_start(found: KernelRange, model: Model, warm_start):
    """The warm start in the restated variables; a Solution keeps its multipliers (the
    arguments, hence the multipliers' shapes, are the stated model's)."""
    values = found.restrict(model.warm_start_values(warm_start))
    info = getattr(warm_start, "info", None) or {}
    if "multipliers" not in info:
        return values
    return Solution(x=values, objective=math.nan, status="", iterations=0, time=0.0,
                    backend="", solver="", info={"multipliers": info["multipliers"]})


def inner_choice(restated: Model, measure: bool) -> tuple[str | None, float]:
    """The solver of :data:`INNER_SOLVERS` predicted fastest on the restated model, and its
    seconds; ``(None, nan)`` when none applies."""
    from ssl_opt.selection.select import predict

    best: tuple[str | None, float] = (None, math.nan)
    for name in INNER_SOLVERS:
        solver = registry.solvers().get(name)
        if solver is None or not solver.supports(restated):
            continue
        seconds = predict(solver, restated, measure=measure).seconds
        if best[0] is None or seconds < best[1]:
            best = (name, seconds)
    return best


@hookimpl
def register_solvers():
    return [KernelFactor()]
