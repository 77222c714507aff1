"""Selection that reads the instance: PCG's conditioning probe, its iteration prediction and
the picks it changes, checked against dense eigendecompositions and forced runs."""

from __future__ import annotations

import time

import numpy as np
import pytest

import ssl_opt
from ssl_opt.builders import graph_laplacian_from_data, rbf_kernel
from ssl_opt.datasets import two_moons
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.numerics.eigen import metric_lanczos
from ssl_opt.problems import LapRLS, LapSVM
from ssl_opt.problems.manifold.conditioning import preconditioned_spectrum


def _moons(n, gamma_A, gamma_I=1.0, loss=None):
    data = two_moons(n=n, n_labeled=max(4, n // 25), noise=0.1, seed=3)
    K = rbf_kernel(data.X, sigma=0.35)
    L = graph_laplacian_from_data(data.X, n_neighbors=6)
    if loss is None:
        return LapRLS(K, L, data.y, gamma_A, gamma_I)
    return LapSVM(K, L, data.y, gamma_A, gamma_I, loss=loss)


def _dense_spectrum(problem):
    """Eigenvalues of K^½ (D + γ_I L) K^½ + γ_A I, similar to PCG's preconditioned operator."""
    w, V = np.linalg.eigh(problem.K)
    half = (V * np.sqrt(np.clip(w, 0, None))) @ V.T
    D = np.zeros(problem.n)
    D[: problem.l] = 1.0  # ½φ''(0) of the squared (and squared hinge) loss
    L = problem.L.toarray() if hasattr(problem.L, "toarray") else problem.L
    M = half @ (np.diag(D) + problem.gamma_I * L) @ half
    return np.linalg.eigvalsh(0.5 * (M + M.T)) + problem.gamma_A


def test_metric_lanczos_finds_the_extremes_of_an_operator_self_adjoint_in_a_metric():
    rng = np.random.default_rng(0)
    n = 60
    B = rng.standard_normal((n, n))
    M = B @ B.T + 0.1 * np.eye(n)
    D = np.diag(rng.uniform(0.5, 3.0, n))
    # A = D M + 2 I is self-adjoint in ⟨u, v⟩_M; its eigenvalues are those of M^½ D M^½ + 2
    w, V = np.linalg.eigh(M)
    half = (V * np.sqrt(w)) @ V.T
    exact = np.linalg.eigvalsh(half @ D @ half) + 2.0
    # Without reorthogonalization the bottom of a spread spectrum needs more than n steps
    def operator(q, Mq):
        return D @ Mq + 2.0 * q

    start = rng.standard_normal(n)
    trace = metric_lanczos(operator, lambda v: M @ v, start, steps=2 * n)
    assert trace.largest == pytest.approx(exact[-1], rel=1e-8)
    assert trace.smallest == pytest.approx(exact[0], rel=1e-6)
    short = metric_lanczos(operator, lambda v: M @ v, start, steps=10)
    assert short.smallest >= exact[0] - 1e-9  # Ritz values lie inside the spectrum
    assert trace.seconds_per_step > 0


@pytest.mark.parametrize("gamma_A", [1e-6, 1e-2, 1.0])
def test_the_probe_reads_the_largest_eigenvalue_and_bounds_the_condition_number(gamma_A):
    problem = _moons(300, gamma_A)
    exact = _dense_spectrum(problem)
    found = preconditioned_spectrum(problem)
    assert found.largest == pytest.approx(exact[-1], rel=0.05)
    assert found.largest <= exact[-1] * (1 + 1e-9)  # a Ritz value lies inside the spectrum
    # γ_A bounds λ_min below (every eigenvalue is γ_A + μ, μ ≥ 0); on this kernel, whose
    # eigenvalues decay to 0, the spectrum reaches down to it
    assert found.smallest == gamma_A and exact[0] >= gamma_A * (1 - 1e-9)
    assert exact[0] <= 2 * gamma_A + 1e-3
    assert problem.conditioning.largest == found.largest  # cached on the problem


@pytest.mark.parametrize("gamma_A, gamma_I, loss", [(1e-2, 1.0, None), (1.0, 1.0, None),
                                                    (1e-2, 1e-2, None), (1e-3, 1.0, None),
                                                    (1e-2, 1.0, "squared_hinge")])
def test_predicted_pcg_iterations_are_within_3x_of_a_forced_run(gamma_A, gamma_I, loss):
    problem = _moons(400, gamma_A, gamma_I, loss)
    prediction = ssl_opt.select(problem).predictions["pcg"]
    assert prediction.source == "instance"
    predicted = float(prediction.note.split("~", 1)[1].split(" iterations", 1)[0])
    ran = ssl_opt.solve(problem, solver="pcg")
    assert ran.status == "optimal"
    assert ran.iterations / 3 <= predicted <= 3 * ran.iterations


def _best_time(problem, solver, repeat=3):
    best = np.inf
    for _ in range(repeat):
        began = time.perf_counter()
        solution = ssl_opt.solve(problem, solver=solver)
        best = min(best, time.perf_counter() - began)
    return best, solution


def test_conditioning_flips_the_pick_between_pcg_and_a_direct_solve_as_forced_runs_do():
    # Same data and size; only γ_A changes. At γ_A = 1e-6 PCG needs thousands of iterations
    # (the spectrum reaches down to γ_A); at γ_A = 1 a few dozen.
    ill, well = _moons(800, 1e-6), _moons(800, 1.0)
    picked_ill, picked_well = ssl_opt.select(ill).solver, ssl_opt.select(well).solver
    assert picked_ill != "pcg" and picked_well == "pcg"
    pcg_ill, run = _best_time(ill, "pcg", repeat=1)
    assert run.iterations > 800
    direct_ill, _ = _best_time(ill, picked_ill)
    pcg_well, run = _best_time(well, "pcg")
    assert run.iterations < 100
    direct_well, _ = _best_time(well, picked_ill)
    # The gaps are 5-20x on a 2-core machine; the check is only their direction.
    assert direct_ill < pcg_ill and pcg_well < direct_well


def test_explain_says_what_was_measured_and_measure_false_leaves_the_models():
    problem = _moons(300, 1e-2)
    sel = ssl_opt.select(problem)
    text = sel.explain()
    assert sel.solver in text and "Lanczos steps" in text and "choosing took" in text
    assert sel.seconds > 0
    modelled = ssl_opt.select(_moons(300, 1e-2), measure=False)
    assert modelled.predictions["pcg"].source != "instance"
    assert "Lanczos" not in modelled.explain()
    with pytest.raises(InvalidInputError, match="measure"):
        ssl_opt.select(problem, measure="yes")


def test_a_kernel_operator_is_not_probed():
    from ssl_opt.operators import KernelOperator

    data = two_moons(n=200, n_labeled=8, noise=0.1, seed=0)
    op = KernelOperator(data.X, "rbf", sigma=0.35)
    problem = LapRLS(op, graph_laplacian_from_data(data.X, n_neighbors=6), data.y, 1e-2, 1.0)
    assert ssl_opt.select(problem).predictions["pcg"].source != "instance"
    assert "conditioning" not in vars(problem)
