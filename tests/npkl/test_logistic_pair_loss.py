"""NPKL with the logistic pair loss ℓ(t) = log(1 + e^{−t}) (docs/design.md §4.4, docs/npkl.md).

The loss is not in [003]: its conjugate is the negative binary entropy, not quadratic, so the
references solve an exponential-cone dual SDP and BCD updates each column by damped Newton.

Every check is independent of the code under test: the conjugate against a numerical supremum
(scipy), the dual term against a numerical infimum, the references against the primal SDP
written here with ``cp.logistic`` (Z a PSD variable, Clarabel), BCD against the references,
each Newton column update against the gradient of the column problem written here (its
strong convexity turns a small gradient into a small distance to the minimizer), and the pair
multipliers against ``C/(1 + e^{t})`` written here.
"""

from __future__ import annotations

from functools import cache

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize_scalar

import ssl_opt
from ssl_opt import registry
from ssl_opt.builders import knn_graph
from ssl_opt.components import Logistic, MarginLoss
from ssl_opt.datasets.clusters import double_spiral, pairwise_constraints
from ssl_opt.problems import NPKL
from ssl_opt.reference.attempts import solve_until_optimal
from ssl_opt.solution import OPTIMAL


def _rel(a, b):
    return abs(a - b) / max(1.0, abs(b))


def _np_logistic(t):
    return np.log1p(np.exp(-t))


def _sup_of(s: float) -> float:
    """sup_m (s·m − log(1 + e^{−m})), numerically (bounded scalar search on a wide interval;
    at s = 0 or −1 the supremum 0 is approached at ±∞, reached to ~e^{−40})."""
    res = minimize_scalar(lambda m: -(s * m - _np_logistic(m)), bounds=(-40.0, 40.0),
                          method="bounded", options={"xatol": 1e-12, "maxiter": 2000})
    return -float(res.fun)


# ----------------------------------------------------------------------------- the conjugate


def test_logistic_offers_a_conjugate_but_not_a_quadratic_one():
    loss = Logistic()
    assert {"conjugate", "derivative", "second_derivative"} <= loss.capabilities
    assert "quadratic_conjugate" not in loss.capabilities
    assert loss.conjugate_form is None


def test_conjugate_is_the_supremum():
    loss = Logistic()
    g = np.concatenate([[0.0, 1e-6, 1e-3], np.linspace(0.05, 0.95, 19), [1 - 1e-3, 1.0]])
    numerical = np.array([_sup_of(-gi) for gi in g])
    np.testing.assert_allclose(loss.conjugate(-g), numerical, atol=1e-9)
    # Closed form at g = 1/2: −log 2; endpoints 0 (0 log 0 = 0).
    assert loss.conjugate(np.array([-0.5]))[0] == pytest.approx(-np.log(2.0), abs=1e-15)
    assert loss.conjugate(np.array([0.0, -1.0])).tolist() == [0.0, 0.0]
    # Outside [−1, 0] the supremum is unbounded: s·m − φ(m) grows without limit.
    for s in (0.1, -1.1, 3.0, -5.0):
        assert np.isinf(loss.conjugate(np.array([s]))[0])
        m = np.array([-1e6, 1e6])
        assert np.max(s * m - loss.value(m)) > 1e4


def test_dual_cvxpy_is_the_scaled_conjugate_on_its_domain():
    """Σ −C φ*(−y/C) equals Σ min_t (C φ(t) + y t) (computed here numerically), and its
    constraints are the domain 0 ≤ y ≤ C."""
    loss, C = Logistic(), 1.7
    inside = C * np.array([0.0, 0.03, 0.4, 0.5, 0.77, 1.0])
    y = cp.Variable(inside.size)
    value, constraints = loss.dual_cvxpy(y, C)
    assert value.is_concave()
    y.value = inside
    direct = sum(-_sup_of(-yi / C) * C for yi in inside)  # min_t (Cφ(t) + y t) = −Cφ*(−y/C)
    assert value.value == pytest.approx(direct, abs=1e-8)
    assert value.value == pytest.approx(-C * loss.conjugate(-inside / C).sum(), abs=1e-12)
    assert all(np.all(c.value()) for c in constraints)
    for outside in (-0.1, C + 0.1):
        y.value = np.full(inside.size, outside)
        assert not all(np.all(c.value()) for c in constraints)


