"""NPKL, non-parametric kernel learning from pairwise constraints [003], docs/design.md §4.4: the
problem, its SDP references ("cvxpy", "cvxpy-boundary"), the boundary reduction [003 Prop. 1],
the BCD plugin [003 §3.2], the KKT certificate, kernel k-means evaluation and bad input.

    min_{Z ⪰ 0} Ω(Z) = tr(ΔZ) + C Σ_{{i,j}∈T} ℓ(T_ij Z_ij),   Δ = (1+δ)I − D^{-1/2} S D^{-1/2}
    ℓ: hinge max(0, 1−t), squared hinge max(0, 1−t)², square (1−t)²;  δ = C/2 by default.

Every check compares against something computed *independently* of the code under test: Δ,
the objective, the gradient matrix, the Schur complement and the lifting matrix Q are rebuilt
here with dense numpy; the SDP is written here in its primal form (``Z`` a PSD variable,
Clarabel) both on the full problem and on a Schur complement computed here; one BCD sweep is
re-implemented here (closed form with ``np.linalg.solve`` for the square loss, a CVXPY program
per column for the hinge losses); the default rank is found by brute force.

Accuracy notes (measured): Clarabel's dual-form and primal-form optima agree to ~1e-8
relative; BCD reaches the SDP optimum to ~1e-10 for the smooth losses; for the hinge BCD
stops at a fixed point of the factored problem that is not the SDP optimum (0.1–10 % above,
[003 Fig. 1]) and must say so (status "stalled").
"""

from __future__ import annotations

from functools import cache

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp

import ssl_opt
from ssl_opt.builders import knn_graph
from ssl_opt.components import HuberHinge, Logistic, MarginLoss
from ssl_opt.datasets.clusters import (
    chessboard,
    double_spiral,
    pairwise_constraints,
    paper_constraint_count,
)
from ssl_opt.plugins.npkl.bcd import default_rank
from ssl_opt.problems import NPKL
from ssl_opt.problems.npkl.evaluation import evaluate_kernel
from ssl_opt.reference.attempts import solve_until_optimal
from ssl_opt.registry import examples
from ssl_opt.solution import OPTIMAL

LOSSES = ("square", "squared_hinge", "hinge")
SMOOTH = ("square", "squared_hinge")


# ------------------------------------------------------------------------------------ helpers


def _rel(a, b):
    return abs(a - b) / max(1.0, abs(b))


def _dense(S):
    return S.toarray() if sp.issparse(S) else np.asarray(S, dtype=float)


def _np_delta(S, delta):
    """Δ = (1+δ)I − D^{-1/2} S D^{-1/2}, isolated points with (D^{-1/2})_ii = 0 (loop-free)."""
    A = _dense(S)
    d = A.sum(axis=1)
    inv = np.divide(1.0, np.sqrt(d), out=np.zeros_like(d), where=d > 0)
    return (1.0 + delta) * np.eye(A.shape[0]) - inv[:, None] * A * inv[None, :]


def _np_loss(loss, t):
    if loss == "hinge":
        return np.maximum(0.0, 1.0 - t)
    if loss == "squared_hinge":
        return np.maximum(0.0, 1.0 - t) ** 2
    return (1.0 - t) ** 2


def _np_multipliers(loss, t, C):
    """y = −C ℓ'(t) (hinge: the subgradient C·[t < 1], 0 for t > 1)."""
    if loss == "hinge":
        return C * (t < 1.0)
    if loss == "squared_hinge":
        return 2.0 * C * np.maximum(0.0, 1.0 - t)
    return 2.0 * C * (1.0 - t)


def _np_objective(Delta, pairs, labels, C, loss, Z):
    t = labels * Z[pairs[:, 0], pairs[:, 1]]
    return float(np.sum(Delta * Z) + C * np.sum(_np_loss(loss, t)))


def _np_gradient(Delta, pairs, labels, y):
    """G = Δ − Σ_p y_p T_p (E_ij + E_ji)/2, dense."""
    G = np.array(Delta, dtype=float)
    w = -0.5 * np.asarray(y) * labels
    np.add.at(G, (pairs[:, 0], pairs[:, 1]), w)
    np.add.at(G, (pairs[:, 1], pairs[:, 0]), w)
    return G


def _split(pairs, n):
    L = np.array(sorted(set(pairs.ravel().tolist())), dtype=int)
    U = np.array([k for k in range(n) if k not in set(L.tolist())], dtype=int)
    return L, U


def _np_schur(Delta, L, U):
    D = np.asarray(Delta)
    if U.size == 0:
        return D[np.ix_(L, L)]
    return D[np.ix_(L, L)] - D[np.ix_(L, U)] @ np.linalg.solve(D[np.ix_(U, U)], D[np.ix_(U, L)])


def _np_Q(Delta, L, U):
    """Q (n×l) in the original point order: rows L the identity, rows U −Δ_UU⁻¹Δ_UL."""
    D = np.asarray(Delta)
    Q = np.zeros((D.shape[0], L.size))
    Q[L] = np.eye(L.size)
    if U.size:
        Q[U] = -np.linalg.solve(D[np.ix_(U, U)], D[np.ix_(U, L)])
    return Q


def _cp_loss(loss, t):
    if loss == "hinge":
        return cp.sum(cp.pos(1 - t))
    if loss == "squared_hinge":
        return cp.sum(cp.square(cp.pos(1 - t)))
    return cp.sum(cp.square(1 - t))


def _primal_sdp(Delta, pairs, labels, C, loss):
    """The primal SDP written here: Z a PSD variable (Clarabel, :func:`_solve_here`)."""
    n = Delta.shape[0]
    Z = cp.Variable((n, n), PSD=True)
    t = cp.multiply(labels.astype(float), Z[pairs[:, 0], pairs[:, 1]])
    prog = cp.Problem(cp.Minimize(cp.trace(Delta @ Z) + C * _cp_loss(loss, t)))
    _solve_here(prog)
    return float(prog.value), np.asarray(Z.value)


def _solve_here(prog, **options):
    """Clarabel (tolerances 1e-10) on a program written here, along the reference's retry
    ladder: one interior-point path can end short of optimal by a CPU's rounding."""
    outcome = solve_until_optimal(prog, "CLARABEL", options)
    assert outcome.optimal, outcome.attempts


def _failed(cert):
    return {c.name for c in cert.checks if not c.passed}


# ---------------------------------------------------------------------------------- instances


@cache
def _tiny_data():
    """n = 18, 10 pairs, l = 12 (6 unconstrained points); δ = 0.02 so that the optimum has
    margins above 1 (squared hinge ≠ square) and hinge margins at, above and below the kink."""
    d = double_spiral(n=18, seed=4)
    pairs, labels = pairwise_constraints(d.y, 10, seed=4)
    return knn_graph(d.X, n_neighbors=3), pairs, labels.astype(float)


@cache
def _tiny(loss):
    S, pairs, labels = _tiny_data()
    return NPKL(S, pairs, labels, C=1.0, loss=loss, delta=0.02)


@cache
def _tiny_refs(loss):
    """(cvxpy reference, cvxpy-boundary reference, primal SDP value, primal SDP Z)."""
    S, pairs, labels = _tiny_data()
    p = _tiny(loss)
    ref = ssl_opt.solve(p, solver="cvxpy")
    bnd = ssl_opt.solve(p, solver="cvxpy-boundary")
    assert ref.status == OPTIMAL and bnd.status == OPTIMAL
    value, Z = _primal_sdp(_np_delta(S, 0.02), pairs, labels, 1.0, loss)
    return ref, bnd, value, Z


