r"""BCD for NPKL on the boundary kernel [003 §3.2, Alg. 1].

The problem is reduced to the constrained points (:class:`BoundaryReduction`, [003 Prop. 1])
and the boundary kernel factored as ``Z_BD = VᵀV``, ``V ∈ R^{r×l}`` [003 eq. 5]. Each column
``v_i`` is then updated exactly, Gauss–Seidel style. With ``a = Δ̃_ii``,
``b = Σ_{k≠i} Δ̃_ik v_k`` and ``A = [T_ij v_j]_{j∈T(i)}`` (r×k), half of Ω restricted to
``v_i`` is ``½a‖v‖² + bᵀv + (C/2) Σ_j ℓ(T_ij vᵀv_j)`` [003 eq. 6]. The loss's
``conjugate_form`` ``(κ, lo, hi)`` (``ℓ*(−g) = −g + κg²/2`` on ``lo ≤ g ≤ hi``, the
``"quadratic_conjugate"`` capability) gives its dual: ``v = (Aα − b)/a`` with α minimizing
``½αᵀ(AᵀA + (2aκ/C)I)α − αᵀ(Aᵀb + a1)`` over ``(C/2)lo ≤ α ≤ (C/2)hi``. So the minimizer is:

* no bounds (square loss, closed form [003 eq. 11]): with ``c = C/(2κ)``,
  ``(aI + c AAᵀ) v = c A1 − b``, which Sherman–Morrison–Woodbury turns into the k×k system
  ``(AᵀA + (a/c)I)α = Aᵀb + a1`` of the dual (k is the number of pairs of point i; one
  Cholesky solve);
* ``α ≥ 0`` with κ > 0 (squared hinge [003 eq. 10]): ``P = AᵀA + (a/C)I`` is positive
  definite (equivalently the non-negative least-squares problem
  ``min ‖[A; √(a/C) I]α − [b; √(aC) 1]‖``), one solve when every pair is active, else
  Lawson–Hanson's active-set method (:func:`nonneg_qp`);
* a box ``0 ≤ α ≤ (C/2)hi`` (hinge [003 eq. 9] with this package's ``ℓ = max(0, 1−t)``, the
  paper's being twice that: κ = 0 and ``α ≤ C/2``; the Huber hinge: κ = δ), solved exactly by
  a primal active-set method (:func:`box_qp`).

A smooth loss without a quadratic conjugate (the logistic loss; capabilities ``"derivative"``
and ``"second_derivative"``) is minimized over ``v`` directly by damped Newton
(:meth:`_Sweep._newton_update`): with ``t = Aᵀv``, the gradient is
``av + b + (C/2) Aℓ'(t)`` and the Hessian the r×r matrix ``aI + (C/2) A diag(ℓ''(t)) Aᵀ``
(positive definite: the subproblem is strictly convex since ``a > 0``), warm-started at the
current column, with Armijo backtracking, until the Newton step is below
``NEWTON_TOL·max(1, ‖v‖)``. Which update a loss gets is data (:data:`COLUMN_UPDATES`): the
dual one when it offers ``"quadratic_conjugate"`` with a supported form, else Newton when it
offers both derivatives.

The pair multiplier of the full problem is ``y_p = α_p^{(i)} + α_p^{(j)}`` (each end's dual),
which at a stationary point is ``−C ℓ'(t_p)`` (what smooth losses use directly). Columns are
processed in blocks: the block's products with ``Δ̃`` are one matrix product, and updates made
earlier in the block are added back exactly, so the iteration is the paper's Gauss–Seidel
sweep at BLAS-3 speed (:class:`_Sweep`). The square and squared hinge take the column dual
in a form with one k×k solve and no k×r sign-scaled copy (:meth:`_Sweep._quadratic_block`),
with ``1/a`` folded into the block products. When the block products are short the sweeps run
BLAS on one thread (:data:`ONE_THREAD_BELOW`). ``λ_min(G̃)`` for the certificate is one
eigenvalue (LAPACK ``syevr``), or Lanczos on ``Δ̃x`` from the sparse blocks of Δ and the
factor of ``Δ_UU`` above :data:`DENSE_EIG_MAX` points (:func:`reduced_gradient_min`).
The rank defaults to the largest ``s`` with ``s(s+1)/2 ≤ m`` [003 Prop. 3]. The start is
``V = U[0,1)^{r×l}/√r`` from a seeded generator (the paper uses MATLAB's ``rand(r, l)``).
Stopping: ``‖V⁺ − V‖_F ≤ tol·max(1, ‖V‖_F)`` (the paper's rule, relative) or ``max_iter``.
"""

