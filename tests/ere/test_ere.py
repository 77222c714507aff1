"""ERE, LRL and sums of norms [004], docs/design.md §4.5: problems, the CVXPY reference, the IRLS
plugin, the certificate and the prediction helpers.

Every check compares against something computed *independently* of the code under test:
SOCPs and QPs written here with CVXPY from the dense similarity matrix (pairs i < j listed with
numpy, no incidence matrix or formulation shared with ``reference/ere.py``), closed forms
solved here with dense numpy least squares (not the normal equations the plugin uses), known
answers (block soft-thresholding, the weighted median of collinear points), finite
differences, and brute-force minimization over a grid of subgradients.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import f1_score

import ssl_opt
from ssl_opt.builders import knn_graph
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.plugins.ere.stopping import stopping_residuals
from ssl_opt.problems import ERE, LRL, SumOfNorms
from ssl_opt.problems.ere.examples import clusters_with_outliers, elongated_gaussians
from ssl_opt.reference.attempts import solve_until_optimal
from ssl_opt.solution import OPTIMAL

# ------------------------------------------------------------------------------------ helpers


def _rel(a, b):
    return abs(a - b) / max(1.0, abs(b))


def _dense(A):
    return A.toarray() if sp.issparse(A) else np.asarray(A, dtype=float)


def _np_objective(X, A, W, b, F, alpha, beta, robust):
    """[004 eqs. 8–9] with dense pairwise differences: ½ Σ_{i,j} A_ij ‖f_i − f_j‖ ..."""
    A = _dense(A)
    diff = np.linalg.norm(F[:, None, :] - F[None, :, :], axis=2)
    R = X @ W + b[None, :] - F
    if robust:
        return (0.5 * np.sum(A * diff) + alpha * np.linalg.norm(R, axis=1).sum()
                + beta * np.sum(W**2))
    return 0.5 * np.sum(A * diff**2) + alpha * np.sum(R**2) + beta * np.sum(W**2)


def _np_lrl_objective(X, A, Y, W, b, alpha, beta):
    A = _dense(A)
    L = np.diag(A.sum(1)) - A
    l = Y.shape[0]
    R = X[:l] @ W + b[None, :] - Y
    return np.trace(W.T @ X.T @ L @ X @ W) + alpha * np.sum(R**2) + beta * np.sum(W**2)


def _cvxpy_ere(X, A, Y, alpha, beta, robust=True):
    """The SOCP / QP of [004 eqs. 8–9] written here: one norm per pair i < j with A_ij > 0,
    pairs selected with dense 0/1 matrices."""
    A = _dense(A)
    n, d = X.shape
    l, c = Y.shape
    I, J = np.nonzero(np.triu(A, 1))
    Si = np.eye(n)[I]
    Sj = np.eye(n)[J]
    Fu = cp.Variable((n - l, c))
    W = cp.Variable((d, c))
    b = cp.Variable((1, c))
    F = cp.vstack([Y, Fu])
    Dif = Si @ F - Sj @ F
    R = X @ W + np.ones((n, 1)) @ b - F
    if robust:
        obj = (A[I, J] @ cp.norm(Dif, 2, axis=1) + alpha * cp.sum(cp.norm(R, 2, axis=1))
               + beta * cp.sum_squares(W))
    else:
        obj = (cp.sum(cp.multiply(A[I, J][:, None], cp.square(Dif))) + alpha * cp.sum_squares(R)
               + beta * cp.sum_squares(W))
    prob = cp.Problem(cp.Minimize(obj))
    # Clarabel at tolerances 1e-10 along the reference's retry ladder: one interior-point path
    # can end short of optimal by a CPU's rounding (reference/attempts.py).
    outcome = solve_until_optimal(prob, "CLARABEL", recover=lambda: (
        prob.value, {"F": np.vstack([Y, Fu.value]), "W": W.value, "b": b.value.ravel()}))
    return outcome.value


def _lstsq_squared_ere(X, A, Y, alpha, beta):
    """Squared ERE [004 eq. 8] as one dense linear least-squares problem in (F_u, W, b),
    all classes at once (same design matrix for every column)."""
    A = _dense(A)
    n, d = X.shape
    l, c = Y.shape
    u = n - l
    I, J = np.nonzero(np.triu(A, 1))
    sw = np.sqrt(A[I, J])[:, None]
    E = np.eye(n)
    Yc = np.vstack([Y, np.zeros((u, c))])
    # unknowns z = [F_u (u), w (d), b (1)] per class
    edge_rows = np.hstack([sw * (E[I] - E[J])[:, l:], np.zeros((I.size, d + 1))])
    edge_rhs = -sw * (Yc[I] - Yc[J])
    pt_rows = np.sqrt(alpha) * np.hstack([-E[:, l:], X, np.ones((n, 1))])
    pt_rhs = np.sqrt(alpha) * Yc
    reg_rows = np.sqrt(beta) * np.hstack([np.zeros((d, u)), np.eye(d), np.zeros((d, 1))])
    M = np.vstack([edge_rows, pt_rows, reg_rows])
    rhs = np.vstack([edge_rhs, pt_rhs, np.zeros((d, c))])
    z = np.linalg.lstsq(M, rhs, rcond=None)[0]
    return {"F": np.vstack([Y, z[:u]]), "W": z[u:u + d], "b": z[u + d]}


def _lstsq_lrl(X, A, Y, alpha, beta):
    """LRL [004 eq. 5] as dense least squares:
    ‖√A_e (x_i − x_j)ᵀW‖² + α‖X_lW + 1bᵀ − Y‖² + β‖W‖²."""
    A = _dense(A)
    n, d = X.shape
    l, c = Y.shape
    I, J = np.nonzero(np.triu(A, 1))
    sw = np.sqrt(A[I, J])[:, None]
    M = np.vstack([np.hstack([sw * (X[I] - X[J]), np.zeros((I.size, 1))]),
                   np.sqrt(alpha) * np.hstack([X[:l], np.ones((l, 1))]),
                   np.sqrt(beta) * np.hstack([np.eye(d), np.zeros((d, 1))])])
    rhs = np.vstack([np.zeros((I.size, c)), np.sqrt(alpha) * Y, np.zeros((d, c))])
    z = np.linalg.lstsq(M, rhs, rcond=None)[0]
    return {"W": z[:d], "b": z[d]}


#: (n, d, c, k, alpha, beta, outliers, seed, weights): small kinked instances with outliers;
#: heat-kernel weights to the outliers go down to ~1e-13 (a nearly disconnected graph).
CASES = {
    "n60-kinked": (60, 4, 3, 6, 1.0, 0.05, 0.1, 0, "binary"),
    "n80-heat": (80, 4, 3, 6, 1.0, 0.05, 0.1, 5, "heat"),
    "n100": (100, 4, 3, 8, 0.3, 0.01, 0.1, 1, "binary"),
    "n150": (150, 5, 4, 6, 3.0, 0.1, 0.1, 2, "binary"),
}


@cache
def _case(name, robust=True):
    n, d, c, k, alpha, beta, out, seed, weights = CASES[name]
    data = clusters_with_outliers(n=n, d=d, c=c, l_per_class=2, n_neighbors=k, outliers=out,
                                  weights=weights, seed=seed)
    return data, ERE(data.X, data.A, data.Y, alpha, beta, robust=robust)


@cache
def _reference(name, robust=True):
    data, problem = _case(name, robust)
    return _cvxpy_ere(data.X, data.A, data.Y, problem.alpha, problem.beta, robust)


@cache
def _irls(name, **options):
    return ssl_opt.solve(_case(name)[1], solver="irls", **options)


# ------------------------------------------------------------------ 0. evaluation vs numpy


@pytest.mark.parametrize("robust", [True, False])
def test_objective_matches_numpy(robust):
    data, problem = _case("n60-kinked", robust)
    rng = np.random.default_rng(0)
    F = np.vstack([data.Y, rng.random((problem.u, problem.c))])
    W, b = rng.standard_normal((problem.d, problem.c)), rng.standard_normal(problem.c)
    x = {"F": F, "W": W, "b": b}
    expected = _np_objective(data.X, data.A, W, b, F, problem.alpha, problem.beta, robust)
    assert _rel(problem.objective(x), expected) < 1e-12
    if robust:
        son = problem.as_sum_of_norms()
        assert _rel(son.objective({"x": problem.pack_vector(x)}), expected) < 1e-12
        back = problem.unpack_vector(problem.pack_vector(x))
        for key in x:
            np.testing.assert_array_equal(back[key], x[key])
    lrl = LRL(data.X, data.A, data.Y, problem.alpha, problem.beta)
    expected = _np_lrl_objective(data.X, data.A, data.Y, W, b, problem.alpha, problem.beta)
    assert _rel(lrl.objective({"W": W, "b": b}), expected) < 1e-12


def test_adjoint_forward_and_smoothed_gradient_by_finite_differences():
    """The groups' ``adjoint``/``forward`` are transposes, and ∇f + adjoint(g/√(‖g‖²+δ)) is
    the gradient of the smoothed objective (central differences)."""
    _, problem = _case("n60-kinked")
    groups = problem.groups
    rng = np.random.default_rng(1)
    nvar = problem.u * problem.c + (problem.d + 1) * problem.c
    z = rng.standard_normal(nvar)
    U = rng.standard_normal((problem.n_edges + problem.n, problem.c))
    assert _rel(np.sum(groups.forward(z) * U), z @ groups.adjoint(U)) < 1e-12
    x = problem.unpack_vector(rng.standard_normal(nvar))
    delta = 1e-2
    g = groups.values(problem.pack_vector(x))
    grad = np.zeros(nvar)
    uc, dc = problem.u * problem.c, problem.d * problem.c
    grad[uc:uc + dc] = 2 * problem.beta * x["W"].ravel()
    grad += groups.adjoint(g / np.sqrt((g**2).sum(1) + delta)[:, None])
    h = 1e-6
    x0 = problem.pack_vector(x)
    for _ in range(3):
        e = rng.standard_normal(nvar)
        fp = problem.smoothed_objective(problem.unpack_vector(x0 + h * e), delta)
        fm = problem.smoothed_objective(problem.unpack_vector(x0 - h * e), delta)
        assert abs((fp - fm) / (2 * h) - grad @ e) < 1e-6 * max(1.0, abs(grad @ e))


def test_structured_groups_equal_the_explicit_matrix():
    """ERE's structured groups (incidence and X) against the explicit G, h of
    ``as_sum_of_norms`` (built entry by entry): values, forward, adjoint, the per-coordinate
    norm scale, the smooth part; and the two certificates agree at the same point."""
    _, problem = _case("n80-heat")
    son = problem.as_sum_of_norms()
    rng = np.random.default_rng(11)
    nvar = son.n
    z, v = rng.standard_normal(nvar), rng.standard_normal(nvar)
    U = rng.standard_normal((son.m, son.k))
    G = son.G.toarray()
    w = np.concatenate([problem.edge_w, np.full(problem.n, problem.alpha)])
    np.testing.assert_allclose(problem.groups.weights, w, rtol=0, atol=0)
    np.testing.assert_allclose(problem.groups.values(z), (G @ z - son.h).reshape(son.m, son.k),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(problem.groups.forward(v),
                               w[:, None] * (G @ v).reshape(son.m, son.k), rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_allclose(problem.groups.adjoint(U), G.T @ (w[:, None] * U).ravel(),
                               rtol=1e-12, atol=1e-12)
    col = np.sqrt(np.add.reduceat(G**2, np.arange(0, son.m * son.k, son.k), axis=0))
    np.testing.assert_allclose(problem.groups.norm_scale, w @ col, rtol=1e-12)
    assert problem.groups.value_scale == son.groups.value_scale == 1.0
    assert _rel(problem.smooth_value(z), 0.5 * z @ (son.Q @ z)) < 1e-12
    np.testing.assert_allclose(problem.smooth_gradient_vector(z), son.Q @ z, rtol=1e-12)
    # IRLS's stopping test on either form at a kinked optimum (free multipliers), with and
    # without the solver's multipliers; and the two forms' model certificates agree
    sol = _irls("n80-heat")
    x = dict(sol.x, delta=np.array(1e-12))
    U = np.vstack([x["U_edges"], x["U_points"]])
    z = problem.pack_vector(x)
    for mine_values, generic_values in ((x, {"U": U, "delta": x["delta"]}),
                                        ({"delta": x["delta"]}, {"delta": x["delta"]})):
        mine = stopping_residuals(problem, z, mine_values)
        generic = stopping_residuals(son, z, generic_values)
        for name in ("subgradient", "kink_slack", "smoothed_stationarity"):
            assert _rel(mine[name], generic[name]) < 1e-9, (name, mine[name], generic[name])
    assert problem.kkt(sol)["stationarity"] < 1e-6
    assert son.kkt({"x": z})["stationarity"] < 1e-6


# ------------------------------------------------------------- 1. IRLS vs an independent SOCP


@pytest.mark.parametrize("name", list(CASES))
def test_irls_matches_independent_socp(name):
    data, problem = _case(name)
    p_star, x_star = _reference(name)
    sol = _irls(name)
    assert sol.status == OPTIMAL
    f = _np_objective(data.X, data.A, sol.x["W"], sol.x["b"], sol.x["F"], problem.alpha,
                      problem.beta, True)
    assert (f - p_star) / p_star < 1e-5
    assert f > p_star - 1e-7 * p_star  # cannot beat the optimum
    np.testing.assert_array_equal(sol.x["F"][: problem.l], data.Y)
    # W is unique (β‖W‖² strictly convex): close to the SOCP's.
    np.testing.assert_allclose(sol.x["W"], x_star["W"], atol=1e-3)
    cert = ssl_opt.certify(problem, sol)
    assert cert.passed, cert.report()


@pytest.mark.parametrize("name", list(CASES))
def test_irls_multipliers_certify_in_the_models_convention(name):
    """IRLS hands its multipliers to the model certificate (``info["multipliers"]``): the
    residual at those multipliers alone (no minimization over the subgradients, an upper
    bound) is within a few times the certificate's tolerance (IRLS's test counts a group at
    its kink relative to the largest group of either term, the certificate relative to its
    own term's), the full certificate passes, and a wrong scaling of them would not."""
    _, problem = _case(name)
    sol = _irls(name)
    at_multipliers = problem.kkt(sol, max_iter=0)
    assert at_multipliers["stationarity"] < 1e-5, at_multipliers
    assert at_multipliers["labels_fixed"] == 0.0
    assert problem.kkt(sol)["stationarity"] < 1e-6
    doubled = dict(sol.info, multipliers=[2.0 * u for u in sol.info["multipliers"]])
    assert problem.kkt(replace(sol, info=doubled), max_iter=0)["stationarity"] > 1e-3


