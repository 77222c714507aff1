"""ssl_opt.datasets.load_csv round trips (files written with numpy or by hand, read back) and its
errors, each an InvalidInputError (a ValueError) naming the line and the fix; and the 1-based
Matlab index files of the benchmark ``.mat`` loaders, written with scipy.io.savemat."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.io import savemat

from ssl_opt.datasets import load_csv, load_g50c, load_mat, load_pcmac
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.model_selection import SemiSupervisedSplit


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 3))
    y = np.array([0, 1, 2, -1] * 3)
    return X, y


def test_round_trip_numeric_without_header(tmp_path, data):
    X, y = data
    path = tmp_path / "plain.csv"
    np.savetxt(path, np.column_stack([X, y]), delimiter=",", fmt="%.17g")
    X2, y2 = load_csv(path)
    np.testing.assert_array_equal(X2, X)
    np.testing.assert_array_equal(y2, y)
    assert X2.dtype == np.float64 and y2.dtype == np.int64
    X3, y3 = load_csv(str(path), label_column=None)
    np.testing.assert_array_equal(X3, np.column_stack([X, y]))
    assert y3 is None


def test_round_trip_header_and_label_column_by_name_or_position(tmp_path, data):
    X, y = data
    path = tmp_path / "named.csv"
    np.savetxt(path, np.column_stack([y, X]), delimiter=",", fmt="%.17g",
               header="class,a,b,c", comments="")
    for kwargs in ({"label_column": 0}, {"label_column": "class"},
                   {"label_column": -4, "header": True}):
        X2, y2 = load_csv(path, **kwargs)
        np.testing.assert_array_equal(X2, X)
        np.testing.assert_array_equal(y2, y)
    # numpy's default "# " header is a comment line
    np.savetxt(path, np.column_stack([X, y]), delimiter=",", fmt="%.17g", header="a,b,c,class")
    np.testing.assert_array_equal(load_csv(path)[0], X)


def test_round_trip_string_labels_tabs_whitespace_and_quotes(tmp_path, data):
    X, _ = data
    names = np.array(["cat", "dog", "bird, small"] * 4)
    table = np.column_stack([X.astype(object), names.astype(object)])
    tsv = tmp_path / "animals.tsv"
    np.savetxt(tsv, table, delimiter="\t", fmt="%s", header="x1\tx2\tx3\tanimal", comments="")
    X2, y2 = load_csv(tsv, delimiter="\t")
    np.testing.assert_allclose(X2, X, rtol=1e-15)
    np.testing.assert_array_equal(y2, names)
    assert y2.dtype.kind == "U"
    quoted = tmp_path / "quoted.csv"
    quoted.write_text('x,y,label\n1.5,"2",cat\n" 3 ",4e-1,"bird, small"\n\n# note\n5,6,dog\n')
    X3, y3 = load_csv(quoted)
    np.testing.assert_array_equal(X3, [[1.5, 2.0], [3.0, 0.4], [5.0, 6.0]])
    np.testing.assert_array_equal(y3, ["cat", "bird, small", "dog"])
    spaced = tmp_path / "spaced.txt"
    spaced.write_text("1  2\t0.5\n3 4  -0.25\n")
    X4, y4 = load_csv(spaced, delimiter=None)
    np.testing.assert_array_equal(X4, [[1, 2], [3, 4]])
    np.testing.assert_array_equal(y4, [0.5, -0.25])
    assert y4.dtype == np.float64


ERRORS = [
    ("1,2,0\n3,4\n5,6,1\n", {}, r"line 2: 2 fields, but line 1 has 3 \(ragged rows\)"),
    ("a,b,y\n1,2,0\n3,x,1\n", {}, r"line 3, column 2: 'x' is not a number"),
    ("1,2,0\n3,,1\n", {}, r"line 2, column 2: empty field.*impute"),
    ("1,2,0\n3,nan,1\n", {}, r"line 2, column 2: 'nan' is not finite"),
    ("1,2,0\n3,4,\n", {}, r"line 2: empty label.*-1 marks an unlabeled row"),
    ("# only a comment\n\n", {}, "no data rows"),
    ("a,b,y\n", {}, "header line but no data rows"),
    ("1,2,0\n", {"label_column": 3}, r"label_column=3 is outside.*\[-3, 2\]"),
    ("a,b,y\n1,2,0\n", {"label_column": "z"}, r"no column 'z'.*\['a', 'b', 'y'\]"),
    ("1,2,0\n", {"label_column": "y", "header": False}, "header=True"),
    ("1,2,0\n", {"delimiter": ", "}, "delimiter must be one character"),
    ("1,2,0\n", {"header": "yes"}, "header must be"),
    ("1,2,0\n", {"label_column": 1.0}, "label_column must be an integer"),
    ("1\n2\n", {}, "no feature column besides the label column"),
    ("1;2;0\n3;4;1\n", {}, "no feature column.*delimiter"),
]


@pytest.mark.parametrize("text,kwargs,match", ERRORS)
def test_errors_name_the_line_and_the_fix(tmp_path, text, kwargs, match):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(InvalidInputError, match=match) as info:
        load_csv(path, **kwargs)
    assert isinstance(info.value, ValueError)


def test_missing_file_says_where_it_looked(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nope\.csv.*pass path="):
        load_csv(tmp_path / "nope.csv")
    with pytest.raises(InvalidInputError, match="path must be"):
        load_csv(3)


# ----------------------------------------------------------------------------- .mat index files


def _one_based_mat(path, X, y, idx_labs, idx_unls):
    savemat(path, {"X": X, "y": y.reshape(-1, 1), "idxLabs": idx_labs + 1.0,
                   "idxUnls": idx_unls + 1.0})


def test_mat_loaders_convert_one_based_index_files(tmp_path):
    rng = np.random.default_rng(1)
    n = 10
    X = rng.normal(size=(n, 4))
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    perms = np.stack([rng.permutation(n) for _ in range(2)])  # two splits, 0-based
    labs, unls = perms[:, :3], perms[:, 3:]
    _one_based_mat(tmp_path / "g50c.mat", X, y, labs, unls)
    _one_based_mat(tmp_path / "text1.mat", sp.csr_matrix(X), y, labs, unls[:, :-1])

    raw = load_mat(tmp_path / "g50c.mat", keys=["idxLabs"])
    np.testing.assert_array_equal(raw["idxLabs"], labs + 1)  # the file's contents, as written
    for s in range(2):
        order = np.concatenate([labs[s], unls[s]])
        g = load_g50c(split=s, path=tmp_path)
        np.testing.assert_array_equal(g.X, X[order])
        np.testing.assert_array_equal(g.y_all, y[order])
        assert g.n_labeled == 3
        p = load_pcmac(split=s, path=tmp_path)  # the last row of the split goes to the test set
        np.testing.assert_array_equal(p.X.toarray(), X[order[:-1]])
        np.testing.assert_array_equal(p.X_test.toarray(), X[[unls[s, -1]]])
        split = SemiSupervisedSplit.from_indices(raw["idxLabs"][s], load_mat(
            tmp_path / "g50c.mat", "idxUnls")["idxUnls"][s], n, one_based=True)
        np.testing.assert_array_equal(split.labeled, np.sort(labs[s]))
        np.testing.assert_array_equal(split.unlabeled, np.sort(unls[s]))


def test_mat_loader_refuses_zero_based_index_files(tmp_path):
    n = 6
    X = np.arange(n * 2.0).reshape(n, 2)
    y = np.array([1.0, -1.0] * 3)
    savemat(tmp_path / "text1.mat", {"X": sp.csr_matrix(X), "y": y, "idxLabs": np.array([[0, 1]]),
                                     "idxUnls": np.array([[2, 3, 4, 5]])})
    with pytest.raises(InvalidInputError, match="outside 1..6"):
        load_pcmac(path=tmp_path)


def test_dataset_targets_for_estimators_recode_plus_minus_one():
    from ssl_opt.datasets import gaussian_blobs, two_moons

    data = two_moons(n=40, n_labeled=6, seed=0)
    y = data.semi_supervised_targets()
    np.testing.assert_array_equal(y[:6], (data.y_all[:6] > 0).astype(int))
    assert np.all(y[6:] == -1) and set(np.unique(y[:6])) <= {0, 1}
    np.testing.assert_array_equal(data.class_labels(), (data.y_all > 0).astype(int))
    assert data.y_all.min() == -1.0  # the data set itself is untouched
    blobs = gaussian_blobs(n=30, n_labeled=5, seed=0)
    assert set(np.unique(blobs.class_labels())) <= {0, 1}
