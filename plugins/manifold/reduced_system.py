"""The reduced Newton system of the manifold family [000 eqs. 10, 14].

With ``Λ = diag(½ φ''(m))`` on the labeled points (zero elsewhere), the Hessian of J factors as
``H = diag(1, K) · A`` with

    A = [[1ᵀΛ1 + γ_I 1ᵀL1,  1ᵀΛK + γ_I 1ᵀLK],
         [Λ1 + γ_I L1,       ΛK + γ_A I + γ_I LK]],

so a Newton step solves ``A Δ = −[∇_b; v]`` (v the preconditioned gradient) without the
factor K. A is dense and non-symmetric: O(n³) per factorization, as in the paper.
``γ_A I + γ_I LK`` is formed once (sparse L times dense K), and only the bias row and the l
labeled rows change with Λ. With ``A₁`` the matrix at ``Λ = I`` (the square loss's, the
LapRLS system of [000 eq. 14]), ``A(Λ) = A₁ + E_T R_T`` where T holds the bias row and the
labeled rows with ``λ_i ≠ 1``: with few labels (``l + 1 ≤ UPDATE_SHARE·(n + 1)``) A₁ is the one
factorization, and every other Λ is solved by the Woodbury identity

    A⁻¹ r = z − Z_T (I + R_T Z_T)⁻¹ R_T z,   z = A₁⁻¹ r,   Z = A₁⁻¹ E  (once, l + 1 columns),

at O(n² + |T|² n) per new Λ, refined against A's own products (O(n²)) until its normwise
backward error is at a factorization's level; an update that does not get there (b nearly
without curvature) and a Λ with no curvature on b at all (where A may be singular) are
factorized. With many labels each new Λ is factorized. Either way the last factors are kept:
a Newton step whose error set did not change costs O(n²), and where γ_A is small, so A is
ill-conditioned and a full step leaves the gradient above Newton's tolerance, the few
refining steps cost triangular solves. A solver may hand its system to the next
(``laprls-direct``'s ``keep_factorization``, :meth:`ReducedSystem.serves`): the c classes of a
one-vs-rest Newton then share one factorization.

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
#: A Λ ≠ I is a low-rank update of A₁ when the bias and labeled rows are at most this share
#: of A's rows; above it each new Λ is factorized.
UPDATE_SHARE = 0.25
#: Normwise backward error ``‖A x − r‖∞ / (‖A‖∞ ‖x‖∞ + ‖r‖∞)`` an updated solve must reach
#: (an LU factorization reaches ~1e-16), within this many refinement steps; else A is
#: factorized.
UPDATE_BACKWARD_ERROR = 1e-16
UPDATE_REFINEMENTS = 4


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
    """The reduced system of ``problem`` (a LapSVM or :class:`SystemData`), solved for any
    labeled curvature Λ; see the module docstring for what is factorized when."""

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
        #: Whether a Λ ≠ I is solved as a low-rank update of A₁ (few labeled rows).
        self.updates = problem.l + problem.bias <= UPDATE_SHARE * (problem.n + problem.bias)
        self._lu = None  # (key, LU factors) of the last A factorized
        self._unit_columns = None  # A₁⁻¹ E: its columns at the bias and labeled rows
        self._update = None  # (key, (rows T, R_T, LU of C) or None: factorize) of the last Λ
        self._base_rows = self._K_rows = None  # |base| and |K_L| row sums, for ‖A‖∞

    @property
    def factorizations(self) -> int:
        """LU factorizations of the full A so far (instrumentation)."""
        return self._count

    def serves(self, problem) -> bool:
        """Whether this is ``problem``'s system too: the same K and L objects, γs, labeled
        points and bias (A depends on neither the labels nor the loss)."""
        p = self.problem
        return (getattr(p, "K", None) is getattr(problem, "K", self) and problem.L is p.L
                and (problem.gamma_A, problem.gamma_I, problem.l, problem.bias)
                == (p.gamma_A, p.gamma_I, p.l, p.bias))

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
        one factorization serves every column, e.g. the c one-vs-rest LapRLS problems, whose
        system depends on which points are labeled but not on their labels."""
        lam = np.asarray(lam, dtype=np.float64)
        rhs = rhs_alpha if not self.problem.bias else np.vstack([rhs_b[None, :], rhs_alpha])
        sol = None
        # Without labeled curvature on b A may be singular: its factorization says so.
        b_curved = not self.problem.bias or lam.sum() + ridge_b > 0
        if self.updates and b_curved and (ridge_b or np.any(lam != 1.0)):
            sol = self._updated_solve(lam, float(ridge_b), rhs)
        if sol is None:
            sol = sla.lu_solve(self._factors(lam, float(ridge_b)), rhs, check_finite=False)
        if not self.problem.bias:
            return sol, np.zeros(rhs.shape[1])
        return sol[1:], sol[0]

    def _factors(self, lam: np.ndarray, ridge_b: float):
        """The LU factors of A for ``lam``, kept for the next solve with the same one."""
        key = (lam.tobytes(), ridge_b)
        if self._lu is None or self._lu[0] != key:
            self._lu = None  # the old factors go before the new A is formed
            with warnings.catch_warnings():  # a singular A raises below, as sla.solve does
                warnings.simplefilter("ignore", sla.LinAlgWarning)
                factors = sla.lu_factor(self._matrix(lam, ridge_b), overwrite_a=True,
                                        check_finite=False)
            self._count += 1
            if not np.all(np.diagonal(factors[0])):
                raise np.linalg.LinAlgError("the reduced Newton system is singular")
            self._lu = (key, factors)
        return self._lu[1]

    def _updated_solve(self, lam: np.ndarray, ridge_b: float, rhs: np.ndarray):
        """``A⁻¹ rhs`` by the Woodbury identity on ``A = A₁ + E_T R_T``, refined against A's
        own products until its normwise backward error is at a factorization's level; None
        when it does not get there (then A is factorized, and so is every later solve with
        this Λ)."""
        key = (lam.tobytes(), ridge_b)
        if self._update is None or self._update[0] != key:
            self._update = (key, None)
            rows, R = self._update_rows(lam, ridge_b)
            factors = self._factors(np.ones(self.problem.l), 0.0)  # A₁
            if self._unit_columns is None:
                N, m = rhs.shape[0], self.problem.l + self.problem.bias
                E = np.zeros((N, m))
                E[np.arange(m), np.arange(m)] = 1.0
                self._unit_columns = sla.lu_solve(factors, E, check_finite=False)
            C = R @ self._unit_columns[:, rows]
            C[np.diag_indices_from(C)] += 1.0
            c_factors = sla.lu_factor(C, check_finite=False)
            if not np.all(np.diagonal(c_factors[0])):
                return None
            self._update = (key, (rows, R, c_factors))
        if self._update[1] is None:
            return None
        rows, R, c_factors = self._update[1]
        factors = self._factors(np.ones(self.problem.l), 0.0)  # kept unless a fallback ran
        Z = self._unit_columns[:, rows]

        def woodbury(v):
            z = sla.lu_solve(factors, v, check_finite=False)
            return z - Z @ sla.lu_solve(c_factors, R @ z, check_finite=False)

        x = woodbury(rhs)
        scale = self._norm_estimate(lam, ridge_b)
        for _ in range(UPDATE_REFINEMENTS + 1):
            r = rhs - self._product(lam, ridge_b, x)
            error = np.abs(r).max(axis=0) / (scale * np.abs(x).max(axis=0)
                                              + np.abs(rhs).max(axis=0))
            if np.all(error <= UPDATE_BACKWARD_ERROR):
                return x
            x = x + woodbury(r)
        self._update = (key, None)
        return None

    def _update_rows(self, lam: np.ndarray, ridge_b: float) -> tuple[np.ndarray, np.ndarray]:
        """``(T, R_T)`` with ``A(Λ) = A₁ + E_T R_T``: the rows of A that differ from A₁'s (the
        bias row and the labeled rows with ``λ_i ≠ 1``) and by how much."""
        delta = lam - 1.0
        changed = np.flatnonzero(delta)
        G = self.K[changed]
        if not self.problem.bias:
            return changed, delta[changed, None] * G
        G = np.hstack([np.ones((changed.size, 1)), G])  # rows [1, K_i]: A's rows 1 + i
        R = np.empty((changed.size + 1, G.shape[1]))
        R[0] = delta[changed] @ G
        R[0, 0] += ridge_b
        R[1:] = delta[changed, None] * G
        return np.r_[0, changed + 1], R

    def _product(self, lam: np.ndarray, ridge_b: float, X: np.ndarray) -> np.ndarray:
        """``A X`` for the labeled curvature ``lam`` without forming A: O(n²) per column."""
        p, l = self.problem, self.problem.l
        if not p.bias:
            out = self.base @ X
            out[:l] += lam[:, None] * (self.K[:l] @ X)
            return out
        Xb, Xa = X[:1], X[1:]
        KXa = self.K[:l] @ Xa
        out = np.empty_like(X)
        out[1:] = self.base @ Xa + self.col_b[:, None] * Xb
        out[1 : l + 1] += lam[:, None] * (KXa + Xb)
        out[0] = lam @ KXa + self.row_b @ Xa + (lam.sum() + self.corner + ridge_b) * Xb[0]
        return out

    def _norm_estimate(self, lam: np.ndarray, ridge_b: float) -> float:
        """``max_i Σ_j |A_ij|`` (the ∞-norm of A) bounded above from its parts, O(n²) once
        per system (the base's row sums are cached)."""
        if self._base_rows is None:
            self._base_rows = np.abs(self.base).sum(axis=1)
            self._K_rows = np.abs(self.K[: self.problem.l]).sum(axis=1)
        rows = self._base_rows.copy()
        rows[: self.problem.l] += np.abs(lam) * self._K_rows
        if not self.problem.bias:
            return float(rows.max())
        rows += np.abs(self.col_b)
        rows[: self.problem.l] += np.abs(lam)
        first = (abs(lam.sum() + self.corner + ridge_b) + np.abs(lam) @ self._K_rows
                 + np.abs(self.row_b).sum())
        return float(max(rows.max(), first))

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
