r"""Affine expressions of the model's variables: ``z = Σ_v A_v(x_v) + c``.

The terms of a model (docs/design.md §6) are functions ``h(z)`` of an affine image of the
variables; this module is the small algebra that states those images the way one writes them::

    alpha, b = Variable("alpha", (n,)), Variable("b", ())
    f = K @ alpha + b            # a kernel expansion, f = Kα + b
    margins = f[:l]              # the labeled outputs

Each expression can be applied to values (:meth:`Affine.value`), pulled back
(:meth:`Affine.adjoint`, the transpose of its linear part, used for gradients and
multipliers) and turned into a CVXPY expression (:meth:`Affine.cvxpy`) for the reference.
The maps themselves, with their matrix forms, are in :mod:`ssl_opt.modeling.maps`.
A matrix in ``M @ expr`` may be a dense array, a scipy sparse matrix or a
``scipy.sparse.linalg.LinearOperator`` (products only: solvers run on it, the CVXPY reference
does not).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ssl_opt.exceptions import InvalidInputError
from ssl_opt.modeling.maps import (
    Broadcast,
    Compose,
    Entries,
    Identity,
    LinearMap,
    MatMul,
    RowBlocks,
    Rows,
    Scale,
)
from ssl_opt.optional import cvxpy as cp


def _compose(outer: LinearMap, inner: LinearMap) -> LinearMap:
    return inner if isinstance(outer, Identity) else (
        outer if isinstance(inner, Identity) else Compose(outer, inner))


# ---------------------------------------------------------------------------- expressions
def _as_shape(shape) -> tuple[int, ...]:
    if isinstance(shape, numbers.Integral):
        shape = (int(shape),)
    try:
        shape = tuple(int(s) for s in shape)
    except TypeError as exc:
        raise InvalidInputError(f"shape must be a tuple of ints, got {shape!r}.") from exc
    if len(shape) > 2 or any(s < 1 for s in shape):
        raise InvalidInputError(f"shape must be (), (n,) or (n, c) with positive sizes, got "
                                f"{shape}.")
    return shape


class Affine:
    """``Σ_k A_k(x_{v_k}) + offset``: parts ``(variable, map)`` and a constant offset."""

    # Make numpy defer to the reflected operators, so that ``K @ expr`` builds an expression.
    __array_ufunc__ = None
    __array_priority__ = 1000

    def __init__(self, parts: tuple, shape: tuple[int, ...], offset=None):
        self.parts = tuple(parts)
        self.shape = tuple(shape)
        self.offset = None if offset is None else np.broadcast_to(
            np.asarray(offset, dtype=np.float64), self.shape)

    # -- evaluation
    @property
    def variables(self) -> list[Variable]:
        seen: dict[int, Variable] = {}
        for var, _ in self.parts:
            seen.setdefault(id(var), var)
        return list(seen.values())

    @property
    def explicit(self) -> bool:
        """Every map has a CVXPY form (no products-only operator)."""
        return all(m.explicit for _, m in self.parts)

    def value(self, x: Mapping[str, np.ndarray]) -> np.ndarray:
        """The expression at the variable values ``x`` (a dict by variable name)."""
        out = np.zeros(self.shape) if self.offset is None else np.array(self.offset)
        for var, linear in self.parts:
            out = out + linear.apply(x[var.name])
        return out

    def adjoint(self, g: np.ndarray) -> dict[str, np.ndarray]:
        """``Aᵀg`` per variable: the gradient of ``⟨g, z⟩`` with respect to each variable."""
        out: dict[str, np.ndarray] = {}
        for var, linear in self.parts:
            pulled = linear.adjoint(g)
            out[var.name] = out[var.name] + pulled if var.name in out else pulled
        return out

    def cvxpy(self, handles: Mapping[str, cp.Expression]) -> cp.Expression:
        expr = None
        for var, linear in self.parts:
            term = linear.cvxpy(handles[var.name])
            expr = term if expr is None else expr + term
        if self.offset is not None:
            expr = expr + self.offset
        return expr

    def is_variable(self) -> bool:
        """The expression is one whole variable, with no map and no offset."""
        return (len(self.parts) == 1 and isinstance(self.parts[0][1], Identity)
                and self.offset is None)

    # -- algebra
    def _map(self, linear_of_shape) -> Affine:
        parts = tuple((var, _compose(linear_of_shape, m)) for var, m in self.parts)
        offset = None if self.offset is None else linear_of_shape.apply(self.offset)
        return Affine(parts, linear_of_shape.out_shape, offset)

    def __rmatmul__(self, M) -> Affine:
        if isinstance(M, Affine):
            return NotImplemented
        if not (sp.issparse(M) or isinstance(M, (np.ndarray, spla.LinearOperator))):
            M = np.asarray(M, dtype=np.float64)
        if len(M.shape) != 2 or not self.shape or M.shape[1] != self.shape[0]:
            raise InvalidInputError(
                f"cannot multiply a {M.shape} matrix by an expression of shape {self.shape}.")
        if not isinstance(M, spla.LinearOperator):
            M = M.tocsr() if sp.issparse(M) else np.asarray(M, dtype=np.float64)
        return self._map(MatMul(M, self.shape))

    def __getitem__(self, index) -> Affine:
        if not self.shape:
            raise InvalidInputError("a scalar expression cannot be indexed.")
        idx = np.arange(self.shape[0])[index]
        if np.ndim(idx) != 1:
            raise InvalidInputError("index the first axis with a slice or a list of rows.")
        if len(np.unique(idx)) != len(idx):
            raise InvalidInputError("row indices of an expression must be distinct.")
        return self._map(Rows(idx, self.shape))

    def broadcast(self, n: int) -> Affine:
        """A scalar (or length-c) expression repeated on ``n`` rows."""
        return self._map(Broadcast(int(n), self.shape))

    def __add__(self, other) -> Affine:
        if isinstance(other, Affine):
            a, b = self._aligned(other)
            offset = None
            if a.offset is not None or b.offset is not None:
                offset = (0.0 if a.offset is None else a.offset) + (
                    0.0 if b.offset is None else b.offset)
            return Affine(a.parts + b.parts, a.shape, offset)
        const = np.asarray(other, dtype=np.float64)
        if const.shape and const.shape != self.shape:
            raise InvalidInputError(f"cannot add a constant of shape {const.shape} to an "
                                    f"expression of shape {self.shape}.")
        offset = const if self.offset is None else self.offset + const
        return Affine(self.parts, self.shape, offset)

    def _aligned(self, other: Affine) -> tuple[Affine, Affine]:
        """Both operands at one shape; a scalar or length-c bias broadcasts over rows."""
        a, b = self, other
        if a.shape == b.shape:
            return a, b
        if len(b.shape) < len(a.shape) and a.shape[1:] == b.shape:
            return a, b.broadcast(a.shape[0])
        if len(a.shape) < len(b.shape) and b.shape[1:] == a.shape:
            return a.broadcast(b.shape[0]), b
        raise InvalidInputError(f"cannot add expressions of shapes {a.shape} and {b.shape}.")

    __radd__ = __add__

    def __neg__(self) -> Affine:
        return self * -1.0

    def __sub__(self, other) -> Affine:
        return self + (-other)

    def __rsub__(self, other) -> Affine:
        return (-self) + other

    def __mul__(self, s) -> Affine:
        if isinstance(s, Affine):
            raise InvalidInputError("the product of two expressions is not affine; state it "
                                    "as a term.")
        s = np.asarray(s, dtype=np.float64)
        if s.ndim:
            s = np.broadcast_to(s, self.shape)
        return self._map(Scale(float(s) if s.ndim == 0 else s, self.shape))

    __rmul__ = __mul__

    def __repr__(self) -> str:
        names = ", ".join(v.name for v in self.variables)
        return f"<Affine {self.shape} of {names}>"


class Variable(Affine):
    """A named decision variable of shape ``()``, ``(n,)`` or ``(n, c)``."""

    def __init__(self, name: str, shape=()):
        if not isinstance(name, str) or not name.isidentifier():
            raise InvalidInputError(f"a variable name must be an identifier, got {name!r}.")
        self.name = name
        shape = () if shape == () else _as_shape(shape)
        super().__init__(((self, Identity(shape)),), shape)

    def __repr__(self) -> str:
        return f"Variable({self.name!r}, {self.shape})"


def as_expression(value, argument: str) -> Affine:
    """``value`` if it is an expression; otherwise an error naming ``argument``."""
    if not isinstance(value, Affine):
        raise InvalidInputError(
            f"{argument} must be an expression of the model's variables (a Variable or an "
            f"affine combination of them, e.g. K @ alpha + b), got {type(value).__name__}.")
    return value


def matmul(M, expr: Affine) -> Affine:
    """``M @ expr`` for any matrix ``M``, including a ``scipy.sparse.linalg.LinearOperator``
    (whose own ``@`` refuses objects it does not know, before ``expr`` can answer)."""
    return as_expression(expr, "expr").__rmatmul__(M)


def row_blocks(expr: Affine, k: int) -> Affine:
    """A length-``m·k`` expression as the ``(m, k)`` expression whose rows are its consecutive
    groups of ``k`` entries (``SumOfRowNorms``' argument ``G x − h`` reshaped)."""
    if len(expr.shape) != 1 or k < 1 or expr.shape[0] % k:
        raise ValueError(f"row_blocks needs a vector whose length is a multiple of k = {k}, "
                         f"got shape {expr.shape}.")
    return expr._map(RowBlocks(int(k), expr.shape))


def entries(expr: Affine, rows, cols) -> Affine:
    """The entries ``expr[rows[p], cols[p]]`` of a matrix expression, as a vector."""
    for name, index in (("rows", rows), ("cols", cols)):
        if not np.issubdtype(np.asarray(index).dtype, np.integer):
            raise InvalidInputError(f"{name} of entries must be integer indices, got dtype "
                                    f"{np.asarray(index).dtype}.")
    rows, cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
    if len(expr.shape) != 2 or rows.ndim != 1 or rows.shape != cols.shape or not rows.size:
        raise InvalidInputError(f"entries needs a matrix expression and two equal-length, "
                                f"non-empty index vectors; got shapes {expr.shape}, "
                                f"{rows.shape} and {cols.shape}.")
    n, c = expr.shape
    if rows.min() < 0 or rows.max() >= n or cols.min() < 0 or cols.max() >= c:
        raise InvalidInputError(f"entries' indices must lie in the {n}×{c} matrix.")
    return expr._map(Entries(rows, cols, expr.shape))
