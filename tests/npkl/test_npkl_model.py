"""NPKL as a named model on the core: its terms (``TraceProduct``, ``MarginLossTerm`` on the
pair entries, the ``PSD`` constraint), the reference built from those terms, the model's own
certificate on variants, and the generic solvers that now apply to it.

Independent computations: the objective rebuilt with dense numpy from Δ, the pairs and the
loss; the PSD projection and the normal cone checked against CVXPY and against their defining
properties; the SDP written here in its primal form; NPKL's dual-form reference.
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp

import ssl_opt
from ssl_opt.builders import knn_graph
from ssl_opt.certificate import certify
from ssl_opt.datasets.clusters import double_spiral, pairwise_constraints
from ssl_opt.modeling import (
    PSD,
    Model,
    Ridge,
    TraceProduct,
    Variable,
    check_term,
    entries,
)
from ssl_opt.problems import NPKL


def _npkl(loss: str, n: int = 30, seed: int = 0) -> NPKL:
    data = double_spiral(n=n, seed=seed)
    pairs, labels = pairwise_constraints(data.y, 14, seed=seed)
    return NPKL(knn_graph(data.X, n_neighbors=5), pairs, labels, C=1.0, loss=loss)


def _loss(name: str, t: np.ndarray) -> np.ndarray:
    return {"square": (1 - t) ** 2, "squared_hinge": np.maximum(0, 1 - t) ** 2,
            "hinge": np.maximum(0, 1 - t)}[name]


def _sym_psd(n: int, rank: int, seed: int) -> np.ndarray:
    F = np.random.default_rng(seed).standard_normal((n, rank))
    return F @ F.T


# ---------------------------------------------------------------------- the terms
def test_psd_projection_is_cvxpys_nearest_psd_matrix():
    rng = np.random.default_rng(0)
    V = rng.standard_normal((7, 7))
    P = PSD(Variable("Z", (7, 7))).prox(V, 1.0)
    X = cp.Variable((7, 7), PSD=True)
    cp.Problem(cp.Minimize(cp.sum_squares(X - V))).solve(solver="CLARABEL")
    assert np.max(np.abs(P - X.value)) < 1e-6
    assert np.allclose(P, P.T) and np.linalg.eigvalsh(P)[0] > -1e-12


def test_psd_normal_cone_projection_is_in_the_cone_and_nearest():
    """At a rank-2 Z, the projection of u is skew + (−W), W ⪰ 0 with WZ = 0, and no sampled
    element of the cone is nearer to u."""
    n = 6
    Z = _sym_psd(n, 2, 1)
    term = PSD(Variable("Z", (n, n)))
    rng = np.random.default_rng(2)
    u = rng.standard_normal((n, n))
    p = term.project_subgradient(Z, u, 1e-9)
    sym = 0.5 * (p + p.T)
    assert np.linalg.eigvalsh(-sym)[0] > -1e-10  # −sym(p) ⪰ 0
    assert np.max(np.abs(sym @ Z)) < 1e-9  # WZ = 0
    best = np.sum((p - u) ** 2)
    null = np.linalg.eigh(Z)[1][:, :n - 2]
    for _ in range(200):
        S = rng.standard_normal((n - 2, n - 2))
        A = rng.standard_normal((n, n))
        other = 0.5 * (A - A.T) - null @ (S @ S.T) @ null.T
        assert np.sum((other - u) ** 2) >= best - 1e-9


def test_psd_feasibility_reads_asymmetry_and_negative_eigenvalues():
    term = PSD(Variable("Z", (5, 5)))
    Z = _sym_psd(5, 3, 3)
    assert term.feasibility(Z) < 1e-12
    shifted = Z - 2.0 * np.eye(5)
    lo, hi = np.linalg.eigvalsh(shifted)[[0, -1]]
    assert term.feasibility(shifted) == pytest.approx(max(0.0, -lo) / max(1.0, hi))
    skewed = Z.copy()
    skewed[0, 1] += 0.5
    assert term.feasibility(skewed) > 0.5 / np.max(np.abs(skewed)) - 1e-12


def test_psd_reports_a_non_finite_point_as_infeasible():
    p = _npkl("square")
    variant = p.add(Ridge(p["Z"], 0.2))
    residuals = variant.kkt({"Z": np.full((p.n, p.n), np.nan)})
    assert residuals["feasibility"] == np.inf and not residuals["stationarity"] <= 1e-6


def test_psd_prox_passes_the_term_checks():
    check_term(PSD(Variable("Z", (6, 6))), _sym_psd(6, 2, 4))


def test_entries_and_trace_product_against_numpy():
    rng = np.random.default_rng(5)
    Z = Variable("Z", (5, 5))
    i, j = np.array([0, 1, 3]), np.array([2, 4, 4])
    e = entries(Z, i, j)
    V = rng.standard_normal((5, 5))
    assert np.array_equal(e.value({"Z": V}), V[i, j])
    g = rng.standard_normal(3)
    expected = np.zeros((5, 5))
    expected[i, j] = g
    assert np.array_equal(e.adjoint(g)["Z"], expected)
    D = sp.random(5, 5, density=0.4, random_state=0, format="csr")
    for C in (D, D.toarray()):
        t = TraceProduct(Z, C, weight=0.5)
        assert t.value(V) == pytest.approx(0.5 * np.sum(D.toarray() * V))
        assert np.allclose(t.gradient(V), 0.5 * D.toarray())
    with pytest.raises(ValueError, match="entries"):
        entries(Z, [0, 5], [1, 1])
    with pytest.raises(ValueError, match="rows of entries must be integer"):
        entries(Z, [0.5, 1.0], [1, 1])
    bad = D.toarray()
    bad[0, 0] = np.nan
    for C in (bad, bad.astype(complex)):
        with pytest.raises(ValueError, match="C of TraceProduct must hold finite real"):
            TraceProduct(Z, C)
    with pytest.raises(ValueError, match="C of TraceProduct must be a matrix"):
        TraceProduct(Z, np.ones((4, 5)))


# ---------------------------------------------------------------------- the named model
@pytest.mark.parametrize("loss", ["square", "squared_hinge", "hinge"])
def test_npkl_is_a_model_whose_terms_give_the_papers_objective(loss):
    p = _npkl(loss)
    assert isinstance(p, Model) and p.structure.family == "npkl"
    assert [type(t).__name__ for t in p.all_terms] == ["TraceProduct", "MarginLossTerm", "PSD"]
    Z = _sym_psd(p.n, 4, 6) / p.n
    Delta = p.Delta.toarray()
    t = p.labels * Z[p.pairs[:, 0], p.pairs[:, 1]]
    expected = np.sum(Delta * Z) + p.C * np.sum(_loss(loss, t))
    assert p.objective({"Z": Z}) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("loss", ["square", "hinge"])
def test_the_reference_from_the_terms_matches_the_dual_reference_and_a_hand_written_sdp(loss):
    p = _npkl(loss)
    from_terms = ssl_opt.solve(Model(p.terms, p.constraints), solver="cvxpy")
    dual = ssl_opt.solve(p, solver="cvxpy")
    Z = cp.Variable((p.n, p.n), PSD=True)
    t = cp.multiply(p.labels, Z[p.pairs[:, 0], p.pairs[:, 1]])
    fit = cp.sum(cp.square(1 - t)) if loss == "square" else cp.sum(cp.pos(1 - t))
    hand = cp.Problem(cp.Minimize(cp.trace(p.Delta.toarray() @ Z) + p.C * fit))
    hand.solve(solver="CLARABEL")
    assert from_terms.status == "optimal"
    for value in (dual.objective, hand.value):
        assert from_terms.objective == pytest.approx(value, rel=1e-6)
    # The terms' certificate and NPKL's conic one agree: both pass at the optimum and both
    # fail at a feasible point moved off it.
    plain = Model(p.terms, p.constraints)
    assert max(plain.kkt(dual.x).values()) < 1e-5 and max(p.kkt(dual).values()) < 1e-6
    moved = {"Z": dual.x["Z"] + 0.05 * _sym_psd(p.n, 3, 7) / p.n}
    assert plain.kkt(moved)["stationarity"] > 1e-3
    assert max(p.kkt(moved).values()) > 1e-3


def test_the_models_certificate_of_a_variant_tells_its_optimum_from_another_point():
    """A variant (NPKL + a Frobenius ridge) has the model's own certificate: it passes at the
    variant's reference optimum and fails at NPKL's optimum, which is not the variant's."""
    p = _npkl("square")
    variant = p.add(Ridge(p["Z"], 0.2))
    assert type(variant) is Model
    opt = ssl_opt.solve(variant, solver="cvxpy")
    assert opt.status == "optimal"
    assert max(variant.kkt(opt).values()) < 1e-5
    other = ssl_opt.solve(p, solver="cvxpy")
    assert variant.kkt(other.x)["stationarity"] > 1e-2
    assert certify(variant, opt).passed


