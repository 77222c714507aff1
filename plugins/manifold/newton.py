"""Newton's method with the generalized Hessian for the primal LapSVM family [000 §3.1].

Each step solves the reduced system ``A Δ = −[∇_b; v]`` (see :mod:`reduced_system`), then takes
the exact line-search step along Δ. For the squared hinge the generalized Hessian sets φ'' = 2
on the error vectors E (points with m < 1) and 0 elsewhere [000 eq. 10]; the method stops when
E does not change after a full step (finite convergence) or the gradient is below ``tol``.
Other twice-differentiable losses (Huber, logistic, squared) use the same damped Newton step;
where the generalized Hessian is singular (no curvature, e.g. all margins on the linear part of
the Huber loss) that iteration adds a small curvature to b only (Levenberg–Marquardt).
With few labels the reduced system is factorized once and every later error set is a
low-rank update of that factorization (O(n²) per step, :mod:`reduced_system`); a warm start
from ``laprls-direct`` with ``keep_factorization`` hands its factorization over, so the
classes of a one-vs-rest fit share one. ``solution.info["factorizations"]`` counts this
run's own, ``info["shared_system"]`` says whether it was handed one.
"""

from __future__ import annotations

import time

import numpy as np

from ssl_opt._validation import check_nonnegative, integer
from ssl_opt.hookspecs import hookimpl
from ssl_opt.numerics.line_search import step_along
from ssl_opt.plugins.manifold.iterates import (
    check_curvature,
    initial_point,
    manifold_solution,
    newton_stop,
)
from ssl_opt.plugins.manifold.reduced_system import ReducedSystem, dense_kernel_refusal
from ssl_opt.problems.manifold.problem import LapSVM
from ssl_opt.solution import MAX_ITERATIONS, History, Solution
from ssl_opt.solvers import Option, Solver

#: A run handed its factorization: fixed cost and seconds per entry of n² (two steps of about
#: six dense passes each, at ~1 ns per float64 entry; 10-class digits, n = 1,797: 0.02–0.05 s
#: per class measured, 0.04 s predicted).
SHARED_RUN_SECONDS = 1e-3
SHARED_RUN_ENTRY_SECONDS = 1.2e-8


class Newton(Solver):
    name = "newton"
    complexity = {"manifold": (3.0, "O(n³): a dense n×n solve per Newton step, few steps")}
    tolerance_family = "direct"
    problem_types = (LapSVM,)
    requires = {"loss": ("derivative", "second_derivative")}
    #: The LapRLS solution is Newton's first step from 0 for the squared hinge, whose
    #: curvature at 0 is the square loss's.
    starts_from_quadratic = True
    hint = "newton needs a twice-differentiable loss; for the hinge use 'cvxpy' or 'cvxpy-dual'"
    description = (
        "Newton with the generalized Hessian and exact line search [000 §3.1]; "
        "dense O(n^3) per step, converges in a few steps."
    )
    options = {
        "tol": Option(1e-10, "stop when ‖∇J‖ ≤ tol·max(1, ‖∇J(0)‖), or when J stops "
                      "decreasing at round-off with ‖∇J‖ ≤ √tol·max(1, ‖∇J(0)‖)",
                      check_nonnegative),
        "max_iter": Option(50, "iteration cap", integer(0)),
        "warm_start": Option(None, "a previous Solution or dict to start from"),
    }

    def missing(self, problem) -> list[str]:
        """The declared requirements, and K dense (refused for a kernel operator whose dense
        system does not fit in memory: :func:`dense_kernel_refusal`)."""
        reasons = super().missing(problem)
        return reasons or dense_kernel_refusal(problem, self.name)

    def predicted_time(self, problem) -> float:
        n = problem.structure.sizes["n"]
        return 1e-2 + 4e-11 * n**3 + 1e-8 * n**2  # one dense LU, updates and a few products

    def predicted_shared_time(self, problem) -> float:
        """A run handed its factorization (a one-vs-rest class after the shared start): a few
        steps of O(n²) each (an updated solve, its refinement, products with K and L)."""
        n = problem.structure.sizes["n"]
        return SHARED_RUN_SECONDS + SHARED_RUN_ENTRY_SECONDS * n * n

    def _solve(self, problem, tol, max_iter, warm_start) -> Solution:
        start = time.perf_counter()
        l, y, loss, bias = problem.l, problem.y, problem.loss, problem.bias
        piecewise_quadratic = "piecewise_quadratic" in loss.capabilities
        system = _system(problem, warm_start)
        factorized = system.factorizations  # by the solver that handed the system over
        target = tol * problem.gradient_scale
        alpha, b = initial_point(problem, warm_start)
        scales = problem.entry_scales
        Ka = problem.K_dot(alpha)
        history = History()
        status, it, error_set, s, damped = MAX_ITERATIONS, 0, None, 0.0, 0
        while True:
            f = Ka + b
            Lf = problem.L_dot(f)
            v, g_b = problem.preconditioned_gradient(alpha, f, Lf)
            Kv = problem.K_dot(v)
            gnorm = float(np.sqrt(Kv @ Kv + g_b * g_b))
            obj = problem.objective_parts(alpha, b, Ka, Lf)
            m = y * f[:l]
            new_set = np.flatnonzero(m < 1.0)
            history.append(iteration=it, objective=obj, grad_norm=gnorm / problem.gradient_scale,
                           step=s, error_vectors=new_set.size, time=time.perf_counter() - start)
            stop = newton_stop(history, it, max_iter, s, error_set, new_set, gnorm, target,
                               np.sqrt(tol) * problem.gradient_scale, piecewise_quadratic)
            if stop is not None:
                status = stop
                break
            it += 1
            error_set = new_set
            lam = 0.5 * loss.second_derivative(m)
            try:
                d_a, d_b = system.solve(lam, -v, -g_b)
            except np.linalg.LinAlgError:
                # No curvature along a direction moving b (e.g. balanced labels, every margin
                # on the linear part of the Huber loss): damp b only (Levenberg–Marquardt).
                d_a, d_b = system.solve(lam, -v, -g_b, ridge_b=1e-8 * max(1.0, l))
                damped += 1
            Kd = problem.K_dot(d_a)
            f_d = Kd + (d_b if bias else 0.0)
            Lf_d = problem.L_dot(f_d)
            check_curvature(d_a, Kd, f_d, Lf_d, scales)
            s = step_along(problem, f, Ka, Lf, d_a, Kd, f_d, Lf_d)
            if piecewise_quadratic and abs(s - 1.0) < 1e-12:
                s = 1.0
            alpha = alpha + s * d_a
            b = b + s * d_b if bias else 0.0
            Ka = problem.K_dot(alpha)  # exact, not Ka + s·Kd: no drift for O(n²) per O(n³) step
        return manifold_solution(self, alpha, b, obj, status, it, history,
                                 grad_norm=gnorm / problem.gradient_scale, damped_steps=damped,
                                 factorizations=system.factorizations - factorized,
                                 shared_system=factorized > 0)  # a new one has none


def _system(problem, warm_start) -> ReducedSystem:
    """The reduced system a warm start handed over (``laprls-direct`` with
    ``keep_factorization``: the one-vs-rest classes share one factorization) when it is this
    problem's, else a new one."""
    system = getattr(warm_start, "resume", None)
    if isinstance(system, ReducedSystem) and system.serves(problem):
        return system
    return ReducedSystem(problem)


@hookimpl
def register_solvers():
    return [Newton()]
