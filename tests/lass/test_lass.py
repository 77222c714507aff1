"""LASS, the Laplacian assignment model [002], docs/design.md §4.3: the problem, its CVXPY
reference, the generic solvers that solve it (LASS is a named model), its certificate, the
paper's multipliers, the out-of-sample map and the simplex projection.

    min_Z λ tr(ZᵀLZ) − tr(GᵀZ)   s.t.  Z1 = 1,  Z ≥ 0,     L = D − W
    KKT:  2λLZ − G − ν1ᵀ − Ψ = 0,  Z1 = 1,  Z ≥ 0,  Ψ ≥ 0,  Ψ∘Z = 0.

Every check compares against something computed *independently* of the code under test: the
CVXPY reference (Clarabel) and OSQP, CVXPY programs written here (a dense-Laplacian LASS whose
constraint duals are the multipliers, the per-item out-of-sample QP, the Euclidean
projection), closed forms from the paper's theorems, brute-force enumeration, and dense numpy
linear algebra (L, the objective and the KKT residuals are rebuilt here from W and G).

Accuracy note (measured): Clarabel stops at a duality gap of ~1e-10, which pins the objective
to ~1e-11 relative but an entry where both Z_nk and Ψ_nk are small only to ~1e-5 (e.g. Z_nk =
1.4e-5 and Ψ_nk = 8e-5 where OSQP-polished and the first-order solvers agree on Z_nk = 0 to
1e-12). Entrywise comparisons of Z with the Clarabel reference therefore use 1e-4; tight
entrywise checks use OSQP (polished) or closed forms.
"""

from __future__ import annotations

import os
from functools import cache
from itertools import combinations

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ssl_opt
from ssl_opt.builders import knn_graph
from ssl_opt.components import project_rows_to_simplex
from ssl_opt.datasets.synthetic import two_moons
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.problems import LASS
from ssl_opt.solution import OPTIMAL

EXAMPLES = int(os.environ.get("SSL_OPT_EXAMPLES", 10))


# ------------------------------------------------------------------------------------ helpers


def _rel(a, b):
    return abs(a - b) / max(1.0, abs(b))


def _dense(W):
    return W.toarray() if sp.issparse(W) else np.asarray(W, dtype=float)


def _np_laplacian(W):
    A = _dense(W)
    return np.diag(A.sum(axis=1)) - A


def _np_objective(W, G, lam, Z):
    L = _np_laplacian(W)
    return float(lam * np.trace(Z.T @ L @ Z) - np.sum(_dense(G) * Z))


def _kkt_program(W, G, lam) -> dict:
    """LASS [002 eq. 1] written here and solved by CVXPY + Clarabel at tight tolerances, the
    Laplacian term as ``λ‖BᵀZ‖²`` with the incidence matrix built here (one column
    ``√w_ij (e_i − e_j)`` per edge, ``L = BBᵀ``): ``Z``, the objective and the multipliers in the
    KKT convention ``2λLZ − G − ν1ᵀ − Ψ = 0`` (CVXPY's Lagrangian is
    ``f + ν_cvx(Z1 − 1) − Ψ∘Z``, so ``ν = −ν_cvx``)."""
    A, G = np.triu(_dense(W), k=1), _dense(G)
    i, j = np.nonzero(A)
    w = np.sqrt(A[i, j])
    e = np.arange(i.size)
    Bt = sp.csr_matrix((np.concatenate([w, -w]), (np.concatenate([e, e]), np.concatenate([i, j]))),
                       shape=(i.size, A.shape[0]))
    Z = cp.Variable(G.shape)
    rows, nonneg = cp.sum(Z, axis=1) == 1, Z >= 0
    prog = cp.Problem(cp.Minimize(lam * cp.sum_squares(Bt @ Z) - cp.sum(cp.multiply(G, Z))),
                      [rows, nonneg])
    prog.solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    assert np.allclose((Bt.T @ Bt).toarray(), _np_laplacian(W))
    return {"Z": np.asarray(Z.value), "objective": float(prog.value),
            "nu": -np.asarray(rows.dual_value, dtype=float).reshape(-1),
            "Psi": np.asarray(nonneg.dual_value, dtype=float)}


@cache
def _moons_duals(seed, **kw) -> dict:
    W, G, lam, _, _ = _moons(seed, **kw)
    return _kkt_program(W, G, lam)


def _np_kkt(W, G, lam, Z, nu, Psi):
    """KKT residuals [002 eq. 4] rebuilt here with dense numpy, scaled like the library's."""
    L = _np_laplacian(W)
    G = _dense(G)
    LZ2 = 2.0 * lam * L @ Z
    s = max(1.0, np.abs(G).max(), np.abs(LZ2).max())
    return {
        "stationarity": np.abs(LZ2 - G - nu[:, None] - Psi).max() / s,
        "row_sums": np.abs(Z.sum(axis=1) - 1.0).max(),
        "nonnegativity": max(0.0, -Z.min()),
        "dual_feasibility": max(0.0, -Psi.min()) / s,
        "complementarity": np.abs(Psi * Z).max() / s,
    }


def _failed(cert):
    return {c.name for c in cert.checks if not c.passed}


def _make_G(rng, n, K, info, sign):
    """Item–category similarities: rows with information with probability ``info``.

    ``"nonneg"``: a dominant category (+1) plus |N(0, 0.3)| noise; ``"any"``: N(0, 1)."""
    G = np.zeros((n, K))
    rows = rng.random(n) < info
    m = int(rows.sum())
    if sign == "nonneg":
        G[rows] = np.abs(0.3 * rng.standard_normal((m, K)))
        G[np.flatnonzero(rows), rng.integers(0, K, m)] += 1.0
    else:
        G[rows] = rng.standard_normal((m, K))
    return G


@cache
def _moons(seed, n=150, K=3, info=0.3, sign="nonneg", lam=0.5, n_neighbors=6):
    """A kNN graph of two moons and random category information; problem and its reference
    (cached: problems are immutable and tests copy before perturbing)."""
    data = two_moons(n=n, n_labeled=2, noise=0.1, seed=seed)
    W = knn_graph(data.X, n_neighbors=n_neighbors)
    G = _make_G(np.random.default_rng(seed + 1000), n, K, info, sign)
    problem = LASS(W, G, lam)
    ref = ssl_opt.solve(problem, solver="cvxpy")
    assert ref.status == OPTIMAL
    return W, G, lam, problem, ref


@cache
def _osqp(seed, **kw):
    problem = _moons(seed, **kw)[3]
    return ssl_opt.solve(problem, solver="cvxpy", cvxpy_solver="OSQP")


