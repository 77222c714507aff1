"""The named problems as compositions of terms, and their lowerings back (docs/design.md §6,
the named models of ssl_opt/problems/<family>/problem.py and lrl.py, the patterns of
ssl_opt/problems/<family>/pattern.py).

For every family: a plain Model of the named model's terms equals the problem at random
points (1e-10, with the lowering's scale); the model lowers back to the same problem; solving
the model with the family's solver gives the same point and objective as solving the problem
(1e-10) and the CVXPY reference on the model's own program (1e-6); the model's certificate
passes there; a composition written by hand lowers too; an extra term makes the family
solvers refuse with a reason naming it; and ``select`` names the family solver with its
predicted time.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
import scipy.sparse as sp

import ssl_opt
from ssl_opt import registry
from ssl_opt.builders import graph_laplacian_from_data, knn_graph, rbf_kernel
from ssl_opt.datasets.synthetic import gaussian_blobs, two_moons
from ssl_opt.exceptions import UnsupportedProblemError
from ssl_opt.modeling import Model, Variable
from ssl_opt.modeling.expressions import row_blocks
from ssl_opt.modeling.terms import (
    L1,
    FixedRows,
    GraphQuadratic,
    GraphTV,
    GroupNorms,
    Linear,
    MarginLossTerm,
    QuadraticForm,
    Ridge,
    RKHSNorm,
    SimplexRows,
    SquaredError,
)
from ssl_opt.problems import ERE, LASS, LRL, LapRLS, LapSVM, LinearSVM, SumOfNorms
from ssl_opt.problems.ere.examples import clusters_with_outliers

RTOL_SAME = 1e-10
RTOL_REFERENCE = 1e-6


# ------------------------------------------------------------------------------ instances
def _moons(n=40, normalized=False, power=1):
    data = two_moons(n=n, n_labeled=6, noise=0.12, seed=0)
    K = rbf_kernel(data.X, sigma=0.4)
    L = graph_laplacian_from_data(data.X, n_neighbors=5, normalized=normalized, power=power)
    return data, K, L


def _lapsvm():
    _, K, L = _moons()
    data = two_moons(n=40, n_labeled=6, noise=0.12, seed=0)
    return LapSVM(K, L, data.y, gamma_A=1e-2, gamma_I=0.5)


def _laprls_normalized_power_no_bias():
    data, K, L = _moons(normalized=True, power=2)
    return LapRLS(K, L, data.y, gamma_A=1e-2, gamma_I=0.5, bias=False)


def _lapsvm_hinge():
    data, K, L = _moons()
    return LapSVM(K, L, data.y, gamma_A=1e-2, gamma_I=0.5, loss="hinge")


def _linear_costs():
    data = gaussian_blobs(n=30, n_labeled=30, d=4, seed=1)
    cost = np.where(data.y > 0, 1.5, 0.5)
    return LinearSVM(data.X, data.y, lam=0.1, cost=cost)


def _linear_sparse_no_bias():
    data = gaussian_blobs(n=30, n_labeled=30, d=4, seed=2)
    return LinearSVM(sp.csr_matrix(data.X), data.y, lam=0.1, bias=False)


def _lass():
    data = two_moons(n=30, n_labeled=2, noise=0.1, seed=0)
    W = knn_graph(data.X, n_neighbors=5)
    G = np.zeros((30, 3))
    G[np.arange(0, 30, 3), (data.y_all[::3] > 0).astype(int)] = 1.0
    G[5, 2] = -0.5
    return LASS(W, G, lam=0.2)


def _ere_data():
    return clusters_with_outliers(n=30, d=3, c=3, l_per_class=2, n_neighbors=5, outliers=0.1,
                                  seed=1)


def _ere_robust():
    d = _ere_data()
    return ERE(d.X, d.A, d.Y, alpha=1.0, beta=0.05)


def _ere_squared():
    d = _ere_data()
    return ERE(d.X, d.A, d.Y, alpha=1.0, beta=0.05, robust=False)


def _lrl():
    d = _ere_data()
    return LRL(d.X, d.A, d.Y, alpha=1.0, beta=0.05)


def _son(k=2):
    rng = np.random.default_rng(3)
    n, m = 6, 5
    B = rng.standard_normal((n, n))
    return SumOfNorms(sp.csr_matrix(0.1 * B @ B.T), rng.standard_normal(n),
                      rng.standard_normal((m * k, n)), rng.standard_normal(m * k), k,
                      rng.uniform(0.5, 1.5, m))


#: name → (builder, family solver, the prediction/variables are unique at the optimum).
FAMILIES = {
    "lapsvm": (_lapsvm, "newton", True),
    "laprls-normalized-power-nobias": (_laprls_normalized_power_no_bias, "laprls-direct", True),
    "lapsvm-hinge": (_lapsvm_hinge, "cvxpy-dual", False),
    "linear-costs": (_linear_costs, "mfn", True),
    "linear-sparse-nobias": (_linear_sparse_no_bias, "mfn", True),
    "ere-robust": (_ere_robust, "irls", False),
    "ere-squared": (_ere_squared, "irls", True),
    "lrl": (_lrl, "irls", True),
    "sum-of-norms-k2": (_son, "irls", False),
    "sum-of-norms-k1": (lambda: _son(1), "irls", False),
}


@cache
def problem(name):
    return FAMILIES[name][0]()


@cache
def model(name):
    """The family as a plain Model of the named model's terms, as a user who wrote them would
    have it (every family problem here is a named model)."""
    p = problem(name)
    return Model(p.terms, p.constraints, prediction=p.prediction_expression, name=p.name)


@cache
def direct(name):
    return ssl_opt.solve(problem(name), solver=FAMILIES[name][1])


@cache
def via_model(name):
    return ssl_opt.solve(model(name), solver=FAMILIES[name][1])


def _lowering(m):
    (low,) = m.lowerings.values()
    return low


def _rel(a, b):
    return abs(a - b) / max(1.0, abs(a), abs(b))


# ------------------------------------------------------------------------ exact and back
@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_the_plain_model_equals_the_problem_and_lowers_back(name):
    p, m = problem(name), model(name)
    low = _lowering(m)
    assert type(low.problem) is type(p)
    rng = np.random.default_rng(7)
    for _ in range(3):
        x = {k: rng.standard_normal(s) for k, s in p.variables.items()}
        if isinstance(p, ERE):  # the objectives read F_l; any value, fixed or not
            x["F"][: p.l] = p.Y if rng.random() < 0.5 else x["F"][: p.l]
        xm = low.to_model(x)
        assert set(xm) == set(m.variables)
        assert _rel(m.objective(xm), low.scale * p.objective(x)) <= RTOL_SAME
        back = low.from_model(xm)
        assert _rel(low.problem.objective(back), p.objective(x)) <= RTOL_SAME
    if hasattr(p, "bias") and not p.bias and isinstance(p, LapSVM):
        assert "b" not in m.variables


def test_lapsvm_reads_the_scaling_and_the_laplacian_from_the_terms():
    p = problem("laprls-normalized-power-nobias")
    low = _lowering(model("laprls-normalized-power-nobias"))
    q = low.problem
    assert isinstance(q, LapRLS) and not q.bias and low.scale == 1.0
    assert q.gamma_A == p.gamma_A and q.gamma_I == p.gamma_I
    Lq = q.L.toarray() if sp.issparse(q.L) else q.L
    Lp = p.L.toarray() if sp.issparse(p.L) else p.L
    assert np.array_equal(Lq, Lp) and not q.laplacian_annihilates_ones  # normalized, squared


# ----------------------------------------------------------------------------- solving
@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_family_solver_on_the_model_matches_the_problem_and_the_reference(name):
    p, m = problem(name), model(name)
    solver, unique = FAMILIES[name][1], FAMILIES[name][2]
    d, v = direct(name), via_model(name)
    low = _lowering(m)
    assert v.info["lowered_to"] == type(p).__name__ and v.solver == solver
    assert _rel(v.objective, low.scale * d.objective) <= RTOL_SAME
    expected = low.to_model(d.x)
    for k in m.variables:
        assert np.allclose(v.x[k], expected[k], rtol=RTOL_SAME, atol=RTOL_SAME)
    # The CVXPY reference on the model's own program (not the family's formulation).
    ref = ssl_opt.solve(m, solver="cvxpy")
    assert ref.info.get("lowered_to") is None
    assert _rel(v.objective, ref.objective) <= RTOL_REFERENCE
    if unique:
        for k in m.variables:
            scale = max(1.0, float(np.abs(ref.x[k]).max()))
            assert np.max(np.abs(v.x[k] - ref.x[k])) <= 1e-4 * scale
    # The model's own certificate at the family solver's point.
    res = m.kkt(v)
    assert res.get("stationarity", 0.0) <= 1e-6, res
    assert res.get("feasibility", 0.0) <= 1e-8, res


def test_warm_start_in_model_variables_goes_through_the_lowering():
    m = model("lapsvm")
    first = via_model("lapsvm")
    again = ssl_opt.solve(m, solver="newton", warm_start=first)
    assert again.iterations <= 1
    assert _rel(again.objective, first.objective) <= RTOL_SAME


# --------------------------------------------------------------------- written by hand
def test_hand_written_lapsvm_with_unit_loss_weight_lowers_with_scale_two():
    data, K, L = _moons()
    n, l = K.shape[0], len(data.y)
    a, c = Variable("a", (n,)), Variable("c")
    f = K @ a + c
    m = Model([GraphQuadratic(f, L, 0.5), RKHSNorm(a, K, 0.01),
               MarginLossTerm(f[:l], data.y, "squared_hinge", 1.0)], prediction=f)
    low = _lowering(m)
    q = low.problem
    assert isinstance(q, LapSVM) and low.scale == 2.0
    assert q.gamma_A == pytest.approx(0.01) and q.gamma_I == pytest.approx(0.5)
    sol = ssl_opt.solve(m, solver="newton")
    ref = ssl_opt.solve(LapSVM(K, L, data.y, 0.01, 0.5), solver="cvxpy")
    assert set(sol.x) == {"a", "c"}
    assert np.allclose(sol.x["a"], ref.x["alpha"], atol=1e-5)
    assert _rel(sol.objective, 2.0 * ref.objective) <= RTOL_REFERENCE


def test_hand_written_linear_svm_on_the_labeled_rows_of_a_larger_x():
    data = gaussian_blobs(n=40, n_labeled=25, d=3, seed=4)
    w, b = Variable("w", (3,)), Variable("b")
    f = data.X @ w + b
    m = Model([MarginLossTerm(f[:25], data.y, "squared_hinge", 2.0), Ridge(w, 0.3),
               Ridge(b, 0.3)], prediction=f)
    q = _lowering(m).problem
    assert isinstance(q, LinearSVM) and q.l == 25 and q.lam == pytest.approx(0.6)
    assert np.allclose(q.cost, 4.0)
    sol = ssl_opt.solve(m, solver="mfn")
    ref = ssl_opt.solve(m, solver="cvxpy")
    assert _rel(sol.objective, ref.objective) <= RTOL_REFERENCE
    assert np.allclose(sol.x["w"], ref.x["w"], atol=1e-5)


def test_hand_written_lass_is_solved_as_it_is_and_has_no_lowering():
    """LASS is a named model with no solver of its own (the generic solvers beat the paper's
    ADMM, docs/lass.md): a hand-written model of its terms needs no lowering and ``solve``
    finds the named model's optimum, checked against the CVXPY reference of the named model."""
    p = _lass()
    Z = Variable("Z", (p.N, p.K))
    lass = Model([Linear(Z, -2.0 * p.G), QuadraticForm(Z, p.L, 0.4)], [SimplexRows(Z)])
    assert lass.lowerings == {}
    named = LASS(p.W, 2.0 * p.G, 0.4)
    sol = ssl_opt.solve(lass)
    ref = ssl_opt.solve(named, solver="cvxpy")
    assert sol.status == "optimal"
    assert _rel(sol.objective, ref.objective) <= RTOL_REFERENCE
    assert ssl_opt.certify(named, {"Z": sol.x["Z"]}, reference=ref).passed


