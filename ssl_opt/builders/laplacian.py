r"""Graph Laplacians.

For a symmetric non-negative adjacency matrix :math:`W` with zero diagonal and degrees
:math:`d_i = \sum_j W_{ij}`, :math:`D = \operatorname{diag}(d)`:

* unnormalized: :math:`L = D - W` (positive semidefinite, :math:`L\mathbf 1 = 0`),
* normalized:   :math:`L = I - D^{-1/2} W D^{-1/2}` (eigenvalues in :math:`[0, 2]`), where an
  isolated node (:math:`d_i = 0`) gets :math:`(D^{-1/2})_{ii} = 0`, so its row of :math:`L` is
  :math:`e_i^\top`,
* iterated:     :math:`L^p` for an integer power :math:`p \ge 1`.
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp

from ssl_opt._validation import as_float_matrix, check_bool, check_square, check_symmetric
from ssl_opt.builders.graphs import knn_graph
from ssl_opt.exceptions import InvalidInputError

__all__ = ["laplacian", "graph_laplacian_from_data", "incidence_matrix", "validated_adjacency"]


def _check_power(power) -> int:
    if isinstance(power, bool) or not isinstance(power, numbers.Integral) or int(power) < 1:
        raise InvalidInputError(f"power must be an integer >= 1, got {power!r}.")
    return int(power)


def validated_adjacency(W, name: str = "W") -> sp.csr_matrix:
    """``W`` as canonical CSR after the graph checks (finite, square, non-negative, zero
    diagonal, symmetric); errors name the argument ``name``. Shared by the builders and the
    problems that take a similarity matrix (NPKL's ``S``, ERE's ``A``)."""
    Wm = as_float_matrix(W, name)
    check_square(Wm, name)
    Wm = sp.csr_matrix(Wm, dtype=np.float64)
    if not Wm.has_canonical_format:
        Wm = Wm.copy()  # sum_duplicates works in place: never on the caller's matrix
        Wm.sum_duplicates()
    if Wm.nnz and Wm.data.min() < 0:
        raise InvalidInputError(
            f"{name} must be non-negative (min weight {Wm.data.min():.3g}); graph edge weights "
            "must be >= 0."
        )
    diag = Wm.diagonal()
    if np.any(diag != 0):
        raise InvalidInputError(
            f"{name} has {int(np.count_nonzero(diag))} nonzero diagonal entries (self-loops); "
            f"zero them first, e.g. {name}.setdiag(0) or np.fill_diagonal({name}, 0)."
        )
    check_symmetric(Wm, name)
    return Wm


def incidence_matrix(i: np.ndarray, j: np.ndarray, n: int,
                     weights: np.ndarray | None = None) -> sp.csr_matrix:
    """``B`` (E×n): row e is ``w_e (e_i − e_j)`` for edge ``(i_e, j_e)`` (``w_e = 1`` when
    ``weights`` is None). With ``weights = √W_ij`` over the edges i < j, ``BᵀB = D − W``."""
    E = len(i)
    w = np.ones(E) if weights is None else np.asarray(weights, dtype=np.float64)
    rows = np.concatenate([np.arange(E), np.arange(E)])
    return sp.csr_matrix((np.concatenate([w, -w]), (rows, np.concatenate([i, j]))),
                         shape=(E, n))


#: Fill above which powers are computed with dense matrix products: a sparse product of
#: nearly full factors costs many dense ones (timed in docs/manifold.md, "Storage").
DENSE_PRODUCT_FILL = 0.05


def _product(A, B):
    """``A @ B``, switching to dense BLAS once either factor is more than 5 % full."""
    n = A.shape[0]
    def fill(M):
        return (M.nnz if sp.issparse(M) else M.size) / float(n * n)

    if max(fill(A), fill(B)) > DENSE_PRODUCT_FILL:
        dense = [M.toarray() if sp.issparse(M) else M for M in (A, B)]
        return dense[0] @ dense[1]
    return A @ B


def laplacian(W, normalized: bool = False, power: int = 1) -> sp.csr_matrix:
    r"""Graph Laplacian :math:`L^p` of a symmetric non-negative adjacency matrix ``W``.

    * ``normalized=False``: :math:`L = D - W`, :math:`D = \operatorname{diag}(W\mathbf 1)`;
    * ``normalized=True``:  :math:`L = I - D^{-1/2} W D^{-1/2}` with
      :math:`(D^{-1/2})_{ii} = 0` for isolated nodes (so row :math:`i` of :math:`L` is
      :math:`e_i^\top`);

    then raised to the integer power ``p`` by repeated products (sparse while the factors are
    sparse, dense BLAS once they fill in) and symmetrized as
    :math:`(L^p + (L^p)^\top)/2` to remove round-off asymmetry.

    Parameters
    ----------
    W : array_like or sparse matrix, shape (n, n)
        Finite, symmetric (up to relative 1e-10), non-negative, zero diagonal.
    normalized : bool
    power : int >= 1

    Returns
    -------
    scipy.sparse.csr_matrix, shape (n, n), float64, exactly symmetric.
    """
    normalized = check_bool(normalized, "normalized")
    p = _check_power(power)
    Wm = validated_adjacency(W)
    n = Wm.shape[0]
    if n == 0:
        raise InvalidInputError("W is empty (0x0): pass the n x n weights of a graph on n >= 1 "
                                "points.")
    deg = np.asarray(Wm.sum(axis=1), dtype=np.float64).ravel()

    if normalized:
        inv_sqrt = np.zeros(n, dtype=np.float64)
        pos = deg > 0
        inv_sqrt[pos] = 1.0 / np.sqrt(deg[pos])
        Dh = sp.diags(inv_sqrt, format="csr")
        L = sp.identity(n, dtype=np.float64, format="csr") - Dh @ Wm @ Dh
    else:
        L = sp.diags(deg, format="csr") - Wm
    L = sp.csr_matrix(L, dtype=np.float64)

    if p > 1:
        base = L
        result = None
        e = p
        while e:  # binary exponentiation: O(log p) products
            if e & 1:
                result = base if result is None else _product(result, base)
            e >>= 1
            if e:
                base = _product(base, base)
        L = sp.csr_matrix(result, dtype=np.float64)

    L = sp.csr_matrix(0.5 * (L + L.T), dtype=np.float64)
    L.sum_duplicates()
    L.eliminate_zeros()
    L.sort_indices()
    return L


def graph_laplacian_from_data(
    X,
    n_neighbors: int = 10,
    weights: str = "binary",
    sigma: float | None = None,
    normalized: bool = False,
    power: int = 1,
) -> sp.csr_matrix:
    r"""Laplacian :math:`L^p` of the kNN graph of ``X``: ``laplacian(knn_graph(X, ...), ...)``.

    See :func:`ssl_opt.builders.graphs.knn_graph` (``n_neighbors``, ``weights``, ``sigma``;
    union symmetrization) and :func:`laplacian` (``normalized``, ``power``).
    """
    normalized = check_bool(normalized, "normalized")
    p = _check_power(power)
    W = knn_graph(X, n_neighbors=n_neighbors, weights=weights, sigma=sigma)
    return laplacian(W, normalized=normalized, power=p)
