"""Start and end points shared by the manifold-family solvers."""

from __future__ import annotations

import numpy as np

from ssl_opt.solution import History, Solution


def initial_point(problem, warm_start) -> tuple[np.ndarray, float]:
    """``(α, b)`` from a previous Solution or dict, or zeros [000 Alg. 1]."""
    if warm_start is None:
        return np.zeros(problem.n), 0.0
    x = problem.unpack(warm_start)
    return x["alpha"].copy(), float(x["b"]) if problem.bias else 0.0


def manifold_solution(solver, alpha, b, objective, status, iterations, history: History,
                      **info) -> Solution:
    """The Solution of ``solver`` at ``(α, b)``; ``Solver.solve`` fills in time and objective."""
    return Solution(
        x={"alpha": alpha, "b": np.array(float(b))},
        objective=objective,
        status=status,
        iterations=iterations,
        time=0.0,
        backend=solver.backend,
        solver=solver.name,
        history=history,
        info=info,
    )
