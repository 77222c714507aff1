"""Bad input to NPKL and its BCD plugin (issue 14): every malformed argument is an
``InvalidInputError`` naming the argument, the caller's arrays are never changed (nor a
non-canonical sparse matrix canonicalized in place), a negative S or an indefinite Δ is refused.

Independent checks: the caller's arrays are compared with copies taken before the call; Δ is
built from the *normalized* Laplacian of S, so S and s·S define the same problem (checked on
BCD's solution).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import ssl_opt
from ssl_opt.builders import knn_graph
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.problems import NPKL
from ssl_opt.problems.npkl.evaluation import (
    evaluate_kernel,
    kernel_factor,
    kernel_kmeans,
    nmi,
    pair_accuracy,
)

N = 16
PAIRS = np.array([[0, 1], [2, 3], [4, 5], [1, 6]])
LABELS = np.array([1.0, -1.0, 1.0, -1.0])


def _S() -> np.ndarray:
    return knn_graph(np.random.default_rng(5).standard_normal((N, 2)), 4).toarray()


def _args():
    return {"S": _S(), "pairs": PAIRS.copy(), "labels": LABELS.copy(), "C": 1.0}


def _non_canonical(W: np.ndarray) -> sp.csr_matrix:
    """``W`` as CSR with every entry split in two duplicates (not canonical)."""
    S = sp.csr_matrix(W)
    out = sp.csr_matrix((np.repeat(S.data / 2.0, 2), np.repeat(S.indices, 2), 2 * S.indptr),
                        shape=S.shape)
    assert not out.has_canonical_format
    return out


BAD_VALUES = {
    "S": {"complex": _S() + 0j, "nan": np.where(np.eye(N) > 0, np.nan, _S()),
          "inf": np.where(np.eye(N) > 0, np.inf, _S()), "empty": np.zeros((0, 0)),
          "not_square": _S()[:-1], "string": "abc", "none": None, "negative": -_S(),
          "asymmetric": np.triu(_S()), "vector": np.ones(N)},
    "pairs": {"complex": PAIRS + 0j, "nan": np.where(PAIRS == 0, np.nan, PAIRS),
              "inf": np.where(PAIRS == 0, np.inf, PAIRS), "empty": np.zeros((0, 2)),
              "wrong_shape": PAIRS[:, :1], "string": "abc", "none": None,
              "out_of_range": PAIRS + N, "negative": -PAIRS - 1, "fractional": PAIRS + 0.5,
              "self_pair": np.array([[0, 0], [2, 3], [4, 5], [1, 6]]),
              "duplicate": np.array([[0, 1], [1, 0], [4, 5], [1, 6]])},
    "labels": {"complex": LABELS + 0j, "nan": np.where(LABELS > 0, np.nan, LABELS),
               "inf": np.where(LABELS > 0, np.inf, LABELS), "empty": np.zeros(0),
               "wrong_shape": LABELS[:-1], "string": "abc", "none": None,
               "not_pm1": LABELS * 2},
    "C": {"zero": 0.0, "negative": -1.0, "nan": np.nan, "inf": np.inf, "complex": 1j,
          "string": "1", "none": None},
}


@pytest.mark.parametrize(("arg", "bad"), [(a, b) for a, vals in BAD_VALUES.items()
                                          for b in sorted(vals)])
def test_bad_argument_is_refused_naming_it(arg, bad):
    args = _args()
    args[arg] = BAD_VALUES[arg][bad]
    with pytest.raises(InvalidInputError, match=rf"^{arg}\b"):  # blames arg first
        NPKL(**args)


@pytest.mark.parametrize("value", [0.0, -1.0, np.nan, np.inf, 1j, "1"])
def test_bad_delta_is_refused(value):
    with pytest.raises(InvalidInputError, match="delta"):
        NPKL(**_args(), delta=value)


@pytest.mark.parametrize(("bad", "Delta"), [
    ("complex", np.eye(N) + 0j), ("nan", np.where(np.eye(N) > 0, np.nan, 0.0)),
    ("empty", np.zeros((0, 0))), ("not_square", np.eye(N)[:-1]),
    ("indefinite", np.eye(N) - 2.0 * np.diag(np.arange(N) % 2)),
    ("singular", np.diag(np.arange(N, dtype=float))), ("string", "abc"),
    ("asymmetric", np.eye(N) + np.triu(np.ones((N, N)), 1))])
def test_from_regularizer_refuses_bad_Delta(bad, Delta):
    with pytest.raises(InvalidInputError, match="Delta"):
        NPKL.from_regularizer(Delta, PAIRS, LABELS, 1.0)


@pytest.mark.parametrize("sparse_S", [False, True])
def test_caller_arrays_unchanged_and_writeable(sparse_S):
    S = _S()
    S_in = _non_canonical(S) if sparse_S else S.copy()
    pairs, labels = PAIRS.copy(), LABELS.copy()
    problem = NPKL(S_in, pairs, labels, 1.0)
    ssl_opt.solve(problem, solver="bcd")
    for arr, want in ((pairs, PAIRS), (labels, LABELS)):
        assert arr.flags.writeable and np.array_equal(arr, want)
    if sparse_S:
        assert not S_in.has_canonical_format and S_in.data.flags.writeable
        np.testing.assert_array_equal(S_in.toarray(), S)
    else:
        assert S_in.flags.writeable and np.array_equal(S_in, S)
    labels[0] = -labels[0]  # the problem holds its own copy
    assert problem.labels[0] == LABELS[0]


def test_from_regularizer_leaves_caller_arrays_alone():
    Delta = np.eye(N) * 2.0
    D_sparse = _non_canonical(Delta)
    pairs, labels = PAIRS.copy(), LABELS.copy()
    for D in (Delta, D_sparse):
        NPKL.from_regularizer(D, pairs, labels, 1.0)
    assert Delta.flags.writeable and np.array_equal(Delta, np.eye(N) * 2.0)
    assert not D_sparse.has_canonical_format
    assert labels.flags.writeable and pairs.flags.writeable


# ----------------------------------------------------------------------------- warm starts

def _problem():
    return NPKL(**_args())


def _V_shape():
    sol = ssl_opt.solve(_problem(), solver="bcd")
    return sol.x["V"].shape


WARM_STARTS = {
    "nan": lambda r, l: np.full((r, l), np.nan),
    "inf": lambda r, l: np.full((r, l), np.inf),
    "wrong_columns": lambda r, l: np.zeros((r, l + 1)),
    "vector": lambda r, l: np.zeros(l),
    "complex": lambda r, l: np.zeros((r, l)) + 0j,
    "string": lambda r, l: "abc",
    "dict_without_V": lambda r, l: {"Z": np.zeros((N, N))},
    "dict_complex_V": lambda r, l: {"V": np.zeros((r, l)) + 1j},
    "object": lambda r, l: object(),
}


@pytest.mark.parametrize("case", sorted(WARM_STARTS))
def test_bad_warm_start_is_refused(case):
    r, l = _V_shape()
    with pytest.raises(InvalidInputError, match="warm_start"):
        ssl_opt.solve(_problem(), solver="bcd", warm_start=WARM_STARTS[case](r, l))


def test_valid_warm_start_still_accepted():
    problem = _problem()
    sol = ssl_opt.solve(problem, solver="bcd")
    again = ssl_opt.solve(problem, solver="bcd", warm_start=sol)
    assert again.status == "optimal"
    np.testing.assert_allclose(again.x["Z"], sol.x["Z"], atol=1e-4)


# ----------------------------------------------------------------------------- options

BAD_OPTIONS = {
    "rank": [0, -1, 2.5, np.nan, "2"],
    "tol": [-1.0, np.nan, np.inf, "1e-6", None],
    "max_iter": [-5, 0, 2.5, np.nan, np.inf, "10", None],
    "seed": [-1, 2.5, np.nan, "0", None],
    "anderson": [-1, 2.5, np.nan, "5", None],
    "verbose": [1, "yes", None],
}


@pytest.mark.parametrize(("option", "value"),
                         [(o, v) for o, vals in BAD_OPTIONS.items() for v in vals])
def test_bad_option_is_refused_naming_it(option, value):
    with pytest.raises(InvalidInputError, match=option):
        ssl_opt.solve(_problem(), solver="bcd", **{option: value})


# ----------------------------------------------------------------------------- scale

@pytest.mark.parametrize("scale", [1e12, 1e-12])
def test_scaled_S_defines_the_same_problem(scale):
    """Δ uses the normalized Laplacian of S: BCD on s·S returns the kernel of S."""
    args = _args()
    base = ssl_opt.solve(NPKL(**args), solver="bcd")
    scaled = ssl_opt.solve(NPKL(**{**args, "S": args["S"] * scale}), solver="bcd")
    assert scaled.status == base.status == "optimal"
    np.testing.assert_allclose(scaled.x["Z"], base.x["Z"], atol=1e-8)


# ----------------------------------------------------------------------------- evaluation

def _kernel():
    Phi = np.random.default_rng(1).standard_normal((8, 3))
    return Phi @ Phi.T, Phi


Y8 = np.array([0, 0, 1, 1, 0, 1, 0, 1])


@pytest.mark.parametrize(("call", "name"), [
    (lambda K, Phi: evaluate_kernel(K + 0j, y=Y8), "K"),
    (lambda K, Phi: evaluate_kernel(K[:-1], y=Y8), "K"),
    (lambda K, Phi: evaluate_kernel(np.where(K > 1, np.nan, K), y=Y8), "K"),
    (lambda K, Phi: evaluate_kernel(factor=Phi + 0j, y=Y8), "factor"),
    (lambda K, Phi: evaluate_kernel(factor=np.zeros((0, 3)), y=np.zeros(0)), "factor"),
    (lambda K, Phi: evaluate_kernel(K, y=Y8 + 0j), "y"),
    (lambda K, Phi: evaluate_kernel(K, y=np.where(Y8 > 0, np.nan, 0.0)), "y"),
    (lambda K, Phi: evaluate_kernel(K, y=Y8[:-1]), "y"),
    (lambda K, Phi: evaluate_kernel(K, y=Y8.reshape(2, 4)), "y"),
    (lambda K, Phi: evaluate_kernel(K, y=Y8, n_init=0), "n_init"),
    (lambda K, Phi: evaluate_kernel(K, y=Y8, seed=-1), "seed"),
    (lambda K, Phi: kernel_kmeans(K, n_clusters=0), "n_clusters"),
    (lambda K, Phi: kernel_kmeans(K, n_clusters=2.5), "n_clusters"),
    (lambda K, Phi: kernel_kmeans(K, n_clusters=2, max_iter=-1), "max_iter"),
    (lambda K, Phi: kernel_factor(K, rtol=-1.0), "rtol"),
    (lambda K, Phi: pair_accuracy(Y8 + 0j, Y8), "y_true"),
    (lambda K, Phi: pair_accuracy(Y8, np.where(Y8 > 0, np.nan, 0.0)), "y_pred"),
    (lambda K, Phi: nmi(Y8, Y8[:-1]), "y_pred"),
    (lambda K, Phi: nmi(Y8, Y8, average_method="nosuch"), "average_method"),
])
def test_evaluation_bad_argument_names_it(call, name):
    K, Phi = _kernel()
    with pytest.raises(InvalidInputError, match=rf"\b{name}\b"):
        call(K, Phi)


def test_evaluation_leaves_caller_arrays_alone():
    K, Phi = _kernel()
    K0, y0 = K.copy(), Y8.copy()
    evaluate_kernel(K, y=Y8)
    assert K.flags.writeable and np.array_equal(K, K0)
    assert Y8.flags.writeable and np.array_equal(Y8, y0)