#: The generic solvers of models that solve LASS (``solve`` picks one of the first two).
SOLVERS = ("fista", "admm-split", "pdhg")


@cache
def _fast(seed, **kw):
    """What ``solve`` returns with its own choice of solver."""
    problem = _moons(seed, **kw)[3]
    return ssl_opt.solve(problem)


def _brute_force_simplex_projection(v):
    """argmin ‖z − v‖ over the simplex by enumerating every support S: on S, z = v − τ with
    τ = (Σ_S v − 1)/|S|; a candidate must have z_S ≥ 0 (the closest feasible one wins)."""
    K = v.size
    best, best_d = None, np.inf
    for size in range(1, K + 1):
        for S in combinations(range(K), size):
            S = list(S)
            tau = (v[S].sum() - 1.0) / size
            z = np.zeros(K)
            z[S] = v[S] - tau
            if z.min() < -1e-12:
                continue
            d = np.sum((z - v) ** 2)
            if d < best_d - 1e-15:
                best, best_d = z, d
    return best


def _check_projection_conditions(v, z, atol):
    """Optimality of z = Π(v): z ≥ 0, Σz = 1 and a threshold τ with v_k − z_k = τ on the
    support and v_k ≤ τ off it (the KKT conditions of min ½‖z − v‖²)."""
    assert z.min() >= 0.0
    assert abs(z.sum() - 1.0) <= atol
    on = z > atol
    assert on.any()
    taus = (v - z)[on]
    tau = taus.mean()
    np.testing.assert_allclose(taus, tau, atol=atol * max(1.0, np.abs(v).max()))
    assert np.all(v[~on] <= tau + atol * max(1.0, np.abs(v).max()))


# ------------------------------------------------ 0. the problem's own evaluation vs numpy


def test_objective_gradient_and_laplacian_against_numpy():
    W, G, lam, problem, _ = _moons(0)
    rng = np.random.default_rng(3)
    Z = rng.dirichlet(np.ones(3), size=150)
    assert _rel(problem.objective({"Z": Z}), _np_objective(W, G, lam, Z)) < 1e-12
    np.testing.assert_allclose(problem.gradient({"Z": Z})["Z"],
                               2 * lam * _np_laplacian(W) @ Z - G, atol=1e-12)
    np.testing.assert_allclose(problem.L.toarray(), _np_laplacian(W), atol=0)
    # Finite differences of the objective along a random direction.
    E = rng.standard_normal(Z.shape)
    h = 1e-6
    fd = (problem.objective({"Z": Z + h * E}) - problem.objective({"Z": Z - h * E})) / (2 * h)
    assert abs(fd - np.sum(problem.gradient({"Z": Z})["Z"] * E)) < 1e-6 * max(1.0, abs(fd))


# ------------------------------------------ 1. generic solvers vs the reference, OSQP, random


@pytest.mark.parametrize("seed,sign", [(0, "nonneg"), (2, "any")])
@pytest.mark.parametrize("solver", SOLVERS)
def test_generic_solvers_match_cvxpy_reference(seed, sign, solver):
    W, G, lam, problem, ref = _moons(seed, sign=sign)
    sol = ssl_opt.solve(problem, solver=solver)
    assert sol.status == OPTIMAL
    p_star = _np_objective(W, G, lam, ref.x["Z"])
    f = _np_objective(W, G, lam, sol.x["Z"])
    assert _rel(f, p_star) < 1e-6
    assert _rel(sol.objective, f) < 1e-12
    cert = ssl_opt.certify(problem, sol, reference=ref)
    assert cert.passed, cert.report()
    # The paper's multipliers recovered from Z satisfy the KKT system, checked with numpy.
    res = _np_kkt(W, G, lam, sol.x["Z"], *problem.multipliers(sol.x["Z"]))
    assert max(res.values()) < 1e-6, res
    # Clarabel pins Z only to ~1e-5 entrywise (module note); OSQP (polished) is tighter.
    np.testing.assert_allclose(sol.x["Z"], ref.x["Z"], atol=1e-4)
    np.testing.assert_allclose(sol.x["Z"], _osqp(seed, sign=sign).x["Z"], atol=1e-6)


@pytest.mark.parametrize("seed,sign", [(0, "nonneg"), (1, "nonneg"), (2, "any")])
def test_clarabel_and_osqp_agree_and_match_a_dense_formulation(seed, sign):
    W, G, lam, problem, ref = _moons(seed, sign=sign)
    osqp = _osqp(seed, sign=sign)
    assert osqp.status == OPTIMAL
    assert _rel(osqp.objective, ref.objective) < 1e-8
    np.testing.assert_allclose(osqp.x["Z"], ref.x["Z"], atol=1e-4)
    # Both are feasible to solver precision.
    for sol in (ref, osqp):
        Z = sol.x["Z"]
        assert np.abs(Z.sum(axis=1) - 1).max() < 1e-8 and Z.min() > -1e-8
    # An independent CVXPY program with the dense Laplacian (no incidence factor, no terms).
    assert _rel(_moons_duals(seed, sign=sign)["objective"], ref.objective) < 1e-7
    assert _rel(ref.objective, _np_objective(W, G, lam, ref.x["Z"])) < 1e-12


def _random_instance(seed, n, K, density, lam, zero_rows, integer_G):
    rng = np.random.default_rng(seed)
    A = np.triu((rng.random((n, n)) < density) * rng.uniform(0.1, 2.0, (n, n)), k=1)
    W = A + A.T
    G = rng.standard_normal((n, K))
    if integer_G:  # ties and degenerate optima
        G = np.round(2 * G) / 2
    G[rng.random(n) < zero_rows] = 0.0
    return W, G, LASS(sp.csr_matrix(W), G, lam)


@settings(max_examples=3 * EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(2, 14),
    K=st.integers(1, 4),
    density=st.floats(0.0, 0.6),
    log_lam=st.floats(-1.5, 1.0),
    zero_rows=st.floats(0.0, 0.6),
    integer_G=st.booleans(),
    seed=st.integers(0, 10**6),
)
def test_solve_random_small_instances_match_reference(n, K, density, log_lam, zero_rows,
                                                      integer_G, seed):
    W, G, problem = _random_instance(seed, n, K, density, 10.0**log_lam, zero_rows, integer_G)
    ref = ssl_opt.solve(problem, solver="cvxpy")
    osqp = ssl_opt.solve(problem, solver="cvxpy", cvxpy_solver="OSQP")
    sol = ssl_opt.solve(problem)
    p_star = _np_objective(W, G, problem.lam, ref.x["Z"])
    assert _rel(_np_objective(W, G, problem.lam, osqp.x["Z"]), p_star) < 1e-7
    assert _rel(_np_objective(W, G, problem.lam, sol.x["Z"]), p_star) < 1e-6
    assert sol.status == OPTIMAL
    cert = ssl_opt.certify(problem, sol, reference=ref)
    assert cert.passed, cert.report()
    res = _np_kkt(W, G, problem.lam, sol.x["Z"], *problem.multipliers(sol.x["Z"]))
    assert max(res.values()) < 1e-6, res


