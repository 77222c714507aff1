r"""The system of ``irls-mm`` (:mod:`ssl_opt.plugins.model.irls_mm`): the model's terms as maps
``Z = A X + O`` on the free unknowns X (FixedRows eliminated), at the level of the rows of the
c columns when every map acts identically on them (column separability: one row-level factor
for the c right-hand sides, the structure of [004 eqs. 19–26]), else over all unknowns; and
the fixed upper-triangle pattern of the weighted matrix ``Q + Σ_j A_jᵀ diag(d_j) A_j``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ssl_opt.modeling.model import Model
from ssl_opt.modeling.terms import HuberNorms
from ssl_opt.plugins.model.multipliers import fixed_entries


# ---------------------------------------------------------------------------- level maps
class NotSeparable(Exception):
    """The model's terms do not act identically on its c columns."""


def _linear_matrix(linear, C: int, separable: bool):
    """The matrix of ``linear``, at the level of the rows when ``separable`` (the same
    matrix for each of the C columns; :class:`NotSeparable` when a map mixes them)."""
    M = linear.column_matrix(C) if separable else linear.matrix()
    if M is None:
        mixing = next(f for f in linear.factors() if f.column_matrix(C) is None)
        raise NotSeparable(f"a {type(mixing).__name__} map that mixes the columns")
    return sp.csr_matrix(M)


class _Piece:
    """One term at the level of the system: ``Z = A X + O`` (R×C), X the free unknowns."""

    def __init__(self, term, A, O):
        self.term, self.A, self.O = term, A, O
        #: a Huber norm (majorized exactly), else a quadratic (smooth) or a norm term
        self.huber = isinstance(term, HuberNorms)
        self.quadratic = bool(term.smooth) and not self.huber
        self.AT = sp.csr_matrix(A.T)
        self.hess = None          # quadratic: the level Hessian (sparse R×R)
        self.w = self.size = None  # norm / huber: weight per group, level rows per group
        self.rho = 0.0

    def value_at(self, X):
        return self.A @ X + self.O

    def as_term(self, Z):
        return np.reshape(Z, self.term.shape)


