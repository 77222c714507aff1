"""Bad input to ERE, LRL, SumOfNorms and the IRLS plugin (issue 14): every malformed argument
is an ``InvalidInputError`` naming the argument, the caller's arrays are never changed (nor a
non-canonical sparse A canonicalized in place), a negative A or an indefinite Q is refused.

Independent checks: the caller's arrays are compared with copies taken before the call; a sum
of norms scaled by s, ``s(½xᵀQx + cᵀx + Σ w‖Gx − h‖)``, has the minimizer of the unscaled one.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import ssl_opt
from ssl_opt.builders import knn_graph
from ssl_opt.exceptions import BadScalingWarning, InvalidInputError
from ssl_opt.problems import ERE, LRL, SumOfNorms

N, D, C, L = 18, 3, 2, 4


def _data():
    rng = np.random.default_rng(7)
    X = rng.standard_normal((N, D))
    A = knn_graph(X, 4).toarray()
    Y = np.eye(C)[[0, 1, 0, 1]]
    return X, A, Y


def _non_canonical(W: np.ndarray) -> sp.csr_matrix:
    S = sp.csr_matrix(W)
    out = sp.csr_matrix((np.repeat(S.data / 2.0, 2), np.repeat(S.indices, 2), 2 * S.indptr),
                        shape=S.shape)
    assert not out.has_canonical_format
    return out


def _bad_values():
    X, A, Y = _data()
    eye_nan = lambda M: np.where(np.arange(M.size).reshape(M.shape) == 0, np.nan, M)  # noqa: E731
    eye_inf = lambda M: np.where(np.arange(M.size).reshape(M.shape) == 0, np.inf, M)  # noqa: E731
    return {
        "X": {"complex": X + 0j, "nan": eye_nan(X), "inf": eye_inf(X), "empty": np.zeros((0, D)),
              "vector": X[:, 0], "string": "abc", "none": None,
              "sparse_complex": sp.csr_matrix(X + 1j)},
        "A": {"complex": A + 0j, "nan": eye_nan(A), "inf": eye_inf(A), "empty": np.zeros((0, 0)),
              "wrong_shape": A[:-1, :-1], "not_square": A[:-1], "string": "abc", "none": None,
              "negative": -A, "asymmetric": np.triu(A), "self_loops": A + np.eye(N)},
        "Y": {"complex": Y + 0j, "sparse_complex": sp.csr_matrix(Y + 0j), "nan": eye_nan(Y),
              "inf": eye_inf(Y), "empty": np.zeros((0, C)), "vector": np.array([0, 1, 0, 1]),
              "string": "abc", "none": None, "not_01": 2 * Y, "too_many_rows": np.eye(C)[
                  np.arange(N + 1) % C]},
        "alpha": {"zero": 0.0, "negative": -1.0, "nan": np.nan, "inf": np.inf, "complex": 1j,
                  "string": "1"},
        "beta": {"zero": 0.0, "negative": -1.0, "nan": np.nan, "inf": np.inf, "complex": 1j,
                 "string": "1"},
    }


BAD = _bad_values()


@pytest.mark.parametrize("cls", [ERE, LRL])
@pytest.mark.parametrize(("arg", "bad"), [(a, b) for a, vals in BAD.items() for b in sorted(vals)])
def test_bad_argument_is_refused_naming_it(cls, arg, bad):
    X, A, Y = _data()
    args = {"X": X, "A": A, "Y": Y, "alpha": 1.0, "beta": 0.1}
    args[arg] = BAD[arg][bad]
    with pytest.raises(InvalidInputError, match=rf"^{arg}\b"):  # blames arg first
        cls(**args)


@pytest.mark.parametrize("value", [1, "yes", None])
def test_bad_robust_is_refused(value):
    X, A, Y = _data()
    with pytest.raises(InvalidInputError, match="robust"):
        ERE(X, A, Y, 1.0, 0.1, robust=value)


@pytest.mark.parametrize("cls", [ERE, LRL])
@pytest.mark.parametrize("sparse", [False, True])
def test_caller_arrays_unchanged_and_writeable(cls, sparse):
    X, A, Y = _data()
    X_in, Y_in = X.copy(), Y.copy()
    A_in = _non_canonical(A) if sparse else A.copy()
    problem = cls(X_in, A_in, Y_in, 1.0, 0.1)
    ssl_opt.solve(problem, solver="irls")
    for arr, want in ((X_in, X), (Y_in, Y)):
        assert arr.flags.writeable and np.array_equal(arr, want)
    if sparse:
        assert not A_in.has_canonical_format and A_in.data.flags.writeable
        np.testing.assert_array_equal(A_in.toarray(), A)
    else:
        assert A_in.flags.writeable and np.array_equal(A_in, A)
    X_in[0, 0] += 1.0  # the problem holds its own copy
    assert problem.X[0, 0] == X[0, 0]


def test_predict_bad_X_new_names_it():
    X, A, Y = _data()
    problem = LRL(X, A, Y, 1.0, 0.1)
    sol = ssl_opt.solve(problem, solver="irls")
    for bad in (X + 0j, X[:, :-1], np.where(X > 1, np.nan, X), "abc"):
        with pytest.raises(InvalidInputError, match="X_new"):
            problem.predict(sol, X_new=bad)


# ----------------------------------------------------------------------------- SumOfNorms

def _son_args():
    rng = np.random.default_rng(2)
    B = rng.standard_normal((4, 4))
    return {"Q": B @ B.T, "c": rng.standard_normal(4), "G": rng.standard_normal((6, 4)),
            "h": rng.standard_normal(6), "group_size": 2, "weights": np.array([1.0, 0.5, 2.0])}


def _son_bad():
    a = _son_args()
    return {
        "Q": {"complex": a["Q"] + 0j, "nan": np.where(np.eye(4) > 0, np.nan, a["Q"]),
              "empty": np.zeros((0, 0)), "not_square": a["Q"][:-1], "string": "abc",
              "none": None, "asymmetric": np.triu(a["Q"]) + np.eye(4) * 10,
              "negative_diagonal": a["Q"] - 100 * np.eye(4),
              "indefinite": np.array([[1.0, 2, 0, 0], [2, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])},
        "c": {"complex": a["c"] + 0j, "nan": np.array([np.nan, 0, 0, 0]),
              "inf": np.array([np.inf, 0, 0, 0]), "empty": np.zeros(0), "wrong_shape": np.ones(3),
              "string": "abcd", "none": None},
        "G": {"complex": a["G"] + 0j, "nan": np.where(a["G"] > 1, np.nan, a["G"]),
              "empty": np.zeros((0, 4)), "wrong_columns": a["G"][:, :-1],
              "odd_rows": a["G"][:-1], "string": "abc", "none": None},
        "h": {"complex": a["h"] + 0j, "nan": np.full(6, np.nan), "inf": np.full(6, np.inf),
              "empty": np.zeros(0), "wrong_shape": np.ones(4), "string": "abcdef", "none": None},
        "weights": {"complex": a["weights"] + 0j, "nan": np.array([np.nan, 1, 1]),
                    "negative": np.array([-1.0, 1, 1]), "wrong_shape": np.ones(2),
                    "string": "abc"},
        "group_size": {"zero": 0, "negative": -2, "fractional": 2.5, "string": "2", "bool": True,
                       "not_dividing": 4},
    }


SON_BAD = _son_bad()


@pytest.mark.parametrize(("arg", "bad"), [(a, b) for a, vals in SON_BAD.items()
                                          for b in sorted(vals)])
def test_sum_of_norms_bad_argument_is_refused_naming_it(arg, bad):
    args = _son_args()
    args[arg] = SON_BAD[arg][bad]
    blamed = "G" if (arg, bad) == ("group_size", "not_dividing") else arg
    with pytest.raises(InvalidInputError, match=rf"^{blamed}\b"):
        SumOfNorms(**args)


def test_sum_of_norms_leaves_caller_arrays_alone():
    args = _son_args()
    copies = {k: np.array(v) for k, v in args.items() if isinstance(v, np.ndarray)}
    Q_sparse = _non_canonical(args["Q"])
    problem = SumOfNorms(**{**args, "Q": Q_sparse})
    ssl_opt.solve(problem, solver="irls")
    for k, want in copies.items():
        if k != "Q":
            assert args[k].flags.writeable and np.array_equal(args[k], want)
    assert not Q_sparse.has_canonical_format


# ----------------------------------------------------------------------------- IRLS

def _ere():
    X, A, Y = _data()
    return ERE(X, A, Y, 1.0, 0.1)


def _bad_warm_starts():
    sol = ssl_opt.solve(_ere(), solver="irls")
    x = {k: sol.x[k] for k in ("F", "W", "b")}
    return {
        "nan_F": {**x, "F": np.full_like(x["F"], np.nan)},
        "inf_W": {**x, "W": np.full_like(x["W"], np.inf)},
        "wrong_shape_F": {**x, "F": np.zeros((2, 2))},
        "complex_b": {**x, "b": x["b"] + 0j},
        "string_W": {**x, "W": "abc"},
        "missing_b": {"F": x["F"], "W": x["W"]},
        "string": "abc",
        "list": [1.0, 2.0],
        "complex_delta": {**x, "delta": 1j},
        "nan_delta": {**x, "delta": np.nan},
        "negative_delta": {**x, "delta": -1.0},
        "vector_delta": {**x, "delta": np.ones(3)},
        "string_delta": {**x, "delta": "small"},
    }


WARM = _bad_warm_starts()


@pytest.mark.parametrize("case", sorted(WARM))
def test_bad_warm_start_is_refused(case):
    with pytest.raises(InvalidInputError, match="warm_start"):
        ssl_opt.solve(_ere(), solver="irls", warm_start=WARM[case])


@pytest.mark.parametrize("warm", [{"W": np.full((D, C), np.nan), "b": np.zeros(C)},
                                  {"W": np.zeros((D, C)), "b": np.zeros(C) + 1j},
                                  {"W": np.zeros((D + 1, C)), "b": np.zeros(C)}, "abc"],
                         ids=["nan_W", "complex_b", "wrong_shape_W", "string"])
def test_bad_warm_start_is_refused_for_lrl(warm):
    """LRL's closed form ignores a warm start, but a malformed one is still an error."""
    X, A, Y = _data()
    with pytest.raises(InvalidInputError, match="warm_start"):
        ssl_opt.solve(LRL(X, A, Y, 1.0, 0.1), solver="irls", warm_start=warm)


