"""Bad input at the family-independent public boundary: solve/select arguments, candidate
points given to objective/kkt/certify, and the shared checks every family builds on."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import ssl_opt
from ssl_opt import registry
from ssl_opt._validation import as_float_matrix, check_binary_labels, check_psd
from ssl_opt.exceptions import InvalidInputError


def _examples():
    return sorted(registry.examples(), key=lambda e: e.name)


@pytest.fixture(scope="module")
def moons():
    return {e.name: e for e in _examples()}["lapsvm-moons"].build()


@pytest.mark.parametrize("kwargs,match", [
    ({"backend": "nope"}, "backend"),
    ({"backend": 1}, "backend"),
    ({"time_budget": -1}, "time_budget"),
    ({"time_budget": float("nan")}, "time_budget"),
    ({"time_budget": "x"}, "time_budget"),
    ({"memory_budget": 0}, "memory_budget"),
    ({"backend": "reference", "solver": "newton"}, "reference"),
])
def test_solve_and_select_name_the_bad_argument(moons, kwargs, match):
    with pytest.raises(InvalidInputError, match=match):
        ssl_opt.solve(moons, **kwargs)
    if "solver" not in kwargs:
        with pytest.raises(InvalidInputError, match=match):
            ssl_opt.select(moons, **kwargs)


@pytest.mark.parametrize("problem", ["a string", None, np.eye(3)])
def test_solve_refuses_what_is_not_a_problem(problem):
    with pytest.raises(InvalidInputError, match="problem"):
        ssl_opt.solve(problem)


@pytest.mark.parametrize("example", _examples(), ids=lambda e: e.name)
def test_candidate_points_must_be_real_numbers(example):
    problem = example.build()
    name, shape = next(iter(problem.variables.items()))
    point = {k: np.zeros(s) for k, s in problem.variables.items()}
    for bad, match in ((np.zeros(shape) + 1j, "complex"), (np.full(shape, "a"), "numeric"),
                       (np.zeros(shape + (2,)), "shape")):
        x = dict(point, **{name: bad})
        for call in (problem.objective, problem.kkt, lambda v: ssl_opt.certify(problem, v)):
            with pytest.raises(InvalidInputError, match=match):
                call(x)


def test_shared_conversions_never_alias_or_change_the_callers_array():
    dense = np.arange(9.0).reshape(3, 3)
    out = as_float_matrix(dense, "W")
    assert not np.shares_memory(out, dense)
    out[0, 0] = 99.0
    assert dense[0, 0] == 0.0 and dense.flags.writeable
    # a non-canonical CSR matrix (duplicate entries, unsorted indices) stays as given
    W = sp.csr_matrix((np.array([1.0, 2.0, 3.0]), np.array([2, 0, 0]), np.array([0, 3, 3, 3])),
                      shape=(3, 3))
    before = (W.data.copy(), W.indices.copy(), W.indptr.copy())
    out = as_float_matrix(W, "W")
    out.sum_duplicates()
    out.sort_indices()
    for a, b in zip(before, (W.data, W.indices, W.indptr), strict=True):
        np.testing.assert_array_equal(a, b)
    y = np.array([1.0, -1.0])
    assert not np.shares_memory(check_binary_labels(y), y)


@pytest.mark.parametrize("value", [np.eye(2) * (1 + 1j), sp.csr_matrix(np.eye(2) * 1j)])
def test_complex_matrices_are_refused_not_truncated(value):
    with pytest.raises(InvalidInputError, match="complex"):
        as_float_matrix(value, "K")
    with pytest.raises(InvalidInputError, match="complex"):
        check_binary_labels(np.array([1, -1]) + 0j)


@pytest.mark.parametrize("n", [50, 900])  # LAPACK below 500, Lanczos above
def test_check_psd_agrees_with_a_dense_eigenvalue_solve(n):
    rng = np.random.default_rng(n)
    A = rng.standard_normal((n, 8))
    K = A @ A.T  # PSD, rank 8
    check_psd(K, "K")
    check_psd(sp.csr_matrix(K), "K")
    shift = 0.1 * np.linalg.eigvalsh(K)[-1]
    with pytest.raises(InvalidInputError, match="K is not positive semidefinite"):
        check_psd(K - shift * np.eye(n), "K")


def test_every_package_error_is_a_value_error():
    from ssl_opt import exceptions

    for name in ("InvalidInputError", "UnsupportedProblemError", "SolverNotFoundError",
                 "InsufficientMemoryError"):
        assert issubclass(getattr(exceptions, name), ValueError), name
    with pytest.raises(ValueError, match="no solver named"):
        ssl_opt.solve(ssl_opt.problems.LapRLS(np.eye(2), np.zeros((2, 2)), [1.0, -1.0], 1.0, 1.0),
                      solver="nosuch")