@pytest.mark.parametrize("name", list(CASES))
def test_the_early_stopped_certificate_never_reports_below_its_target_falsely(name):
    """IRLS's model check (``stationarity(..., target=)``) stops its minimization once the
    residual as reported is below the target: at IRLS's optimum it reports what IRLS's stop
    required (1e-6) within 30 iterations; at a point off the optimum (F's free rows moved by
    1e-2) it cannot stop early and reports what the full minimization does, far above the
    target."""
    from types import SimpleNamespace

    from ssl_opt.modeling.stationarity import stationarity

    _, problem = _case(name)
    sol = _irls(name)
    early = stationarity(problem, sol, kink_tol=1e-5, max_iter=30, target=5e-7)
    assert early["stationarity"] <= 1e-6  # what IRLS's stop required of this check
    F = sol.x["F"].copy()
    F[problem.l:] += 1e-2 * np.random.default_rng(0).standard_normal(F[problem.l:].shape)
    off = dict(sol.x, F=F)
    point = SimpleNamespace(x=off, info=sol.info)
    full = stationarity(problem, point, kink_tol=1e-5)["stationarity"]
    stopped = stationarity(problem, point, kink_tol=1e-5, max_iter=30, target=5e-7)
    assert full > 1e-4 and stopped["stationarity"] >= full * (1 - 1e-9)