# ------------------------------------------------------------------- the tiny NPKL instance


def _tiny_data():
    """As tests/npkl/test_npkl.py: n = 18, 10 pairs, l = 12 (6 unconstrained points)."""
    d = double_spiral(n=18, seed=4)
    pairs, labels = pairwise_constraints(d.y, 10, seed=4)
    return knn_graph(d.X, n_neighbors=3), pairs, labels.astype(float)


def _tiny_with(loss, C=1.0):
    S, pairs, labels = _tiny_data()
    return NPKL(S, pairs, labels, C=C, loss=loss, delta=0.02)


def _primal_sdp_value(p) -> float:
    """min tr(ΔZ) + C Σ log(1 + e^{−T_p Z_ij}) over Z ⪰ 0, written here (Clarabel)."""
    Delta = p.Delta.toarray() if sp.issparse(p.Delta) else np.asarray(p.Delta)
    Z = cp.Variable((p.n, p.n), PSD=True)
    t = cp.multiply(p.labels, Z[p.pairs[:, 0], p.pairs[:, 1]])
    prog = cp.Problem(cp.Minimize(cp.trace(Delta @ Z) + p.C * cp.sum(cp.logistic(-t))))
    # Clarabel at tolerances 1e-10 along the reference's retry ladder: one interior-point
    # path can end short of optimal by a CPU's rounding.
    outcome = solve_until_optimal(prog, "CLARABEL")
    assert outcome.optimal, outcome.attempts
    return float(prog.value)


@cache
def _solved(C: float):
    """(problem, primal SDP value, cvxpy, cvxpy-boundary and BCD solutions)."""
    p = _tiny_with("logistic", C)
    refs = [ssl_opt.solve(p, solver=s) for s in ("cvxpy", "cvxpy-boundary")]
    return p, _primal_sdp_value(p), *refs, ssl_opt.solve(p, solver="bcd", tol=1e-10)


@pytest.mark.parametrize("C", [1.0, 3.0])  # C ≠ 1 would show a confusion of C with 1/C
def test_references_and_bcd_reach_the_primal_sdp_optimum(C):
    p, value, ref, bnd, sol = _solved(C)
    assert isinstance(p.loss, Logistic) and p.structure.variant == "logistic"
    assert p.structure.smooth
    for s in (ref, bnd):
        assert s.status == OPTIMAL and _rel(s.objective, value) < 1e-6
        assert np.all(s.x["y"] >= -1e-8) and np.all(s.x["y"] <= C + 1e-8)  # the domain
    assert sol.status == OPTIMAL
    assert _rel(sol.objective, ref.objective) < 1e-6
    assert _rel(sol.objective, value) < 1e-6
    # Smooth: the multipliers are −C ℓ'(t) = C/(1 + e^t) at BCD's kernel.
    t = p.labels * sol.x["Z"][p.pairs[:, 0], p.pairs[:, 1]]
    np.testing.assert_allclose(sol.x["y"], C / (1.0 + np.exp(t)), atol=1e-12)
    # ... and those of the dual reference agree (the dual optimum is unique: strictly concave).
    np.testing.assert_allclose(sol.x["y"], ref.x["y"], atol=1e-5 * C)


@pytest.mark.parametrize("C", [1.0, 3.0])
def test_bcd_and_references_certify(C):
    p, _, ref, bnd, sol = _solved(C)
    for s in (sol, ref, bnd):
        cert = ssl_opt.certify(p, s, reference=ref)
        assert cert.passed, cert.report()
    assert "pair_multipliers" not in p.kkt(sol)  # the smooth-loss certificate
    # A perturbed kernel does not certify (the residuals can fail).
    Z = sol.x["Z"] + 1e-2 * np.eye(p.n)
    assert not ssl_opt.certify(p, {"Z": Z}, reference=ref).passed
    assert not ssl_opt.certify(p, {"Z": Z}, reference=False).passed