def test_hand_written_ere_lrl_and_sum_of_norms_lower():
    e = problem("ere-robust")
    F, W, b = Variable("F", (e.n, e.c)), Variable("W", (e.d, e.c)), Variable("b", (e.c,))
    ere = Model([Ridge(W, 0.05), GroupNorms(F - e.X @ W - b, 1.0), GraphTV(F, e.A, 2.0, "l2")],
                [FixedRows(F, np.arange(e.l), e.Y)], prediction=F)
    q = _lowering(ere).problem
    assert isinstance(q, ERE) and q.robust
    assert np.allclose(q.A.toarray(), 2.0 * e.A.toarray())

    lrl = Model([SquaredError(e.X[: e.l] @ W + b, e.Y, 1.0), Ridge(W, 0.05),
                 GraphQuadratic(e.X @ W + b, 3.0 * e.laplacian)])
    q = _lowering(lrl).problem
    assert isinstance(q, LRL) and np.allclose(q.A.toarray(), 3.0 * e.A.toarray())

    s = problem("sum-of-norms-k1")
    x = Variable("x", (s.n,))
    son = Model([L1(s.G @ x - s.h, s.w), QuadraticForm(x, s.Q, 0.5), Linear(x, s.c)])
    q = _lowering(son).problem
    assert isinstance(q, SumOfNorms) and q.k == 1
    rng = np.random.default_rng(0)
    pt = {"x": rng.standard_normal(s.n)}
    assert _rel(son.objective(pt), s.objective(pt)) <= RTOL_SAME