def _numpy_conic_stationarity(p: NPKL, ridge: float, Z: np.ndarray) -> float:
    """max(gradient_psd, complementarity) of NPKL (square loss) + ridge·‖Z‖², densely:
    G = Δ + sym(Σ_p C ℓ'(t_p) T_p E_ij) + 2·ridge·Z, from numpy's eigvalsh."""
    i, j = p.pairs[:, 0], p.pairs[:, 1]
    t = p.labels * Z[i, j]
    E = np.zeros((p.n, p.n))
    np.add.at(E, (i, j), p.C * -2.0 * (1.0 - t) * p.labels)
    G = p.Delta.toarray() + 0.5 * (E + E.T) + 2.0 * ridge * Z
    g = np.linalg.eigvalsh(G)
    omega = float(np.sum(p.Delta.toarray() * Z) + p.C * np.sum((1.0 - t) ** 2)
                  + ridge * np.sum(Z * Z))
    return max(max(0.0, -g[0]) / max(1.0, g[-1]), abs(float(np.sum(G * Z))) / max(1.0, abs(omega)))


def test_a_psd_variants_certificate_reads_the_conic_conditions_at_an_interior_point_optimum():
    """At an interior-point optimum the small eigenvalues of Z are ~1e-8, not 0, so the PSD
    normal cone (eigenvalues below a tolerance) reads ~1e-6; the conic reading (G ⪰ 0,
    ⟨G, Z⟩ = 0) reports the optimum as one, matches numpy's, and fails at a PSD point moved
    off it."""
    p, ridge = _npkl("square"), 0.2
    variant = p.add(Ridge(p["Z"], ridge))
    opt = ssl_opt.solve(variant, solver="cvxpy")
    Z = opt.x["Z"]
    assert np.linalg.eigvalsh(0.5 * (Z + Z.T))[0] > -1e-7  # an interior-point Z: not clipped
    expected = _numpy_conic_stationarity(p, ridge, 0.5 * (Z + Z.T))
    assert expected < 1e-8
    assert variant.kkt(opt)["stationarity"] <= max(1e-8, 2 * expected)
    # the normal cone alone (eigenvalues below the kink tolerance count as 0) reads it worse
    assert variant.kkt(opt, cone="normal_cone")["stationarity"] > 10 * max(1e-8, expected)
    moved = Z + 0.05 * _sym_psd(p.n, 3, 7) / p.n
    got = variant.kkt({"Z": moved})["stationarity"]
    assert got > 1e-3
    assert abs(got - _numpy_conic_stationarity(p, ridge, moved)) <= 1e-8 * got


def test_pdhg_certifies_the_hinge_npkl_where_bcd_stalls():
    """BCD stops at a fixed point of the factored problem for the hinge ([003 Fig. 1],
    ``stalled``); the generic primal–dual solver, which applies to the named model through the
    PSD constraint's projection, reaches the SDP optimum and NPKL's certificate."""
    p = _npkl("hinge")
    ref = ssl_opt.solve(p, solver="cvxpy")
    sol = ssl_opt.solve(p, solver="pdhg", time_limit=120)
    assert sol.status == "optimal"
    assert sol.objective == pytest.approx(ref.objective, rel=1e-6)
    assert max(p.kkt(sol).values()) < 1e-6


def test_selection_keeps_the_papers_solver_and_prices_the_eigendecompositions():
    from ssl_opt import registry

    p = _npkl("square", n=200)
    assert ssl_opt.select(p).solver == "bcd"
    # Without a cost model, every iteration of pdhg and fista is priced with its projection
    # onto the PSD cone (an n³ eigendecomposition) over at least a hundred iterations.
    for name in ("pdhg", "fista"):
        assert registry.get_solver(name).predicted_time(p) > 100 * 2.5e-10 * p.n**3
