"""Sparse text data: SVMlight / .mat readers, the PCMAC loader and the synthetic_text generator.

Every expectation is computed independently of the code under test (hand-built matrices written
with scikit-learn / scipy writers, the raw ``loadmat`` output, direct counts on CSR arrays, a
separately trained scikit-learn classifier).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.io as sio
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file
from sklearn.svm import LinearSVC

from ssl_opt.datasets import Dataset
from ssl_opt.datasets.synthetic import shared_data_dir
from ssl_opt.datasets.text import load_mat, load_pcmac, load_svmlight
from ssl_opt.datasets.text_generator import synthetic_text
from ssl_opt.exceptions import InvalidInputError

# ----------------------------------------------------------------------------- load_svmlight


def _sparse_dense(rng, n=25, d=7, density=0.4):
    X = rng.random((n, d)) * (rng.random((n, d)) < density)
    X[:, 0] = rng.random(n) + 0.5  # column 0 present, so "auto" index detection is unambiguous
    return X


@pytest.mark.parametrize("labels", [(0, 1), (1, 2), (-1, 1), (3, 7)])
def test_load_svmlight_round_trip_maps_two_labels_to_pm1(tmp_path, labels):
    rng = np.random.default_rng(0)
    X0 = _sparse_dense(rng)
    raw = np.where(np.arange(25) % 3 == 0, labels[1], labels[0])
    file = tmp_path / "data.svm"
    dump_svmlight_file(sp.csr_matrix(X0), raw, str(file), zero_based=False)
    X, y = load_svmlight(file)
    assert sp.issparse(X) and X.format == "csr" and X.dtype == np.float64
    assert X.shape == X0.shape
    np.testing.assert_allclose(X.toarray(), X0, rtol=1e-15, atol=0)
    expected = np.where(np.arange(25) % 3 == 0, 1.0, -1.0)  # larger label -> +1
    np.testing.assert_array_equal(y, expected)
    assert y.dtype == np.float64


def test_load_svmlight_n_features_and_zero_based(tmp_path):
    rng = np.random.default_rng(1)
    X0 = _sparse_dense(rng)
    X0[:, 0] = 0.0  # an empty first column: a 0-based file then looks 1-based to "auto"
    y0 = np.arange(25) % 2
    file = tmp_path / "zero.svm"
    dump_svmlight_file(sp.csr_matrix(X0), y0, str(file), zero_based=True)
    X, _ = load_svmlight(file, n_features=10, zero_based=True)
    assert X.shape == (25, 10)
    np.testing.assert_allclose(X.toarray()[:, :7], X0, rtol=1e-15)
    assert X[:, 7:].nnz == 0
    with pytest.raises(InvalidInputError, match="n_features"):
        load_svmlight(file, n_features=3, zero_based=True)
    with pytest.raises(InvalidInputError, match="n_features"):
        load_svmlight(file, n_features=0)


def test_load_svmlight_rejects_other_than_two_classes(tmp_path):
    X0 = _sparse_dense(np.random.default_rng(2), n=9)
    multi = tmp_path / "multi.svm"
    dump_svmlight_file(sp.csr_matrix(X0), np.arange(9) % 3, str(multi))
    with pytest.raises(InvalidInputError, match=r"exactly two.*found 3: \[0\.0, 1\.0, 2\.0\]"):
        load_svmlight(multi)
    single = tmp_path / "single.svm"
    dump_svmlight_file(sp.csr_matrix(X0), np.ones(9), str(single))
    with pytest.raises(InvalidInputError, match="found 1"):
        load_svmlight(single)
    with pytest.raises(FileNotFoundError, match="missing.svm"):
        load_svmlight(tmp_path / "missing.svm")


# ----------------------------------------------------------------------------- load_mat


def test_load_mat_round_trip(tmp_path):
    rng = np.random.default_rng(3)
    A = sp.random(8, 5, density=0.3, format="csc", random_state=4) * 10
    v = np.arange(6, dtype=np.int32).reshape(6, 1)
    M = rng.random((3, 4))
    file = tmp_path / "vars.mat"
    sio.savemat(file, {"A": A, "v": v, "M": M, "label": "pcmac"})
    out = load_mat(file)
    assert set(out) == {"A", "v", "M", "label"}
    assert sp.issparse(out["A"]) and out["A"].format == "csr" and out["A"].dtype == np.float64
    assert out["A"].has_canonical_format
    np.testing.assert_array_equal(out["A"].toarray(), A.toarray())
    assert out["v"].shape == (6,) and out["v"].dtype == np.float64
    np.testing.assert_array_equal(out["v"], np.arange(6.0))
    assert out["M"].shape == (3, 4) and out["M"].dtype == np.float64
    np.testing.assert_array_equal(out["M"], M)
    assert str(np.asarray(out["label"]).ravel()[0]) == "pcmac"

    assert list(load_mat(file, keys=["M", "A"])) == ["M", "A"]
    assert list(load_mat(file, keys="v")) == ["v"]


def test_load_mat_errors(tmp_path):
    file = tmp_path / "vars.mat"
    sio.savemat(file, {"A": np.eye(2), "B": np.ones(3)})
    with pytest.raises(InvalidInputError, match=r"\['nope'\].*\['A', 'B'\]"):
        load_mat(file, keys=["A", "nope"])
    with pytest.raises(FileNotFoundError, match="absent.mat"):
        load_mat(tmp_path / "absent.mat")
    junk = tmp_path / "junk.mat"
    junk.write_bytes(b"not a mat file at all")
    with pytest.raises(InvalidInputError, match="not a readable .mat file"):
        load_mat(junk)


# ----------------------------------------------------------------------------- load_pcmac


@pytest.fixture(scope="module")
def pcmac_file():
    folder = shared_data_dir()
    if folder is None or not (folder / "text1.mat").is_file():
        pytest.skip("shared data folder with text1.mat is absent")
    return folder / "text1.mat"


def test_load_pcmac_all_splits(pcmac_file):
    raw = sio.loadmat(str(pcmac_file))
    X_raw = sp.csr_matrix(raw["X"])
    y_raw = raw["y"].ravel().astype(float)
    labs = raw["idxLabs"].astype(np.int64) - 1
    unls = raw["idxUnls"].astype(np.int64) - 1
    n, d = X_raw.shape
    assert (n, d) == (1946, 7511)
    for split in range(labs.shape[0]):
        data = load_pcmac(split, path=pcmac_file.parent)
        assert type(data) is Dataset
        order = np.concatenate([labs[split], unls[split]])
        assert np.array_equal(np.sort(order), np.arange(n))  # the public splits cover every row
        assert sp.issparse(data.X) and data.X.format == "csr" and data.X.dtype == np.float64
        assert data.X.shape == (n, d) and data.X.nnz == X_raw.nnz
        assert abs(data.X - X_raw[order]).max() == 0
        np.testing.assert_array_equal(data.y, y_raw[labs[split]])
        np.testing.assert_array_equal(data.y_all, y_raw[order])
        assert data.n_labeled == 50 and set(data.y) == {-1.0, 1.0}
        assert sp.issparse(data.X_test) and data.X_test.shape == (0, d)
        assert data.y_test.shape == (0,)
        assert data.name == f"pcmac(split={split})"
    with pytest.raises(InvalidInputError, match="split"):
        load_pcmac(labs.shape[0], path=pcmac_file)


def _toy_pcmac(folder, **override):
    X = sp.csr_matrix(np.arange(1.0, 25.0).reshape(8, 3) * (np.arange(24).reshape(8, 3) % 2))
    contents = {
        "X": X,
        "y": np.array([[1, -1, 1, -1, 1, -1, 1, -1]]).T,
        "idxLabs": np.array([[1, 4], [2, 3]]),
        "idxUnls": np.array([[2, 3, 5], [1, 4, 6]]),
    }
    contents.update(override)
    sio.savemat(folder / "text1.mat", contents)
    return X.toarray(), contents["y"].ravel().astype(float)


def test_load_pcmac_uncovered_rows_go_to_test(tmp_path):
    X, y = _toy_pcmac(tmp_path)
    data = load_pcmac(0, path=tmp_path)  # a folder
    order, rest = np.array([0, 3, 1, 2, 4]), np.array([5, 6, 7])
    np.testing.assert_array_equal(data.X.toarray(), X[order])
    np.testing.assert_array_equal(data.y_all, y[order])
    np.testing.assert_array_equal(data.y, y[[0, 3]])
    assert sp.issparse(data.X_test)
    np.testing.assert_array_equal(data.X_test.toarray(), X[rest])
    np.testing.assert_array_equal(data.y_test, y[rest])


@pytest.mark.parametrize(
    ("override", "match"),
    [
        ({"idxUnls": np.array([[2, 3, 4], [1, 4, 6]])}, "twice"),
        ({"idxUnls": np.array([[2, 3, 9], [1, 4, 6]])}, "outside"),
        ({"y": np.array([[0, 1, 1, 0, 1, 0, 1, 0]]).T}, "±1"),
        ({"idxLabs": np.array([[1, 4]])}, "splits"),
    ],
)
def test_load_pcmac_malformed(tmp_path, override, match):
    _toy_pcmac(tmp_path, **override)
    with pytest.raises(InvalidInputError, match=match):
        load_pcmac(0, path=tmp_path / "text1.mat")


def test_load_pcmac_missing(tmp_path):
    with pytest.raises(FileNotFoundError, match="text1.mat"):
        load_pcmac(0, path=tmp_path)
    sio.savemat(tmp_path / "text1.mat", {"X": np.eye(2)})
    with pytest.raises(InvalidInputError, match="lacks the keys"):
        load_pcmac(0, path=tmp_path)


# ----------------------------------------------------------------------------- synthetic_text


N, D, NNZ, L, R, N_TEST = 3000, 1500, 40, 100, 0.3, 500


@pytest.fixture(scope="module")
def text_data():
    return synthetic_text(
        N, D, nnz_per_row=NNZ, n_labeled=L, r=R, noise=0.05, n_test=N_TEST, seed=3
    )


def _row_keys(X):
    rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    return rows * X.shape[1] + X.indices.astype(np.int64)


def test_synthetic_text_structure(text_data):
    data = text_data
    assert type(data) is Dataset
    assert data.X.shape == (N, D) and data.X_test.shape == (N_TEST, D)
    assert data.y.shape == (L,) and data.y_all.shape == (N,) and data.y_test.shape == (N_TEST,)
    np.testing.assert_array_equal(data.y, data.y_all[:L])
    for X in (data.X, data.X_test):
        assert sp.issparse(X) and X.format == "csr" and X.dtype == np.float64
        keys = _row_keys(X)
        assert np.all(np.diff(keys) > 0)  # sorted within rows and no duplicate column
        assert X.has_canonical_format
        assert np.all(X.data > 0)
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
        np.testing.assert_allclose(norms, 1.0, rtol=1e-12)
        assert abs(np.diff(X.indptr).mean() - NNZ) <= 0.2 * NNZ
        assert np.all(np.diff(X.indptr) == NNZ)  # documented: exactly nnz_per_row words


def test_synthetic_text_entries_are_tf_idf(text_data):
    # x_ij ∝ tf_ij * idf_j with idf_j = log((1 + n) / (1 + df_j)) + 1 from the training rows,
    # so x_ij / idf_j is an integer count up to a per-row factor.
    df = np.bincount(text_data.X.indices, minlength=D)
    idf = np.log((1.0 + N) / (1.0 + df)) + 1.0
    for X in (text_data.X, text_data.X_test):
        ratio = X.data / idf[X.indices]
        row_min = np.minimum.reduceat(ratio, X.indptr[:-1])
        counts = ratio / np.repeat(row_min, np.diff(X.indptr))
        np.testing.assert_allclose(counts, np.round(counts), atol=1e-9)
        assert 1.05 < counts.mean() < 2.0  # frequent words are drawn more than once


def test_synthetic_text_labels(text_data):
    data = text_data
    for y in (data.y_all, data.y, data.y_test):
        assert set(np.unique(y)) == {-1.0, 1.0}
        assert abs(np.mean(y == 1) - R) <= 0.01
    assert data.n_labeled == L


def test_synthetic_text_word_frequencies_are_zipf_like(text_data):
    df = np.sort(np.bincount(text_data.X.indices, minlength=D))[::-1]
    share_top = df[: D // 100].sum() / df.sum()  # top 1 % of the vocabulary
    assert share_top > 0.15  # uniform words would give ~0.01
    assert df[0] > 0.5 * N and np.median(df) < 0.05 * N


def test_synthetic_text_reproducible():
    a = synthetic_text(400, 300, nnz_per_row=20, n_labeled=20, n_test=30, seed=11)
    b = synthetic_text(
        400, 300, nnz_per_row=20, n_labeled=20, n_test=30, seed=np.random.default_rng(11)
    )
    c = synthetic_text(400, 300, nnz_per_row=20, n_labeled=20, n_test=30, seed=12)
    for name in ("X", "X_test"):
        Xa, Xb = getattr(a, name), getattr(b, name)
        assert np.array_equal(Xa.indptr, Xb.indptr) and np.array_equal(Xa.indices, Xb.indices)
        assert np.array_equal(Xa.data, Xb.data)
    np.testing.assert_array_equal(a.y_all, b.y_all)
    assert a.X.shape == c.X.shape and (a.X != c.X).nnz > 0


def test_synthetic_text_full_rows_when_nnz_equals_d():
    data = synthetic_text(200, 30, nnz_per_row=30, n_labeled=10, n_test=5, seed=0)
    assert np.all(np.diff(data.X.indptr) == 30) and np.all(np.diff(data.X_test.indptr) == 30)
    assert np.all(np.diff(_row_keys(data.X)) > 0)


def test_synthetic_text_learnable_with_room_for_unlabeled_data():
    data = synthetic_text(5000, 2000, seed=0)  # 60 words per row, 400 labeled, 5 % noise
    clf = LinearSVC().fit(data.X[:400], data.y)
    err = np.mean(clf.predict(data.X[400:]) != data.y_all[400:])
    assert err < 0.25
    # Without label noise a linear separator fits almost every row, but 50 labels are far
    # from enough to find it: the gap is what semi-supervised methods can recover.
    clean = synthetic_text(5000, 2000, n_labeled=50, noise=0.0, n_test=2000, seed=1)
    err_all = np.mean(LinearSVC().fit(clean.X, clean.y_all).predict(clean.X_test) != clean.y_test)
    err_50 = np.mean(LinearSVC().fit(clean.X[:50], clean.y).predict(clean.X_test) != clean.y_test)
    assert err_all < 0.06
    assert err_50 > err_all + 0.05


def test_synthetic_text_noise_level():
    data = synthetic_text(5000, 2000, n_labeled=50, noise=0.2, n_test=3000, seed=2)
    # a classifier fit to all (noisy) rows recovers the topics; test labels disagree ~20 %
    err = np.mean(LinearSVC().fit(data.X, data.y_all).predict(data.X_test) != data.y_test)
    assert 0.15 < err < 0.3


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"n": 0}, "n"),
        ({"n": 20.0}, "n"),
        ({"d": 0}, "d"),
        ({"nnz_per_row": 0}, "nnz_per_row"),
        ({"nnz_per_row": 51}, "nnz_per_row"),
        ({"n_labeled": 1}, "n_labeled"),
        ({"n_labeled": 21}, "n_labeled"),
        ({"r": 0.0}, "r"),
        ({"r": 1.0}, "r"),
        ({"r": float("nan")}, "r"),
        ({"noise": -0.1}, "noise"),
        ({"noise": 0.5}, "noise"),
        ({"n_test": -1}, "n_test"),
        ({"seed": -1}, "seed"),
    ],
)
def test_synthetic_text_bad_arguments(kwargs, name):
    args = {"n": 20, "d": 50, "nnz_per_row": 5, "n_labeled": 4} | kwargs
    with pytest.raises(InvalidInputError, match=rf"^{name}\b"):
        synthetic_text(**args)
