"""Preconditioned conjugate gradient for the primal LapSVM family [000 Alg. 1, §3.2].

Minimizes ``J(α, b)`` (docs/design.md §4.1) for any smooth margin loss (squared hinge, squared,
Huber, logistic, ...). The preconditioner ``P = diag(1, K)`` is never inverted: the
preconditioned gradient is ``∇̂ = [∇_b; v]`` with ``v = ½J_Lᵀ(y∘φ'(m)) + γ_A α + γ_I L f`` and
the gradient is ``∇ = P ∇̂ = [∇_b; K v]``. Directions follow Polak–Ribière,
``ρ = max(∇ᵀ(∇̂ − ∇̂_old) / ∇_oldᵀ∇̂_old, 0)`` (automatic restart), with Powell's restart
``ρ = 0`` when ``|∇ᵀ∇̂_old| ≥ 0.2·∇ᵀ∇̂`` (conjugacy lost: on ill-conditioned instances PR+ alone
stalled at ‖∇J‖ ~ 1e-6), and the step is the exact line search of §3.2.1.

Cost per iteration: one product ``K v`` and one ``L f_d``. ``Kα`` and ``K d`` are carried by
the recursions ``Kα += s·Kd`` and ``Kd = −Kv + ρ·Kd`` (refreshed every ``refresh`` iterations
against drift); neither ``LK`` nor the Hessian is ever formed.

K enters only through products ``K v`` (and ``problem.entry_scales``, which for an operator
reads ``diagonal()`` when offered): a products-only ``LinearOperator`` K (e.g.
:class:`ssl_opt.operators.KernelOperator`) is never densified, so memory is O(n) vectors plus
L and the operator's workspace. No Jacobi (diagonal) preconditioner is used: P = diag(1, K) is
applied as the change of variables above, not inverted, so no diagonal of K is needed. The
early-stopping rules read f (stability) or ``K_val @ α`` (validation; K_val may be an operator).
"""

from __future__ import annotations

import math
import time
import weakref

import numpy as np

from ssl_opt._validation import callable_option, check_nonnegative, choice, integer, optional
from ssl_opt.hookspecs import hookimpl
from ssl_opt.numerics.line_search import step_along
from ssl_opt.plugins.manifold.early_stopping import RULES, STABILITY_COUNTS, EarlyStopping
from ssl_opt.plugins.manifold.iterates import (
    check_curvature,
    initial_point,
    manifold_solution,
)
from ssl_opt.problems.manifold.problem import PRODUCT_SOLVER_VECTORS, LapSVM
from ssl_opt.solution import (
    EARLY_STOPPED,
    MAX_ITERATIONS,
    OPTIMAL,
    STALLED,
    TIME_LIMIT,
    History,
    Solution,
)
from ssl_opt.solvers import TIME_LIMIT_OPTION, Option, Solver

#: Powell's restart test: successive preconditioned gradients far from orthogonal
#: (|∇ᵀ∇̂_old| ≥ POWELL·∇ᵀ∇̂) mean the directions lost conjugacy, and PCG restarts.
POWELL = 0.2


#: PCG's iterations per √κ of its preconditioned Hessian (``problem.conditioning``), to the
#: default tolerance: 0.34–6.5, geometric mean 1.8, on the binary instances of
#: benchmarks/bench_instance_selection.py below the 3n cap (digits, breast cancer, two moons,
#: g50c-like data, γ_A = 1e-6..1, γ_I = 0.01..1). Set above the mean: a PCG picked on too low
#: a count runs long, a factorization's time does not move.
ITERATIONS_PER_ROOT = 2.5
#: Where √κ is beyond n, finite precision rules: 0.15–3.4 n iterations measured there (same
#: benchmark); this many per point is predicted, below PCG's own cap of 10 n + 1000.
ITERATIONS_PER_POINT = 3
#: Seconds of an iteration beyond its K and L products (line search, objective, vector
#: updates, history): ``VECTOR_SECONDS + VECTOR_SECONDS_PER_POINT·n``, ~5e-5 s measured at
#: n = 550–1,800 on this 2-core machine.
VECTOR_SECONDS = 3e-5
VECTOR_SECONDS_PER_POINT = 1.5e-8


