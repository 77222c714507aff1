"""The reduced Newton system keeps its LU factors for the next solve with the same labeled
curvature (plugins/manifold/reduced_system.py), checked against dense solves of the assembled
matrix and against Newton's own step count."""

from __future__ import annotations

import numpy as np
import pytest

import ssl_opt
from ssl_opt.builders import graph_laplacian_from_data, rbf_kernel
from ssl_opt.datasets import two_moons
from ssl_opt.plugins.manifold.reduced_system import ReducedSystem
from ssl_opt.problems import LapRLS, LapSVM


def _data(n=200):
    data = two_moons(n=n, n_labeled=10, noise=0.1, seed=2)
    return data, rbf_kernel(data.X, sigma=0.3), graph_laplacian_from_data(data.X, n_neighbors=6)


def _assembled(problem, lam):
    """A of the module docstring, built entry by entry from K and L (dense)."""
    K = problem.K_dense
    L = problem.L.toarray() if hasattr(problem.L, "toarray") else np.asarray(problem.L)
    n, l = problem.n, problem.l
    Lam = np.zeros((n, n))
    Lam[np.arange(l), np.arange(l)] = lam
    ones = np.ones(n)
    A = np.empty((n + 1, n + 1))
    A[0, 0] = ones @ Lam @ ones + problem.gamma_I * ones @ L @ ones
    A[0, 1:] = ones @ Lam @ K + problem.gamma_I * ones @ L @ K
    A[1:, 0] = Lam @ ones + problem.gamma_I * L @ ones
    A[1:, 1:] = Lam @ K + problem.gamma_A * np.eye(n) + problem.gamma_I * L @ K
    return A


@pytest.mark.parametrize("bias", [True, False])
def test_solves_match_the_assembled_system_and_factor_once_per_curvature(bias):
    data, K, L = _data()
    problem = LapSVM(K, L, data.y, 1e-3, 1.0, loss="squared_hinge", bias=bias)
    system = ReducedSystem(problem)
    rng = np.random.default_rng(0)
    for lam, expected_count in ((np.ones(10), 1), (np.ones(10), 1),
                                (np.r_[np.ones(5), np.zeros(5)], 2), (np.ones(10), 3)):
        rhs_a, rhs_b = rng.standard_normal(problem.n), float(rng.standard_normal())
        d_a, d_b = system.solve(lam, rhs_a, rhs_b)
        A = _assembled(problem, lam)
        if bias:
            want = np.linalg.solve(A, np.r_[rhs_b, rhs_a])
            np.testing.assert_allclose(np.r_[d_b, d_a], want, rtol=1e-7, atol=1e-9)
        else:
            np.testing.assert_allclose(d_a, np.linalg.solve(A[1:, 1:], rhs_a), rtol=1e-7,
                                       atol=1e-9)
        assert system.factorizations == expected_count


def test_newton_on_an_ill_conditioned_square_loss_refines_with_one_factorization():
    data, K, L = _data(400)
    problem = LapRLS(K, L, data.y, 1e-6, 1.0)  # every step has the same curvature
    newton = ssl_opt.solve(problem, solver="newton")
    direct = ssl_opt.solve(LapRLS(K, L, data.y, 1e-6, 1.0), solver="laprls-direct")
    # A full step leaves the gradient above tol here (A's condition number): Newton refines.
    assert newton.status == "optimal" and newton.iterations > 1
    assert newton.info["factorizations"] == 1
    assert newton.objective == pytest.approx(direct.objective, rel=1e-9)
    hinge = ssl_opt.solve(LapSVM(K, L, data.y, 1e-6, 1.0, loss="squared_hinge"),
                          solver="newton")
    assert hinge.status == "optimal"
    assert 1 <= hinge.info["factorizations"] <= hinge.iterations


def test_a_singular_system_raises_as_a_dense_solve_does():
    from ssl_opt.builders import knn_graph, laplacian

    data, K, _ = _data()
    L = laplacian(knn_graph(data.X, n_neighbors=6), normalized=False)  # L·1 = 0
    problem = LapSVM(K, L, data.y, 1e-3, 1.0, loss="huber")
    system = ReducedSystem(problem)
    rhs = np.ones(problem.n)
    # No labeled curvature and L·1 = 0: nothing in A moves b.
    with pytest.raises(np.linalg.LinAlgError):
        system.solve(np.zeros(10), rhs, 1.0)
    d_a, d_b = system.solve(np.zeros(10), rhs, 1.0, ridge_b=1e-8)
    assert np.all(np.isfinite(d_a)) and np.isfinite(d_b)