def test_hand_written_weber_point_lowers_to_sum_of_norms_with_groups_of_two():
    a = np.random.default_rng(5).standard_normal((7, 2))
    x = Variable("p", (2,))
    weber = Model([GroupNorms(row_blocks(np.tile(np.eye(2), (7, 1)) @ x - a.ravel(), 2)),
                   Ridge(x, 0.1)])
    q = _lowering(weber).problem
    assert isinstance(q, SumOfNorms) and (q.k, q.m) == (2, 7)
    assert np.allclose(q.Q.toarray(), 0.2 * np.eye(2))
    sol = ssl_opt.solve(weber, solver="irls")
    ref = ssl_opt.solve(weber, solver="cvxpy")
    assert _rel(sol.objective, ref.objective) <= RTOL_REFERENCE
    assert np.allclose(sol.x["p"], ref.x["p"], atol=1e-5)  # strictly convex: unique


def test_a_structure_mismatch_is_named():
    data, K, L = _moons()
    n, l = K.shape[0], len(data.y)
    alpha, b = Variable("alpha", (n,)), Variable("b")
    f = K @ alpha + b
    shifted = Model([MarginLossTerm(f[1:l + 1], data.y), RKHSNorm(alpha, K, 0.1),
                     GraphQuadratic(f, L, 0.1)])
    assert "first l = 6" in shifted.lowering_failures["LapSVM"]
    unbiased = Model([MarginLossTerm(f, np.sign(np.arange(n) - 20.5)), Ridge(alpha, 0.1)])
    assert "bias" in unbiased.lowering_failures["LinearSVM"]