def _random_problem(name, loss):
    if name == "spiral":  # l = 40 < n = 50, margins above 1 at the optimum
        d = double_spiral(n=50, seed=3)
        pairs, labels = pairwise_constraints(d.y, 40, seed=3)
        return NPKL(knn_graph(d.X, n_neighbors=4), pairs, labels, C=1.0, loss=loss, delta=0.1)
    if name == "few":  # 10 pairs, default δ: hinge BCD reaches the SDP optimum (measured)
        d = double_spiral(n=40, seed=0)
        pairs, labels = pairwise_constraints(d.y, 10, seed=0)
        return NPKL(knn_graph(d.X, n_neighbors=4), pairs, labels, C=1.0, loss=loss)
    if name == "chess":  # default δ = C/2
        d = chessboard(n=40, seed=1)
        pairs, labels = pairwise_constraints(d.y, 30, seed=1)
        return NPKL(knn_graph(d.X, n_neighbors=4), pairs, labels, C=5.0, loss=loss)
    ex = {e.name: e for e in examples()}[f"npkl-spiral-{loss.replace('_', '-')}"]
    return ex.build()


@cache
def _instance(name, loss):
    """(problem, cvxpy reference)."""
    p = _random_problem(name, loss)
    ref = ssl_opt.solve(p, solver="cvxpy")
    assert ref.status == OPTIMAL
    return p, ref


@cache
def _bcd(name, loss):
    p, _ = _instance(name, loss)
    return ssl_opt.solve(p, solver="bcd", max_iter=400)


INSTANCES = ("example", "spiral", "chess")


# ----------------------------------------------------------------- 1. objective against numpy


def _random_S(rng, n, sparse):
    A = np.triu((rng.random((n, n)) < 0.3) * rng.uniform(0.2, 2.0, (n, n)), k=1)
    A = A + A.T
    A[3, :] = A[:, 3] = 0.0  # an isolated point: Δ_33 = 1 + δ
    return sp.csr_matrix(A) if sparse else A


@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("loss", LOSSES)
def test_objective_matches_numpy(loss, sparse):
    rng = np.random.default_rng(11)
    n, m, C = 14, 9, 3.0
    S = _random_S(rng, n, sparse)
    pairs = np.array([[0, 5], [7, 2], [3, 9], [1, 13], [4, 6], [8, 12], [10, 11], [2, 9],
                      [0, 13]])
    labels = rng.choice([-1.0, 1.0], m)
    B = rng.standard_normal((n, n))
    Z = 1.5 * (B + B.T)  # any symmetric Z: margins on both sides of the kink
    t = labels * Z[pairs[:, 0], pairs[:, 1]]
    assert (t > 1).any() and (t < 1).any()
    # δ defaults to C/2.
    p = NPKL(S, pairs, labels, C=C, loss=loss)
    assert p.delta == C / 2
    np.testing.assert_allclose(_dense(p.Delta), _np_delta(S, C / 2), atol=1e-14)
    expected = _np_objective(_np_delta(S, C / 2), pairs, labels, C, loss, Z)
    assert _rel(p.objective({"Z": Z}), expected) < 1e-12
    # Explicit δ, and a PSD Z.
    p = NPKL(S, pairs, labels, C=C, loss=loss, delta=0.3)
    Z = B @ B.T / n
    expected = _np_objective(_np_delta(S, 0.3), pairs, labels, C, loss, Z)
    assert _rel(p.objective({"Z": Z}), expected) < 1e-12
    # The pairs may be given as (j, i): the same problem.
    q = NPKL(S, pairs[:, ::-1], labels, C=C, loss=loss, delta=0.3)
    assert _rel(q.objective({"Z": Z}), expected) < 1e-12


# --------------------------------------------- 2. an independent primal SDP vs the references


@pytest.mark.parametrize("loss", LOSSES)
def test_primal_sdp_written_here_matches_both_references(loss):
    S, pairs, labels = _tiny_data()
    p = _tiny(loss)
    ref, bnd, value, Z = _tiny_refs(loss)
    assert _rel(ref.objective, value) < 1e-6
    assert _rel(bnd.objective, value) < 1e-6
    # The references' objectives are Ω of their own Z, recomputed here, and their Z is PSD.
    Delta = _np_delta(S, 0.02)
    for sol in (ref, bnd):
        f = _np_objective(Delta, pairs, labels, 1.0, loss, sol.x["Z"])
        assert _rel(sol.objective, f) < 1e-10
        assert np.linalg.eigvalsh(sol.x["Z"])[0] > -1e-8
    # The instance is discriminating: squared hinge and square differ, hinge has all regimes.
    t = p.margins(Z)
    if loss == "squared_hinge":
        assert (t > 1 + 1e-4).any()
        assert _rel(value, _tiny_refs("square")[2]) > 1e-4
    if loss == "hinge":
        assert (t > 1 + 1e-4).any() and (t < 1 - 1e-4).any() and (abs(t - 1) < 1e-6).any()


# ------------------------------------------------------------------ 3. Proposition 1 [003]


@pytest.mark.parametrize("loss", LOSSES)
def test_proposition_1_full_and_boundary_optima_agree(loss):
    S, pairs, labels = _tiny_data()
    Delta = _np_delta(S, 0.02)
    L, U = _split(pairs, Delta.shape[0])
    assert U.size > 0
    ref, bnd, value, Z_full = _tiny_refs(loss)
    # Independently: the primal SDP on the Schur complement computed here.
    reduced_value, Z_BD = _primal_sdp(_np_schur(Delta, L, U), np.searchsorted(L, pairs),
                                      labels, 1.0, loss)
    assert _rel(reduced_value, value) < 1e-7
    # The package's two references.
    assert _rel(bnd.objective, ref.objective) < 1e-7
    assert _rel(bnd.info["reduced_objective"], ref.objective) < 1e-7
    # Z = Q Z_BD Qᵀ: Z_UL = −Δ_UU⁻¹Δ_UL Z_LL and Z_UU = Δ_UU⁻¹Δ_UL Z_LL Δ_LU Δ_UU⁻¹.
    Z = bnd.x["Z"]
    Z_LL = Z[np.ix_(L, L)]
    np.testing.assert_allclose(Z_LL, bnd.x["Z_BD"], atol=1e-14)
    M = np.linalg.solve(Delta[np.ix_(U, U)], Delta[np.ix_(U, L)])
    scale = max(1.0, np.abs(Z).max())
    np.testing.assert_allclose(Z[np.ix_(U, L)], -M @ Z_LL, atol=1e-10 * scale)
    np.testing.assert_allclose(Z[np.ix_(L, U)], -Z_LL @ M.T, atol=1e-10 * scale)
    np.testing.assert_allclose(Z[np.ix_(U, U)], M @ Z_LL @ M.T, atol=1e-10 * scale)
    # The full primal optimum written here has the same structure (to solver accuracy):
    # given Z_LL, the completion minimizing tr(ΔZ) is unique.
    Zf_LL = Z_full[np.ix_(L, L)]
    assert np.abs(Z_full[np.ix_(U, L)] + M @ Zf_LL).max() < 1e-5 * max(1.0, np.abs(Z_full).max())


# ------------------------------------------------------------------ 4. BoundaryReduction


@cache
def _sparse_data():
    """n = 150 kNN graph, 12 pairs: Δ_UU is factored by the sparse (SuperLU) path."""
    d = double_spiral(n=150, seed=2)
    pairs, labels = pairwise_constraints(d.y, 12, seed=2)
    return knn_graph(d.X, n_neighbors=5), pairs, labels


def _sparse_instance():
    return NPKL(*_sparse_data(), C=2.0, loss="square")


