"""TransductiveModel and the ``tsvm-model`` solver (docs/design.md §4.2, §6; [001 §3.1]).

Independent checks: TSVM's own objective and residuals (squared hinge + ridge), the ``tsvm``
solver (MFN) on the same instance, the CVXPY reference of every balanced labeling's inner
problem on a tiny instance, and a numpy re-implementation of the objective.
"""

from __future__ import annotations

import importlib
import itertools

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp

import ssl_opt
from ssl_opt import registry
from ssl_opt.components import MarginLoss
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.modeling.expressions import Variable
from ssl_opt.modeling.terms.norms import ElasticNet
from ssl_opt.modeling.terms.smooth import Ridge
from ssl_opt.modeling.transductive import TransductiveModel
from ssl_opt.problems.linear.problem import TSVM
from ssl_opt.solution import MAX_ITERATIONS, OPTIMAL

#: The model solvers tsvm-model relies on, registered here if the registry lacks them.
PLUGINS = ("ssl_opt.plugins.model.newton_cg", "ssl_opt.plugins.model.lbfgs",
           "ssl_opt.plugins.model.fista", "ssl_opt.plugins.model.pdhg",
           "ssl_opt.plugins.model.transductive")


@pytest.fixture(scope="module", autouse=True)
def _model_solvers():
    added = []
    for name in PLUGINS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError:
            continue
        if not all(s.name in registry.solvers() for s in module.register_solvers()):
            registry.register_plugin(module, name=name)
            added.append(module)
    yield
    for module in added:
        registry.unregister_plugin(module)