def test_irls_multipliers_certify_a_sum_of_norms():
    """The same for a SumOfNorms (a Weber point of 6 points in the plane, groups of 2)."""
    a = np.random.default_rng(3).standard_normal((6, 2))
    son = SumOfNorms(sp.csr_matrix((2, 2)), np.zeros(2), np.tile(np.eye(2), (6, 1)),
                     a.ravel(), 2, np.arange(1.0, 7.0))
    sol = ssl_opt.solve(son, solver="irls")
    assert sol.status == OPTIMAL
    assert son.kkt(sol, max_iter=0)["stationarity"] < 1e-6


def test_registered_reference_matches_independent_socp():
    data, problem = _case("n100")
    ref = ssl_opt.solve(problem, solver="cvxpy")
    p_star, _ = _reference("n100")
    assert _rel(ref.objective, p_star) < 1e-8
    assert ref.status == OPTIMAL


def test_richardson_extrapolated_point_is_certified_and_optimal():
    """n = 300: the default stops at the √δ-extrapolation of two stage ends, within 1e-8 of an
    independent SOCP, carrying no δ; without extrapolation it takes more steps."""
    data = clusters_with_outliers(n=300, d=5, c=4, l_per_class=2, n_neighbors=8, outliers=0.05,
                                  seed=2)
    problem = ERE(data.X, data.A, data.Y, 1.0, 0.05)
    p_star, _ = _cvxpy_ere(data.X, data.A, data.Y, 1.0, 0.05)
    sol = ssl_opt.solve(problem, solver="irls")
    assert sol.status == OPTIMAL and sol.info["extrapolated"]
    assert "delta" not in sol.x
    assert abs(sol.objective - p_star) / p_star < 1e-8
    assert "extrapolated_objective" in sol.history.columns
    assert ssl_opt.certify(problem, sol, reference=False).passed
    plain = ssl_opt.solve(problem, solver="irls", extrapolate=False)
    assert plain.status == OPTIMAL and not plain.info["extrapolated"]
    assert plain.iterations > sol.iterations
    assert abs(plain.objective - p_star) / p_star < 1e-6


def test_plain_irls_is_slower_than_the_accelerated_default():
    """Plain IRLS [004 Alg. 2] (fixed small δ, no acceleration) reaches the same optimum with
    many more steps on the kinked instance."""
    _, problem = _case("n60-kinked")
    p_star, _ = _reference("n60-kinked")
    plain = ssl_opt.solve(problem, solver="irls", anderson=0, max_iter=20_000)
    fast = _irls("n60-kinked")
    assert (plain.objective - p_star) / p_star < 1e-5
    assert fast.iterations * 3 < plain.iterations


@pytest.mark.parametrize("options", [{"anderson": 0}, {"anderson": 10, "continuation": True}])
def test_smoothed_objective_is_monotone_within_each_stage(options):
    _, problem = _case("n100")
    sol = ssl_opt.solve(problem, solver="irls", **options)
    h = sol.history
    delta, phi_s = h["delta"], h["smoothed_objective"]
    assert {"objective", "smoothed_objective", "delta", "residual", "time"} <= set(h.columns)
    same = delta[1:] == delta[:-1]
    inc = (phi_s[1:] - phi_s[:-1])[same]
    assert np.all(inc <= 1e-12 * np.abs(phi_s[1:][same])), inc.max()
    assert sol.info["monotone_violations"] == 0
    assert np.all(h["monotone"] == 1)
    # recomputed from the problem: the recorded smoothed objective is φ_δ at the iterates' δ
    assert np.all(phi_s >= h["objective"] - 1e-9)
    if options.get("continuation"):
        assert np.unique(delta).size > 3


