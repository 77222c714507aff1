r"""Polish of an IRLS iterate of a sum of *scalar* norms on its identified kink set.

For ``φ(x) = ½xᵀQx + cᵀx + Σ_i w_i |G_i x − h_i|`` (:class:`~ssl_opt.problems.SumOfNorms`
with group size 1: ℓ1 fits, graph total variation, fused lasso), IRLS finds the zero set
``Z = {i : |g_i(x)| ≤ τ}`` and the signs ``s_i`` of the other groups long before its iterate
is accurate: near δ → 0 its systems carry weights ~1/√δ and their round-off caps the accuracy
of x at ~1e-6 (measured on grid TV, where Clarabel's own point is no better). With Z and s
fixed, φ is a quadratic on the affine set ``G_Z x = h_Z``, so one linear solve gives its
minimizer::

    [Q      G_Zᵀ] [x]   [−c − G_Nᵀ(w_N ∘ s_N)]
    [G_Z     0  ] [ν] = [h_Z                 ]

and the multipliers of the zero groups are ``u_Z = ν / w_Z`` (stationarity
``Qx + c + Σ_i w_i u_i G_iᵀ = 0``). The system is solved as the quasi-definite
``[Q + εI, G_Zᵀ; G_Z, −εI]`` (ε relative to the largest entry; G_Z may be rank deficient, as
on the cycles of a grid) with QDLDL, then refined on the exact system. The caller certifies
the result with the problem's own certificate; a wrong Z or s simply fails it.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ssl_opt.exceptions import InvalidInputError
from ssl_opt.numerics.ldl import PatternLDL

#: Regularization of the quasi-definite system, relative to the largest |entry| of Q and G.
EPS = 1e-10
#: Refinement steps on the exact system.
REFINE = 3
#: Solves at most, each after moving the groups whose sign flipped into the zero set.
ROUNDS = 5


def polish_scalar_groups(problem, signs: np.ndarray, tau: float):
    """``(x_p, U_p)``: the minimizer of φ on the kink set ``signs == 0`` with the other groups'
    signs fixed, and its multipliers (m, 1), or None when the system cannot be solved. A group
    whose value falls below ``−tau`` against its sign at the minimizer joins the zero set and
    the solve is repeated (at most :data:`ROUNDS` times)."""
    zero = signs == 0
    signs = signs.astype(np.float64)  # the caller's array is left as it is
    for _ in range(ROUNDS):
        out = _solve_on_kink_set(problem, zero, signs)
        if out is None:
            return None
        x_p, U = out
        crossed = ~zero & (signs * (problem.G @ x_p - problem.h) < -tau)
        if not crossed.any():
            break
        zero |= crossed
        signs[crossed] = 0.0
    return x_p, U


def _solve_on_kink_set(problem, zero: np.ndarray, signs: np.ndarray):
    """The minimizer of φ on ``{G_Z x = h_Z}`` with the signs of the other groups fixed, and
    the multipliers (module docstring)."""
    G, h, w, Q = problem.G, problem.h, problem.w, problem.Q
    n, z = problem.n, int(zero.sum())
    GZ = G[zero]
    rhs_x = -problem.c - G.T @ (w * signs)
    scale = max(float(np.abs(Q.data).max(initial=0.0)), float(np.abs(G.data).max(initial=0.0)),
                1.0)
    eps = EPS * scale
    exact = sp.bmat([[Q, GZ.T], [GZ, None]], format="csc")
    regular = exact + sp.diags(np.concatenate([np.full(n, eps), np.full(z, -eps)]))
    rhs = np.concatenate([rhs_x, h[zero]])
    try:
        ldl = PatternLDL().factor(regular)
    except InvalidInputError:
        return None
    sol = ldl.solve(rhs)
    for _ in range(REFINE):
        sol = sol + ldl.solve(rhs - exact @ sol)
    if not np.all(np.isfinite(sol)):
        return None
    U = signs.copy()
    U[zero] = sol[n:] / np.where(w[zero] > 0, w[zero], 1.0)
    return sol[:n], U[:, None]
