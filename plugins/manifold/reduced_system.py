"""The reduced Newton system of the manifold family [000 eqs. 10, 14].

With ``Λ = diag(½ φ''(m))`` on the labeled points (zero elsewhere), the Hessian of J factors as
``H = diag(1, K) · A`` with

    A = [[1ᵀΛ1 + γ_I 1ᵀL1,  1ᵀΛK + γ_I 1ᵀLK],
         [Λ1 + γ_I L1,       ΛK + γ_A I + γ_I LK]],

so a Newton step solves ``A Δ = −[∇_b; v]`` (v the preconditioned gradient) without the
factor K. A is dense and non-symmetric: O(n³) per factorization, as in the paper.
``γ_A I + γ_I LK`` is formed once (sparse L times dense K); only the l labeled rows change with
Λ, and the LU factors of A are kept for the next solve with the same Λ: a Newton step whose
error set did not change (and every step on the square loss, whose Λ is constant) costs
O(n²). Where γ_A is small A is ill-conditioned, a full step leaves the gradient above Newton's
tolerance, and Newton takes a few such steps (4–7 on two moons at n = 2,000, γ_A ≤ 1e-4): each
refines the last at the cost of a triangular solve, not a new factorization.

It needs K dense (``problem.K_dense``): a products-only kernel operator is densified, and
refused by the solvers built on it (:func:`dense_kernel_refusal`) when that does not fit.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

#: Fill of L above which ``L @ K`` is computed as a dense matrix product.
DENSE_GEMM_FILL = 0.05
#: n×n matrices the reduced system holds at once: K, ``γ_A I + γ_I LK`` and A (its copy).
DENSE_MATRICES = 3


def dense_kernel_refusal(problem, solver: str) -> list[str]:
    """Why ``solver`` (built on :class:`ReducedSystem`) refuses ``problem``: its K is a
    products-only operator, not yet densified, and the ``DENSE_MATRICES`` n×n float64 matrices
    (``24n²`` bytes) exceed the memory the OS reports available. Empty otherwise."""
    from ssl_opt.selection.measure import available_memory

    if not getattr(problem, "kernel_is_operator", False) or "K_dense" in vars(problem):
        return []
    need, free = DENSE_MATRICES * 8.0 * problem.n**2, available_memory()
    if need <= free:
        return []
    return [f"K as a dense matrix: K is a products-only operator and {solver!r} forms K and "
            f"the n×n reduced system ({need / 2**30:.3g} GiB at n = {problem.n}, "
            f"{free / 2**30:.3g} GiB available); use 'pcg', which needs only products with K"]


class ReducedSystem:
    def __init__(self, problem):
        self.problem = problem
        self._count = 0
        K = problem.K_dense
        self.K = K
        L = problem.L
        if sp.issparse(L) and L.nnz > DENSE_GEMM_FILL * problem.n**2:
            L = L.toarray()  # a dense GEMM beats sparse-times-dense well below full density
        LK = np.asarray(L @ K)
        self.base = problem.gamma_I * LK
        self.base[np.diag_indices_from(self.base)] += problem.gamma_A
        if problem.bias:
            L1 = problem.L_dot(np.ones(problem.n))
            self.col_b = problem.gamma_I * L1  # γ_I L1
            self.row_b = problem.gamma_I * LK.sum(axis=0)  # γ_I 1ᵀLK (L symmetric)
            self.corner = problem.gamma_I * L1.sum()
        self._factors = None  # ((Λ's bytes, ridge), LU factors of A) of the last solve

    @property
    def factorizations(self) -> int:
        """LU factorizations of A so far (instrumentation)."""
        return self._count

    def solve(self, lam: np.ndarray, rhs_alpha: np.ndarray, rhs_b: float, ridge_b: float = 0.0):
        """Solve ``A [Δb; Δα] = [rhs_b; rhs_alpha]`` for the labeled curvature ``lam`` (l,).

        ``ridge_b`` adds curvature to the bias only (Levenberg–Marquardt on b): the α block
        ``γ_A I + (Λ + γ_I L)K`` is always invertible, so A is singular only when J is flat
        along a direction that moves b.
        """
        sol_alpha, sol_b = self.solve_many(lam, rhs_alpha[:, None], np.atleast_1d(rhs_b),
                                           ridge_b)
        return sol_alpha[:, 0], float(sol_b[0])

    def solve_many(self, lam: np.ndarray, rhs_alpha: np.ndarray, rhs_b: np.ndarray,
                   ridge_b: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`solve` for c right-hand sides at once (``rhs_alpha`` (n, c), ``rhs_b`` (c,)):
        one LU of A serves every column, e.g. the c one-vs-rest LapRLS problems, whose system
        depends on which points are labeled but not on their labels."""
        key = (np.asarray(lam, dtype=np.float64).tobytes(), float(ridge_b))
        if self._factors is None or self._factors[0] != key:
            self._factors = None  # the old factors go before the new A is formed
            with warnings.catch_warnings():  # a singular A raises below, as sla.solve does
                warnings.simplefilter("ignore", sla.LinAlgWarning)
                factors = sla.lu_factor(self._matrix(lam, ridge_b), overwrite_a=True,
                                        check_finite=False)
            self._count += 1
            if not np.all(np.diagonal(factors[0])):
                raise np.linalg.LinAlgError("the reduced Newton system is singular")
            self._factors = (key, factors)
        factors = self._factors[1]
        if not self.problem.bias:
            sol = sla.lu_solve(factors, rhs_alpha, check_finite=False)
            return sol, np.zeros(rhs_alpha.shape[1])
        sol = sla.lu_solve(factors, np.vstack([rhs_b[None, :], rhs_alpha]), check_finite=False)
        return sol[1:], sol[0]

    def _matrix(self, lam: np.ndarray, ridge_b: float) -> np.ndarray:
        """A for the labeled curvature ``lam`` (the α block alone without a bias)."""
        p, l = self.problem, self.problem.l
        A_aa = self.base.copy()
        A_aa[:l] += lam[:, None] * self.K[:l]
        if not p.bias:
            return A_aa
        n = p.n
        A = np.empty((n + 1, n + 1))
        A[1:, 1:] = A_aa
        del A_aa
        A[0, 0] = lam.sum() + self.corner + ridge_b
        A[0, 1:] = lam @ self.K[:l] + self.row_b
        A[1:, 0] = self.col_b
        A[1 : l + 1, 0] += lam
        return A


@dataclass(frozen=True, eq=False)
class SystemData:
    """What :class:`ReducedSystem` reads of a problem, without a :class:`LapSVM`: a dense K
    (n×n), L (an array, a sparse matrix or a products-only operator), ``γ_A > 0``, ``γ_I``, the
    number ``l`` of labeled points (the first l) and whether there is a bias. The system does
    not depend on the labels, so this is all a multi-output LapRLS with real-valued targets
    needs (:func:`~ssl_opt.plugins.manifold.laprls_direct.solve_targets`)."""

    K_dense: np.ndarray
    L: object
    gamma_A: float
    gamma_I: float
    l: int
    bias: bool

    @property
    def n(self) -> int:
        return self.K_dense.shape[0]

    def L_dot(self, v: np.ndarray) -> np.ndarray:
        return np.asarray(self.L @ v, dtype=np.float64)
