"""Built-in small LASS instances, for ``ssl-opt certify`` (a plugin)."""

from __future__ import annotations

import numpy as np

from ..builders import knn_graph
from ..datasets import two_moons
from ..examples import Example
from ..hookspecs import hookimpl
from .lass import LASS


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
