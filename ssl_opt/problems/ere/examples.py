"""Small ERE / LRL instances and data generators, for ``ssl-opt certify`` (a plugin), the tests
and ``benchmarks/bench_ere.py``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ssl_opt.builders import knn_graph
from ssl_opt.examples import Example
from ssl_opt.hookspecs import hookimpl
from ssl_opt.problems.ere.lrl import LRL
from ssl_opt.problems.ere.problem import ERE
from ssl_opt.selection.generators import Generator, geometric_scales


@dataclass
class EREData:
    """Rows of ``X`` with the ``l`` labeled points first; ``Y`` (l, c) their 0/1 labels,
    ``Y_all`` (n, c) the labels of every point, ``outlier`` (n,) the outlier mask."""

    X: np.ndarray
    A: sp.csr_matrix
    Y: np.ndarray
    Y_all: np.ndarray
    outlier: np.ndarray


def clusters_with_outliers(n: int = 100, d: int = 5, c: int = 3, l_per_class: int = 2,
                           n_neighbors: int = 10, outliers: float = 0.05, spread: float = 8.0,
                           separation: float = 2.5, weights: str = "binary",
                           multilabel: bool = False, seed: int = 0) -> EREData:
    """``c`` unit Gaussian clusters in ``d`` dimensions (centers ``N(0, separation²I)``), the
    first ``c·l_per_class`` points labeled (``l_per_class`` per class), a fraction ``outliers``
    of the unlabeled points moved far away (``spread`` times a standard normal draw around
    their center), and the kNN graph of the result (``knn_graph``, union symmetrization).

    ``multilabel=True``: each point also carries the label of its nearest other center when
    that center is within 1.2 times its own center's distance (overlapping classes)."""
    rng = np.random.default_rng(seed)
    centers = separation * rng.standard_normal((c, d))
    l = c * l_per_class
    y = np.concatenate([np.repeat(np.arange(c), l_per_class), rng.integers(0, c, n - l)])
    X = centers[y] + rng.standard_normal((n, d))
    out = np.zeros(n, dtype=bool)
    k = int(round(outliers * (n - l)))
    if k:
        idx = l + rng.choice(n - l, k, replace=False)
        X[idx] = centers[y[idx]] + spread * rng.standard_normal((k, d))
        out[idx] = True
    Y_all = np.eye(c)[y]
    if multilabel:
        dist = np.linalg.norm(X[:, None, :] - centers[None, :, :], axis=2)
        dist[np.arange(n), y] = np.inf
        second = np.argmin(dist, axis=1)
        own = np.linalg.norm(X - centers[y], axis=1)
        extra = dist[np.arange(n), second] <= 1.2 * own
        Y_all[np.flatnonzero(extra), second[extra]] = 1.0
    A = knn_graph(X, n_neighbors=n_neighbors, weights=weights)
    return EREData(X, A, Y_all[:l].copy(), Y_all, out)


def elongated_gaussians(n: int = 200, n_outliers: int = 10, length: float = 4.0,
                        width: float = 0.1, gap: float = 1.0, n_neighbors: int = 6,
                        per_end: int = 4, seed: int = 0) -> tuple[EREData, np.ndarray]:
    """The toy example of [004 Fig. 1]: two elongated Gaussians in 2-D (long axis along x,
    std ``length``; short axis std ``width``; centers at y = ±gap), ``n_outliers`` far points
    pushed away from the clusters along y (6 to 10 units), and ``per_end`` labeled points per
    class at each far end of its cluster (the smallest and largest x). The labeled points are
    the first rows. Returns the data and the true separating direction (0, 1)."""
    rng = np.random.default_rng(seed)
    m = n // 2
    y = np.repeat([0, 1], [m, n - m])
    X = np.column_stack([length * rng.standard_normal(n), width * rng.standard_normal(n)])
    X[:, 1] += np.where(y == 0, gap, -gap)
    outlier = np.zeros(n, dtype=bool)
    if n_outliers:
        idx = rng.choice(n, n_outliers, replace=False)
        X[idx, 1] += np.where(y[idx] == 0, 1.0, -1.0) * rng.uniform(6.0, 10.0, n_outliers)
        X[idx, 0] = rng.uniform(-2.0, 2.0, n_outliers)
        outlier[idx] = True
    labeled = []
    for cls in (0, 1):
        cand = np.flatnonzero((y == cls) & ~outlier)
        order = cand[np.argsort(X[cand, 0])]
        labeled += list(order[:per_end]) + list(order[-per_end:])
    labeled = np.array(labeled)
    order = np.concatenate([labeled, np.setdiff1d(np.arange(n), labeled)])
    X, y, outlier = X[order], y[order], outlier[order]
    Y_all = np.eye(2)[y]
    A = knn_graph(X, n_neighbors=n_neighbors)
    return EREData(X, A, Y_all[: labeled.size].copy(), Y_all, outlier), np.array([0.0, 1.0])


def _robust():
    data = clusters_with_outliers(n=60, d=3, c=3, l_per_class=2, n_neighbors=6,
                                  outliers=0.1, seed=1)
    return ERE(data.X, data.A, data.Y, alpha=1.0, beta=0.05)


def _squared():
    data = clusters_with_outliers(n=60, d=3, c=3, l_per_class=2, n_neighbors=6,
                                  outliers=0.1, seed=1)
    return ERE(data.X, data.A, data.Y, alpha=1.0, beta=0.05, robust=False)


def _lrl():
    data = clusters_with_outliers(n=60, d=3, c=3, l_per_class=2, n_neighbors=6,
                                  outliers=0.1, seed=1)
    return LRL(data.X, data.A, data.Y, alpha=1.0, beta=0.05)


@hookimpl
def register_examples():
    return [
        Example("ere-robust-outliers", "ere",
                "robust ERE [004 eq. 9], 3 clusters in 3-D with 10% outliers, n=60, 6-NN",
                _robust),
        Example("ere-squared", "ere", "squared ERE [004 eq. 8], same data", _squared),
        Example("ere-lrl", "ere", "LRL baseline [004 eq. 5], same data", _lrl),
    ]


def _clusters_at(kind: str):
    """Three 5-D clusters with n points, 2 labels per class, 5 % outliers, the 10-NN graph."""
    def build(n: int, seed: int):
        data = clusters_with_outliers(n=n, seed=seed)
        if kind == "lrl":
            return LRL(data.X, data.A, data.Y, alpha=1.0, beta=0.05)
        return ERE(data.X, data.A, data.Y, alpha=1.0, beta=0.05, robust=kind == "robust")

    return build


@hookimpl
def register_generators():
    grid = geometric_scales(60, 100_000)
    bench = (100, 300, 1000, 3000, 10000)
    return [
        Generator(f"ere/{kind}", ("n", "c"), _clusters_at(kind),
                  f"{kind} ERE, three clusters with n points and outliers", grid, bench)
        for kind in ("robust", "squared", "lrl")
    ]
