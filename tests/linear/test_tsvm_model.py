"""TSVM as a named transductive model (docs/design.md §2a): the TransductiveModel with the
squared hinge and the ridge on w̃, its inner model a LinearSVM, its certificate the transductive
model's, and the one switching loop both ``tsvm`` and ``tsvm-model`` run. Checked against numpy
formulas written here (objective, gradient of the inner L2-SVM, best switch) and against each
other's labels."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import ssl_opt
from ssl_opt.datasets.text_generator import synthetic_text
from ssl_opt.modeling import TransductiveModel
from ssl_opt.modeling.transductive import Transductive
from ssl_opt.problems import DAS3VM, TSVM, LinearSVM
from ssl_opt.solution import OPTIMAL, TIME_LIMIT


def _instance(n=300, seed=0, lam=1e-2, lam_u=1.0):
    data = synthetic_text(n=n, d=120, nnz_per_row=12, n_labeled=30, r=0.5, seed=seed)
    return data, TSVM(data.X, data.y, lam=lam, lam_u=lam_u)


def _np_stationarity(X, y, y_u, lam, lam_u, w):
    """‖∇_w J‖∞ / max(1, ‖λw‖∞, ‖X̃ᵀv‖∞) of the TSVM objective at fixed labels (numpy)."""
    A = np.hstack([np.asarray(X.todense()), np.ones((X.shape[0], 1))])
    l, u = y.size, y_u.size
    labels = np.concatenate([y, y_u])
    cost = np.concatenate([np.full(l, 1.0 / l), np.full(u, lam_u / u)])
    o = A @ w
    loss_part = A.T @ (-cost * labels * np.maximum(0.0, 1.0 - labels * o))
    scale = max(1.0, np.abs(loss_part).max(), np.abs(lam * w).max())
    return np.abs(loss_part + lam * w).max() / scale


def test_tsvm_is_a_transductive_model_whose_inner_model_is_the_l2svm():
    data, problem = _instance()
    assert isinstance(problem, TransductiveModel) and isinstance(problem, Transductive)
    assert isinstance(DAS3VM(data.X, data.y, 1e-2, 1.0), Transductive)
    assert not isinstance(DAS3VM(data.X, data.y, 1e-2, 1.0), TransductiveModel)
    y_u = problem.balanced_labels(np.linspace(-1, 1, problem.u))
    inner = problem.inner_model(y_u, lam_u=0.3)
    assert isinstance(inner, LinearSVM)
    w = np.random.default_rng(1).normal(size=problem.design.dim)
    A = np.hstack([np.asarray(data.X.todense()), np.ones((problem.n, 1))])
    o = A @ w
    l, u = problem.l, problem.u
    expected = (0.5 * 1e-2 * w @ w + np.sum(np.maximum(0, 1 - data.y * o[:l]) ** 2) / (2 * l)
                + 0.3 * np.sum(np.maximum(0, 1 - y_u * o[l:]) ** 2) / (2 * u))
    assert inner.objective({"w": w}) == pytest.approx(expected, rel=1e-12)
    unlabeled = np.sum(np.maximum(0, 1 - y_u * o[l:]) ** 2) / (2 * u)
    assert problem.objective({"w": w, "y_u": y_u}) == pytest.approx(
        expected + (1.0 - 0.3) * unlabeled, rel=1e-12)  # at the problem's λ' = 1


def test_tsvm_and_tsvm_model_run_one_schedule_to_the_same_certified_labels():
    data, problem = _instance()
    paper = ssl_opt.solve(problem, solver="tsvm")
    generic = ssl_opt.solve(problem, solver="tsvm-model")
    assert paper.status == generic.status == OPTIMAL
    assert generic.info["inner_solver"] == "mfn"
    np.testing.assert_array_equal(paper.x["y_u"], generic.x["y_u"])
    assert generic.objective == pytest.approx(paper.objective, rel=1e-8)
    for sol in (paper, generic):
        stat = _np_stationarity(data.X, data.y, sol.x["y_u"], 1e-2, 1.0, sol.x["w"])
        assert stat < 1e-6
        kkt = problem.kkt(sol)
        assert kkt["stationarity"] == pytest.approx(stat, rel=1e-6, abs=1e-12)
        assert kkt["switch_gain"] == 0.0 and kkt["balance"] == 0.0
    # the certificate sees a point that is not optimal for its labels
    off = {"w": paper.x["w"] * 1.1, "y_u": paper.x["y_u"]}
    assert problem.kkt(off)["stationarity"] == pytest.approx(
        _np_stationarity(data.X, data.y, off["y_u"], 1e-2, 1.0, off["w"]), rel=1e-6)
    assert problem.kkt(off)["stationarity"] > 1e-3


@pytest.mark.parametrize("solver", ["tsvm", "tsvm-model"])
def test_time_limit_stops_the_switching_with_labels_its_w_fits(solver):
    data, problem = _instance(n=600, seed=2, lam=1e-3)
    sol = ssl_opt.solve(problem, solver=solver, time_limit=1e-9, S=1)
    assert sol.status == TIME_LIMIT and sol.info["stages"] == 1
    lam_u = sol.history["lam_u"][-1]  # the λ' of the last fit, below the target
    assert lam_u < problem.lam_u
    assert _np_stationarity(data.X, data.y, sol.x["y_u"], 1e-3, lam_u, sol.x["w"]) < 1e-6
    assert int((sol.x["y_u"] > 0).sum()) == problem.n_pos


def test_an_inner_solve_short_of_optimal_makes_the_run_say_so():
    _, problem = _instance()
    sol = ssl_opt.solve(problem, solver="tsvm-model", inner_solver="mfn",
                        inner_options={"max_iter": 1})
    assert sol.status != OPTIMAL and sol.info["inner_non_optimal"] > 0


def test_da_stationarity_is_the_inner_l2svm_certificate():
    data = synthetic_text(n=200, d=80, nnz_per_row=10, n_labeled=20, r=0.5, seed=4)
    problem = DAS3VM(sp.csr_matrix(data.X), data.y, lam=1e-2, lam_u=0.7, r=0.5)
    rng = np.random.default_rng(0)
    w, p = rng.normal(size=problem.design.dim), rng.uniform(size=problem.u)
    A = np.hstack([np.asarray(data.X.todense()), np.ones((problem.n, 1))])
    o = A @ w
    l, u = problem.l, problem.u
    v = np.concatenate([-data.y * np.maximum(0, 1 - data.y * o[:l]) / l,
                        0.7 / u * (-p * np.maximum(0, 1 - o[l:])
                                   + (1 - p) * np.maximum(0, 1 + o[l:]))])
    loss_part = A.T @ v
    expected = np.abs(loss_part + 1e-2 * w).max() / max(1.0, np.abs(loss_part).max(),
                                                         np.abs(1e-2 * w).max())
    assert problem.kkt({"w": w, "p": p}, T=0.5)["stationarity"] == pytest.approx(
        expected, rel=1e-10)


@pytest.mark.parametrize("solver", ["tsvm", "tsvm-model"])
def test_a_warm_start_leaves_the_callers_arrays_alone(solver):
    _, problem = _instance(lam_u=0.5)
    first = ssl_opt.solve(problem, solver="tsvm")
    w, y_u = first.x["w"].copy(), first.x["y_u"].copy()
    warm = {"w": first.x["w"] * 0.9, "y_u": first.x["y_u"][::-1].copy()}
    kept = {k: v.copy() for k, v in warm.items()}
    again = ssl_opt.solve(problem, solver=solver, warm_start=warm)
    assert again.status == OPTIMAL
    for k in warm:
        np.testing.assert_array_equal(warm[k], kept[k])
    np.testing.assert_array_equal(first.x["w"], w)
    np.testing.assert_array_equal(first.x["y_u"], y_u)