@pytest.mark.parametrize("which", ["tiny", "sparse"])
def test_schur_complement_and_eigenvalue_bound(which):
    p = _tiny("square") if which == "tiny" else _sparse_instance()
    S = (_tiny_data() if which == "tiny" else _sparse_data())[0]
    red = p.boundary_reduction()
    assert red._factor.kind == ("dense" if which == "tiny" else "sparse")  # both paths covered
    Delta = _dense(p.Delta)
    np.testing.assert_allclose(Delta, _np_delta(S, p.delta), atol=1e-14)
    L, U = _split(p.pairs, p.n)
    np.testing.assert_array_equal(red.constrained, L)
    np.testing.assert_array_equal(red.unconstrained, U)
    schur = _np_schur(Delta, L, U)
    np.testing.assert_allclose(red.schur, schur, atol=1e-12)
    np.testing.assert_allclose(_dense(red.reduced.Delta), schur, atol=1e-12)
    # Δ̃X from the blocks and the factor, without Δ̃ (vector and matrix right-hand sides).
    assert red.factored_schur == (which == "sparse")
    X = np.random.default_rng(0).standard_normal((L.size, 3))
    np.testing.assert_allclose(red.schur_times(X), schur @ X, atol=1e-12)
    np.testing.assert_allclose(red.schur_times(X[:, 0]), schur @ X[:, 0], atol=1e-12)
    # Δ̃⁻¹ = (Δ⁻¹)_LL, hence λ_min(Δ̃) ≥ λ_min(Δ).
    np.testing.assert_allclose(np.linalg.inv(schur), np.linalg.inv(Delta)[np.ix_(L, L)],
                               atol=1e-9)
    assert np.linalg.eigvalsh(schur)[0] >= np.linalg.eigvalsh(Delta)[0] - 1e-12
    assert red.reduced.lambda_min_bound <= np.linalg.eigvalsh(schur)[0] + 1e-12


@pytest.mark.parametrize("which", ["tiny", "sparse"])
def test_lift_lift_factor_and_restrict_match_dense_Q(which):
    p = _tiny("square") if which == "tiny" else _sparse_instance()
    red = p.boundary_reduction()
    Delta = _dense(p.Delta)
    L, U = _split(p.pairs, p.n)
    Q = _np_Q(Delta, L, U)
    rng = np.random.default_rng(5)
    F = rng.standard_normal((L.size, 4))
    Phi = red.lift_factor(F)
    np.testing.assert_allclose(Phi, Q @ F, atol=1e-11)
    Z_BD = F @ F.T
    Z = red.lift(Z_BD)
    np.testing.assert_allclose(Z, Q @ Z_BD @ Q.T, atol=1e-11)
    np.testing.assert_allclose(Phi @ Phi.T, Z, atol=1e-11)
    np.testing.assert_array_equal(red.restrict(Z), Z_BD)
    np.testing.assert_allclose(Z, Z.T, atol=0)
    # Lifting keeps the objective: Ω(Q Z_BD Qᵀ) = Ω̃(Z_BD) (Qᵀ Δ Q = Δ̃, pairs inside L).
    assert _rel(p.objective({"Z": Z}), red.reduced.objective({"Z": Z_BD})) < 1e-10


@pytest.mark.parametrize("which", ["tiny", "sparse"])
def test_reduced_problem_pairs_are_reindexed(which):
    p = _tiny("hinge") if which == "tiny" else _sparse_instance()
    red = p.boundary_reduction()
    r = red.reduced
    assert r.n == red.constrained.size and r.m == p.m
    assert (r.C, r.loss) == (p.C, p.loss)
    np.testing.assert_array_equal(red.constrained[r.pairs], p.pairs)
    np.testing.assert_array_equal(r.labels, p.labels)
    # And against the raw input pairs (unsorted endpoints), mapped back as unordered pairs.
    if which == "tiny":
        raw = _tiny_data()[1]
        back = np.sort(red.constrained[r.pairs], axis=1)
        np.testing.assert_array_equal(back, np.sort(raw, axis=1))
    assert p.boundary_reduction() is red  # computed once


def test_every_point_constrained_gives_the_identity_reduction():
    rng = np.random.default_rng(7)
    n = 12
    X = rng.standard_normal((n, 2))
    S = knn_graph(X, n_neighbors=3)
    pairs = np.array([[i, (i + 1) % n] for i in range(n)] + [[0, 6], [2, 9]])
    labels = rng.choice([-1.0, 1.0], len(pairs))
    Delta = _np_delta(S, 0.5)
    for loss in LOSSES:
        p = NPKL(S, pairs, labels, C=1.0, loss=loss)
        red = p.boundary_reduction()
        assert red.unconstrained.size == 0
        np.testing.assert_array_equal(red.constrained, np.arange(n))
        np.testing.assert_allclose(red.schur, Delta, atol=1e-14)
        Z = rng.standard_normal((n, n))
        Z = Z @ Z.T
        np.testing.assert_allclose(red.lift(Z), Z, atol=0)
        np.testing.assert_allclose(red.lift_factor(Z[:, :3]), Z[:, :3], atol=0)
        value, _ = _primal_sdp(Delta, pairs, labels, 1.0, loss)
        for solver in ("cvxpy", "cvxpy-boundary"):
            assert _rel(ssl_opt.solve(p, solver=solver).objective, value) < 1e-6
        if loss != "hinge":
            sol = ssl_opt.solve(p, solver="bcd")
            assert sol.status == OPTIMAL and _rel(sol.objective, value) < 1e-6


# ------------------------------------------------------------------ 5. BCD vs the reference


@pytest.mark.parametrize("name", INSTANCES)
@pytest.mark.parametrize("loss", SMOOTH)
def test_bcd_smooth_losses_reach_the_sdp_optimum(name, loss):
    p, ref = _instance(name, loss)
    sol = _bcd(name, loss)
    assert sol.status == OPTIMAL
    Delta = _dense(p.Delta)
    f = _np_objective(Delta, p.pairs, p.labels, p.C, loss, sol.x["Z"])
    assert _rel(f, ref.objective) < 1e-6
    assert _rel(sol.objective, f) < 1e-12
    cert = ssl_opt.certify(p, sol, reference=ref)
    assert cert.passed, cert.report()
    # The kernel is Q VᵀV Qᵀ = ΦΦᵀ with Q built here.
    L, U = _split(p.pairs, p.n)
    V = sol.x["V"]
    Q = _np_Q(Delta, L, U)
    np.testing.assert_allclose(sol.x["Phi"], Q @ V.T, atol=1e-10)
    np.testing.assert_allclose(sol.x["Z"], Q @ V.T @ V @ Q.T, atol=1e-10)
    # Smooth losses: the multipliers are −C ℓ'(t) at BCD's kernel.
    t = p.labels * sol.x["Z"][p.pairs[:, 0], p.pairs[:, 1]]
    np.testing.assert_allclose(sol.x["y"], _np_multipliers(loss, t, p.C), atol=1e-10)


@pytest.mark.parametrize("name", INSTANCES + ("few",))
def test_bcd_hinge_never_beats_the_optimum_and_reports_honestly(name):
    p, ref = _instance(name, "hinge")
    sol = _bcd(name, "hinge")
    f = _np_objective(_dense(p.Delta), p.pairs, p.labels, p.C, "hinge", sol.x["Z"])
    assert f >= ref.objective - 1e-7 * max(1.0, abs(ref.objective))
    cert = ssl_opt.certify(p, sol, reference=ref)
    if sol.status == OPTIMAL:
        assert cert.passed, cert.report()
    if not cert.passed:
        assert sol.status != OPTIMAL
    if name == "few":  # the consistent "optimal" branch is exercised too
        assert sol.status == OPTIMAL and cert.passed
    # The certificate's bound covers the true gap of the (possibly suboptimal) point.
    gap = (f - ref.objective) / max(1.0, abs(f))
    assert p.kkt({"Z": sol.x["Z"]})["suboptimality_bound"] >= gap - 1e-8
    # The solver's λ_min(G̃) is that of the reduced gradient matrix at its multipliers.
    L, U = _split(p.pairs, p.n)
    G = _np_gradient(_np_schur(_dense(p.Delta), L, U), np.searchsorted(L, p.pairs), p.labels,
                     sol.x["y"])
    assert abs(sol.info["reduced_gradient_min"] - np.linalg.eigvalsh(G)[0]) < 1e-9