# -------------------------------------------------------------- extra terms: refused
def _extra_term_cases():
    def lapsvm_l1():
        m = model("lapsvm")
        return m.add(L1(m["alpha"], 1e-3)), ("newton", "pcg"), "L1"

    def lapsvm_tv():
        m = model("lapsvm")
        W = sp.csr_matrix(np.diag(np.ones(39), 1) + np.diag(np.ones(39), -1))
        return m.add(GraphTV(m.f, W, 0.1)), ("newton", "pcg"), "GraphTV(weight=0.1"

    def laprls_l1():
        m = model("laprls-normalized-power-nobias")
        return m.add(L1(m["alpha"], 1e-3)), ("laprls-direct", "newton"), "L1"

    def linear_l1():
        m = model("linear-costs")
        return m.add(L1(m["w"], 0.01)), ("mfn",), "L1"

    def ere_group():
        m = model("ere-robust")
        return m.add(GroupNorms(m["W"], 0.1)), ("irls",), "GroupNorms(weight=0.1"

    def ere_group_stated_first():
        m = model("ere-robust")
        return (Model([GroupNorms(m["W"], 0.1), *m.terms], m.constraints, prediction=m.f),
                ("irls",), "GroupNorms(weight=0.1")

    def son_ridge_on_a_map():
        m = model("sum-of-norms-k2")
        return m.add(Ridge(np.ones((2, 6)) @ m["x"], 0.1)), ("irls",), "Ridge"

    return {f.__name__: f for f in (lapsvm_l1, lapsvm_tv, laprls_l1, linear_l1,
                                    ere_group, ere_group_stated_first,
                                    son_ridge_on_a_map)}