# ------------------------------------------------------------ Newton column updates, checked


def _schur(p):
    D = p.Delta.toarray() if sp.issparse(p.Delta) else np.asarray(p.Delta)
    L = np.unique(p.pairs)
    U = np.setdiff1d(np.arange(p.n), L)
    Dt = D[np.ix_(L, L)] - D[np.ix_(L, U)] @ np.linalg.solve(D[np.ix_(U, U)], D[np.ix_(U, L)])
    return Dt, np.searchsorted(L, p.pairs)


def _column_gradient(Dt, rpairs, T, C, V, i):
    """∇ of ½a‖v‖² + bᵀv + (C/2) Σ_j log(1 + e^{−a_jᵀv}) at v = V[:, i] (a_j = T_ij v_j),
    with ℓ'(t) = −1/(1 + e^t) written here; and a = Δ̃_ii."""
    a = Dt[i, i]
    v = V[:, i]
    b = V @ Dt[:, i] - a * v
    first, second = rpairs[:, 0] == i, rpairs[:, 1] == i
    nb = np.concatenate([rpairs[first, 1], rpairs[second, 0]])
    A = V[:, nb] * np.concatenate([T[first], T[second]])
    return a * v + b - 0.5 * C * A @ (1.0 / (1.0 + np.exp(A.T @ v))), a


@pytest.mark.parametrize("sweeps", [1, 3])
def test_each_newton_column_update_minimizes_its_column_problem(sweeps):
    """Along the plugin's own Gauss–Seidel trajectory each new column is a stationary point of
    its column problem [003 eq. 6] (strongly convex with modulus a, so ‖v − v*‖ ≤ ‖∇f‖/a)."""
    p = _tiny_with("logistic", 2.5)
    Dt, rpairs = _schur(p)
    seed = 3
    V0 = None
    if sweeps > 1:
        V0 = ssl_opt.solve(p, solver="bcd", max_iter=sweeps - 1, anderson=0, seed=seed,
                           tol=0.0).x["V"]
    sol = ssl_opt.solve(p, solver="bcd", max_iter=sweeps, anderson=0, seed=seed, tol=0.0)
    V1 = sol.x["V"]
    if V0 is None:
        r = V1.shape[0]
        V0 = np.random.default_rng(seed).random((r, V1.shape[1])) / np.sqrt(r)
    assert not np.allclose(V0, V1)
    for i in range(V1.shape[1]):
        # Column i new, columns before it updated, columns after it as they were.
        V = np.hstack([V1[:, : i + 1], V0[:, i + 1:]])
        g, a = _column_gradient(Dt, rpairs, p.labels, p.C, V, i)
        assert np.linalg.norm(g) / a < 1e-10 * max(1.0, np.linalg.norm(V1[:, i])), i
    # The recorded objective is Ω̃(VᵀV), recomputed here.
    Zb = V1.T @ V1
    t = p.labels * Zb[rpairs[:, 0], rpairs[:, 1]]
    f = float(np.sum(Dt * Zb) + p.C * np.sum(_np_logistic(t)))
    assert _rel(sol.history["objective"][-1], f) < 1e-12


# ------------------------------------------------- what BCD needs from a loss, and bad losses


class EntropyLogistic(MarginLoss):
    """φ(m) = log(1 + e^{−m}) written as a user loss: value, CVXPY, φ' and the conjugate,
    but no φ''. NPKL takes it; BCD has neither column update for it."""

    name = "entropy_logistic"

    def value(self, m):
        return np.logaddexp(0.0, -np.asarray(m, dtype=float))

    def cvxpy(self, m):
        return cp.logistic(-m)

    def derivative(self, m):
        return -1.0 / (1.0 + np.exp(np.asarray(m, dtype=float)))

    def conjugate(self, s):
        return Logistic().conjugate(s)

    def dual_cvxpy(self, y, C):
        return C * cp.sum(cp.entr(y / C) + cp.entr(1 - y / C)), [y >= 0, y <= C]


