r"""One Gauss–Seidel sweep of NPKL's BCD over the columns of the boundary kernel's factor V
(:mod:`ssl_opt.plugins.npkl.bcd`, whose docstring derives the column updates [003 §3.2,
eqs. 9–11]): the blocked products with Δ̃, the column duals and the damped Newton column
update, and the pair matrix ``Σ_p w_p (E_ij + E_ji)`` of the multipliers."""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np
import scipy.sparse as sp
from scipy.linalg.lapack import dposv
from threadpoolctl import ThreadpoolController

from ssl_opt.numerics.small_qp import box_qp, nonneg_qp, spd_solve
from ssl_opt.problems.npkl.problem import NPKL
from ssl_opt.solvers import capabilities_of

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


def dual_form_supported(loss) -> bool:
    """The column dual is solved for ``α ≥ 0`` (any box ``[0, hi]``) or unconstrained α with
    κ > 0 (module docstring)."""
    kappa, lo, hi = loss.conjugate_form
    return lo == 0.0 or (lo == -np.inf and hi == np.inf and kappa > 0)


def quadratic_dual(loss) -> bool:
    """Whether the column dual is a positive definite k×k QP over ``α ≥ 0`` or free α
    (κ > 0 and no upper bound: the square and squared hinge), solved by
    :meth:`Sweep._quadratic_block`."""
    if "quadratic_conjugate" not in capabilities_of(loss) or not dual_form_supported(loss):
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
            if name == "dual" and not dual_form_supported(loss):
                continue
            return name
    return None


class Sweep:
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
        self._pair_matrix = PairMatrix(self.pairs, l)
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
        if quadratic_dual(self.loss):  # square and squared hinge
            self._block = self._quadratic_block
            self.quadratic = [self._quadratic_data(i, *col)
                              for i, col in enumerate(self.columns)]
            self.inv_diag = 1.0 / self.diag
            # Per block: its diagonal block of Δ̃ with a zero diagonal, rows scaled by 1/a.
            self.hollow = [hollow(self.D[s:e, s:e]) * self.inv_diag[s:e, None]
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


class PairMatrix:
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


def hollow(block: np.ndarray) -> np.ndarray:
    """A copy of a diagonal block of Δ̃ with its diagonal set to zero."""
    out = np.array(block)
    np.fill_diagonal(out, 0.0)
    return out


def blas_threads(work: float):
    """A context limiting BLAS to one thread when a block's product ``Δ̃_blk U`` has fewer
    than :data:`ONE_THREAD_BELOW` multiply-adds ``work``, else leaving it as it is."""
    global _BLAS
    if work >= ONE_THREAD_BELOW:
        return nullcontext()
    if _BLAS is None:
        _BLAS = ThreadpoolController()
    return _BLAS.limit(limits=1, user_api="blas")
