"""Built-in small LASS instances, for ``ssl-opt certify`` (a plugin)."""

from __future__ import annotations

import numpy as np

from ssl_opt.builders import knn_graph
from ssl_opt.datasets.synthetic import two_moons
from ssl_opt.examples import Example
from ssl_opt.hookspecs import hookimpl
from ssl_opt.problems.lass.problem import LASS
from ssl_opt.selection.generators import Generator, geometric_scales


def _moons(negative: bool, components: bool):
    def build():
        data = two_moons(n=200, n_labeled=2, noise=0.1, seed=0)
        X = data.X
        if components:  # a second, far-away copy: two connected components
            X = np.vstack([X, X + 10.0])
        W = knn_graph(X, n_neighbors=8)
        rng = np.random.default_rng(1)
        N, K = X.shape[0], 3
        G = np.zeros((N, K))
        tagged = rng.choice(N, N // 3, replace=False)
        G[tagged, (data.y_all[tagged % 200] > 0).astype(int)] = 1.0
        if negative:
            G[rng.choice(N, 20, replace=False), 2] = -0.5
        return LASS(W, G, lam=0.1)

    return build


@hookimpl
def register_examples():
    return [
        Example("lass-moons", "lass", "LASS, two moons N=200, K=3 (one category never tagged)",
                _moons(False, False)),
        Example("lass-negative-two-components", "lass",
                "LASS with negative similarities on a graph of two components, N=400, K=3",
                _moons(True, True)),
    ]


def _moons_at(N: int, seed: int):
    """Two moons with N items, K = 3 categories, a third of the items tagged with their moon's
    category (the third category never), the 8-NN graph and λ = 0.1."""
    data = two_moons(n=N, n_labeled=2, noise=0.1, seed=seed)
    rng = np.random.default_rng(seed + 1)
    G = np.zeros((N, 3))
    tagged = rng.choice(N, N // 3, replace=False)
    G[tagged, (data.y_all[tagged] > 0).astype(int)] = 1.0
    return LASS(knn_graph(data.X, n_neighbors=8), G, lam=0.1)


@hookimpl
def register_generators():
    return [Generator("lass/qp", ("N", "K"), _moons_at, "LASS, two moons with N items, K = 3",
                      geometric_scales(100, 200_000), (60, 300, 1000, 3000, 10000, 30000))]
