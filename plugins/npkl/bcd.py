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
  ``(aI + c AAᵀ) v = c A1 − b``, solved through Sherman–Morrison–Woodbury as
  ``v = (w − A (AᵀA + (a/c)I)⁻¹ Aᵀw)/a``, ``w = c A1 − b`` (a k×k system; k is the number of
  pairs of point i);
* ``α ≥ 0`` with κ > 0 (squared hinge [003 eq. 10]): ``P = AᵀA + (a/C)I`` is positive
  definite (equivalently the non-negative least-squares problem
  ``min ‖[A; √(a/C) I]α − [b; √(aC) 1]‖``), one solve when every pair is active, else the
  active-set method below;
* a box ``0 ≤ α ≤ (C/2)hi`` (hinge [003 eq. 9] with this package's ``ℓ = max(0, 1−t)``, the
  paper's being twice that: κ = 0 and ``α ≤ C/2``; the Huber hinge: κ = δ), solved exactly by
  a primal active-set method (:func:`_box_qp`).

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
sweep at BLAS-3 speed.
The rank defaults to the largest ``s`` with ``s(s+1)/2 ≤ m`` [003 Prop. 3]. The start is
``V = U[0,1)^{r×l}/√r`` from a seeded generator (the paper uses MATLAB's ``rand(r, l)``).
Stopping: ``‖V⁺ − V‖_F ≤ tol·max(1, ‖V‖_F)`` (the paper's rule, relative) or ``max_iter``.
"""

from __future__ import annotations

import time

import numpy as np
from scipy.linalg.lapack import dposv

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
from ssl_opt.problems.npkl.problem import NPKL, extreme_eigenvalues
from ssl_opt.solution import MAX_ITERATIONS, OPTIMAL, STALLED, History, Solution
from ssl_opt.solvers import Option, Solver, capabilities_of

#: A converged V is reported optimal only if λ_min(G̃) ≥ −GLOBAL_TOL·max Δ̃_ii, where G̃ is the
#: reduced problem's gradient matrix: the Burer–Monteiro certificate that the fixed point of
#: the factored problem solves the SDP.
GLOBAL_TOL = 1e-6
#: Columns per block of the Gauss–Seidel sweep (the block's Δ̃ products are one GEMM).
BLOCK = 64
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
        # Newton column updates (a few r×r solves each) cost about 2.5 times the dual ones
        # (measured on the logistic loss at l ≈ 200, docs/npkl.md).
        per_column = 6e-5 if column_update(problem.loss) == "newton" else 2.5e-5
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
        V = g
        y = sweep.pair_multipliers(V)
        g_min = reduced_gradient_min(reduced, y)
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


def _not_above(objective: float):
    """BCD's Anderson safeguard: an extrapolated ``(x, sweep(x), (Ω, ·))`` is taken when its
    Ω is at most ``objective``, the current point's."""
    return lambda step: step[2][0] <= objective


class _Sweep:
    """One Gauss–Seidel pass over the columns of V for the reduced problem."""

    def __init__(self, reduced: NPKL):
        self.D = np.ascontiguousarray(reduced.Delta)
        self.diag = np.diag(self.D).copy()
        self.C = reduced.C
        self.loss = reduced.loss
        if column_update(self.loss) == "newton":
            self._update = self._newton_update
        else:
            kappa, lo, hi = self.loss.conjugate_form
            # The column dual (module docstring): its curvature and bounds.
            self.unbounded = lo == -np.inf and hi == np.inf
            self.c = self.C / (2.0 * kappa) if self.unbounded else None
            self.curvature = 2.0 * kappa  # times a/C, on the diagonal of P
            self.upper = self.C / 2.0 * hi
        self.pairs, self.T = reduced.pairs, reduced.labels
        l, m = reduced.n, reduced.m
        ends = np.concatenate([self.pairs[:, 0], self.pairs[:, 1]])
        order = np.argsort(ends, kind="stable")
        self.other = np.concatenate([self.pairs[:, 1], self.pairs[:, 0]])[order]
        self.sign = np.concatenate([self.T, self.T])[order]
        self.slot = order  # position of each (end, pair) in the 2m-vector of half multipliers
        self.ptr = np.concatenate([[0], np.cumsum(np.bincount(ends, minlength=l))])
        self.alpha = np.zeros(2 * m)
        self.m = m
        # Per column i: the other ends of its pairs, their signs (k×1) and multiplier slots.
        self.columns = [(self.other[lo:hi], self.sign[lo:hi, None], self.slot[lo:hi])
                        for lo, hi in zip(self.ptr[:-1], self.ptr[1:], strict=True)]

    def run(self, V0: np.ndarray) -> np.ndarray:
        """The sweep's image of ``V0`` (r×l; a new array). Works on ``U = Vᵀ`` (l×r, one
        contiguous row per column of V)."""
        U = np.array(V0.T, order="C")
        D, l, diag = self.D, U.shape[0], self.diag
        for start in range(0, l, BLOCK):
            end = min(l, start + BLOCK)
            old = U[start:end].copy()
            # Rows Σ_{k≠i} Δ̃_ik u_k for the block, with U as it was at `start` ...
            B = D[start:end] @ U - diag[start:end, None] * old
            moved = np.zeros_like(old)
            for i in range(start, end):
                c = i - start
                b = B[c]
                if c:  # ... plus the moves of the columns already updated in the block
                    b = b + D[i, start:i] @ moved[:c]
                U[i] = self._update(i, b, U)
                moved[c] = U[i] - old[c]
        return U.T

    def _update(self, i: int, b: np.ndarray, U: np.ndarray) -> np.ndarray:
        others, sign, slot = self.columns[i]
        a, c = self.diag[i], self.c
        if self.unbounded and others.size == 1:  # one pair: no k×r matrix needed
            u = U[others[0]]  # (T u)(T u)ᵀ = uuᵀ
            w = (c * sign[0, 0]) * u - b
            return (w - u * ((u @ w) / (u @ u + a / c))) / a
        A = U[others] * sign  # k×r: rows T_ij v_j
        k = A.shape[0]
        if self.unbounded:
            w = c * A.sum(axis=0) - b
            Gk = A @ A.T
            Gk.flat[:: k + 1] += a / c
            return (w - _spd_solve(Gk, A @ w) @ A) / a
        q = A @ b + a
        P = A @ A.T
        if self.curvature:
            P.flat[:: k + 1] += self.curvature * a / self.C  # positive definite
        if self.curvature and self.upper == np.inf:
            if k == 1:
                alpha = np.maximum(q / P[0, 0], 0.0)
            else:
                alpha = _spd_solve(P, q)  # every pair active: the usual case
                if alpha.min() <= 0.0:
                    alpha = _box_qp(P, q, np.inf, self.alpha[slot])
        else:
            alpha = _box_qp(P, q, self.upper, self.alpha[slot])
        self.alpha[slot] = alpha
        return (alpha @ A - b) / a

    def _newton_update(self, i: int, b: np.ndarray, U: np.ndarray) -> np.ndarray:
        """``argmin_v f(v) = ½a‖v‖² + bᵀv + (C/2) Σ_j ℓ(T_ij vᵀv_j)`` [003 eq. 6] by damped
        Newton from the current column ``U[i]``: with ``A = [T_ij v_j]`` (k×r) and ``t = Av``,
        ``∇f = av + b + (C/2) Aᵀℓ'(t)``, ``∇²f = aI + (C/2) Aᵀ diag(ℓ''(t)) A`` (r×r, ⪰ aI),
        the step ``d = −∇²f⁻¹∇f`` and Armijo backtracking ``f(v + sd) ≤ f(v) + ARMIJO·s·∇fᵀd``.
        Stops after a step ``‖d‖ ≤ NEWTON_TOL·max(1, ‖v‖)``; a step whose predicted decrease
        ``−∇fᵀd`` is below the round-off of f is taken in full (Newton's quadratic region)."""
        others, sign, _ = self.columns[i]
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
            d = -_spd_solve(H, g)
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
            return self.alpha[: self.m] + self.alpha[self.m:]
        return -self.C * self.loss.derivative(self.margins(V) if t is None else t)

    def margins(self, V: np.ndarray) -> np.ndarray:
        i, j = self.pairs[:, 0], self.pairs[:, 1]
        return self.T * np.einsum("ri,ri->i", V[:, i], V[:, j])

    def measure(self, V: np.ndarray) -> tuple[float, float]:
        """Reduced objective Ω(VᵀV) and relative stationarity ``‖V G̃‖_F / max(1, ‖VΔ̃‖_F)``."""
        M = V @ self.D
        i, j = self.pairs[:, 0], self.pairs[:, 1]
        t = self.margins(V)
        objective = float(np.sum(V * M)) + self.C * float(np.sum(self.loss.value(t)))
        y = self.pair_multipliers(V, t)
        grad = M.copy()  # V G̃ with G̃ = Δ̃ − Σ y_p T_p (E_ij + E_ji)/2
        w = 0.5 * y * self.T
        np.subtract.at(grad.T, i, (w * V[:, j]).T)
        np.subtract.at(grad.T, j, (w * V[:, i]).T)
        return objective, float(np.linalg.norm(grad)) / max(1.0, float(np.linalg.norm(M)))


def _spd_solve(M: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """``M⁻¹ rhs`` for a small SPD ``M`` (LAPACK ``dposv``: far less call overhead than
    ``numpy.linalg.solve`` on the k×k systems of the column updates)."""
    _, x, info = dposv(M, rhs)
    if info != 0:
        return np.linalg.lstsq(M, rhs, rcond=None)[0]
    return x


def reduced_gradient_min(reduced: NPKL, y: np.ndarray) -> float:
    """``λ_min(G̃)`` of the boundary problem at multipliers ``y``."""
    return extreme_eigenvalues(reduced.gradient_matrix(y))[0]


def _box_qp(P: np.ndarray, q: np.ndarray, upper: float, alpha0: np.ndarray) -> np.ndarray:
    """``argmin ½αᵀPα − qᵀα`` over ``0 ≤ α ≤ upper`` (``upper`` may be inf) for a PSD ``P``:
    the hinge column dual (``P = AᵀA``) and the squared-hinge one (``P = AᵀA + (a/C)I``).

    k = 1 in closed form. Otherwise a primal active-set method (Nocedal & Wright §16.5) from
    the column's previous multipliers, exact up to round-off and finite: on the free set F,
    the Newton step solves ``P_FF p = −g_F`` (minimum-norm least squares, since P is singular
    when the neighbours' columns are parallel, which hinge solutions produce); if ``g_F`` has a
    component in the null space of ``P_FF`` that component is a zero-curvature descent
    direction, followed to the box. A step is cut at the first bound it meets, which joins the
    working set; at a stationary point of the face, the bound with the most negative
    multiplier leaves it, and when none is negative the KKT conditions hold.
    """
    k = P.shape[0]
    if k == 1:
        p = P[0, 0]
        if p <= 0:
            return np.array([upper if q[0] > 0 else 0.0])
        return np.array([min(max(q[0] / p, 0.0), upper)])
    try:  # most columns: every pair active and inside the box, one solve
        alpha = np.linalg.solve(P, q)
        if (np.all(alpha > 0.0) and np.all(alpha < upper)
                and np.abs(P @ alpha - q).max() <= 1e-12 * max(1.0, float(np.abs(q).max()))):
            return alpha
    except np.linalg.LinAlgError:
        pass
    alpha = np.clip(alpha0, 0.0, upper)
    fixed = (alpha <= 0.0) | (alpha >= upper)
    reach = upper if np.isfinite(upper) else max(1.0, float(alpha.max()))
    scale = max(1.0, float(np.abs(q).max()), float(np.diag(P).max()) * reach)
    tol = 1e-12 * scale
    at_face_minimum = False
    for _ in range(50 * k):
        g = P @ alpha - q
        free = np.flatnonzero(~fixed)
        step = None
        if free.size and not at_face_minimum:
            P_FF, g_F = P[np.ix_(free, free)], g[free]
            p = np.linalg.lstsq(P_FF, -g_F, rcond=None)[0]
            null_part = P_FF @ p + g_F
            newton = float(np.abs(null_part).max()) <= 1e-10 * max(1.0, float(np.abs(g_F).max()))
            if not newton:
                p = -null_part
            if float(np.abs(p).max()) > 1e-12 * max(1.0, reach):
                step = (free, p, newton)
        if step is not None:
            free, p, newton = step
            a_F = alpha[free]
            with np.errstate(divide="ignore", invalid="ignore"):
                limits = np.where(p < 0, -a_F / p, np.where(p > 0, (upper - a_F) / p, np.inf))
            block = int(np.argmin(limits))
            t = min(1.0, limits[block]) if newton else limits[block]
            alpha[free] = np.clip(a_F + t * p, 0.0, upper)
            if not newton or limits[block] <= 1.0:
                s = free[block]
                alpha[s] = 0.0 if p[block] < 0 else upper
                fixed[s] = True
            else:
                at_face_minimum = True  # the full Newton step minimized over this face
            continue
        at_face_minimum = False
        multiplier = np.where(alpha <= 0.0, g, -g)  # ≥ 0 at an optimum for the fixed bounds
        multiplier[~fixed] = np.inf
        worst = int(np.argmin(multiplier))
        if multiplier[worst] >= -tol:
            break
        fixed[worst] = False
    return alpha


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