def test_structured_ere_equals_generic_sum_of_norms():
    _, problem = _case("n60-kinked")
    son = problem.as_sum_of_norms()
    structured = _irls("n60-kinked")
    generic = ssl_opt.solve(son, solver="irls")
    assert generic.status == OPTIMAL
    assert _rel(generic.objective, structured.objective) < 1e-6
    back = problem.unpack_vector(generic.x["x"])
    np.testing.assert_allclose(back["W"], structured.x["W"], atol=1e-3)
    # and the generic SOCP reference agrees with the structured one
    ref = ssl_opt.solve(son, solver="cvxpy")
    assert _rel(ref.objective, _reference("n60-kinked")[0]) < 1e-7


def test_linear_solvers_agree():
    _, problem = _case("n100")
    cg = ssl_opt.solve(problem, solver="irls", linear_solver="cg")
    factor = _irls("n100")
    assert cg.info["linear_solver"] == "cg" and factor.info["linear_solver"] == "factor"
    assert cg.status == OPTIMAL
    assert _rel(cg.objective, factor.objective) < 1e-6


@pytest.mark.parametrize("linear_solver", ["factor", "cg"])
def test_linear_solver_paths_reach_the_socp_optimum(linear_solver):
    _, problem = _case("n150")
    sol = ssl_opt.solve(problem, solver="irls", linear_solver=linear_solver)
    assert sol.status == OPTIMAL and sol.info["linear_solver"] == linear_solver
    assert _rel(sol.objective, _reference("n150")[0]) < 1e-7


def test_single_class_ere_is_certified_at_its_constant_optimum():
    """One class (every label 1): F ≡ 1, W = 0, b = 1 has objective 0 and every group at its
    kink. IRLS's squared-norm start is that point; it must be certified, not iterated on."""
    data = clusters_with_outliers(n=120, d=4, c=1, l_per_class=3, n_neighbors=6,
                                  outliers=0.05, seed=1)
    problem = ERE(data.X, data.A, data.Y, 1.0, 0.05)
    sol = ssl_opt.solve(problem, solver="irls")
    assert sol.status == OPTIMAL
    assert abs(sol.objective) < 1e-9  # the closed-form optimum is 0
    np.testing.assert_allclose(sol.x["F"], 1.0, atol=1e-9)
    assert ssl_opt.certify(problem, sol, reference=False).passed


def test_warm_start_from_the_optimum_stops_quickly():
    _, problem = _case("n100")
    sol = _irls("n100")
    again = ssl_opt.solve(problem, solver="irls", warm_start=sol)
    assert again.status == OPTIMAL
    assert again.iterations < sol.iterations


def test_max_iterations_returns_best_iterate_with_honest_status():
    _, problem = _case("n60-kinked")
    sol = ssl_opt.solve(problem, solver="irls", max_iter=5)
    assert sol.status == "max_iterations"
    assert sol.objective == pytest.approx(np.min(sol.history["objective"]), rel=1e-12)
    cert = ssl_opt.certify(problem, sol, reference=False)
    assert not cert.passed


# ------------------------------------------------------- 2. squared ERE and LRL closed forms


def test_squared_ere_matches_dense_least_squares_and_cvxpy():
    data, problem = _case("n60-kinked", robust=False)
    sol = ssl_opt.solve(problem, solver="irls")
    ls = _lstsq_squared_ere(data.X, data.A, data.Y, problem.alpha, problem.beta)
    for key in ("F", "W", "b"):
        np.testing.assert_allclose(sol.x[key], ls[key], atol=1e-8)
    p_star, _ = _reference("n60-kinked", robust=False)
    assert _rel(sol.objective, p_star) < 1e-8
    assert problem.kkt(sol.x)["stationarity"] < 1e-10
    assert ssl_opt.certify(problem, sol).passed


def test_lrl_matches_dense_least_squares_and_cvxpy():
    data, _ = _case("n100")
    problem = LRL(data.X, data.A, data.Y, 0.3, 0.01)
    sol = ssl_opt.solve(problem, solver="irls")
    ls = _lstsq_lrl(data.X, data.A, data.Y, 0.3, 0.01)
    np.testing.assert_allclose(sol.x["W"], ls["W"], atol=1e-8)
    np.testing.assert_allclose(sol.x["b"], ls["b"], atol=1e-8)
    ref = ssl_opt.solve(problem, solver="cvxpy")
    assert _rel(ref.objective, sol.objective) < 1e-8
    assert problem.kkt(sol.x)["stationarity"] < 1e-10
    W = sol.x["W"] + 1e-3
    assert problem.kkt({"W": W, "b": sol.x["b"]})["stationarity"] > 1e-5


def test_lrl_is_a_named_model_the_generic_solvers_take_as_it_is():
    """LRL is a Model of its three terms: their sum is the objective, the generic solvers
    reach the dense least-squares optimum with no lowering, and they certify."""
    from ssl_opt.modeling import Model

    data, _ = _case("n100")
    problem = LRL(data.X, data.A, data.Y, 0.3, 0.01)
    assert isinstance(problem, Model)
    ls = _lstsq_lrl(data.X, data.A, data.Y, 0.3, 0.01)
    assert _rel(sum(t.value(t.argument.value(ls)) for t in problem.terms),
                problem.objective(ls)) < 1e-12
    for name in ("irls-mm", "newton-cg"):
        sol = ssl_opt.solve(problem, solver=name)
        assert sol.status == OPTIMAL and "lowered_to" not in sol.info, name
        np.testing.assert_allclose(sol.x["W"], ls["W"], atol=1e-6)
        assert ssl_opt.certify(problem, sol).passed, name


def _np_laplacian(A):
    A = _dense(A)
    return np.diag(A.sum(axis=1)) - A


def _directional_differences(objective, x, grad, rng, h=1e-4):
    """Central differences of ``objective`` at ``x`` along a random unit direction per
    variable against ``⟨grad, direction⟩``: the largest disagreement relative to
    ``max(1, |f(x)|)`` (exact up to round-off on a quadratic)."""
    scale = max(1.0, abs(objective(x)))
    worst = 0.0
    for key, value in x.items():
        d = rng.standard_normal(np.shape(value))
        d /= np.linalg.norm(d)
        fd = (objective({**x, key: value + h * d}) - objective({**x, key: value - h * d})) / (2 * h)
        worst = max(worst, abs(fd - np.sum(grad[key] * d)) / scale)
    return worst


