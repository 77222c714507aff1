"""Honest statuses: a model with no optimum ends ``infeasible`` or ``unbounded``, a NaN
objective ``failed``, each with a reason naming what is at fault; a certificate never passes on
a user term's wrong oracle (docs/modeling.md, "Statuses").

Each model is infeasible, unbounded or broken by construction (stated beside it), so the
expected status does not come from the code under test."""

import numpy as np
import pytest

import ssl_opt
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.modeling import Model, Term, Variable
from ssl_opt.modeling.terms import (
    Box,
    GraphQuadratic,
    Linear,
    LinearScore,
    NonNegative,
    Ridge,
    SimplexRows,
    SquaredError,
)

cp = pytest.importorskip("cvxpy")


def _path_laplacian(n):
    L = 2.0 * np.eye(n) - np.eye(n, k=1) - np.eye(n, k=-1)
    L[0, 0] = L[-1, -1] = 1.0
    return L


def _simplex_with_small_box(n=30, c=3, extra=()):
    """Rows on the simplex (summing to 1) with every entry ≤ 0.1: a row of c = 3 entries sums
    to at most 0.3, so no point is feasible."""
    G = np.zeros((n, c))
    G[: n // 3, 0] = G[n // 3: 2 * n // 3, 1] = 1.0
    Z = Variable("Z", (n, c))
    terms = [LinearScore(Z, G), GraphQuadratic(Z, _path_laplacian(n), 0.1)]
    return Model(terms, [SimplexRows(Z), Box(Z, 0.0, 0.1), *extra], prediction=Z), Z


@pytest.mark.parametrize("solver", ["admm-split", "pdhg"])
def test_infeasible_constraints_stop_early_with_the_conflict_named(solver):
    model, _ = _simplex_with_small_box()
    sol = ssl_opt.solve(model, solver=solver, max_iter=20000)
    assert sol.status == "infeasible"
    assert sol.iterations < 2000  # stopped when the residual stagnated, not at the cap
    assert "SimplexRows" in sol.info["reason"] and "box[0, 0.1]" in sol.info["reason"]


def test_reference_reports_infeasible_and_the_filter_drops_a_harmless_constraint():
    w = Variable("w", (4,))
    model, _ = _simplex_with_small_box(extra=[NonNegative(w)])
    model = model.add(Ridge(w, 1.0))
    sol = ssl_opt.solve(model, backend="reference")
    assert sol.status == "infeasible"
    reason = sol.info["reason"]
    assert "SimplexRows" in reason and "box[0, 0.1]" in reason
    assert "NonNegative" not in reason.split("conflict")[0].split("; ")[-1]
    assert not ssl_opt.certify(model, sol, reference=False).passed


def test_feasible_model_is_not_called_infeasible_when_stopped_short():
    """The same model with the box at 0.5 (rows can sum to 1): a capped run stays
    max_iterations."""
    n, c = 30, 3
    G = np.zeros((n, c))
    G[:10, 0] = 1.0
    Z = Variable("Z", (n, c))
    model = Model([LinearScore(Z, G), GraphQuadratic(Z, _path_laplacian(n), 0.1)],
                  [SimplexRows(Z), Box(Z, 0.0, 0.5)], prediction=Z)
    sol = ssl_opt.solve(model, solver="admm-split", max_iter=3)
    assert sol.status == "max_iterations"


def test_unbounded_linear_objective_on_the_nonnegative_orthant():
    """min −Σ y over y ≥ 0 decreases without bound along y = t·1."""
    y = Variable("y", (10,))
    model = Model([Linear(y, -np.ones(10))], [NonNegative(y)])
    fast = ssl_opt.solve(model, backend="fast")
    assert fast.status == "unbounded", fast
    assert "decreases without bound" in fast.info["reason"]
    assert ssl_opt.solve(model, backend="reference").status == "unbounded"


def _lass_without_simplex(n=30):
    """LASS's score −⟨G, Z⟩ with only a Laplacian term: constant rows Z = t·1gᵀ leave the
    graph term at 0 and lower the score without bound."""
    G = np.zeros((n, 3))
    G[:10, 0] = 1.0
    Z = Variable("Z", (n, 3))
    return Model([LinearScore(Z, G), GraphQuadratic(Z, _path_laplacian(n), 0.1)],
                 prediction=Z)


def test_unbounded_lass_without_its_simplex():
    model = _lass_without_simplex()
    sol = ssl_opt.solve(model, backend="fast")
    assert sol.status == "unbounded", sol


@pytest.mark.parametrize("solver", ["pdhg", "lbfgs", "fista"])
def test_divergence_stops_the_run_early(solver):
    """On min −Σ y over y ≥ 0 a run stops ``unbounded`` as soon as the objective passes
    −10⁶·max(1, |f(0)|) along a recession direction, not at its iteration cap (pdhg ran its
    50,000 iterations before the end-of-run diagnosis, lbfgs 1,000)."""
    y = Variable("y", (10,))
    model = Model([Linear(y, -np.ones(10))], [NonNegative(y)])
    sol = ssl_opt.solve(model, solver=solver)
    assert sol.status == "unbounded", sol
    assert sol.iterations <= 200
    assert "decreases without bound" in sol.info["reason"]


@pytest.mark.parametrize("solver", ["newton-cg", "irls-newton", "irls-mm"])
def test_divergence_of_a_newton_method_is_caught_while_values_are_exact(solver):
    """LASS without its simplex: a Newton step jumps to |objective| ~ 1e14-1e33; the watch
    tests each point while the objective keeps falling, and the run ends ``unbounded`` within
    a few steps (newton-cg ran to its 100-step cap before; irls-mm's singular steps ended
    ``max_iterations`` at +4.9e50, its last iterate instead of its best)."""
    sol = ssl_opt.solve(_lass_without_simplex(), solver=solver)
    assert sol.status == "unbounded", sol
    assert sol.iterations <= 20 and sol.objective < 0


def test_a_divergence_that_stalls_short_of_the_next_mark_is_tested_again():
    """L-BFGS on LASS without its simplex: its iterates carry a graph-quadratic part about half
    the linear one until ~80 iterations, then the objective stalls at round-off (−3.6e16) short
    of the next mark; tested again on the plateau, the run ends ``unbounded`` (it ran its
    1,000 iterations before)."""
    sol = ssl_opt.solve(_lass_without_simplex(), solver="lbfgs")
    assert sol.status == "unbounded", sol
    assert sol.iterations <= 300


def test_bounded_negative_objective_stopped_short_is_not_unbounded():
    """min −Σ y + ‖y‖² over 0 ≤ y ≤ 1 (optimum y = ½, objective −2.5) is bounded; a run
    capped at one iteration keeps its own status."""
    y = Variable("y", (10,))
    model = Model([Linear(y, -np.ones(10)), Ridge(y, 1.0)], [Box(y, 0.0, 1.0)])
    sol = ssl_opt.solve(model, solver="pdhg", max_iter=1)
    assert sol.status == "max_iterations"


class _PseudoHuber(Term):
    """δ²Σ(√(1 + (z/δ)²) − 1); ``broken`` makes the value NaN, ``wrong`` the gradient 1.3×."""

    name = "pseudo_huber"

    def __init__(self, z, broken=False, wrong=False):
        super().__init__(z, 1.0)
        self.broken, self.wrong = broken, wrong

    def value(self, z):
        return float("nan") if self.broken else float(np.sum(np.sqrt(1 + z**2) - 1))

    def cvxpy(self, z):
        return cp.sum(cp.huber(z, 1.0))  # not the term's form: only its presence matters

    def gradient(self, z):
        return (1.3 if self.wrong else 1.0) * z / np.sqrt(1 + z**2)

    def hessp(self, z, v):
        return v / (1 + z**2) ** 1.5


def _user_model(**kind):
    x = Variable("x", (20,))
    target = np.random.default_rng(0).normal(size=20) * 3
    return Model([SquaredError(x, target, 0.5), _PseudoHuber(x, **kind)])


@pytest.mark.parametrize("solver", ["lbfgs", "newton-cg", "fista"])
def test_nan_value_fails_naming_the_term(solver):
    model = _user_model(broken=True)
    with pytest.raises(InvalidInputError, match="is NaN"):
        ssl_opt.solve(model, solver=solver)
    sol = ssl_opt.solve(model, solver=solver, check_terms=False)
    assert sol.status == "failed"
    assert "pseudo_huber" in sol.info["reason"] and "nan" in sol.info["reason"]


def test_certificate_does_not_pass_on_a_wrong_gradient():
    """newton-cg told not to check the oracles converges for the wrong gradient; the
    residual-only certificate must not pass it, and the same solve with the right gradient
    passes (the control)."""
    wrong = _user_model(wrong=True)
    sol = ssl_opt.solve(wrong, solver="newton-cg", check_terms=False)
    cert = ssl_opt.certify(wrong, sol, reference=False)
    assert not cert.passed
    assert any(c.name == "oracles" and "gradient" in c.note for c in cert.checks)
    right = _user_model()
    sol = ssl_opt.solve(right, solver="newton-cg")
    assert ssl_opt.certify(right, sol, reference=False).passed


def test_infeasibility_watch_needs_rows_from_both_halves_of_the_run():
    """A solver whose first recorded row comes after the first check point (pdhg checking every
    500 iterations) is not judged on one half of the run: no error, and it still stops
    infeasible once both halves have rows."""
    model, _ = _simplex_with_small_box()
    sol = ssl_opt.solve(model, solver="pdhg", max_iter=20000, check_every=500)
    assert sol.status == "infeasible"


def test_diagnose_names_its_argument_and_leaves_the_point_alone():
    y = Variable("y", (10,))
    model = Model([Linear(y, -np.ones(10))], [NonNegative(y)])
    with pytest.raises(InvalidInputError, match="solution must be a Solution"):
        model.diagnose({"y": np.ones(10)})
    sol = ssl_opt.solve(model, backend="fast")
    before = sol.x["y"].copy()
    model.diagnose(sol)
    assert np.array_equal(sol.x["y"], before)
