"""Kernels and graphs from raw data for the estimators, and block-wise out-of-sample products.

``kernel`` is ``"rbf"`` (``exp(−‖x − x'‖² / (2σ²))``, docs/design.md §3), ``"poly"``
(``(s·xᵀx' + c₀)^p``), ``"linear"``, ``"precomputed"`` (X is the Gram matrix at fit and the
(m, n_train) cross kernel at predict) or a callable ``k(A, B) -> (len(A), len(B))`` array.
``sigma=None`` takes the median distance between sampled training points (the "median
heuristic"), so the default kernel is neither nearly the identity nor nearly constant.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import scipy.sparse as sp

from ssl_opt._validation import check_choice, check_int, check_positive
from ssl_opt.builders import knn_graph, laplacian, linear_kernel, polynomial_kernel, rbf_kernel
from ssl_opt.estimators._diagnostics import DegenerateProblemWarning
from ssl_opt.exceptions import warn

KERNELS = ("rbf", "poly", "linear", "precomputed")
GRAPH_WEIGHTS = ("binary", "heat")

#: Bytes of one block of K(X_new, X_train) formed at prediction time.
BLOCK_BYTES = 16 * 2**20


def median_distance(X, max_points: int = 1000) -> float:
    """Median Euclidean distance between distinct sampled rows of X (1.0 if all coincide)."""
    n = X.shape[0]
    rows = np.random.default_rng(0).choice(n, size=min(n, max_points), replace=False)
    S = X[np.sort(rows)]
    S = S.toarray() if sp.issparse(S) else np.asarray(S, dtype=np.float64)
    sq = np.einsum("ij,ij->i", S, S)
    D = sq[:, None] + sq[None, :] - 2.0 * (S @ S.T)
    d = np.sqrt(np.maximum(D[np.triu_indices(S.shape[0], 1)], 0.0))
    d = d[d > 0]
    return float(np.median(d)) if d.size else 1.0


def check_graph_params(n_neighbors, graph_weights, sigma=None) -> None:
    """Validate the kNN-graph parameters every graph-based estimator shares."""
    check_int(n_neighbors, "n_neighbors", 1)
    check_choice(graph_weights, "graph_weights", GRAPH_WEIGHTS)
    if sigma is not None:
        check_positive(sigma, "sigma")


def neighbours_for(n_neighbors, n: int) -> int:
    """``n_neighbors`` for a graph of ``n`` points: a point has at most n − 1 neighbours, so a
    larger value is cut to n − 1 with a :class:`DegenerateProblemWarning` (the graph is then
    complete, and the Laplacian term no longer follows the data's shape)."""
    if n < 2:
        raise ValueError("A graph needs at least 2 samples; pass more rows in X.")
    k = int(n_neighbors)
    if k >= n:
        warn(f"n_neighbors={k} is not below the number of samples n={n}: the graph "
             f"joins every point to all {n - 1} others, so it carries no manifold "
             f"structure. Pass n_neighbors < {n} (typically 5 to 20).",
             DegenerateProblemWarning)
        k = n - 1
    return k


def check_kernel_choice(kernel) -> None:
    if not (callable(kernel) or kernel in KERNELS):
        raise ValueError(f"kernel must be one of {KERNELS} or a callable k(A, B), got "
                         f"{kernel!r}.")


class Kernel:
    """A kernel ``k(A, B) -> (len(A), len(B))`` with its parameters fixed at fit time (a class,
    not a closure, so fitted estimators pickle)."""

    def __init__(self, kind, params: dict):
        self.kind = kind
        self.params = params

    def __call__(self, A, B) -> np.ndarray:
        if callable(self.kind):
            return np.asarray(self.kind(A, B), dtype=np.float64)
        if self.kind == "rbf":
            return rbf_kernel(A, B, sigma=self.params["sigma"])
        if self.kind == "poly":
            return polynomial_kernel(A, B, **self.params)
        if self.kind == "linear":
            return linear_kernel(A, B)
        return np.asarray(A.toarray() if sp.issparse(A) else A, dtype=np.float64)  # precomputed


def kernel_function(kernel, X_fit, sigma=None, degree: int = 3, coef0: float = 1.0,
                    poly_scale=None) -> tuple[Kernel, dict]:
    """The kernel as a :class:`Kernel` and its resolved parameters (σ for RBF, the scale for
    polynomial), fixed at fit time so prediction uses the same kernel."""
    check_kernel_choice(kernel)
    params: dict = {}
    if not callable(kernel) and kernel == "rbf":
        s = median_distance(X_fit) if sigma is None else check_positive(sigma, "sigma")
        params = {"sigma": float(s)}
    elif not callable(kernel) and kernel == "poly":
        scale = 1.0 / X_fit.shape[1] if poly_scale is None else float(poly_scale)
        params = {"degree": degree, "coef0": coef0, "scale": scale}
    return Kernel(kernel, params), params


def block_rows(n_train: int, block_bytes: int = BLOCK_BYTES) -> int:
    """Rows of K(X_new, X_train) per block so that one block takes at most ``block_bytes``."""
    return max(1, block_bytes // (8 * max(1, n_train)))


def cross_kernel_blocks(kernel: Callable, X_new, X_train, rows: int) -> Iterator[np.ndarray]:
    """Yield K(X_new[i:i+rows], X_train) block by block; only one block is alive at a time."""
    for start in range(0, X_new.shape[0], rows):
        yield kernel(X_new[start:start + rows], X_train)


def kernel_expansion(kernel: Callable, X_new, X_train, coef: np.ndarray, intercept,
                     block_size: int | None = None) -> np.ndarray:
    """``K(X_new, X_train) @ coef + intercept`` computed in row blocks (docs/design.md §7)."""
    rows = block_rows(X_train.shape[0]) if block_size is None else int(block_size)
    out = [Kb @ coef for Kb in cross_kernel_blocks(kernel, X_new, X_train, rows)]
    return np.concatenate(out, axis=0) + intercept


def kernel_distances(K: np.ndarray) -> np.ndarray:
    """Distances of the points a Gram matrix describes, ``d_ij = √(K_ii + K_jj − 2K_ij)``
    (for ``kernel="precomputed"`` without an affinity)."""
    d = np.diag(K)
    D2 = np.maximum(d[:, None] + d[None, :] - 2.0 * K, 0.0)
    np.fill_diagonal(D2, 0.0)
    return np.sqrt(D2)


def graph_laplacian(X, K, *, affinity=None, laplacian_matrix=None, precomputed: bool,
                    n_neighbors: int, weights: str, normalized: bool, power: int):
    """The Laplacian ``L^p`` of the estimator's graph and the adjacency it came from.

    Priority: a precomputed Laplacian (returned as given, adjacency ``None``), a precomputed
    affinity ``W``, then a kNN graph of X (of the kernel distances when X is a Gram matrix).
    ``n_neighbors`` is cut to n − 1 with a warning (:func:`neighbours_for`).
    """
    if laplacian_matrix is not None:
        return sp.csr_matrix(laplacian_matrix, dtype=np.float64), None
    if affinity is not None:
        W = sp.csr_matrix(affinity, dtype=np.float64)
    else:
        k = neighbours_for(n_neighbors, X.shape[0])
        W = (knn_graph(kernel_distances(K), n_neighbors=k, weights=weights,
                       metric="precomputed") if precomputed
             else knn_graph(X, n_neighbors=k, weights=weights))
    return laplacian(W, normalized=normalized, power=power), W