def test_valid_warm_start_still_accepted():
    X, A, Y = _data()
    lrl = LRL(X, A, Y, 1.0, 0.1)
    first = ssl_opt.solve(lrl, solver="irls")
    again = ssl_opt.solve(lrl, solver="irls", warm_start=first)
    np.testing.assert_array_equal(again.x["W"], first.x["W"])
    ere = _ere()
    first = ssl_opt.solve(ere, solver="irls")
    again = ssl_opt.solve(ere, solver="irls", warm_start=first)
    assert again.status == "optimal"
    np.testing.assert_allclose(again.x["W"], first.x["W"], atol=1e-6)


BAD_OPTIONS = {
    "tol": [-1.0, 0.0, np.nan, np.inf, "1e-9", None],
    "kkt_tol": [-1.0, 0.0, np.nan, np.inf, "x"],
    "gap_tol": [-1.0, 0.0, np.nan, np.inf, "x"],
    "max_iter": [-5, 0, 2.5, np.nan, np.inf, "10", None],
    "delta0": [-1.0, 0.0, np.nan, np.inf, "x"],
    "delta_min": [-1.0, 0.0, np.nan, np.inf, "x"],
    "delta_floor": [-1.0, 0.0, np.nan, np.inf, "x"],
    "delta_factor": [1.0, 0.5, -1.0, np.nan, np.inf, "x"],
    "extrapolate": [1, "yes", None],
    "continuation": [1, "yes", None],
    "stage_max_iter": [-1, 0, 2.5, np.nan, "x"],
    "anderson": [-1, 2.5, np.nan, "x", None],
    "stall_iter": [-1, 0, 2.5, np.nan, "x"],
    "linear_solver": ["nosuch", 1, None],
    "verbose": [1, "yes", None],
}