# -------------------------------------------------------------------------- 2. multipliers


@pytest.mark.parametrize("seed,sign", [(0, "nonneg"), (2, "any")])
def test_program_duals_and_recovered_multipliers_satisfy_kkt(seed, sign):
    W, G, lam, problem, ref = _moons(seed, sign=sign)
    dual = _moons_duals(seed, sign=sign)
    res = _np_kkt(W, G, lam, dual["Z"], dual["nu"], dual["Psi"])
    assert max(res.values()) < 1e-8, res
    Z = ref.x["Z"]
    nu, Psi = problem.multipliers(Z)
    res = _np_kkt(W, G, lam, Z, nu, Psi)
    assert max(res.values()) < 1e-6, res
    # Given Z the multipliers are unique [002 §2.4]: the program's duals, the multipliers
    # recovered from the reference's Z and from the fast solver's Z agree.
    s = max(1.0, np.abs(G).max())
    nu_f, Psi_f = problem.multipliers(_fast(seed, sign=sign).x["Z"])
    for nu_x, Psi_x in [(nu_f, Psi_f), (nu, Psi)]:
        np.testing.assert_allclose(nu_x, dual["nu"], atol=1e-4 * s)
        np.testing.assert_allclose(Psi_x, dual["Psi"], atol=1e-4 * s)
    # The certificate's feasibility parts are those computed here; its stationarity (the best
    # multipliers in the normal cone, complementarity measured) is below tolerance at the
    # reference, and at the numpy residuals' level for the program's point.
    for point in (Z, dual["Z"]):
        res = problem.kkt({"Z": point})
        scale = max(1.0, np.abs(point).max())
        assert res["row_sums"] == pytest.approx(np.abs(point.sum(axis=1) - 1).max() / scale,
                                                abs=1e-15)
        assert res["nonnegativity"] == max(0.0, -point.min()) / scale
        assert res["feasibility"] == max(res["row_sums"], res["nonnegativity"])
        assert res["stationarity"] < 1e-6


def test_multiplier_recovery_equals_the_papers_normal_equations():
    """ψ = (P + diag(z²))⁻¹ P r, P = I − 11ᵀ/K, ν = mean(r − ψ) [002 §2.4], row by row with
    np.linalg.solve, at arbitrary (also infeasible, also non-optimal) points Z."""
    W, G, lam, problem, ref = _moons(2, sign="any")
    rng = np.random.default_rng(5)
    N, K = G.shape
    points = [ref.x["Z"], rng.dirichlet(np.full(K, 0.3), size=N),
              rng.standard_normal((N, K))]
    Z = rng.dirichlet(np.ones(K), size=N)
    Z[rng.random((N, K)) < 0.4] = 0.0
    Z[:, 0] += (Z.sum(axis=1) == 0)  # no all-zero row (P + diag(z²) would be singular)
    points.append(Z)
    P = np.eye(K) - np.ones((K, K)) / K
    L = _np_laplacian(W)
    for Z in points:
        R = 2 * lam * L @ Z - G
        nu_ne = np.empty(N)
        Psi_ne = np.empty((N, K))
        for i in range(N):
            psi = np.linalg.solve(P + np.diag(Z[i] ** 2), P @ R[i])
            Psi_ne[i], nu_ne[i] = psi, np.mean(R[i] - psi)
        nu, Psi = problem.multipliers(Z)
        np.testing.assert_allclose(nu, nu_ne, atol=1e-9 * max(1, np.abs(R).max()))
        np.testing.assert_allclose(Psi, Psi_ne, atol=1e-9 * max(1, np.abs(R).max()))


# ------------------------------------------------------ 3. many exact zeros (active set)


def test_many_exact_zeros_agree_with_reference_and_complementarity_holds():
    # Every item has category information: strict complementarity (measured margins: the
    # smallest positive Z is 4e-4 and the smallest Ψ on a zero 7e-3).
    W, G, lam, problem, ref = _moons(2, K=4, info=1.0, lam=0.2)
    fast = _fast(2, K=4, info=1.0, lam=0.2)
    osqp = _osqp(2, K=4, info=1.0, lam=0.2)
    dual = _moons_duals(2, K=4, info=1.0, lam=0.2)
    thr = 1e-6
    zeros_ref = ref.x["Z"] < thr
    assert zeros_ref.sum() > 0.25 * zeros_ref.size
    for Z in (fast.x["Z"], osqp.x["Z"], dual["Z"]):
        assert (Z < thr).sum() == zeros_ref.sum()
        assert np.array_equal(Z < thr, zeros_ref)
    # The zeros are active constraints with a positive multiplier; the rest have Ψ = 0.
    points = [(dual["Z"], dual["Psi"])] + [
        (Z, problem.multipliers(Z)[1]) for Z in (fast.x["Z"], osqp.x["Z"])]
    for Z, Psi in points:  # Ψ ≥ 0 up to the solvers' tolerance (1e-8 relative)
        assert Psi.min() > -1e-7
        assert np.abs(Psi * Z).max() < 1e-7
        assert Psi[zeros_ref].min() > 1e-3
        assert np.abs(Psi[~zeros_ref]).max() < 1e-6
        assert Z[zeros_ref].max() < 1e-6 and Z[~zeros_ref].min() > 1e-4
    assert np.abs(fast.x["Z"][zeros_ref]).max() < 1e-8


# -------------------------------------------------------------- 4. Theorem 2.7 / Remark 2.8


