"""LapRLS by one direct solve of the normal equations [000 eq. 14].

With the square loss, ``Λ = I_L`` and the reduced system of :mod:`reduced_system` is
``(I_L K + γ_A I + γ_I LK) α + (I_L 1 + γ_I L1) b = J_Lᵀ y`` plus the bias row: one dense LU,
O(n³), exact up to round-off.
"""

from __future__ import annotations

import numpy as np
from ssl_opt.plugins.manifold.reduced_system import ReducedSystem

from ssl_opt.components import Square
from ssl_opt.hookspecs import hookimpl
from ssl_opt.problems.manifold.problem import LapSVM
from ssl_opt.solution import OPTIMAL, Solution
from ssl_opt.solvers import Solver


class LapRLSDirect(Solver):
    name = "laprls-direct"
    complexity = {"manifold": (3.0, "O(n³): one dense n×n solve")}
    tolerance_family = "direct"
    problem_types = (LapSVM,)
    description = "LapRLS normal equations [000 eq. 14], one dense LU solve, O(n^3)."
    options = {}

    def missing(self, problem) -> list[str]:
        missing = super().missing(problem)
        if not missing and not isinstance(problem.loss, Square):
            missing.append(f"the squared loss of LapRLS (got {problem.loss.name!r})")
        return missing

    def predicted_time(self, problem) -> float:
        n = problem.structure.sizes["n"]
        return 5e-3 + 4e-11 * n**3

    def _solve(self, problem) -> Solution:
        rhs = np.zeros(problem.n)
        rhs[: problem.l] = problem.y
        alpha, b = ReducedSystem(problem).solve(np.ones(problem.l), rhs, float(problem.y.sum()))
        return Solution({"alpha": alpha, "b": np.array(b)}, float("nan"), OPTIMAL, 1, 0.0,
                        self.backend, self.name)


@hookimpl
def register_solvers():
    return [LapRLSDirect()]
