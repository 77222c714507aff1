"""The Nyström operator (ssl_opt/operators/nystrom.py) against the textbook formula
``C W⁺ Cᵀ`` computed densely with numpy's pseudo-inverse (an independent computation), and its
error report against the exact kernel of ssl_opt.builders."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from ssl_opt.builders import kernel_matrix
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.operators import NystromOperator

KINDS = [("rbf", {"sigma": 1.3}), ("polynomial", {"degree": 2, "coef0": 0.5, "scale": 0.2}),
         ("linear", {})]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    return rng.standard_normal((400, 5)), rng.standard_normal((400, 3))


def textbook(X, Z, kind, params):
    C = kernel_matrix(X, Z, kind=kind, **params)
    W = kernel_matrix(Z, kind=kind, **params)
    return C @ np.linalg.pinv(W, rcond=1e-10, hermitian=True) @ C.T


@pytest.mark.parametrize("kind,params", KINDS)
def test_products_equal_the_textbook_approximation(data, kind, params):
    X, V = data
    op = NystromOperator(X, kind, landmarks=60, seed=3, **params)
    Kt = textbook(X, X[op.landmark_indices], kind, params)
    scale = np.abs(Kt @ V).max()
    np.testing.assert_allclose(op @ V, Kt @ V, rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(op.T @ V[:, 0], Kt @ V[:, 0], rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(op.diagonal(), np.diag(Kt), atol=1e-9 * np.abs(Kt).max())
    idx = [0, 399, 17]
    np.testing.assert_allclose(op.columns(idx), Kt[:, idx], atol=1e-9 * np.abs(Kt).max())
    np.testing.assert_allclose(op.to_dense(), Kt, atol=1e-9 * np.abs(Kt).max())
    # The linear kernel of 5 features has rank 5: the landmarks' W has only 5 eigenvalues
    # above rcond, and K̃ is then exact.
    if kind == "linear":
        assert op.rank == 5
        np.testing.assert_allclose(op.to_dense(), X @ X.T, atol=1e-9 * np.abs(X @ X.T).max())


def test_landmarks_as_indices_and_as_points_give_the_same_operator(data):
    X, V = data
    idx = np.array([5, 50, 150, 222, 399, 7, 80])
    by_index = NystromOperator(X, "rbf", landmarks=idx, sigma=2.0)
    by_points = NystromOperator(X, "rbf", landmarks=X[idx], sigma=2.0)
    assert by_points.landmark_indices is None
    np.testing.assert_allclose(by_index @ V, by_points @ V, rtol=1e-12, atol=1e-12)
    sparse = NystromOperator(sp.csr_matrix(X), "rbf", landmarks=idx, sigma=2.0)
    np.testing.assert_allclose(sparse @ V, by_index @ V, rtol=1e-10, atol=1e-12)


def test_features_extend_the_kernel_to_new_points(data):
    X, _ = data
    op = NystromOperator(X, "rbf", landmarks=80, sigma=1.5)
    new = np.random.default_rng(1).standard_normal((30, 5))
    Z = X[op.landmark_indices]
    expected = (kernel_matrix(new, Z, kind="rbf", sigma=1.5)
                @ np.linalg.pinv(kernel_matrix(Z, kind="rbf", sigma=1.5), rcond=1e-10)
                @ kernel_matrix(Z, X, kind="rbf", sigma=1.5))
    np.testing.assert_allclose(op.features(new) @ op.factor.T, expected, atol=1e-8)


def test_error_report_matches_the_exact_kernel(data):
    X, _ = data
    K = kernel_matrix(X, kind="rbf", sigma=1.3)
    errors = []
    for m in (20, 80, 200):
        op = NystromOperator(X, "rbf", landmarks=m, sigma=1.3, seed=0)
        Kt = op.to_dense()
        report = op.approximation(sample=400)  # the sample is every row: exact norms
        assert report["sample_rows"] == 400
        np.testing.assert_allclose(report["trace_error"],
                                   (np.trace(K) - np.trace(Kt)) / np.trace(K), rtol=1e-8)
        # K − K̃ is PSD, so the trace error is the relative nuclear norm.
        nuclear = np.linalg.norm(K - Kt, "nuc") / np.trace(K)
        np.testing.assert_allclose(report["trace_error"], nuclear, rtol=1e-6)
        np.testing.assert_allclose(report["sample_spectral_error"],
                                   np.linalg.norm(K - Kt, 2) / np.linalg.norm(K, 2), rtol=1e-8)
        errors.append(report["trace_error"])
        assert "Nyström" in op.approximation_note() and f"rank-{op.rank}" in (
            op.approximation_note())
    assert errors[0] > errors[1] > errors[2]


def test_float32_factor_is_accurate_to_single_precision(data):
    X, V = data
    op64 = NystromOperator(X, "rbf", landmarks=50, sigma=1.3)
    op32 = NystromOperator(X, "rbf", landmarks=50, sigma=1.3, dtype=np.float32)
    assert op32.nbytes * 2 == op64.nbytes
    got = op32 @ V
    assert got.dtype == np.float64
    err = np.abs(got - op64 @ V).max() / np.abs(op64 @ V).max()
    assert 1e-12 < err < 1e-5


@pytest.mark.parametrize("landmarks,match", [
    (0, "landmarks"), (401, "exceeds"), (np.array([1, 1, 2]), "distinct"),
    (np.array([-1, 3]), "indices"), (np.zeros((3, 4)), "count m"), ("ten", "count m"),
])
def test_bad_landmarks_are_refused(data, landmarks, match):
    with pytest.raises(InvalidInputError, match=match):
        NystromOperator(data[0], "rbf", landmarks=landmarks)


def test_bad_arguments_are_refused(data):
    X, _ = data
    with pytest.raises(InvalidInputError, match="kind"):
        NystromOperator(X, "laplace")
    with pytest.raises(InvalidInputError, match="degree"):
        NystromOperator(X, "rbf", degree=3)
    with pytest.raises(InvalidInputError, match="dtype"):
        NystromOperator(X, "rbf", dtype=np.int64)
    with pytest.raises(InvalidInputError, match="rcond"):
        NystromOperator(X, "rbf", rcond=0.0)
    op = NystromOperator(X, "rbf", landmarks=10)
    with pytest.raises(InvalidInputError, match="max_bytes"):
        op.to_dense(max_bytes=1000)
    with pytest.raises(InvalidInputError, match="columns"):
        op.features(np.zeros((2, 4)))


def test_bad_data_is_refused_and_the_callers_x_is_not_modified(data):
    X = data[0].copy()
    before = X.copy()
    op = NystromOperator(X, "rbf", landmarks=20, sigma=1.0)
    op @ np.ones(X.shape[0])
    np.testing.assert_array_equal(X, before)
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(InvalidInputError, match="X"):
        NystromOperator(bad, "rbf", landmarks=20)
    with pytest.raises(InvalidInputError, match="X"):
        NystromOperator(X + 1j, "rbf", landmarks=20)
    with pytest.raises(InvalidInputError, match="X_new"):
        op.features(np.zeros(5))