def test_zero_category_column_gets_no_assignment_when_G_nonnegative():
    """Th. 2.7(2): G ≥ 0 with a zero column k ⇒ z_k = 0 (here with a strictly positive Ψ)."""
    data = two_moons(n=120, n_labeled=2, noise=0.1, seed=4)
    W = knn_graph(data.X, n_neighbors=6)
    G = _make_G(np.random.default_rng(4), 120, 4, 1.0, "nonneg")
    G[:, 2] = 0.0
    for lam in (0.05, 1.0):
        problem = LASS(W, G, lam)
        ref = ssl_opt.solve(problem, solver="cvxpy")
        fast = ssl_opt.solve(problem)
        dual = _kkt_program(W, G, lam)
        assert np.abs(ref.x["Z"][:, 2]).max() < 1e-8
        assert np.abs(fast.x["Z"][:, 2]).max() < 1e-8
        assert dual["Psi"][:, 2].min() > 1e-3
        # ... and then ψ_k = −ν (column k of eq. 4a with Lz_k = 0, g_k = 0).
        np.testing.assert_allclose(dual["Psi"][:, 2], -dual["nu"], atol=1e-8)


def test_zero_category_column_can_receive_mass_with_negative_G():
    """Remark 2.8 needs G ≥ 0: items dissimilar to every other category move mass into the
    category nobody mentions."""
    data = two_moons(n=120, n_labeled=2, noise=0.1, seed=5)
    W = knn_graph(data.X, n_neighbors=6)
    rng = np.random.default_rng(5)
    G = _make_G(rng, 120, 3, 0.3, "nonneg")
    G[:, 2] = 0.0
    negative = rng.choice(120, 20, replace=False)
    G[negative, :2] = -2.0  # the zero column 2 is the least dissimilar category
    problem = LASS(W, G, 0.3)
    ref = ssl_opt.solve(problem, solver="cvxpy")
    Z = ref.x["Z"]
    assert Z[:, 2].max() > 0.5
    assert Z[negative, 2].mean() > 0.5
    dual = _kkt_program(W, G, 0.3)
    res = _np_kkt(W, G, 0.3, dual["Z"], dual["nu"], dual["Psi"])
    assert max(res.values()) < 1e-8
    fast = ssl_opt.solve(problem)
    np.testing.assert_allclose(fast.x["Z"][:, 2], Z[:, 2], atol=1e-4)
    # With the negative entries clipped, the theorem applies again (the items left without
    # information have ν_n = 0 = ψ_nk: degenerate zeros, which Clarabel pins only to ~1e-5).
    clipped = LASS(W, np.maximum(G, 0.0), 0.3)
    assert clipped.components[0] == 1
    assert np.abs(ssl_opt.solve(clipped, solver="cvxpy").x["Z"][:, 2]).max() < 1e-4
    assert np.abs(ssl_opt.solve(clipped).x["Z"][:, 2]).max() < 1e-7


@pytest.mark.parametrize("sign", ["nonneg", "any"])
def test_item_without_category_information_gets_neighbour_average(sign):
    """Th. 2.7(1): g_n = 0 ⇒ Z_n = Σ_m w_nm Z_m / d_n."""
    seed = 0 if sign == "nonneg" else 2
    W, G, lam, problem, ref = _moons(seed, sign=sign)
    A = _dense(W)
    d = A.sum(axis=1)
    empty = np.flatnonzero(np.all(G == 0, axis=1) & (d > 0))
    assert empty.size > 50
    for sol, atol in [(ref, 1e-6), (_fast(seed, sign=sign), 1e-7)]:
        Z = sol.x["Z"]
        avg = (A @ Z)[empty] / d[empty, None]
        np.testing.assert_allclose(Z[empty], avg, atol=atol)


# ------------------------------------------------------- 5. degenerate, non-unique optima


def test_degenerate_optimum_closed_form_chain():
    """A path graph where only item 0 has information g_0 = (1.5, 0, 0): the unique optimum is
    Z = 1e₀ᵀ (objective −1.5, the Laplacian term is 0 only for equal rows), with ν = 0, Ψ = 0 at
    items 1.. — zeros with zero multiplier (degenerate)."""
    n, K, lam = 8, 3, 0.7
    W = np.diag(np.ones(n - 1), 1)
    W = W + W.T
    G = np.zeros((n, K))
    G[0, 0] = 1.5
    problem = LASS(W, G, lam)
    Z_star = np.zeros((n, K))
    Z_star[:, 0] = 1.0
    nu, Psi = problem.multipliers(Z_star)
    assert np.all(Psi[1:] == 0) and np.all(nu[1:] == 0)
    np.testing.assert_allclose(Psi[0], [0, 1.5, 1.5])
    assert ssl_opt.certify(problem, {"Z": Z_star}, reference=False).passed
    ref = ssl_opt.solve(problem, solver="cvxpy")
    assert abs(ref.objective + 1.5) < 1e-8
    np.testing.assert_allclose(ref.x["Z"], Z_star, atol=1e-4)
    for solver in SOLVERS:
        sol = ssl_opt.solve(problem, solver=solver)
        cert = ssl_opt.certify(problem, sol, reference=ref)
        assert cert.passed, cert.report()
        np.testing.assert_allclose(sol.x["Z"], Z_star, atol=1e-6)


def test_degenerate_optimum_constructed_from_a_solution():
    """If (Z*, ν*, Ψ*) solves G, then Z* solves G' = G + Ψ*∘M (M selects half of the active
    entries) with Ψ' = Ψ*∘(1 − M): the selected zeros now have a zero multiplier."""
    W, G, lam, problem, ref = _moons(2, K=4, info=1.0, lam=0.2)
    Z_star = np.maximum(_osqp(2, K=4, info=1.0, lam=0.2).x["Z"], 0.0)
    Psi_star = _moons_duals(2, K=4, info=1.0, lam=0.2)["Psi"]
    active = np.argwhere(Z_star < 1e-9)
    M = np.zeros_like(G)
    pick = active[::2]
    M[pick[:, 0], pick[:, 1]] = 1.0
    G2 = G + Psi_star * M
    p2 = LASS(W, G2, lam)
    ref2 = ssl_opt.solve(p2, solver="cvxpy")
    assert _rel(_np_objective(W, G2, lam, Z_star), ref2.objective) < 1e-9
    assert ssl_opt.certify(p2, {"Z": Z_star}, reference=ref2).passed
    sol = ssl_opt.solve(p2)
    cert = ssl_opt.certify(p2, sol, reference=ref2)
    assert cert.passed, cert.report()
    deg = (sol.x["Z"] < 1e-6) & (np.abs(p2.multipliers(sol.x["Z"])[1]) < 1e-6)
    assert deg.sum() >= 0.5 * len(pick)