def _text(n: int, d: int, l: int, seed: int, density: float = 0.2):
    """Sparse non-negative rows, labels from a planted linear rule (both classes labeled)."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, random_state=seed, format="csr",
                  data_rvs=lambda k: rng.uniform(0.2, 1.0, k))
    o = X @ rng.standard_normal(d)
    y = np.where(o > np.median(o), 1.0, -1.0)[:l]
    y[:2] = [1.0, -1.0]
    return X, y


def _huber(m, delta=0.5):
    t = np.maximum(0.0, 1.0 - m)
    return np.where(t <= delta, t * t / (2 * delta), t - delta / 2)


def _objective_huber_enet(X, y, lam_u, l1, l2, x):
    """J of the Huber-hinge / elastic-net (free bias) model, written out in numpy."""
    w, b, y_u = x["w"], float(x["b"]), x["y_u"]
    o = X @ w + b
    l, u = y.size, y_u.size
    return (l1 * np.abs(w).sum() + l2 * w @ w + _huber(y * o[:l]).sum() / (2 * l)
            + lam_u * _huber(y_u * o[l:]).sum() / (2 * u))


# --------------------------------------------------------------------- (a) TSVM equality
@pytest.mark.parametrize("bias", [True, False])
def test_objective_and_residuals_equal_tsvm(bias):
    X, y = _text(40, 15, 10, seed=1)
    lam, lam_u = 0.1, 0.7
    ts = TSVM(X, y, lam, lam_u, bias=bias)
    tm = TransductiveModel(X, y, lam_u, lambda v: Ridge(v, lam / 2), bias=bias)
    assert tm.n_pos == ts.n_pos
    rng = np.random.default_rng(0)
    for _ in range(5):
        xt = {"w": rng.standard_normal(ts.design.dim), "y_u": np.sign(rng.standard_normal(30))}
        x = tm.from_tsvm(xt)
        assert tm.objective(x) == pytest.approx(ts.objective(xt), rel=1e-13)
        assert tm.inner_problem(x).objective(x) == pytest.approx(
            ts.inner_problem(xt).objective(xt), rel=1e-13)
        ours, theirs = tm.kkt(x), ts.kkt(xt)
        for name in ("switch_gain", "balance", "integrality"):
            assert ours[name] == pytest.approx(theirs[name], rel=1e-10, abs=1e-15)
        assert (ours["stationarity"] > 1e-3) == (theirs["stationarity"] > 1e-3)


def test_tsvm_model_reaches_the_tsvm_solution():
    X, y = _text(200, 120, 20, seed=2, density=0.08)
    lam, lam_u = 1e-2, 1.0
    ts = TSVM(X, y, lam, lam_u)
    tm = TransductiveModel(X, y, lam_u, lambda v: Ridge(v, lam / 2))
    ref = registry.get_solver("tsvm").solve(ts)
    assert ref.status == OPTIMAL
    for inner in (None, "newton-cg"):  # the selected solver (MFN through the lowering), Newton
        sol = registry.get_solver("tsvm-model").solve(tm, inner_solver=inner)
        assert sol.status == OPTIMAL
        assert sol.objective == pytest.approx(ref.objective, rel=1e-8)
        np.testing.assert_array_equal(sol.x["y_u"], ref.x["y_u"])
        assert ssl_opt.certify(tm, sol).passed
    # Started at the TSVM solution it stops at once: no switch, one inner solve.
    again = registry.get_solver("tsvm-model").solve(tm, warm_start=tm.from_tsvm(ref))
    assert again.info["switches"] == 0 and again.info["retrains"] == 1
    assert again.objective == pytest.approx(ref.objective, rel=1e-9)


# -------------------------------------------------------- (b) Huber hinge + elastic net
def test_huber_elastic_net_certifies():
    X, y = _text(80, 60, 12, seed=3, density=0.15)
    tm = TransductiveModel(X, y, 1.0, lambda v: ElasticNet(v, 1e-3, 1e-2), loss="huber_hinge",
                           bias="free")
    sol = ssl_opt.solve(tm, solver="tsvm-model")
    assert sol.status == OPTIMAL and len(sol.history) == sol.info["retrains"] - 1
    cert = ssl_opt.certify(tm, sol)
    assert cert.passed, cert.report()
    assert any(c.name == "inner_objective_gap" for c in cert.checks)  # CVXPY reference used
    assert sol.objective == pytest.approx(
        _objective_huber_enet(X, y, 1.0, 1e-3, 1e-2, sol.x), rel=1e-12)


def test_huber_elastic_net_exhaustive_tiny():
    l1, l2, lam_u = 1e-3, 1e-2, 1.0
    X, y = _text(14, 10, 6, seed=4, density=0.4)
    tm = TransductiveModel(X, y, lam_u, lambda v: ElasticNet(v, l1, l2), loss="huber_hinge",
                           r=0.5, bias="free")
    assert tm.u == 8 and tm.n_pos == 4
    sol = registry.get_solver("tsvm-model").solve(tm)
    assert sol.status == OPTIMAL

    def J(x):
        return _objective_huber_enet(X, y, lam_u, l1, l2, x)

    found = J(sol.x)
    # Every balanced labeling's inner problem solved by the CVXPY reference.
    reference = registry.get_solver("cvxpy")
    optimum = {}
    for positives in itertools.combinations(range(tm.u), tm.n_pos):
        labels = -np.ones(tm.u)
        labels[list(positives)] = 1.0
        res = reference.solve(tm.inner_model(labels))
        assert res.status == OPTIMAL
        optimum[tuple(labels)] = res.objective
    tol = 1e-6 * max(1.0, abs(found)) + 1e-7
    assert found >= min(optimum.values()) - tol
    assert abs(found - optimum[tuple(sol.x["y_u"])]) <= tol  # w optimal for its labels
    # No improving pair switch at the returned weights (brute force over all pairs).
    for i in np.flatnonzero(sol.x["y_u"] > 0):
        for j in np.flatnonzero(sol.x["y_u"] < 0):
            switched = sol.x["y_u"].copy()
            switched[[i, j]] = -switched[[i, j]]
            assert J({**sol.x, "y_u": switched}) >= found - 1e-12


def test_the_global_reference_of_a_transductive_variant_is_the_best_labeling():
    """``tsvm-exhaustive`` takes any transductive model: its optimum is the smallest over the
    balanced labelings of a CVXPY program written here by hand (Huber hinge, elastic net, free
    bias), and ``certify`` reports the switching solution's gap to it."""
    l1, l2, lam_u = 1e-3, 1e-2, 1.0
    X, y = _text(14, 10, 6, seed=4, density=0.4)
    tm = TransductiveModel(X, y, lam_u, lambda v: ElasticNet(v, l1, l2), loss="huber_hinge",
                           r=0.5, bias="free")
    glob = ssl_opt.solve(tm, solver="tsvm-exhaustive")
    assert glob.status == OPTIMAL and glob.info["labelings"] == 70
    Xd = X.toarray()
    w, b = cp.Variable(10), cp.Variable()
    o = Xd @ w + b

    def huber(m):  # δ = 0.5: t²/(2δ) for t = (1 − m)₊ ≤ δ, t − δ/2 beyond
        return cp.huber(cp.pos(1 - m), 0.5) / (2 * 0.5)

    best = np.inf
    for positives in itertools.combinations(range(tm.u), tm.n_pos):
        labels = -np.ones(tm.u)
        labels[list(positives)] = 1.0
        prog = cp.Problem(cp.Minimize(
            l1 * cp.norm1(w) + l2 * cp.sum_squares(w)
            + cp.sum(huber(cp.multiply(y, o[:6]))) / 12
            + lam_u * cp.sum(huber(cp.multiply(labels, o[6:]))) / (2 * tm.u)))
        prog.solve(solver="CLARABEL")
        best = min(best, prog.value)
    assert glob.objective == pytest.approx(best, rel=1e-6)
    assert tm.objective(glob.x) == pytest.approx(glob.objective, rel=1e-6)
    sol = ssl_opt.solve(tm, solver="tsvm-model")
    cert = ssl_opt.certify(tm, sol)
    assert cert.passed and any("global optimum (tsvm-exhaustive)" in n for n in cert.notes)