# ------------------------------------------------------- 6. BCD internals vs closed forms


def _column_data(Dt, rpairs, T, V, i):
    """Column i's problem at V: a = Δ̃_ii, b = Σ_{k≠i} Δ̃_ik v_k, A = [T_ij v_j]_{j∈T(i)}."""
    a = Dt[i, i]
    b = V @ Dt[:, i] - a * V[:, i]
    first, second = rpairs[:, 0] == i, rpairs[:, 1] == i
    nb = np.concatenate([rpairs[first, 1], rpairs[second, 0]])
    return a, b, V[:, nb] * np.concatenate([T[first], T[second]])


def _column_value(a, b, A, C, loss, v):
    """½a‖v‖² + bᵀv + (C/2) Σ_j ℓ(a_jᵀ v): half of Ω restricted to the column [003 eq. 6]."""
    return 0.5 * a * v @ v + b @ v + 0.5 * C * np.sum(_np_loss(loss, A.T @ v))


def _column_problem_cvxpy(a, b, A, C, loss):
    """argmin of :func:`_column_value` over v, by Clarabel (tighter than its defaults)."""
    v = cp.Variable(A.shape[0])
    prog = cp.Problem(cp.Minimize(0.5 * a * cp.sum_squares(v) + b @ v
                                  + 0.5 * C * _cp_loss(loss, A.T @ v)))
    _solve_here(prog, tol_ktratio=1e-9)
    return np.asarray(v.value)


def _np_sweep_square(Dt, rpairs, T, C, V):
    """One Gauss–Seidel sweep over the columns of V (Z_BD = VᵀV) in index order, square loss:
    v_i = (aI + C AAᵀ)⁻¹(C A1 − b) [003 eq. 11] by a direct solve."""
    V = V.copy()
    r, l = V.shape
    for i in range(l):
        a, b, A = _column_data(Dt, rpairs, T, V, i)
        V[:, i] = np.linalg.solve(a * np.eye(r) + C * A @ A.T, C * A.sum(axis=1) - b)
    return V


def _sweep_problem(name, loss):
    if name == "large":  # l = 69 > 64: the sweep crosses a block boundary
        d = double_spiral(n=80, seed=6)
        pairs, labels = pairwise_constraints(d.y, 70, seed=6)
        return NPKL(knn_graph(d.X, n_neighbors=5), pairs, labels, C=2.0, loss=loss)
    # The "spiral" data with C ≠ 1 (C = 1 would hide a confusion of C with 1/C).
    d = double_spiral(n=50, seed=3)
    pairs, labels = pairwise_constraints(d.y, 40, seed=3)
    return NPKL(knn_graph(d.X, n_neighbors=4), pairs, labels, C=2.5, loss=loss, delta=0.1)