def test_non_unique_optimum_all_zero_G():
    """G = 0: any constant row assignment is optimal (objective 0) [002 §2.1]."""
    W, _, lam, _, _ = _moons(0)
    G = np.zeros((150, 3))
    problem = LASS(W, G, lam)
    ref = ssl_opt.solve(problem, solver="cvxpy")
    assert abs(ref.objective) < 1e-8
    mine = {"Z": np.tile([0.7, 0.3, 0.0], (150, 1))}
    assert np.abs(mine["Z"] - ref.x["Z"]).max() > 0.1
    cert = ssl_opt.certify(problem, mine, reference=ref)
    assert cert.passed, cert.report()
    assert any("not unique" in note for note in cert.notes)
    sol = ssl_opt.solve(problem)
    assert ssl_opt.certify(problem, sol, reference=ref).passed
    assert _np_objective(W, G, lam, sol.x["Z"]) == pytest.approx(0.0, abs=1e-9)


def test_non_unique_optimum_two_identical_categories():
    """Identical columns j, k: Z + c·1(e_j − e_k)ᵀ has the same objective (L1 = 0 and
    g_j = g_k) and stays feasible for |c| small [002 Th. 2.1]."""
    data = two_moons(n=100, n_labeled=2, noise=0.1, seed=6)
    W = knn_graph(data.X, n_neighbors=6)
    G = _make_G(np.random.default_rng(6), 100, 3, 0.4, "nonneg")
    G[:, 0] += 0.5 * (G.sum(axis=1) > 0)  # the two identical categories dominate
    G[:, 1] = G[:, 0]
    problem = LASS(W, G, 1.0)
    ref = ssl_opt.solve(problem, solver="cvxpy")
    Z = ref.x["Z"]
    c = 0.5 * Z[:, 1].min()
    assert c > 0.1  # every item keeps mass on both identical categories
    other = Z.copy()
    other[:, 0] += c
    other[:, 1] -= c
    assert _rel(_np_objective(W, G, 1.0, other), _np_objective(W, G, 1.0, Z)) < 1e-12
    cert = ssl_opt.certify(problem, {"Z": other}, reference=ref)
    assert cert.passed, cert.report()
    sol = ssl_opt.solve(problem)
    assert ssl_opt.certify(problem, sol, reference=ref).passed


# ----------------------------------------------------------------- 6. disconnected graphs


def _np_components(A):
    """Connected components by breadth-first search on a dense adjacency matrix."""
    n = A.shape[0]
    label = -np.ones(n, dtype=int)
    c = 0
    for s in range(n):
        if label[s] >= 0:
            continue
        frontier = [s]
        label[s] = c
        while frontier:
            nxt = []
            for i in frontier:
                for j in np.flatnonzero(A[i] > 0):
                    if label[j] < 0:
                        label[j] = c
                        nxt.append(j)
            frontier = nxt
        c += 1
    return [np.flatnonzero(label == k) for k in range(c)]


@cache
def _disconnected():
    blocks = []
    for seed in (10, 11):
        data = two_moons(n=60, n_labeled=2, noise=0.08, seed=seed)
        blocks.append(knn_graph(data.X, n_neighbors=6))
    blocks += [sp.csr_matrix((1, 1))] * 3  # three isolated items
    W = sp.block_diag(blocks, format="csr")
    rng = np.random.default_rng(12)
    G = rng.standard_normal((123, 3))
    G[rng.random(123) < 0.5] = 0.0
    G[120] = [0.2, 1.0, -3.0]   # isolated, unique best category 1
    G[121] = [0.5, -1.0, 0.5]   # isolated, tie between categories 0 and 2
    G[122] = [-0.4, -0.4, -0.4]  # isolated, three-way tie
    # Shuffle the items so that components are not contiguous.
    perm = rng.permutation(123)
    W = W[perm][:, perm]
    G = G[perm]
    problem = LASS(W, G, 0.4)
    return W, G, perm, problem


def test_split_returns_components_covering_all_items():
    W, G, perm, problem = _disconnected()
    A = _dense(W)
    mine = sorted((tuple(c) for c in _np_components(A)), key=lambda c: c[0])
    parts = problem.split()
    count, labels = problem.components
    assert count == len(mine) == 5 == len(parts)
    got = sorted((tuple(idx) for idx, _ in parts), key=lambda c: c[0])
    assert got == mine
    seen = np.concatenate([idx for idx, _ in parts])
    assert np.array_equal(np.sort(seen), np.arange(123))
    Z = np.random.default_rng(0).dirichlet(np.ones(3), size=123)
    total = 0.0
    for idx, sub in parts:
        np.testing.assert_array_equal(sub.W.toarray(), A[np.ix_(idx, idx)])
        np.testing.assert_array_equal(sub.G, G[idx])
        assert sub.lam == problem.lam
        total += sub.objective({"Z": Z[idx]})
    assert _rel(total, _np_objective(W, G, 0.4, Z)) < 1e-12
    # A connected problem is its own single part.
    connected = _moons(2, sign="any")[3]
    [(idx, same)] = connected.split()
    assert same is connected and np.array_equal(idx, np.arange(150))


@pytest.mark.parametrize("solver", SOLVERS)
def test_disconnected_graph_equals_per_component_reference(solver):
    W, G, perm, problem = _disconnected()
    A = _dense(W)
    sol = ssl_opt.solve(problem, solver=solver)
    assert sol.status == OPTIMAL
    Z = sol.x["Z"]
    for idx in _np_components(A):
        sub = LASS(sp.csr_matrix(A[np.ix_(idx, idx)]), G[idx], 0.4)
        ref = ssl_opt.solve(sub, solver="cvxpy")
        f = _np_objective(A[np.ix_(idx, idx)], G[idx], 0.4, Z[idx])
        assert _rel(f, ref.objective) < 1e-6
        np.testing.assert_allclose(Z[idx], ref.x["Z"], atol=1e-4)
    # Isolated items: the LP max gᵀz over the simplex: all the mass on the best category, or
    # anywhere on the tied best ones (every such row is optimal).
    where = {orig: int(np.flatnonzero(perm == orig)[0]) for orig in (120, 121, 122)}
    np.testing.assert_allclose(Z[where[120]], [0.0, 1.0, 0.0], atol=1e-8)
    assert abs(Z[where[121], 1]) < 1e-8
    for i in where.values():
        assert abs(Z[i].sum() - 1.0) < 1e-9 and Z[i].min() > -1e-9
        assert Z[i] @ G[i] == pytest.approx(G[i].max(), abs=1e-8)
    whole_ref = ssl_opt.solve(problem, solver="cvxpy")
    cert = ssl_opt.certify(problem, sol, reference=whole_ref)
    assert cert.passed, cert.report()


# ---------------------------------------------------------- 7. out-of-sample, projection


