"""Built-in small instances of the manifold family, for ``ssl-opt certify`` (a plugin)."""

from __future__ import annotations

from ..builders import graph_laplacian_from_data, rbf_kernel
from ..datasets import gaussian_blobs, two_moons
from ..examples import Example
from ..hookspecs import hookimpl
from .manifold import LapRLS, LapSVM


def _moons(loss, normalized=False, bias=True):
    def build():
        data = two_moons(n=120, n_labeled=6, noise=0.1, seed=1)
        K = rbf_kernel(data.X, sigma=0.35)
        L = graph_laplacian_from_data(data.X, n_neighbors=6, normalized=normalized)
        if loss == "squared":
            return LapRLS(K, L, data.y, gamma_A=1e-2, gamma_I=1.0, bias=bias)
        return LapSVM(K, L, data.y, gamma_A=1e-2, gamma_I=1.0, loss=loss, bias=bias)

    return build


def _blobs_logistic():
    data = gaussian_blobs(n=100, n_labeled=10, d=3, seed=2)
    K = rbf_kernel(data.X, sigma=1.5)
    L = graph_laplacian_from_data(data.X, n_neighbors=8, weights="heat", normalized=True)
    return LapSVM(K, L, data.y, gamma_A=1e-1, gamma_I=0.5, loss="logistic")


@hookimpl
def register_examples():
    return [
        Example("lapsvm-moons", "manifold", "primal LapSVM (squared hinge), two moons n=120",
                _moons("squared_hinge")),
        Example("laprls-moons", "manifold", "LapRLS, two moons n=120, normalized L",
                _moons("squared", normalized=True)),
        Example("lapsvm-hinge-moons", "manifold", "original hinge LapSVM, two moons n=120",
                _moons("hinge")),
        Example("lapsvm-logistic-blobs", "manifold",
                "logistic LapSVM variant, Gaussian blobs n=100, heat-weighted normalized L",
                _blobs_logistic),
    ]