from __future__ import annotations

import time
from contextlib import nullcontext

import numpy as np
import scipy.sparse as sp
from scipy.linalg import eigh
from scipy.linalg.lapack import dposv
from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh
from threadpoolctl import ThreadpoolController

from ssl_opt._validation import (
    as_float_array,
    check_bool,
    check_nonnegative,
    integer,
    optional,
)
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.hookspecs import hookimpl
from ssl_opt.numerics.anderson import SafeguardedAnderson
from ssl_opt.numerics.eigen import DENSE_EIG_MAX
from ssl_opt.numerics.small_qp import box_qp, nonneg_qp, spd_solve
from ssl_opt.problems.npkl.problem import NPKL
from ssl_opt.solution import MAX_ITERATIONS, OPTIMAL, STALLED, History, Solution
from ssl_opt.solvers import Option, Solver, capabilities_of

#: A converged V is reported optimal only if λ_min(G̃) ≥ −GLOBAL_TOL·max Δ̃_ii, where G̃ is the
#: reduced problem's gradient matrix: the Burer–Monteiro certificate that the fixed point of
#: the factored problem solves the SDP.
GLOBAL_TOL = 1e-6
#: Columns per block of the Gauss–Seidel sweep (the block's Δ̃ products are one GEMM).
BLOCK = 64
#: Below this many multiply-adds in a block's product ``Δ̃_blk U`` (BLOCK·l·r) the sweeps run
#: BLAS on one thread: the products are then too short for OpenBLAS's threads, which, when
#: another process holds a core, made a solve at l = 454 up to 20 times slower; above it two
#: threads were 10–60 % faster even under load (2 cores, docs/npkl.md).
ONE_THREAD_BELOW = 2_000_000
_BLAS: ThreadpoolController | None = None  # created at the first limited solve
#: The column updates, each with the loss capabilities it needs (the first one the loss offers
#: is used): the box-QP column dual [003 eqs. 9–11], and damped Newton on the column.
COLUMN_UPDATES: dict[str, tuple[str, ...]] = {
    "dual": ("quadratic_conjugate",),
    "newton": ("derivative", "second_derivative"),
}
#: Newton column update: stop when the step is at most NEWTON_TOL·max(1, ‖v‖) (that last step
#: is taken); at most NEWTON_MAX_ITER steps; Armijo constant and smallest backtracking step.
NEWTON_TOL = 1e-13
NEWTON_MAX_ITER = 50
#: A Newton step whose predicted decrease is below ROUNDOFF·max(1, |f|) is taken in full.
ROUNDOFF = 1e-15
ARMIJO = 1e-4
MIN_STEP = 1e-12


def _dual_form_supported(loss) -> bool:
    """The column dual is solved for ``α ≥ 0`` (any box ``[0, hi]``) or unconstrained α with
    κ > 0 (module docstring)."""
    kappa, lo, hi = loss.conjugate_form
    return lo == 0.0 or (lo == -np.inf and hi == np.inf and kappa > 0)


def _quadratic_dual(loss) -> bool:
    """Whether the column dual is a positive definite k×k QP over ``α ≥ 0`` or free α
    (κ > 0 and no upper bound: the square and squared hinge), solved by
    :meth:`_Sweep._quadratic_block`."""
    if "quadratic_conjugate" not in capabilities_of(loss) or not _dual_form_supported(loss):
        return False
    kappa, _, hi = loss.conjugate_form
    return kappa > 0 and hi == np.inf


def column_update(loss) -> str | None:
    """The name of the column update BCD uses for ``loss`` (a key of :data:`COLUMN_UPDATES`),
    or None when it offers none: ``"dual"`` for a supported quadratic conjugate, else
    ``"newton"`` when φ' and φ'' are offered."""
    offered = capabilities_of(loss)
    for name, needed in COLUMN_UPDATES.items():
        if all(c in offered for c in needed):
            if name == "dual" and not _dual_form_supported(loss):
                continue
            return name
    return None


