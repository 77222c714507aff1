r"""The weighted least-squares step of IRLS [004 eq. 15] for sums of norms and ERE.

Given IRLS weights ``s_i`` (one per group; :mod:`ssl_opt.plugins.ere.irls` computes
``s_i = 1/(2√(‖g_i‖² + δ))`` [004 eq. 13]) a step returns ::

    z⁺ = argmin_z f(z) + Σ_i w_i s_i ‖g_i(z)‖²

in the problem's flat variable z (its :attr:`groups`, :class:`~ssl_opt.problems.ere.groups.
GroupOperator`). Each step object counts what it did (``kind``, ``cg_iterations``,
``factor_fill``, ``predicted_fill``) for the solution's ``info``.

:class:`MatrixStep` — :class:`~ssl_opt.problems.SumOfNorms` with its explicit G:
``(Q + 2Gᵀ D G) z = −c + 2Gᵀ D h`` with ``D`` the weights ``w_i s_i`` repeated over each
group's rows, one LDLᵀ per step (:class:`~ssl_opt.numerics.ldl.PatternLDL`: the pattern of
``Q + 2GᵀDG`` does not change, so its analysis is done once).

:class:`EREStep` — ERE, structure exploited [004 eqs. 19–26]. With ``Â = A ∘ Ŝ`` (edge weights
``A_e s_e``), ``L̂ = D̂ − Â``, ``S = diag(s_points)``, ``Z = [X 1]``, ``Θ = [W; bᵀ]``, the step
minimizes ``tr(FᵀL̂F) + α tr((ZΘ − F)ᵀS(ZΘ − F)) + β‖W‖²`` with ``F_l = Y``; its normal
equations are::

    N F_u − U Θ = −L̂_ul Y,      K Θ = α Z_lᵀ S_l Y + Uᵀ F_u,
    N = L̂_uu + α S_u (sparse SPD),  U = α S_u Z_u (u×(d+1)),  K = α ZᵀSZ + β diag(1,…,1,0)

so ``M_uu F_u = −L̂_ul Y + U K⁻¹ α Z_lᵀ S_l Y`` with ``M_uu = N − U K⁻¹ Uᵀ`` [004 eq. 24–26]:
sparse + diagonal − rank (d+1), one matrix for all c columns. Never formed: either

* ``factor`` — LDLᵀ of N refactored in its fixed pattern
  (:class:`~ssl_opt.numerics.ldl.PatternLDL`, ordering and analysis once per solve) and the
  Woodbury identity ``M⁻¹ = N⁻¹ + N⁻¹U (K − UᵀN⁻¹U)⁻¹ UᵀN⁻¹`` (d+1+c solves), plus one step of
  iterative refinement with products by M (the capacitance matrix can lose digits when the
  weights span many orders of magnitude);
* ``cg`` — block Jacobi-PCG on M (sparse product, diagonal, two thin products with U and one
  (d+1)×(d+1) Cholesky solve), warm-started from the previous F_u, relative tolerance forced
  by the current residual (:func:`forcing_target`).

then ``Θ = K⁻¹(α Z_lᵀ S_l Y + Uᵀ F_u)``. ``linear_solver="auto"`` takes the path of the
smaller predicted step time (:meth:`EREStep.predicted_step_times`): the factor's numeric
refactorization (``Σ_j c_j²`` over L's column counts, measured for u ≤ 2,000, else predicted
from the fill of breadth-first balls, :func:`predicted_fill`) and its ``d + 1 + 2c`` solves,
against a typical number of block-PCG iterations of ``nnz(N)·c`` sparse and ``2u(d+1)c``
dense work (``benchmarks/bench_ere.py`` (b) forces each path at n = 1,000 and 2,000).
Squared ERE [004 eq. 8] is this step with ``s ≡ 1``.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp

from ssl_opt.exceptions import InvalidInputError
from ssl_opt.numerics.block_cg import block_cg_solve
from ssl_opt.numerics.factor import predicted_fill
from ssl_opt.numerics.ldl import PatternLDL
from ssl_opt.problems.ere.problem import ERE
from ssl_opt.problems.ere.sum_of_norms import SumOfNorms

#: ``linear_solver="auto"``: the factor's pattern is measured (LDLᵀ of N) up to u = 2,000,
#: predicted from breadth-first balls of these sizes above.
PROBE_SIZES = (1000, 2000)
#: Predicted seconds of one IRLS step (:meth:`EREStep.predicted_step_times`), fitted on this
#: machine's steps (n = 300–4,000, d = 5–50, c = 2–10; 2-core x86, one BLAS thread, within
#: ±35 %): the factor path refactors N (``REFACTOR_S`` per ``Σ c_j²`` of L's column counts)
#: and solves ``d + 1 + 2c`` right-hand sides (``SOLVE_CALL_S`` + ``SOLVE_S`` per entry of
#: L each); the CG path runs ``CG_STEPS_GUESS`` block-PCG iterations (the measured typical
#: count, 22–30 per step) of ``CG_CALL_S`` + ``CG_SPARSE_S``·nnz(N)·c +
#: ``CG_DENSE_S``·2u(d+1)c each.
REFACTOR_S = 0.45e-9
SOLVE_CALL_S, SOLVE_S = 20e-6, 2e-9
CG_STEPS_GUESS = 28
CG_CALL_S, CG_SPARSE_S, CG_DENSE_S = 60e-6, 1.5e-9, 0.15e-9
#: ``Σ c_j² ≈ FILL_SPREAD·fill²/u`` when the fill is predicted (the column counts of L are
#: uneven: 1.6–1.75 on the kNN graphs measured).
FILL_SPREAD = 1.7
#: Block PCG iterations per IRLS step at most.
CG_MAX_ITER = 2000
#: Each block-PCG solve reduces the residual of its warm start at least by this factor.
CG_REDUCTION = 0.05


def forcing_target(rtol: float):
    """Block-PCG stopping target of an IRLS step (Euclidean column norms): column j stops at
    ``‖b − Mx‖ ≤ max(1e-13‖b‖, min(rtol‖b‖, CG_REDUCTION·‖r₀‖))``, the forcing term of an
    inexact Newton method, and at least a fixed reduction of the warm start's residual so
    that every IRLS step moves."""
    def target(b_norms: np.ndarray, r0_norms: np.ndarray) -> np.ndarray:
        bn = np.maximum(b_norms, 1e-300)
        return np.maximum(1e-13 * bn, np.minimum(rtol * bn, CG_REDUCTION * r0_norms))
    return target


def weighted_ls_step(problem: ERE | SumOfNorms, linear_solver: str) -> EREStep | MatrixStep:
    """The step for ``problem``: structured for ERE (``linear_solver`` 'auto', 'factor' or
    'cg'), one sparse factorization per step for a :class:`SumOfNorms`."""
    if isinstance(problem, ERE):
        return EREStep(problem, linear_solver)
    return MatrixStep(problem)


class EREStep:
    """The structured ERE step (module docstring), robust (IRLS weights) or squared (s ≡ 1)."""

    def __init__(self, problem: ERE, linear_solver: str):
        p = self.problem = problem
        l, u = p.l, p.u
        ei, ej = p.edge_i, p.edge_j  # i < j, so a labeled end is always ei
        self.uu = np.flatnonzero(ei >= l)
        self.ul = np.flatnonzero((ei < l) & (ej >= l))
        # A sparse X stays sparse unless it is more than 30 % full.
        if sp.issparse(p.X) and p.X.nnz > 0.3 * p.n * p.d:
            self.X = p.X.toarray()
        else:
            self.X = p.X
        self.Xl, self.Xu = self.X[:l], self.X[l:]
        # Fixed patterns of N = L̂_uu + αS_u, entries [uu edges (i < j); diagonal]: all of it
        # in CSR for products, its upper triangle in CSC for the LDLᵀ factor.
        iu, ju, diag = ei[self.uu] - l, ej[self.uu] - l, np.arange(u)
        self._N, self._perm = _pattern(sp.csr_matrix, np.concatenate([iu, ju, diag]),
                                       np.concatenate([ju, iu, diag]), u)
        self._upper_pattern, self._perm_upper = _pattern(
            sp.csc_matrix, np.concatenate([iu, diag]), np.concatenate([ju, diag]), u)
        self._ldl = PatternLDL()
        self.predicted_fill = None
        self.kind = self._choose(linear_solver)
        self.cg_iterations = 0
        self.factor_fill = None

    def _choose(self, linear_solver: str) -> str:
        """``auto``: the path of the smaller :meth:`predicted_step_times`."""
        if linear_solver != "auto":
            return linear_solver
        if self.problem.u == 0:
            return "factor"
        times = self.predicted_step_times()
        return "factor" if times["factor"] <= times["cg"] else "cg"

    def predicted_step_times(self) -> dict[str, float]:
        """Predicted seconds of one step by each path (the constants above); sets
        ``predicted_fill``."""
        p = self.problem
        N, entries = self._assemble(np.ones(p.n_edges), np.ones(p.n))
        if p.u <= PROBE_SIZES[1]:
            ldl = self._ldl.factor_upper(self._upper(entries))
            fill, work = float(ldl.fill), float(ldl.refactor_work)
        else:
            fill = predicted_fill(N, PROBE_SIZES)
            work = FILL_SPREAD * fill**2 / p.u
        self.predicted_fill = fill
        cols = p.d + 1 + 2 * p.c
        factor = REFACTOR_S * work + cols * (SOLVE_CALL_S + SOLVE_S * fill)
        per_cg = (CG_CALL_S + CG_SPARSE_S * N.nnz * p.c
                  + CG_DENSE_S * 2 * p.u * (p.d + 1) * p.c)
        return {"factor": factor, "cg": CG_STEPS_GUESS * per_cg}

    def _assemble(self, s_edges: np.ndarray, s_points: np.ndarray) -> tuple[sp.csr_matrix,
                                                                             np.ndarray]:
        """``N = L̂_uu + α S_u`` in its fixed CSR pattern, and its entries in the order
        [uu edges; diagonal] (:meth:`_upper` places them in the upper triangle)."""
        p, l = self.problem, self.problem.l
        a = p.edge_w * s_edges
        deg = (np.bincount(p.edge_i, a, p.n) + np.bincount(p.edge_j, a, p.n))[l:]
        off, diag = -a[self.uu], deg + p.alpha * s_points[l:]
        N = self._N.copy()
        N.data = np.concatenate([off, off, diag])[self._perm]
        return N, np.concatenate([off, diag])

    def _upper(self, entries: np.ndarray) -> sp.csc_matrix:
        """The upper triangle of N in its fixed CSC pattern, from :meth:`_assemble`'s entries
        (built only for the factor path)."""
        upper = self._upper_pattern.copy()
        upper.data = entries[self._perm_upper]
        return upper

    def __call__(self, z: np.ndarray | None, s: np.ndarray, rtol: float) -> np.ndarray:
        """argmin of ``tr(FᵀL̂F) + α Σ s_i‖r_i‖² + β‖W‖²`` with ``F_l = Y`` (module doc), from
        ``z`` (the CG warm start; None: zero) with ``s`` = [edge weights; point weights]."""
        p = self.problem
        l, u, d, c = p.l, p.u, p.d, p.c
        alpha = p.alpha
        s_e, s_p = s[: p.n_edges], s[p.n_edges:]
        s_l, s_u = s_p[:l], s_p[l:]
        # K = α ZᵀSZ + β diag(1..1, 0);  P = α Z_lᵀ S_l Y.
        X = self.X
        sX = X.multiply(s_p[:, None]) if sp.issparse(X) else X * s_p[:, None]
        K = np.empty((d + 1, d + 1))
        XtSX = X.T @ sX
        K[:d, :d] = alpha * (XtSX.toarray() if sp.issparse(XtSX) else XtSX)
        K[:d, :d][np.diag_indices(d)] += p.beta
        K[:d, d] = K[d, :d] = alpha * np.asarray(sX.sum(axis=0)).ravel()
        K[d, d] = alpha * s_p.sum()
        sY = s_l[:, None] * p.Y
        P = alpha * np.vstack([np.asarray(self.Xl.T @ sY), sY.sum(axis=0)[None, :]])
        Kc = la.cho_factor(K, lower=True, check_finite=False)
        if u == 0:
            Theta = la.cho_solve(Kc, P, check_finite=False)
            return np.concatenate([Theta[:d].ravel(), Theta[d]])
        a = p.edge_w * s_e
        ul = self.ul
        Lul_Y = sp.csr_matrix((a[ul], (p.edge_j[ul] - l, p.edge_i[ul])), shape=(u, l)) @ p.Y
        N, entries = self._assemble(s_e, s_p)
        Xu = self.Xu
        Xu_d = Xu.toarray() if sp.issparse(Xu) else Xu
        U = alpha * s_u[:, None] * np.hstack([Xu_d, np.ones((u, 1))])
        rhs = np.asarray(Lul_Y) + U @ la.cho_solve(Kc, P, check_finite=False)

        def matvec(V):
            return N @ V - U @ la.cho_solve(Kc, U.T @ V, check_finite=False)

        if self.kind == "factor":
            fac = self._ldl.factor_upper(self._upper(entries))
            self.factor_fill = fac.fill
            NU = fac.solve(U)
            C = K - U.T @ NU
            Cc = la.cho_factor(0.5 * (C + C.T), lower=True, check_finite=False)

            def minv(V):
                NV = fac.solve(V)
                return NV + NU @ la.cho_solve(Cc, U.T @ NV, check_finite=False)

            Fu = minv(rhs)
            Fu += minv(rhs - matvec(Fu))  # one step of iterative refinement
        else:
            KiU = la.cho_solve(Kc, U.T, check_finite=False)
            diag = N.diagonal() - np.einsum("ij,ji->i", U, KiU)
            X0 = p.vector_blocks(z)[0] if z is not None else np.zeros((u, c))
            Fu, its = block_cg_solve(matvec, rhs, 1.0 / diag, forcing_target(rtol), X0=X0,
                                     norm="2", max_iter=CG_MAX_ITER)
            self.cg_iterations += its
        Theta = la.cho_solve(Kc, P + U.T @ Fu, check_finite=False)
        return np.concatenate([Fu.ravel(), Theta[:d].ravel(), Theta[d]])


def _pattern(fmt, rows: np.ndarray, cols: np.ndarray, size: int):
    """A ``fmt`` (``sp.csr_matrix`` or ``sp.csc_matrix``) pattern of the entries
    ``(rows[k], cols[k])`` (no duplicates) and the permutation ``perm`` such that
    ``pattern.data = values[perm]`` places ``values[k]`` at entry k."""
    pattern = fmt((np.arange(rows.size, dtype=np.float64) + 1.0, (rows, cols)),
                  shape=(size, size))
    pattern.sort_indices()
    return pattern, pattern.data.astype(np.int64) - 1


class MatrixStep:
    """The :class:`SumOfNorms` step (module docstring): one LDLᵀ of ``Q + 2GᵀDG`` per step,
    its pattern analysed once."""

    kind = "factor"

    def __init__(self, problem: SumOfNorms):
        self.problem = problem
        self.G = problem.G.tocsr()
        self.GT = sp.csr_matrix(problem.G.T)
        self.cg_iterations = 0
        self.factor_fill = None
        self.predicted_fill = None
        self._ldl = PatternLDL()

    def __call__(self, z: np.ndarray | None, s: np.ndarray, rtol: float) -> np.ndarray:
        """``(Q + 2GᵀDG)⁻¹(−c + 2GᵀDh)``, ``D = w_i s_i`` per row (``z`` and ``rtol`` unused:
        the solve is direct)."""
        p = self.problem
        dw = np.repeat(2.0 * p.w * s, p.k)
        H = p.Q + self.GT @ sp.diags(dw) @ self.G
        rhs = -p.c + self.GT @ (dw * p.h)
        try:
            fac = self._ldl.factor(H)
            fac.check_positive()
            z_new = fac.solve(rhs)
        except InvalidInputError as exc:  # singular or indefinite
            z_new, fac = np.full_like(rhs, np.nan), None
            reason = str(exc)
        else:
            reason = "non-finite solution"
        if fac is None or not np.all(np.isfinite(z_new)):
            raise InvalidInputError(
                f"the IRLS system Q + 2GᵀDG is singular ({reason}): f(x) + Σ w_i‖g_i(x)‖ has "
                "no unique minimizer along some direction; make Q positive definite on the "
                "null space of G (e.g. add a small ridge) or give every variable a weighted "
                "group.")
        self.factor_fill = fac.fill
        return z_new
