"""The matrix-free kernel operator (ssl_opt/operators/kernel.py) against the dense kernels of
ssl_opt.builders (an independent computation: one vectorized formula for the whole matrix)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from ssl_opt.builders import kernel_matrix
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.operators import KernelOperator

KINDS = [("rbf", {"sigma": 1.3}), ("polynomial", {"degree": 3, "coef0": 0.5, "scale": 0.2}),
         ("linear", {})]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    return rng.standard_normal((613, 7)), rng.standard_normal((613, 4))


@pytest.mark.parametrize("kind,params", KINDS)
@pytest.mark.parametrize("threads", [1, 2])
def test_products_equal_the_dense_kernel(data, kind, params, threads):
    X, V = data
    K = kernel_matrix(X, kind=kind, **params)
    # A small budget forces many row blocks and several column tiles per block.
    op = KernelOperator(X, kind, memory_budget=2e5, threads=threads, **params)
    assert op.tile_columns < X.shape[0] // 4
    scale = np.abs(K @ V).max()
    np.testing.assert_allclose(op @ V, K @ V, rtol=0, atol=1e-13 * scale)
    np.testing.assert_allclose(op @ V[:, 0], K @ V[:, 0], rtol=0, atol=1e-13 * scale)
    np.testing.assert_allclose(op.T @ V, K @ V, rtol=0, atol=1e-13 * scale)
    np.testing.assert_allclose(op.diagonal(), np.diag(K), rtol=1e-13, atol=1e-13)
    idx = [0, 17, 612, 300]
    np.testing.assert_allclose(op.columns(idx), K[:, idx], rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(op.rows(idx), K[idx], rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(op.to_dense(), K, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("kind,params", KINDS)
def test_float32_blocks_are_accurate_to_single_precision(data, kind, params):
    X, V = data
    K = kernel_matrix(X, kind=kind, **params)
    op = KernelOperator(X, kind, dtype=np.float32, **params)
    got = op @ V
    assert got.dtype == np.float64
    err = np.abs(got - K @ V).max() / np.abs(K @ V).max()
    assert 1e-12 < err < 1e-5


def test_sparse_data_gives_the_dense_result(data):
    X, V = data
    X = np.where(np.abs(X) > 0.8, X, 0.0)
    K = kernel_matrix(X, kind="rbf", sigma=2.0)
    op = KernelOperator(sp.csr_matrix(X), "rbf", sigma=2.0, memory_budget=1e5)
    np.testing.assert_allclose(op @ V, K @ V, rtol=0, atol=1e-12 * np.abs(K @ V).max())


def test_memory_budget_sets_the_blocks_and_the_products_are_counted(data):
    X, V = data
    op = KernelOperator(X, "rbf", memory_budget=1e6, threads=2)
    assert op.bytes_in_flight <= 1e6
    op @ V
    op @ V[:, 0]
    assert op.products == V.shape[1] + 1


def test_bad_inputs_are_clear_errors(data):
    X, V = data
    before = X.copy()
    KernelOperator(X, "rbf", dtype=np.float32) @ V
    np.testing.assert_array_equal(X, before)  # the caller's data is never modified
    with pytest.raises(InvalidInputError, match="kind"):
        KernelOperator(X, "laplacian")
    with pytest.raises(InvalidInputError, match="sigma"):
        KernelOperator(X, "rbf", sigma=-1.0)
    with pytest.raises(InvalidInputError, match="degree"):
        KernelOperator(X, "rbf", degree=2)
    with pytest.raises(InvalidInputError, match="dtype"):
        KernelOperator(X, "rbf", dtype=np.int64)
    with pytest.raises(InvalidInputError, match="NaN|finite"):
        KernelOperator(np.full((4, 2), np.nan), "rbf")
    with pytest.raises(InvalidInputError, match="threads"):
        KernelOperator(X, "rbf", threads=0)
    with pytest.raises(InvalidInputError, match="memory_budget"):
        KernelOperator(X, "rbf", memory_budget=-1.0)
    with pytest.raises(InvalidInputError, match="complex"):
        KernelOperator(X + 1j, "rbf")
    with pytest.raises(InvalidInputError, match="max_bytes"):
        KernelOperator(X, "rbf").to_dense(max_bytes=1e3)


def test_selection_charges_the_operator_its_own_products():
    import ssl_opt
    from ssl_opt.builders import knn_graph, laplacian, rbf_kernel
    from ssl_opt.datasets import two_moons
    from ssl_opt.problems.manifold.problem import DENSE_PRODUCT_SECONDS, ITERATION_SECONDS

    data = two_moons(n=400, n_labeled=10, noise=0.1, seed=0)
    L = laplacian(knn_graph(data.X, n_neighbors=8), normalized=True)
    op = KernelOperator(data.X, "rbf", sigma=0.3)
    # The cost models' charge for an operator (measure=False: no conditioning probe on the
    # stored K, whose PCG prediction would then be measured rather than modelled).
    dense = ssl_opt.select(ssl_opt.problems.LapSVM(rbf_kernel(data.X, sigma=0.3), L, data.y,
                                                   1.0, 10.0), measure=False).predictions
    on_op = ssl_opt.select(ssl_opt.problems.LapSVM(op, L, data.y, 1.0, 10.0),
                           measure=False).predictions
    stored = DENSE_PRODUCT_SECONDS * 400**2
    iterations = dense["pcg"].seconds / (stored + ITERATION_SECONDS)
    assert on_op["pcg"].seconds == pytest.approx(
        dense["pcg"].seconds + iterations * (op.product_seconds() - stored), rel=1e-9)
    assert "each product costs" in on_op["pcg"].note
    assert on_op["newton"].seconds == pytest.approx(dense["newton"].seconds
                                                    + op.product_seconds(), rel=1e-9)
    assert on_op["newton"].memory == pytest.approx(dense["newton"].memory + 8.0 * 400**2)
    assert on_op["pcg"].memory == pytest.approx(24 * 8.0 * 400 + op.bytes_in_flight)


def test_selection_times_a_sample_of_the_operator_product_when_it_measures():
    import ssl_opt
    from ssl_opt.builders import knn_graph, laplacian, rbf_kernel
    from ssl_opt.datasets import two_moons
    from ssl_opt.problems.manifold.problem import DENSE_PRODUCT_SECONDS, ITERATION_SECONDS

    n = 1200  # more rows than the sample (2 threads × 2 tiles × 128 rows)
    data = two_moons(n=n, n_labeled=10, noise=0.1, seed=0)
    L = laplacian(knn_graph(data.X, n_neighbors=8), normalized=True)
    op = KernelOperator(data.X, "rbf", sigma=0.3, threads=2)
    problem = ssl_opt.problems.LapSVM(op, L, data.y, 1.0, 10.0)
    chosen = ssl_opt.select(problem)
    timed = op.product_seconds(measure=True)  # the value selection measured, cached
    assert 0 < timed < np.inf and op.timed_product_seconds() == timed
    counted = op.products
    assert 0 < op.timed_product_seconds(columns=2) < np.inf
    assert op.products == counted  # a sample, not a counted product
    dense = ssl_opt.select(ssl_opt.problems.LapSVM(rbf_kernel(data.X, sigma=0.3), L, data.y,
                                                   1.0, 10.0), measure=False).predictions
    stored = DENSE_PRODUCT_SECONDS * n**2
    iterations = dense["pcg"].seconds / (stored + ITERATION_SECONDS)
    pcg = chosen.predictions["pcg"]
    assert pcg.seconds == pytest.approx(dense["pcg"].seconds + iterations * (timed - stored),
                                        rel=1e-9)
    assert "timed on a sample of its rows" in pcg.note
    modeled = ssl_opt.select(ssl_opt.problems.LapSVM(op, L, data.y, 1.0, 10.0),
                             measure=False).predictions["pcg"]
    assert "predicted from its sizes" in modeled.note
    with pytest.raises(ValueError, match="columns"):
        op.timed_product_seconds(0)
    with pytest.raises(ValueError, match="measure"):
        op.product_seconds(measure="yes")
    # Fewer rows than the sample: the whole product is timed.
    small = KernelOperator(data.X[:100], "rbf", sigma=0.3, threads=2)
    assert 0 < small.product_seconds(measure=True) < np.inf and small.products == 0