def _cvxpy_out_of_sample(Z_train, W_new, G_new, lam):
    """[002 eq. 18] for M items at once: Σ_m [λ Σ_n w_mn ‖z_m − Z_n‖² − g_mᵀ z_m] over rows on
    the simplex, written literally as a weighted sum of squares over the edges."""
    M, K = G_new.shape
    rows, cols = np.nonzero(W_new)
    w = W_new[rows, cols]
    E = sp.csr_matrix((np.sqrt(w), (np.arange(rows.size), rows)), shape=(rows.size, M))
    z = cp.Variable((M, K))
    fit = cp.sum_squares(E @ z - np.sqrt(w)[:, None] * Z_train[cols])
    prog = cp.Problem(cp.Minimize(lam * fit - cp.sum(cp.multiply(G_new, z))),
                      [cp.sum(z, axis=1) == 1, z >= 0])
    prog.solve(solver="CLARABEL", tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    return z.value


@pytest.mark.parametrize("sparse_input", [False, True])
def test_out_of_sample_matches_per_item_qp(sparse_input):
    W, G, lam, problem, ref = _moons(2, sign="any")
    Z_train = ref.x["Z"]
    rng = np.random.default_rng(21)
    M = 25
    W_new = np.zeros((M, 150))
    for m in range(M):
        W_new[m, rng.choice(150, 5, replace=False)] = rng.uniform(0.2, 1.0, 5)
    G_new = 2.0 * rng.standard_normal((M, 3))
    W_new[3] = 0.0                 # no training neighbour
    G_new[3] = [0.1, 0.7, -0.2]    # unique best category
    G_new[5] = 0.0                 # no category information: z = z̄
    G_new[7] = [50.0, -50.0, 0.0]  # dominated by its category information
    args = (sp.csr_matrix(W_new), sp.csr_matrix(G_new)) if sparse_input else (W_new, G_new)
    out = problem.out_of_sample(Z_train, *args)
    assert out.shape == (M, 3)
    assert out.min() >= 0 and np.abs(out.sum(axis=1) - 1).max() < 1e-12
    # All rows in one program; row 3 (no neighbour) is then the LP max g·z over the simplex.
    expected = _cvxpy_out_of_sample(Z_train, W_new, G_new, lam)
    np.testing.assert_allclose(out, expected, atol=1e-6)
    np.testing.assert_array_equal(out[3], [0.0, 1.0, 0.0])
    zbar = W_new[5] @ Z_train / W_new[5].sum()
    np.testing.assert_allclose(out[5], zbar, atol=1e-12)
    np.testing.assert_array_equal(out[7], [1.0, 0.0, 0.0])


def test_out_of_sample_no_neighbour_ties_and_training_consistency():
    W, G, lam, problem, ref = _moons(0)
    Z = ref.x["Z"]
    W_new = np.zeros((3, 150))
    G_new = np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 0.0], [-1.0, 2.0, 2.0]])
    out = problem.out_of_sample(Z, W_new, G_new)
    np.testing.assert_allclose(out, [[0.5, 0.5, 0], [1 / 3, 1 / 3, 1 / 3], [0, 0.5, 0.5]],
                               atol=1e-15)
    # Training items mapped with their own graph and G rows: the projection of z̄ + g/(2λd)
    # [002 §4], checked against the brute-force projection of that vector built here.
    A = _dense(W)
    d = A.sum(axis=1)
    out = problem.out_of_sample(Z, A[:10], G[:10])
    for n in range(10):
        v = A[n] @ Z / d[n] + G[n] / (2 * lam * d[n])
        np.testing.assert_allclose(out[n], _brute_force_simplex_projection(v), atol=1e-12)


def _projection_inputs():
    rng = np.random.default_rng(31)
    K = 5
    blocks = [scale * rng.standard_normal((15, K)) for scale in (1.0, 10.0, 1e3, 1e6)]
    blocks.append(rng.dirichlet(np.ones(K), size=8))                 # already on the simplex
    blocks.append(np.eye(K))                                          # vertices
    blocks.append(np.array([[0.3, 0.3, 0.3, 0.3, 0.3],                # ties
                            [2.0, 2.0, 0.0, -1.0, 2.0],
                            [-5.0, -5.0, -5.0, -5.0, -5.0],
                            [1.0, 1.0, 1.0, 0.0, 0.0],
                            [0.5, 0.5, 0.0, 0.0, 0.0],
                            [1e4, 1e4, 0.0, 1e4 - 0.25, 3.0]]))
    return np.vstack(blocks)


