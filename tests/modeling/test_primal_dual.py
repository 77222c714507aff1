"""The generic primal–dual (``pdhg``) and entropic mirror (``mirror``) solvers of models,
against independent computations: the CVXPY reference (objective to 1e-6 relative and
``ssl_opt.certify``), an exact active-set solution of 1-D total-variation denoising (the dual
box-constrained least squares by BVLS), a CVXPY solve of one mirror step; plus honest statuses
(a wrong prox, an iteration cap) and the multipliers' layout."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import lsq_linear

import ssl_opt
from ssl_opt.builders.graphs import knn_graph
from ssl_opt.builders.kernels import rbf_kernel
from ssl_opt.builders.laplacian import laplacian
from ssl_opt.modeling import Model, Term, Variable
from ssl_opt.modeling.terms import (
    L1,
    Balance,
    Entropy,
    FixedRows,
    GraphQuadratic,
    GraphTV,
    GroupNorms,
    Linear,
    LinearScore,
    MarginLossTerm,
    QuadraticForm,
    Ridge,
    RKHSNorm,
    SimplexRows,
    SquaredError,
)
from ssl_opt.plugins.model.mirror import Mirror, entropic_step
from ssl_opt.plugins.model.pdhg import PDHG
from ssl_opt.plugins.model.pdhg_split import Split
from ssl_opt.solution import MAX_ITERATIONS, OPTIMAL

PDHG_SOLVER, MIRROR_SOLVER = PDHG(), Mirror()


def reference(model):
    ref = ssl_opt.solve(model, solver="cvxpy")
    assert ref.status == OPTIMAL
    return ref


def assert_matches(model, sol, ref, rel=1e-6):
    assert sol.status == OPTIMAL, sol.info.get("certificate")
    assert abs(sol.objective - ref.objective) <= rel * max(1.0, abs(ref.objective))
    cert = ssl_opt.certify(model, sol, reference=ref)
    assert cert.passed, cert.report()


# ------------------------------------------------------------------------- models
def chain(n):
    return sp.diags([np.ones(n - 1), np.ones(n - 1)], [1, -1]).tocsr()


def tv_denoising(n=60, lam=0.5, seed=0):
    rng = np.random.default_rng(seed)
    obs = np.repeat(rng.standard_normal(6), n // 6 + 1)[:n] + 0.3 * rng.standard_normal(n)
    f = Variable("f", (n,))
    return Model([SquaredError(f, obs, 0.5), GraphTV(f, chain(n), lam)]), obs


def kernel_model(n=40, balance=False, seed=1):
    """f = Kα + b: hinge on the labeled outputs, RKHS norm, graph quadratic and graph TV (an
    RBF kernel with eigenvalues down to ~1e-9: the case the RKHS metric is for)."""
    rng = np.random.default_rng(seed)
    l = 8
    X = np.vstack([rng.normal(-1, 1, (n // 2, 2)), rng.normal(1, 1, (n - n // 2, 2))])
    y = np.r_[-np.ones(n // 2), np.ones(n - n // 2)]
    perm = rng.permutation(n)
    X, y = X[perm], y[perm]
    K = rbf_kernel(X, sigma=1.0)
    W = knn_graph(X, 5)
    alpha, b = Variable("alpha", (n,)), Variable("b")
    f = K @ alpha + b
    terms = [MarginLossTerm(f[:l], y[:l], "hinge", 1.0 / l), RKHSNorm(alpha, K, 1e-2),
             GraphQuadratic(f, laplacian(W), 1e-2 / n), GraphTV(f, W, 1e-2 / n)]
    constraints = [Balance(f[l:], 0.1)] if balance else []
    return Model(terms, constraints, prediction=f)


def lass_model(n=40, c=3, entropy=0.0, fixed=False, seed=2):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2))
    G = rng.random((n, c)) * (rng.random((n, c)) < 0.4)
    Z = Variable("Z", (n, c))
    terms = [LinearScore(Z, G), GraphQuadratic(Z, laplacian(knn_graph(X, 5)), 0.5)]
    if entropy:
        terms.append(Entropy(Z, entropy))
    constraints = [SimplexRows(Z)]
    if fixed:
        constraints.append(FixedRows(Z, np.arange(4), np.eye(c)[rng.integers(0, c, 4)]))
    return Model(terms, constraints)


def group_regression(n=50, d=12, k=3, seed=3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    W_true = np.zeros((d, k))
    W_true[:3] = rng.standard_normal((3, k))
    Y = X @ W_true + 0.1 * rng.standard_normal((n, k))
    W = Variable("W", (d, k))
    return Model([SquaredError(X @ W, Y, 0.5 / n), GroupNorms(W, 0.05)])


# ------------------------------------------------------------------------- (a) TV denoising
def test_tv_denoising_matches_exact_dual_solution_and_reference():
    model, obs = tv_denoising()
    n = obs.size
    # Exact solution: f = obs − Dᵀu with u = argmin ½‖Dᵀu − obs‖², |u| ≤ λ (BVLS, active set).
    D = sp.diags([np.ones(n - 1), -np.ones(n - 1)], [0, 1], shape=(n - 1, n)).toarray()
    u = lsq_linear(D.T, obs, bounds=(-0.5, 0.5), method="bvls", tol=1e-14).x
    exact = obs - D.T @ u
    sol = PDHG_SOLVER.solve(model)
    assert sol.info["method"] == "pdhg"
    np.testing.assert_allclose(sol.x["f"], exact, atol=1e-6)
    assert_matches(model, sol, reference(model))
    # The multipliers: one array per non-smooth term (GraphTV's argument D f: n − 1 edges).
    (y,) = sol.info["multipliers"]
    assert y.shape == (n - 1,) and np.max(np.abs(y)) <= 0.5 + 1e-12


def test_restarts_and_preconditioning_options_reach_the_same_optimum():
    model, _ = tv_denoising(n=40)
    ref = reference(model)
    plain = PDHG_SOLVER.solve(model, restart=False)
    restarted = PDHG_SOLVER.solve(model)
    assert restarted.iterations < plain.iterations  # restarts pay (measured ~5× at n = 2000)
    for mode in ("elementwise", "blocks", "none"):
        assert_matches(model, PDHG_SOLVER.solve(model, precondition=mode), ref)


def test_elementwise_preconditioning_pays_on_badly_scaled_columns():
    """Least absolute deviations ``‖Xw − y‖₁/n`` (a non-smooth term on an affine map) with
    column scales 10^±1.5: row and column sums of |X| fix the scaling, block norms do not."""
    rng = np.random.default_rng(4)
    n, d = 200, 10
    scales = np.logspace(-1.5, 1.5, d)
    X = rng.standard_normal((n, d)) * scales
    y = X @ (rng.standard_normal(d) / scales) + rng.standard_normal(n)
    w = Variable("w", (d,))
    model = Model([L1(X @ w - y, 1.0 / n), Ridge(w, 1e-3)])
    sol = PDHG_SOLVER.solve(model, max_iter=8000)
    assert sol.info["precondition"] == "elementwise"
    assert_matches(model, sol, reference(model))
    # From the solver's multipliers or from zero (its LSQR refinement resolves the badly
    # conditioned directions of X), the certificate holds.
    assert max(model.kkt(sol).values()) <= 1e-6
    assert max(model.kkt(sol.x).values()) <= 1e-6
    blocks = PDHG_SOLVER.solve(model, max_iter=8000, precondition="blocks")
    assert blocks.status == MAX_ITERATIONS


# ------------------------------------------------------------------------- (b) kernel model
def test_kernel_model_with_hinge_and_graph_tv():
    model = kernel_model()
    assert set(Split(model).metric) == {"alpha"}  # the RKHS metric on α
    sol = PDHG_SOLVER.solve(model)
    assert_matches(model, sol, reference(model))
    mult = sol.info["multipliers"]
    assert [m.shape for m in mult] == [(8,), (len(Split(model).h[1].edge_weights),)]


def test_kernel_model_with_a_balance_constraint():
    model = kernel_model(balance=True)
    sol = PDHG_SOLVER.solve(model)
    assert_matches(model, sol, reference(model))
    assert len(sol.info["multipliers"]) == 3  # hinge, TV, then the constraint


def test_euclidean_metric_on_a_kernel_model_is_honest_at_its_cap():
    """Without the RKHS metric the iteration crawls (K's eigenvalues reach 1e-9): it must
    say so rather than report an optimum, and ``inexact`` says so when no RKHS term names K."""
    model = kernel_model()
    assert PDHG_SOLVER.inexact(model) == ""
    assert "RKHS" in PDHG_SOLVER.inexact(model.without("rkhs_norm"))
    sol = PDHG_SOLVER.solve(model, kernel_metric=False, max_iter=300)
    assert sol.status == MAX_ITERATIONS
    assert not ssl_opt.certify(model, sol, reference=reference(model)).passed


# ------------------------------------------------------------------------- (c) LASS-like
def test_lass_without_entropy_pdhg_matches_reference_and_mirror_is_inexact():
    model = lass_model()
    sol = PDHG_SOLVER.solve(model)
    assert sol.info["method"] == "fista"  # every non-smooth part on a whole variable
    assert_matches(model, sol, reference(model))
    assert "Entropy" in MIRROR_SOLVER.inexact(model)
    assert MIRROR_SOLVER.supports(model)


@pytest.mark.parametrize("mu", [0.05, 0.5])
def test_lass_with_entropy_mirror_matches_reference_and_pdhg(mu):
    model = lass_model(entropy=mu)
    assert MIRROR_SOLVER.inexact(model) == ""
    ref = reference(model)
    mirror = MIRROR_SOLVER.solve(model)
    assert_matches(model, mirror, ref)
    pdhg = PDHG_SOLVER.solve(model)
    assert_matches(model, pdhg, ref)
    np.testing.assert_allclose(mirror.x["Z"], pdhg.x["Z"], atol=1e-5)
    # Entropy's multiplier (its gradient), then SimplexRows' normal-cone element.
    u_ent, u_simplex = mirror.info["multipliers"]
    np.testing.assert_allclose(u_ent, mu * (np.log(mirror.x["Z"]) + 1.0))
    assert u_simplex.shape == mirror.x["Z"].shape


def test_mirror_with_fixed_rows():
    model = lass_model(entropy=0.05, fixed=True)
    assert "mirror" in PDHG_SOLVER.inexact(model)  # no dual solution for PDHG
    sol = MIRROR_SOLVER.solve(model)
    fixed = model.constraints[1]
    np.testing.assert_array_equal(sol.x["Z"][fixed.rows], fixed.values)
    assert_matches(model, sol, reference(model))


def test_mirror_anderson_acceleration_pays():
    model = lass_model(entropy=0.05)
    fast = MIRROR_SOLVER.solve(model)
    plain = MIRROR_SOLVER.solve(model, anderson=0, max_iter=fast.iterations)
    assert fast.status == OPTIMAL and plain.status == MAX_ITERATIONS


def test_a_vector_on_the_simplex():
    """One row: a quadratic (a PSD form) and a linear score over the simplex, with entropy."""
    rng = np.random.default_rng(6)
    B = rng.standard_normal((8, 8))
    z = Variable("z", (8,))
    model = Model([QuadraticForm(z, B @ B.T / 8), Linear(z, rng.standard_normal(8)),
                   Entropy(z, 0.05)], [SimplexRows(z)])
    ref = reference(model)
    assert_matches(model, MIRROR_SOLVER.solve(model), ref)
    assert_matches(model, PDHG_SOLVER.solve(model), ref)


def test_entropic_step_is_the_exact_minimizer():
    """``argmin_p ⟨g, p⟩ + μ Σ p log p + KL(p, z)/t`` over the simplex, by CVXPY."""
    rng = np.random.default_rng(4)
    z = rng.random(5)
    z /= z.sum()
    g, t, mu = rng.standard_normal(5), 0.7, 0.3
    p = cp.Variable(5)
    objective = g @ p - mu * cp.sum(cp.entr(p)) + (cp.sum(cp.kl_div(p, z))) / t
    cp.Problem(cp.Minimize(objective), [cp.sum(p) == 1]).solve(
        solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    step = np.exp(entropic_step(np.log(z)[None], g[None], t, mu))[0]
    np.testing.assert_allclose(step, p.value, atol=1e-8)
    assert abs(step.sum() - 1.0) < 1e-14


# ------------------------------------------------------------------------- (d) group lasso
def test_group_l21_regression():
    model = group_regression()
    sol = PDHG_SOLVER.solve(model)
    assert_matches(model, sol, reference(model))
    norms = np.linalg.norm(sol.x["W"], axis=1)
    assert np.sum(norms < 1e-9) >= 1  # whole rows at zero: the group structure


def test_group_penalty_on_an_affine_map_uses_the_dual_step():
    """The same group norm on ``I @ W`` is an h_k (not on a whole variable): the dual step by
    Moreau's identity must reach the same optimum."""
    base = group_regression()
    W = base["W"]
    model = Model([base.terms[0], GroupNorms(np.eye(W.shape[0]) @ W, 0.05)])
    sol = PDHG_SOLVER.solve(model)
    assert sol.info["method"] == "pdhg"
    assert_matches(model, sol, reference(base))


# ------------------------------------------------------------------------- honesty
class WrongProxL1(Term):
    """``w‖z‖₁`` whose prox thresholds at 2tw (wrong); value, CVXPY form and subdifferential
    are right."""

    name = "wrong_prox_l1"
    program_class = "LP"
    elementwise_prox = True

    def value(self, z):
        return float(self.weight * np.sum(np.abs(z)))

    def cvxpy(self, z):
        return self.weight * cp.norm1(z)

    def prox(self, v, t):
        return np.sign(v) * np.maximum(np.abs(v) - 2.0 * t * self.weight, 0.0)

    def project_subgradient(self, z, u, tol):
        w = self.weight
        return np.where(np.abs(z) <= tol, np.clip(u, -w, w), w * np.sign(z))


def test_a_wrong_prox_fails_the_certificate_instead_of_reporting_optimal():
    model, obs = tv_denoising(n=30)
    f = model["f"]
    n = obs.size
    D = sp.diags([np.ones(n - 1), -np.ones(n - 1)], [0, 1], shape=(n - 1, n)).tocsr()
    bad = Model([model.terms[0], WrongProxL1(D @ f, 0.5)])
    sol = PDHG_SOLVER.solve(bad, max_iter=3000)
    assert sol.status != OPTIMAL
    assert not ssl_opt.certify(bad, sol).passed


def test_iteration_cap_gives_an_honest_status():
    model, _ = tv_denoising()
    sol = PDHG_SOLVER.solve(model, max_iter=5)
    assert sol.status == MAX_ITERATIONS and sol.iterations == 5
    assert "certificate" in sol.info
    lass = lass_model(entropy=0.05)
    capped = MIRROR_SOLVER.solve(lass, max_iter=3, check_every=1)
    assert capped.status == MAX_ITERATIONS


def test_warm_start_from_a_solution_certifies_at_once():
    model = kernel_model()
    first = PDHG_SOLVER.solve(model)
    again = PDHG_SOLVER.solve(model, warm_start=first)
    assert again.status == OPTIMAL and again.iterations == 0
    lass = lass_model(entropy=0.05)
    m1 = MIRROR_SOLVER.solve(lass)
    m2 = MIRROR_SOLVER.solve(lass, warm_start=m1.x)
    assert m2.status == OPTIMAL and m2.iterations == 0
    # A start off the optimum (and with exact zeros) is iterated from, not returned.
    start = np.zeros(m1.x["Z"].shape)
    start[:, 0] = 1.0
    m3 = MIRROR_SOLVER.solve(lass, warm_start={"Z": start})
    assert m3.status == OPTIMAL and m3.iterations > 0
    np.testing.assert_allclose(m3.x["Z"], m1.x["Z"], atol=1e-6)


# ------------------------------------------------------------------------- structure
class ValueOnly(Term):
    name = "value_only"

    def value(self, z):
        return float(np.sum(np.abs(z)))

    def cvxpy(self, z):
        return cp.norm1(z)


def test_structure_reasons_name_the_blocking_term():
    f = Variable("f", (5,))
    model = Model([SquaredError(f, np.ones(5)), ValueOnly(f)])
    reasons = PDHG_SOLVER.missing(model)
    assert any("value_only" in r and "prox" in r for r in reasons)
    assert any("SimplexRows" in r for r in MIRROR_SOLVER.missing(model))
    Z = Variable("Z", (4, 3))
    tv = Model([LinearScore(Z, np.ones((4, 3))), GraphTV(Z, chain(4), 0.1)], [SimplexRows(Z)])
    assert any("graph_tv" in r for r in MIRROR_SOLVER.missing(tv))
    assert PDHG_SOLVER.supports(tv)


def test_predicted_time_is_analytic_and_finite():
    for model in (tv_denoising()[0], kernel_model(), lass_model(entropy=0.1)):
        for solver in (PDHG_SOLVER, MIRROR_SOLVER):
            if solver.supports(model):
                t = solver.predicted_time(model)
                assert np.isfinite(t) and 0 < t < 10