EXTRA = _extra_term_cases()


@pytest.mark.parametrize("case", sorted(EXTRA))
def test_an_extra_term_is_refused_naming_it(case):
    m, solvers, term = EXTRA[case]()
    assert not m.lowerings
    for name in solvers:
        solver = registry.get_solver(name)
        reasons = solver.missing(m)
        assert len(reasons) == 1 and term in reasons[0], reasons
        assert "has no counterpart in" in reasons[0]
        with pytest.raises(UnsupportedProblemError, match=term.split("(")[0]):
            ssl_opt.solve(m, solver=name)
    chosen = ssl_opt.select(m)
    assert chosen.solver not in solvers
    assert all(term in " ".join(chosen.unsupported[s]) for s in solvers)


def test_generic_solvers_take_over_an_extra_term():
    m, _, _ = EXTRA["lapsvm_l1"]()
    sol = ssl_opt.solve(m)
    ref = ssl_opt.solve(m, solver="cvxpy")
    assert sol.info.get("lowered_to") is None
    assert _rel(sol.objective, ref.objective) <= 1e-5


# ------------------------------------------------------------------------------ select
def test_select_names_the_family_solvers_and_their_predictions():
    data, K, L = _moons(n=100)
    p = LapSVM(K, L, data.y, gamma_A=1e-2, gamma_I=0.5)
    m = Model(p.terms, p.constraints, prediction=p.prediction_expression)
    # The cost models alone (measure=False): PCG's measured prediction varies run to run.
    chosen = ssl_opt.select(m, measure=False)
    assert chosen.solver == "newton", str(chosen)
    assert {"newton", "pcg", "cvxpy"} <= set(chosen.predictions)
    assert chosen.predictions["newton"].seconds < chosen.predictions["cvxpy"].seconds
    direct_choice = ssl_opt.select(p, measure=False)
    for name in ("newton", "pcg"):
        assert chosen.predictions[name] == direct_choice.predictions[name]
    assert "newton" in str(chosen) and "newton" in chosen.table()
    # Measured, the model is probed as the LapSVM it lowers to.
    assert ssl_opt.select(m).predictions["pcg"].source == "instance"


@pytest.mark.parametrize(("name", "solver"), [("linear-costs", "mfn"),
                                              ("ere-squared", "irls")])
def test_select_offers_the_family_solver_on_every_family(name, solver):
    chosen = ssl_opt.select(model(name))
    assert solver in chosen.predictions
    assert chosen.predictions[solver] == ssl_opt.select(problem(name)).predictions[solver]
