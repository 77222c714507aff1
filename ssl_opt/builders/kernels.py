r"""Kernel matrices between the rows of two data matrices.

All kernels take ``X`` (``n x d``) and optionally ``Z`` (``m x d``), dense arrays or
``scipy.sparse`` matrices, and return a dense float64 ``n x m`` array ``K`` with
``K[i, j] = k(x_i, z_j)``. With ``Z=None`` the Gram matrix of ``X`` with itself is returned and it
is exactly symmetric.

* linear:      :math:`k(x, z) = x^\top z`
* rbf:         :math:`k(x, z) = \exp(-\lVert x - z\rVert^2 / (2\sigma^2))`
* polynomial:  :math:`k(x, z) = (s\, x^\top z + c_0)^p`
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp

from ssl_opt._validation import as_float_matrix, check_choice, check_positive
from ssl_opt.exceptions import InvalidInputError

__all__ = ["linear_kernel", "rbf_kernel", "polynomial_kernel", "kernel_matrix", "KERNELS"]


def check_kernel_inputs(X, Z):
    """Validate ``X`` and ``Z`` (finite, 2-D, same number of columns); ``Z`` defaults to ``X``."""
    Xm = as_float_matrix(X, "X")
    if Xm.shape[0] == 0:
        raise InvalidInputError("X is empty (no rows); pass an n x d matrix with n >= 1 points.")
    if Xm.shape[1] == 0:
        raise InvalidInputError("X has no columns (features); pass an n x d matrix with d >= 1.")
    if Z is None:
        return Xm, Xm, True
    Zm = as_float_matrix(Z, "Z")
    if Zm.shape[1] != Xm.shape[1]:
        raise InvalidInputError(
            f"Z must have the same number of columns as X ({Xm.shape[1]}), got shape {Zm.shape}; "
            "use the same features for both."
        )
    return Xm, Zm, False


def _gram(Xm, Zm) -> np.ndarray:
    r"""Dense :math:`X Z^\top` for dense or sparse operands."""
    G = Xm @ Zm.T
    if sp.issparse(G):
        G = G.toarray()
    return np.asarray(G, dtype=np.float64)


def _sq_row_norms(Xm) -> np.ndarray:
    r"""Vector of :math:`\lVert x_i\rVert^2` for the rows of a dense or sparse matrix."""
    if sp.issparse(Xm):
        return np.asarray(Xm.multiply(Xm).sum(axis=1), dtype=np.float64).ravel()
    return np.einsum("ij,ij->i", Xm, Xm)


def _symmetrize_if(K: np.ndarray, same: bool) -> np.ndarray:
    if same:
        K = 0.5 * (K + K.T)
    return K


def linear_kernel(X, Z=None) -> np.ndarray:
    r"""Linear kernel :math:`K = X Z^\top`, i.e. :math:`K_{ij} = x_i^\top z_j`.

    Parameters
    ----------
    X : array_like or sparse matrix, shape (n, d)
    Z : array_like or sparse matrix, shape (m, d), optional
        Defaults to ``X`` (the Gram matrix, returned exactly symmetric).

    Returns
    -------
    ndarray, shape (n, m), float64
    """
    Xm, Zm, same = check_kernel_inputs(X, Z)
    return _symmetrize_if(_gram(Xm, Zm), same)


def _sq_dist(Xm, Zm, same: bool) -> np.ndarray:
    xx = _sq_row_norms(Xm)
    zz = xx if same else _sq_row_norms(Zm)
    D = _gram(Xm, Zm)
    D *= -2.0
    D += xx[:, None]
    D += zz[None, :]
    np.maximum(D, 0.0, out=D)
    if same:
        D = 0.5 * (D + D.T)
        np.fill_diagonal(D, 0.0)
    return D


def rbf_kernel(X, Z=None, sigma: float = 1.0) -> np.ndarray:
    r"""Gaussian (RBF) kernel :math:`K_{ij} = \exp(-\lVert x_i - z_j\rVert^2 / (2\sigma^2))`.

    Note the :math:`2\sigma^2` in the denominator (docs/design.md §3; scikit-learn's ``gamma``
    equals :math:`1/(2\sigma^2)`). Squared distances are computed in vectorized form
    :math:`\lVert x\rVert^2 + \lVert z\rVert^2 - 2x^\top z` and tiny negative round-off values are
    clipped to 0. With ``Z=None`` the result is exactly symmetric with diagonal exactly 1.

    Parameters
    ----------
    X : array_like or sparse matrix, shape (n, d)
    Z : array_like or sparse matrix, shape (m, d), optional
    sigma : float > 0
        Kernel width.

    Returns
    -------
    ndarray, shape (n, m), float64, entries in (0, 1]
    """
    s = check_positive(sigma, "sigma")
    Xm, Zm, same = check_kernel_inputs(X, Z)
    D = _sq_dist(Xm, Zm, same)
    D *= -1.0 / (2.0 * s * s)
    return np.exp(D, out=D)


def polynomial_kernel(
    X, Z=None, degree: int = 3, coef0: float = 1.0, scale: float = 1.0
) -> np.ndarray:
    r"""Polynomial kernel :math:`K_{ij} = (s\, x_i^\top z_j + c_0)^p`.

    Parameters
    ----------
    X : array_like or sparse matrix, shape (n, d)
    Z : array_like or sparse matrix, shape (m, d), optional
    degree : int >= 1
        The exponent :math:`p`.
    coef0 : float
        The offset :math:`c_0` (any finite real; ``coef0 >= 0`` keeps the kernel positive
        semidefinite).
    scale : float > 0
        The factor :math:`s` on the inner product.

    Returns
    -------
    ndarray, shape (n, m), float64
    """
    if isinstance(degree, bool) or not isinstance(degree, numbers.Integral) or int(degree) < 1:
        raise InvalidInputError(
            f"degree must be a positive integer (1, 2, 3, ...), got {degree!r}."
        )
    if isinstance(coef0, bool) or not isinstance(coef0, numbers.Real) or not np.isfinite(coef0):
        raise InvalidInputError(f"coef0 must be a finite real number, got {coef0!r}.")
    s = check_positive(scale, "scale")
    Xm, Zm, same = check_kernel_inputs(X, Z)
    G = _symmetrize_if(_gram(Xm, Zm), same)
    G *= s
    G += float(coef0)
    return G ** int(degree)


KERNELS = {
    "linear": linear_kernel,
    "rbf": rbf_kernel,
    "polynomial": polynomial_kernel,
}

KERNEL_PARAMS = {
    "linear": frozenset(),
    "rbf": frozenset({"sigma"}),
    "polynomial": frozenset({"degree", "coef0", "scale"}),
}


def kernel_matrix(X, Z=None, kind: str = "rbf", **params) -> np.ndarray:
    r"""Kernel matrix :math:`K_{ij} = k(x_i, z_j)`, ``kind`` in {"linear", "rbf", "polynomial"}.

    ``params`` are forwarded to the chosen kernel: ``sigma`` for ``"rbf"``; ``degree``,
    ``coef0``, ``scale`` for ``"polynomial"``; none for ``"linear"``. Unknown parameters raise
    :class:`~ssl_opt.exceptions.InvalidInputError`.
    """
    check_choice(kind, "kind", KERNELS)
    unknown = set(params) - KERNEL_PARAMS[kind]
    if unknown:
        allowed = sorted(KERNEL_PARAMS[kind]) or "none"
        raise InvalidInputError(
            f"params {sorted(unknown)} are not accepted by kind={kind!r}; allowed: {allowed}."
        )
    return KERNELS[kind](X, Z, **params)


def kernel_diagonal(kind: str, params: dict, X) -> np.ndarray:
    r"""``diag K`` in O(n·d) without forming K: ones (rbf), :math:`\lVert x_i\rVert^2` (linear),
    :math:`(s\lVert x_i\rVert^2 + c_0)^p` (polynomial; defaults as :func:`polynomial_kernel`)."""
    if kind not in KERNELS:
        raise InvalidInputError(f"kind must be one of {sorted(KERNELS)}, got {kind!r}.")
    if kind == "rbf":
        return np.ones(X.shape[0])
    sq = _sq_row_norms(X).astype(np.float64)
    if kind == "linear":
        return sq
    return (params.get("scale", 1.0) * sq + params.get("coef0", 1.0)) ** int(
        params.get("degree", 3))
