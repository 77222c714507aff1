"""docs/design.md §5: every public entry point rejects bad input with a ValueError naming it."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from ssl_opt.problems import LapRLS, LapSVM


@pytest.fixture
def parts(problem_factory):
    p = problem_factory("blobs", n=20, n_labeled=4)
    return np.array(p.K), sp.csr_matrix(p.L).toarray(), np.array(p.y)


def test_valid_input_builds(parts):
    K, L, y = parts
    assert LapSVM(K, L, y, 1.0, 1.0).n == 20
    assert LapRLS(K, sp.csr_matrix(L), y, 1.0, 1.0, bias=False).l == 4


@pytest.mark.parametrize(
    "mutate, match",
    [
        (lambda K, L, y: (np.where(np.eye(20, dtype=bool), np.nan, K), L, y), "K contains NaN"),
        (lambda K, L, y: (K, np.where(np.eye(20, dtype=bool), np.inf, L), y), "L contains NaN"),
        (lambda K, L, y: (K[:, :19], L, y), "K must be square"),
        (lambda K, L, y: (K, L[:19, :19], y), "L must be 20x20"),
        (lambda K, L, y: (K + np.triu(np.ones((20, 20)), 1), L, y), "K must be symmetric"),
        (lambda K, L, y: (K, L + np.triu(np.ones((20, 20)), 1), y), "L must be symmetric"),
        (lambda K, L, y: (K, L, np.array([1, 0, -1, 1])), "y must hold only -1 and \\+1"),
        (lambda K, L, y: (K, L, np.array([])), "at least one labeled point"),
        (lambda K, L, y: (K, L, np.ones(4)), "one class only"),
        (lambda K, L, y: (K, L, np.r_[y, y, y, y, y, y]), "only 20 points"),
        (lambda K, L, y: (K, L, np.array([1.0, np.nan])), "y contains NaN"),
        (lambda K, L, y: (K, L, y.reshape(2, 2)), "y must be 1-D"),
    ],
)
def test_bad_data(parts, mutate, match):
    K, L, y = mutate(*parts)
    with pytest.raises(ValueError, match=match):
        LapSVM(K, L, y, 1.0, 1.0)


@pytest.mark.parametrize("name, value", [("gamma_A", 0.0), ("gamma_A", -1.0),
                                         ("gamma_I", 0), ("gamma_I", np.nan),
                                         ("gamma_A", "1"), ("gamma_I", True)])
def test_bad_regularization(parts, name, value):
    K, L, y = parts
    kwargs = {"gamma_A": 1.0, "gamma_I": 1.0, name: value}
    with pytest.raises(ValueError, match=name):
        LapSVM(K, L, y, **kwargs)


def test_bad_loss_and_bias(parts):
    K, L, y = parts
    with pytest.raises(ValueError, match="loss must be one of"):
        LapSVM(K, L, y, 1.0, 1.0, loss="cubic")
    with pytest.raises(ValueError, match="bias"):
        LapSVM(K, L, y, 1.0, 1.0, bias="yes")
    with pytest.raises(ValueError, match="delta"):
        from ssl_opt.components import HuberHinge

        HuberHinge(delta=0)


def test_problem_is_immutable(parts):
    p = LapSVM(*parts, 1.0, 1.0)
    with pytest.raises(AttributeError, match="immutable"):
        p.gamma_A = 2.0
    with pytest.raises(ValueError):
        p.K[0, 0] = 5.0


@pytest.mark.parametrize("solver,options,match", [
    ("newton", {"tol": -1.0}, "tol must be >= 0"),
    ("newton", {"max_iter": 2.5}, "max_iter must be an integer"),
    ("newton", {"max_iter": -1}, "max_iter must be >= 0"),
    ("pcg", {"tol": float("nan")}, "tol"),
    ("pcg", {"max_iter": -3}, "max_iter must be >= 0"),
    ("pcg", {"early_stopping": "sometimes"}, "early_stopping must be one of"),
    ("pcg", {"check_every": 0}, "check_every must be >= 1"),
    ("pcg", {"refresh": 0}, "refresh must be >= 1"),
    ("pcg", {"callback": 3}, "callback must be callable"),
    ("laprls-direct", {"tol": 1e-3}, r"unknown option\(s\) \['tol'\]"),
])
def test_solver_options_are_checked_by_name(parts, solver, options, match):
    import ssl_opt

    K, L, y = parts
    p = LapSVM(K, L, y, 1.0, 1.0, loss="squared")
    with pytest.raises(ssl_opt.InvalidInputError, match=match):
        ssl_opt.solve(p, solver=solver, **options)