def test_the_global_reference_names_a_penalty_without_a_cvxpy_form():
    from ssl_opt.modeling.term import Term

    class Quartic(Term):  # a user penalty with a value and a gradient, no CVXPY form
        name = "quartic"

        def value(self, z):
            return float(self.weight * np.sum(z**4))

        def gradient(self, z):
            return 4.0 * self.weight * z**3

    X, y = _text(14, 10, 6, seed=4, density=0.4)
    tm = TransductiveModel(X, y, 1.0, lambda v: Quartic(v, 1e-2), r=0.5, bias=False)
    reasons = registry.get_solver("tsvm-exhaustive").missing(tm)
    assert any("CVXPY expression for quartic" in r for r in reasons), reasons


# ------------------------------------------------------------------------ (c) logistic
def test_logistic_elastic_net_certifies():
    X, y = _text(80, 60, 12, seed=5, density=0.15)
    tm = TransductiveModel(X, y, 0.5, lambda v: ElasticNet(v, 1e-3, 1e-2), loss="logistic")
    sol = ssl_opt.solve(tm, solver="tsvm-model")
    assert sol.status == OPTIMAL
    cert = ssl_opt.certify(tm, sol)
    assert cert.passed, cert.report()
    assert any(c.name == "inner_objective_gap" for c in cert.checks)
    assert cert.residuals["switch_gain"] == 0.0
    # The logistic switch gain is log(1 + e^o) − log(1 + e^−o) = o.
    o = np.linspace(-30, 30, 61)
    np.testing.assert_allclose(tm.switch_gain(o), o, atol=1e-12)


def test_status_is_honest_when_capped():
    X, y = _text(60, 30, 10, seed=6, density=0.2)
    tm = TransductiveModel(X, y, 1.0, lambda v: Ridge(v, 5e-3))
    sol = registry.get_solver("tsvm-model").solve(tm, max_retrain=2)
    assert sol.status == MAX_ITERATIONS and sol.info["retrains"] == 2
    assert {"stage", "lam_u", "objective", "switches", "time"} <= set(sol.history.columns)


# ----------------------------------------------------------------------- (d) bad input
class _Rising(MarginLoss):
    """Convex but increasing: its switch gain e^{−o} − e^{o} decreases."""

    def value(self, m):
        return np.exp(np.asarray(m, dtype=float) / 10)

    def cvxpy(self, m):
        return cp.exp(m / 10)