@pytest.mark.parametrize("sparse_X", [False, True])
def test_squared_ere_gradient_against_numpy_and_finite_differences(sparse_X):
    """The gradient of [004 eq. 8] in every entry of F (the labeled rows too), W and b from
    the formula with a dense Laplacian built here (``½ Σ_{i,j} A_ij ‖f_i − f_j‖²`` has
    ``∇_F = 2LF``), central differences of the numpy objective, and a zero gradient in
    ``(F_u, W, b)`` at the dense least-squares optimum; robust ERE has no gradient."""
    data, robust = _case("n60-kinked")
    X = sp.csr_matrix(data.X) if sparse_X else data.X
    alpha, beta = robust.alpha, robust.beta
    problem = ERE(X, data.A, data.Y, alpha, beta, robust=False)
    rng = np.random.default_rng(4)
    n, d, c, l = problem.n, problem.d, problem.c, problem.l
    x = {"F": rng.standard_normal((n, c)), "W": rng.standard_normal((d, c)),
         "b": rng.standard_normal(c)}
    R = data.X @ x["W"] + x["b"][None, :] - x["F"]
    expected = {"F": 2 * _np_laplacian(data.A) @ x["F"] - 2 * alpha * R,
                "W": 2 * alpha * data.X.T @ R + 2 * beta * x["W"],
                "b": 2 * alpha * R.sum(axis=0)}
    grad = problem.gradient(x)
    assert set(grad) == set(expected)
    for key, value in expected.items():
        assert grad[key].shape == value.shape
        np.testing.assert_allclose(grad[key], value, rtol=1e-11, atol=1e-11)

    def objective(v):
        return _np_objective(data.X, data.A, v["W"], v["b"], v["F"], alpha, beta, False)

    assert _directional_differences(objective, x, grad, rng) < 1e-9
    ls = _lstsq_squared_ere(data.X, data.A, data.Y, alpha, beta)
    at_optimum = problem.gradient(ls)
    free = np.concatenate([at_optimum["F"][l:].ravel(), at_optimum["W"].ravel(),
                           at_optimum["b"]])
    assert np.abs(free).max() < 1e-9
    assert np.abs(at_optimum["F"][:l]).max() > 1e-3  # F_l = Y is held, not optimal
    with pytest.raises(NotImplementedError, match="not smooth"):
        robust.gradient(x)


def test_lrl_gradient_against_numpy_finite_differences_and_least_squares():
    """The gradient of [004 eq. 5] from the formula with a dense Laplacian built here,
    central differences of the numpy objective, twice the residual of the normal equations,
    and zero at the dense least-squares optimum."""
    data, _ = _case("n100")
    alpha, beta = 0.3, 0.01
    problem = LRL(data.X, data.A, data.Y, alpha, beta)
    rng = np.random.default_rng(5)
    X, l = data.X, problem.l
    x = {"W": rng.standard_normal((problem.d, problem.c)), "b": rng.standard_normal(problem.c)}
    Rl = X[:l] @ x["W"] + x["b"][None, :] - data.Y
    expected = {"W": (2 * X.T @ _np_laplacian(data.A) @ X @ x["W"] + 2 * alpha * X[:l].T @ Rl
                      + 2 * beta * x["W"]),
                "b": 2 * alpha * Rl.sum(axis=0)}
    grad = problem.gradient(x)
    assert set(grad) == set(expected)
    for key, value in expected.items():
        assert grad[key].shape == value.shape
        scale = max(1.0, np.abs(value).max())
        np.testing.assert_allclose(grad[key], value, rtol=1e-11, atol=1e-12 * scale)

    def objective(v):
        return _np_lrl_objective(X, data.A, data.Y, v["W"], v["b"], alpha, beta)

    assert _directional_differences(objective, x, grad, rng) < 1e-9
    H, rhs = problem.normal_equations()  # ∇ = 2(H [W; bᵀ] − R)
    residual = 2 * (H @ np.vstack([x["W"], x["b"][None, :]]) - rhs)
    np.testing.assert_allclose(np.vstack([grad["W"], grad["b"][None, :]]), residual,
                               rtol=1e-11, atol=1e-12 * max(1.0, np.abs(residual).max()))
    at_optimum = problem.gradient(_lstsq_lrl(X, data.A, data.Y, alpha, beta))
    assert max(np.abs(g).max() for g in at_optimum.values()) < 1e-9


# --------------------------------------------------------------- 3. user-declared sums of norms


def test_group_lasso_block_soft_thresholding():
    """½‖x − y‖² + λ Σ_g ‖x_g‖: x_g = max(0, 1 − λ/‖y_g‖) y_g (known answer), some groups 0."""
    rng = np.random.default_rng(3)
    k, m, lam = 3, 8, 1.5
    y = rng.standard_normal(k * m) * np.repeat(rng.uniform(0.2, 2.0, m), k)
    son = SumOfNorms(sp.identity(k * m), -y, sp.identity(k * m), np.zeros(k * m), k,
                     np.full(m, lam))
    sol = ssl_opt.solve(son, solver="irls")
    Yg = y.reshape(m, k)
    shrink = np.maximum(0.0, 1 - lam / np.linalg.norm(Yg, axis=1))[:, None] * Yg
    assert sol.status == OPTIMAL
    assert (np.linalg.norm(Yg, axis=1) <= lam).sum() >= 2  # a kinked instance
    np.testing.assert_allclose(sol.x["x"], shrink.ravel(), atol=1e-5)
    ref = ssl_opt.solve(son, solver="cvxpy")
    np.testing.assert_allclose(ref.x["x"], shrink.ravel(), atol=1e-6)
    assert ssl_opt.certify(son, sol, reference=ref).passed


def test_weighted_median_on_a_line_and_weber_point_vs_cvxpy():
    """Σ w_i ‖x − a_i‖ with collinear a_i: the weighted median (a kink at a data point)."""
    a = np.array([[0.0, 0.0], [1.0, 0.0], [2.5, 0.0], [4.0, 0.0], [7.0, 0.0]])
    w = np.array([1.0, 1.0, 3.0, 1.0, 1.0])
    son = SumOfNorms(sp.csr_matrix((2, 2)), np.zeros(2), np.tile(np.eye(2), (5, 1)), a.ravel(),
                     2, w)
    sol = ssl_opt.solve(son, solver="irls")
    assert sol.status == OPTIMAL
    np.testing.assert_allclose(sol.x["x"], [2.5, 0.0], atol=1e-6)
    # A Weber point in general position against a CVXPY program written here.
    rng = np.random.default_rng(4)
    pts = rng.standard_normal((9, 3))
    ww = rng.uniform(0.5, 2.0, 9)
    son = SumOfNorms(sp.csr_matrix((3, 3)), np.zeros(3), np.tile(np.eye(3), (9, 1)), pts.ravel(),
                     3, ww)
    z = cp.Variable(3)
    prob = cp.Problem(cp.Minimize(sum(ww[i] * cp.norm(z - pts[i]) for i in range(9))))
    prob.solve(solver="CLARABEL")
    sol = ssl_opt.solve(son, solver="irls")
    assert _rel(sol.objective, prob.value) < 1e-7
    np.testing.assert_allclose(sol.x["x"], z.value, atol=1e-4)


