"""Bad input to LASS and the solvers that solve it (issue 14): every malformed argument is an
``InvalidInputError`` (or TypeError) naming the argument, the caller's arrays are never changed,
negative edge weights are refused, and badly scaled data get a ``BadScalingWarning``.

Independent checks: the caller's arrays are compared with copies taken before the call; the
invariance of the solution under a rescaling of (G, λ) is a property of the model
(``λ tr(ZᵀLZ) − tr(GᵀZ)`` scaled by s has the same minimizer).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import ssl_opt
from ssl_opt.builders import knn_graph
from ssl_opt.exceptions import BadScalingWarning, InvalidInputError
from ssl_opt.problems import LASS

N, K = 24, 3


def _data():
    rng = np.random.default_rng(3)
    W = knn_graph(rng.standard_normal((N, 2)), 5).toarray()
    G = rng.standard_normal((N, K))
    return W, G


def _args():
    W, G = _data()
    return {"W": W, "G": G, "lam": 0.5}


def _non_canonical(W: np.ndarray) -> sp.csr_matrix:
    """``W`` as a CSR matrix with every entry split in two duplicates, indices unsorted."""
    S = sp.csr_matrix(W)
    counts = np.diff(S.indptr)
    data = np.repeat(S.data / 2.0, 2)
    indices = np.repeat(S.indices, 2)
    for r in range(S.shape[0]):  # reverse each row: unsorted indices
        lo, hi = 2 * S.indptr[r], 2 * S.indptr[r + 1]
        data[lo:hi], indices[lo:hi] = data[lo:hi][::-1], indices[lo:hi][::-1]
    out = sp.csr_matrix((data, indices, np.concatenate([[0], np.cumsum(2 * counts)])),
                        shape=S.shape)
    assert not out.has_canonical_format
    return out


BAD_ARRAYS = {
    "complex": lambda a: np.asarray(a) + 1j,
    "nan": lambda a: np.where(np.eye(*np.shape(a)) > 0, np.nan, a),
    "inf": lambda a: np.where(np.eye(*np.shape(a)) > 0, np.inf, a),
    "empty": lambda a: np.zeros((0, 0)),
    "wrong_shape": lambda a: np.asarray(a)[:-1],
    "string": lambda a: "abc",
    "none": lambda a: None,
    "vector": lambda a: np.ones(3),
}


@pytest.mark.parametrize("bad", sorted(BAD_ARRAYS))
@pytest.mark.parametrize("arg", ["W", "G"])
def test_bad_array_is_refused_naming_it(arg, bad):
    args = _args()
    args[arg] = BAD_ARRAYS[bad](args[arg])
    with pytest.raises(InvalidInputError, match=rf"^{arg}\b"):  # blames arg first
        LASS(**args)


@pytest.mark.parametrize("value", [0.0, -1.0, np.nan, np.inf, 1j, "1", None, [1.0]])
def test_bad_lam_is_refused(value):
    with pytest.raises(InvalidInputError, match="lam"):
        LASS(**{**_args(), "lam": value})


def test_negative_edge_weights_are_refused():
    W, G = _data()
    W[0, 1] = W[1, 0] = -0.5
    with pytest.raises(InvalidInputError, match="W must be non-negative"):
        LASS(W, G, 1.0)


def test_complex_sparse_W_is_refused():
    W, G = _data()
    with pytest.raises(InvalidInputError, match="W has a complex dtype"):
        LASS(sp.csr_matrix(W, dtype=complex), G, 1.0)


@pytest.mark.parametrize("sparse_W", [False, True])
def test_caller_arrays_unchanged_and_writeable(sparse_W):
    W, G = _data()
    W_in = _non_canonical(W) if sparse_W else W.copy()
    before = (W_in.data.copy(), W_in.indices.copy(), W_in.indptr.copy()) if sparse_W else W.copy()
    G_in = G.copy()
    problem = LASS(W_in, G_in, 0.5)
    ssl_opt.solve(problem)
    assert G_in.flags.writeable and np.array_equal(G_in, G)
    if sparse_W:
        assert not W_in.has_canonical_format
        for got, want in zip((W_in.data, W_in.indices, W_in.indptr), before, strict=True):
            assert got.flags.writeable and np.array_equal(got, want)
    else:
        assert W_in.flags.writeable and np.array_equal(W_in, before)
    G_in[0, 0] += 1.0  # the problem holds its own copy
    assert problem.G[0, 0] == G[0, 0]


def test_out_of_sample_bad_input_names_the_argument():
    W, G = _data()
    problem = LASS(W, G, 0.5)
    Z = ssl_opt.solve(problem).x["Z"]
    W_new, G_new = W[:2], G[:2]
    cases = {"Z": (Z + 0j, W_new, G_new), "W_new": (Z, W_new + 0j, G_new),
             "G_new": (Z, W_new, G_new + 0j)}
    for name, args in cases.items():
        with pytest.raises(InvalidInputError, match=name):
            problem.out_of_sample(*args)
    with pytest.raises(InvalidInputError, match="W_new must be non-negative"):
        problem.out_of_sample(Z, -W_new, G_new)
    with pytest.raises(InvalidInputError, match="Z must have shape"):
        problem.out_of_sample(Z[:3], W_new, G_new)
    bad = Z.copy()
    bad[0, 0] = np.nan
    kept = bad.copy()
    for method, args in ((problem.out_of_sample, (bad, W_new, G_new)),
                         (problem.multipliers, (bad,))):
        with pytest.raises(InvalidInputError, match="Z contains NaN"):
            method(*args)
    np.testing.assert_array_equal(bad, kept)  # the caller's array untouched


# ----------------------------------------------------------------------------- warm starts

def _problem():
    return LASS(**_args())


#: The solvers ``solve`` picks for LASS (generic solvers of models: LASS is a named model).
SOLVERS = ("fista", "admm-split")

WARM_STARTS = {
    "nan_Z": lambda: {"Z": np.full((N, K), np.nan)},
    "inf_Z": lambda: {"Z": np.full((N, K), np.inf)},
    "wrong_shape_Z": lambda: {"Z": np.zeros((K, K))},
    "complex_Z": lambda: {"Z": np.zeros((N, K)) + 0j},
    "string_Z": lambda: {"Z": "abc"},
    "missing_Z": lambda: {"Psi": np.zeros((N, K))},
    "string": lambda: "abc",
    "list": lambda: [1.0, 2.0],
    "array": lambda: np.zeros((N, K)),
}


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("case", sorted(WARM_STARTS))
def test_bad_warm_start_is_refused(case, solver):
    with pytest.raises(InvalidInputError, match="warm_start"):
        ssl_opt.solve(_problem(), solver=solver, warm_start=WARM_STARTS[case]())


@pytest.mark.parametrize("solver", SOLVERS)
def test_valid_warm_start_still_accepted(solver):
    problem = _problem()
    sol = ssl_opt.solve(problem, solver=solver)
    again = ssl_opt.solve(problem, solver=solver, warm_start=sol)
    assert again.status == "optimal"
    assert again.iterations <= sol.iterations
    np.testing.assert_allclose(again.x["Z"], sol.x["Z"], atol=1e-6)


# ----------------------------------------------------------------------------- options

BAD_OPTIONS = {
    "admm-split": {
        "rho": [-1.0, 0.0, np.nan, np.inf, "1", 1j],
        "adaptive_rho": [1, "yes", None],
        "relaxation": [0.0, 2.0, -1.0, np.nan, np.inf, "1"],
        "anderson": [-1, 2.5, np.nan, "3", None],
        "tol": [-1.0, 0.0, np.nan, np.inf, "1e-9", None],
        "max_iter": [-5, 0, 2.5, np.nan, np.inf, "10", None],
        "verbose": [1, "yes", None],
    },
    "fista": {
        "restart": ["nosuch", 1, None],
        "check_every": [0, -1, 2.5, "10", None],
        "tol": [-1.0, 0.0, np.nan, "1e-9"],
        "time_limit": [-1.0, 0.0, np.nan, "1"],
    },
}


@pytest.mark.parametrize(("solver", "option", "value"),
                         [(s, o, v) for s, opts in BAD_OPTIONS.items()
                          for o, vals in opts.items() for v in vals])
def test_bad_option_is_refused_naming_it(solver, option, value):
    with pytest.raises(InvalidInputError, match=option):
        ssl_opt.solve(_problem(), solver=solver, **{option: value})


# ----------------------------------------------------------------------------- scale

@pytest.mark.parametrize("scale", [1e12, 1e-12])
def test_badly_scaled_data_warn_at_build(scale):
    W, G = _data()
    with pytest.warns(BadScalingWarning, match="Rescale G and lam"):
        LASS(W, G * scale, 0.5 * scale)


def test_ordinary_scale_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", BadScalingWarning)
        LASS(**_args())


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("scale", [1e3, 1e-3])
def test_rescaled_problem_has_the_same_solution(scale, solver):
    """``(sG, sλ)`` has the minimizer of ``(G, λ)``: the solver certifies both alike."""
    W, G = _data()
    base = ssl_opt.solve(LASS(W, G, 0.5), solver=solver, tol=1e-10)
    scaled_problem = LASS(W, G * scale, 0.5 * scale)
    scaled = ssl_opt.solve(scaled_problem, solver=solver, tol=1e-10)
    assert scaled.status == "optimal"
    np.testing.assert_allclose(scaled.x["Z"], base.x["Z"], atol=1e-6)
    assert max(scaled_problem.kkt(scaled).values()) < 1e-6
