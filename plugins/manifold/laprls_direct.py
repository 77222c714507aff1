"""LapRLS by one direct solve of the normal equations [000 eq. 14].

For a quadratic loss (φ'' constant, the ``"quadratic"`` capability) J is quadratic, so one
Newton step from 0 is its minimizer: the reduced system of :mod:`reduced_system` with
``Λ = ½φ''`` and right-hand side ``−[∇_b; v]`` at 0. For the square loss ``Λ = I_L`` and it is
``(I_L K + γ_A I + γ_I LK) α + (I_L 1 + γ_I L1) b = J_Lᵀ y`` plus the bias row: one dense LU,
O(n³), exact up to round-off.
"""

from __future__ import annotations

import numpy as np

from ssl_opt.hookspecs import hookimpl
from ssl_opt.plugins.manifold.iterates import check_curvature
from ssl_opt.plugins.manifold.reduced_system import ReducedSystem
from ssl_opt.problems.manifold.problem import LapSVM
from ssl_opt.solution import OPTIMAL, Solution
from ssl_opt.solvers import Solver


class LapRLSDirect(Solver):
    name = "laprls-direct"
    complexity = {"manifold": (3.0, "O(n³): one dense n×n solve")}
    tolerance_family = "direct"
    problem_types = (LapSVM,)
    requires = {"loss": ("quadratic",)}
    hint = ("the direct solve needs a quadratic loss (LapRLS's square loss); for the squared "
            "hinge use 'newton' or 'pcg', for the hinge 'cvxpy' or 'cvxpy-dual'")
    description = "LapRLS normal equations [000 eq. 14], one dense LU solve, O(n^3)."
    options = {}

    def predicted_time(self, problem) -> float:
        n = problem.structure.sizes["n"]
        return 5e-3 + 4e-11 * n**3

    def _solve(self, problem) -> Solution:
        zero = np.zeros(problem.n)
        v, g_b = problem.preconditioned_gradient(zero, zero, zero)  # at α = 0, b = 0: L f = 0
        lam = 0.5 * problem.loss.second_derivative(zero[: problem.l])
        alpha, b = ReducedSystem(problem).solve(lam, -v, -g_b)
        # The step from 0 is the minimizer only if J is convex along it (K, L PSD).
        K_alpha = problem.K_dot(alpha)
        f = K_alpha + (b if problem.bias else 0.0)
        check_curvature(alpha, K_alpha, f, problem.L_dot(f), problem.entry_scales)
        return Solution({"alpha": alpha, "b": np.array(b)}, float("nan"), OPTIMAL, 1, 0.0,
                        self.backend, self.name)


@hookimpl
def register_solvers():
    return [LapRLSDirect()]
