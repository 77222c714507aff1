"""Input checks shared by every public entry point (docs/design.md §5).

Each check raises :class:`ssl_opt.exceptions.InvalidInputError` (a ``ValueError``) naming the
argument and the fix. Nothing is silently clipped or repaired.
"""

from __future__ import annotations

import numbers
import tempfile
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ssl_opt.exceptions import BadScalingWarning, InvalidInputError


def reject_complex(value, name: str) -> None:
    """Complex input is refused: converting it to float64 would drop the imaginary part."""
    dtype = getattr(value, "dtype", None)
    if dtype is None and not sp.issparse(value):
        try:
            dtype = np.asarray(value).dtype
        except (TypeError, ValueError):
            return  # not array-like; the caller's conversion reports it
    if dtype is not None and np.issubdtype(dtype, np.complexfloating):
        raise InvalidInputError(
            f"{name} has a complex dtype ({dtype}); pass real numbers (np.real({name}) if the "
            "imaginary part is zero)."
        )


def as_float_array(value, name: str) -> np.ndarray:
    """``value`` as a real float64 ndarray that is the caller's own array never (a copy where
    ``np.asarray`` would alias it), so a problem may freeze it."""
    reject_complex(value, name)
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name} must be numeric: {exc}") from exc
    if isinstance(value, np.ndarray) and np.shares_memory(arr, value):
        arr = arr.copy()
    return arr


def as_float_matrix(value, name: str, *, allow_sparse: bool = True):
    """Return ``value`` as a float64 2-D ndarray or CSR matrix, checking it is finite and real.
    The result never shares memory with ``value`` (a problem freezes what it stores, and
    canonicalizing a sparse matrix works in place)."""
    if sp.issparse(value):
        if not allow_sparse:
            raise InvalidInputError(f"{name} must be a dense array; convert it with .toarray().")
        reject_complex(value, name)
        mat = sp.csr_matrix(value, dtype=np.float64, copy=True)
        data = mat.data
    else:
        try:
            mat = as_float_array(value, name)
        except InvalidInputError as exc:
            if exc.__cause__ is None:
                raise
            raise InvalidInputError(f"{name} must be a numeric matrix: {exc.__cause__}") from exc
        if mat.ndim != 2:
            raise InvalidInputError(f"{name} must be 2-D, got an array with shape {mat.shape}.")
        data = mat
    if not np.all(np.isfinite(data)):
        raise InvalidInputError(f"{name} contains NaN or inf; remove or impute those entries.")
    return mat


def check_square(mat, name: str, n: int | None = None) -> int:
    rows, cols = mat.shape
    if rows != cols:
        raise InvalidInputError(f"{name} must be square, got shape {mat.shape}.")
    if n is not None and rows != n:
        raise InvalidInputError(
            f"{name} must be {n}x{n} to match the other inputs, got shape {mat.shape}."
        )
    return rows


def check_symmetric(mat, name: str, rtol: float = 1e-10) -> None:
    diff = mat - mat.T
    if sp.issparse(diff):
        err = abs(diff).max() if diff.nnz else 0.0
        scale = abs(mat).max() if mat.nnz else 0.0
    else:
        err = np.max(np.abs(diff)) if diff.size else 0.0
        scale = np.max(np.abs(mat)) if mat.size else 0.0
    if err > rtol * max(1.0, scale):
        raise InvalidInputError(
            f"{name} must be symmetric (max |{name} - {name}.T| = {err:.3g}); "
            f"symmetrize it, e.g. ({name} + {name}.T) / 2."
        )


#: Above this size the PSD check runs a short Lanczos instead of a dense eigenvalue solve.
PSD_DENSE_MAX_N = 500
#: Restarts of that Lanczos run: a few hundred products at most, however clustered the
#: spectrum (a kernel's many near-zero eigenvalues stall ARPACK's convergence for minutes).
PSD_LANCZOS_MAXITER = 10


