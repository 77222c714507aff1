"""The reduced Newton system factorizes A once and solves every other labeled curvature as a
low-rank update of it (plugins/manifold/reduced_system.py), checked against dense solves of
the assembled matrix, Newton's own step count and the CVXPY reference."""

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
@pytest.mark.parametrize("updates", [True, False])
def test_solves_match_the_assembled_system(bias, updates):
    """With few labels every Λ is an update of A₁'s one factorization; without updates each
    new Λ is factorized once and kept for the next solve with the same Λ."""
    data, K, L = _data()
    problem = LapSVM(K, L, data.y, 1e-3, 1.0, loss="squared_hinge", bias=bias)
    system = ReducedSystem(problem)
    assert system.updates  # 10 labels of 200
    system.updates = updates
    rng = np.random.default_rng(0)
    half = np.r_[np.ones(5), np.zeros(5)]
    for lam, ridge, count in ((np.ones(10), 0.0, 1), (np.ones(10), 0.0, 1), (half, 0.0, 2),
                              (half, 0.0, 2), (rng.uniform(0.0, 2.0, 10), 0.0, 3),
                              (np.zeros(10), 1e-3, 4), (np.ones(10), 0.0, 5)):
        rhs_a, rhs_b = rng.standard_normal(problem.n), float(rng.standard_normal())
        d_a, d_b = system.solve(lam, rhs_a, rhs_b, ridge_b=ridge)
        A = _assembled(problem, lam)
        A[0, 0] += ridge
        if bias:
            want = np.linalg.solve(A, np.r_[rhs_b, rhs_a])
            np.testing.assert_allclose(np.r_[d_b, d_a], want, rtol=1e-7, atol=1e-9)
        else:
            np.testing.assert_allclose(d_a, np.linalg.solve(A[1:, 1:], rhs_a), rtol=1e-7,
                                       atol=1e-9)
        assert system.factorizations == (1 if updates else count)


def test_an_update_that_cannot_be_refined_falls_back_to_a_factorization():
    """b with curvature 1e-12 (one labeled λ, unnormalized L): the Woodbury solve does not
    reach a factorization's backward error, so A is factorized, once for that Λ."""
    from ssl_opt.builders import knn_graph, laplacian

    data, K, _ = _data()
    L = laplacian(knn_graph(data.X, n_neighbors=6), normalized=False)
    problem = LapSVM(K, L, data.y, 1e-2, 1.0, loss="squared_hinge")
    system = ReducedSystem(problem)
    lam = np.r_[1e-12, np.zeros(9)]
    rhs = np.random.default_rng(1).standard_normal(problem.n + 1)
    A = _assembled(problem, lam)
    for expected_count in (2, 2):
        d_a, d_b = system.solve(lam, rhs[1:], rhs[0])
        residual = A @ np.r_[d_b, d_a] - rhs
        assert np.abs(residual).max() <= 1e-9 * np.abs(rhs).max()
        assert system.factorizations == expected_count  # A₁, then A itself, kept


def test_one_vs_rest_newton_classes_share_the_laprls_factorization():
    """Every class's Newton starts from the shared LapRLS solve and reuses its system: no
    factorization of its own, the objectives of class-by-class Newton runs and of the CVXPY
    reference."""
    pytest.importorskip("cvxpy")
    from sklearn.datasets import make_blobs

    from ssl_opt.problems import OneVsRest

    X, truth = make_blobs(150, centers=3, cluster_std=1.5, random_state=4)
    order = np.r_[[np.flatnonzero(truth == c)[:4] for c in range(3)]].ravel()
    order = np.r_[order, np.setdiff1d(np.arange(150), order)]  # 4 labels per class first
    X, truth = X[order], truth[order]
    K = rbf_kernel(X, sigma=1.0)
    L = graph_laplacian_from_data(X, n_neighbors=6)
    Y = np.where(truth[:12, None] == np.arange(3)[None, :], 1.0, -1.0)
    classes = OneVsRest(LapSVM(K, L, Y[:, 0], 1e-6, 1.0, loss="squared_hinge"), Y)
    shared = ssl_opt.solve(classes, solver="one-vs-rest", class_solver="newton")
    alone = ssl_opt.solve(classes, solver="one-vs-rest", class_solver="newton",
                          shared_start=False)
    assert shared.info["shared_start"]
    for k, column in enumerate(shared.info["columns"]):
        assert column.status == "optimal"
        assert column.info["shared_system"] and column.info["factorizations"] == 0
        assert not alone.info["columns"][k].info["shared_system"]
        reference = ssl_opt.solve(classes.columns[k], solver="cvxpy")
        assert column.objective == pytest.approx(alone.info["columns"][k].objective, rel=1e-9)
        assert column.objective == pytest.approx(reference.objective, rel=1e-6)


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