class MMSystem:
    """The model at the level of its system (rows of the c columns when separable, else all
    unknowns), with FixedRows eliminated; raises :class:`NotSeparable` when ``separable``
    does not hold, :class:`InvalidInputError` when a term is out of reach."""

    def __init__(self, model: Model, separable: bool):
        self.model, self.separable = model, separable
        C = _columns(model) if separable else 1
        if separable and C is None:
            raise NotSeparable("variables of different column counts")
        self.C = C
        N = model.size // C
        fixed_flat, fixed_vals = fixed_entries(model)
        fixed_level = np.unique(fixed_flat // C)
        if fixed_flat.size != fixed_level.size * C:
            raise NotSeparable("fixed entries that are not whole rows")
        X_fix = np.zeros(N * C)
        X_fix[fixed_flat] = fixed_vals
        self.fixed = fixed_level
        self.free = np.setdiff1d(np.arange(N), fixed_level)
        self.X_fixed = X_fix.reshape(N, C)[fixed_level]
        self.N = N
        slices = model.slices
        self.pieces = []
        for t in model.terms:
            A = sp.csr_matrix((int(np.prod(t.shape, dtype=int)) // C, N))
            rows = A.shape[0]
            if rows * C != int(np.prod(t.shape, dtype=int)):
                raise NotSeparable(f"{t.describe()} has no whole rows")
            for var, linear in t.argument.parts:
                P = sp.coo_matrix(_linear_matrix(linear, C, separable))
                start = slices[var.name].start // C
                A = A + sp.csr_matrix((P.data, (P.row, P.col + start)), shape=(rows, N))
            O = np.zeros((rows, C)) if t.argument.offset is None else np.reshape(
                np.asarray(t.argument.offset, dtype=np.float64), (rows, C)).copy()
            A = sp.csr_matrix(A)
            A.sum_duplicates()
            if self.fixed.size:
                O = O + A[:, self.fixed] @ self.X_fixed
            A = sp.csr_matrix(A[:, self.free])
            piece = _Piece(t, A, O)
            if piece.quadratic:
                piece.hess = self._level_hessian(t, rows)
            elif piece.huber:
                size = t.shape[1] if len(t.shape) == 2 else 1
                piece.w = np.broadcast_to(np.ravel(t.w), (rows * C // size,)).astype(float)
                piece.size = self._group_rows(t, size)
            else:
                w, size, rho = t.norm_structure()
                piece.w, piece.rho = np.asarray(w, dtype=np.float64), float(rho)
                piece.size = self._group_rows(t, size)
            self.pieces.append(piece)
        self.quads = [p for p in self.pieces if p.quadratic]
        self.norms = [p for p in self.pieces if not (p.quadratic or p.huber)]
        self.hubers = [p for p in self.pieces if p.huber]

    def _group_rows(self, t, size: int) -> int:
        """Level rows per group: 1 when a group is a row of the C columns, ``size`` over all
        unknowns (C = 1)."""
        if self.C == 1:
            return int(size)
        if size != self.C:
            raise NotSeparable(f"{t.describe()} has groups of {size} entries, not rows")
        return 1

    def _level_hessian(self, t, rows: int):
        H = t.hessian(np.zeros(t.shape))
        C = self.C
        if np.ndim(H) == 1 or (not sp.issparse(H) and np.ndim(H) == 0):
            d = np.broadcast_to(np.asarray(H, dtype=np.float64), (rows * C,)).reshape(rows, C)
            if not np.all(d == d[:, :1]):
                raise NotSeparable(f"{t.describe()} weighs the columns differently")
            return sp.diags(d[:, 0], format="csr")
        H = sp.csr_matrix(H)
        if C == 1:
            return H
        level = sp.csr_matrix(H[0::C][:, 0::C])
        if abs(sp.kron(level, sp.identity(C), format="csr") - H).max() > 0:
            raise NotSeparable(f"{t.describe()} couples the columns")
        return level

    # ------------------------------------------------------------------ views
    def theta(self, X_free: np.ndarray) -> np.ndarray:
        """The model's flat θ of the free unknowns (fixed rows at their values)."""
        X = np.empty((self.N, self.C))
        X[self.free] = X_free
        X[self.fixed] = self.X_fixed
        return X.ravel()

    def level(self, theta: np.ndarray) -> np.ndarray:
        return np.reshape(theta, (self.N, self.C))[self.free]


def _columns(model: Model) -> int | None:
    """The common column count c of the variables (n_v×c, or a length-c bias), or None."""
    shapes = list(model.variables.values())
    two = {s[1] for s in shapes if len(s) == 2}
    if len(two) > 1:
        return None
    if not two:
        return 1
    c = two.pop()
    if all(len(s) == 2 or s == (c,) for s in shapes):
        return c
    return None


def build_system(model: Model) -> MMSystem:
    """The column-separable system when it holds, else the one over all unknowns."""
    try:
        return MMSystem(model, True)
    except NotSeparable:
        return MMSystem(model, False)


# ---------------------------------------------------------------------------- the pattern
def _row_pairs(A):
    """``(lo, hi, coefficient, row)`` of ``AᵀDA``'s upper triangle: every pair of nonzeros
    ``a ≤ b`` of a row r contributes ``d_r A_ra A_rb`` to entry ``(min, max)``."""
    counts = np.diff(A.indptr)
    out = []
    for q in np.unique(counts):
        if q == 0:
            continue
        rows = np.flatnonzero(counts == q)
        idx = A.indptr[rows][:, None] + np.arange(q)[None, :]
        cols, vals = A.indices[idx], A.data[idx]
        a, b = np.triu_indices(q)
        ci, cj = cols[:, a], cols[:, b]
        out.append((np.minimum(ci, cj).ravel(), np.maximum(ci, cj).ravel(),
                    (vals[:, a] * vals[:, b]).ravel(), np.repeat(rows, a.size)))
    if not out:
        z = np.zeros(0, dtype=np.int64)
        return z, z, np.zeros(0), z
    return tuple(np.concatenate(x) for x in zip(*out, strict=True))


def pair_count(A) -> float:
    q = np.diff(A.indptr).astype(np.float64)
    return float(np.sum(q * (q + 1) / 2))


class HessianPattern:
    """The fixed upper-triangle CSC pattern of ``H = Q + Σ_j A_jᵀ diag(d_j) A_j`` and the
    sparse maps ``d_j ↦ entries`` (``M_j``), so that every step's H is ``q + Σ M_j d_j``."""

    def __init__(self, N: int, weighted, Q):
        Qu = sp.triu(sp.coo_matrix(Q), format="coo") if Q is not None else None
        pairs = [_row_pairs(A) for A in weighted]
        his = [p[1] for p in pairs] + [np.arange(N)]
        los = [p[0] for p in pairs] + [np.arange(N)]
        if Qu is not None:
            his.append(Qu.col)
            los.append(Qu.row)
        keys = np.unique(np.concatenate([h.astype(np.int64) * N + lo
                                         for h, lo in zip(his, los, strict=True)]))
        col, row = keys // N, keys % N
        self.nnz = keys.size
        self.upper = sp.csc_matrix((np.zeros(keys.size), row, np.searchsorted(
            col, np.arange(N + 1))), shape=(N, N))
        self.maps = []
        for A, (lo, hi, v, r) in zip(weighted, pairs, strict=True):
            pos = np.searchsorted(keys, hi.astype(np.int64) * N + lo)
            self.maps.append(sp.csr_matrix((v, (pos, r)), shape=(keys.size, A.shape[0])))
        self.const = np.zeros(keys.size)
        if Qu is not None and Qu.nnz:
            pos = np.searchsorted(keys, Qu.col.astype(np.int64) * N + Qu.row)
            np.add.at(self.const, pos, Qu.data)

    def matrix(self, row_weights) -> sp.csc_matrix:
        data = self.const.copy()
        for M, d in zip(self.maps, row_weights, strict=True):
            data += M @ d
        upper = self.upper.copy()
        upper.data = data
        return upper

