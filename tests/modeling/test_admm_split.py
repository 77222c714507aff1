"""The ADMM splitting solver of models (``admm-split``) against independent computations: the
CVXPY reference (objective to 1e-6 relative and ``ssl_opt.certify``), the simplex projection of
the rows by bisection on the threshold (a closed form the solver's projection does not share),
1-D total-variation denoising by BVLS on its box-constrained dual; plus honest statuses (a
wrong prox), the column view and the kernel reduction, the blocking terms it names and the
selection on the two variants it is the fast path of."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import lsq_linear

import ssl_opt
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.modeling import Model, Variable, variants
from ssl_opt.modeling.terms import (
    L1,
    Entropy,
    GraphQuadratic,
    GraphTV,
    LinearScore,
    MarginLossTerm,
    Ridge,
    SimplexRows,
    SquaredError,
)
from ssl_opt.plugins.model.admm_split import ADMMSplit
from ssl_opt.plugins.model.admm_view import View
from ssl_opt.solution import MAX_ITERATIONS, OPTIMAL, STALLED

SOLVER = ADMMSplit()


def reference(model):
    ref = ssl_opt.solve(model, solver="cvxpy")
    assert ref.status == OPTIMAL
    return ref


def assert_matches(model, sol, ref, rel=1e-6):
    assert sol.status == OPTIMAL, sol.info.get("certificate")
    assert abs(sol.objective - ref.objective) <= rel * max(1.0, abs(ref.objective))
    cert = ssl_opt.certify(model, sol, reference=ref)
    assert cert.passed, cert.report()


def simplex_by_bisection(V: np.ndarray) -> np.ndarray:
    """Rows of V projected on the simplex: ``max(v − τ, 0)`` with τ found by bisection on
    ``Σ max(v − τ, 0) = 1`` (no sort, unlike the solver's projection)."""
    lo, hi = V.min(axis=1) - 1.0, V.max(axis=1)
    for _ in range(200):
        tau = 0.5 * (lo + hi)
        over = np.maximum(V - tau[:, None], 0.0).sum(axis=1) > 1.0
        lo, hi = np.where(over, tau, lo), np.where(over, hi, tau)
    return np.maximum(V - (0.5 * (lo + hi))[:, None], 0.0)


def tv_denoise(b: np.ndarray, lam: float) -> np.ndarray:
    """argmin ½‖x − b‖² + λ Σ|x_{i+1} − x_i|: x = b − Dᵀp, p = argmin ½‖Dᵀp − b‖² over
    |p| ≤ λ (the dual, by BVLS)."""
    n = b.size
    D = sp.diags([-np.ones(n - 1), np.ones(n - 1)], [0, 1], shape=(n - 1, n)).toarray()
    p = lsq_linear(D.T, b, bounds=(-lam, lam), method="bvls", tol=1e-14).x
    return b - D.T @ p


# ------------------------------------------------------------------ independent solutions
def test_simplex_projection_of_rows_matches_bisection():
    rng = np.random.default_rng(0)
    V = 2.0 * rng.standard_normal((30, 4))
    Z = Variable("Z", (30, 4))
    model = Model([SquaredError(Z, V, 0.5)], [SimplexRows(Z)])
    sol = ssl_opt.solve(model, solver="admm-split")
    assert sol.status == OPTIMAL
    np.testing.assert_allclose(sol.x["Z"], simplex_by_bisection(V), atol=1e-7)


def test_tv_on_an_affine_argument_matches_bvls():
    rng = np.random.default_rng(1)
    n = 40
    b = np.repeat([0.0, 2.0, -1.0, 1.0], n // 4) + 0.3 * rng.standard_normal(n)
    x = Variable("x", (n,))
    D = sp.diags([-np.ones(n - 1), np.ones(n - 1)], [0, 1], shape=(n - 1, n)).tocsr()
    model = Model([SquaredError(x, b, 0.5), L1(D @ x, 0.4)])
    sol = ssl_opt.solve(model, solver="admm-split")
    assert sol.status == OPTIMAL
    np.testing.assert_allclose(sol.x["x"], tv_denoise(b, 0.4), atol=1e-6)
    assert sol.info["columns"] == 1 and not sol.info["kernel_reduced"]


# ------------------------------------------------------------------ the variants, vs CVXPY
def test_lass_l1_graph_matches_the_reference_and_is_the_fast_pick():
    model = variants.lass_l1_graph(90)
    sol = ssl_opt.solve(model, solver="admm-split")
    assert_matches(model, sol, reference(model))
    assert sol.info["columns"] == 3  # one n×n factorization, 3 right-hand sides
    assert ssl_opt.select(model, backend="fast").solver == "admm-split"
    # the multipliers: one per non-smooth term then constraint, of the arguments' shapes
    free = model.nonsmooth_terms + model.constraints
    assert [u.shape for u in sol.info["multipliers"]] == [t.shape for t in free]


def test_multiclass_simplex_uses_the_reduced_kernel_system():
    model = variants.multiclass_simplex(60)
    sol = ssl_opt.solve(model, solver="admm-split")
    assert_matches(model, sol, reference(model))
    assert sol.info["kernel_reduced"] and sol.info["columns"] == 3
    view = View(model)
    assert view.kernel is not None and view.size == 60 + 1  # α rows and the bias row
    assert ssl_opt.select(model, backend="fast").solver == "admm-split"


def test_flat_view_when_a_map_mixes_the_columns():
    """A 4×3 matrix applied to a length-3 variable mixes the columns of the (n, 3) view: the
    system is then assembled on the flat vector."""
    rng = np.random.default_rng(2)
    Z, w = Variable("Z", (12, 3)), Variable("w", (3,))
    Q = rng.standard_normal((4, 3))
    model = Model([SquaredError(Z, rng.standard_normal((12, 3)), 0.5),
                   SquaredError(Q @ w, rng.standard_normal(4), 1.0), Ridge(w, 0.1),
                   L1(Z + w, 0.3)])
    assert View(model).columns == 1
    sol = ssl_opt.solve(model, solver="admm-split")
    assert_matches(model, sol, reference(model))


def test_a_warm_start_with_multipliers_needs_fewer_iterations():
    model = variants.lass_l1_graph(60)
    cold = ssl_opt.solve(model, solver="admm-split")
    warm = ssl_opt.solve(model, solver="admm-split", warm_start=cold)
    assert warm.status == OPTIMAL and warm.iterations < cold.iterations


# ------------------------------------------------------------------ honesty
class HalfL1(L1):
    """A wrong prox: soft thresholding at half the weight (its subdifferential is right)."""

    def prox(self, v, t):
        return np.sign(v) * np.maximum(np.abs(v) - 0.5 * t * self.w, 0.0)


def test_a_wrong_prox_is_not_certified():
    rng = np.random.default_rng(3)
    n = 20
    b = np.repeat([0.0, 3.0], n // 2) + 0.2 * rng.standard_normal(n)
    x = Variable("x", (n,))
    model = Model([SquaredError(x, b, 0.5), HalfL1(x, 0.5)])
    sol = ssl_opt.solve(model, solver="admm-split")
    assert sol.status == STALLED  # a fixed point the certificate rejects, found quickly
    assert not ssl_opt.certify(model, sol).passed


def test_an_iteration_cap_is_reported_honestly():
    model = variants.lass_l1_graph(60)
    sol = ssl_opt.solve(model, solver="admm-split", max_iter=7)
    assert sol.status == MAX_ITERATIONS and sol.iterations == 7
    assert "certificate" in sol.info  # the full certificate decided the status


# ------------------------------------------------------------------ structure and selection
def test_structure_reasons_name_the_blocking_term():
    rng = np.random.default_rng(4)
    Z = Variable("Z", (10, 3))
    W = sp.random(10, 10, density=0.4, random_state=0)
    W = (W + W.T).tocsr()
    G = rng.random((10, 3))
    entropy = Model([LinearScore(Z, G), Entropy(Z, 0.1)], [SimplexRows(Z)])
    assert any("entropy" in r for r in SOLVER.missing(entropy))
    y = np.where(rng.random(10) > 0.5, 1.0, -1.0)
    a = Variable("a", (10,))
    hinge = Model([MarginLossTerm(a, y, "squared_hinge"), L1(a, 0.1)])
    assert any("margin_loss" in r and "quadratic" in r for r in SOLVER.missing(hinge))
    smooth = Model([LinearScore(Z, G), GraphQuadratic(Z, sp.diags(W.sum(1).A1) - W, 0.1)])
    assert any("non-smooth" in r for r in SOLVER.missing(smooth))
    ok = Model([LinearScore(Z, G), GraphTV(Z, W, 0.05, norm="l1")], [SimplexRows(Z)])
    assert SOLVER.missing(ok) == []


def test_lass_entropy_keeps_mirror():
    model = variants.lass_entropy(150)
    assert SOLVER.missing(model)
    assert ssl_opt.select(model, backend="fast").solver == "mirror"


@pytest.mark.parametrize("name, size", [("lass_l1_graph", 150), ("multiclass_simplex", 90)])
def test_predicted_time_is_finite_and_small(name, size):
    model = variants.VARIANTS[name](size)
    assert 0.0 < SOLVER.predicted_time(model) < 1.0


@pytest.mark.parametrize("options,named", [
    ({"rho": float("nan")}, "rho"), ({"rho": -1.0}, "rho"), ({"relaxation": 2.0}, "relaxation"),
    ({"relaxation": 0.0}, "relaxation"), ({"tol": float("inf")}, "tol"),
    ({"check_every": 0}, "check_every")])
def test_bad_options_are_refused_by_name(options, named):
    model = variants.lass_l1_graph(30)
    with pytest.raises(InvalidInputError, match=named):
        ssl_opt.solve(model, solver="admm-split", **options)
