"""The kernel operator whose products run on a 2-worker dask LocalCluster
(ssl_opt/operators/dask_kernel.py): products against the dense kernels of ssl_opt.builders,
and LapSVM solved by PCG on it against the same solve on the stored K (certified against the
CVXPY reference)."""

from __future__ import annotations

import numpy as np
import pytest

import ssl_opt
from ssl_opt.builders import kernel_matrix, knn_graph, laplacian
from ssl_opt.datasets import two_moons
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.operators import DaskKernelOperator


@pytest.mark.parametrize("kind,params", [("rbf", {"sigma": 0.7}),
                                         ("polynomial", {"degree": 2, "coef0": 1.0})])
def test_products_equal_the_dense_kernel(client, kind, params):
    X = np.random.default_rng(0).standard_normal((301, 4))
    V = np.random.default_rng(1).standard_normal((301, 3))
    K = kernel_matrix(X, kind=kind, **params)
    op = DaskKernelOperator(X, kind, client=client, **params)
    (a0, b0), (a1, b1) = op.ranges  # one contiguous range of rows per worker
    assert a0 == 0 and b0 == a1 and b1 == 301 and abs((b0 - a0) - (b1 - a1)) <= 1
    scale = np.abs(K @ V).max()
    np.testing.assert_allclose(op @ V, K @ V, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(op @ V[:, 0], K @ V[:, 0], rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(op.diagonal(), np.diag(K), rtol=1e-12)
    np.testing.assert_allclose(op.columns([3, 300]), K[:, [3, 300]], rtol=1e-12, atol=1e-12)
    assert op.syncs == 2  # one synchronization per product


def test_pcg_on_the_cluster_equals_the_stored_kernel(client):
    data = two_moons(n=400, n_labeled=8, noise=0.1, seed=4)
    L = laplacian(knn_graph(data.X, n_neighbors=8, weights="heat"), normalized=True)
    op = DaskKernelOperator(data.X, "rbf", client=client, sigma=0.3)
    problem = ssl_opt.problems.LapSVM(op, L, data.y, 1.0, 10.0)
    sol = ssl_opt.solve(problem, solver="pcg")
    stored = ssl_opt.problems.LapSVM(kernel_matrix(data.X, kind="rbf", sigma=0.3), L, data.y,
                                     1.0, 10.0)
    ref = ssl_opt.solve(stored, solver="pcg")
    assert abs(sol.objective - ref.objective) <= 1e-10 * abs(ref.objective)
    assert ssl_opt.certify(stored, ref).passed  # against the CVXPY reference
    cert = ssl_opt.certify(problem, sol, reference=False)
    assert cert.passed
    # Selection charges PCG the cluster's product (entries over the threads + a sync).
    prediction = ssl_opt.select(problem, backend="fast").predictions["pcg"]
    assert "each product costs" in prediction.note
    assert op.product_seconds() >= op.sync_seconds > 0


def test_misuse_is_a_clear_error(client):
    X = np.zeros((10, 2))
    with pytest.raises(InvalidInputError, match="client"):
        DaskKernelOperator(X, "rbf", client=object())
    with pytest.raises(InvalidInputError, match="needs a dask.distributed Client"):
        DaskKernelOperator(X, "rbf")  # the module's client is not the default one
    op = DaskKernelOperator(X + np.arange(10)[:, None], "rbf", client=client)
    import pickle

    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(op)
