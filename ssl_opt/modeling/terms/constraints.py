r"""Constraints on a term's argument (docs/design.md §6): indicators of convex sets.

Each gives its CVXPY constraints, ``feasibility(z)`` (the largest violation, relative to
``max(1, max|z|)``), the projection ``prox(v, t)`` (any t) and the projection onto the normal
cone ``N_C(z)`` (``project_subgradient``; constraints within ``tol`` of active count as
active):

=================  =========================  ===========================================
constraint         set C                      normal cone at z
=================  =========================  ===========================================
``NonNegative``    ``z ≥ 0``                  ``w ≤ 0``, ``w_i = 0`` where ``z_i > tol``
``Box``            ``lo ≤ z ≤ hi``            ``w_i ≤ 0`` at lo, ``≥ 0`` at hi, else 0
``FixedRows``      ``z[rows] = values``       anything on the rows, 0 elsewhere
``LinearEquality`` ``⟨a, z⟩ = b``             ``span(a)``
``Balance``        ``mean(z) = r``            ``span(1)``
``SimplexRows``    rows ``z_i ≥ 0, Σ z_i = 1``  per row ``ν·1 + w``, ``w ≤ 0``, ``w_k = 0`` where
                                              ``z_ik > tol``
=================  =========================  ===========================================

The simplex projection is Duchi et al.'s sort-based algorithm
(:func:`~ssl_opt.components.project_rows_to_simplex`). The projection of ``u`` onto the
simplex's normal cone at a row ``z`` (active set A = {k : z_k ≤ tol}) is
``P_k = ν`` off A and ``min(u_k, ν)`` on A, with ν the root of the non-decreasing piecewise
linear ``G(ν) = Σ_{k∉A}(ν − u_k) − Σ_{k∈A}(u_k − ν)₊`` (the derivative of the squared
distance): with the active ``u`` sorted decreasingly (``a_(1) ≥ a_(2) ≥ …``, ``C_j`` their
partial sums), ``G(a_(j)) = (n₀ + j − 1) a_(j) − S₀ − C_{j−1}`` (``n₀ = |A^c|``,
``S₀ = Σ_{k∉A} u_k``) and ``ν = (S₀ + C_k)/(n₀ + k)`` with ``k = #{j : G(a_(j)) > 0}`` —
exact, sort-based, vectorized over rows. A row with every entry active has the whole space as
normal cone (``P = u``).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ssl_opt._validation import as_float_array
from ssl_opt.components.simplex import project_rows_to_simplex
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.modeling.term import Constraint, LowRank
from ssl_opt.modeling.terms._common import as_rows, data_array, scalar
from ssl_opt.optional import cvxpy as cp


def _scale(z) -> float:
    return max(1.0, float(np.max(np.abs(z))) if np.size(z) else 0.0)


def _flat(z: cp.Expression, shape) -> cp.Expression:
    if len(shape) == 1:
        return z
    return cp.reshape(z, (int(np.prod(shape, dtype=int)),), order="C")


class NonNegative(Constraint):
    """``z ≥ 0`` entrywise."""

    name = "nonnegative"

    def cvxpy(self, z):
        return [z >= 0]

    def feasibility(self, z):
        return float(np.max(np.maximum(-np.asarray(z), 0.0), initial=0.0)) / _scale(z)

    def prox(self, v, t):
        return np.maximum(v, 0.0)

    measures_complementarity = True

    def project_subgradient(self, z, u, tol, budget: float = 0.0):
        """Onto ``w ≤ 0`` with ``w_i = 0`` where ``z_i > tol``, or, with a complementarity
        ``budget``, ``−b_i ≤ w_i ≤ 0`` (:func:`multiplier_bounds`)."""
        z = np.asarray(z)
        if budget <= 0.0:
            return np.where(z <= tol, np.minimum(u, 0.0), 0.0)
        return np.clip(u, -multiplier_bounds(z, tol, budget), 0.0)

    def bounds(self):
        return np.zeros(self.shape), np.full(self.shape, np.inf)

    def distance_hessian(self, v):
        return (np.ravel(v) < 0.0).astype(np.float64)


class Box(Constraint):
    """``lo ≤ z ≤ hi`` entrywise (``lo``, ``hi`` scalars or arrays of the argument's shape,
    ``±inf`` allowed, ``lo ≤ hi``)."""

    name = "box"

    def __init__(self, argument, lo, hi):
        super().__init__(argument)
        self.lo, self.hi = (self._bound(b, name) for b, name in ((lo, "lo"), (hi, "hi")))
        if np.any(self.lo > self.hi):
            raise InvalidInputError("lo of Box must be ≤ hi everywhere (an empty box); swap or "
                                    "fix the bounds.")
        if np.any(self.lo == np.inf) or np.any(self.hi == -np.inf):
            raise InvalidInputError("Box bounds must allow finite values: lo < +inf and "
                                    "hi > -inf.")

    def describe(self) -> str:
        lo, hi = float(np.min(self.lo, initial=np.inf)), float(np.max(self.hi, initial=-np.inf))
        return f"box[{lo:g}, {hi:g}]"  # the widest bounds, when they differ per entry

    def _bound(self, b, name) -> np.ndarray:
        arr = as_float_array(b, f"{name} of Box")
        if np.any(np.isnan(arr)):
            raise InvalidInputError(f"{name} of Box contains NaN; use ±inf for no bound.")
        if arr.shape != self.shape:
            if arr.ndim:
                raise InvalidInputError(f"{name} of Box must be a scalar or have the "
                                        f"argument's shape {self.shape}, got {arr.shape}.")
            arr = np.full(self.shape, float(arr))
        return arr

    def cvxpy(self, z):
        out = []
        flat = _flat(z, self.shape)
        for bound, lower in ((self.lo, True), (self.hi, False)):
            b = bound.ravel()
            idx = np.flatnonzero(np.isfinite(b))
            if not idx.size:
                continue
            if not self.shape:
                out.append(z >= float(b[0]) if lower else z <= float(b[0]))
                continue
            part = flat if idx.size == b.size else flat[idx]
            out.append(part >= b[idx] if lower else part <= b[idx])
        return out

    def feasibility(self, z):
        z = np.asarray(z, dtype=np.float64)
        viol = np.maximum(np.maximum(self.lo - z, z - self.hi), 0.0)
        return float(np.max(viol, initial=0.0)) / _scale(z)

    def prox(self, v, t):
        return np.clip(v, self.lo, self.hi)

    def project_subgradient(self, z, u, tol):
        z = np.asarray(z, dtype=np.float64)
        low = np.where(z <= self.lo + tol, -np.inf, 0.0)
        high = np.where(z >= self.hi - tol, np.inf, 0.0)
        return np.clip(u, low, high)

    def bounds(self):
        return self.lo.copy(), self.hi.copy()

    def distance_hessian(self, v):
        v = np.ravel(v)
        return ((v < self.lo.ravel()) | (v > self.hi.ravel())).astype(np.float64)


class FixedRows(Constraint):
    """``z[rows] = values`` (``rows``: distinct row indices or a boolean mask of the first
    axis; ``values``: a scalar or an array of shape ``(len(rows),) + shape[1:]``)."""

    name = "fixed_rows"

    def __init__(self, argument, rows, values):
        super().__init__(argument)
        if not self.shape:
            raise InvalidInputError("the argument of FixedRows must be a vector or a matrix; "
                                    "fix a scalar with Box(argument, value, value).")
        n = self.shape[0]
        try:
            idx = np.arange(n)[rows]
        except (IndexError, TypeError, ValueError) as exc:
            raise InvalidInputError(f"rows of FixedRows must index the argument's {n} rows "
                                    f"(integers in [0, {n}) or a length-{n} boolean mask): "
                                    f"{exc}") from exc
        idx = np.atleast_1d(idx)
        if idx.ndim != 1 or len(np.unique(idx)) != len(idx):
            raise InvalidInputError("rows of FixedRows must be distinct row indices.")
        self.rows = idx
        shape = (len(idx),) + self.shape[1:]
        self.values = data_array(values, "values", shape, "FixedRows")

    def cvxpy(self, z):
        return [z[self.rows] == self.values] if len(self.rows) else []

    def feasibility(self, z):
        z = np.asarray(z, dtype=np.float64)
        err = np.abs(z[self.rows] - self.values)
        return float(np.max(err, initial=0.0)) / _scale(z)

    def prox(self, v, t):
        out = np.array(v, dtype=np.float64)
        out[self.rows] = self.values
        return out

    def project_subgradient(self, z, u, tol):
        out = np.zeros(self.shape)
        out[self.rows] = np.asarray(u)[self.rows]
        return out

    def bounds(self):
        lo, hi = np.full(self.shape, -np.inf), np.full(self.shape, np.inf)
        lo[self.rows] = self.values
        hi[self.rows] = self.values
        return lo, hi

    def distance_hessian(self, v):
        on = np.zeros(self.shape)
        on[self.rows] = 1.0
        return on.ravel()


class LinearEquality(Constraint):
    """``⟨a, z⟩ = b`` (``a`` of the argument's shape, not zero; ``b`` a scalar). Projection
    ``v − (⟨a, v⟩ − b) a/‖a‖²``; normal cone ``span(a)``; ``feasibility`` is
    ``|⟨a, z⟩ − b|/‖a‖₁`` relative to ``max(1, max|z|)``."""

    name = "linear_equality"

    def __init__(self, argument, a, b):
        super().__init__(argument)
        owner = type(self).__name__
        self.a = data_array(a, "a", self.shape, owner)
        if not np.any(self.a):
            raise InvalidInputError(f"a of {owner} must not be zero (⟨0, z⟩ = b is empty or "
                                    "void).")
        self.b = scalar(b, "b", owner)
        self._norm2 = float(np.sum(self.a * self.a))

    def cvxpy(self, z):
        lhs = cp.sum(cp.multiply(self.a, z)) if self.shape else float(self.a) * z
        return [lhs == self.b]

    def feasibility(self, z):
        z = np.asarray(z, dtype=np.float64)
        err = abs(float(np.sum(self.a * z)) - self.b) / float(np.sum(np.abs(self.a)))
        return err / _scale(z)

    def prox(self, v, t):
        v = np.asarray(v, dtype=np.float64)
        return v - ((float(np.sum(self.a * v)) - self.b) / self._norm2) * self.a

    def project_subgradient(self, z, u, tol):
        return (float(np.sum(self.a * u)) / self._norm2) * self.a

    def distance_hessian(self, v):
        """``aaᵀ/‖a‖²``, kept factored."""
        return LowRank(self.a.reshape(-1, 1) / np.sqrt(self._norm2), np.ones(1))


class Balance(LinearEquality):
    """``mean(z) = r`` over all entries of the argument: the S3VM class-balance constraint on
    the unlabeled outputs [001 §3.1]; a :class:`LinearEquality` with ``a = 1/N``."""

    name = "balance"

    def __init__(self, argument, r):
        Constraint.__init__(self, argument)
        self.r = scalar(r, "r", "Balance")
        size = int(np.prod(self.shape, dtype=int))
        self.a = np.full(self.shape, 1.0 / size)
        self.b = self.r
        self._norm2 = 1.0 / size

    def cvxpy(self, z):
        return [cp.sum(z) / int(np.prod(self.shape, dtype=int)) == self.r]


class SimplexRows(Constraint):
    """Every row ``z_i ≥ 0`` with ``Σ_k z_ik = 1`` (a 1-D argument: the whole vector is one
    row); see the module docstring for the normal-cone projection."""

    name = "simplex_rows"

    def __init__(self, argument):
        super().__init__(argument)

    def _rows(self, z) -> np.ndarray:
        z = np.asarray(z, dtype=np.float64)
        return z.reshape(1, -1) if z.ndim < 2 else z

    def cvxpy(self, z):
        if len(self.shape) == 2:
            return [z >= 0, cp.sum(z, axis=1) == 1]
        return [z >= 0, cp.sum(z) == 1]

    def violations(self, z) -> dict[str, float]:
        """The two parts of :meth:`feasibility` (relative, its scale): ``row_sums``
        ``max|z_i·1 − 1|`` and ``nonnegativity`` ``max(0, −min z)``."""
        Z, scale = self._rows(z), _scale(z)
        return {"row_sums": float(np.max(np.abs(Z.sum(axis=1) - 1.0), initial=0.0)) / scale,
                "nonnegativity": float(np.max(np.maximum(-Z, 0.0), initial=0.0)) / scale}

    def feasibility(self, z):
        return max(self.violations(z).values())

    def prox(self, v, t):
        return project_rows_to_simplex(self._rows(v)).reshape(np.shape(v))

    def distance_hessian(self, v):
        """Per row, with S the support of the projection ``p`` of the row: ``1·1ᵀ/|S|`` on
        S × S and the identity off S (``I − ∂P``, ``∂P = I_S − 1_S1_Sᵀ/|S|``); block
        diagonal."""
        V = self._rows(v)
        on = project_rows_to_simplex(V) > 0.0
        n, c = V.shape
        blocks = (on[:, :, None] & on[:, None, :]) / np.maximum(on.sum(axis=1), 1)[:, None,
                                                                                   None]
        blocks[:, np.arange(c), np.arange(c)] += ~on
        return sp.bsr_matrix((blocks, np.arange(n), np.arange(n + 1)),
                             shape=(n * c, n * c)).tocsr()

    measures_complementarity = True

    def project_subgradient(self, z, u, tol, budget: float = 0.0):
        """Onto the rows ``ν·1 + w`` with ``w ≤ 0`` and ``w_k = 0`` where ``z_k > tol``, or,
        with a complementarity ``budget``, ``−b_k ≤ w_k ≤ 0`` (:func:`multiplier_bounds`);
        rows without an entry near its bound (``0 < b_k < ∞``) take the exact cone's closed
        form."""
        Z, U = self._rows(z), self._rows(u)
        P = simplex_normal_cone_projection(Z, U, tol)
        if budget > 0.0:
            b = multiplier_bounds(Z, tol, budget)
            near = np.any(np.isfinite(b) & (b > 0.0), axis=1)
            if near.any():
                P[near] = budgeted_simplex_normal_cone_projection(U[near], b[near])
        return P.reshape(np.shape(u))


def multiplier_bounds(z: np.ndarray, tol: float, budget: float) -> np.ndarray:
    """``b``, the largest multiplier ``|w|`` each entry may carry: ``∞`` where ``z ≤ tol`` (at
    the bound), ``budget/z`` where ``tol < z ≤ √budget`` (complementarity ``|w z| ≤ budget``
    measured: a multiplier of at least ``√budget``), 0 beyond (complementarity imposed)."""
    z = np.asarray(z, dtype=np.float64)
    with np.errstate(divide="ignore"):
        b = np.where(z <= tol, np.inf, budget / np.maximum(z, tol))
    return np.where(z > np.sqrt(budget), 0.0, b)


def budgeted_simplex_normal_cone_projection(U: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise projection of ``U`` onto ``{ν·1 + w : w_k ∈ [−b_k, 0]}``
    (:func:`multiplier_bounds`): the simplex's normal cone with the complementarity
    ``|w_k z_k| ≤ budget`` measured instead of imposed on the entries near their bound. ν is
    the root of the non-decreasing piecewise linear ``h(ν) = Σ_k min(ν − u_k, 0) +
    (ν − c_k)₊`` (``c_k = u_k + b_k``), a sum of ramps: with the 2K break points sorted per
    row, h at each is ``−(S_u − n_u ν) + (n_c ν − S_c)`` from prefix counts and sums (``S_u,
    n_u``: the ``u_k`` above, ``S_c, n_c``: the ``c_k`` below), and the root is interpolated in
    its bracket —
    exact, O(K log K) per row. A row without a finite ``b_k`` (every entry active) keeps
    ``u``, as in :func:`simplex_normal_cone_projection`."""
    U, b = as_rows(U), as_rows(b)
    N, K = U.shape
    points = np.concatenate([U, U + b], axis=1)
    order = np.argsort(points, axis=1, kind="stable")
    x = np.take_along_axis(points, order, axis=1)  # +inf (active entries' c_k) last
    is_c = order >= K
    finite = np.isfinite(x)
    xf = np.where(finite, x, 0.0)
    is_u = ~is_c
    n_u_above = K - np.cumsum(is_u, axis=1)
    s_u_above = U.sum(axis=1, keepdims=True) - np.cumsum(np.where(is_u, xf, 0.0), axis=1)
    n_c_below = np.cumsum(is_c & finite, axis=1)
    s_c_below = np.cumsum(np.where(is_c & finite, xf, 0.0), axis=1)
    h = np.where(finite, -(s_u_above - n_u_above * xf) + (n_c_below * xf - s_c_below), np.inf)
    r = np.arange(N)
    last = np.maximum(np.count_nonzero(finite, axis=1) - 1, 0)
    h[r, last] = np.maximum(h[r, last], 0.0)  # h ≥ 0 at the last finite break point (round-off)
    j = np.argmax(h >= 0.0, axis=1)  # the first break point with h ≥ 0
    j0 = np.maximum(j - 1, 0)
    x0, x1, h0, h1 = x[r, j0], x[r, j], h[r, j0], h[r, j]
    with np.errstate(divide="ignore", invalid="ignore"):
        nu = np.where((j == 0) | (h1 == h0), x1, x0 - h0 * (x1 - x0) / (h1 - h0))[:, None]
    P = nu - np.clip(nu - U, 0.0, b)
    return np.where(np.isfinite(b).any(axis=1)[:, None], P, U)


def simplex_normal_cone_projection(Z: np.ndarray, U: np.ndarray, tol: float) -> np.ndarray:
    """Row-wise projection of ``U`` onto the normal cone of the simplex at the rows of ``Z``
    (entries ``≤ tol`` active); exact, see the module docstring."""
    Z, U = as_rows(Z), as_rows(U)
    active = Z <= tol
    n0 = np.count_nonzero(~active, axis=1)
    S0 = np.where(active, 0.0, U).sum(axis=1)
    a = -np.sort(-np.where(active, U, -np.inf), axis=1)  # decreasing, -inf (inactive) last
    valid = np.isfinite(a)
    a0 = np.where(valid, a, 0.0)
    C = np.cumsum(a0, axis=1)
    j = np.arange(1, Z.shape[1] + 1)
    G = (n0[:, None] + j - 1) * a0 - S0[:, None] - (C - a0)
    k = np.count_nonzero(valid & (G > 0), axis=1)
    Ck = np.where(k > 0, C[np.arange(Z.shape[0]), np.maximum(k - 1, 0)], 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        nu = ((S0 + Ck) / (n0 + k))[:, None]
    P = np.where(active, np.minimum(U, nu), nu)
    return np.where((n0 == 0)[:, None], U, P)