# ------------------------------------------------------------------------- 4. certificates


def test_kkt_small_at_optimum_and_large_when_perturbed():
    """The model certificate and IRLS's stopping test at the independent SOCP's optimum and at
    perturbed points."""
    _, problem = _case("n100")
    _, x_star = _reference("n100")
    res = problem.kkt(x_star)
    assert res["labels_fixed"] == res["feasibility"] == 0.0
    assert res["stationarity"] < 1e-5  # an interior point's kinked groups are ~1e-7, not 0
    test = stopping_residuals(problem, problem.pack_vector(x_star))
    assert test["subgradient"] < 1e-5 and test["kink_slack"] < 1e-6
    rng = np.random.default_rng(5)
    bad = dict(x_star)
    bad["F"] = x_star["F"] + np.vstack([np.zeros_like(problem.Y),
                                        1e-2 * rng.standard_normal((problem.u, problem.c))])
    assert problem.kkt(bad)["stationarity"] > 1e-3
    assert stopping_residuals(problem, problem.pack_vector(bad))["subgradient"] > 1e-3
    bad = dict(x_star, W=x_star["W"] + 1e-2)
    assert problem.kkt(bad)["stationarity"] > 1e-3
    assert stopping_residuals(problem, problem.pack_vector(bad))["subgradient"] > 1e-3
    bad = dict(x_star, F=x_star["F"].copy())
    bad["F"][0, 0] += 0.5
    res = problem.kkt(bad)
    assert res["labels_fixed"] == res["feasibility"] == 0.5 / np.abs(bad["F"]).max()


def test_subgradient_residual_at_a_kink_matches_brute_force():
    """Weber problem at x = a_k (a kink): the residual is min over ‖u‖ ≤ 1 of
    ‖s + w_k u‖_∞ / scale with s = Σ_{i≠k} w_i (x − a_i)/‖x − a_i‖; checked on a grid of u
    (the certificate minimizes the 2-norm, so its value lies between the ∞-norm minimum and
    the ∞-norm at the 2-norm minimizer u = −s/‖s‖)."""
    a = np.array([[0.0, 0.0], [3.0, 0.5], [1.0, 2.0], [-1.0, 1.5]])
    for wk in (0.5, 5.0):  # not optimal / optimal at a_0
        w = np.array([wk, 1.0, 1.0, 1.0])
        son = SumOfNorms(sp.csr_matrix((2, 2)), np.zeros(2), np.tile(np.eye(2), (4, 1)),
                         a.ravel(), 2, w)
        x = a[0]
        d = x - a[1:]
        s = (w[1:, None] * d / np.linalg.norm(d, axis=1)[:, None]).sum(0)
        scale = max(1.0, w.sum())
        t = np.linspace(0, 2 * np.pi, 721)
        r = np.linspace(0, 1, 201)
        U = (r[:, None, None] * np.stack([np.cos(t), np.sin(t)], -1)[None]).reshape(-1, 2)
        grid = np.abs(s + wk * U).max(axis=1).min() / scale
        at_2norm = np.abs(s * max(0.0, 1 - wk / np.linalg.norm(s))).max() / scale
        res = stopping_residuals(son, x)["subgradient"]
        assert grid - wk / 200 / scale - 1e-3 <= res <= at_2norm + 1e-8  # grid step wk/200
        if wk >= np.linalg.norm(s):
            assert res < 1e-8
            assert son.kkt({"x": x})["stationarity"] < 1e-8
        else:
            assert res > 0.1
            assert son.kkt({"x": x})["stationarity"] > 0.1 / 4  # one scale, not per coordinate


# --------------------------------------------------------------------- 5. robustness (toy)


def _angle(W, true):
    w = W[:, 0] - W[:, 1]
    return np.degrees(np.arccos(min(1.0, abs(w @ true) / np.linalg.norm(w))))


def test_toy_example_ere_recovers_the_direction_lrl_does_not():
    """[004 Fig. 1]: two elongated Gaussians with outliers along the separating direction.
    Angles from programs solved here: the SOCP for ERE, dense least squares for LRL."""
    data, true = elongated_gaussians()
    _, x_ere = _cvxpy_ere(data.X, data.A, data.Y, 0.3, 0.01)
    x_lrl = _lstsq_lrl(data.X, data.A, data.Y, 0.3, 0.01)
    assert np.linalg.norm(x_ere["W"]) > 0.1
    assert _angle(x_ere["W"], true) < 1.0
    assert _angle(x_lrl["W"], true) > 20.0
    sol = ssl_opt.solve(ERE(data.X, data.A, data.Y, 0.3, 0.01), solver="irls")
    assert _angle(sol.x["W"], true) < 1.0


# ------------------------------------------------------------------ 6. prediction helpers


def test_prediction_helpers_against_numpy():
    data = clusters_with_outliers(n=80, d=3, c=3, l_per_class=3, outliers=0.0, n_neighbors=6,
                                  multilabel=True, seed=6)
    problem = ERE(data.X, data.A, data.Y, 1.0, 0.05)
    rng = np.random.default_rng(7)
    x = {"F": np.vstack([data.Y, rng.random((problem.u, 3))]),
         "W": rng.standard_normal((3, 3)), "b": rng.standard_normal(3)}
    np.testing.assert_array_equal(problem.predict(x), np.argmax(x["F"], axis=1))
    S = data.X @ x["W"] + x["b"]
    tau = np.array([S[: problem.l][data.Y[:, k] == 1, k].mean() for k in range(3)])
    np.testing.assert_allclose(problem.thresholds(x), tau, rtol=1e-12)
    np.testing.assert_array_equal(problem.predict(x, multilabel=True), (x["F"] >= tau) * 1)
    X_new = rng.standard_normal((5, 3))
    np.testing.assert_allclose(problem.model_scores(x, X_new), X_new @ x["W"] + x["b"])
    np.testing.assert_array_equal(problem.predict(x, X_new=X_new),
                                  np.argmax(X_new @ x["W"] + x["b"], axis=1))
    np.testing.assert_array_equal(problem.predict(x, X_new=X_new, multilabel=True),
                                  (X_new @ x["W"] + x["b"] >= tau) * 1)
    lrl = LRL(data.X, data.A, data.Y, 1.0, 0.05)
    np.testing.assert_allclose(lrl.scores(x), S)
    # a class without labeled positives is never assigned
    Y = data.Y.copy()
    Y[:, 2] = 0
    p2 = ERE(data.X, data.A, Y, 1.0, 0.05)
    assert np.isinf(p2.thresholds(x)[2])
    assert not p2.predict(x, multilabel=True)[:, 2].any()


