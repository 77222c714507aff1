"""Built-in small instances of the manifold family, for ``ssl-opt certify`` (a plugin)."""

from __future__ import annotations

import numpy as np
from sklearn.datasets import make_blobs

from ssl_opt.builders import graph_laplacian_from_data, rbf_kernel
from ssl_opt.datasets.synthetic import gaussian_blobs, two_moons
from ssl_opt.examples import Example
from ssl_opt.hookspecs import hookimpl
from ssl_opt.operators import KernelOperator, NystromOperator
from ssl_opt.problems.manifold.problem import LapRLS, LapSVM
from ssl_opt.problems.one_vs_rest import OneVsRest
from ssl_opt.selection.generators import Generator, geometric_scales


def lapsvm_with_loss(loss: str):
    """``LapSVM`` with ``loss``, called like the ``LapRLS`` class."""
    def make(K, L, y, **kwargs):
        return LapSVM(K, L, y, loss=loss, **kwargs)

    return make


def moons_instance(problem, normalized=False, bias=True):
    def build():
        data = two_moons(n=120, n_labeled=6, noise=0.1, seed=1)
        K = rbf_kernel(data.X, sigma=0.35)
        L = graph_laplacian_from_data(data.X, n_neighbors=6, normalized=normalized)
        return problem(K, L, data.y, gamma_A=1e-2, gamma_I=1.0, bias=bias)

    return build


def _blobs_logistic():
    data = gaussian_blobs(n=100, n_labeled=10, d=3, seed=2)
    K = rbf_kernel(data.X, sigma=1.5)
    L = graph_laplacian_from_data(data.X, n_neighbors=8, weights="heat", normalized=True)
    return LapSVM(K, L, data.y, gamma_A=1e-1, gamma_I=0.5, loss="logistic")


def _nystrom_moons():
    data = two_moons(n=120, n_labeled=6, noise=0.1, seed=1)
    K = NystromOperator(data.X, "rbf", landmarks=40, seed=0, sigma=0.35)
    L = graph_laplacian_from_data(data.X, n_neighbors=6)
    return LapSVM(K, L, data.y, gamma_A=1e-2, gamma_I=1.0)


def _one_vs_rest_blobs(loss: str):
    """Three Gaussian blobs, n = 90, 3 labels per class: the three one-vs-rest classes as one
    :class:`~ssl_opt.problems.OneVsRest` problem."""
    def build():
        X, labels = make_blobs(n_samples=90, centers=3, cluster_std=1.3, random_state=4)
        first = np.concatenate([np.flatnonzero(labels == k)[:3] for k in range(3)])
        order = np.concatenate([first, np.setdiff1d(np.arange(90), first)])
        X, labels = X[order], labels[order]
        K = rbf_kernel(X, sigma=1.5)
        L = graph_laplacian_from_data(X, n_neighbors=6, normalized=True)
        Y = np.where(labels[:9, None] == np.arange(3)[None, :], 1.0, -1.0)
        return OneVsRest(LapSVM(K, L, Y[:, 0], 1e-2, 1e-1, loss=loss), Y)

    return build


@hookimpl
def register_examples():
    return [
        Example("lapsvm-moons", "manifold", "primal LapSVM (squared hinge), two moons n=120",
                moons_instance(lapsvm_with_loss("squared_hinge"))),
        Example("laprls-moons", "manifold", "LapRLS, two moons n=120, normalized L",
                moons_instance(LapRLS, normalized=True)),
        Example("lapsvm-hinge-moons", "manifold", "original hinge LapSVM, two moons n=120",
                moons_instance(lapsvm_with_loss("hinge"))),
        Example("lapsvm-logistic-blobs", "manifold",
                "logistic LapSVM variant, Gaussian blobs n=100, heat-weighted normalized L",
                _blobs_logistic),
        Example("lapsvm-nystrom-moons", "manifold",
                "primal LapSVM on a rank-40 Nyström kernel (K̃ = ΦΦᵀ), two moons n=120",
                _nystrom_moons),
        Example("laprls-one-vs-rest-blobs", "one-vs-rest",
                "LapRLS one-vs-rest, 3 Gaussian blobs n=90, 3 labels per class",
                _one_vs_rest_blobs("square")),
        Example("lapsvm-one-vs-rest-blobs", "one-vs-rest",
                "primal LapSVM one-vs-rest, 3 Gaussian blobs n=90, 3 labels per class",
                _one_vs_rest_blobs("squared_hinge")),
    ]


#: Landmarks of the "nystrom" operator kind of the generators.
NYSTROM_LANDMARKS = 100


def _moons_at(problem):
    """Two moons with n points, 4 % of them labeled, the RBF kernel and a 6-NN Laplacian; K
    stored ("dense"), recomputed on every product ("matrix-free", :class:`KernelOperator`; on
    the default dask client's workers: "dask") or its Nyström approximation on
    ``NYSTROM_LANDMARKS`` sampled points ("nystrom")."""
    def build(n: int, seed: int, operator: str = "dense"):
        data = two_moons(n=n, n_labeled=max(4, n // 25), noise=0.1, seed=seed)
        if operator == "matrix-free":
            K = KernelOperator(data.X, "rbf", sigma=0.35)
        elif operator == "dask":  # products on the default distributed.Client's workers
            from ssl_opt.operators import DaskKernelOperator

            K = DaskKernelOperator(data.X, "rbf", sigma=0.35)
        elif operator == "nystrom":
            K = NystromOperator(data.X, "rbf", landmarks=min(n, NYSTROM_LANDMARKS),
                                seed=seed, sigma=0.35)
        else:
            K = rbf_kernel(data.X, sigma=0.35)
        L = graph_laplacian_from_data(data.X, n_neighbors=6)
        return problem(K, L, data.y, gamma_A=1e-2, gamma_I=1.0)

    return build


@hookimpl
def register_generators():
    grid = geometric_scales(60, 4000)
    bench = (40, 100, 250, 500, 1000, 2000)
    kinds = ("dense", "matrix-free", "nystrom", "dask")
    return [
        Generator("manifold/squared_hinge", ("n",), _moons_at(lapsvm_with_loss("squared_hinge")),
                  "primal LapSVM, two moons with n points", grid, bench, kinds),
        Generator("manifold/squared", ("n",), _moons_at(LapRLS),
                  "LapRLS, two moons with n points", grid, bench, kinds),
        Generator("manifold/hinge", ("n",), _moons_at(lapsvm_with_loss("hinge")),
                  "hinge LapSVM (references only), two moons with n points", grid, bench,
                  kinds),
    ]
