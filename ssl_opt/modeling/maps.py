r"""The linear maps of affine expressions (:mod:`ssl_opt.modeling.expressions`), each with its
forms beside it, as CVXPY keeps a canonicalization beside its atom:

* ``apply``/``adjoint`` (values and pull-backs) and ``cvxpy`` (the reference);
* ``matrix()``: the matrix in the C-order flattening of input and output (CSR, or a dense
  array for a dense product), which the solvers that factorize assemble from;
* ``column_matrix(c)``: the matrix on one column when the map acts alike on the c columns of
  an n×c argument (the same matrix for each: ``A = A₀ ⊗ I_c``), None when it mixes them —
  one row-level factor then serves c right-hand sides;
* ``abs_apply``/``abs_adjoint``: products with ``|A|`` (entrywise absolute values; for a
  composition the product of the factors', an entrywise upper bound), for diagonal
  preconditioners; :class:`NotExplicit` for a products-only operator.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ssl_opt.exceptions import InvalidInputError
from ssl_opt.optional import cvxpy as cp


class NotExplicit(Exception):
    """A map without entrywise absolute values (a products-only operator)."""


def _size(shape) -> int:
    return int(np.prod(shape, dtype=int))


def _columns(shape) -> int:
    return _size(shape[1:]) if len(shape) > 1 else 1


def split_rows(shape, columns: int) -> int:
    """Rows of an array of ``shape`` in the column view (``(m, c)`` → m, ``(c,)`` → 1)."""
    if columns == 1:
        return _size(shape) if shape else 1
    return shape[0] if len(shape) == 2 else 1


def _on_columns(M, columns: int):
    """``M ⊗ I_c``, the matrix of M applied alike to each of ``columns`` columns in C order
    (M itself for one column); sparse stays sparse."""
    if columns == 1:
        return M
    if sp.issparse(M):
        return sp.kron(M, sp.identity(columns), format="csr")
    return np.kron(M, np.eye(columns))


def mixed_product(a, b):
    """``a @ b`` for any mix of dense arrays and sparse matrices (dense when either is)."""
    if sp.issparse(a) and not sp.issparse(b):
        return np.asarray(a @ b)
    if not sp.issparse(a) and sp.issparse(b):
        return np.asarray((b.T @ a.T).T)
    return a @ b


def chain_matrix(factors, columns: int = 0):
    """The matrix of the composition of ``factors`` (outermost first): ``matrix()`` of each
    with ``columns = 0``, ``column_matrix(columns)`` otherwise (None if one mixes columns)."""
    out = None
    for f in reversed(factors):
        m = f.matrix() if columns == 0 else f.column_matrix(columns)
        if m is None:
            return None
        out = m if out is None else mixed_product(m, out)
    return out


class LinearMap:
    """One linear map between arrays of fixed shapes (module docstring)."""

    in_shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    #: The CVXPY reference can use it (False for products-only operators).
    explicit: bool = True
    #: Its matrix has no negative entry, so ``|A|`` is A itself (a selection, a broadcast).
    nonnegative: bool = False

    def apply(self, v: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def adjoint(self, g: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def cvxpy(self, v: cp.Expression) -> cp.Expression:
        raise NotImplementedError

    def factors(self) -> list[LinearMap]:
        """The elementary maps of this one, outermost first (the last is applied first)."""
        return [self]

    def matrix(self):
        raise NotImplementedError(f"{type(self).__name__} has no matrix() method")

    def column_matrix(self, columns: int):
        """The whole matrix for one column, else :meth:`column_block`."""
        return self.matrix() if columns == 1 else self.column_block(columns)

    def column_block(self, columns: int):
        """The matrix on one of ``columns`` > 1 columns, or None (module docstring)."""
        return None

    def abs_apply(self, v: np.ndarray, cache: dict) -> np.ndarray:
        if self.nonnegative:
            return self.apply(v)
        raise NotExplicit

    def abs_adjoint(self, g: np.ndarray, cache: dict) -> np.ndarray:
        if self.nonnegative:
            return self.adjoint(g)
        raise NotExplicit


def matrices(m: LinearMap) -> list:
    """The matrices (arrays, sparse matrices, operators) of the products in ``m``."""
    return [f.M for f in m.factors() if isinstance(f, MatMul)]


def dense_entries(m: LinearMap) -> int:
    """Entries of the dense 2-D arrays among ``m``'s matrices (a kernel expansion's K: what
    makes a map costly for CVXPY and ill-conditioned for a dual)."""
    return sum(int(M.size) for M in matrices(m) if isinstance(M, np.ndarray) and M.ndim == 2)


@dataclass(frozen=True, eq=False)
class Identity(LinearMap):
    in_shape: tuple[int, ...]
    nonnegative = True

    @property
    def out_shape(self) -> tuple[int, ...]:
        return self.in_shape

    def apply(self, v):
        return v

    def adjoint(self, g):
        return g

    def cvxpy(self, v):
        return v

    def matrix(self):
        return sp.identity(_size(self.in_shape), format="csr")

    def column_block(self, columns):
        return sp.identity(split_rows(self.in_shape, columns), format="csr")


@dataclass(frozen=True, eq=False)
class MatMul(LinearMap):
    """``v ↦ M v`` (v a vector or an n×c matrix)."""

    M: object
    in_shape: tuple[int, ...]

    @property
    def out_shape(self) -> tuple[int, ...]:
        return (self.M.shape[0],) + self.in_shape[1:]

    @property
    def explicit(self) -> bool:
        return not isinstance(self.M, spla.LinearOperator)

    def apply(self, v):
        out = self.M @ v
        return np.asarray(out, dtype=np.float64).reshape(self.out_shape)

    def adjoint(self, g):
        out = self.M.T @ g
        return np.asarray(out, dtype=np.float64).reshape(self.in_shape)

    def cvxpy(self, v):
        if not self.explicit:
            raise InvalidInputError("a products-only operator has no CVXPY form; pass the "
                                    "matrix as an array to use the reference backend.")
        return self.M @ v

    def matrix(self):
        if not self.explicit:
            raise NotImplementedError("a products-only operator has no matrix")
        M = sp.csr_matrix(self.M) if sp.issparse(self.M) else np.asarray(self.M)
        return _on_columns(M, _columns(self.in_shape))

    def column_block(self, columns):
        if len(self.in_shape) != 2 or not self.explicit:
            return None
        return sp.csr_matrix(self.M) if sp.issparse(self.M) else np.asarray(self.M)

    def _abs(self, cache: dict):
        if not self.explicit:
            raise NotExplicit
        if id(self.M) not in cache:
            cache[id(self.M)] = abs(self.M) if sp.issparse(self.M) else np.abs(self.M)
        return cache[id(self.M)]

    def abs_apply(self, v, cache):
        return np.asarray(self._abs(cache) @ v, dtype=np.float64).reshape(self.out_shape)

    def abs_adjoint(self, g, cache):
        return np.asarray(self._abs(cache).T @ g, dtype=np.float64).reshape(self.in_shape)


@dataclass(frozen=True, eq=False)
class Rows(LinearMap):
    """``v ↦ v[index]`` along the first axis (index a slice or distinct integers)."""

    index: np.ndarray
    in_shape: tuple[int, ...]
    nonnegative = True

    @property
    def out_shape(self) -> tuple[int, ...]:
        return (len(self.index),) + self.in_shape[1:]

    def apply(self, v):
        return v[self.index]

    def adjoint(self, g):
        out = np.zeros(self.in_shape)
        out[self.index] = g
        return out

    def cvxpy(self, v):
        return v[self.index]

    def _select(self):
        k = len(self.index)
        return sp.csr_matrix((np.ones(k), (np.arange(k), self.index)),
                             shape=(k, self.in_shape[0]))

    def matrix(self):
        return _on_columns(self._select(), _columns(self.in_shape))

    def column_block(self, columns):
        return self._select() if len(self.in_shape) == 2 else None


@dataclass(frozen=True, eq=False)
class Broadcast(LinearMap):
    """``b ↦ 1 bᵀ``: a scalar or a length-c vector repeated on n rows (the bias)."""

    n: int
    in_shape: tuple[int, ...]
    nonnegative = True

    @property
    def out_shape(self) -> tuple[int, ...]:
        return (self.n,) + self.in_shape

    def apply(self, v):
        return np.broadcast_to(v, self.out_shape).copy()

    def adjoint(self, g):
        return np.asarray(g.sum(axis=0)).reshape(self.in_shape)

    def cvxpy(self, v):
        if not self.in_shape:
            return v * np.ones(self.n)
        return np.ones((self.n, 1)) @ cp.reshape(v, (1, self.in_shape[0]), order="C")

    def matrix(self):
        return _on_columns(sp.csr_matrix(np.ones((self.n, 1))), max(1, _size(self.in_shape)))

    def column_block(self, columns):
        return sp.csr_matrix(np.ones((self.n, 1))) if self.in_shape == (columns,) else None


@dataclass(frozen=True, eq=False)
class Scale(LinearMap):
    """``v ↦ s·v`` (a scalar, or an array broadcast against v)."""

    s: object
    in_shape: tuple[int, ...]

    @property
    def out_shape(self) -> tuple[int, ...]:
        return self.in_shape

    def apply(self, v):
        return self.s * v

    def adjoint(self, g):
        return self.s * g

    def cvxpy(self, v):
        if np.ndim(self.s) == 0:
            return float(self.s) * v
        return cp.multiply(np.broadcast_to(self.s, self.in_shape), v)

    def matrix(self):
        if np.ndim(self.s) == 0:
            return float(self.s) * sp.identity(_size(self.in_shape), format="csr")
        return sp.diags(np.ravel(np.broadcast_to(self.s, self.in_shape)), format="csr")

    def column_block(self, columns):
        rows = split_rows(self.in_shape, columns)
        if np.ndim(self.s) == 0:
            return float(self.s) * sp.identity(rows, format="csr")
        s = np.broadcast_to(self.s, self.in_shape).reshape(rows, columns)
        return sp.diags(s[:, 0], format="csr") if np.all(s == s[:, :1]) else None

    def abs_apply(self, v, cache):
        return np.abs(self.s) * v

    def abs_adjoint(self, g, cache):
        return np.abs(self.s) * g


@dataclass(frozen=True, eq=False)
class Compose(LinearMap):
    """``v ↦ outer(inner(v))``."""

    outer: LinearMap
    inner: LinearMap

    @property
    def in_shape(self):
        return self.inner.in_shape

    @property
    def out_shape(self):
        return self.outer.out_shape

    @property
    def explicit(self):
        return self.outer.explicit and self.inner.explicit

    def apply(self, v):
        return self.outer.apply(self.inner.apply(v))

    def adjoint(self, g):
        return self.inner.adjoint(self.outer.adjoint(g))

    def cvxpy(self, v):
        return self.outer.cvxpy(self.inner.cvxpy(v))

    def factors(self) -> list[LinearMap]:
        return self.outer.factors() + self.inner.factors()

    def matrix(self):
        return chain_matrix(self.factors())

    def column_block(self, columns):
        return chain_matrix(self.factors(), columns)

    def abs_apply(self, v, cache):
        return self.outer.abs_apply(self.inner.abs_apply(v, cache), cache)

    def abs_adjoint(self, g, cache):
        return self.inner.abs_adjoint(self.outer.abs_adjoint(g, cache), cache)


@dataclass(frozen=True, eq=False)
class RowBlocks(LinearMap):
    """``v ↦ v`` reshaped ``(m, k)`` row-major: consecutive groups of ``k`` entries of a
    length-``m·k`` vector become the rows (the groups of :class:`SumOfNorms`)."""

    k: int
    in_shape: tuple[int, ...]

    @property
    def out_shape(self) -> tuple[int, ...]:
        return (self.in_shape[0] // self.k, self.k)

    def apply(self, v):
        return np.asarray(v).reshape(self.out_shape)

    def adjoint(self, g):
        return np.asarray(g).reshape(self.in_shape)

    def cvxpy(self, v):
        return cp.reshape(v, self.out_shape, order="C")


@dataclass(frozen=True, eq=False)
class Entries(LinearMap):
    """``V ↦ (V[i_p, j_p])_p``: chosen entries of a matrix, as a vector (NPKL's pair entries
    ``Z_ij``); the adjoint scatters a vector back into a matrix (repeated entries add up)."""

    rows: np.ndarray
    cols: np.ndarray
    in_shape: tuple[int, ...]

    @property
    def out_shape(self) -> tuple[int, ...]:
        return (len(self.rows),)

    def apply(self, v):
        return np.asarray(v)[self.rows, self.cols]

    def adjoint(self, g):
        out = np.zeros(self.in_shape)
        np.add.at(out, (self.rows, self.cols), g)
        return out

    def cvxpy(self, v):
        flat = cp.reshape(v, (int(np.prod(self.in_shape)),), order="C")
        return flat[self.rows * self.in_shape[1] + self.cols]
