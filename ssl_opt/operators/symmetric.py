"""What every symmetric n×n kernel operator of this package shares: the check of its kernel
arguments, ``Kᵀ = K`` and the guarded dense copy, so an operator only defines its products
(``_matmat``) and ``columns(idx)``."""

from __future__ import annotations

import numpy as np
from scipy.sparse.linalg import LinearOperator

from ssl_opt.builders.kernels import KERNEL_PARAMS, KERNELS
from ssl_opt.exceptions import InvalidInputError

#: ``to_dense`` refuses above this many bytes unless told otherwise.
DENSE_LIMIT = 2 * 2**30


def check_kernel_arguments(kind: str, params: dict, dtype) -> np.dtype:
    """Validate a kernel operator's ``kind``, its ``params`` and the precision ``dtype``
    (float64 or float32); returns the dtype."""
    if kind not in KERNELS:
        raise InvalidInputError(f"kind must be one of {sorted(KERNELS)}, got {kind!r}.")
    unknown = set(params) - KERNEL_PARAMS[kind]
    if unknown:
        raise InvalidInputError(
            f"params {sorted(unknown)} are not accepted by kind={kind!r}; allowed: "
            f"{sorted(KERNEL_PARAMS[kind]) or 'none'}.")
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        raise InvalidInputError(f"dtype must be float64 or float32, got {dtype!r}.") from None
    if dtype not in (np.dtype(np.float64), np.dtype(np.float32)):
        raise InvalidInputError(f"dtype must be float64 or float32, got {dtype}.")
    return dtype


class SymmetricOperator(LinearOperator):
    """A symmetric ``LinearOperator`` (float64 products) that gives its columns.

    Subclasses define ``_matmat(V)`` and ``columns(idx)``; ``dense_hint`` names what to use
    instead of a dense copy in the refusal of :meth:`to_dense`."""

    dense_hint = "products only: solver='pcg'"

    def matvec(self, x):
        self._check_length(x, "vector")
        return super().matvec(x)

    def matmat(self, X):
        self._check_length(X, "matrix")
        return super().matmat(X)

    def _check_length(self, x, what: str) -> None:
        n = self.shape[1]
        shape = np.shape(x)
        if not shape or shape[0] != n:
            raise InvalidInputError(
                f"{type(self).__name__} is {self.shape[0]} x {n}: the {what} it multiplies "
                f"must have {n} rows (one per training point), got shape {shape}.")

    def _matvec(self, v: np.ndarray) -> np.ndarray:
        return self._matmat(np.reshape(v, (-1, 1)))[:, 0]

    def _rmatvec(self, v: np.ndarray) -> np.ndarray:
        return self._matvec(v)

    def _rmatmat(self, V: np.ndarray) -> np.ndarray:
        return self._matmat(V)

    def _adjoint(self) -> SymmetricOperator:
        return self

    def _transpose(self) -> SymmetricOperator:
        return self

    def columns(self, idx) -> np.ndarray:
        raise NotImplementedError

    def rows(self, idx) -> np.ndarray:
        """``K[idx, :]`` (len(idx) × n, float64; K is symmetric)."""
        return self.columns(idx).T

    def to_dense(self, max_bytes: float = DENSE_LIMIT) -> np.ndarray:
        """The matrix as a dense float64 array — refused above ``max_bytes`` (2 GiB)."""
        need = 8.0 * self.shape[0] ** 2
        if need > max_bytes:
            raise InvalidInputError(
                f"a dense K of n = {self.shape[0]} takes {need / 2**30:.1f} GiB, above "
                f"max_bytes = {max_bytes / 2**30:.1f} GiB; keep the operator "
                f"({self.dense_hint}) or raise max_bytes.")
        return self.columns(np.arange(self.shape[0]))
