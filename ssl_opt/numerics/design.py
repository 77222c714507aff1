"""A data matrix with an optional appended constant feature, never copied [001 §2].

SVMlin's convention: the bias is the last weight of ``w`` and multiplies a constant feature 1
appended to every row, so it is regularized like the other weights. Appending the column to a
large CSR matrix would copy it; :class:`LinearDesign` applies it implicitly instead::

    X̃ w = X w[:d] + w[d],        X̃ᵀ v = [Xᵀ v ; Σ v].
"""

from __future__ import annotations

import sys

import numpy as np
import scipy.sparse as sp

from ssl_opt._validation import as_float_matrix
from ssl_opt.exceptions import InvalidInputError

#: Seconds per stored entry of X for the product pair X̃p, X̃ᵀq in memory (sparse or dense).
PAIR_SECONDS_PER_ENTRY = 1.35e-9


class LinearDesign:
    """``X̃ = [X, 1]`` (or ``X`` when ``bias=False``) with products in O(nnz)."""

    #: ``X`` is an array of this process (a distributed design says False: :attr:`X` refuses).
    in_memory = True

    def __init__(self, X, bias: bool, name: str = "X"):
        if is_dask_array(X):  # np.asarray would gather the whole matrix onto this machine
            raise InvalidInputError(
                f"{name} is a dask array: LinearDesign would load it into memory. Use "
                f"ssl_opt.operators.DaskDesign({name}, bias, client=...), which keeps the rows on "
                "the workers (LinearSVM, TSVM and DAS3VM build it for a dask array).")
        X = as_float_matrix(X, name)
        if X.shape[0] == 0 or X.shape[1] == 0:
            raise InvalidInputError(
                f"{name} is empty (shape {X.shape}); pass an n x d matrix with n, d >= 1.")
        if sp.issparse(X) and not X.has_canonical_format:
            X = X.copy()  # never modify the caller's matrix in place
            X.sum_duplicates()
        self.X = X
        self.bias = bool(bias)
        self.n, self.d = X.shape
        self.dim = self.d + int(self.bias)

    @property
    def sparse(self) -> bool:
        return sp.issparse(self.X)

    @property
    def nnz(self) -> int:
        return int(self.X.nnz) if self.sparse else int(self.X.size)

    def product_seconds(self) -> float:
        """Predicted seconds of one product pair ``X̃p``, ``X̃ᵀq`` over all rows (a CGLS
        iteration's): ``PAIR_SECONDS_PER_ENTRY`` per stored entry, measured in memory on this
        2-core machine (6.1 ms at 100,000 × 20,000 with 45 non-zeros a row)."""
        return PAIR_SECONDS_PER_ENTRY * self.nnz + 2e-5

    def matvec(self, w: np.ndarray) -> np.ndarray:
        """``X̃ w`` (n,)."""
        out = np.asarray(self.X @ w[: self.d], dtype=np.float64).ravel()
        if self.bias:
            out += w[self.d]
        return out

    def rmatvec(self, v: np.ndarray) -> np.ndarray:
        """``X̃ᵀ v``: (dim,) for a vector, (dim, k) for k columns (one pass over X)."""
        out = np.empty((self.dim,) + v.shape[1:])
        out[: self.d] = np.asarray(self.X.T @ v, dtype=np.float64).reshape(out[: self.d].shape)
        if self.bias:
            out[self.d] = v.sum(axis=0)
        return out

    def rows(self, index) -> LinearDesign:
        """The design restricted to ``index`` (a copy of those rows only)."""
        sub = object.__new__(LinearDesign)
        sub.X = self.X[index]
        sub.bias = self.bias
        sub.n, sub.d = sub.X.shape
        sub.dim = self.dim
        return sub

    def stacked(self, blocks) -> LinearDesign:
        """Rows ``blocks`` (a list of index arrays) stacked — used by references only."""
        parts = [self.X[np.asarray(b)] for b in blocks]
        X = sp.vstack(parts, format="csr") if self.sparse else np.vstack(parts)
        return LinearDesign(X, self.bias)


def is_dask_array(X) -> bool:
    """Whether ``X`` is a ``dask.array.Array`` (dask is not imported when it is not loaded)."""
    module = sys.modules.get("dask.array")
    return module is not None and isinstance(X, module.Array)

