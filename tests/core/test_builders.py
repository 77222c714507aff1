"""Tests for ssl_opt.builders (kernels, kNN graphs, Laplacians), ssl_opt.datasets.synthetic and
the data set type ssl_opt.datasets.base.Dataset.

Each builder is compared with an independent, deliberately naive computation.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from ssl_opt.builders import (
    graph_laplacian_from_data,
    kernel_matrix,
    knn_graph,
    laplacian,
    linear_kernel,
    polynomial_kernel,
    rbf_kernel,
)
from ssl_opt.datasets import Dataset, chessboard, synthetic_text
from ssl_opt.datasets.synthetic import (
    g50c_like,
    gaussian_blobs,
    load_g50c,
    shared_data_dir,
    two_moons,
)

FAST = settings(max_examples=15, deadline=None)


def _rand(n, d, seed=0):
    return np.random.default_rng(seed).standard_normal((n, d))


def _sparse_rand(n, d, seed=0, density=0.4):
    return sp.random(n, d, density=density, format="csr", random_state=seed) * 3.0


def _random_symmetric_W(n, seed=0, density=0.4):
    rng = np.random.default_rng(seed)
    A = rng.random((n, n)) * (rng.random((n, n)) < density)
    W = np.triu(A, 1)
    return W + W.T


# ----------------------------------------------------------------------------- kernels


@FAST
@given(
    n=st.integers(1, 6),
    m=st.integers(1, 5),
    d=st.integers(1, 4),
    sigma=st.floats(0.2, 5.0),
    seed=st.integers(0, 1000),
)
def test_rbf_matches_double_loop(n, m, d, sigma, seed):
    X, Z = _rand(n, d, seed), _rand(m, d, seed + 1)
    K = rbf_kernel(X, Z, sigma=sigma)
    ref = np.empty((n, m))
    for i in range(n):
        for j in range(m):
            diff = X[i] - Z[j]
            ref[i, j] = np.exp(-np.dot(diff, diff) / (2.0 * sigma**2))
    assert K.shape == (n, m) and K.dtype == np.float64
    np.testing.assert_allclose(K, ref, rtol=1e-12, atol=1e-14)


def test_rbf_gram_symmetric_unit_diagonal():
    X = _rand(30, 4) * 1e3 + 5e3  # large offset: cancellation-prone squared distances
    K = rbf_kernel(X, sigma=2e3)
    assert np.array_equal(K, K.T)
    assert np.all(np.diag(K) == 1.0)
    assert np.all((K > 0) & (K <= 1.0))


def test_linear_and_polynomial_match_formulas():
    X, Z = _rand(7, 3, 1), _rand(5, 3, 2)
    np.testing.assert_allclose(linear_kernel(X, Z), X @ Z.T, rtol=1e-13)
    P = polynomial_kernel(X, Z, degree=4, coef0=0.5, scale=2.0)
    ref = np.array([[(2.0 * np.dot(x, z) + 0.5) ** 4 for z in Z] for x in X])
    np.testing.assert_allclose(P, ref, rtol=1e-12)
    G = polynomial_kernel(X)
    assert np.array_equal(G, G.T)
    np.testing.assert_allclose(G, (X @ X.T + 1.0) ** 3, rtol=1e-12)


@pytest.mark.parametrize(
    ("kind", "params"),
    [("linear", {}), ("rbf", {"sigma": 1.7}), ("polynomial", {"degree": 2, "coef0": 0.3})],
)
def test_sparse_inputs_equal_dense(kind, params):
    Xs, Zs = _sparse_rand(9, 6, 3), _sparse_rand(4, 6, 4)
    Xd, Zd = Xs.toarray(), Zs.toarray()
    for Z_s, Z_d in ((Zs, Zd), (None, None)):
        Ks = kernel_matrix(Xs, Z_s, kind=kind, **params)
        Kd = kernel_matrix(Xd, Z_d, kind=kind, **params)
        assert isinstance(Ks, np.ndarray) and not sp.issparse(Ks)
        np.testing.assert_allclose(Ks, Kd, rtol=1e-12, atol=1e-13)
    # mixed sparse / dense operands
    np.testing.assert_allclose(
        kernel_matrix(Xs, Zd, kind=kind, **params),
        kernel_matrix(Xd, Zd, kind=kind, **params),
        rtol=1e-12,
        atol=1e-13,
    )


def test_kernel_matrix_dispatch():
    X = _rand(5, 2)
    np.testing.assert_array_equal(kernel_matrix(X, kind="rbf", sigma=0.7), rbf_kernel(X, sigma=0.7))
    np.testing.assert_array_equal(kernel_matrix(X, kind="linear"), linear_kernel(X))


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: rbf_kernel(np.array([[np.nan, 1.0]])), "X"),
        (lambda: rbf_kernel(_rand(3, 2), np.array([[np.inf, 0.0]])), "Z"),
        (lambda: rbf_kernel(_rand(3, 2), _rand(3, 3)), "Z"),
        (lambda: rbf_kernel(_rand(3, 2), sigma=0.0), "sigma"),
        (lambda: rbf_kernel(_rand(3, 2), sigma=-1.0), "sigma"),
        (lambda: rbf_kernel(np.ones(3)), "X"),
        (lambda: polynomial_kernel(_rand(3, 2), degree=0), "degree"),
        (lambda: polynomial_kernel(_rand(3, 2), degree=2.5), "degree"),
        (lambda: polynomial_kernel(_rand(3, 2), coef0=np.nan), "coef0"),
        (lambda: polynomial_kernel(_rand(3, 2), scale=0), "scale"),
        (lambda: kernel_matrix(_rand(3, 2), kind="laplace"), "kind"),
        (lambda: kernel_matrix(_rand(3, 2), kind="linear", sigma=1.0), "params"),
    ],
)
def test_kernel_validation(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ----------------------------------------------------------------------------- kNN graphs


def _brute_knn(X, k):
    D = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    np.fill_diagonal(D, np.inf)
    return D, np.argsort(D, axis=1)[:, :k]


@FAST
@given(
    n=st.integers(3, 25),
    d=st.integers(1, 4),
    frac=st.floats(0.0, 1.0),
    seed=st.integers(0, 1000),
    symmetrize=st.sampled_from(["union", "mutual"]),
)
def test_knn_graph_matches_brute_force(n, d, frac, seed, symmetrize):
    X = _rand(n, d, seed)
    k = 1 + int(frac * (n - 2))
    W = knn_graph(X, n_neighbors=k, symmetrize=symmetrize)
    D, nbrs = _brute_knn(X, k)
    A = np.zeros((n, n))
    A[np.repeat(np.arange(n), k), nbrs.ravel()] = 1.0
    ref = np.maximum(A, A.T) if symmetrize == "union" else np.minimum(A, A.T)
    assert sp.isspmatrix_csr(W) and W.dtype == np.float64
    np.testing.assert_array_equal(W.toarray(), ref)
    if symmetrize == "union":
        # every point is connected to each of its k nearest neighbours
        assert np.all(W.toarray()[np.arange(n)[:, None], nbrs] == 1.0)
        assert np.all(np.asarray(W.sum(axis=1)).ravel() >= k)
    assert np.all(W.diagonal() == 0)
    assert (W - W.T).nnz == 0


def test_knn_graph_weights():
    X = _rand(20, 3, 7)
    k = 4
    D, nbrs = _brute_knn(X, k)
    rows = np.repeat(np.arange(20), k)
    dists = D[rows, nbrs.ravel()]
    for weights, sigma in (("distance", None), ("heat", None), ("heat", 0.8)):
        A = np.zeros((20, 20))
        if weights == "distance":
            A[rows, nbrs.ravel()] = dists
        else:
            s = dists.mean() if sigma is None else sigma
            A[rows, nbrs.ravel()] = np.exp(-(dists**2) / (2 * s**2))
        W = knn_graph(X, n_neighbors=k, weights=weights, sigma=sigma)
        np.testing.assert_allclose(W.toarray(), np.maximum(A, A.T), rtol=1e-10, atol=1e-14)
        assert W.data.min() > 0


def test_knn_graph_sparse_equals_dense():
    Xs = _sparse_rand(30, 8, 11, density=0.6)
    Ws = knn_graph(Xs, n_neighbors=5, weights="heat")
    Wd = knn_graph(Xs.toarray(), n_neighbors=5, weights="heat")
    np.testing.assert_allclose(Ws.toarray(), Wd.toarray(), rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_neighbors": 0}, "n_neighbors"),
        ({"n_neighbors": 12}, "n_neighbors"),
        ({"n_neighbors": 2.0}, "n_neighbors"),
        ({"weights": "heat", "sigma": 0.0}, "sigma"),
        ({"weights": "heat", "sigma": -2.0}, "sigma"),
        ({"weights": "gauss"}, "weights"),
        ({"symmetrize": "both"}, "symmetrize"),
    ],
)
def test_knn_graph_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        knn_graph(_rand(12, 2), **kwargs)


def test_knn_graph_rejects_nan():
    X = _rand(10, 2)
    X[3, 1] = np.nan
    with pytest.raises(ValueError, match="X"):
        knn_graph(X, n_neighbors=3)


# ----------------------------------------------------------------------------- Laplacians


@FAST
@given(n=st.integers(2, 12), seed=st.integers(0, 1000), power=st.integers(1, 4))
def test_laplacian_properties(n, seed, power):
    W = _random_symmetric_W(n, seed)
    Wsp = sp.csr_matrix(W)
    deg = W.sum(axis=1)

    L = laplacian(W)
    assert sp.isspmatrix_csr(L) and L.dtype == np.float64
    Ld = L.toarray()
    np.testing.assert_allclose(Ld, np.diag(deg) - W, atol=1e-14)
    np.testing.assert_allclose(Ld @ np.ones(n), 0.0, atol=1e-12)
    np.testing.assert_allclose(laplacian(Wsp).toarray(), Ld, atol=0)

    Ln = laplacian(Wsp, normalized=True)
    inv = np.where(deg > 0, 1.0 / np.sqrt(np.where(deg > 0, deg, 1.0)), 0.0)
    Ln_ref = np.eye(n) - inv[:, None] * W * inv[None, :]
    np.testing.assert_allclose(Ln.toarray(), Ln_ref, atol=1e-13)
    ev = np.linalg.eigvalsh(Ln.toarray())
    assert ev.min() >= -1e-10 and ev.max() <= 2.0 + 1e-10

    for normalized, base in ((False, Ld), (True, Ln_ref)):
        Lp = laplacian(W, normalized=normalized, power=power)
        assert (Lp - Lp.T).nnz == 0  # exactly symmetric
        ref = np.linalg.matrix_power(base, power)
        np.testing.assert_allclose(Lp.toarray(), ref, atol=1e-11 * max(1.0, np.abs(ref).max()))


def test_laplacian_isolated_node():
    W = np.zeros((4, 4))
    W[0, 1] = W[1, 0] = 2.0
    W[1, 2] = W[2, 1] = 1.0  # node 3 is isolated
    L = laplacian(W).toarray()
    np.testing.assert_array_equal(L[3], 0.0)
    Ln = laplacian(W, normalized=True).toarray()
    np.testing.assert_array_equal(Ln[3], [0.0, 0.0, 0.0, 1.0])
    np.testing.assert_array_equal(Ln[:, 3], [0.0, 0.0, 0.0, 1.0])
    assert np.all(np.isfinite(Ln))
    np.testing.assert_allclose(np.diag(Ln)[:3], 1.0)


@pytest.mark.parametrize(
    ("W", "kwargs", "match"),
    [
        (np.array([[0.0, 1.0], [0.0, 0.0]]), {}, "symmetric"),
        (np.array([[0.0, -1.0], [-1.0, 0.0]]), {}, "non-negative"),
        (np.array([[1.0, 1.0], [1.0, 0.0]]), {}, "diagonal"),
        (np.array([[0.0, np.nan], [np.nan, 0.0]]), {}, "W"),
        (np.ones((2, 3)), {}, "square"),
        (np.array([[0.0, 1.0], [1.0, 0.0]]), {"power": 0}, "power"),
        (np.array([[0.0, 1.0], [1.0, 0.0]]), {"power": 1.5}, "power"),
        (np.array([[0.0, 1.0], [1.0, 0.0]]), {"normalized": "yes"}, "normalized"),
    ],
)
def test_laplacian_validation(W, kwargs, match):
    with pytest.raises(ValueError, match=match):
        laplacian(W, **kwargs)


def test_graph_laplacian_from_data():
    X = _rand(40, 2, 5)
    L = graph_laplacian_from_data(X, n_neighbors=6, weights="heat", normalized=True, power=2)
    ref = laplacian(knn_graph(X, n_neighbors=6, weights="heat"), normalized=True, power=2)
    np.testing.assert_array_equal(L.toarray(), ref.toarray())
    with pytest.raises(ValueError, match="n_neighbors"):
        graph_laplacian_from_data(X, n_neighbors=40)


# ----------------------------------------------------------------------------- datasets


def _check_sslddata(data: Dataset, n, n_lab, d, n_test):
    assert isinstance(data, Dataset)
    assert data.X.shape == (n, d) and data.X.dtype == np.float64
    assert data.y.shape == (n_lab,) and data.y_all.shape == (n,)
    assert data.n_labeled == n_lab
    np.testing.assert_array_equal(data.y, data.y_all[:n_lab])
    assert set(np.unique(data.y_all)) <= {-1.0, 1.0}
    assert data.X_test.shape == (n_test, d) and data.y_test.shape == (n_test,)
    if n_lab >= 2:
        assert {-1.0, 1.0} <= set(np.unique(data.y))


@pytest.mark.parametrize("n_lab", [2, 3, 10])
def test_two_moons(n_lab):
    data = two_moons(n=100, n_labeled=n_lab, seed=3, n_test=20)
    _check_sslddata(data, 100, n_lab, 2, 20)
    assert min(np.sum(data.y == 1), np.sum(data.y == -1)) >= n_lab // 2
    again = two_moons(n=100, n_labeled=n_lab, seed=3, n_test=20)
    np.testing.assert_array_equal(data.X, again.X)


def test_gaussian_blobs_and_g50c_like_shapes():
    _check_sslddata(gaussian_blobs(n=60, n_labeled=6, d=3, seed=1), 60, 6, 3, 0)
    _check_sslddata(g50c_like(seed=2, n_test=30), 550, 50, 50, 30)


def test_g50c_like_bayes_error_is_five_percent():
    data = g50c_like(n=20000, n_labeled=2, seed=4)
    d = data.X.shape[1]
    e = np.ones(d) / np.sqrt(d)
    pred = np.where(data.X @ e >= 0, 1.0, -1.0)
    err = np.mean(pred != data.y_all)
    assert abs(err - 0.05) < 0.01
    assert np.isclose(norm.cdf(-norm.ppf(0.95)), 0.05)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: two_moons(n=10, n_labeled=11), "n_labeled"),
        (lambda: two_moons(n=10, n_labeled=0), "n_labeled"),
        (lambda: two_moons(noise=-0.1), "noise"),
        (lambda: gaussian_blobs(separation=0.0), "separation"),
        (lambda: gaussian_blobs(d=0), "d"),
        (lambda: g50c_like(n_test=-1), "n_test"),
    ],
)
def test_dataset_validation(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_every_generator_returns_one_dataset_type():
    import ssl_opt.datasets as datasets

    assert datasets.SSLData is Dataset and datasets.ClusterData is Dataset  # former names
    sets = [two_moons(n=20, n_labeled=4), gaussian_blobs(n=20, n_labeled=4),
            g50c_like(n=30, n_labeled=4), synthetic_text(30, 20, nnz_per_row=3, n_labeled=4),
            chessboard(20)]
    for data in sets:
        assert type(data) is Dataset
        np.testing.assert_array_equal(data.y, data.y_all[: data.n_labeled])
        assert data.n == data.X.shape[0] == data.y_all.size
        assert data.n_clusters == np.unique(data.y_all).size
        assert data.name in repr(data)


def test_dataset_for_pure_clustering_and_defaults():
    X = _rand(6, 2)
    data = Dataset(X=X, y_all=np.array([0, 2, 1, 2, 0, 1]), n_labeled=0, name="toy")
    assert data.y.shape == (0,) and data.n_clusters == 3 and data.n == 6
    assert data.X_test.shape == (0, 2) and isinstance(data.X_test, np.ndarray)
    assert data.y_test.shape == (0,) and data.y_test.dtype == data.y_all.dtype
    sparse = Dataset(X=sp.csr_matrix(X), y_all=np.ones(6), n_labeled=6, name="sparse")
    assert sp.issparse(sparse.X_test) and sparse.X_test.shape == (0, 2)
    np.testing.assert_array_equal(sparse.y, np.ones(6))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"y_all": np.ones(5)}, "y_all"),
        ({"n_labeled": 7}, "n_labeled"),
        ({"n_labeled": -1}, "n_labeled"),
        ({"n_labeled": True}, "n_labeled"),
        ({"n_labeled": 2.0}, "n_labeled"),
        ({"X": np.ones(6)}, "X must be"),
        ({"X_test": np.ones((3, 3)), "y_test": np.ones(3)}, "X_test"),
        ({"X_test": np.ones((3, 2)), "y_test": np.ones(2)}, "y_test"),
    ],
)
def test_dataset_validation_of_fields(kwargs, match):
    fields = {"X": _rand(6, 2), "y_all": np.ones(6), "n_labeled": 2, "name": "bad"} | kwargs
    with pytest.raises(ValueError, match=match):
        Dataset(**fields)


def test_load_g50c_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="g50c.mat"):
        load_g50c(path=tmp_path)


def test_load_g50c():
    folder = shared_data_dir()
    if folder is None or not (folder / "g50c.mat").is_file():
        pytest.skip("shared data folder with g50c.mat not available")
    from scipy.io import loadmat

    mat = loadmat(str(folder / "g50c.mat"))
    for split in (0, 9):
        data = load_g50c(split=split)
        _check_sslddata(data, 550, 50, 50, 0)
        order = np.concatenate([mat["idxLabs"][split], mat["idxUnls"][split]]).astype(int) - 1
        np.testing.assert_array_equal(np.sort(order), np.arange(550))
        np.testing.assert_array_equal(data.X, mat["X"][order])
        np.testing.assert_array_equal(data.y_all, mat["y"].ravel()[order])
    with pytest.raises(ValueError, match="split"):
        load_g50c(split=10)


# ----------------------------------------------------------------------------- issue 14


def _builders():
    from ssl_opt.builders import graph_laplacian_from_data

    return {
        "rbf_kernel": lambda X: rbf_kernel(X, sigma=1.0),
        "linear_kernel": linear_kernel,
        "knn_graph": lambda X: knn_graph(X, n_neighbors=2),
        "graph_laplacian_from_data": lambda X: graph_laplacian_from_data(X, n_neighbors=2),
    }


BAD_X = {
    "complex": (lambda X: X.astype(complex), "complex"),
    "nan": (lambda X: np.where(X > 0, np.nan, X), "NaN"),
    "inf": (lambda X: np.where(X > 0, np.inf, X), "NaN or inf"),
    "string": (lambda X: np.full(X.shape, "a"), "numeric"),
    "empty": (lambda X: np.zeros((0, 2)), ""),
    "no columns": (lambda X: np.zeros((6, 0)), "columns"),
    "1-D": (lambda X: X[:, 0], "2-D"),
}


@pytest.mark.parametrize("builder", sorted(_builders()))
@pytest.mark.parametrize("bad", sorted(BAD_X))
def test_builders_refuse_bad_X_by_name(builder, bad):
    make, word = BAD_X[bad]
    X = make(_rand(6, 2))
    with pytest.raises(ValueError, match=f"^X .*{word}|^X must"):
        _builders()[builder](X)


@pytest.mark.parametrize("builder", sorted(_builders()))
@pytest.mark.parametrize("sparse", [False, True])
def test_builders_leave_the_callers_X_writeable_and_unchanged(builder, sparse):
    X = _rand(8, 3)
    X_in = sp.csr_matrix(X) if sparse else X
    _builders()[builder](X_in)
    X_back = X_in.toarray() if sparse else X_in
    np.testing.assert_array_equal(X_back, X)
    assert (X_in.data if sparse else X_in).flags.writeable


@pytest.mark.parametrize("sigma", [0.0, -1.0, np.nan, np.inf, "1", True, 1j])
def test_rbf_and_heat_graph_refuse_bad_sigma(sigma):
    with pytest.raises(ValueError, match="sigma"):
        rbf_kernel(_rand(4, 2), sigma=sigma)
    with pytest.raises(ValueError, match="sigma"):
        knn_graph(_rand(6, 2), n_neighbors=2, weights="heat", sigma=sigma)


@pytest.mark.parametrize("k", [0, -1, 6, 2.5, "2", True, None, np.nan])
def test_knn_graph_and_graph_laplacian_refuse_bad_k(k):
    from ssl_opt.builders import graph_laplacian_from_data

    with pytest.raises(ValueError, match="n_neighbors"):
        knn_graph(_rand(6, 2), n_neighbors=k)
    with pytest.raises(ValueError, match="n_neighbors"):
        graph_laplacian_from_data(_rand(6, 2), n_neighbors=k)


@pytest.mark.parametrize("weights", ["gauss", "", None, 1, "Binary"])
def test_knn_graph_refuses_bad_weights(weights):
    with pytest.raises(ValueError, match="weights"):
        knn_graph(_rand(6, 2), n_neighbors=2, weights=weights)


@pytest.mark.parametrize("W, match", [
    (np.array([[0.0, 1.0], [1.0, 0.0]], dtype=complex), "^W has a complex dtype"),
    (np.array([[0.0, -1.0], [-1.0, 0.0]]), "non-negative"),
    (np.zeros((0, 0)), "^W"),
    (np.full((2, 2), "a"), "^W must be a numeric matrix"),
    (np.ones(3), "^W must be 2-D"),
    (sp.csr_matrix(np.array([[0.0, 1.0], [1.0, 0.0]], dtype=complex)), "^W has a complex"),
])
def test_laplacian_refuses_bad_weights_matrix_by_name(W, match):
    with pytest.raises(ValueError, match=match):
        laplacian(W)


def test_laplacian_leaves_a_non_canonical_W_alone():
    W = _random_symmetric_W(7, seed=3)
    csr = sp.csr_matrix(W)
    data, indices, indptr = [], [], [0]
    for i in range(7):  # every entry twice (half each), indices reversed: not canonical
        cols = csr.indices[csr.indptr[i]:csr.indptr[i + 1]][::-1]
        vals = csr.data[csr.indptr[i]:csr.indptr[i + 1]][::-1] / 2
        indices.extend(np.r_[cols, cols])
        data.extend(np.r_[vals, vals])
        indptr.append(len(indices))
    raw = sp.csr_matrix((np.array(data), np.array(indices), np.array(indptr)), shape=(7, 7))
    assert not raw.has_canonical_format
    before = (raw.data.copy(), raw.indices.copy(), raw.indptr.copy())
    L = laplacian(raw)
    for arr, old in zip((raw.data, raw.indices, raw.indptr), before, strict=True):
        np.testing.assert_array_equal(arr, old)
        assert arr.flags.writeable
    np.testing.assert_allclose(L.toarray(), laplacian(W).toarray(), rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("weights", ["binary", "heat", "distance"])
def test_knn_graph_of_precomputed_distances_equals_the_graph_of_the_points(weights):
    from scipy.spatial.distance import cdist

    X = np.random.default_rng(0).normal(size=(40, 3))
    W = knn_graph(X, n_neighbors=5, weights=weights)
    Wd = knn_graph(cdist(X, X), n_neighbors=5, weights=weights, metric="precomputed")
    np.testing.assert_array_equal(W.indices, Wd.indices)  # the same edges
    np.testing.assert_allclose(W.toarray(), Wd.toarray(), atol=1e-12)
    with pytest.raises(ValueError, match="distances"):
        knn_graph(-cdist(X, X), n_neighbors=5, metric="precomputed")
    with pytest.raises(ValueError, match="metric"):
        knn_graph(X, n_neighbors=5, metric="cosine")
