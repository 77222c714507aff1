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
(:meth:`~ssl_opt.plugins.npkl.sweep.Sweep._newton_update`): with ``t = Aᵀv``, the gradient is
``av + b + (C/2) Aℓ'(t)`` and the Hessian the r×r matrix ``aI + (C/2) A diag(ℓ''(t)) Aᵀ``
(positive definite: the subproblem is strictly convex since ``a > 0``), warm-started at the
current column, with Armijo backtracking, until the Newton step is below
``NEWTON_TOL·max(1, ‖v‖)``. Which update a loss gets is data
(:data:`~ssl_opt.plugins.npkl.sweep.COLUMN_UPDATES`): the dual one when it offers
``"quadratic_conjugate"`` with a supported form, else Newton when it offers both derivatives.

The pair multiplier of the full problem is ``y_p = α_p^{(i)} + α_p^{(j)}`` (each end's dual),
which at a stationary point is ``−C ℓ'(t_p)`` (what smooth losses use directly). Columns are
processed in blocks: the block's products with ``Δ̃`` are one matrix product, and updates made
earlier in the block are added back exactly, so the iteration is the paper's Gauss–Seidel
sweep at BLAS-3 speed (:class:`~ssl_opt.plugins.npkl.sweep.Sweep`). The square and squared
hinge take the column dual in a form with one k×k solve and no k×r sign-scaled copy
(:meth:`~ssl_opt.plugins.npkl.sweep.Sweep._quadratic_block`), with ``1/a`` folded into the
block products. When the block products are short the sweeps run BLAS on one thread
(:data:`~ssl_opt.plugins.npkl.sweep.ONE_THREAD_BELOW`). ``λ_min(G̃)`` for the certificate is
one eigenvalue (LAPACK ``syevr``), or Lanczos on ``Δ̃x`` from the sparse blocks of Δ and the
factor of ``Δ_UU`` above :data:`DENSE_EIG_MAX` points (:func:`reduced_gradient_min`).
The rank defaults to the largest ``s`` with ``s(s+1)/2 ≤ m`` [003 Prop. 3]. The start is
``V = U[0,1)^{r×l}/√r`` from a seeded generator (the paper uses MATLAB's ``rand(r, l)``).
Stopping: ``‖V⁺ − V‖_F ≤ tol·max(1, ‖V‖_F)`` (the paper's rule, relative) at a point whose
certificate passes (else ``tol`` is divided by 10 and the sweeps go on), or ``max_iter``.
"""

from __future__ import annotations

import time

import numpy as np
from scipy.linalg import eigh
from scipy.sparse.linalg import LinearOperator

from ssl_opt._validation import (
    as_float_array,
    check_bool,
    check_nonnegative,
    integer,
    optional,
)
from ssl_opt.certificate import residuals_above_tolerance
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.hookspecs import hookimpl
from ssl_opt.numerics.anderson import SafeguardedAnderson
from ssl_opt.numerics.eigen import DENSE_EIG_MAX, lanczos
from ssl_opt.plugins.npkl.sweep import (
    BLOCK,
    COLUMN_UPDATES,
    PairMatrix,
    Sweep,
    blas_threads,
    column_update,
    quadratic_dual,
)
from ssl_opt.problems.npkl.problem import NPKL
from ssl_opt.solution import MAX_ITERATIONS, OPTIMAL, STALLED, History, Solution
from ssl_opt.solvers import Option, Solver, capabilities_of

#: A converged V is reported optimal only if λ_min(G̃) ≥ −GLOBAL_TOL·max Δ̃_ii, where G̃ is the
#: reduced problem's gradient matrix: the Burer–Monteiro certificate that the fixed point of
#: the factored problem solves the SDP.
GLOBAL_TOL = 1e-6
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
                      8e-6 if quadratic_dual(problem.loss) else 2.5e-5)
        return 0.02 + reduction + 30 * (4e-11 * r * l * l + per_column * l)

    def _solve(self, problem: NPKL, rank, tol, max_iter, seed, warm_start, anderson,
               verbose) -> Solution:
        reduction = problem.boundary_reduction()
        reduced = reduction.reduced
        l = reduced.n
        r = default_rank(problem.m) if rank is None else rank
        V = _initial_V(warm_start, r, l, seed)
        r = V.shape[0]
        sweep = Sweep(reduced)
        # Safeguarded on Ω, which then decreases monotonically as in plain BCD; a rejection
        # restarts the memory.
        aa = SafeguardedAnderson(V.size, anderson, clear_on_reject=True)
        scale = GLOBAL_TOL * max(1.0, float(np.abs(sweep.diag).max()))
        checked = {}

        def settled(V) -> bool:
            """Stop at a point whose certificate passes, or at a fixed point that is no
            minimizer of the SDP (more sweeps cannot mend it: reported below)."""
            y = sweep.pair_multipliers(V)
            g_min = reduced_gradient_min(reduced, y, reduction)
            checked.update(V=V, y=y, g_min=g_min)
            if g_min < -scale:
                return True
            point = {"Phi": reduction.lift_factor(V.T), "y": y}
            return not residuals_above_tolerance(problem, point, self.tolerance_family)

        with blas_threads(BLOCK * l * r):
            V, status, it, history = _iterate(sweep, V, aa, tol, max_iter, verbose, settled)
            if checked.get("V") is V:
                y, g_min = checked["y"], checked["g_min"]
            else:
                y = sweep.pair_multipliers(V)
                g_min = reduced_gradient_min(reduced, y, reduction)
        if status == OPTIMAL and g_min < -scale:
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


def _iterate(sweep: Sweep, V: np.ndarray, aa: SafeguardedAnderson, tol: float, max_iter: int,
             verbose: bool, settled=None) -> tuple[np.ndarray, str, int, History]:
    """BCD's sweeps from ``V`` with the safeguarded Anderson step ``aa`` until
    ``‖sweep(x) − x‖_F ≤ tol·max(1, ‖x‖_F)`` at a point where ``settled(V)`` holds (each
    time it does not, ``tol`` is divided by 10 and the sweeps go on) or ``max_iter`` sweeps:
    ``(V, status, sweeps, history)``."""
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
            if settled is None or settled(g):
                status = OPTIMAL
                break
            tol /= 10.0
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
    W = PairMatrix(reduced.pairs, l)
    if reduction is not None and reduction.factored_schur:
        schur = reduction.schur_times
    else:
        schur = np.asarray(reduced.Delta).__matmul__
    op = LinearOperator((l, l), matvec=lambda x: schur(x.ravel()) + W.times(w, x.ravel()),
                        dtype=np.float64)
    return lanczos(op, "SA", tol=1e-10)


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
