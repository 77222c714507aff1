"""Certificates must be able to fail: perturbed points, truncated solves, NaNs."""

from __future__ import annotations

import numpy as np
import pytest

import ssl_opt
from ssl_opt.components import MarginLoss
from ssl_opt.problems import LapSVM
from ssl_opt.solution import Solution


@pytest.fixture
def moons(problem_factory):
    return problem_factory("moons", n=70)


def test_exact_solution_passes_and_report_names_checks(moons):
    sol = ssl_opt.solve(moons, solver="newton")
    cert = ssl_opt.certify(moons, sol)
    assert cert.passed
    assert cert.reference_solver == "cvxpy"
    assert cert.objective_gap < 1e-9
    text = cert.report()
    assert "PASSED" in text and "stationarity" in text and "objective_gap" in text


def test_perturbed_solution_fails(moons, rng):
    sol = ssl_opt.solve(moons, solver="newton")
    bad = {"alpha": sol.x["alpha"] + 1e-3 * rng.normal(size=moons.n), "b": sol.x["b"]}
    cert = ssl_opt.certify(moons, bad)
    assert not cert.passed
    assert any("stationarity" in r for r in cert.reasons)
    assert any("objective_gap" in r for r in cert.reasons)


def test_one_iteration_fails_with_status_note(moons):
    sol = ssl_opt.solve(moons, solver="pcg", max_iter=1)
    cert = ssl_opt.certify(moons, sol)
    assert not cert.passed
    assert any("max_iterations" in note for note in cert.notes)


def test_nan_fails_with_reason(moons):
    x = {"alpha": np.full(moons.n, np.nan), "b": np.array(0.0)}
    cert = ssl_opt.certify(moons, x)
    assert not cert.passed
    assert any("NaN" in r for r in cert.reasons)


def test_wrong_shape_is_an_input_error(moons):
    with pytest.raises(ValueError, match="alpha"):
        ssl_opt.certify(moons, {"alpha": np.zeros(3), "b": 0.0})


def test_hinge_certificate_uses_subdifferential(problem_factory):
    p = problem_factory("moons", loss="hinge", n=60)
    ref = ssl_opt.solve(p, solver="cvxpy")
    assert ssl_opt.certify(p, ref, reference=False).passed
    shifted = {"alpha": ref.x["alpha"], "b": ref.x["b"] + 0.05}
    cert = ssl_opt.certify(p, shifted, reference=ref)
    assert not cert.passed


def test_reference_over_budget_certified_on_residuals_alone(moons):
    sol = ssl_opt.solve(moons, solver="newton")
    cert = ssl_opt.certify(moons, sol, reference_budget=1e-9)
    assert cert.passed and cert.objective_gap is None and cert.residuals_only
    assert any("residuals alone" in note and "cvxpy" in note and "predicted" in note
               for note in cert.notes)


def test_reference_running_past_its_time_limit_is_stopped(problem_factory, monkeypatch):
    """A reference predicted within budget but slower than its limit (the cost model is off)
    is stopped, and the certificate falls back to the residuals and says why."""
    from ssl_opt import certificate

    problem = problem_factory("moons", n=150)
    sol = ssl_opt.solve(problem, solver="newton")
    assert certificate.reference_time_limit(60.0) == 125.0
    assert certificate.reference_time_limit(float("inf")) is None
    monkeypatch.setattr(certificate, "reference_time_limit", lambda budget: 1e-4)
    cert = ssl_opt.certify(problem, sol)
    assert cert.passed and cert.residuals_only and cert.objective_gap is None
    assert any("time limit" in note for note in cert.notes)


def test_tolerance_override_can_fail_a_pcg_solution(moons):
    sol = ssl_opt.solve(moons, solver="pcg", tol=1e-5)
    assert ssl_opt.certify(moons, sol, stationarity=1e-5).passed
    assert not ssl_opt.certify(moons, sol, stationarity=1e-13).passed


class ExpMarginLoss(MarginLoss):
    """A user-defined convex loss φ(m) = exp(−m) with value and CVXPY expression only."""

    name = "exp"

    def value(self, m):
        return np.exp(-m)

    def cvxpy(self, m):
        import cvxpy as cp

        return cp.exp(-m)


class SmoothExpLoss(ExpMarginLoss):
    unique_decision = True  # smooth: inferred from derivative()

    def derivative(self, m):
        return -np.exp(-m)

    def second_derivative(self, m):
        return np.exp(-m)


def test_user_loss_solved_by_reference_and_refused_by_fast(problem_factory):
    base = problem_factory("blobs", n=50)
    p = LapSVM(base.K, base.L, base.y, 0.1, 0.5, loss=ExpMarginLoss())
    ref = ssl_opt.solve(p)  # auto: small, so the reference
    assert ref.solver == "cvxpy" and ref.status == "optimal"
    cert = ssl_opt.certify(p, ref, reference=False)
    assert cert.passed and not cert.residuals  # non-smooth declaration: gap only, said so
    with pytest.raises(ssl_opt.UnsupportedProblemError, match="smooth loss"):
        ssl_opt.solve(p, solver="pcg")
    # Independent check of the reference optimum: it beats random nearby points.
    rng = np.random.default_rng(0)
    for _ in range(5):
        x = {"alpha": ref.x["alpha"] + 1e-3 * rng.normal(size=p.n), "b": ref.x["b"]}
        assert p.objective(x) >= ref.objective - 1e-9


def test_user_smooth_loss_runs_on_fast_solvers(problem_factory):
    base = problem_factory("blobs", n=50)
    p = LapSVM(base.K, base.L, base.y, 0.1, 0.5, loss=SmoothExpLoss())
    ref = ssl_opt.solve(p, backend="reference")
    for name in ("pcg", "newton"):
        sol = ssl_opt.solve(p, solver=name)
        cert = ssl_opt.certify(p, sol, reference=ref)
        assert cert.passed, cert.report()


def test_failed_solution_object_fails(moons):
    sol = Solution({"alpha": np.zeros(moons.n), "b": np.array(np.inf)}, np.nan, "failed", 0, 0.0,
                   "fast", "x")
    assert not ssl_opt.certify(moons, sol).passed
