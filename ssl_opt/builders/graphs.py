r"""k-nearest-neighbour graphs.

:func:`knn_graph` returns a sparse symmetric adjacency matrix :math:`W` with zero diagonal and
non-negative weights. Point :math:`j` is a neighbour of :math:`i` when it is among the
:math:`k` points closest to :math:`x_i` in Euclidean distance (:math:`x_i` itself excluded).
The directed kNN relation :math:`A` is made symmetric by

* ``"union"``:  :math:`W = \max(A, A^\top)` (edge if either point is a kNN of the other),
* ``"mutual"``: :math:`W = \min(A, A^\top)` (edge only if both are kNN of each other).
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.neighbors import NearestNeighbors

from ssl_opt._validation import as_float_matrix, check_choice, check_positive, check_square
from ssl_opt.exceptions import InvalidInputError

__all__ = ["knn_graph"]

_WEIGHTS = ("binary", "heat", "distance")
#: From this many points the neighbour queries run on all cores (below, threads cost more).
PARALLEL_MIN_POINTS = 20000
_SYMMETRIZE = ("union", "mutual")


def _check_n_neighbors(n_neighbors, n: int) -> int:
    if isinstance(n_neighbors, bool) or not isinstance(n_neighbors, numbers.Integral):
        raise InvalidInputError(
            f"n_neighbors must be an integer with 1 <= n_neighbors < n = {n}, got {n_neighbors!r}."
        )
    k = int(n_neighbors)
    if not 1 <= k < n:
        raise InvalidInputError(
            f"n_neighbors must satisfy 1 <= n_neighbors < n = {n} (number of points), got {k}; "
            f"choose a value between 1 and {n - 1}."
        )
    return k


def knn_graph(
    X,
    n_neighbors: int = 10,
    weights: str = "binary",
    sigma: float | None = None,
    symmetrize: str = "union",
    metric: str = "euclidean",
) -> sp.csr_matrix:
    r"""Symmetric k-nearest-neighbour adjacency matrix of the rows of ``X``.

    For each directed kNN edge :math:`(i, j)` with distance :math:`d_{ij} = \lVert x_i-x_j\rVert`
    the weight is

    * ``"binary"``:   :math:`A_{ij} = 1`,
    * ``"heat"``:     :math:`A_{ij} = \exp(-d_{ij}^2 / (2\sigma^2))`, where ``sigma`` defaults to
      the mean of :math:`d_{ij}` over all directed kNN edges (1.0 if that mean is 0),
    * ``"distance"``: :math:`A_{ij} = d_{ij}` (an edge between two identical points then has
      weight 0 and is dropped).

    and :math:`W = \max(A, A^\top)` (``symmetrize="union"``) or :math:`\min(A, A^\top)`
    (``"mutual"``). Neighbours are found with :class:`sklearn.neighbors.NearestNeighbors`; each
    point is excluded from its own neighbour list. Ties among equidistant neighbours are broken
    by scikit-learn.

    Parameters
    ----------
    X : array_like or sparse matrix, shape (n, d)
    n_neighbors : int, 1 <= n_neighbors < n
    weights : {"binary", "heat", "distance"}
    sigma : float > 0, optional
        Heat-kernel width; only used with ``weights="heat"``.
    symmetrize : {"union", "mutual"}
    metric : {"euclidean", "precomputed"}
        ``"precomputed"``: ``X`` is the (n, n) matrix of distances ``d_ij`` (finite,
        non-negative), e.g. the kernel-induced ``√(K_ii + K_jj − 2K_ij)``.

    Returns
    -------
    scipy.sparse.csr_matrix, shape (n, n), float64
        Symmetric, non-negative, zero diagonal, sorted indices, no explicit zeros.
    """
    check_choice(metric, "metric", ("euclidean", "precomputed"))
    Xm = as_float_matrix(X, "X", allow_sparse=metric == "euclidean")
    n = Xm.shape[0]
    if n < 2:
        raise InvalidInputError(f"X must have at least 2 rows (points) to build a graph, got {n}.")
    if Xm.shape[1] == 0:
        raise InvalidInputError("X has no columns (features); pass an n x d matrix with d >= 1.")
    if metric == "precomputed":
        check_square(Xm, "X (distances)")
        if Xm.min() < 0:
            raise InvalidInputError("X (distances) must be non-negative for "
                                    "metric='precomputed'.")
    k = _check_n_neighbors(n_neighbors, n)
    check_choice(weights, "weights", _WEIGHTS)
    check_choice(symmetrize, "symmetrize", _SYMMETRIZE)
    s = None if sigma is None else check_positive(sigma, "sigma")

    # Queries run on every core above PARALLEL_MIN_POINTS (joblib threads: the same result).
    jobs = -1 if n >= PARALLEL_MIN_POINTS else None
    nn = NearestNeighbors(n_neighbors=k, metric=metric, n_jobs=jobs).fit(Xm)
    # X=None: neighbours of the indexed points, each point excluded from its own list.
    dist, ind = nn.kneighbors(None, n_neighbors=k, return_distance=True)
    dist = np.asarray(dist, dtype=np.float64).ravel()
    cols = np.asarray(ind, dtype=np.int64).ravel()
    rows = np.repeat(np.arange(n, dtype=np.int64), k)

    if weights == "binary":
        vals = np.ones_like(dist)
    elif weights == "heat":
        if s is None:
            mean_d = float(dist.mean())
            s = mean_d if mean_d > 0 else 1.0
        vals = np.exp(-(dist**2) / (2.0 * s * s))
    else:  # "distance"
        vals = dist

    A = sp.csr_matrix((vals, (rows, cols)), shape=(n, n), dtype=np.float64)
    At = A.T.tocsr()
    W = A.maximum(At) if symmetrize == "union" else A.minimum(At)
    W = sp.csr_matrix(W, dtype=np.float64)
    W.eliminate_zeros()
    W.sort_indices()
    return W
