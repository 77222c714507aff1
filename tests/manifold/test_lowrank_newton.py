"""LapSVM / LapRLS on a Nyström kernel (issue 18): ``lowrank-newton`` works in the feature space
of K̃ = ΦΦᵀ; it is compared with Newton on the dense K̃ (an independent O(n³) path), with the
CVXPY reference, and PCG runs unchanged on the operator. The approximation is reported on the
solution and the certificate, and the objective on K̃ approaches the exact kernel's as the
landmarks grow."""

from __future__ import annotations

import numpy as np
import pytest

import ssl_opt
from ssl_opt.builders import graph_laplacian_from_data, rbf_kernel
from ssl_opt.datasets.synthetic import two_moons
from ssl_opt.exceptions import UnsupportedProblemError
from ssl_opt.operators import KernelOperator, NystromOperator
from ssl_opt.problems import LapRLS, LapSVM
from ssl_opt.solution import OPTIMAL

SIGMA = 0.4


@pytest.fixture(scope="module")
def moons():
    data = two_moons(n=300, n_labeled=12, noise=0.1, seed=2)
    L = graph_laplacian_from_data(data.X, n_neighbors=8, weights="heat", normalized=True)
    return data, L


@pytest.mark.parametrize("loss", ["squared_hinge", "squared", "logistic", "huber"])
def test_lowrank_newton_equals_dense_newton_on_the_same_kernel(moons, loss):
    data, L = moons
    K = NystromOperator(data.X, "rbf", landmarks=60, sigma=SIGMA, seed=1)
    problem = LapSVM(K, L, data.y, gamma_A=0.5, gamma_I=20.0, loss=loss)
    sol = ssl_opt.solve(problem, solver="lowrank-newton")
    assert sol.status == OPTIMAL
    dense = LapSVM(K.to_dense(), L, data.y, gamma_A=0.5, gamma_I=20.0, loss=loss)
    ref = ssl_opt.solve(dense, solver="newton")
    assert abs(sol.objective - ref.objective) <= 1e-10 * abs(ref.objective)
    np.testing.assert_allclose(problem.prediction(sol.x), dense.prediction(ref.x), atol=1e-7)
    # α is the minimum-norm expansion: Φᵀα = w reproduces K̃α.
    assert ssl_opt.certify(problem, sol, reference=False).passed
    assert ssl_opt.certify(dense, sol).passed


def test_lowrank_newton_reaches_the_cvxpy_reference_and_pcg_runs_unchanged(moons):
    data, L = moons
    K = NystromOperator(data.X, "rbf", landmarks=40, sigma=SIGMA)
    problem = LapRLS(K, L, data.y, gamma_A=1e-2, gamma_I=1.0)
    fast = ssl_opt.solve(problem, solver="lowrank-newton")
    pcg = ssl_opt.solve(problem, solver="pcg", tol=1e-11)
    reference = ssl_opt.solve(LapRLS(K.to_dense(), L, data.y, 1e-2, 1.0), solver="cvxpy")
    for sol in (fast, pcg):
        assert abs(sol.objective - reference.objective) <= 1e-7 * abs(reference.objective)
    assert fast.iterations <= 2  # squared loss: one Newton step is the optimum


def test_the_approximation_is_reported_not_hidden(moons):
    data, L = moons
    K = NystromOperator(data.X, "rbf", landmarks=30, sigma=SIGMA)
    problem = LapSVM(K, L, data.y, 1.0, 10.0)
    sol = ssl_opt.solve(problem, solver="lowrank-newton")
    note = sol.info["approximation"]
    assert "Nyström" in note and f"{K.trace_error:.2e}" in note
    cert = ssl_opt.certify(problem, sol, reference=False)
    assert note in cert.notes
    exact = LapSVM(rbf_kernel(data.X, sigma=SIGMA), L, data.y, 1.0, 10.0)
    assert exact.approximation_note == ""
    assert "approximation" not in ssl_opt.solve(exact, solver="newton").info


def test_objective_on_the_approximation_tends_to_the_exact_kernels(moons):
    data, L = moons
    exact = LapSVM(rbf_kernel(data.X, sigma=SIGMA), L, data.y, 1.0, 10.0)
    best = ssl_opt.solve(exact, solver="newton").objective
    gaps = []
    for m in (10, 40, 160):
        K = NystromOperator(data.X, "rbf", landmarks=m, sigma=SIGMA, seed=0)
        sol = ssl_opt.solve(LapSVM(K, L, data.y, 1.0, 10.0), solver="lowrank-newton")
        # The Nyström solution evaluated on the exact kernel is a feasible point there.
        on_exact = exact.objective(sol.x)
        assert on_exact >= best - 1e-9 * abs(best)
        gaps.append(on_exact - best)
    assert gaps[0] > gaps[2]
    assert gaps[2] <= 1e-2 * abs(best)


def test_selection_knows_the_low_rank_kernel(moons):
    data, L = moons
    K = NystromOperator(data.X, "rbf", landmarks=50, sigma=SIGMA)
    problem = LapSVM(K, L, data.y, 1.0, 10.0)
    choice = ssl_opt.select(problem, backend="fast")
    assert choice.solver == "lowrank-newton"
    assert "low-rank factor" in choice.predictions["lowrank-newton"].note
    # A dense solver pays for the n×n copy of K̃ (8n² bytes), the factor path does not.
    assert choice.predicted_memory["newton"] >= 8.0 * problem.n**2
    assert choice.predicted_memory["lowrank-newton"] < 8.0 * problem.n**2
    # Not on a kernel without a factor: missing() says what it needs.
    plain = LapSVM(KernelOperator(data.X, "rbf", sigma=SIGMA), L, data.y, 1.0, 10.0)
    with pytest.raises(UnsupportedProblemError, match="low-rank factor"):
        ssl_opt.solve(plain, solver="lowrank-newton")
    # Nor for the hinge, which has no second derivative.
    hinge = LapSVM(K, L, data.y, 1.0, 10.0, loss="hinge")
    with pytest.raises(UnsupportedProblemError, match="lowrank-newton"):
        ssl_opt.solve(hinge, solver="lowrank-newton")


def test_warm_start_and_no_bias(moons):
    data, L = moons
    K = NystromOperator(data.X, "rbf", landmarks=50, sigma=SIGMA)
    problem = LapSVM(K, L, data.y, 1.0, 10.0, bias=False)
    cold = ssl_opt.solve(problem, solver="lowrank-newton")
    dense = ssl_opt.solve(LapSVM(K.to_dense(), L, data.y, 1.0, 10.0, bias=False),
                          solver="newton")
    assert abs(cold.objective - dense.objective) <= 1e-10 * abs(dense.objective)
    warm = ssl_opt.solve(problem, solver="lowrank-newton", warm_start=cold)
    assert warm.iterations <= 1 and abs(warm.objective - cold.objective) <= 1e-12 * abs(
        cold.objective)