class EntropyLogisticNewton(EntropyLogistic):
    """The same with φ''(m) = e^m/(1 + e^m)²: BCD's Newton update applies."""

    name = "entropy_logistic_newton"

    def second_derivative(self, m):
        e = np.exp(-np.abs(np.asarray(m, dtype=float)))
        return e / (1.0 + e) ** 2


class WrongCurvatureLogistic(EntropyLogistic):
    """φ'' off by a factor 2: caught against finite differences of the value."""

    name = "wrong_curvature_logistic"

    def second_derivative(self, m):
        e = np.exp(-np.abs(np.asarray(m, dtype=float)))
        return 2.0 * e / (1.0 + e) ** 2


class WrongSlopeLogistic(EntropyLogisticNewton):
    """φ' with the wrong sign."""

    name = "wrong_slope_logistic"

    def derivative(self, m):
        return 1.0 / (1.0 + np.exp(np.asarray(m, dtype=float)))


def test_bcd_names_what_a_loss_lacks_for_its_column_update():
    bcd = registry.get_solver("bcd")
    p = _tiny_with(EntropyLogistic())
    assert ssl_opt.solve(p, solver="cvxpy").status == OPTIMAL  # the reference takes it
    reasons = bcd.missing(p)
    assert len(reasons) == 1
    assert "quadratic_conjugate" in reasons[0] and "second_derivative" in reasons[0]
    assert "EntropyLogistic()" in reasons[0]
    with pytest.raises(ssl_opt.UnsupportedProblemError, match="second_derivative"):
        ssl_opt.solve(p, solver="bcd")
    for loss in ("square", "squared_hinge", "hinge", "huber", "logistic",
                 EntropyLogisticNewton()):
        assert bcd.missing(_tiny_with(loss)) == [], loss
    assert bcd.describe()["requires_one_of"] == {
        "loss": [["quadratic_conjugate"], ["derivative", "second_derivative"]]}


def test_a_user_loss_with_both_derivatives_is_solved_by_newton_bcd():
    """The same loss as the built-in one, as a user loss: the same optimum."""
    p, value, ref, _, _ = _solved(1.0)
    q = _tiny_with(EntropyLogisticNewton())
    sol = ssl_opt.solve(q, solver="bcd", tol=1e-10)
    assert sol.status == OPTIMAL and _rel(sol.objective, value) < 1e-6
    assert ssl_opt.certify(q, sol).passed


@pytest.mark.parametrize("loss,method", [(WrongCurvatureLogistic(), "second_derivative"),
                                         (WrongSlopeLogistic(), "derivative")])
def test_a_wrong_derivative_is_refused_at_build(loss, method):
    with pytest.raises(ssl_opt.InvalidInputError, match=method):
        _tiny_with(loss)


def test_a_loss_without_conjugate_is_refused():
    class NoConjugate(MarginLoss):
        name = "no_conjugate"

        def value(self, m):
            return np.logaddexp(0.0, -np.asarray(m, dtype=float))

        def cvxpy(self, m):
            return cp.logistic(-m)

        def derivative(self, m):
            return -1.0 / (1.0 + np.exp(np.asarray(m, dtype=float)))

    with pytest.raises(ssl_opt.InvalidInputError, match="loss must offer conjugate"):
        _tiny_with(NoConjugate())


# ------------------------------------------------------------------------- the certify example


def test_certify_example_is_solved_by_bcd():
    ex = {e.name: e for e in registry.examples()}["npkl-spiral-logistic"]
    p = ex.build()
    assert isinstance(p.loss, Logistic) and ex.family == "npkl"
    assert registry.get_solver("bcd").supports(p)
    sol = ssl_opt.solve(p, solver="bcd")
    assert sol.status == OPTIMAL
    cert = ssl_opt.certify(p, sol)
    assert cert.passed, cert.report()
