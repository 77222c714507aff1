"""Bad arguments to the data set generators and loaders (issue 14): each is an
``InvalidInputError`` naming the argument (a missing file is a ``FileNotFoundError`` saying
where it looked), checked before any file is searched for."""

from __future__ import annotations

import numpy as np
import pytest

from ssl_opt.datasets import (
    chessboard,
    double_spiral,
    g50c_like,
    gaussian_blobs,
    load_g50c,
    load_iris_data,
    load_mat,
    load_pcmac,
    load_svmlight,
    load_wine_data,
    pairwise_constraints,
    paper_constraint_count,
    synthetic_text,
    two_moons,
)
from ssl_opt.exceptions import InvalidInputError

BAD_COUNTS = [-5, 0, 2.5, np.nan, "10", None, True, 1j]
BAD_SEEDS = [-1, 2.5, "0", np.nan, 1j]
BAD_REALS = [-1.0, np.nan, np.inf, "0.1", None, 1j]

SSL_GENERATORS = {"two_moons": two_moons, "gaussian_blobs": gaussian_blobs,
                  "g50c_like": g50c_like}

CASES = []
for gen in SSL_GENERATORS.values():
    CASES += [(gen, {"n": v}, "n") for v in BAD_COUNTS]
    CASES += [(gen, {"n_labeled": v}, "n_labeled") for v in [0, -1, 2.5, "2", 10**6, None]]
    CASES += [(gen, {"seed": v}, "seed") for v in BAD_SEEDS]
    CASES += [(gen, {"n_test": v}, "n_test") for v in [-1, 2.5, "0", None]]
CASES += [(two_moons, {"noise": v}, "noise") for v in BAD_REALS]
CASES += [(gaussian_blobs, {"separation": v}, "separation") for v in [0.0] + BAD_REALS]
CASES += [(gen, {"d": v}, "d") for gen in (gaussian_blobs, g50c_like) for v in [0, -1, 2.5, "2"]]
CASES += [(double_spiral, {"n": v}, "n") for v in BAD_COUNTS]
CASES += [(double_spiral, {"noise": v}, "noise") for v in BAD_REALS]
CASES += [(double_spiral, {"seed": v}, "seed") for v in BAD_SEEDS]
CASES += [(chessboard, {"n": v}, "n") for v in BAD_COUNTS]
CASES += [(chessboard, {"seed": v}, "seed") for v in BAD_SEEDS]
CASES += [(loader, {"standardize": v}, "standardize")
          for loader in (load_iris_data, load_wine_data) for v in [1, "yes", None]]
CASES += [(paper_constraint_count, {"n": v}, "n") for v in [-1, 2.5, "10", None]]
CASES += [(paper_constraint_count, {"n": 100, "setting": v}, "setting")
          for v in ["nosuch", 1, None]]
CASES += [(synthetic_text, {"n": 500, "d": 200, "nnz_per_row": 20, **{name: v}}, name)
          for name, vals in {"n": [-5, 0, 2.5, "10"], "d": [-1, 0, 2.5, "5"],
                             "nnz_per_row": [-1, 0, 2.5, "6"], "n_labeled": [-1, 0, 2.5, 10**6],
                             "r": [-0.1, 1.5, np.nan, "0.5"], "noise": BAD_REALS,
                             "n_test": [-1, 2.5], "seed": BAD_SEEDS}.items()
          for v in vals]


@pytest.mark.parametrize(("func", "kwargs", "name"), CASES,
                         ids=[f"{f.__name__}-{k}={v!r}" for f, kw, k in CASES
                              for v in [kw[k]]])
def test_bad_argument_is_refused_naming_it(func, kwargs, name):
    if func is paper_constraint_count and "n" in kwargs and "setting" not in kwargs:
        call = lambda: func(kwargs["n"])  # noqa: E731
    else:
        call = lambda: func(**kwargs)  # noqa: E731
    with pytest.raises(InvalidInputError, match=rf"\b{name}\b"):
        call()


Y = np.array([0, 0, 1, 1, 2, 2, 0, 1])
CONSTRAINT_CASES = [
    ({"y": Y + 0j}, "y"), ({"y": np.array([0.5, 1.0, 2.0, 0.0])}, "y"), ({"y": "abc"}, "y"),
    ({"y": np.zeros(0)}, "y"), ({"y": np.array([np.nan, 0, 1, 1])}, "y"),
    ({"y": Y.reshape(2, 4)}, "y"),
    ({"n_pairs": -1}, "n_pairs"), ({"n_pairs": 2.5}, "n_pairs"), ({"n_pairs": "3"}, "n_pairs"),
    ({"seed": -1}, "seed"), ({"seed": "a"}, "seed"),
    ({"must_link_fraction": -0.1}, "must_link_fraction"),
    ({"must_link_fraction": 1.5}, "must_link_fraction"),
    ({"must_link_fraction": np.nan}, "must_link_fraction"),
    ({"must_link_fraction": "0.5"}, "must_link_fraction"),
]


@pytest.mark.parametrize(("kwargs", "name"), CONSTRAINT_CASES)
def test_pairwise_constraints_bad_argument(kwargs, name):
    args = {"y": Y, "n_pairs": 4, **kwargs}
    with pytest.raises(InvalidInputError, match=rf"\b{name}\b"):
        pairwise_constraints(**args)


def test_pairwise_constraints_leaves_y_alone():
    y = Y.copy()
    pairwise_constraints(y, 4)
    assert y.flags.writeable and np.array_equal(y, Y)


@pytest.mark.parametrize("loader", [load_g50c, load_pcmac])
@pytest.mark.parametrize("split", [-1, 2.5, "0", None, np.nan])
def test_loader_bad_split_is_refused_before_the_file_is_searched(loader, split, tmp_path):
    with pytest.raises(InvalidInputError, match="split"):
        loader(split=split, path=tmp_path / "nosuch.mat")


@pytest.mark.parametrize("loader", [load_g50c, load_pcmac])
@pytest.mark.parametrize("path", [5, ["a"], 2.5, object()])
def test_loader_bad_path_type_names_path(loader, path):
    with pytest.raises(InvalidInputError, match="path"):
        loader(path=path)


@pytest.mark.parametrize("loader", [load_g50c, load_pcmac])
def test_loader_missing_file_says_where(loader, tmp_path):
    with pytest.raises(FileNotFoundError, match=str(tmp_path)):
        loader(path=tmp_path)


@pytest.mark.parametrize("loader", [load_svmlight, load_mat])
@pytest.mark.parametrize("path", [5, None, ["a"]])
def test_file_loader_bad_path_type_names_path(loader, path):
    with pytest.raises(InvalidInputError, match="path"):
        loader(path)


@pytest.mark.parametrize("loader", [load_svmlight, load_mat])
def test_file_loader_missing_file(loader, tmp_path):
    with pytest.raises(FileNotFoundError, match="nosuch"):
        loader(tmp_path / "nosuch")


@pytest.mark.parametrize(("kwargs", "name"), [({"n_features": 0}, "n_features"),
                                              ({"n_features": 2.5}, "n_features"),
                                              ({"n_features": "3"}, "n_features"),
                                              ({"zero_based": "maybe"}, "zero_based"),
                                              ({"zero_based": 1}, "zero_based")])
def test_load_svmlight_bad_options(kwargs, name, tmp_path):
    file = tmp_path / "data.svm"
    file.write_text("1 1:0.5 2:1.0\n-1 2:2.0\n")
    with pytest.raises(InvalidInputError, match=name):
        load_svmlight(file, **kwargs)
