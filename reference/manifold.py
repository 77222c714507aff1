"""Exact CVXPY programs for the kernel manifold family (docs/design.md §4.1, [000 §2.1, eq. 7]).

Primal: ``min ½(Σ φ(y_i f_i) + γ_A ‖h‖² + γ_I fᵀLf)`` over ``h = Rᵀα`` with ``K = RRᵀ``
(eigen-factor, see :func:`kernel_factor`) and ``f = R h + b·1``: the same problem, well
conditioned for nearly singular Gram matrices. L is declared PSD with ``psd_wrap``: a Laplacian
is singular, which must not trip CVXPY's eigenvalue check.

Dual (the hinge) [000 §2.1]: ``max 1ᵀβ − ½βᵀQβ`` s.t. ``yᵀβ = 0`` (bias), ``0 ≤ β ≤ 1``,
``Q = Y J_L K M⁻¹ J_Lᵀ Y``, ``M = 2γ_A I + 2γ_I L K``, ``α = M⁻¹ J_Lᵀ Y β``. It holds for any
loss with the ``"piecewise_linear"`` capability, ``φ(m) = max(lo(1 − m), hi(1 − m))``, with the
box ``lo ≤ β ≤ hi`` of its ``conjugate_form`` (the hinge: ``[0, 1]``). The derivation drops b
from the intrinsic term, so it equals the primal only when ``L·1 = 0`` or there is no bias;
other cases are refused. b is recovered by minimizing the primal over b with α fixed.
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import scipy.sparse as sp

from ssl_opt.numerics.factor import psd_factor
from ssl_opt.problems.manifold.problem import LapSVM
from ssl_opt.reference.cvxpy_solver import Formulation

#: Eigenvalues of K below this fraction of the largest are dropped from its factor.
KERNEL_RTOL = 1e-13


def kernel_factor(K: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``K ≈ R Rᵀ`` with ``R = V √λ`` over eigenvalues ``λ > KERNEL_RTOL·λ_max``, and ``V/√λ``.

    J depends on α only through ``Kα = R h`` and ``αᵀKα = ‖h‖²`` with ``h = Rᵀα``, so the
    program over ``h`` is the same problem, well conditioned even when K is nearly singular
    (an RBF Gram matrix). Dropped directions change f by at most ``KERNEL_RTOL·‖K‖``.
    """
    R, lam = psd_factor(K, KERNEL_RTOL)
    if not lam.size:
        raise ValueError("K has no positive eigenvalue: the RKHS term is identically zero.")
    return R, R / lam


def build_primal(problem: LapSVM):
    l = problem.l
    R, to_alpha = kernel_factor(problem.K_dense)
    h = cp.Variable(R.shape[1], name="h")
    b = cp.Variable(name="b") if problem.bias else None
    f = R @ h + (b if b is not None else 0.0)
    margins = cp.multiply(problem.y, f[:l])
    objective = 0.5 * (
        cp.sum(problem.loss.cvxpy(margins))
        + problem.gamma_A * cp.sum_squares(h)
        + problem.gamma_I * cp.quad_form(f, cp.psd_wrap(_as_dense_or_csr(problem.L)))
    )
    return cp.Problem(cp.Minimize(objective)), (h, b, to_alpha)


def recover_primal(problem: LapSVM, handles) -> dict:
    h, b, to_alpha = handles
    return {
        "alpha": to_alpha @ np.asarray(h.value, dtype=float),
        "b": np.array(float(b.value) if b is not None else 0.0),
    }


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


def _as_dense_or_csr(L):
    return sp.csr_matrix(L) if sp.issparse(L) else np.asarray(L)


PRIMAL = Formulation(LapSVM, build_primal, recover_primal)
DUAL = Formulation(LapSVM, build_dual, recover_dual, missing=dual_missing,
                   requires={"loss": ("piecewise_linear",)})