def test_multilabel_f1_ere_vs_lrl_runs():
    data = clusters_with_outliers(n=150, d=4, c=3, l_per_class=5, outliers=0.05, n_neighbors=8,
                                  multilabel=True, seed=8)
    ere = ERE(data.X, data.A, data.Y, 1.0, 0.05)
    lrl = LRL(data.X, data.A, data.Y, 1.0, 0.05)
    s_ere = ssl_opt.solve(ere, solver="irls")
    s_lrl = ssl_opt.solve(lrl, solver="irls")
    truth = data.Y_all[ere.l:].astype(int)
    for problem, sol in ((ere, s_ere), (lrl, s_lrl)):
        pred = problem.predict(sol.x, multilabel=True)[problem.l:]
        assert pred.shape == truth.shape
        assert f1_score(truth, pred, average="micro") > 0.5


# ------------------------------------------------------------------------- 7. bad input


@pytest.fixture(scope="module")
def parts():
    data = clusters_with_outliers(n=20, d=2, c=2, l_per_class=2, outliers=0.0, n_neighbors=4)
    return data.X, _dense(data.A), data.Y


@pytest.mark.parametrize(
    "mutate, match",
    [
        (lambda X, A, Y: (X[:19], A, Y), "A must be n x n"),
        (lambda X, A, Y: (X, A[:19, :19], Y), "A must be n x n"),
        (lambda X, A, Y: (np.where(X > 1, np.nan, X), A, Y), "X contains NaN"),
        (lambda X, A, Y: (X, np.where(A > 0, np.nan, A), Y), "A contains NaN"),
        (lambda X, A, Y: (X, A + np.triu(np.ones_like(A), 1), Y), "A must be symmetric"),
        (lambda X, A, Y: (X, A - 2 * (A > 0), Y), "A must be non-negative"),
        (lambda X, A, Y: (X, A + np.eye(20), Y), "A has 20 nonzero diagonal"),
        (lambda X, A, Y: (X, A, 2 * Y), "Y must hold only 0 and 1"),
        (lambda X, A, Y: (X, A, Y[:, 0]), "Y must be 2-D"),
        (lambda X, A, Y: (X, A, np.zeros((0, 2))), "Y is empty"),
        (lambda X, A, Y: (X, A, np.ones((21, 2))), "only n = 20 points"),
        (lambda X, A, Y: (X, A, np.where(Y > 0, np.nan, Y)), "Y contains NaN"),
        (lambda X, A, Y: (X[:, 0], A, Y), "X must be 2-D"),
    ],
)
@pytest.mark.parametrize("cls", [ERE, LRL])
def test_bad_data(parts, mutate, match, cls):
    X, A, Y = mutate(*parts)
    with pytest.raises(InvalidInputError, match=match):
        cls(X, A, Y, 1.0, 0.1)


@pytest.mark.parametrize("name, value", [("alpha", 0.0), ("alpha", -1.0), ("beta", 0),
                                         ("beta", np.nan), ("alpha", "1"), ("beta", True)])
def test_bad_parameters(parts, name, value):
    kwargs = {"alpha": 1.0, "beta": 0.1, name: value}
    with pytest.raises(InvalidInputError, match=name):
        ERE(*parts, **kwargs)
    with pytest.raises(InvalidInputError, match="robust"):
        ERE(*parts, 1.0, 0.1, robust="yes")


def test_bad_sum_of_norms_and_options(parts):
    I2 = np.eye(2)
    with pytest.raises(InvalidInputError, match="group_size"):
        SumOfNorms(I2, np.zeros(2), I2, np.zeros(2), 0)
    with pytest.raises(InvalidInputError, match="multiple of group_size"):
        SumOfNorms(I2, np.zeros(2), np.eye(3, 2), np.zeros(3), 2)
    with pytest.raises(InvalidInputError, match="weights must be >= 0"):
        SumOfNorms(I2, np.zeros(2), I2, np.zeros(2), 1, [1.0, -1.0])
    with pytest.raises(InvalidInputError, match="Q must be positive semidefinite"):
        SumOfNorms(-I2, np.zeros(2), I2, np.zeros(2), 1)
    with pytest.raises(InvalidInputError, match="G must have n = 2 columns"):
        SumOfNorms(I2, np.zeros(2), np.eye(2, 3), np.zeros(2), 1)
    with pytest.raises(InvalidInputError, match="h must have shape"):
        SumOfNorms(I2, np.zeros(2), I2, np.zeros(3), 1)
    problem = ERE(*parts, 1.0, 0.1)
    with pytest.raises(InvalidInputError, match="unknown option"):
        ssl_opt.solve(problem, solver="irls", tolerance=1e-3)
    for option, value in [("anderson", -1), ("delta_factor", 1.0), ("tol", 0.0),
                          ("linear_solver", "lu"), ("max_iter", 0), ("continuation", "no"),
                          ("delta_floor", 1e-6), ("verbose", "yes")]:
        with pytest.raises(InvalidInputError, match=option):
            ssl_opt.solve(problem, solver="irls", **{option: value})
    with pytest.raises(InvalidInputError, match="robust ERE only"):
        ERE(*parts, 1.0, 0.1, robust=False).as_sum_of_norms()
    with pytest.raises(InvalidInputError, match="X_new must have d = 2"):
        problem.model_scores({"F": np.zeros((20, 2)), "W": np.zeros((2, 2)), "b": np.zeros(2)},
                             np.zeros((3, 5)))


def test_problem_is_immutable_and_sparse_inputs(parts):
    X, A, Y = parts
    p = ERE(X, sp.csr_matrix(A), Y, 1.0, 0.1)
    with pytest.raises(AttributeError, match="immutable"):
        p.alpha = 2.0
    dense = ERE(X, A, Y, 1.0, 0.1)
    assert dense.n_edges == p.n_edges
    assert knn_graph(X, 3).shape == (20, 20)


# ------------------------------------------------------------- 8. review regressions


def _chain(n):
    """A path graph on points of the unit interval, its two ends labeled (rows 0 and 1)."""
    pos = np.linspace(0.0, 1.0, n)
    order = np.concatenate([[0, n - 1], np.arange(1, n - 1)])
    rank = np.empty(n, dtype=int)
    rank[order] = np.arange(n)
    i, j = rank[np.arange(n - 1)], rank[np.arange(1, n)]
    A = sp.csr_matrix((np.ones(2 * (n - 1)), (np.r_[i, j], np.r_[j, i])), shape=(n, n))
    return pos[order][:, None], A, np.eye(2)