def _sweep_setup(name, loss, seed):
    p = _sweep_problem(name, loss)
    L, U = _split(p.pairs, p.n)
    Dt = _np_schur(_dense(p.Delta), L, U)
    rpairs = np.searchsorted(L, p.pairs)
    r = max(s for s in range(1, p.m + 2) if s * (s + 1) // 2 <= p.m)
    V0 = np.random.default_rng(seed).random((r, L.size)) / np.sqrt(r)
    return p, Dt, rpairs, V0


@pytest.mark.parametrize("name,sweeps", [("spiral", 1), ("spiral", 3), ("large", 2)])
def test_bcd_square_sweeps_match_a_numpy_gauss_seidel_sweep(name, sweeps):
    seed = 3
    p, Dt, rpairs, V = _sweep_setup(name, "square", seed)
    if name == "large":
        assert V.shape[1] > 64
    for _ in range(sweeps):
        V = _np_sweep_square(Dt, rpairs, p.labels, p.C, V)
    sol = ssl_opt.solve(p, solver="bcd", max_iter=sweeps, anderson=0, seed=seed, tol=0.0)
    assert sol.iterations == sweeps
    assert sol.x["V"].shape == V.shape
    np.testing.assert_allclose(sol.x["V"], V, atol=1e-10)
    # The recorded objective is Ω̃(VᵀV), recomputed here.
    f = _np_objective(Dt, rpairs, p.labels, p.C, "square", V.T @ V)
    assert _rel(sol.history["objective"][-1], f) < 1e-12



@pytest.mark.parametrize("loss,sweeps,seed,name", [
    ("squared_hinge", 1, 5, "spiral"), ("squared_hinge", 3, 5, "spiral"),
    ("squared_hinge", 2, 5, "large"),  # across a block boundary (the spiral ones: α_p = 0)
    ("hinge", 1, 5, "spiral"), ("hinge", 2, 5, "spiral"),
    ("hinge", 4, 3, "spiral"),  # a column dual that coordinate descent did not solve (fixed)
])
def test_bcd_hinge_loss_sweeps_minimize_each_column_exactly(loss, sweeps, seed, name):
    """Along the plugin's own Gauss–Seidel trajectory (sweep k: columns < i already updated,
    columns ≥ i from sweep k−1), each new column minimizes its column problem, solved here
    by CVXPY. The column problem is strongly convex (modulus a), so v is unique; an exact
    update cannot have a larger column objective than CVXPY's (the sharp check: Clarabel's v
    itself is only ~1e-6 accurate on ill-conditioned columns)."""
    p, Dt, rpairs, V0 = _sweep_setup(name, loss, seed)
    if sweeps > 1:
        V0 = ssl_opt.solve(p, solver="bcd", max_iter=sweeps - 1, anderson=0, seed=seed,
                           tol=0.0).x["V"]
    sol = ssl_opt.solve(p, solver="bcd", max_iter=sweeps, anderson=0, seed=seed, tol=0.0)
    assert sol.iterations == sweeps
    V1 = sol.x["V"]
    assert V1.shape == V0.shape
    for i in range(V0.shape[1]):
        a, b, A = _column_data(Dt, rpairs, p.labels, np.hstack([V1[:, :i], V0[:, i:]]), i)
        v = _column_problem_cvxpy(a, b, A, p.C, loss)
        f_code = _column_value(a, b, A, p.C, loss, V1[:, i])
        f_cvx = _column_value(a, b, A, p.C, loss, v)
        assert f_code <= f_cvx + 1e-12 * max(1.0, abs(f_cvx)), (i, f_code - f_cvx)
        np.testing.assert_allclose(V1[:, i], v, atol=1e-5, err_msg=f"column {i}")
    f = _np_objective(Dt, rpairs, p.labels, p.C, loss, V1.T @ V1)
    assert _rel(sol.history["objective"][-1], f) < 1e-12


@pytest.mark.parametrize("loss", LOSSES)
def test_bcd_stationarity_and_multipliers_match_numpy(loss):
    """The recorded stationarity ‖VG̃‖_F / max(1, ‖VΔ̃‖_F) and, for the hinge, the pair
    multipliers y_p = α_p^{(i)} + α_p^{(j)} (each in [0, C]) against dense numpy."""
    p, Dt, rpairs, _ = _sweep_setup("large", loss, 2)
    sol = ssl_opt.solve(p, solver="bcd", max_iter=3, tol=0.0)
    V, y = sol.x["V"], sol.x["y"]
    if loss != "hinge":
        t = p.labels * np.einsum("ri,ri->i", V[:, rpairs[:, 0]], V[:, rpairs[:, 1]])
        np.testing.assert_allclose(y, _np_multipliers(loss, t, p.C), atol=1e-12)
    else:
        assert np.all(y >= -1e-12) and np.all(y <= p.C + 1e-12)
    G = _np_gradient(Dt, rpairs, p.labels, y)
    expected = np.linalg.norm(V @ G) / max(1.0, np.linalg.norm(V @ Dt))
    assert abs(sol.history["stationarity"][-1] - expected) <= 1e-12 * max(1.0, expected)


@pytest.mark.parametrize("which", ["factored", "dense Δ̃"])
def test_reduced_gradient_min_by_lanczos_matches_numpy(which, monkeypatch):
    """Above DENSE_EIG_MAX constrained points λ_min(G̃) comes from Lanczos on an operator: Δ̃x
    from the sparse blocks and factor of Δ_UU ("factored"), or the dense Δ̃ when every point
    is constrained (no factor). Forced here on small problems by lowering the threshold."""
    from ssl_opt.plugins.npkl import bcd

    if which == "factored":
        p, Dt, rpairs, _ = _sweep_setup("large", "square", 1)
    else:
        d = double_spiral(n=40, seed=2)
        pairs = np.array([[i, (i + 7) % 40] for i in range(40)])
        labels = np.where(d.y[pairs[:, 0]] == d.y[pairs[:, 1]], 1.0, -1.0)
        p = NPKL(knn_graph(d.X, n_neighbors=4), pairs, labels, C=1.5, loss="square")
        Dt, rpairs = _dense(p.Delta), p.pairs
    red = p.boundary_reduction()
    assert red.factored_schur == (which == "factored")
    y = np.random.default_rng(4).uniform(0.0, 3.0, p.m)
    expected = np.linalg.eigvalsh(_np_gradient(Dt, rpairs, p.labels, y))[0]
    monkeypatch.setattr(bcd, "DENSE_EIG_MAX", 5)
    assert abs(bcd.reduced_gradient_min(red.reduced, y, red) - expected) < 1e-8
    monkeypatch.undo()
    assert abs(bcd.reduced_gradient_min(red.reduced, y, red) - expected) < 1e-10


@pytest.mark.parametrize("guess", [False, True])
def test_nonneg_qp_matches_scipy_nnls(guess):
    """The squared hinge's column dual with inactive pairs, min ½αᵀPα − qᵀα over α ≥ 0 with
    P ≻ 0, is NNLS on the Cholesky factor: min ‖Lᵀα − L⁻¹q‖ (scipy's nnls). With and without
    the guess of the unconstrained solution's positive set; near-singular P included."""
    from scipy.optimize import nnls

    from ssl_opt.numerics.small_qp import nonneg_qp

    rng = np.random.default_rng(11)
    for _ in range(300):
        k, r = int(rng.integers(1, 9)), int(rng.integers(1, 10))
        A = rng.standard_normal((k, r))
        P = A @ A.T + 10.0 ** rng.uniform(-6, 0) * np.eye(k)
        q = 3.0 * rng.standard_normal(k)
        L = np.linalg.cholesky(P)
        expected = nnls(L.T, np.linalg.solve(L, q))[0]
        start = np.linalg.solve(P, q) > 0 if guess else None
        got = nonneg_qp(P, q, start)
        assert np.all(got >= 0.0)
        np.testing.assert_allclose(got, expected, atol=1e-9 * max(1.0, np.abs(expected).max()))


def test_blas_is_limited_to_one_thread_only_for_short_products():
    from threadpoolctl import threadpool_info

    from ssl_opt.plugins.npkl import sweep

    def blas_threads():
        return {i["filepath"]: i["num_threads"] for i in threadpool_info()
                if i["user_api"] == "blas"}

    before = blas_threads()
    with sweep.blas_threads(sweep.ONE_THREAD_BELOW - 1):
        assert set(blas_threads().values()) <= {1}
    assert blas_threads() == before
    with sweep.blas_threads(sweep.ONE_THREAD_BELOW):
        assert blas_threads() == before


@pytest.mark.parametrize("anderson", [0, 5])
@pytest.mark.parametrize("loss", LOSSES)
def test_bcd_objective_history_is_monotone(loss, anderson):
    p, ref = _instance("spiral", loss)
    sol = ssl_opt.solve(p, solver="bcd", anderson=anderson, max_iter=300)
    f = sol.history["objective"]
    assert len(f) >= 3
    assert np.all(np.diff(f) <= 1e-12 * np.maximum(1.0, np.abs(f[:-1]))), np.diff(f).max()
    # The reduced objective of the last iterate is Ω of the lifted kernel (Prop. 1 lifting).
    assert _rel(f[-1], sol.objective) < 1e-9
    assert f[-1] >= ref.objective - 1e-7 * max(1.0, ref.objective)


def test_default_rank_is_the_largest_s_with_s_s1_over_2_at_most_m():
    def brute(m):
        return max(s for s in range(1, m + 2) if s * (s + 1) // 2 <= m)

    for m in range(1, 3000):
        assert default_rank(m) == brute(m), m
    d = double_spiral(n=30, seed=0)
    S = knn_graph(d.X, n_neighbors=4)
    for m in (1, 2, 3, 5, 6, 9, 10, 14, 15, 28):
        pairs, labels = pairwise_constraints(d.y, m, seed=m)
        p = NPKL(S, pairs, labels, C=1.0)
        sol = ssl_opt.solve(p, solver="bcd", max_iter=1)
        assert sol.x["V"].shape == (brute(m), np.unique(pairs).size), m
        assert sol.info["rank"] == brute(m)


@pytest.mark.parametrize("rank", [1, 3, 12])
def test_rank_option_is_respected(rank):
    p, _ = _instance("spiral", "square")
    sol = ssl_opt.solve(p, solver="bcd", rank=rank, max_iter=50)
    l = np.unique(p.pairs).size
    assert sol.x["V"].shape == (rank, l)
    assert sol.x["Phi"].shape == (p.n, rank)
    assert np.linalg.matrix_rank(sol.x["Z"], tol=1e-9 * np.abs(sol.x["Z"]).max()) <= rank


@pytest.mark.parametrize("loss", SMOOTH)
def test_warm_start_from_a_solution_converges_at_once(loss):
    p, ref = _instance("spiral", loss)
    first = _bcd("spiral", loss)
    assert first.status == OPTIMAL and first.iterations > 5
    for start in (first, first.x["V"], {"V": first.x["V"]}):
        again = ssl_opt.solve(p, solver="bcd", warm_start=start)
        assert again.status == OPTIMAL
        assert again.iterations <= 2
        assert _rel(again.objective, first.objective) < 1e-9
        np.testing.assert_allclose(again.x["V"], first.x["V"], atol=1e-5)


# ------------------------------------------------------------------ 7. the KKT certificate


def _np_kkt(p, Z, y):
    """The library's residual definitions, rebuilt with dense numpy."""
    Delta = _dense(p.Delta)
    G = _np_gradient(Delta, p.pairs, p.labels, y)
    g = np.linalg.eigvalsh(G)
    z = np.linalg.eigvalsh(Z)
    inner = float(np.sum(G * Z))
    omega = _np_objective(Delta, p.pairs, p.labels, p.C, p.loss.name, Z)
    scale = max(1.0, abs(omega))
    lam = np.linalg.eigvalsh(Delta)[0]
    return {
        "gradient_psd": max(0.0, -g[0]) / max(1.0, g[-1]),
        "kernel_psd": max(0.0, -z[0]) / max(1.0, z[-1]),
        "complementarity": abs(inner) / scale,
        "bound_with_true_lambda": (max(0.0, inner) + max(0.0, -g[0]) * max(omega, 0.0) / lam)
        / scale,
    }


@pytest.mark.parametrize("loss", LOSSES)
def test_gradient_matrix_and_multipliers_against_numpy(loss):
    p = _tiny(loss)
    ref = _tiny_refs(loss)[0]
    rng = np.random.default_rng(2)
    B = rng.standard_normal((p.n, p.n))
    Z = B @ B.T / 4
    y = rng.uniform(-1, 2, p.m)
    G = p.gradient_matrix(y)
    np.testing.assert_allclose(_dense(G), _np_gradient(_dense(p.Delta), p.pairs, p.labels, y),
                               atol=1e-14)
    t = p.labels * Z[p.pairs[:, 0], p.pairs[:, 1]]
    assert np.all(np.abs(t - 1) > 1e-3)
    np.testing.assert_allclose(p.pair_multipliers(Z), _np_multipliers(loss, t, p.C), atol=1e-13)
    # G(y(Z)) is the gradient of Ω at Z (finite differences along a symmetric direction).
    E = rng.standard_normal((p.n, p.n))
    E = E + E.T
    G = _dense(p.gradient_matrix(p.pair_multipliers(Z)))
    h = 1e-6
    fd = (p.objective({"Z": Z + h * E}) - p.objective({"Z": Z - h * E})) / (2 * h)
    assert abs(fd - np.sum(G * E)) < 1e-6 * max(1.0, abs(fd))
    # At the optimum the multipliers from Z are the reference's dual variables.
    if loss != "hinge":
        np.testing.assert_allclose(p.pair_multipliers(ref.x["Z"]), ref.x["y"], atol=1e-6)


@pytest.mark.parametrize("dense_delta", [False, True])
@pytest.mark.parametrize("loss", SMOOTH)
def test_gradient_against_numpy_and_finite_differences_along_any_direction(loss, dense_delta):
    """``∂Ω/∂Z``: Δ everywhere plus ``C ℓ'(T_p Z_ij) T_p`` at the one entry ``(i, j)``,
    ``i < j``, that Ω reads for pair p (a pair given as (j, i) is read at (i, j) too), built
    here with dense numpy; central differences of the numpy objective along a non-symmetric
    direction at a non-symmetric Z; its symmetric part is G(y(Z)). The hinge has none."""
    rng = np.random.default_rng(12)
    n, C = 14, 3.0
    S = _random_S(rng, n, sparse=True)
    pairs = np.array([[0, 5], [7, 2], [3, 9], [1, 13], [4, 6], [8, 12], [10, 11], [2, 9],
                      [0, 13]])
    labels = rng.choice([-1.0, 1.0], pairs.shape[0])
    Delta = _np_delta(S, 0.3)
    if dense_delta:
        p = NPKL.from_regularizer(Delta, pairs, labels, C, loss=loss)
    else:
        p = NPKL(S, pairs, labels, C=C, loss=loss, delta=0.3)
    assert sp.issparse(p.Delta) != dense_delta
    upper = np.sort(pairs, axis=1)
    Z = 1.5 * rng.standard_normal((n, n))
    t = labels * Z[upper[:, 0], upper[:, 1]]
    assert (t > 1).any() and (t < 1).any()
    y = _np_multipliers(loss, t, C)  # −C ℓ'(t)
    expected = Delta.copy()
    expected[upper[:, 0], upper[:, 1]] -= y * labels
    grad = p.gradient({"Z": Z})
    assert set(grad) == {"Z"}
    assert isinstance(grad["Z"], np.ndarray) and grad["Z"].shape == (n, n)
    np.testing.assert_allclose(grad["Z"], expected, rtol=1e-13, atol=1e-13)
    h = 1e-6
    for _ in range(3):
        E = rng.standard_normal((n, n))
        fd = (_np_objective(Delta, upper, labels, C, loss, Z + h * E)
              - _np_objective(Delta, upper, labels, C, loss, Z - h * E)) / (2 * h)
        assert abs(fd - np.sum(grad["Z"] * E)) < 1e-7 * max(1.0, abs(fd))
    sym = 0.5 * (grad["Z"] + grad["Z"].T)
    np.testing.assert_allclose(sym, _np_gradient(Delta, upper, labels, y), rtol=1e-13,
                               atol=1e-13)
    hinge = NPKL(S, pairs, labels, C=C, loss="hinge", delta=0.3)
    with pytest.raises(NotImplementedError, match="not smooth"):
        hinge.gradient({"Z": Z})


@pytest.mark.parametrize("loss", LOSSES)
def test_kkt_residuals_at_the_reference_optimum(loss):
    p = _tiny(loss)
    ref = _tiny_refs(loss)[0]
    res = p.kkt(ref)
    assert max(res.values()) < 1e-6, res
    mine = _np_kkt(p, ref.x["Z"], ref.x["y"])
    assert max(mine.values()) < 1e-6, mine
    for name in ("gradient_psd", "kernel_psd", "complementarity"):
        assert abs(res[name] - mine[name]) < 1e-9, name


@pytest.mark.parametrize("loss", LOSSES)
def test_kkt_residuals_match_numpy_at_arbitrary_points(loss):
    p = _tiny(loss)
    rng = np.random.default_rng(9)
    for _ in range(3):
        B = rng.standard_normal((p.n, 3))
        Z = B @ B.T - 0.2 * np.eye(p.n)  # indefinite
        res = p.kkt({"Z": Z})
        mine = _np_kkt(p, Z, _np_multipliers(loss, p.margins(Z), p.C))
        for name in ("gradient_psd", "kernel_psd", "complementarity"):
            assert abs(res[name] - mine[name]) < 1e-9 * max(1.0, mine[name]), name


@pytest.mark.parametrize("name", ["tiny", "example"])
@pytest.mark.parametrize("loss", LOSSES)
def test_suboptimality_bound_is_an_upper_bound(name, loss):
    if name == "tiny":
        p, ref = _tiny(loss), _tiny_refs(loss)[0]
        p_star = min(ref.objective, _tiny_refs(loss)[2])
    else:
        p, ref = _instance("example", loss)
        p_star = ref.objective
    Z_star = ref.x["Z"]
    rng = np.random.default_rng(4)
    v = rng.standard_normal(p.n)
    v /= np.linalg.norm(v)
    points = [1.1 * Z_star, 0.9 * Z_star, 0.5 * Z_star, Z_star + 1e-3 * np.outer(v, v),
              Z_star + 0.3 * np.outer(v, v)]
    for _ in range(4):
        B = rng.standard_normal((p.n, 3))
        points.append(B @ B.T * rng.uniform(0.01, 1.0))
    for Z in points:
        f = _np_objective(_dense(p.Delta), p.pairs, p.labels, p.C, loss, Z)
        gap = (f - p_star) / max(1.0, abs(f))
        assert gap > 1e-7  # a genuinely suboptimal point
        bound = p.kkt({"Z": Z})["suboptimality_bound"]
        assert bound >= gap - 1e-9, (bound, gap)
    assert p.kkt(ref)["suboptimality_bound"] < 1e-6


def test_non_psd_kernel_is_flagged_with_its_smallest_eigenvalue():
    p = _tiny("square")
    Z_star = _tiny_refs("square")[0].x["Z"]
    rng = np.random.default_rng(1)
    for depth in (1e-3, 0.5, 5.0):
        v = rng.standard_normal(p.n)
        v /= np.linalg.norm(v)
        w = np.linalg.eigvalsh(Z_star)
        Z = Z_star - (w[-1] + depth) * np.outer(v, v)  # indefinite
        z = np.linalg.eigvalsh(Z)
        assert z[0] < 0
        res = p.kkt({"Z": Z})
        assert res["kernel_psd"] > 0
        assert res["kernel_psd"] == pytest.approx(-z[0] / max(1.0, z[-1]), rel=1e-9)
        cert = ssl_opt.certify(p, {"Z": Z}, reference=False)
        assert not cert.passed and "kernel_psd" in _failed(cert)


def test_hinge_certificate_from_Z_alone_fits_the_kink_multipliers():
    # Built-in example (δ = C/2): the reference's Z without its y still certifies.
    p, ref = _instance("example", "hinge")
    Z = ref.x["Z"]
    t = p.margins(Z)
    assert (np.abs(t - 1) < 1e-6).sum() >= 5  # many margins at the kink
    cert = ssl_opt.certify(p, {"Z": Z}, reference=ref)
    assert cert.passed, cert.report()
    # The naive subgradient C·[t < 1] (no fit) does not certify it: the fit is doing the work.
    naive = _np_kkt(p, Z, _np_multipliers("hinge", t, p.C))
    assert naive["gradient_psd"] > 1e-3
    # Tiny instance with δ = 0.02: the fitted multipliers match the reference's dual variables
    # to ~1e-7; the residuals are at reference-family tolerance (1e-5). (Measured: the
    # suboptimality bound is ~2e-6 there, its λ_min(G) term being amplified by Ω/δ ≈ 130.)
    p = _tiny("hinge")
    ref = _tiny_refs("hinge")[0]
    np.testing.assert_allclose(p.pair_multipliers(ref.x["Z"]), ref.x["y"], atol=1e-5)
    res = p.kkt({"Z": ref.x["Z"]})
    assert max(res.values()) < 1e-5, res


# --------------------------------------------------------- 8. kernel k-means on the kernel


def test_bcd_kernel_clusters_the_double_spiral():
    data = double_spiral(n=100, seed=0)
    m = paper_constraint_count(100)
    assert m == 120
    pairs, labels = pairwise_constraints(data.y, m, seed=0)
    p = NPKL(knn_graph(data.X, n_neighbors=5), pairs, labels, C=1.0, loss="square")
    sol = ssl_opt.solve(p, solver="bcd")
    assert sol.status == OPTIMAL
    Phi = sol.x["Phi"]
    np.testing.assert_allclose(Phi @ Phi.T, sol.x["Z"], atol=1e-10)
    scores = evaluate_kernel(factor=Phi, y=data.y, n_init=10, seed=0)
    assert scores["pair_accuracy"] > 0.9, scores
    # The learned kernel beats the raw graph: k-means on the first coordinates is far worse.
    raw = evaluate_kernel(factor=data.X, y=data.y, n_init=10, seed=0)
    assert scores["pair_accuracy"] > raw["pair_accuracy"] + 0.2, (scores, raw)


# --------------------------------------------------------------------------- 9. bad input


def _base():
    S, pairs, labels = _tiny_data()
    return S, pairs, labels


@pytest.mark.parametrize("pairs,labels,match", [
    (np.array([[0, 1], [2, 18]]), [1, -1], "pairs"),
    (np.array([[0, 1], [-1, 3]]), [1, -1], "pairs"),
    (np.array([[0, 1], [4, 4]]), [1, -1], "pairs"),
    (np.array([[1, 2], [2, 1]]), [1, -1], "pairs"),
    (np.array([[1, 2, 3], [4, 5, 6]]), [1, -1], "pairs"),
    (np.array([1, 2]), [1], "pairs"),
    (np.zeros((0, 2), dtype=int), [], "pairs"),
    (np.array([[0.5, 1], [2, 3]]), [1, -1], "pairs"),
    (np.array([[0, 1], [2, 3]]), [1, 0], "labels"),
    (np.array([[0, 1], [2, 3]]), [1, 2], "labels"),
    (np.array([[0, 1], [2, 3]]), [1, -1, 1], "labels"),
    (np.array([[0, 1], [2, 3]]), [1], "labels"),
])
def test_bad_pairs_and_labels(pairs, labels, match):
    S = _base()[0]
    with pytest.raises(ssl_opt.InvalidInputError, match=match):
        NPKL(S, pairs, labels, C=1.0)


class LogisticWithoutConjugate(MarginLoss):
    """φ(m) = log(1 + e^{−m}) with value, CVXPY expression and φ' only: no conjugate, so NPKL
    (whose reference solves the dual) refuses it."""

    name = "logistic_without_conjugate"

    def value(self, m):
        return np.logaddexp(0.0, -np.asarray(m, dtype=float))

    def cvxpy(self, m):
        return cp.logistic(-m)

    def derivative(self, m):
        return -1.0 / (1.0 + np.exp(np.asarray(m, dtype=float)))


@pytest.mark.parametrize("kwargs,match", [
    ({"C": 0.0}, r"\bC\b"), ({"C": -1.0}, r"\bC\b"), ({"C": float("nan")}, r"\bC\b"),
    ({"C": 1.0, "delta": 0.0}, "delta"), ({"C": 1.0, "delta": -0.1}, "delta"),
    ({"C": 1.0, "loss": LogisticWithoutConjugate()}, "loss"),
    ({"C": 1.0, "loss": "Hinge"}, "loss"),
])
def test_bad_parameters(kwargs, match):
    S, pairs, labels = _base()
    with pytest.raises(ssl_opt.InvalidInputError, match=match):
        NPKL(S, pairs, labels, **kwargs)


def _bad_S(kind):
    A = _dense(_base()[0]).copy()
    if kind == "asymmetric":
        A[0, 5] += 0.5
    elif kind == "negative":
        A[0, 5] = A[5, 0] = -0.5
    elif kind == "nan":
        A[0, 5] = A[5, 0] = np.nan
    elif kind == "not square":
        A = A[:, :-1]
    return A


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("kind", ["asymmetric", "negative", "nan", "not square"])
def test_bad_similarity_is_rejected(kind, sparse):
    S = _bad_S(kind)
    S = sp.csr_matrix(S) if sparse else S
    _, pairs, labels = _base()
    with pytest.raises(ssl_opt.InvalidInputError):
        NPKL(S, pairs, labels, C=1.0)


@pytest.mark.parametrize("kind", ["asymmetric", "negative", "nan", "not square"])
def test_bad_similarity_message_names_S(kind):
    _, pairs, labels = _base()
    with pytest.raises(ssl_opt.InvalidInputError, match=r"\bS\b"):
        NPKL(_bad_S(kind), pairs, labels, C=1.0)


@pytest.mark.parametrize("options,match", [
    ({"tol": -1e-6}, "tol"), ({"tol": float("nan")}, "tol"),
    ({"max_iter": 0}, "max_iter"), ({"max_iter": 2.5}, "max_iter"),
    ({"rank": 0}, "rank"), ({"rank": 1.5}, "rank"),
    ({"anderson": -1}, "anderson"),
    ({"warm_start": np.ones((3, 5))}, "warm_start"),
    ({"warm_start": np.ones(12)}, "warm_start"),
    ({"warm_start": np.full((3, 12), np.nan)}, "warm_start"),
    ({"warm_start": {"Z": np.eye(12)}}, "warm_start"),
    ({"seed": 1.5}, "seed"),
    ({"bogus": 1}, "bogus"),
])
def test_bad_bcd_options(options, match):
    p = _tiny("square")
    assert p.constrained_points.size == 12
    with pytest.raises(ssl_opt.InvalidInputError, match=match):
        ssl_opt.solve(p, solver="bcd", **options)


def test_from_regularizer_validates_delta():
    S, pairs, labels = _base()
    Lsym = _np_delta(S, 0.0)
    with pytest.raises(ssl_opt.InvalidInputError, match="Delta"):
        NPKL.from_regularizer(Lsym - 0.1 * np.eye(Lsym.shape[0]), pairs, labels, C=1.0)
    A = Lsym + np.eye(Lsym.shape[0])
    A[0, 1] += 0.1
    with pytest.raises(ssl_opt.InvalidInputError, match="Delta"):
        NPKL.from_regularizer(A, pairs, labels, C=1.0)
    with pytest.raises(ssl_opt.InvalidInputError, match="Delta"):
        NPKL.from_regularizer(np.ones((4, 5)), pairs, labels, C=1.0)
    # A positive definite Δ is accepted; its objective is tr(ΔZ) + C Σ ℓ.
    p = NPKL.from_regularizer(Lsym + 0.3 * np.eye(Lsym.shape[0]), pairs, labels, C=2.0,
                              loss="hinge")
    Z = np.eye(Lsym.shape[0])
    expected = _np_objective(Lsym + 0.3 * np.eye(Lsym.shape[0]), p.pairs, p.labels, 2.0,
                             "hinge", Z)
    assert _rel(p.objective({"Z": Z}), expected) < 1e-12
    assert p.lambda_min_bound == pytest.approx(np.linalg.eigvalsh(Lsym)[0] + 0.3, abs=1e-9)


# ------------------------------------------------------- 10. selection and built-in examples


def test_reference_selection_prefers_the_boundary_sdp_when_l_far_below_n():
    """The full SDP's cost model is a law in n and the boundary SDP's in l, so the reduction is
    chosen when few points are constrained and the plain SDP when all are (the reduction's
    set-up then buys nothing)."""
    d = double_spiral(n=300, seed=0)
    pairs, labels = pairwise_constraints(d.y, 30, seed=0)
    p = NPKL(knn_graph(d.X, n_neighbors=5), pairs, labels, C=1.0)
    assert p.constrained_points.size < p.n / 4
    sel = ssl_opt.select(p, "reference")
    assert sel.solver == "cvxpy-boundary"
    assert sel.predicted_time["cvxpy"] > 10 * sel.predicted_time["cvxpy-boundary"]
    n = 8
    S = knn_graph(np.random.default_rng(0).standard_normal((n, 2)), n_neighbors=3)
    pairs = np.array([[i, i + 1] for i in range(0, n, 2)])
    q = NPKL(S, pairs, np.ones(len(pairs)), C=1.0)
    assert q.constrained_points.size == n
    assert ssl_opt.select(q, "reference").solver == "cvxpy"


def test_builtin_examples_exist_and_build():
    names = {e.name: e for e in examples()}
    for loss in LOSSES:
        name = f"npkl-spiral-{loss.replace('_', '-')}"
        assert name in names
        assert names[name].family == "npkl"
        p = names[name].build()
        assert isinstance(p, NPKL) and p.loss.name == loss and p.n == 60 and p.m == 36
        assert p.structure.variant == loss


def test_spd_factor_rejects_indefinite_and_singular_sparse_matrices():
    """The sparse path checks its pivots: an indefinite or singular matrix is an error, while
    an SPD one solves to round-off (compared with a dense solve)."""
    from ssl_opt.numerics.factor import SPDFactor

    rng = np.random.default_rng(0)
    n = 60
    B = sp.random(n, n, density=0.05, random_state=1)
    spd = sp.csc_matrix(B @ B.T + sp.identity(n))
    rhs = rng.standard_normal((n, 3))
    np.testing.assert_allclose(SPDFactor(spd).solve(rhs), np.linalg.solve(spd.toarray(), rhs),
                               rtol=1e-10, atol=1e-12)
    indefinite = sp.csc_matrix(spd - 3.0 * sp.identity(n) * float(spd.diagonal().max()))
    with pytest.raises(ssl_opt.InvalidInputError, match="not positive definite"):
        SPDFactor(indefinite)
    singular = spd.tolil()
    singular[:, 0] = 0.0
    singular[0, :] = 0.0
    with pytest.raises(ssl_opt.InvalidInputError, match="not positive definite"):
        SPDFactor(sp.csc_matrix(singular))


# ------------------------------------------------------------ 11. the loss is an object


def _tiny_with(loss):
    S, pairs, labels = _tiny_data()
    return NPKL(S, pairs, labels, C=1.0, loss=loss, delta=0.02)


def _primal_sdp_of(p, loss_expression):
    """min tr(ΔZ) + C Σ ℓ(t) over Z ⪰ 0 written here, ℓ given as a CVXPY function of t."""
    Z = cp.Variable((p.n, p.n), PSD=True)
    t = cp.multiply(p.labels, Z[p.pairs[:, 0], p.pairs[:, 1]])
    prog = cp.Problem(cp.Minimize(cp.trace(_dense(p.Delta) @ Z) + p.C * loss_expression(t)))
    _solve_here(prog)
    return float(prog.value)


def test_loss_names_and_aliases_build_the_same_problem():
    assert _tiny_with("squared").loss == _tiny_with("square").loss
    assert _tiny_with("squared").structure.variant == "square"
    for loss in LOSSES:
        p = _tiny_with(loss)
        assert isinstance(p.loss, MarginLoss) and p.structure.variant == loss
        assert p.structure.smooth == (loss != "hinge")


def test_huber_loss_is_solved_by_both_references_and_by_bcd():
    """The Huber hinge is not in [003] but its conjugate is quadratic on [0, 1]: the dual SDP
    of the references agrees with a primal SDP written here, and BCD's box-QP column updates
    (κ = δ, α ≤ C/2) reach the same optimum."""
    delta = 0.5
    p = _tiny_with(HuberHinge(delta))
    assert p.structure.variant == "huber" and p.structure.smooth
    value = _primal_sdp_of(p, lambda t: cp.sum(cp.huber(cp.pos(1 - t), delta)) / (2 * delta))
    ref = ssl_opt.solve(p, solver="cvxpy")
    bnd = ssl_opt.solve(p, solver="cvxpy-boundary")
    sol = ssl_opt.solve(p, solver="bcd", tol=1e-10)
    for s in (ref, bnd):
        assert s.status == OPTIMAL and _rel(s.objective, value) < 1e-6
    assert sol.status == OPTIMAL and _rel(sol.objective, value) < 1e-6
    assert ssl_opt.certify(p, sol, reference=ref).passed
    # Smooth: the multipliers are −C ℓ'(t) = C min((1 − t)₊, δ)/δ at BCD's kernel.
    t = p.margins(sol.x["Z"])
    expected = p.C * np.minimum(np.maximum(0.0, 1.0 - t), delta) / delta
    np.testing.assert_allclose(sol.x["y"], expected, atol=1e-10)


class LogisticWithConjugate(Logistic):
    """φ(m) = log(1 + e^{−m}) with its conjugate φ*(s) = (−s) log(−s) + (1 + s) log(1 + s) on
    [−1, 0]: an exponential-cone dual, not a quadratic one."""

    name = "logistic_conjugate"

    @property
    def capabilities(self):
        return super().capabilities | {"conjugate"}

    def conjugate(self, s):
        g = -np.asarray(s, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            inside = -(g * np.log(g) + (1 - g) * np.log(1 - g))
        return np.where((g >= 0) & (g <= 1), -np.nan_to_num(inside), np.inf)

    def dual_cvxpy(self, y, C):
        return C * cp.sum(cp.entr(y / C) + cp.entr(1 - y / C)), []


def test_a_user_loss_with_a_conjugate_gets_the_reference_and_bcd():
    """Its conjugate is not quadratic: BCD updates its columns by Newton (it offers φ', φ'')."""
    p = _tiny_with(LogisticWithConjugate())
    value = _primal_sdp_of(p, lambda t: cp.sum(cp.logistic(-t)))
    ref = ssl_opt.solve(p, solver="cvxpy")
    assert ref.status == OPTIMAL and _rel(ref.objective, value) < 1e-6
    sol = ssl_opt.solve(p, solver="bcd", tol=1e-10)
    assert sol.status == OPTIMAL and _rel(sol.objective, value) < 1e-6
    with pytest.raises(ssl_opt.InvalidInputError, match="loss must offer conjugate"):
        _tiny_with(LogisticWithoutConjugate())
