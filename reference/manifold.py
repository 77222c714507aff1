"""The CVXPY programs of the kernel manifold family (docs/design.md §4.1, [000 §2.1, eq. 7]).

Primal: the named model's program from its terms (``reference/model.py``: ``h = Rᵀα`` with
``K = RRᵀ``, well conditioned for nearly singular Gram matrices), on K stored dense (an operator
or a sparse K is formed once: the reference is for small instances).

Dual (the hinge) [000 §2.1]: ``max 1ᵀβ − ½βᵀQβ`` s.t. ``yᵀβ = 0`` (bias), ``0 ≤ β ≤ 1``,
``Q = Y J_L K M⁻¹ J_Lᵀ Y``, ``M = 2γ_A I + 2γ_I L K``, ``α = M⁻¹ J_Lᵀ Y β``. It holds for any
loss with the ``"piecewise_linear"`` capability, ``φ(m) = max(lo(1 − m), hi(1 − m))``, with the
box ``lo ≤ β ≤ hi`` of its ``conjugate_form`` (the hinge: ``[0, 1]``). The derivation drops b
from the intrinsic term, so it equals the primal only when ``L·1 = 0`` or there is no bias;
other cases are refused. b is recovered by minimizing the primal over b with α fixed.
"""

from __future__ import annotations

import numpy as np

from ssl_opt.optional import cvxpy as cp
from ssl_opt.problems.manifold.problem import LapSVM
from ssl_opt.reference import model as model_reference
from ssl_opt.reference.cvxpy_solver import Formulation


def build_primal(problem: LapSVM):
    """The model's program from its terms (``reference/model.py``) on K stored dense."""
    return model_reference.build(problem.with_dense_kernel())


def dual_missing(problem: LapSVM) -> list[str]:
    missing = []
    if problem.bias and not problem.laplacian_annihilates_ones:
        missing.append(
            "L·1 = 0 when bias=True: with a normalized Laplacian the dual of [000 §2.1] drops b "
            "from fᵀLf and solves a different problem; use bias=False or the primal 'cvxpy'"
        )
    return missing


def _dual_matrices(problem: LapSVM):
    K = problem.K_dense
    n, l = problem.n, problem.l
    M = 2 * problem.gamma_A * np.eye(n) + 2 * problem.gamma_I * np.asarray(problem.L @ K)
    JtY = np.zeros((n, l))
    JtY[np.arange(l), np.arange(l)] = problem.y
    A = np.linalg.solve(M, JtY)  # α = A β
    Q = problem.y[:, None] * (K[:l] @ A)
    return A, 0.5 * (Q + Q.T)


def build_dual(problem: LapSVM):
    A, Q = _dual_matrices(problem)
    _, lo, hi = problem.loss.conjugate_form
    beta = cp.Variable(problem.l, name="beta")
    constraints = [beta >= lo, beta <= hi]
    if problem.bias:
        constraints.append(problem.y @ beta == 0)
    objective = cp.Minimize(0.5 * cp.quad_form(beta, cp.psd_wrap(Q)) - cp.sum(beta))
    return cp.Problem(objective, constraints), (beta, A)


def recover_dual(problem: LapSVM, handles) -> dict:
    beta, A = handles
    _, lo, hi = problem.loss.conjugate_form
    beta_v = np.clip(np.asarray(beta.value, dtype=float), lo, hi)
    alpha = A @ beta_v
    b = _best_bias(problem, problem.K_dense[: problem.l] @ alpha) if problem.bias else 0.0
    return {"alpha": alpha, "b": np.array(b), "beta": beta_v}


def _best_bias(problem: LapSVM, h_l: np.ndarray) -> float:
    """argmin_b Σ φ(y_i(h_i + b)): convex piecewise linear with kinks where y_i(h_i + b) = 1,
    so the minimum is at one of those breakpoints."""
    y = problem.y
    candidates = y - h_l  # where y_i (h_i + b) = 1
    values = problem.loss.value(y[None, :] * (h_l[None, :] + candidates[:, None])).sum(1)
    best = np.flatnonzero(values <= values.min() + 1e-12 * max(1.0, values.min()))
    return float(np.median(candidates[best]))


PRIMAL = Formulation(LapSVM, build_primal, model_reference.recover)
DUAL = Formulation(LapSVM, build_dual, recover_dual, missing=dual_missing,
                   requires={"loss": ("piecewise_linear",)})
