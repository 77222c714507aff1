"""LapRLS by one direct solve of the normal equations [000 eq. 14].

For a quadratic loss (φ'' constant, the ``"quadratic"`` capability) J is quadratic, so one
Newton step from 0 is its minimizer: the reduced system of :mod:`reduced_system` with
``Λ = ½φ''`` and right-hand side ``−[∇_b; v]`` at 0. For the square loss ``Λ = I_L`` and it is
``(I_L K + γ_A I + γ_I LK) α + (I_L 1 + γ_I L1) b = J_Lᵀ y`` plus the bias row: one dense LU,
O(n³), exact up to round-off.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ssl_opt._validation import check_bool
from ssl_opt.hookspecs import hookimpl
from ssl_opt.plugins.manifold.iterates import check_curvature
from ssl_opt.plugins.manifold.reduced_system import (
    ReducedSystem,
    SystemData,
    dense_kernel_refusal,
)
from ssl_opt.problems.manifold.problem import LapSVM
from ssl_opt.problems.one_vs_rest import OneVsRest
from ssl_opt.solution import OPTIMAL, Solution
from ssl_opt.solvers import Option, Solver


class LapRLSDirect(Solver):
    name = "laprls-direct"
    complexity = {"manifold": (3.0, "O(n³): one dense n×n solve")}
    tolerance_family = "direct"
    problem_types = (LapSVM, OneVsRest)
    requires = {"loss": ("quadratic",)}
    hint = ("the direct solve needs a quadratic loss (LapRLS's square loss); for the squared "
            "hinge use 'newton' or 'pcg', for the hinge 'cvxpy' or 'cvxpy-dual'")
    description = ("LapRLS normal equations [000 eq. 14], one dense LU solve, O(n^3); the c "
                   "classes of a one-vs-rest LapRLS share the LU (c right-hand sides).")
    options = {
        "keep_factorization": Option(False, "hand the factorized system to each solution "
                                     "(solution.resume, not pickled) for a warm-started "
                                     "Newton on the same K, L, γs and labeled points to reuse",
                                     check_bool),
    }

    def missing(self, problem) -> list[str]:
        """The declared requirements, a one-vs-rest problem of LapSVM columns, and K dense
        (refused for a kernel operator whose dense system does not fit in memory:
        :func:`dense_kernel_refusal`)."""
        reasons = super().missing(problem)
        first = problem.first if isinstance(problem, OneVsRest) else problem
        if not reasons and not isinstance(first, LapSVM):
            reasons = [f"one-vs-rest columns of type LapSVM or LapRLS (got "
                       f"{type(first).__name__})"]
        return reasons or dense_kernel_refusal(first, self.name)

    def predicted_time(self, problem) -> float:
        """One LU of the n×n system; for c classes the one LU (predicted as for one class,
        the cost model's when there is one) plus the c right-hand sides."""
        if isinstance(problem, OneVsRest):
            from ssl_opt.selection.select import predict

            n = problem.first.n
            return predict(self, problem.first).seconds + 2e-10 * n * n * problem.c
        n = problem.structure.sizes["n"]
        return 5e-3 + 4e-11 * n**3

    def predicted_memory(self, problem) -> float:
        """A one-vs-rest problem: one class's system plus the c solution columns."""
        if isinstance(problem, OneVsRest):
            from ssl_opt.selection.select import predict

            return predict(self, problem.first).memory + 24.0 * problem.first.n * problem.c
        return super().predicted_memory(problem)

    def _solve(self, problem, keep_factorization) -> Solution:
        if isinstance(problem, OneVsRest):
            columns = _solve_columns(problem.columns, keep_factorization)
            return Solution(problem.stack(columns), float(sum(c.objective for c in columns)),
                            OPTIMAL, 1, 0.0, self.backend, self.name,
                            info={"columns": columns, "shared_factorization": problem.c})
        return _solve_columns([problem], keep_factorization)[0]


def _solve_columns(problems: list, keep_factorization: bool = False) -> list[Solution]:
    """LapRLS problems that differ only in their labels ``y`` (the columns of a
    :class:`OneVsRest`, or one problem) by one LU: the matrix of [000 eq. 14] depends on K, L,
    γ_A, γ_I, the bias and which points are labeled, not on the labels (docs/design.md §7)."""
    first = problems[0]
    start = time.perf_counter()
    zero = np.zeros(first.n)
    rhs = [p.preconditioned_gradient(zero, zero, zero) for p in problems]  # at α = 0, b = 0
    lam = 0.5 * first.loss.second_derivative(zero[: first.l])
    system = ReducedSystem(first)
    alphas, bs = system.solve_many(
        lam, -np.column_stack([v for v, _ in rhs]), -np.array([g for _, g in rhs]))
    # The step from 0 is the minimizer only if J is convex along it (K, L PSD).
    K_alpha = first.K_dot(alphas)
    F = K_alpha + (bs[None, :] if first.bias else 0.0)
    LF = first.L_dot(F)
    for k in range(len(problems)):
        check_curvature(alphas[:, k], K_alpha[:, k], F[:, k], LF[:, k], first.entry_scales)
    seconds = (time.perf_counter() - start) / len(problems)
    solutions = []
    for k, p in enumerate(problems):
        x = {"alpha": alphas[:, k].copy(), "b": np.array(bs[k] if first.bias else 0.0)}
        objective = p.objective_parts(x["alpha"], float(x["b"]), K_alpha[:, k], LF[:, k])
        solutions.append(Solution(x, float(objective), OPTIMAL, 1, seconds,
                                  LapRLSDirect.backend, LapRLSDirect.name,
                                  info={"tolerance_family": LapRLSDirect.tolerance_family,
                                        "shared_factorization": len(problems)},
                                  resume=system if keep_factorization else None))
    return solutions


def solve_targets(K: np.ndarray, L, T: np.ndarray, gamma_A: float, gamma_I: float,
                  bias: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(α, b)`` (n×c, c) minimizing, for every column k of the real-valued targets T (l×c),

        J_k = ½ ( Σ_{i≤l} (f_ik − T_ik)² + γ_A α_kᵀKα_k + γ_I f_kᵀLf_k ),  f = Kα + 1bᵀ,

    by one LU of the reduced system of [000 eq. 14] with c right-hand sides: ``(J_L K + γ_A I +
    γ_I LK) α_k + (J_L 1 + γ_I L1) b_k = J_Lᵀ T_k`` and the bias row ``Σ_{i≤l} T_ik``. The
    matrix depends on K, L, the γs, the bias and l, not on T (docs/design.md §7): the same
    system as :class:`LapRLSDirect` on a :class:`OneVsRest`, for targets that need not be ±1
    (K dense, γ_A > 0; L any symmetric PSD matrix or operator). Raises ``InvalidInputError``
    when K or L is found indefinite along a solution column (:func:`check_curvature`)."""
    T = np.asarray(T, dtype=np.float64)
    l = T.shape[0]
    data = SystemData(K, L, float(gamma_A), float(gamma_I), l, bool(bias))
    rhs_alpha = np.zeros((data.n, T.shape[1]))
    rhs_alpha[:l] = T
    alphas, bs = ReducedSystem(data).solve_many(np.ones(l), rhs_alpha, T.sum(axis=0))
    # The stationary point is the minimizer only if every J_k is convex (K, L PSD).
    K_alpha = K @ alphas
    F = K_alpha + (bs[None, :] if bias else 0.0)
    LF = data.L_dot(F)
    scales = (_abs_max(K), 0.0 if isinstance(L, spla.LinearOperator) else _abs_max(L))
    for k in range(T.shape[1]):
        check_curvature(alphas[:, k], K_alpha[:, k], F[:, k], LF[:, k], scales)
    return alphas, (bs if bias else np.zeros(T.shape[1]))


def _abs_max(M) -> float:
    if sp.issparse(M):
        return float(abs(M).max()) if M.nnz else 0.0
    return float(max(M.max(), -M.min())) if M.size else 0.0  # no n×n temporary


@hookimpl
def register_solvers():
    return [LapRLSDirect()]