class PCG(Solver):
    name = "pcg"
    complexity = {"manifold": (2.0, "O(k·n²): k dense kernel products")}
    tolerance_family = "iterative"
    problem_types = (LapSVM,)
    requires = {"loss": ("derivative",)}
    #: Reads K through products only: a kernel operator is never densified (selection counts
    #: its vectors, not 8n², see ``LapSVM.memory_for``).
    kernel_access = "products"
    hint = ("pcg needs a smooth loss; for the hinge use the reference backend ('cvxpy' or "
            "'cvxpy-dual')")
    description = (
        "Preconditioned nonlinear CG, P = diag(1, K), Polak-Ribiere with restart, exact line "
        "search, early stopping [000 Alg. 1-3]; O(n^2) per iteration, only products with K, L."
    )
    options = {
        "tol": Option(1e-8, "stop when ‖∇J‖ ≤ tol·max(1, ‖∇J(0)‖), or when J stalls at "
                      "round-off for 20 iterations with ‖∇J‖ ≤ √tol·max(1, ‖∇J(0)‖)",
                      check_nonnegative),
        "max_iter": Option(None, "iteration cap (default 10·n + 1000)", optional(integer(0))),
        "warm_start": Option(None, "a previous Solution or dict to start from; a Solution "
                             "PCG stopped at its time_limit, given back on the same problem, "
                             "continues exactly (directions kept, iterations counted on)"),
        "early_stopping": Option(None, "None, 'stability', 'validation' or 'mixed'",
                                 optional(choice(*RULES[1:]))),
        "validation": Option(None, "(K_val, y_val) for the validation and mixed rules"),
        "check_every": Option(None, "θ, iterations between early-stopping checks "
                              "(round(√n/2), as the authors' code)", optional(integer(1))),
        "stability_count": Option("changed", "the stability rule's τ: 'changed' (percent of "
                                  "unlabeled points whose sign changed, the authors' code) or "
                                  "'paper' (100‖d − d_old‖₁/u as Alg. 2 prints it, each flip "
                                  "counted twice)", choice(*STABILITY_COUNTS)),
        "refresh": Option(100, "recompute Kα and Kd exactly every this many iterations",
                          integer(1)),
        "callback": Option(None, "called as callback(iteration, alpha, b) after each step",
                           optional(callable_option)),
        "time_limit": TIME_LIMIT_OPTION,
    }
    resumable = True  # time_limit, warm_start, grad_norm in units of tol (Solver.resumable)

    def predicted_time(self, problem) -> float:
        n = problem.structure.sizes["n"]
        return 5e-3 + 60 * 1.5e-9 * n**2  # ~60 iterations of one dense K product

    def instance_time(self, problem) -> tuple[float, str] | None:
        """Iterations from the conditioning of the preconditioned Hessian
        (``problem.conditioning``: λ_max and the bottom of its spectrum by Lanczos), each at
        the measured cost of its K and L products plus its vector work:
        ``min(ITERATIONS_PER_ROOT·√κ + 10, ITERATIONS_PER_POINT·n)`` iterations. None for a
        kernel operator, whose products may cost seconds (its ``product_seconds`` and the cost
        model decide there)."""
        if problem.kernel_is_operator:
            return None
        found = problem.conditioning
        if not (found.largest > 0 and math.isfinite(found.condition)):
            return None
        n = problem.n
        iterations = min(ITERATIONS_PER_ROOT * math.sqrt(found.condition) + 10,
                         ITERATIONS_PER_POINT * n)
        per_iteration = found.seconds_per_step + VECTOR_SECONDS + VECTOR_SECONDS_PER_POINT * n
        # + 3: the start's products (Kα, Kv, the gradient scale)
        return (iterations + 3) * per_iteration, (
            f"~{iterations:.0f} iterations × {1e3 * per_iteration:.3g} ms, measured on this "
            f"instance: {found.describe()}")

    def predicted_memory(self, problem) -> float:
        """``PRODUCT_SOLVER_VECTORS`` n-vectors (iterates, products, temporaries) plus what one
        product with K allocates beyond its result (an operator's workspace)."""
        n = problem.structure.sizes["n"]
        return 8.0 * PRODUCT_SOLVER_VECTORS * n + getattr(problem, "kernel_workspace", 0.0)

    def _solve(self, problem, tol, max_iter, warm_start, early_stopping, validation,
               check_every, stability_count, refresh, callback, time_limit) -> Solution:
        start = time.perf_counter()
        n, bias = problem.n, problem.bias
        stopper = EarlyStopping(early_stopping, problem, validation, check_every,
                                stability_count=stability_count)
        max_iter = int(max_iter if max_iter is not None else 10 * n + 1000)
        target = tol * problem.gradient_scale

        alpha, b = initial_point(problem, warm_start)
        scales = problem.entry_scales
        state = _resumed(warm_start, problem)
        if state is None:
            Ka = problem.K_dot(alpha)
            f = Ka + b
            Lf = problem.L_dot(f)
            v, g_b = problem.preconditioned_gradient(alpha, f, Lf)
            Kv = problem.K_dot(v)
            d_a, d_b = -v, -g_b
            Kd = -Kv
            num_old = float(Kv @ v + g_b * g_b)  # ∇ᵀ∇̂
            gnorm = float(np.sqrt(Kv @ Kv + g_b * g_b))
            it = stall = 0
        else:  # where the run that stopped left off: its directions and products
            Ka, Lf, v, g_b, d_a, d_b, Kd, num_old, gnorm, it, stall = (
                state[k] for k in _STATE)
            Ka, Lf, d_a, Kd = Ka.copy(), Lf.copy(), d_a.copy(), Kd.copy()
            f = Ka + b
        max_iter += it
        history = History()
        obj = problem.objective_parts(alpha, b, Ka, Lf)
        history.append(iteration=it, objective=obj, grad_norm=gnorm / problem.gradient_scale,
                       step=0.0, time=time.perf_counter() - start)
        status, converged_by = MAX_ITERATIONS, "gradient"
        if gnorm <= target:
            status = OPTIMAL
        while status == MAX_ITERATIONS and it < max_iter:
            it += 1
            f_d = Kd + (d_b if bias else 0.0)
            Lf_d = problem.L_dot(f_d)
            check_curvature(d_a, Kd, f_d, Lf_d, scales)
            s = step_along(problem, f, Ka, Lf, d_a, Kd, f_d, Lf_d)
            alpha = alpha + s * d_a
            b = b + s * d_b if bias else 0.0
            Ka += s * Kd
            Lf += s * Lf_d
            if it % refresh == 0:
                Ka = problem.K_dot(alpha)
                Lf = problem.L_dot(Ka + b)
            f = Ka + b
            v_old, g_b_old = v, g_b
            v, g_b = problem.preconditioned_gradient(alpha, f, Lf)
            Kv = problem.K_dot(v)
            num = float(Kv @ v + g_b * g_b)
            Kv_v_old = float(Kv @ v_old)
            rho = max((num - Kv_v_old - g_b * g_b_old) / num_old, 0.0) if num_old else 0.0
            if abs(Kv_v_old + g_b * g_b_old) >= POWELL * num:  # |∇ᵀ∇̂_old|
                rho = 0.0  # conjugacy lost (Powell's test): restart along −∇̂
            num_old = num
            d_a = -v + rho * d_a
            d_b = -g_b + rho * d_b
            Kd = -Kv + rho * Kd
            if it % refresh == 0:
                Kd = problem.K_dot(d_a)
            new_obj = problem.objective_parts(alpha, b, Ka, Lf)
            gnorm = float(np.sqrt(Kv @ Kv + g_b * g_b))
            stall = stall + 1 if new_obj >= obj - 1e-15 * max(1.0, abs(obj)) else 0
            obj = new_obj
            history.append(iteration=it, objective=obj, grad_norm=gnorm / problem.gradient_scale,
                           step=s, time=time.perf_counter() - start)
            if callback is not None:
                callback(it, alpha, b)
            if gnorm <= target:
                # Confirm on exact products before declaring convergence.
                Ka = problem.K_dot(alpha)
                f = Ka + b
                Lf = problem.L_dot(f)
                v, g_b = problem.preconditioned_gradient(alpha, f, Lf)
                Kv = problem.K_dot(v)
                gnorm = float(np.sqrt(Kv @ Kv + g_b * g_b))
                if gnorm <= target:
                    status = OPTIMAL
                    break
                d_a, d_b, Kd, num_old = -v, -g_b, -Kv, float(Kv @ v + g_b * g_b)
            if stopper(it, f, alpha, b):
                status = EARLY_STOPPED
                break
            if time_limit is not None and time.perf_counter() - start > time_limit:
                status = TIME_LIMIT
                break
            if stall >= 20:
                # The objective stopped decreasing at round-off level: converged as far as
                # floating point allows if the gradient is at least below √tol.
                converged = gnorm <= np.sqrt(tol) * problem.gradient_scale
                status = OPTIMAL if converged else STALLED
                converged_by = "objective at machine precision" if converged else None
                break
        solution = manifold_solution(
            self, alpha, b, obj, status, it, history,
            grad_norm=gnorm / problem.gradient_scale, check_every=stopper.every,
            converged_by=converged_by if status == OPTIMAL else None,
        )
        if status == TIME_LIMIT:
            values = (Ka, Lf, v, g_b, d_a, d_b, Kd, num_old, gnorm, it, stall)  # _STATE's order
            solution.resume = {"problem": weakref.ref(problem),
                               **dict(zip(_STATE, values, strict=True))}
        return solution


_STATE = ("Ka", "Lf", "v", "g_b", "d_a", "d_b", "Kd", "num_old", "gnorm", "it", "stall")


def _resumed(warm_start, problem) -> dict | None:
    """The state a PCG run stopped by its time limit left in its Solution (``resume``), when
    ``warm_start`` is that Solution and ``problem`` the very problem it ran on: the run then
    continues exactly, its directions and products kept (a restart from α alone loses the
    conjugate directions, and with them most of what the first run's iterations bought)."""
    state = getattr(warm_start, "resume", None)
    if not isinstance(state, dict) or state.get("problem", lambda: None)() is not problem:
        return None
    return state


@hookimpl
def register_solvers():
    return [PCG()]