@pytest.mark.parametrize(("option", "value"),
                         [(o, v) for o, vals in BAD_OPTIONS.items() for v in vals])
def test_bad_option_is_refused_naming_it(option, value):
    with pytest.raises(InvalidInputError, match=option):
        ssl_opt.solve(_ere(), solver="irls", **{option: value})


@pytest.mark.parametrize("scale", [1e3, 1e6])
def test_irls_on_scaled_sum_of_norms_finds_the_same_minimizer(scale):
    """``s·φ`` has φ's minimizer: IRLS finds it alike at scales above 1."""
    args = _son_args()
    base = ssl_opt.solve(SumOfNorms(**args), solver="irls")
    scaled_args = {**args, "Q": args["Q"] * scale, "c": args["c"] * scale,
                   "weights": args["weights"] * scale}
    scaled = ssl_opt.solve(SumOfNorms(**scaled_args), solver="irls")
    assert scaled.status == base.status == "optimal"
    np.testing.assert_allclose(scaled.x["x"], base.x["x"], atol=1e-6)


@pytest.mark.parametrize("scale", [1e-6, 1e-12, 1e12])
def test_badly_scaled_sum_of_norms_warns_at_build(scale):
    """Below 1 the residuals' floor 1 makes the certificate absolute (IRLS stopped 1.6% from
    the minimizer at 1e-6 without this warning): say so when the problem is built."""
    args = _son_args()
    scaled_args = {**args, "Q": args["Q"] * scale, "c": args["c"] * scale,
                   "weights": args["weights"] * scale}
    with pytest.warns(BadScalingWarning, match="Multiply Q, c and weights"):
        SumOfNorms(**scaled_args)


@pytest.mark.parametrize("scale", [1e-6, 1e12])
def test_badly_scaled_ere_warns_at_build(scale):
    X, A, Y = _data()
    with pytest.warns(BadScalingWarning, match="Multiply A, alpha and beta"):
        ERE(X, A * scale, Y, 1.0 * scale, 0.1 * scale)


def test_ordinary_scale_does_not_warn():
    X, A, Y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("error", BadScalingWarning)
        ERE(X, A, Y, 1.0, 0.1)
        SumOfNorms(**_son_args())


def test_large_indefinite_Q_is_refused_by_lanczos():
    """Above the dense-check size a short Lanczos run finds the negative eigenvalue (−1 of the
    block [[1, 2], [2, 1]]; the diagonal alone is positive)."""
    from ssl_opt._validation import PSD_DENSE_MAX_N

    n = PSD_DENSE_MAX_N + 100
    Q = sp.identity(n, format="lil")
    Q[0, 1] = Q[1, 0] = 2.0
    with pytest.raises(InvalidInputError, match="Q is not positive semidefinite"):
        SumOfNorms(Q.tocsr(), np.zeros(n), sp.identity(n), np.zeros(n), 1)
    SumOfNorms(sp.identity(n), np.zeros(n), sp.identity(n), np.zeros(n), 1)  # PSD: accepted