@pytest.mark.parametrize("change, match", [
    ({"y": [1.0, -1.0, 0.0, 1.0]}, "y must hold only -1 and"),
    ({"y": np.tile([1.0, -1.0], 10)}, "no unlabeled rows"),
    ({"r": 1.5}, "r \\(fraction of positive unlabeled rows\\)"),
    ({"r": 0.0}, "r \\(fraction of positive unlabeled rows\\)"),
    ({"lam_u": -1.0}, "lam_u"),
    ({"bias": "yes"}, "bias must be"),
    ({"loss": _Rising()}, "switch gain"),
    ({"loss": "nope"}, "loss must be one of"),
    ({"penalties": lambda v: [Ridge(Variable("z", (5,)), 1.0)]}, "penalties"),
    ({"penalties": lambda v: 3.0}, "penalties"),
    ({"penalties": []}, "penalties must give at least one Term"),
])
def test_bad_input_names_the_argument(change, match):
    X, _ = _text(20, 5, 4, seed=7, density=0.5)
    args = {"X": X, "y": [1.0, -1.0, 1.0, -1.0], "lam_u": 1.0,
            "penalties": lambda v: Ridge(v, 0.1)}
    args.update(change)
    with pytest.raises(InvalidInputError, match=match):
        TransductiveModel(**args)


def test_inner_solver_that_cannot_apply_is_refused():
    X, y = _text(30, 8, 6, seed=8, density=0.4)
    tm = TransductiveModel(X, y, 1.0, lambda v: ElasticNet(v, 1e-3, 1e-2), loss="huber_hinge")
    with pytest.raises(InvalidInputError, match="inner_solver 'newton-cg'"):
        registry.get_solver("tsvm-model").solve(tm, inner_solver="newton-cg")


def test_penalties_as_a_list_of_terms():
    X, y = _text(30, 8, 6, seed=9, density=0.4)
    w, b = TransductiveModel.weight_variables(X, bias="free")
    listed = TransductiveModel(X, y, 1.0, [ElasticNet(w, 1e-3, 1e-2)], loss="huber_hinge",
                               bias="free")
    built = TransductiveModel(X, y, 1.0, lambda v: ElasticNet(v, 1e-3, 1e-2),
                              loss="huber_hinge", bias="free")
    x = {"w": np.linspace(-1, 1, 8), "b": np.array(0.3), "y_u": np.tile([1.0, -1.0], 12)}
    assert listed.objective(x) == built.objective(x) == pytest.approx(
        _objective_huber_enet(X, y, 1.0, 1e-3, 1e-2, x), rel=1e-13)
    with pytest.raises(InvalidInputError, match="bias=False"):
        TransductiveModel(X, y, 1.0, [Ridge(w, 1.0), Ridge(b, 1.0)], bias=False)


def test_switching_from_a_poor_labeling_reaches_block_optimality():
    X, y = _text(80, 60, 12, seed=10, density=0.15)
    tm = TransductiveModel(X, y, 1.0, lambda v: ElasticNet(v, 1e-3, 1e-2), loss="huber_hinge",
                           bias="free")
    labels = -np.ones(tm.u)
    labels[np.random.default_rng(0).permutation(tm.u)[: tm.n_pos]] = 1.0  # balanced, random
    start = {"w": np.zeros(60), "b": np.array(0.0), "y_u": labels}
    sol = registry.get_solver("tsvm-model").solve(tm, warm_start=start, S=1)
    assert sol.status == OPTIMAL and sol.info["switches"] > 1
    assert sol.info["retrains"] == sol.info["switches"] + 1  # one pair per retraining (S = 1)
    assert ssl_opt.certify(tm, sol, reference=False).passed


def test_balanced_labels_minimize_over_labelings_at_fixed_weights():
    X, y = _text(14, 10, 6, seed=11, density=0.4)
    tm = TransductiveModel(X, y, 1.0, lambda v: ElasticNet(v, 1e-3, 1e-2), loss="huber_hinge",
                           r=0.5, bias="free")
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = {"w": rng.standard_normal(10), "b": np.array(rng.standard_normal())}
        best = min(_objective_huber_enet(X, y, 1.0, 1e-3, 1e-2, {**x, "y_u": np.array(lab)})
                   for lab in itertools.product([-1.0, 1.0], repeat=tm.u) if sum(lab) == 0)
        o_u = X[tm.l:] @ x["w"] + x["b"]
        labels = tm.balanced_labels(o_u)
        assert (labels > 0).sum() == tm.n_pos
        assert _objective_huber_enet(X, y, 1.0, 1e-3, 1e-2, {**x, "y_u": labels}) == \
            pytest.approx(best, rel=1e-13)
        assert tm.best_labeling_objective(x) == pytest.approx(best, rel=1e-13)
