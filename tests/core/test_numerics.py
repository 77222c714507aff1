"""The shared numerics against independent computations: safeguarded Anderson acceleration on
linear fixed points (solution by a direct solve, extrapolation by least squares), block CG
(against numpy.linalg.solve, in each stopping norm) and the refactored LDLᵀ (against a dense
solve and a dense Cholesky's column counts)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from ssl_opt.exceptions import InvalidInputError
from ssl_opt.numerics.anderson import SafeguardedAnderson
from ssl_opt.numerics.block_cg import COLUMN_NORMS, block_cg_solve
from ssl_opt.numerics.ldl import PatternLDL


def _contraction(n: int, rate: float, seed: int = 0):
    """``T(x) = Mx + c`` with M symmetric, spectral radius ``rate``, and its fixed point by a
    direct solve."""
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    M = Q @ np.diag(np.linspace(0.1, rate, n)) @ Q.T
    c = rng.standard_normal(n)
    return M, c, np.linalg.solve(np.eye(n) - M, c)


def _run(aa: SafeguardedAnderson, M, c, x, steps: int, acceptable):
    """The loop every solver runs: observe (x, T(x)), try the extrapolation, else T(x)."""
    xs = []
    for _ in range(steps):
        g = M @ x + c
        aa.observe(x, g)
        x = aa.propose(lambda z: z, acceptable)
        x = g if x is None else x
        xs.append(x)
    return xs


def test_anderson_solves_a_linear_fixed_point():
    n = 12
    M, c, x_star = _contraction(n, 0.99)
    aa = SafeguardedAnderson(n, n, clear_on_reject=True)
    x = _run(aa, M, c, np.zeros(n), n + 3, lambda z: True)[-1]
    # Type-II Anderson with full memory is GMRES on (I − M)x = c: exact after n + 1 steps.
    assert np.linalg.norm(x - x_star) <= 1e-8 * np.linalg.norm(x_star)
    assert aa.accepted == n + 2 and aa.rejected == 0
    plain = np.zeros(n)
    for _ in range(n + 3):
        plain = M @ plain + c
    assert np.linalg.norm(plain - x_star) > 1e-2 * np.linalg.norm(x_star)


@pytest.mark.parametrize("memory", [1, 2, 4])
def test_extrapolation_is_the_least_squares_combination(memory):
    """``x_AA = g − ΔGᵀγ`` with ``γ = argmin ‖f − ΔFᵀγ‖`` over the last ``memory`` differences."""
    n = 9
    M, c, _ = _contraction(n, 0.9, seed=1)
    rng = np.random.default_rng(2)
    xs = [rng.standard_normal(n) for _ in range(6)]
    gs = [M @ x + c for x in xs]
    aa = SafeguardedAnderson(n, memory, clear_on_reject=True)
    for x, g in zip(xs, gs, strict=True):
        aa.observe(x, g)
    proposed = aa.propose(lambda z: z, lambda z: True)
    fs = [g - x for x, g in zip(xs, gs, strict=True)]
    dF = np.array([fs[i + 1] - fs[i] for i in range(len(xs) - 1)])[-memory:]
    dG = np.array([gs[i + 1] - gs[i] for i in range(len(xs) - 1)])[-memory:]
    gamma = np.linalg.lstsq(dF.T, fs[-1], rcond=None)[0]
    np.testing.assert_allclose(proposed, gs[-1] - dG.T @ gamma, rtol=1e-7, atol=1e-9)


def test_a_rule_that_rejects_everything_leaves_the_plain_iteration():
    n = 6
    M, c, _ = _contraction(n, 0.8, seed=3)
    for clear in (True, False):
        aa = SafeguardedAnderson(n, 3, clear_on_reject=clear)
        xs = _run(aa, M, c, np.ones(n), 8, lambda z: False)
        plain, x = [], np.ones(n)
        for _ in range(8):
            x = M @ x + c
            plain.append(x)
        np.testing.assert_array_equal(np.array(xs), np.array(plain))
        # Every step after the first has a difference in memory (a cleared memory gets one
        # again from the next pair), so every one of them proposes and is rejected.
        assert (aa.accepted, aa.rejected) == (0, 7)


def test_rejection_clears_the_memory_only_when_asked():
    n = 5
    M, c, _ = _contraction(n, 0.8, seed=4)
    seen = {}
    for clear in (True, False):
        aa = SafeguardedAnderson(n, 4, clear_on_reject=clear)
        x = np.zeros(n)
        for _ in range(4):  # three differences in memory
            g = M @ x + c
            aa.observe(x, g)
            x = g
        assert aa.propose(lambda z: z, lambda z: False) is None
        seen[clear] = aa.propose(lambda z: z, lambda z: True)
    assert seen[True] is None  # restarted: nothing to extrapolate from
    assert seen[False] is not None


def test_restart_forgets_the_last_pair_and_the_memory():
    n = 4
    M, c, _ = _contraction(n, 0.5, seed=5)
    aa = SafeguardedAnderson(n, 3, clear_on_reject=False)
    x = np.zeros(n)
    for _ in range(3):
        g = M @ x + c
        aa.observe(x, g)
        x = g
    aa.restart()
    aa.observe(x, M @ x + c)  # one pair: no difference yet
    assert aa.propose(lambda z: z, lambda z: True) is None
    np.testing.assert_array_equal(aa.residual, M @ x + c - x)


def test_memory_zero_is_the_plain_iteration():
    n = 4
    M, c, _ = _contraction(n, 0.5, seed=6)
    aa = SafeguardedAnderson(n, 0, clear_on_reject=True)
    xs = _run(aa, M, c, np.zeros(n), 5, lambda z: True)
    x = np.zeros(n)
    for step in xs:
        x = M @ x + c
        np.testing.assert_array_equal(step, x)
    assert (aa.accepted, aa.rejected) == (0, 0)


# ---------------------------------------------------------------------------- block CG


def _spd(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, n))
    M = A @ A.T + n * np.diag(rng.uniform(0.5, 3.0, n))
    return M, rng.standard_normal((n, 4)) * np.array([1.0, 10.0, 1e-3, 100.0])


@pytest.mark.parametrize("norm", ["max", "2"])
def test_block_cg_matches_a_direct_solve(norm):
    M, B = _spd(40)
    X, iterations = block_cg_solve(M.__matmul__, B, 1.0 / np.diag(M),
                                   lambda b, r0: 1e-13 * b, norm=norm, max_iter=500)
    exact = np.linalg.solve(M, B)
    assert 0 < iterations <= 500
    np.testing.assert_allclose(X, exact, rtol=1e-9, atol=1e-12 * np.abs(exact).max())


@pytest.mark.parametrize("norm", ["max", "2"])
def test_block_cg_stops_each_column_at_its_target_in_the_chosen_norm(norm):
    M, B = _spd(60, seed=1)
    column_norm = {"max": lambda A: np.abs(A).max(axis=0),
                   "2": lambda A: np.sqrt((A * A).sum(axis=0))}[norm]
    X0 = np.linalg.solve(M, B) + 0.1 * np.random.default_rng(2).standard_normal(B.shape)
    r0 = column_norm(B - M @ X0)
    goal = np.maximum(1e-4 * column_norm(B), 0.05 * r0)
    X, iterations = block_cg_solve(M.__matmul__, B, 1.0 / np.diag(M),
                                   lambda b, r: np.maximum(1e-4 * b, 0.05 * r), X0=X0,
                                   norm=norm, max_iter=500)
    assert iterations > 0
    assert np.all(column_norm(B - M @ X) <= goal * (1 + 1e-9))
    np.testing.assert_allclose(COLUMN_NORMS[norm](B), column_norm(B))


def test_block_cg_returns_a_start_that_already_meets_the_target():
    M, B = _spd(20, seed=3)
    exact = np.linalg.solve(M, B)
    X, iterations = block_cg_solve(M.__matmul__, B, 1.0 / np.diag(M),
                                   lambda b, r0: 1e-6 * b, X0=exact, norm="2", max_iter=100)
    assert iterations == 0
    np.testing.assert_array_equal(X, exact)
    assert X is not exact  # the start is copied, never updated in place


@pytest.mark.parametrize("seed", range(40))
def test_squared_hinge_step_walk_equals_the_vectorized_scan_and_brute_force(seed, monkeypatch):
    """The scalar walk used for few terms returns the vectorized scan's step (to round-off),
    and both minimize the 1-D objective, found independently by dense sampling."""
    from ssl_opt.numerics import line_search

    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 40))
    m = rng.normal(0.5, 1.0, k)
    m[: k // 4] = 1.0  # ties at the kink
    t = rng.normal(0.0, 1.0, k) * (rng.random(k) > 0.1)
    a1 = float(rng.uniform(1e-3, 2.0))
    a0 = float(rng.normal(-1.0, 1.0))
    walked = line_search.squared_hinge_step(m, t, a0, a1)
    monkeypatch.setattr(line_search, "WALK_MAX_TERMS", -1)
    scanned = line_search.squared_hinge_step(m, t, a0, a1)
    assert walked == pytest.approx(scanned, rel=1e-12, abs=1e-14)

    def value(s):  # ∫ψ: a0 s + a1 s²/2 + ½ Σ max(0, 1 − m − s t)²
        return a0 * s + 0.5 * a1 * s * s + 0.5 * np.sum(np.maximum(0.0, 1.0 - m - s * t) ** 2)

    grid = np.linspace(0.0, max(4.0, 4 * walked), 20001)
    best = grid[np.argmin([value(s) for s in grid])]
    for step in (walked, scanned):
        assert value(step) <= value(best) + 1e-9


def _laplacian_spd(n: int, seed: int) -> sp.csc_matrix:
    """A sparse SPD matrix: a random weighted graph Laplacian plus a positive diagonal."""
    rng = np.random.default_rng(seed)
    A = sp.random(n, n, density=4 / n, random_state=rng, format="csr")
    A = A + A.T
    return sp.csc_matrix(sp.diags(np.asarray(A.sum(axis=1)).ravel() + rng.random(n) + 0.1) - A)


def test_pattern_ldl_solves_and_refactors_in_place():
    A = _laplacian_spd(80, 0)
    rng = np.random.default_rng(1)
    B = rng.standard_normal((80, 3))
    ldl = PatternLDL().factor(A)
    np.testing.assert_allclose(ldl.solve(B), np.linalg.solve(A.toarray(), B), rtol=1e-10)
    # same pattern, new values: refactored in place, and the answer follows the new values
    A2 = A.copy()
    A2.data = A2.data * np.exp(rng.standard_normal(A2.nnz) * 0.1)
    A2 = 0.5 * (A2 + A2.T) + sp.eye(80) * 5.0
    ldl.factor(A2)
    assert ldl.refactors == 1  # A's pattern: the diagonal is full, off-diagonals kept
    np.testing.assert_allclose(ldl.solve(B[:, 0]), np.linalg.solve(A2.toarray(), B[:, 0]),
                               rtol=1e-10)


def test_pattern_ldl_reuses_the_analysis_only_for_the_same_pattern():
    A = _laplacian_spd(60, 2)
    ldl = PatternLDL().factor(A)
    scaled = A * 2.0
    ldl.factor(scaled)
    assert ldl.refactors == 1
    other = _laplacian_spd(60, 3)  # another pattern: a fresh factorization, still correct
    ldl.factor(other)
    assert ldl.refactors == 1
    b = np.arange(60.0)
    np.testing.assert_allclose(ldl.solve(b), np.linalg.solve(other.toarray(), b), rtol=1e-10)


def test_pattern_ldl_fill_and_work_match_the_factor_columns():
    A = _laplacian_spd(50, 4)
    ldl = PatternLDL().factor(A)
    L = sp.csc_matrix(ldl._solver.factors()[0])
    counts = np.diff(L.indptr) + 1
    assert ldl.fill == L.nnz + 50 and ldl.refactor_work == int(counts @ counts)
    # the factor is exact: P(I + L)D(I + L)ᵀPᵀ = A
    _, d, perm = ldl._solver.factors()
    IL = sp.eye(50) + L
    P = sp.csr_matrix((np.ones(50), (perm, np.arange(50))), shape=(50, 50))
    np.testing.assert_allclose((P @ IL @ sp.diags(d) @ IL.T @ P.T).toarray(), A.toarray(),
                               atol=1e-12)


def test_pattern_ldl_flags_indefinite_and_singular_matrices():
    indefinite = sp.csc_matrix(np.array([[1.0, 2.0], [2.0, 1.0]]))
    ldl = PatternLDL().factor(indefinite)
    with pytest.raises(InvalidInputError, match="not positive definite"):
        ldl.check_positive()
    with pytest.raises(InvalidInputError, match="singular"):
        PatternLDL().factor(sp.csc_matrix(np.ones((2, 2))))
