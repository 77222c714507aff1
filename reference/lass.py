"""Exact CVXPY program for LASS [002 eq. 1], docs/design.md §4.3.

``λ tr(ZᵀLZ) = λ‖BᵀZ‖²_F`` with the weighted incidence matrix ``B`` (one column
``√w_ij (e_i − e_j)`` per edge, so ``L = BBᵀ``): a sum of squares over all K columns at once,
no loop over categories and no PSD check of L. The multipliers come from the constraints' dual
values, mapped to the KKT convention of :class:`~ssl_opt.problems.LASS`
(``2λLZ − G − ν1ᵀ − Ψ = 0``). OSQP at tight tolerances is the cross-check
(``cvxpy_solver="OSQP"``).
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import scipy.sparse as sp

from ssl_opt.builders.laplacian import incidence_matrix
from ssl_opt.problems.lass.problem import LASS
from ssl_opt.reference.cvxpy_solver import Formulation


def incidence_factor(W: sp.csr_matrix) -> sp.csr_matrix:
    """``B`` (N × edges) with ``B Bᵀ = D − W``."""
    upper = sp.triu(W, k=1).tocoo()
    return incidence_matrix(upper.row, upper.col, W.shape[0], np.sqrt(upper.data)).T.tocsr()


def build(problem: LASS):
    Z = cp.Variable((problem.N, problem.K), name="Z")
    B = incidence_factor(problem.W)
    smooth = cp.sum_squares(B.T @ Z) if B.shape[1] else 0.0
    objective = problem.lam * smooth - cp.sum(cp.multiply(problem.G, Z))
    row_sums = cp.sum(Z, axis=1) == 1
    nonneg = Z >= 0
    return cp.Problem(cp.Minimize(objective), [row_sums, nonneg]), (Z, row_sums, nonneg)


def recover(problem: LASS, handles) -> dict:
    Z, row_sums, nonneg = handles
    # CVXPY's Lagrangian is f + ν_cvx(Z1 − 1) − Ψ∘Z, so ν = −ν_cvx in the KKT convention.
    return {
        "Z": np.asarray(Z.value, dtype=float),
        "nu": -np.asarray(row_sums.dual_value, dtype=float).reshape(problem.N),
        "Psi": np.asarray(nonneg.dual_value, dtype=float).reshape(problem.N, problem.K),
    }


PRIMAL = Formulation(LASS, build, recover)