def test_squared_ere_with_capped_cg_does_not_claim_optimal():
    """An ill-conditioned chain (α = 1e-6): block CG stops at its cap. The status must follow
    the problem's own stationarity, compared with the factor path's solution."""
    X, A, Y = _chain(3000)
    p = ERE(X, A, Y, 1e-6, 1e-3, robust=False)
    exact = ssl_opt.solve(p, solver="irls", linear_solver="factor")
    cg = ssl_opt.solve(p, solver="irls", linear_solver="cg")
    assert exact.status == OPTIMAL
    gap = (cg.objective - exact.objective) / exact.objective
    assert (cg.status == OPTIMAL) == (gap < 1e-6)
    assert cg.status != OPTIMAL  # measured: 27 % above the factor solution


def test_non_finite_warm_start_is_rejected():
    _, problem = _case("n60-kinked")
    start = _irls("n60-kinked")
    bad = {k: np.array(v, dtype=float) for k, v in start.x.items()}
    bad["F"][-1, 0] = np.nan
    with pytest.raises(InvalidInputError, match="warm_start"):
        ssl_opt.solve(problem, solver="irls", warm_start=bad)
    bad = {k: np.array(v, dtype=float) for k, v in start.x.items()}
    bad["delta"] = np.array(-1.0)
    with pytest.raises(InvalidInputError, match="delta"):
        ssl_opt.solve(problem, solver="irls", warm_start=bad)


def test_problem_keeps_its_own_copies_of_the_data():
    data = clusters_with_outliers(n=30, d=3, c=2, l_per_class=2, outliers=0.0, n_neighbors=4)
    X = sp.csr_matrix(data.X)
    Y = np.array(data.Y, dtype=float)
    p = ERE(X, data.A, Y, 1.0, 0.1)
    x = {"F": np.vstack([Y, np.full((p.u, 2), 0.5)]), "W": np.ones((3, 2)), "b": np.zeros(2)}
    before = p.objective(x)
    X.data *= 3.0
    Y[0, 0] = 1.0 - Y[0, 0]  # the caller's Y stays writable and is not the problem's
    assert p.objective(x) == before
    assert not np.shares_memory(p.Y, Y)


@pytest.mark.parametrize("kwargs, match", [
    ({"kink_tol": -1.0}, "kink_tol"), ({"kink_tol": float("nan")}, "kink_tol"),
    ({"complementarity": "bogus"}, "complementarity"), ({"max_iter": -5}, "max_iter"),
    ({"tol": -1.0}, "tol"),
])
def test_certificate_options_are_validated(kwargs, match):
    _, problem = _case("n60-kinked")
    x = _irls("n60-kinked").x
    with pytest.raises(InvalidInputError, match=match):
        problem.kkt(x, **kwargs)


def test_malformed_multipliers_are_a_clear_error():
    """A warm start whose multipliers are malformed is refused, naming them."""
    _, problem = _case("n60-kinked")
    x = dict(_irls("n60-kinked").x)
    x["U_edges"] = np.zeros(3)
    with pytest.raises(InvalidInputError, match="U_edges"):
        ssl_opt.solve(problem, solver="irls", warm_start=x)
    x = dict(_irls("n60-kinked").x)
    x["U_points"] = np.full_like(np.asarray(x["U_points"], dtype=float), np.nan)
    with pytest.raises(InvalidInputError, match="U_points"):
        ssl_opt.solve(problem, solver="irls", warm_start=x)


def test_warm_start_at_a_certified_optimum_takes_no_step():
    """A warm start is certified before any step: from IRLS's own certified optimum it
    returns at once, with the same objective (measured before: 28–1,070 steps)."""
    _, problem = _case("n60-kinked")
    first = _irls("n60-kinked")
    assert first.status == OPTIMAL
    again = ssl_opt.solve(problem, solver="irls", warm_start=first)
    assert again.status == OPTIMAL
    assert again.iterations == 0
    assert again.objective == pytest.approx(first.objective, rel=1e-12)


def _grid_tv(m: int, seed: int = 0) -> SumOfNorms:
    """Graph-TV denoising on an m×m grid: ``½‖x − y‖² + 0.2 Σ_edges |x_i − x_j|`` with y a
    noisy checkerboard of 3×3 blocks, so most edge groups sit at their kink."""
    rng = np.random.default_rng(seed)
    idx = np.arange(m * m).reshape(m, m)
    edges = np.vstack([np.c_[idx[:, :-1].ravel(), idx[:, 1:].ravel()],
                       np.c_[idx[:-1].ravel(), idx[1:].ravel()]])
    rows = np.r_[np.arange(len(edges)), np.arange(len(edges))]
    G = sp.csr_matrix((np.r_[np.ones(len(edges)), -np.ones(len(edges))],
                       (rows, np.r_[edges[:, 0], edges[:, 1]])), shape=(len(edges), m * m))
    y = (idx // (m // 3) + idx.T // (m // 3)).ravel() % 2 + 0.3 * rng.standard_normal(m * m)
    return SumOfNorms(sp.eye(m * m), -y, G, np.zeros(len(edges)), 1,
                      np.full(len(edges), 0.2))


def test_scalar_groups_are_polished_on_their_kink_set_and_certified():
    """Grid TV: the plain stopping rule cannot certify (x accurate to ~1e-6 only, Clarabel's
    point no better); the kink-set polish gives a point the certificate accepts."""
    problem = _grid_tv(15)
    sol = ssl_opt.solve(problem, solver="irls")
    ref = ssl_opt.solve(problem, solver="cvxpy")
    assert sol.status == OPTIMAL and sol.info["polished"]
    assert sol.objective <= ref.objective + 1e-9 * abs(ref.objective)
    assert ssl_opt.certify(problem, sol, reference=False).passed


def test_lasso_with_a_singular_quadratic_is_polished_to_the_socp_optimum():
    """ℓ1-regularized least squares with more features than rows (Q = AᵀA singular)."""
    rng = np.random.default_rng(3)
    A = rng.standard_normal((15, 30))
    b = A[:, :3] @ np.array([2.0, -1.5, 1.0]) + 0.01 * rng.standard_normal(15)
    Q, c = A.T @ A + 1e-3 * np.eye(30), -A.T @ b
    problem = SumOfNorms(Q, c, np.eye(30), np.zeros(30), 1, np.full(30, 0.5))
    sol = ssl_opt.solve(problem, solver="irls")
    x = cp.Variable(30)
    p_star = cp.Problem(cp.Minimize(0.5 * cp.quad_form(x, cp.psd_wrap(Q)) + c @ x
                                    + 0.5 * cp.norm1(x))).solve(solver="CLARABEL")
    assert sol.status == OPTIMAL
    assert _rel(sol.objective, p_star) < 1e-7
    assert ssl_opt.certify(problem, sol, reference=False).passed
