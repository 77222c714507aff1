"""Newton-CG, L-BFGS-B and FISTA on models (plugins/model/newton_cg.py, lbfgs.py, fista.py),
against independent computations: closed forms (ridge by numpy, lasso with an orthonormal
design = soft thresholding, NNLS by scipy), a direct linear solve of a kernel LapRLS model, and
the CVXPY reference."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse.linalg as spla
from scipy.optimize import nnls

import ssl_opt
from ssl_opt import registry
from ssl_opt.builders import graph_laplacian_from_data, rbf_kernel
from ssl_opt.datasets.synthetic import two_moons
from ssl_opt.exceptions import InvalidInputError, UnsupportedProblemError
from ssl_opt.modeling import (
    L1,
    Box,
    GraphQuadratic,
    MarginLossTerm,
    Model,
    NonNegative,
    QuadraticForm,
    Ridge,
    RKHSNorm,
    SquaredError,
    Term,
    Variable,
    check_term,
)
from ssl_opt.plugins.model.common import certificate_residual, too_slow
from ssl_opt.plugins.model.fista import FISTA
from ssl_opt.plugins.model.lbfgs import LBFGS
from ssl_opt.plugins.model.newton_cg import NewtonCG
from ssl_opt.solution import MAX_ITERATIONS, OPTIMAL, STALLED

SOLVERS = {"newton-cg": NewtonCG(), "lbfgs": LBFGS(), "fista": FISTA()}
MODULES = ("ssl_opt.plugins.model.newton_cg", "ssl_opt.plugins.model.lbfgs",
           "ssl_opt.plugins.model.fista")


# ----------------------------------------------------------------------------- instances
def ridge_model(seed=0, n=40, d=8, lam=0.3):
    rng = np.random.default_rng(seed)
    X, y = rng.standard_normal((n, d)), rng.standard_normal(n)
    w = Variable("w", (d,))
    model = Model([SquaredError(X @ w, y), Ridge(w, lam)], name="ridge")
    closed = np.linalg.solve(X.T @ X + lam * np.eye(d), X.T @ y)
    return model, closed


def svm_model(seed=1, n=60, d=6):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.where(X @ rng.standard_normal(d) + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
    w, b = Variable("w", (d,)), Variable("b", ())
    return Model([MarginLossTerm(X @ w + b, y, "squared_hinge", 2.0), Ridge(w, 0.5)],
                 name="l2svm")


def laprls_model(n=80, l=8, gamma_A=1e-2, gamma_I=1e-1):
    """``(1/l)‖f_L − y‖² + γ_A αᵀKα + γ_I fᵀLf``, ``f = Kα + b``, and its optimum by one dense
    (n+1)×(n+1) solve: α = −(Q f − J y/l)/γ_A with Q = diag(1_L/l) + γ_I L, and 1ᵀα = 0."""
    data = two_moons(n=n, n_labeled=l, noise=0.12, seed=0)
    K = rbf_kernel(data.X, sigma=0.4)
    L = graph_laplacian_from_data(data.X, n_neighbors=6)
    y = data.y[:l]
    alpha, b = Variable("alpha", (n,)), Variable("b", ())
    f = K @ alpha + b
    model = Model([SquaredError(f[:l], y, 1.0 / l), RKHSNorm(alpha, K, gamma_A),
                   GraphQuadratic(f, L, gamma_I)], prediction=f, name="laprls",
                  unique_prediction=True)
    Q = np.diag(np.r_[np.full(l, 1.0 / l), np.zeros(n - l)]) + gamma_I * L.toarray()
    A = np.zeros((n + 1, n + 1))
    A[:n, :n] = Q @ K + gamma_A * np.eye(n)
    A[:n, n] = Q.sum(axis=1)
    A[n, :n] = 1.0
    rhs = np.r_[y / l, np.zeros(n - l), 0.0]
    sol = np.linalg.solve(A, rhs)
    return model, {"alpha": sol[:n], "b": np.array(sol[n])}


def reference(model):
    ref = ssl_opt.solve(model, solver="cvxpy")
    assert ref.status == OPTIMAL
    return ref


def assert_certified(model, sol, tol=1e-8):
    assert sol.status == OPTIMAL, sol
    residuals = model.kkt(sol)
    assert "stationarity" in residuals
    assert max(residuals.values()) <= tol, residuals
    cert = ssl_opt.certify(model, sol)
    assert cert.passed, cert.report()
    return cert


def relative_gap(a, b):
    return abs(a - b) / max(1.0, abs(b))


# ----------------------------------------------------------------------------- user terms
class UserSquaredError(Term):
    """``‖z − t‖²`` written by a user; ``factor`` scales the gradient (1: correct)."""

    name = "user_squared_error"
    program_class = "QP"

    def __init__(self, argument, target, factor=1.0):
        super().__init__(argument, 1.0)
        self.target, self.factor = np.asarray(target, dtype=np.float64), factor

    def value(self, z):
        return float(np.sum((z - self.target) ** 2))

    def cvxpy(self, z):
        return cp.sum_squares(z - self.target)

    def gradient(self, z):
        return 2.0 * self.factor * (z - self.target)

    def hessp(self, z, v):
        return 2.0 * self.factor * v


class UserSquaredHinge(Term):
    """``Σ max(0, 1 − y z)²`` (a kink in the second derivative at margin 1)."""

    name = "user_squared_hinge"
    program_class = "QP"

    def __init__(self, argument, y):
        super().__init__(argument, 1.0)
        self.y = np.asarray(y, dtype=np.float64)

    def value(self, z):
        return float(np.sum(np.maximum(0.0, 1.0 - self.y * z) ** 2))

    def cvxpy(self, z):
        return cp.sum_squares(cp.pos(1 - cp.multiply(self.y, z)))

    def gradient(self, z):
        return -2.0 * self.y * np.maximum(0.0, 1.0 - self.y * z)

    def hessp(self, z, v):
        return 2.0 * (1.0 - self.y * z > 0) * v


# ------------------------------------------------------------------------ closed forms
@pytest.mark.parametrize("name", SOLVERS)
def test_ridge_least_squares_matches_the_normal_equations(name):
    model, closed = ridge_model()
    sol = SOLVERS[name].solve(model)
    assert_certified(model, sol)
    assert np.max(np.abs(sol.x["w"] - closed)) <= 1e-7 * max(1.0, np.max(np.abs(closed)))
    assert relative_gap(sol.objective, model.objective({"w": closed})) <= 1e-12
    assert set(sol.history.columns) >= {"objective", "stationarity", "time"}


def test_lasso_with_orthonormal_design_is_soft_thresholding():
    rng = np.random.default_rng(2)
    Q, _ = np.linalg.qr(rng.standard_normal((50, 10)))
    y, lam = 2.0 * rng.standard_normal(50), 0.6
    w = Variable("w", (10,))
    model = Model([SquaredError(Q @ w, y, 0.5), L1(w, lam)])
    sol = FISTA().solve(model)
    c = Q.T @ y
    expected = np.sign(c) * np.maximum(np.abs(c) - lam, 0.0)
    assert 0 < np.count_nonzero(expected) < 10
    np.testing.assert_allclose(sol.x["w"], expected, atol=1e-8)
    # The prox-step multipliers: u ∈ ∂(λ‖·‖₁)(w), and u = −∇F = Qᵀy − w at the optimum.
    (u,) = sol.info["multipliers"]
    assert u.shape == (10,)
    assert np.all(np.abs(u) <= lam + 1e-12)
    np.testing.assert_allclose(u, c - expected, atol=1e-7)
    assert_certified(model, sol)


def test_lasso_with_bias_matches_the_reference_and_restarts_pay():
    rng = np.random.default_rng(3)
    X, y = rng.standard_normal((60, 30)), rng.standard_normal(60)
    w, b = Variable("w", (30,)), Variable("b", ())
    model = Model([SquaredError(X @ w + b, y), L1(w, 2.0 * rng.random(30))])
    p_star = reference(model).objective
    iterations = {}
    for restart in ("gradient", "function", "none"):
        sol = FISTA().solve(model, restart=restart)
        assert relative_gap(sol.objective, p_star) <= 1e-6
        assert_certified(model, sol)
        iterations[restart] = sol.iterations
    # Adaptive restart (O'Donoghue & Candès 2015): measured 87 / 84 vs 287 iterations.
    assert 2 * max(iterations["gradient"], iterations["function"]) < iterations["none"]
    assert not LBFGS().supports(model) and not NewtonCG().supports(model)


@pytest.mark.parametrize("name", ["lbfgs", "fista"])
def test_nonnegative_least_squares_matches_scipy_nnls(name):
    rng = np.random.default_rng(4)
    X, y = rng.standard_normal((40, 12)), rng.standard_normal(40)
    w = Variable("w", (12,))
    model = Model([SquaredError(X @ w, y)], [NonNegative(w)])
    sol = SOLVERS[name].solve(model)
    expected = nnls(X, y)[0]
    assert 0 < np.count_nonzero(expected) < 12
    np.testing.assert_allclose(sol.x["w"], expected, atol=1e-7)
    (u,) = sol.info["multipliers"]  # a normal-cone element: ≤ 0, zero off the active set
    assert np.all(u <= 1e-12) and np.all(np.abs(u[expected > 1e-6]) <= 1e-7)
    assert_certified(model, sol)


@pytest.mark.parametrize("name", ["lbfgs", "fista"])
def test_box_constrained_svm_matches_the_reference(name):
    base = svm_model()
    w = base["w"]
    model = base.add(Box(w, -0.2, 0.3))
    sol = SOLVERS[name].solve(model)
    assert np.any(np.isclose(sol.x["w"], 0.3)) or np.any(np.isclose(sol.x["w"], -0.2))
    assert relative_gap(sol.objective, reference(model).objective) <= 1e-6
    assert_certified(model, sol)


@pytest.mark.parametrize("name", SOLVERS)
def test_squared_hinge_model_matches_the_reference(name):
    model = svm_model()
    sol = SOLVERS[name].solve(model)
    assert relative_gap(sol.objective, reference(model).objective) <= 1e-6
    assert_certified(model, sol)
    if name == "newton-cg":
        # Generalized Hessian + exact steps: a handful of Newton steps.
        assert sol.iterations <= 15


def test_newton_cg_with_a_products_only_operator_matches_the_closed_form():
    rng = np.random.default_rng(5)
    X, y = rng.standard_normal((30, 7)), rng.standard_normal(30)
    B = rng.standard_normal((7, 7))
    G = B @ B.T
    w = Variable("w", (7,))
    model = Model([SquaredError(X @ w, y), QuadraticForm(w, spla.aslinearoperator(G), 0.5)])
    assert "cvxpy" not in [s["name"] for s in ssl_opt.list_solvers()
                           if ssl_opt.registry.get_solver(s["name"]).supports(model)]
    sol = NewtonCG().solve(model)
    closed = np.linalg.solve(X.T @ X + 0.5 * G, X.T @ y)
    np.testing.assert_allclose(sol.x["w"], closed, atol=1e-9)
    assert sol.status == OPTIMAL and model.kkt(sol)["stationarity"] <= 1e-8


# ------------------------------------------------------------------ kernel LapRLS model
def test_kernel_laprls_newton_cg_matches_the_direct_solve():
    model, direct = laprls_model()
    sol = NewtonCG().solve(model)
    f_star = model.objective(direct)
    assert relative_gap(sol.objective, f_star) <= 1e-7
    pred, pred_star = model.prediction(sol.x), model.prediction(direct)
    assert np.max(np.abs(pred - pred_star)) <= 1e-5 * max(1.0, np.max(np.abs(pred_star)))
    assert_certified(model, sol)


@pytest.mark.parametrize("name", ["lbfgs", "fista"])
def test_first_order_solvers_on_a_kernel_model_report_max_iterations_honestly(name):
    model, direct = laprls_model(n=60, l=6)
    sol = SOLVERS[name].solve(model, max_iter=40)
    assert sol.status == MAX_ITERATIONS
    assert sol.iterations == 40
    assert model.kkt(sol)["stationarity"] > 1e-8
    # The best iterate is returned: no recorded iterate is lower.
    assert sol.objective <= np.min(sol.history["objective"]) + 1e-12
    assert sol.objective >= model.objective(direct) - 1e-12
    assert not ssl_opt.certify(model, sol).passed


def test_hopeless_progress_stops_as_stalled_with_the_reason():
    model, _ = laprls_model(n=60, l=6)
    sol = LBFGS().solve(model)  # the Hessian in α carries K²: L-BFGS crawls
    assert sol.status == STALLED and sol.iterations < 10_000
    assert "progress too slow" in sol.info["note"]
    assert sol.objective <= np.min(sol.history["objective"]) + 1e-12
    assert not ssl_opt.certify(model, sol).passed


def test_too_slow_extrapolates_the_rate_of_the_second_half():
    # Linear convergence (×0.99 per iteration) reaches 1e-8 from 1 in ~1833 iterations.
    fast = [(k, 0.99**k) for k in range(0, 1001, 10)]
    assert too_slow(fast, 1e-8, 5000) == ""
    # Halving every 4000 iterations: ~4000·log2(1e-3/1e-8) ≈ 66,000 more, beyond 20,000.
    crawl = [(k, 1e-3 * 2 ** (-k / 4000)) for k in range(0, 2001, 10)]
    assert "progress too slow" in too_slow(crawl, 1e-8, 20_000)
    assert too_slow(crawl, 1e-8, 200_000) == ""
    assert too_slow(crawl[:50], 1e-8, 20_000) == ""  # too early to judge


def test_max_iter_returns_the_best_newton_iterate():
    model = svm_model()
    sol = NewtonCG().solve(model, max_iter=1)
    assert sol.status == MAX_ITERATIONS and sol.iterations == 1
    objectives = sol.history["objective"]
    assert sol.objective == pytest.approx(np.min(objectives), rel=1e-14)
    assert sol.objective < objectives[0]
    assert model.kkt(sol)["stationarity"] > 1e-8


def test_predicted_times_rank_newton_first_on_kernel_models():
    small, _ = laprls_model(n=40, l=4)
    large, _ = laprls_model(n=200, l=10)
    for solver in SOLVERS.values():
        t_small, t_large = solver.predicted_time(small), solver.predicted_time(large)
        assert 0 < t_small < t_large < np.inf
    newton = NewtonCG().predicted_time(large)
    assert newton < LBFGS().predicted_time(large) and newton < FISTA().predicted_time(large)


# -------------------------------------------------------------------- wrong derivatives
@pytest.mark.parametrize("name", SOLVERS)
def test_a_wrong_user_gradient_is_caught_and_never_certified(name):
    rng = np.random.default_rng(6)
    X, y = rng.standard_normal((30, 5)), rng.standard_normal(30)
    w = Variable("w", (5,))
    good = Model([UserSquaredError(X @ w, y), Ridge(w, 0.1)])
    bad = Model([UserSquaredError(X @ w, y, factor=2.0), Ridge(w, 0.1)])
    solver = SOLVERS[name]
    assert_certified(good, solver.solve(good))  # a correct user term passes the check
    with pytest.raises(InvalidInputError, match="gradient.*check_terms=False"):
        solver.solve(bad)
    sol = solver.solve(bad, check_terms=False, max_iter=300)
    cert = ssl_opt.certify(bad, sol)
    assert not cert.passed
    assert any(c.name == "objective_gap" and not c.passed for c in cert.checks)


def test_user_piecewise_quadratic_term_is_checked_off_its_kinks():
    # Warm start with every margin exactly at the kink: finite differences of the gradient
    # there disagree with any Hessian product, so the solvers check at a jittered point.
    rng = np.random.default_rng(7)
    y = np.sign(rng.standard_normal(20))
    w = Variable("w", (20,))
    term = UserSquaredHinge(w, y)
    model = Model([term, Ridge(w, 0.3)])
    with pytest.raises(InvalidInputError, match="Hessian product"):
        check_term(term, y.copy())
    for solver in SOLVERS.values():
        sol = solver.solve(model, warm_start={"w": y.copy()})
        assert_certified(model, sol)
        np.testing.assert_allclose(sol.x["w"], y / 1.3, atol=1e-8)  # 2(w − y) + 0.6 w = 0


# --------------------------------------------------------------------------- warm starts
@pytest.mark.parametrize("name", SOLVERS)
def test_warm_start_at_the_optimum_takes_no_iteration(name):
    model = svm_model()
    solver = SOLVERS[name]
    cold = solver.solve(model)
    again = solver.solve(model, warm_start=cold)
    assert again.status == OPTIMAL and again.iterations == 0
    near = {k: v + 1e-3 for k, v in cold.x.items()}
    warm = solver.solve(model, warm_start=near)
    assert warm.status == OPTIMAL and warm.iterations < cold.iterations
    with pytest.raises(InvalidInputError, match="warm_start"):
        solver.solve(model, warm_start={"w": np.zeros(6)})
    with pytest.raises(InvalidInputError, match="warm_start"):
        solver.solve(model, warm_start={"w": np.full(6, np.nan), "b": np.zeros(())})


# ----------------------------------------------------------------------- structure
def test_structure_reasons_name_the_blocking_term():
    rng = np.random.default_rng(8)
    X, y = rng.standard_normal((20, 4)), rng.standard_normal(20)
    w, v = Variable("w", (4,)), Variable("v", (4,))
    lasso = Model([SquaredError(X @ w, y), L1(w, 1.0)])
    assert any("l1" in r for r in NewtonCG().missing(lasso))
    assert any("l1" in r and "gradient" in r for r in LBFGS().missing(lasso))
    assert FISTA().missing(lasso) == []

    nonneg = Model([SquaredError(X @ w, y)], [NonNegative(w)])
    assert any("nonnegative" in r for r in NewtonCG().missing(nonneg))
    assert LBFGS().missing(nonneg) == [] and FISTA().missing(nonneg) == []

    on_map = Model([SquaredError(X @ w, y)], [NonNegative(X @ w)])
    assert any("nonnegative" in r and "whole variable" in r for r in LBFGS().missing(on_map))
    assert any("nonnegative" in r and "whole variable" in r for r in FISTA().missing(on_map))

    two = Model([SquaredError(X @ w + X @ v, y), L1(w, 1.0)], [NonNegative(w)])
    reasons = FISTA().missing(two)
    assert any("l1" in r and "nonnegative" in r and "'w'" in r for r in reasons)

    hinge = Model([MarginLossTerm(X @ w, np.sign(y), "hinge"), Ridge(w, 1.0)])
    for solver in (NewtonCG(), LBFGS(), FISTA()):
        assert any("margin_loss" in r for r in solver.missing(hinge))
    with pytest.raises(UnsupportedProblemError, match="margin_loss"):
        NewtonCG().solve(hinge)


def test_fista_multipliers_follow_the_certificate_order():
    rng = np.random.default_rng(9)
    X, y = rng.standard_normal((30, 5)), rng.standard_normal(30)
    w, v = Variable("w", (5,)), Variable("v", (5, 2))
    model = Model([SquaredError(X @ w, y), SquaredError(v, rng.standard_normal((5, 2))),
                   L1(w, 3.0)], [NonNegative(v)])
    sol = FISTA().solve(model)
    u_l1, u_nonneg = sol.info["multipliers"]
    assert u_l1.shape == (5,) and u_nonneg.shape == (5, 2)
    assert np.all(np.abs(u_l1) <= 3.0 + 1e-12) and np.all(u_nonneg <= 1e-12)
    residuals = certificate_residual(model, sol.x, sol.info["multipliers"])
    assert residuals["stationarity"] <= 1e-8 and residuals["feasibility"] == 0.0
    assert relative_gap(sol.objective, reference(model).objective) <= 1e-6


# ------------------------------------------------------------------------- registry
@pytest.fixture
def registered():
    """The three solver modules in the plugin manager (unless the built-ins have them)."""
    import importlib

    added = []
    if "newton-cg" not in registry.solvers():
        for name in MODULES:
            module = importlib.import_module(name)
            ssl_opt.register_plugin(module, name=name)
            added.append(module)
    yield
    for module in added:
        registry.unregister_plugin(module)


def test_solve_by_name_through_the_registry(registered):
    model, closed = ridge_model(seed=10)
    for name in SOLVERS:
        sol = ssl_opt.solve(model, solver=name)
        assert sol.solver == name and sol.status == OPTIMAL
        np.testing.assert_allclose(sol.x["w"], closed, atol=1e-7)