def test_project_rows_to_simplex_vs_cvxpy_and_brute_force():
    V = _projection_inputs()
    V_copy = V.copy()
    Z = project_rows_to_simplex(V)
    np.testing.assert_array_equal(V, V_copy)
    assert Z.shape == V.shape
    # CVXPY's accuracy is relative to ‖V‖²: rows up to 10 (brute force covers every row).
    moderate = np.abs(V).max(axis=1) <= 10
    assert moderate.sum() > 30
    z = cp.Variable((int(moderate.sum()), V.shape[1]))
    cp.Problem(cp.Minimize(cp.sum_squares(z - V[moderate]) / 2),
               [cp.sum(z, axis=1) == 1, z >= 0]).solve(
        solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    # 1e-4: at degenerate rows (a vertex v = e_k: zeros with zero multiplier) the interior
    # point stops ~1e-5 inside; the brute force below is exact.
    np.testing.assert_allclose(Z[moderate], z.value, atol=1e-4)
    for i, v in enumerate(V):
        scale = max(1.0, np.abs(v).max())
        _check_projection_conditions(v, Z[i], 1e-12 * scale)
        np.testing.assert_allclose(Z[i], _brute_force_simplex_projection(v), atol=1e-12 * scale)
    on_simplex = slice(60, 73)
    np.testing.assert_allclose(Z[on_simplex], V[on_simplex], atol=1e-15)
    ties = Z[-6:]
    np.testing.assert_allclose(ties[0], [0.2] * 5, atol=1e-15)  # a shift along 1 is ignored
    np.testing.assert_allclose(ties[1], [1 / 3, 1 / 3, 0, 0, 1 / 3], atol=1e-15)
    np.testing.assert_allclose(ties[2], [0.2] * 5, atol=1e-15)
    np.testing.assert_allclose(ties[3], [1 / 3, 1 / 3, 1 / 3, 0, 0], atol=1e-15)
    np.testing.assert_allclose(ties[4], [0.5, 0.5, 0, 0, 0], atol=1e-15)
    np.testing.assert_allclose(ties[5], [5 / 12, 5 / 12, 0, 1 / 6, 0], atol=1e-12)


@pytest.mark.parametrize("V", [np.full((1, 4), 3e15), np.array([[1e16, 0.0]]),
                               np.array([[-1e16, -1e16 - 4.0]])])
def test_project_rows_to_simplex_large_values(V):
    Z = project_rows_to_simplex(V)
    assert np.all(np.isfinite(Z)) and Z.min() >= 0
    assert abs(Z.sum() - 1.0) < 1e-12
    _check_projection_conditions(V[0], Z[0], 1e-12)


# ------------------------------------------------------ 8. early stops and warm starts


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("max_iter", [1, 3])
def test_an_early_stop_is_reported_and_not_certified(solver, max_iter):
    """Stopped that early a solver has not converged: the status and the certificate say so.
    FISTA and PDHG project every iterate onto the row simplices, so theirs is feasible."""
    _, _, _, problem, ref = _moons(2, sign="any")
    sol = ssl_opt.solve(problem, solver=solver, max_iter=max_iter)
    assert sol.status != OPTIMAL
    assert not ssl_opt.certify(problem, sol, reference=ref).passed
    if solver in ("fista", "pdhg"):
        res = problem.kkt(sol)
        assert max(res["row_sums"], res["nonnegativity"]) < 1e-12


@pytest.mark.parametrize("solver", SOLVERS)
def test_warm_start_from_an_optimum_converges_quickly(solver):
    W, G, lam, problem, ref = _moons(0)
    cold = ssl_opt.solve(problem, solver=solver)
    assert cold.status == OPTIMAL and cold.iterations > 10
    warm = ssl_opt.solve(problem, solver=solver, warm_start=cold)
    assert warm.status == OPTIMAL and warm.iterations < cold.iterations
    np.testing.assert_allclose(warm.x["Z"], cold.x["Z"], atol=1e-6)
    # From the reference's Z (a dict): Clarabel's Z is off by up to ~1e-5 in its small entries
    # (module note); still optimal, at the same point to that accuracy.
    warm = ssl_opt.solve(problem, solver=solver, warm_start={"Z": ref.x["Z"]})
    assert warm.status == OPTIMAL
    assert _rel(_np_objective(W, G, lam, warm.x["Z"]), ref.objective) < 1e-6
    np.testing.assert_allclose(warm.x["Z"], cold.x["Z"], atol=1e-5)


# ------------------------------------------------------------ 9. certificates that must fail


def test_certificate_rejects_perturbed_points():
    W, G, lam, problem, ref = _moons(0)
    Z = ref.x["Z"].copy()
    assert ssl_opt.certify(problem, {"Z": Z}, reference=ref).passed
    # Row sums violated (and a lower objective than the reference: feasibility still fails).
    bad = Z.copy()
    bad[4] *= 1.01
    cert = ssl_opt.certify(problem, {"Z": bad}, reference=ref)
    assert not cert.passed and "row_sums" in _failed(cert)
    # A negative entry with the row sum kept.
    bad = Z.copy()
    i = int(np.argmax(Z.min(axis=1) < 1e-6))
    k0, k1 = int(np.argmin(Z[i])), int(np.argmax(Z[i]))
    bad[i, k0] -= 0.01
    bad[i, k1] += 0.01
    assert np.abs(bad.sum(axis=1) - 1).max() < 1e-12
    cert = ssl_opt.certify(problem, {"Z": bad}, reference=ref)
    assert not cert.passed and "nonnegativity" in _failed(cert)
    # Feasible but suboptimal (checked here with numpy first).
    bad = 0.9 * Z + 0.1 / 3
    assert _np_objective(W, G, lam, bad) > ref.objective + 1e-3
    cert = ssl_opt.certify(problem, {"Z": bad}, reference=ref)
    assert not cert.passed and "objective_gap" in _failed(cert)
    cert = ssl_opt.certify(problem, {"Z": bad}, reference=False)
    assert not cert.passed and "stationarity" in _failed(cert)


def test_measured_complementarity_certifies_the_reference_but_no_wrong_zero():
    """Clarabel leaves degenerate entries with small Z and small Ψ (module note): the
    certificate measures complementarity (|ψ z| within its budget, the paper's KKT conditions
    to a tolerance) and passes it, where imposing complementarity does not always; an entry
    moved 1e-3 off a zero whose multiplier is large still fails."""
    W, G, lam, problem, ref = _moons(2, sign="any")
    Z = ref.x["Z"]
    measured = problem.kkt(ref)
    imposed = problem.kkt(ref, complementarity="imposed")
    assert measured["stationarity"] < 1e-6 <= max(imposed["stationarity"], 1e-6)
    assert measured["stationarity"] <= imposed["stationarity"]
    # the paper's multipliers of the same Z: complementarity within the budget's scale
    s = max(1.0, np.abs(G).max(), np.abs(2 * lam * _np_laplacian(W) @ Z).max())
    assert np.abs(problem.multipliers(Z)[1] * Z).max() <= 1e-6 * s
    # a wrong zero: 1e-3 moved onto an entry with a large multiplier (row sum kept)
    fast = _fast(2, sign="any").x["Z"]
    Psi = problem.multipliers(fast)[1]
    i, k = np.unravel_index(np.argmax(np.where(fast == 0, Psi, -np.inf)), fast.shape)
    assert Psi[i, k] > 1e-2
    bad = fast.copy()
    j = int(np.argmax(bad[i]))
    bad[i, k] += 1e-3
    bad[i, j] -= 1e-3
    assert problem.kkt({"Z": bad})["stationarity"] > 1e-4


def test_certificate_judges_Z_whatever_multipliers_a_solution_carries():
    """The certificate is a property of Z: it minimizes over the multipliers itself (a
    solver's only start that minimization), so an optimal Z passes with wrong multipliers
    attached and a suboptimal Z fails with the optimum's."""
    from ssl_opt.solution import Solution

    W, G, lam, problem, ref = _moons(0)
    sol = _fast(0)
    info = dict(sol.info)
    tampered = [np.asarray(m) + 0.1 for m in info.get("multipliers", [np.zeros(G.shape)])]
    good = Solution(x={"Z": sol.x["Z"]}, objective=sol.objective, status=OPTIMAL,
                    iterations=1, time=0.0, backend="fast", solver="test",
                    info={"multipliers": tampered})
    assert ssl_opt.certify(problem, good, reference=ref).passed
    bad_Z = 0.9 * sol.x["Z"] + 0.1 / G.shape[1]
    assert _np_objective(W, G, lam, bad_Z) > ref.objective + 1e-3
    bad = Solution(x={"Z": bad_Z}, objective=problem.objective({"Z": bad_Z}), status=OPTIMAL,
                   iterations=1, time=0.0, backend="fast", solver="test", info=info)
    cert = ssl_opt.certify(problem, bad, reference=False)
    assert not cert.passed and "stationarity" in _failed(cert)
    # Nor do multipliers in the solution's x change the verdict.
    assert ssl_opt.certify(problem, {"Z": sol.x["Z"], "nu": np.zeros(G.shape[0]),
                                     "Psi": -np.ones(G.shape)}, reference=ref).passed


# ------------------------------------------------------------------------------ 10. bad input


def _tiny():
    W = np.array([[0, 1, 0], [1, 0, 2], [0, 2, 0]], dtype=float)
    G = np.array([[1.0, 0.0], [0.0, 0.0], [-1.0, 0.5]])
    return W, G


@pytest.mark.parametrize("lam", [0.0, -1.0, np.nan, np.inf, "1", True, None])
def test_bad_lam(lam):
    W, G = _tiny()
    with pytest.raises(InvalidInputError, match="lam"):
        LASS(W, G, lam)


def _bad_W_cases():
    W, _ = _tiny()
    nonsym = W.copy()
    nonsym[0, 1] = 3.0
    neg = W.copy()
    neg[0, 1] = neg[1, 0] = -1.0
    diag = W.copy()
    diag[1, 1] = 0.5
    nan = W.copy()
    nan[0, 1] = nan[1, 0] = np.nan
    sparse_nan = sp.csr_matrix(nan)
    return [nonsym, neg, diag, nan, sparse_nan, sp.csr_matrix(neg), W[:, :2]]


@pytest.mark.parametrize("W", _bad_W_cases(),
                         ids=["nonsymmetric", "negative", "diagonal", "nan", "sparse-nan",
                              "sparse-negative", "not-square"])
def test_bad_W(W):
    _, G = _tiny()
    with pytest.raises(InvalidInputError, match="W"):
        LASS(W, G, 1.0)


@pytest.mark.parametrize("case", ["nan", "inf", "rows", "1d", "no-columns", "sparse-nan"])
def test_bad_G(case):
    W, G = _tiny()
    if case == "nan":
        G[1, 0] = np.nan
    elif case == "inf":
        G[0, 1] = -np.inf
    elif case == "rows":
        G = np.vstack([G, G])
    elif case == "1d":
        G = G[:, 0]
    elif case == "no-columns":
        G = np.zeros((3, 0))
    else:
        G = sp.csr_matrix(G)
        G.data[0] = np.nan
    with pytest.raises(InvalidInputError, match="G"):
        LASS(W, G, 1.0)


@pytest.mark.parametrize("options,name", [
    ({"rho": 0.0}, "rho"),
    ({"rho": -2.0}, "rho"),
    ({"rho": np.nan}, "rho"),
    ({"anderson": -1}, "anderson"),
    ({"anderson": 2.5}, "anderson"),
    ({"relaxation": np.nan}, "relaxation"),
    ({"adaptive_rho": "yes"}, "adaptive_rho"),
    ({"max_iter": 0}, "max_iter"),
    ({"tol": -1.0}, "tol"),
    ({"bogus": 1}, "bogus"),
])
def test_bad_solver_options(options, name):
    W, G = _tiny()
    with pytest.raises(InvalidInputError, match=name):
        ssl_opt.solve(LASS(W, G, 1.0), solver="admm-split", **options)


def test_bad_out_of_sample_input():
    W, G = _tiny()
    problem = LASS(W, G, 1.0)
    Z = np.full((3, 2), 0.5)
    ok_W, ok_G = np.ones((2, 3)), np.zeros((2, 2))
    problem.out_of_sample(Z, ok_W, ok_G)
    with pytest.raises(InvalidInputError, match="Z"):
        problem.out_of_sample(Z[:2], ok_W, ok_G)
    with pytest.raises(InvalidInputError, match="W_new"):
        problem.out_of_sample(Z, np.ones((2, 4)), ok_G)
    with pytest.raises(InvalidInputError, match="G_new"):
        problem.out_of_sample(Z, ok_W, np.zeros((2, 3)))
    with pytest.raises(InvalidInputError, match="G_new"):
        problem.out_of_sample(Z, ok_W, np.zeros((3, 2)))
    with pytest.raises(InvalidInputError, match="W_new"):
        problem.out_of_sample(Z, -ok_W, ok_G)
    with pytest.raises(InvalidInputError, match="W_new"):
        problem.out_of_sample(Z, sp.csr_matrix(-ok_W), ok_G)
    with pytest.raises(InvalidInputError, match="W_new"):
        problem.out_of_sample(Z, np.full((2, 3), np.nan), ok_G)
    with pytest.raises(InvalidInputError, match="W_new"):
        problem.out_of_sample(Z, np.ones(3), ok_G[:1])


def test_user_inputs_are_not_modified():
    # A CSR with duplicate (unsummed) entries: W[0,1] is stored as 0.25 + 0.75.
    W = sp.csr_matrix((np.array([0.25, 0.75, 1.0, 2.0, 2.0]),
                       np.array([1, 1, 0, 2, 1]), np.array([0, 2, 4, 5])), shape=(3, 3))
    assert not W.has_canonical_format
    before = (W.data.copy(), W.indices.copy(), W.indptr.copy())
    G = np.array([[1.0, 0.0], [0.0, 0.0], [-1.0, 0.5]])
    G_before = G.copy()
    problem = LASS(W, G, 0.5)
    np.testing.assert_array_equal(W.data, before[0])
    np.testing.assert_array_equal(W.indices, before[1])
    np.testing.assert_array_equal(W.indptr, before[2])
    assert not W.has_canonical_format
    np.testing.assert_array_equal(G, G_before)
    assert G.flags.writeable
    summed = np.array([[0, 1, 0], [1, 0, 2], [0, 2, 0]], dtype=float)
    np.testing.assert_array_equal(problem.W.toarray(), summed)
    Z = np.random.default_rng(0).dirichlet(np.ones(2), size=3)
    assert _rel(problem.objective({"Z": Z}), _np_objective(summed, G, 0.5, Z)) < 1e-14
    # Solving does not modify the user's arrays either (nor a warm start).
    sol = ssl_opt.solve(problem)
    start = {"Z": sol.x["Z"].copy()}
    kept = {k: v.copy() for k, v in start.items()}
    ssl_opt.solve(problem, warm_start=start)
    for k in start:
        np.testing.assert_array_equal(start[k], kept[k])
    np.testing.assert_array_equal(W.data, before[0])
