"""Input checks and small array helpers shared by the built-in terms (docs/design.md §5–6).

Every check raises :class:`~ssl_opt.exceptions.InvalidInputError` naming the argument (as
``"<name> of <Term>"``) and the fix; data arrays are copied (never the caller's array).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ssl_opt._validation import (
    as_float_array,
    as_float_matrix,
    check_psd,
    check_square,
    check_symmetric,
)
from ssl_opt.exceptions import InvalidInputError


def data_array(value, name: str, shape: tuple[int, ...], owner: str,
               allow_scalar: bool = True) -> np.ndarray:
    """``value`` as a finite float64 array of the argument's ``shape`` (a scalar is broadcast
    when ``allow_scalar``)."""
    label = f"{name} of {owner}"
    arr = as_float_array(value, label)
    if not np.all(np.isfinite(arr)):
        raise InvalidInputError(f"{label} contains NaN or inf; pass finite numbers.")
    if arr.shape != tuple(shape):
        if allow_scalar and arr.ndim == 0:
            return np.full(shape, float(arr))
        raise InvalidInputError(f"{label} must have the argument's shape {tuple(shape)}, got "
                                f"{arr.shape}.")
    return arr


def scalar(value, name: str, owner: str, low: float | None = None, strict: bool = False,
           allow_inf: bool = False) -> float:
    """A real number (``≥ low``, or ``> low`` when ``strict``)."""
    label = f"{name} of {owner}"
    if isinstance(value, bool) or np.ndim(value) != 0:
        raise InvalidInputError(f"{label} must be a real number, got {value!r}.")
    try:
        val = float(value)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{label} must be a real number, got {value!r}.") from exc
    if np.isnan(val) or (not allow_inf and not np.isfinite(val)):
        raise InvalidInputError(f"{label} must be finite, got {value!r}.")
    if low is not None and (val <= low if strict else val < low):
        raise InvalidInputError(f"{label} must be {'>' if strict else '≥'} {low:g}, got "
                                f"{value!r}.")
    return val


def row_weights(weight, shape: tuple[int, ...], owner: str) -> float | np.ndarray:
    """A row-wise weight: a scalar ≥ 0, or a length-n array ≥ 0 (n the argument's rows)."""
    if np.ndim(weight) == 0:
        return scalar(weight, "weight", owner, low=0.0)
    n = shape[0] if shape else 1
    w = as_float_array(weight, f"weight of {owner}")
    if w.shape != (n,):
        raise InvalidInputError(f"weight of {owner} must be a scalar or a length-{n} vector (one "
                                f"per row of the argument), got shape {w.shape}.")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise InvalidInputError(f"weight of {owner} must be finite and ≥ 0 everywhere.")
    return w


def as_rows(z: np.ndarray) -> np.ndarray:
    """``z`` viewed as rows: (n, c) as is, (n,) as (n, 1), () as (1, 1)."""
    z = np.asarray(z, dtype=np.float64)
    return z.reshape(z.shape[0], -1) if z.ndim else z.reshape(1, 1)


def row_step(t, shape: tuple[int, ...]) -> np.ndarray | float:
    """A prox step for row-separable terms: a scalar, or one step per row as an (n, 1) column
    (an array of the argument's shape is read along its first column: steps must be constant
    along a row)."""
    if np.ndim(t) == 0:
        return float(t)
    t = np.asarray(t, dtype=np.float64)
    n = shape[0] if shape else 1
    if t.shape == tuple(shape) or t.shape in ((n,), (n, 1)):
        return as_rows(t)[:, :1]
    raise InvalidInputError(f"the prox step t must be a scalar or one per row (shape ({n},)), "
                            f"got shape {t.shape}.")


def square_matrix(M, name: str, n: int, owner: str, psd: bool = True):
    """A symmetric (PSD when ``psd``) n×n matrix: a dense float64 array or a CSR matrix (copied),
    or a ``LinearOperator`` (products only; symmetry probed once, PSD not checked)."""
    label = f"{name} of {owner}"
    if isinstance(M, spla.LinearOperator):
        if M.shape != (n, n):
            raise InvalidInputError(f"{label} must be {n}x{n} to match the argument, got shape "
                                    f"{M.shape}.")
        rng = np.random.default_rng(0)
        a, b = rng.standard_normal(n), rng.standard_normal(n)
        Ma, Mb = np.asarray(M @ a).ravel(), np.asarray(M @ b).ravel()
        if abs(a @ Mb - b @ Ma) > 1e-8 * max(1.0, np.linalg.norm(Ma) * np.linalg.norm(b)):
            raise InvalidInputError(f"{label} must be symmetric (⟨a, Mb⟩ ≠ ⟨Ma, b⟩ for random "
                                    "a, b); symmetrize the operator.")
        return M
    mat = as_float_matrix(M, label)
    check_square(mat, label, n)
    check_symmetric(mat, label)
    if psd:
        check_psd(mat, label)
    return mat


def adjacency(W, n: int, owner: str) -> sp.csr_matrix:
    """A symmetric non-negative n×n weight matrix (dense or sparse) as CSR (a copy)."""
    label = f"W of {owner}"
    mat = as_float_matrix(W, label)
    check_square(mat, label, n)
    data = mat.data if sp.issparse(mat) else mat
    if data.size and data.min() < 0:
        raise InvalidInputError(f"{label} must be non-negative (min weight {data.min():.3g}); "
                                "graph edge weights must be ≥ 0.")
    check_symmetric(mat, label)
    return sp.csr_matrix(mat)