def default_rank(m: int) -> int:
    """The largest ``s`` with ``s(s+1)/2 ≤ m`` [003 Prop. 3]."""
    s = int((np.sqrt(8.0 * m + 1.0) - 1.0) // 2)
    while (s + 1) * (s + 2) // 2 <= m:
        s += 1
    while s > 1 and s * (s + 1) // 2 > m:
        s -= 1
    return max(1, s)


class BCD(Solver):
    name = "bcd"
    complexity = {"npkl": (2.5, "O(r·l²) per sweep with rank r ~ √m ~ √l")}
    problem_types = (NPKL,)
    #: Every column update needs φ (Ω is measured each sweep); the update itself needs one of
    #: the capability sets of :data:`COLUMN_UPDATES` (:attr:`requires_one_of`).
    requires = {"loss": ("value",)}
    requires_one_of = {"loss": tuple(COLUMN_UPDATES.values())}
    tolerance_family = "iterative"
    description = ("Block coordinate descent on the factored boundary kernel Z_BD = VᵀV "
                   "[003 Alg. 1]: exact column updates (closed form or tiny dual QPs; damped "
                   "Newton on the column for other smooth losses).")
    options = {
        "rank": Option(None, "rank r of V; default from [003 Prop. 3]", optional(integer(1))),
        "tol": Option(1e-6, "stop when ‖V⁺ − V‖_F ≤ tol·max(1, ‖V‖_F)", check_nonnegative),
        "max_iter": Option(2000, "maximum number of sweeps over the columns", integer(1)),
        "seed": Option(0, "seed of the initial V", integer(0)),
        "warm_start": Option(None, "initial V (r×l), or a Solution / dict carrying 'V'"),
        "anderson": Option(5, "Anderson acceleration memory over sweeps (0: the paper's plain "
                              "iteration); a step is kept only if it does not raise Ω",
                           integer(0)),
        "verbose": Option(False, "print one line per 10 sweeps", check_bool),
    }

    def missing(self, problem) -> list[str]:
        """``requires``, then one of :attr:`requires_one_of`: a supported quadratic conjugate
        (the column dual) or φ' and φ'' (Newton on the column)."""
        reasons = super().missing(problem)
        if reasons or column_update(problem.loss) is not None:
            return reasons
        loss = problem.loss
        if "quadratic_conjugate" in capabilities_of(loss):
            reasons.append(
                f"a column dual on α ≥ 0 or unconstrained with κ > 0 (the conjugate_form "
                f"of {loss!r} is {loss.conjugate_form!r})")
            return reasons
        offered = capabilities_of(loss)
        options = " or ".join(
            f"{', '.join(needed)} (lacks {', '.join(c for c in needed if c not in offered)})"
            for needed in self.requires_one_of["loss"])
        reasons.append(f"a loss with {options} for the column update (this problem's loss "
                       f"{loss!r} offers neither)")
        return reasons

    def describe(self) -> dict:
        out = super().describe()
        out["requires_one_of"] = {k: [list(g) for g in v]
                                  for k, v in self.requires_one_of.items()}
        return out

    def inexact(self, problem) -> str:
        if not problem.loss.smooth:
            return ("BCD on a factored non-smooth problem (the hinge) stalls above the optimum "
                    "(status 'stalled', [003 Fig. 1])")
        return ""

    def predicted_time(self, problem) -> float:
        """About 30 sweeps (Anderson on) of one l×l GEMM pair plus a per-column Python constant,
        after the reduction's solves; the constants are fitted to the runs of
        ``benchmarks/bench_npkl.py`` (measured in docs/npkl.md)."""
        sizes = problem.structure.sizes
        n, l, nnz = sizes["n"], sizes["l"], sizes["nnz_Delta"]
        r = default_rank(sizes["m"])
        reduction = 1.6e-8 * l * nnz * (n - l) / max(n, 1)
        # Per column: Newton (a few r×r solves; the logistic loss at l ≈ 200) 6e-5 s, the
        # closed-form duals of the square and squared hinge 8e-6 s (l = 454, docs/npkl.md), the
        # hinge's box QPs 2.5e-5 s.
        update = column_update(problem.loss)
        per_column = (6e-5 if update == "newton" else
                      8e-6 if _quadratic_dual(problem.loss) else 2.5e-5)
        return 0.02 + reduction + 30 * (4e-11 * r * l * l + per_column * l)

    def _solve(self, problem: NPKL, rank, tol, max_iter, seed, warm_start, anderson,
               verbose) -> Solution:
        reduction = problem.boundary_reduction()
        reduced = reduction.reduced
        l = reduced.n
        r = default_rank(problem.m) if rank is None else rank
        V = _initial_V(warm_start, r, l, seed)
        r = V.shape[0]
        sweep = _Sweep(reduced)
        # Safeguarded on Ω, which then decreases monotonically as in plain BCD; a rejection
        # restarts the memory.
        aa = SafeguardedAnderson(V.size, anderson, clear_on_reject=True)
        with _blas_threads(BLOCK * l * r):
            V, status, it, history = _iterate(sweep, V, aa, tol, max_iter, verbose)
            y = sweep.pair_multipliers(V)
            g_min = reduced_gradient_min(reduced, y, reduction)
        if status == OPTIMAL and g_min < -GLOBAL_TOL * max(1.0, float(np.abs(sweep.diag).max())):
            # A fixed point of the factored problem that is not a minimizer of the SDP: the
            # hinge case of [003 Fig. 1]. Say so rather than report an optimum.
            status = STALLED
        Phi = reduction.lift_factor(V.T)
        x = {"Z": Phi @ Phi.T, "V": V, "Z_BD": V.T @ V, "Phi": Phi, "y": y}
        return Solution(x=x, objective=float("nan"), status=status, iterations=it, time=0.0,
                        backend=self.backend, solver=self.name, history=history,
                        info={"rank": r, "constrained_points": l, "reduced_gradient_min": g_min,
                              "anderson_accepted": aa.accepted,
                              "anderson_rejected": aa.rejected,
                              "reduced_objective": history.rows[-1]["objective"]})


def _iterate(sweep: _Sweep, V: np.ndarray, aa: SafeguardedAnderson, tol: float, max_iter: int,
             verbose: bool) -> tuple[np.ndarray, str, int, History]:
    """BCD's sweeps from ``V`` with the safeguarded Anderson step ``aa`` until
    ``‖sweep(x) − x‖_F ≤ tol·max(1, ‖x‖_F)`` or ``max_iter`` sweeps: ``(V, status, sweeps,
    history)``."""
    history = History()
    start = time.perf_counter()
    status = MAX_ITERATIONS
    it = 0

    def apply_sweep(x):
        """``(x, sweep(x), (Ω, stationarity) of sweep(x))``; every sweep is one iteration
        (a rejected extrapolation costs one)."""
        nonlocal it
        it += 1
        g = sweep.run(x)
        return x, g, sweep.measure(g)

    x, g, (objective, stationarity) = apply_sweep(V)
    aa.observe(x, g)
    while True:
        change = float(np.linalg.norm(aa.residual)) / max(1.0, float(np.linalg.norm(x)))
        history.append(iteration=it, objective=objective, change=change,
                       stationarity=stationarity, time=time.perf_counter() - start)
        if verbose and (it % 10 == 0 or it == 1):
            print(f"bcd {it:5d}  objective {objective:.10g}  change {change:.2e}  "
                  f"stationarity {stationarity:.2e}", flush=True)
        if change <= tol:
            status = OPTIMAL
            break
        if it >= max_iter:
            break
        step = aa.propose(apply_sweep, _not_above(objective))
        if step is None:
            step = apply_sweep(g)  # the plain sweep
        x, g, (objective, stationarity) = step
        aa.observe(x, g)
    return g, status, it, history


def _not_above(objective: float):
    """BCD's Anderson safeguard: an extrapolated ``(x, sweep(x), (Ω, ·))`` is taken when its
    Ω is at most ``objective``, the current point's."""
    return lambda step: step[2][0] <= objective


class _Sweep:
    """One Gauss–Seidel pass over the columns of V for the reduced problem.

    Square and squared hinge (:meth:`_quadratic_block`): per block of :data:`BLOCK` columns
    ``[s, e)``, ``B = Δ̃_{blk,<s} U_{<s} + Δ̃_{blk,≥e} U_{≥e}`` (two GEMMs on the columns
    outside the block, which do not move during it), then column i's
    ``b_i = B_i + Δ̃⁰_{i,blk} U_blk`` with ``Δ̃⁰`` the block's diagonal block with a zero
    diagonal: the columns before i in the block are the updated ones, those after it the old
    ones, as the Gauss–Seidel order needs. Other losses (:meth:`_generic_block`) keep the
    earlier order of operations; their half multipliers of column i (the box duals' warm
    starts, and the hinge's pair multipliers) are kept in ``alpha[ptr_i:ptr_{i+1}]`` (its
    pairs in the order of ``columns[i]``).
    """

    def __init__(self, reduced: NPKL):
        self.D = np.ascontiguousarray(reduced.Delta)
        self.diag = np.diag(self.D).copy()
        self.C = reduced.C
        self.loss = reduced.loss
        self.pairs, self.T = reduced.pairs, reduced.labels
        l, m = reduced.n, reduced.m
        ends = np.concatenate([self.pairs[:, 0], self.pairs[:, 1]])
        order = np.argsort(ends, kind="stable")
        other = np.concatenate([self.pairs[:, 1], self.pairs[:, 0]])[order]
        sign = np.concatenate([self.T, self.T])[order].astype(np.float64)
        self.order = order  # sorted position k holds the half multiplier of slot order[k]
        ptr = np.concatenate([[0], np.cumsum(np.bincount(ends, minlength=l))])
        self.alpha = np.zeros(2 * m)
        self.m = m
        # Per column i: the other ends of its pairs, their signs (k×1) and multiplier range.
        self.columns = [(other[lo:hi], sign[lo:hi, None], lo, hi)
                        for lo, hi in zip(ptr[:-1].tolist(), ptr[1:].tolist(), strict=True)]
        self.blocks = [(s, min(l, s + BLOCK)) for s in range(0, l, BLOCK)]
        self._pair_matrix = _PairMatrix(self.pairs, l)
        self._block = self._generic_block
        if column_update(self.loss) == "newton":
            self._update = self._newton_update
            return
        kappa, lo, hi = self.loss.conjugate_form
        # The column dual (module docstring): its curvature and bounds.
        self.unbounded = lo == -np.inf and hi == np.inf
        self.curvature = 2.0 * kappa  # times a/C, on the diagonal of P
        self.upper = self.C / 2.0 * hi
        self._update = self._box_update
        if _quadratic_dual(self.loss):  # square and squared hinge
            self._block = self._quadratic_block
            self.quadratic = [self._quadratic_data(i, *col)
                              for i, col in enumerate(self.columns)]
            self.inv_diag = 1.0 / self.diag
            # Per block: its diagonal block of Δ̃ with a zero diagonal, rows scaled by 1/a.
            self.hollow = [_hollow(self.D[s:e, s:e]) * self.inv_diag[s:e, None]
                           for s, e in self.blocks]

    def _quadratic_data(self, i: int, others, sign, lo: int, hi: int) -> tuple:
        """Column i's ``(others, signs, ε)`` for :meth:`_quadratic_block`, ``ε = 2κa/C``:
        scalars when it has one pair (``others`` an int), else arrays and ``εI_k``."""
        eps = self.curvature * float(self.diag[i]) / self.C
        if hi - lo == 1:
            return int(others[0]), float(sign[0, 0]), eps
        return others, sign[:, 0], eps * np.eye(hi - lo)

    def run(self, V0: np.ndarray) -> np.ndarray:
        """The sweep's image of ``V0`` (r×l; a new array). Works on ``U = Vᵀ`` (l×r, one
        contiguous row per column of V)."""
        U = np.array(V0.T, order="C")
        for start, end in self.blocks:
            self._block(U, start, end)
        return U.T

    def _generic_block(self, U: np.ndarray, start: int, end: int) -> None:
        """The columns of one block through :attr:`_update` (hinge-type box duals, Newton).
        ``B = Δ̃_blk U − diag(Δ̃_blk) U_blk`` with U as it was at ``start``, plus the moves of
        the columns already updated in the block. (The hinge's stalled runs drift with
        round-off over hundreds of sweeps; this order of operations keeps their iterates
        bit for bit those of the earlier code.)"""
        D, diag, update = self.D, self.diag, self._update
        old = U[start:end].copy()
        B = D[start:end] @ U - diag[start:end, None] * old
        moved = np.zeros_like(old)
        for i in range(start, end):
            c = i - start
            b = B[c]
            if c:
                b = b + D[i, start:i] @ moved[:c]
            U[i] = update(i, b, U)
            moved[c] = U[i] - old[c]

    def _quadratic_block(self, U: np.ndarray, start: int, end: int) -> None:
        r"""The columns of one block for a column dual with ``P ≻ 0`` and ``α`` free or
        ``α ≥ 0`` (square and squared hinge). With ``X = [v_j]_{j∈T(i)}`` (k×r), ``A = T_i X``,
        ``b' = b/a`` and ``β = T_i α/a``, the dual's normal equations ``(AAᵀ + εI)α = Ab + a1``
        read ``(XXᵀ + εI)β = Xb' + T_i`` and ``v = βᵀX − b'``: one k×k Cholesky solve (LAPACK
        ``dposv``; ``XXᵀ`` is symmetric, so its transpose is the Fortran array LAPACK
        overwrites in place), a scalar when k = 1. ``b'`` is ``B_i + Δ̃⁰_{i,blk} U_blk``
        (class docstring) with both terms' rows scaled by 1/a. For ``α ≥ 0`` (squared hinge)
        the solve is the answer when every ``α_p > 0`` (the usual case), else :func:`nonneg_qp`
        decides. The multipliers are not stored: smooth losses read them off ``ℓ'``."""
        D, hollow = self.D, self.hollow[start // BLOCK]
        B = D[start:end, :start] @ U[:start] + D[start:end, end:] @ U[end:]
        B *= self.inv_diag[start:end, None]
        U_blk, nonneg, take = U[start:end], not self.unbounded, U.take
        for c, (others, sign, eps) in enumerate(self.quadratic[start:end]):
            b = hollow[c] @ U_blk
            b += B[c]  # b' = b/a
            if isinstance(others, int):
                x = U[others]
                beta = (x @ b + sign) / (x @ x + eps)
                if nonneg:
                    beta = sign * max(sign * beta, 0.0)
                U[start + c] = beta * x - b
                continue
            X = take(others, axis=0)
            G = X @ X.T
            G += eps
            q = X @ b
            q += sign
            _, beta, info = dposv(G.T, q, overwrite_a=1, overwrite_b=1)
            if info != 0:
                beta = spd_solve(X @ X.T + eps, X @ b + sign)
            if nonneg:
                half = sign * beta
                if min(half.tolist()) <= 0.0:
                    A = X * sign[:, None]
                    beta = sign * nonneg_qp(A @ A.T + eps, A @ b + 1.0, half > 0.0)
            U[start + c] = beta @ X - b

    def _box_update(self, i: int, b: np.ndarray, U: np.ndarray) -> np.ndarray:
        """Column i from its dual over ``0 ≤ α ≤ (C/2)hi`` by :func:`box_qp` (the hinge:
        ``P = AAᵀ``; a loss with κ > 0 and a finite box: ``P = AAᵀ + εI``)."""
        others, sign, lo, hi = self.columns[i]
        a = self.diag[i]
        A = U[others] * sign  # k×r: rows T_ij v_j
        k = A.shape[0]
        q = A @ b + a
        P = A @ A.T
        if self.curvature:
            P.flat[:: k + 1] += self.curvature * a / self.C  # positive definite
        alpha = box_qp(P, q, self.upper, self.alpha[lo:hi])
        self.alpha[lo:hi] = alpha
        return (alpha @ A - b) / a

    def _newton_update(self, i: int, b: np.ndarray, U: np.ndarray) -> np.ndarray:
        """``argmin_v f(v) = ½a‖v‖² + bᵀv + (C/2) Σ_j ℓ(T_ij vᵀv_j)`` [003 eq. 6] by damped
        Newton from the current column ``U[i]``: with ``A = [T_ij v_j]`` (k×r) and ``t = Av``,
        ``∇f = av + b + (C/2) Aᵀℓ'(t)``, ``∇²f = aI + (C/2) Aᵀ diag(ℓ''(t)) A`` (r×r, ⪰ aI),
        the step ``d = −∇²f⁻¹∇f`` and Armijo backtracking ``f(v + sd) ≤ f(v) + ARMIJO·s·∇fᵀd``.
        Stops after a step ``‖d‖ ≤ NEWTON_TOL·max(1, ‖v‖)``; a step whose predicted decrease
        ``−∇fᵀd`` is below the round-off of f is taken in full (Newton's quadratic region)."""
        others, sign, _, _ = self.columns[i]
        a, half_C, loss = self.diag[i], 0.5 * self.C, self.loss
        A = U[others] * sign  # k×r: rows T_ij v_j
        v = U[i].copy()
        t = A @ v
        f = 0.5 * a * float(v @ v) + float(b @ v) + half_C * float(np.sum(loss.value(t)))
        r = v.size
        for _ in range(NEWTON_MAX_ITER):
            g = a * v + b + half_C * (loss.derivative(t) @ A)
            H = A.T @ ((half_C * loss.second_derivative(t))[:, None] * A)
            H.flat[:: r + 1] += a
            d = -spd_solve(H, g)
            slope = float(g @ d)  # −(Newton decrement)² ≤ 0
            small = float(np.linalg.norm(d)) <= NEWTON_TOL * max(1.0, float(np.linalg.norm(v)))
            if small or -slope <= ROUNDOFF * max(1.0, abs(f)):
                v = v + d
                if small:
                    break
                t = A @ v
                f = 0.5 * a * float(v @ v) + float(b @ v) + half_C * float(np.sum(loss.value(t)))
                continue
            step = 1.0
            while True:
                w = v + step * d
                tw = A @ w
                fw = (0.5 * a * float(w @ w) + float(b @ w)
                      + half_C * float(np.sum(loss.value(tw))))
                if fw <= f + ARMIJO * step * slope or step <= MIN_STEP:
                    break
                step *= 0.5
            if fw > f:  # no decrease even at the smallest step: v is optimal to round-off
                break
            v, t, f = w, tw, fw
        return v

    def pair_multipliers(self, V: np.ndarray, t: np.ndarray | None = None) -> np.ndarray:
        """Non-smooth losses (the hinge): ``y_p = α_p^{(i)} + α_p^{(j)}``; smooth losses:
        ``−C ℓ'(t_p)`` (``t``: the margins of V, when the caller has them)."""
        if not self.loss.smooth:
            alpha = np.empty_like(self.alpha)
            alpha[self.order] = self.alpha
            return alpha[: self.m] + alpha[self.m:]
        return -self.C * self.loss.derivative(self.margins(V) if t is None else t)

    def margins(self, V: np.ndarray) -> np.ndarray:
        i, j = self.pairs[:, 0], self.pairs[:, 1]
        return self.T * np.einsum("ri,ri->i", V[:, i], V[:, j])

    def measure(self, V: np.ndarray) -> tuple[float, float]:
        """Reduced objective Ω(VᵀV) and relative stationarity ``‖V G̃‖_F / max(1, ‖VΔ̃‖_F)``,
        ``V G̃ = VΔ̃ − V W`` with ``W = Σ_p (y_p T_p / 2)(E_ij + E_ji)`` sparse."""
        M = V @ self.D
        t = self.margins(V)
        objective = float(np.sum(V * M)) + self.C * float(np.sum(self.loss.value(t)))
        y = self.pair_multipliers(V, t)
        grad = M - self._pair_matrix.times_transposed(0.5 * y * self.T, V)
        return objective, float(np.linalg.norm(grad)) / max(1.0, float(np.linalg.norm(M)))


class _PairMatrix:
    """``W = Σ_p w_p (E_ij + E_ji)`` (l×l, symmetric) for pair weights ``w``: a CSR matrix whose
    pattern is built once (pairs are distinct and unordered, so it has 2m entries); each
    product only refills its values."""

    def __init__(self, pairs: np.ndarray, l: int):
        m = pairs.shape[0]
        rows = np.concatenate([pairs[:, 0], pairs[:, 1]])
        cols = np.concatenate([pairs[:, 1], pairs[:, 0]])
        order = np.lexsort((cols, rows))  # CSR order: by row, then column
        indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=l))])
        self.W = sp.csr_matrix((np.zeros(2 * m), cols[order], indptr), shape=(l, l))
        self.source = order % m  # the pair of each stored entry

    def times(self, w: np.ndarray, X: np.ndarray) -> np.ndarray:
        """``W X`` for X (l,) or (l, k)."""
        self.W.data = w[self.source]
        return self.W @ X

    def times_transposed(self, w: np.ndarray, V: np.ndarray) -> np.ndarray:
        """``V W`` (r×l) for the r×l ``V``: ``(W Vᵀ)ᵀ`` since W is symmetric."""
        return self.times(w, np.ascontiguousarray(V.T)).T