def smallest_eigenvalue(mat) -> float | None:
    """The smallest eigenvalue of the symmetric ``mat`` (dense or sparse) up to
    :data:`PSD_DENSE_MAX_N` (LAPACK); above, the smallest Ritz value of a short Lanczos run
    (ARPACK, smallest algebraic), converged or not. A Ritz value is a Rayleigh quotient, so it
    bounds the smallest eigenvalue from above: a negative one proves ``mat`` indefinite, a
    non-negative one proves nothing. None when the run found no Ritz value."""
    from scipy.linalg import eigvalsh
    from scipy.sparse.linalg import ArpackNoConvergence, eigsh

    n = mat.shape[0]
    if n == 0:
        return None
    if n <= PSD_DENSE_MAX_N:
        dense = mat.toarray() if sp.issparse(mat) else np.asarray(mat)
        return float(eigvalsh(dense, subset_by_index=[0, 0], check_finite=False)[0])
    v0 = np.random.default_rng(0).standard_normal(n)
    try:
        values = eigsh(mat, k=1, which="SA", tol=1e-3, v0=v0, maxiter=PSD_LANCZOS_MAXITER,
                       return_eigenvectors=False)
    except ArpackNoConvergence as exc:
        values = exc.eigenvalues
    return float(np.min(values)) if len(values) else None


def check_psd(mat, name: str, rtol: float = 1e-8) -> None:
    """Refuse a symmetric matrix with an eigenvalue below ``−rtol·max(1, max|mat|)``: a
    non-PSD kernel or Laplacian makes the problem non-convex, and a solver would report an
    "optimal" point of the wrong problem. Exact up to :data:`PSD_DENSE_MAX_N`; above, it
    refuses only what a short Lanczos run proves indefinite (see :func:`smallest_eigenvalue`)."""
    lam = smallest_eigenvalue(mat)
    if lam is None:
        return
    scale = max(1.0, float(abs(mat).max()) if sp.issparse(mat) else float(np.abs(mat).max()))
    if lam < -rtol * scale:
        raise InvalidInputError(
            f"{name} is not positive semidefinite (smallest eigenvalue {lam:.3g}); the problem "
            f"would be non-convex. Use a PSD {name} (a valid kernel, or a Laplacian of "
            "non-negative weights)."
        )


def check_binary_labels(y, name: str = "y", n: int | None = None) -> np.ndarray:
    """Labels of the first ``len(y)`` points: a non-empty ±1 vector with both classes (a copy
    of ``y``, never the caller's array)."""
    try:
        arr = as_float_array(y, name)
    except InvalidInputError as exc:
        if exc.__cause__ is None:
            raise
        raise InvalidInputError(f"{name} must be a vector of ±1 labels: {exc.__cause__}") from exc
    if arr.ndim != 1:
        raise InvalidInputError(f"{name} must be 1-D, got shape {arr.shape}.")
    if arr.size == 0:
        raise InvalidInputError(f"{name} is empty: at least one labeled point is needed (l >= 1).")
    if not np.all(np.isfinite(arr)):
        raise InvalidInputError(f"{name} contains NaN or inf; labels must be -1 or +1.")
    if not np.all(np.isin(arr, (-1.0, 1.0))):
        bad = np.unique(arr[~np.isin(arr, (-1.0, 1.0))])[:5]
        raise InvalidInputError(
            f"{name} must hold only -1 and +1, found {bad.tolist()}; "
            f"map your classes to ±1 (e.g. 2*(y == positive) - 1)."
        )
    if n is not None and arr.size > n:
        raise InvalidInputError(f"{name} has {arr.size} labels but there are only {n} points.")
    if np.all(arr == arr[0]):
        raise InvalidInputError(
            f"{name} holds one class only ({int(arr[0]):+d}); both classes must be labeled."
        )
    return arr


def check_writable_directory(path: str | Path, name: str) -> Path:
    """Create the directory ``path`` if needed and write a probe file in it, so that a path
    the run could not write fails before the run, not after it."""
    out = Path(path)
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as exc:
        raise InvalidInputError(f"{name} {str(path)!r} cannot be written ({exc.strerror or exc}"
                                "); choose a directory you can write to.") from None
    return out


def check_real(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value):
        raise InvalidInputError(f"{name} must be a finite real number, got {value!r}.")
    return float(value)


