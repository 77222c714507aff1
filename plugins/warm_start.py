"""Starting points shared by the iterative solvers."""

from __future__ import annotations

import numpy as np


def initial_point(problem, warm_start) -> tuple[np.ndarray, float]:
    """``(α, b)`` from a previous Solution or dict, or zeros [000 Alg. 1]."""
    if warm_start is None:
        return np.zeros(problem.n), 0.0
    x = problem.unpack(warm_start)
    return x["alpha"].copy(), float(x["b"]) if problem.bias else 0.0