def _hollow(block: np.ndarray) -> np.ndarray:
    """A copy of a diagonal block of Δ̃ with its diagonal set to zero."""
    out = np.array(block)
    np.fill_diagonal(out, 0.0)
    return out


def _blas_threads(work: float):
    """A context limiting BLAS to one thread when a block's product ``Δ̃_blk U`` has fewer
    than :data:`ONE_THREAD_BELOW` multiply-adds ``work``, else leaving it as it is."""
    global _BLAS
    if work >= ONE_THREAD_BELOW:
        return nullcontext()
    if _BLAS is None:
        _BLAS = ThreadpoolController()
    return _BLAS.limit(limits=1, user_api="blas")


def reduced_gradient_min(reduced: NPKL, y: np.ndarray, reduction=None) -> float:
    """``λ_min(G̃)`` of the boundary problem at multipliers ``y``, ``G̃ = Δ̃ + W`` with
    ``W = −Σ_p (y_p T_p / 2)(E_ij + E_ji)``: LAPACK on the dense G̃ up to ``DENSE_EIG_MAX``
    points; above, Lanczos (ARPACK, smallest algebraic only) on the operator, with ``Δ̃x`` from
    the sparse blocks and factor of the ``reduction`` when it has them (``schur_times``: a few
    sparse products and solves instead of a pass over the dense l×l Δ̃)."""
    l = reduced.n
    w = -0.5 * y * reduced.labels
    if l <= DENSE_EIG_MAX:
        G = np.array(reduced.Delta)
        i, j = reduced.pairs[:, 0], reduced.pairs[:, 1]
        np.add.at(G, (i, j), w)
        np.add.at(G, (j, i), w)
        return float(eigh(G, eigvals_only=True, subset_by_index=(0, 0), driver="evr",
                          overwrite_a=True, check_finite=False)[0])
    W = _PairMatrix(reduced.pairs, l)
    if reduction is not None and reduction.factored_schur:
        schur = reduction.schur_times
    else:
        schur = np.asarray(reduced.Delta).__matmul__
    op = LinearOperator((l, l), matvec=lambda x: schur(x.ravel()) + W.times(w, x.ravel()),
                        dtype=np.float64)
    try:
        found = eigsh(op, k=1, which="SA", tol=1e-10, maxiter=20 * l,
                      return_eigenvectors=False)
    except ArpackNoConvergence as exc:
        found = exc.eigenvalues
    return float(found[0]) if len(found) else float("nan")


def _initial_V(warm_start, r: int, l: int, seed) -> np.ndarray:
    if warm_start is not None:
        V = warm_start
        values = getattr(V, "x", V)
        if isinstance(values, dict):
            if "V" not in values:
                raise InvalidInputError("warm_start must carry the BCD factor 'V' (r×l).")
            V = values["V"]
        try:
            V = as_float_array(V, "warm_start V")
        except InvalidInputError as exc:
            raise InvalidInputError(
                f"{exc} (warm_start: the BCD factor V, an (r, {l}) array)") from exc
        if V.ndim != 2 or V.shape[1] != l or not np.all(np.isfinite(V)):
            raise InvalidInputError(
                f"warm_start V must be a finite (r, {l}) array (l = constrained points), "
                f"got shape {V.shape}.")
        return V
    return np.random.default_rng(seed).random((r, l)) / np.sqrt(r)


@hookimpl
def register_solvers():
    return [BCD()]
