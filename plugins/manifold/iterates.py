"""Start and end points shared by the manifold-family solvers."""

from __future__ import annotations

import numpy as np

from ssl_opt.exceptions import InvalidInputError
from ssl_opt.solution import MAX_ITERATIONS, OPTIMAL, STALLED, History, Solution


def initial_point(problem, warm_start) -> tuple[np.ndarray, float]:
    """``(α, b)`` from a previous Solution or dict, or zeros [000 Alg. 1]."""
    if warm_start is None:
        return np.zeros(problem.n), 0.0
    x = problem.warm_start_values(warm_start)
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


def newton_stop(history: History, it: int, max_iter: int, step: float, error_set, new_set,
                gnorm: float, target: float, floor: float, piecewise_quadratic: bool):
    """The status that ends a Newton iteration of the family [000 §3.1], or None to go on.

    ``OPTIMAL`` when ``gnorm ≤ target``, or for a piecewise-quadratic loss when a full step
    left the error set unchanged (finite convergence); ``MAX_ITERATIONS`` at ``max_iter``;
    at the round-off floor (the objective, last in ``history``, no lower than three steps
    before) ``OPTIMAL`` if ``gnorm ≤ floor`` (√tol-relative), else ``STALLED``. Same rule as
    PCG's."""
    finite = (piecewise_quadratic and it > 0 and step == 1.0
              and error_set is not None and np.array_equal(new_set, error_set))
    if gnorm <= target or finite:
        return OPTIMAL
    if it >= max_iter:
        return MAX_ITERATIONS
    objective = history["objective"]
    if it > 0 and len(history) > 3 and objective[-1] >= objective[-4]:
        return OPTIMAL if gnorm <= floor else STALLED
    return None


def check_curvature(d_a, Kd, f_d, Lf_d, scales: tuple[float, float]) -> None:
    """Refuse a problem found non-convex along a search direction: ``d_aᵀK d_a < 0`` or
    ``f_dᵀL f_d < 0`` beyond round-off (``1e-8·(max|M|·‖d‖² + ‖d‖‖Md‖)``) happens only when K
    or L is indefinite. The build-time PSD check covers small n; this O(n) test covers larger
    n and kernel operators. It sees only the directions the solver takes, so it is a necessary
    check, not a proof of convexity."""
    for name, d, Md, scale in (("K", d_a, Kd, scales[0]), ("L", f_d, Lf_d, scales[1])):
        curvature = float(d @ Md)
        if curvature >= 0.0:  # the common case: no norms needed
            continue
        norm_d = float(np.linalg.norm(d))
        if curvature < -1e-8 * norm_d * (scale * norm_d + float(np.linalg.norm(Md))):
            raise InvalidInputError(
                f"{name} is not positive semidefinite (negative curvature {curvature:.3g} "
                f"along a search direction); the problem is non-convex and has no optimum to "
                f"report. Use a PSD {name} (a valid kernel, or a Laplacian of non-negative "
                "weights)."
            )
