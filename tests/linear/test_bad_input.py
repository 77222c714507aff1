"""Issue 14: every argument of the linear family (LinearSVM, TSVM, DAS3VM and the mfn, tsvm and
da solvers) refuses bad input with an InvalidInputError naming it, and never changes the
caller's arrays."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import ssl_opt
from ssl_opt.problems.linear.problem import DAS3VM, TSVM, LinearSVM

N, D, L_ROWS = 12, 3, 4


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    return rng.standard_normal((N, D)), np.array([1.0, -1.0, 1.0, -1.0])


def _build(cls, X, y, cost=None):
    if cls is LinearSVM:
        return LinearSVM(X[: y.size] if X.ndim == 2 and X.shape[0] else X, y, 1.0, cost=cost)
    return cls(X, y, 1.0, 1.0)


BAD_VALUES = {
    "complex": (lambda a: np.asarray(a).astype(complex), "complex"),
    "nan": (lambda a: np.full(np.shape(a), np.nan), "NaN"),
    "string": (lambda a: np.full(np.shape(a), "x"), "numeric|weights"),
}


@pytest.mark.parametrize("cls", [LinearSVM, TSVM, DAS3VM])
@pytest.mark.parametrize("arg", ["X", "y"])
@pytest.mark.parametrize("bad", sorted(BAD_VALUES))
def test_array_arguments_refuse_bad_values_by_name(data, cls, arg, bad):
    X, y = data
    make, word = BAD_VALUES[bad]
    args = {"X": X, "y": y, arg: make({"X": X, "y": y}[arg])}
    with pytest.raises(ssl_opt.InvalidInputError, match=rf"^{arg} ") as info:
        _build(cls, args["X"], args["y"])
    if bad == "complex":
        assert "complex" in str(info.value)


@pytest.mark.parametrize("bad, match", [
    (lambda c: c.astype(complex), "^cost has a complex dtype"),
    (lambda c: np.full(c.shape, "x"), "^cost must be a vector of weights"),
    (lambda c: np.full(c.shape, np.nan), "^cost must hold finite"),
    (lambda c: -c, "^cost must hold finite non-negative"),
    (lambda c: c[:2], r"^cost must have shape \(4,\)"),
])
def test_cost_refuses_bad_values_by_name(data, bad, match):
    X, y = data
    with pytest.raises(ssl_opt.InvalidInputError, match=match):
        LinearSVM(X[:4], y, 1.0, cost=bad(np.ones(4)))


@pytest.mark.parametrize("cls", [LinearSVM, TSVM, DAS3VM])
@pytest.mark.parametrize("shape", [(0, D), (N, 0)])
def test_empty_X_is_blamed_on_X(data, cls, shape):
    _, y = data
    with pytest.raises(ssl_opt.InvalidInputError, match="^X is empty"):
        _build(cls, np.zeros(shape), y)


def _non_canonical_csr(M):
    csr = sp.csr_matrix(M)
    data, indices, indptr = [], [], [0]
    for i in range(csr.shape[0]):
        cols = csr.indices[csr.indptr[i]:csr.indptr[i + 1]][::-1]
        vals = csr.data[csr.indptr[i]:csr.indptr[i + 1]][::-1] / 2
        indices.extend(np.r_[cols, cols])
        data.extend(np.r_[vals, vals])
        indptr.append(len(indices))
    return sp.csr_matrix((np.array(data), np.array(indices), np.array(indptr)), shape=M.shape)


@pytest.mark.parametrize("cls", [LinearSVM, TSVM, DAS3VM])
def test_caller_arrays_stay_writeable_and_unchanged(data, cls):
    X, y = data
    cost = np.linspace(0.5, 2.0, 4)
    before = (X.copy(), y.copy(), cost.copy())
    if cls is LinearSVM:
        LinearSVM(X[:4], y, 1.0, cost=cost)
    else:
        cls(X, y, 1.0, 1.0)
    for arr, old in zip((X, y, cost), before, strict=True):
        assert arr.flags.writeable
        np.testing.assert_array_equal(arr, old)


@pytest.mark.parametrize("cls", [LinearSVM, TSVM, DAS3VM])
def test_non_canonical_sparse_X_is_not_canonicalized_in_place(data, cls):
    X, y = data
    raw = _non_canonical_csr(X if cls is not LinearSVM else X[:4])
    assert not raw.has_canonical_format
    before = (raw.data.copy(), raw.indices.copy(), raw.indptr.copy())
    p = _build(cls, raw, y)
    for arr, old in zip((raw.data, raw.indices, raw.indptr), before, strict=True):
        np.testing.assert_array_equal(arr, old)
        assert arr.flags.writeable
    dense = X if cls is not LinearSVM else X[:4]
    np.testing.assert_allclose(p.design.X.toarray(), dense, rtol=1e-15, atol=1e-15)


def _warm_starts(dim, u, n_pos):
    labels = np.r_[np.ones(n_pos), -np.ones(u - n_pos)]
    return [
        ("nan", {"w": np.full(dim, np.nan), "y_u": labels}, r"warm_start\['w'\].*NaN"),
        ("shape", {"w": np.zeros(dim - 1), "y_u": labels}, r"warm_start\['w'\].*shape"),
        ("type", "zeros", "^warm_start must be a dict"),
        ("complex", {"w": np.zeros(dim, complex), "y_u": labels},
         r"warm_start\['w'\] has a complex dtype"),
        ("string", {"w": ["a"] * dim, "y_u": labels}, r"warm_start\['w'\] must be numeric"),
    ]


@pytest.mark.parametrize("case", range(5))
def test_mfn_bad_warm_start_is_refused_by_name(data, case):
    X, y = data
    p = LinearSVM(X[:4], y, 1.0)
    label, ws, match = _warm_starts(p.design.dim, 1, 0)[case]
    if isinstance(ws, dict):
        ws = {"w": ws["w"]}
    with pytest.raises(ssl_opt.InvalidInputError, match=match):
        ssl_opt.solve(p, solver="mfn", warm_start=ws)


@pytest.mark.parametrize("case", range(5))
def test_tsvm_bad_warm_start_is_refused_by_name(data, case):
    X, y = data
    p = TSVM(X, y, 1.0, 1.0)
    label, ws, match = _warm_starts(p.design.dim, p.u, p.n_pos)[case]
    with pytest.raises(ssl_opt.InvalidInputError, match=match):
        ssl_opt.solve(p, solver="tsvm", warm_start=ws)


def test_tsvm_warm_start_with_nan_labels_is_refused(data):
    X, y = data
    p = TSVM(X, y, 1.0, 1.0)
    ws = {"w": np.zeros(p.design.dim), "y_u": np.full(p.u, np.nan)}
    with pytest.raises(ssl_opt.InvalidInputError, match=r"warm_start\['y_u'\]"):
        ssl_opt.solve(p, solver="tsvm", warm_start=ws)


BAD_OPTIONS = [({"tol": -1}, "tol"), ({"tol": float("nan")}, "tol"), ({"tol": "1e-6"}, "tol")]


@pytest.mark.parametrize("options, name", BAD_OPTIONS + [
    ({"max_iter": -5}, "max_iter"), ({"max_iter": 2.5}, "max_iter"),
    ({"max_iter": "9"}, "max_iter"),
])
def test_mfn_bad_options_are_refused_by_name(data, options, name):
    X, y = data
    with pytest.raises(ssl_opt.InvalidInputError, match=f"^{name} must"):
        ssl_opt.solve(LinearSVM(X[:4], y, 1.0), solver="mfn", **options)


@pytest.mark.parametrize("options, name", BAD_OPTIONS + [
    ({"mfn_max_iter": -5}, "mfn_max_iter"), ({"mfn_max_iter": 2.5}, "mfn_max_iter"),
    ({"max_retrain": -5}, "max_retrain"), ({"forcing": -0.1}, "forcing"),
])
def test_tsvm_bad_options_are_refused_by_name(data, options, name):
    X, y = data
    with pytest.raises(ssl_opt.InvalidInputError, match=f"^{name} must"):
        ssl_opt.solve(TSVM(X, y, 1.0, 1.0), solver="tsvm", **options)


@pytest.mark.parametrize("options, name", BAD_OPTIONS + [
    ({"max_outer": -5}, "max_outer"), ({"max_outer": 2.5}, "max_outer"),
    ({"max_inner": 0}, "max_inner"), ({"kl_tol": -1}, "kl_tol"),
    ({"kl_tol": float("nan")}, "kl_tol"), ({"entropy_tol": "small"}, "entropy_tol"),
    ({"polish_tol": -1e-3}, "polish_tol"), ({"anneal_rate": 1.0}, "anneal_rate"),
    ({"T0_factor": 0}, "T0_factor"), ({"mfn_max_iter": -5}, "mfn_max_iter"),
])
def test_da_bad_options_are_refused_by_name(data, options, name):
    X, y = data
    with pytest.raises(ssl_opt.InvalidInputError, match=f"^{name} must"):
        ssl_opt.solve(DAS3VM(X, y, 1.0, 1.0), solver="da", **options)