def check_positive(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidInputError(f"{name} must be a positive real number, got {value!r}.")
    val = float(value)
    if not np.isfinite(val) or val <= 0:
        raise InvalidInputError(f"{name} must be > 0, got {value!r}.")
    return val


def check_nonnegative(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidInputError(f"{name} must be a real number >= 0, got {value!r}.")
    val = float(value)
    if not np.isfinite(val) or val < 0:
        raise InvalidInputError(f"{name} must be >= 0, got {value!r}.")
    return val


def check_int(value, name: str, low: int, high: int | None = None) -> int:
    """An integer (not a bool) in ``[low, high]`` (no upper bound when ``high`` is None)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidInputError(f"{name} must be an integer, got {value!r}.")
    v = int(value)
    if v < low or (high is not None and v > high):
        rng = f">= {low}" if high is None else f"between {low} and {high}"
        raise InvalidInputError(f"{name} must be {rng}, got {v}.")
    return v


def check_bool(value, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidInputError(f"{name} must be True or False, got {value!r}.")
    return bool(value)


def check_choice(value, name: str, choices) -> str:
    if value not in choices:
        raise InvalidInputError(f"{name} must be one of {sorted(choices)}, got {value!r}.")
    return value


# Option checks: callables ``check(value, name) -> value`` for :class:`ssl_opt.solvers.Option`
# (``check_positive``, ``check_nonnegative`` and ``check_bool`` already have that form).

def integer(low: int, high: int | None = None):
    """An integer option in ``[low, high]``."""
    def check(value, name: str) -> int:
        return check_int(value, name, low, high)
    check.__doc__ = f"an integer >= {low}" + ("" if high is None else f" and <= {high}")
    return check


def greater_than(bound: float):
    """A real option strictly above ``bound`` (a growth or cooling factor: ``bound = 1``)."""
    def check(value, name: str) -> float:
        value = check_positive(value, name) if bound >= 0 else check_real(value, name)
        if not value > bound:
            raise InvalidInputError(f"{name} must be > {bound:g}, got {value!r}.")
        return value
    check.__doc__ = f"a real number > {bound:g}"
    return check


def between(low: float, high: float):
    """A real option strictly inside ``(low, high)``."""
    def check(value, name: str) -> float:
        value = check_real(value, name)
        if not low < value < high:
            raise InvalidInputError(f"{name} must be in ({low:g}, {high:g}), got {value!r}.")
        return value
    check.__doc__ = f"a real number in ({low:g}, {high:g})"
    return check


def choice(*choices):
    """An option that takes one of ``choices``."""
    def check(value, name: str):
        return check_choice(value, name, choices)
    check.__doc__ = f"one of {list(choices)}"
    return check


def optional(inner):
    """``None`` (the solver's own default) or a value that passes ``inner``."""
    def check(value, name: str):
        return None if value is None else inner(value, name)
    check.__doc__ = f"None or {inner.__doc__ or inner.__name__}"
    return check


def instance_of(*types):
    """An option that must be an instance of one of ``types``."""
    def check(value, name: str):
        if not isinstance(value, types):
            names = " or ".join(t.__name__ for t in types)
            raise InvalidInputError(f"{name} must be a {names}, got {type(value).__name__}.")
        return value
    check.__doc__ = " or ".join(t.__name__ for t in types)
    return check


def callable_option(value, name: str):
    """A callable (e.g. a progress callback)."""
    if not callable(value):
        raise InvalidInputError(f"{name} must be callable, got {type(value).__name__}.")
    return value


#: Stopping tests and residuals relative to ``max(1, ...)`` become absolute when every term of
#: the optimality condition is far below 1, and a point off by about tol/s passes (IRLS on a
#: sum of norms ×1e-6 stopped 1.6 % away from the minimizer, ADMM on LASS with G and λ ×1e-12
#: after 2 iterations); above SCALE_HIGH round-off in the gradient exceeds the tolerances.
SCALE_LOW, SCALE_HIGH = 1e-3, 1e8


def warn_if_badly_scaled(problem: str, terms: dict[str, float], fix: str) -> None:
    """A :class:`BadScalingWarning` at build when the largest of the optimality condition's
    term magnitudes ``terms`` is outside ``[SCALE_LOW, SCALE_HIGH]`` (all zero: no warning)."""
    scale = max(terms.values())
    if 0 < scale < SCALE_LOW or scale > SCALE_HIGH:
        found = ", ".join(f"{k} = {v:.3g}" for k, v in terms.items())
        warnings.warn(
            f"{problem} data look badly scaled ({found}; the largest should be in "
            f"[{SCALE_LOW:g}, {SCALE_HIGH:g}]): the residuals are relative to max(1, ...), so "
            f"a certified point may be inaccurate. {fix}", BadScalingWarning, stacklevel=3)
