"""irls-mm (plugins/model/irls_mm.py): majorize–minimize IRLS on quadratic + norm + Huber models.

Every expected value comes from an independent computation: the CVXPY reference (Clarabel),
scipy.optimize on a smooth Huber model, finite differences of the terms' own smoothed values,
or the structure of the model written out by hand.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize as so
import scipy.sparse as sp

import ssl_opt
from ssl_opt import registry
from ssl_opt.builders.laplacian import incidence_matrix
from ssl_opt.modeling import Model, Variable, variants
from ssl_opt.modeling.terms import (
    L1,
    FixedRows,
    GraphTV,
    GroupNorms,
    HuberNorms,
    MarginLossTerm,
    Ridge,
    SimplexRows,
    SquaredError,
)
from ssl_opt.plugins.model import irls_mm, irls_mm_eliminate

SOLVER = "irls-mm"


def _reference_check(model, sol):
    ref = ssl_opt.solve(model, solver="cvxpy")
    assert ref.status == "optimal"
    gap = (sol.objective - ref.objective) / max(1.0, abs(ref.objective))
    assert abs(gap) <= 1e-6
    cert = ssl_opt.certify(model, sol, reference=ref)
    assert cert.passed, cert
    return ref


@pytest.mark.parametrize("name", ["ere_group", "ere_huber"])
def test_ere_variants_match_the_reference(name):
    model = variants.VARIANTS[name](40)
    assert registry.get_solver(SOLVER).missing(model) == []
    sol = ssl_opt.solve(model, solver=SOLVER)
    assert sol.status == "optimal"
    _reference_check(model, sol)
    # column separable: one row-level system of n − l + d + 1 unknowns for the 3 columns
    l, d = 6, 3
    assert sol.info["separable"] and sol.info["columns"] == 3
    assert sol.info["unknowns"] == 40 - l + d + 1


def _huber_chain(n=9, c=2, seed=0):
    """Huber edges on a path graph + squared error to noisy targets, first row fixed: smooth."""
    rng = np.random.default_rng(seed)
    i = np.arange(n - 1)
    D = incidence_matrix(i, i + 1, n)
    T = rng.standard_normal((n, c))
    F = Variable("F", (n, c))
    w = rng.uniform(0.5, 2.0, n - 1)
    model = Model([HuberNorms(D @ F, w, delta=0.3), SquaredError(F, T, 0.2)],
                  [FixedRows(F, [0], T[:1] + 1.0)], prediction=F)
    return model, D, T, w


def test_smooth_huber_against_scipy_bfgs():
    """No norm term: the Newton–MM steps alone, against L-BFGS on the objective written
    independently (the Huber function by its definition)."""
    model, D, T, w = _huber_chain()
    sol = ssl_opt.solve(model, solver=SOLVER)
    assert sol.status == "optimal"
    n, c = T.shape
    fixed = T[:1] + 1.0

    def huber(r, delta=0.3):
        return np.where(r <= delta, r * r / (2 * delta), r - delta / 2)

    def objective(v):
        F = np.vstack([fixed, v.reshape(n - 1, c)])
        r = np.linalg.norm(D @ F, axis=1)
        return float(w @ huber(r) + 0.2 * np.sum((F - T) ** 2))

    best = so.minimize(objective, T[1:].ravel(), method="L-BFGS-B",
                       options={"ftol": 1e-15, "gtol": 1e-11, "maxiter": 10000})
    F = sol.x["F"]
    np.testing.assert_allclose(F[0], fixed[0])
    assert abs(sol.objective - best.fun) <= 1e-8 * max(1.0, abs(best.fun))
    np.testing.assert_allclose(F[1:].ravel(), best.x, atol=1e-4)


def _small_norm_model(norm="l2", seed=1):
    rng = np.random.default_rng(seed)
    n, c, d = 12, 3, 2
    X = rng.standard_normal((n, d))
    A = sp.random(n, n, density=0.4, random_state=seed)
    A = sp.csr_matrix(A + A.T)
    A.setdiag(0.0)
    A.eliminate_zeros()
    T = rng.standard_normal((n, c))
    F, W, b = Variable("F", (n, c)), Variable("W", (d, c)), Variable("b", (c,))
    terms = [GraphTV(F, A, 0.3, norm=norm), GroupNorms(X @ W + b - F, 0.7), Ridge(W, 0.1),
             SquaredError(F[4:], T[4:], 0.5), GroupNorms(W, 0.2)]
    return Model(terms, [FixedRows(F, [0, 1], T[:2])], prediction=F)


def test_weighted_system_is_the_majorizer_hessian():
    """The step's H_MM, assembled in its fixed pattern from pair maps, against the matrix
    Σ A_kᵀ diag(weights) A_k + Q built directly with scipy.sparse, kron'ed over the columns
    (a wrong weight or pattern position would differ)."""
    model = _small_norm_model()
    system = irls_mm.build_system(model)
    assert system.separable and system.C == 3
    form = irls_mm.ModelForm(model, system, 1e-8, 1e-7)
    step = irls_mm.MMStep(form)
    rng = np.random.default_rng(3)
    weights = [rng.uniform(0.1, 2.0, p.A.shape[0]) for p in system.norms + system.hubers]
    upper = step.pattern.matrix(weights)
    H = (upper + sp.triu(upper, k=1).T).toarray()
    direct = step.Q.toarray().copy()
    for p, d in zip(system.norms + system.hubers, weights, strict=True):
        direct += (p.A.T @ sp.diags(d) @ p.A).toarray()
    np.testing.assert_allclose(H, direct, atol=1e-12)
    # the quadratic part by hand: ridge 2·0.1 on W's rows, squared error 2·0.5 on F[4:]
    free = system.free
    diag = np.zeros(system.N)
    w0 = model.slices["W"].start // 3
    diag[w0:w0 + 2] += 0.2
    diag[4:12] += 1.0
    np.testing.assert_allclose(np.diag(step.Q.toarray()), diag[free], atol=1e-14)


def test_gradient_and_hessian_products_against_finite_differences():
    """∇Φ_δ and ∇²Φ_δ·v of the step, against central differences of Φ_δ evaluated from the
    terms' own ``smoothed``/``value`` oracles at the model's flat θ."""
    model = _small_norm_model()
    system = irls_mm.build_system(model)
    form = irls_mm.ModelForm(model, system, 1e-8, 1e-7)
    step = irls_mm.MMStep(form)
    delta = 0.05
    rng = np.random.default_rng(5)
    X = rng.standard_normal((system.free.size, system.C))

    def phi(Xv):
        values = model.unpack_flat(system.theta(Xv))
        total = 0.0
        for t in model.terms:
            z = t.argument.value(values)
            total += t.smoothed(z, delta, hessian=False)[0] if not t.smooth else t.value(z)
        return total

    run = irls_mm._Run(form, step, {"verbose": False, "tol": 1e-8})
    grad, _, blocks = step.prepare(X, run.radii(X, delta))
    eps = 1e-6
    for _ in range(3):
        V = rng.standard_normal(X.shape)
        fd = (phi(X + eps * V) - phi(X - eps * V)) / (2 * eps)
        assert abs(fd - float(np.sum(grad * V))) <= 1e-6 * max(1.0, abs(fd))
        g_plus = step.prepare(X + eps * V, run.radii(X + eps * V, delta))[0]
        g_minus = step.prepare(X - eps * V, run.radii(X - eps * V, delta))[0]
        np.testing.assert_allclose(step._hessp(V, blocks), (g_plus - g_minus) / (2 * eps),
                                   atol=1e-5)


def test_steps_decrease_the_smoothed_objective():
    """Majorize–minimize: Φ_δ never increases along the steps (checked with the terms' own
    smoothed values)."""
    model = _small_norm_model()
    system = irls_mm.build_system(model)
    form = irls_mm.ModelForm(model, system, 1e-8, 1e-7)
    step = irls_mm.MMStep(form)
    run = irls_mm._Run(form, step, {"verbose": False, "tol": 1e-8})
    X = np.zeros((system.free.size, system.C))
    previous = np.inf
    for _ in range(8):
        value = run.phi(X, 1e-3)[0]
        assert value <= previous + 1e-12 * max(1.0, abs(previous))
        previous = value
        grad, _, blocks = step.prepare(X, run.radii(X, 1e-3))
        X, _ = step.newton(X, grad, blocks)


@pytest.mark.parametrize("norm", ["l2", "l1"])
def test_small_models_match_the_reference(norm):
    """GraphTV with l2 rows keeps the model column separable; l1 rows (one group per entry)
    do not: the whole system is factored."""
    model = _small_norm_model(norm)
    sol = ssl_opt.solve(model, solver=SOLVER)
    assert sol.status == "optimal"
    assert sol.info["separable"] is (norm == "l2")
    _reference_check(model, sol)


def test_vector_model_with_l1():
    """A 1-column model (lasso with a fixed entry): the same code path with c = 1."""
    rng = np.random.default_rng(2)
    A = sp.random(30, 15, density=0.3, random_state=2, format="csr")
    y = rng.standard_normal(30)
    x = Variable("x", (15,))
    model = Model([SquaredError(A @ x, y, 0.5), L1(x, 0.05)], [FixedRows(x, [0], [0.3])])
    sol = ssl_opt.solve(model, solver=SOLVER)
    assert sol.status == "optimal"
    assert sol.x["x"][0] == pytest.approx(0.3)
    _reference_check(model, sol)


def test_structure_reasons_name_the_blocking_term():
    solver = registry.get_solver(SOLVER)
    rng = np.random.default_rng(0)
    X = sp.csr_matrix(rng.standard_normal((20, 5)))
    w = Variable("w", (5,))
    logistic = Model([MarginLossTerm(X @ w, np.sign(rng.standard_normal(20)), "logistic"),
                      L1(w, 0.1)])
    assert any("margin" in r and "quadratic" in r for r in solver.missing(logistic))
    Z = Variable("Z", (6, 3))
    simplex = Model([SquaredError(Z, np.zeros((6, 3)))], [SimplexRows(Z)])
    assert any("simplex" in r for r in solver.missing(simplex))
    K = np.exp(-np.subtract.outer(np.arange(10.0), np.arange(10.0)) ** 2)
    alpha = Variable("alpha", (10,))
    kernel = Model([SquaredError(K @ alpha, np.ones(10)), L1(alpha, 0.1)])
    assert any("kernel expansion" in r for r in solver.missing(kernel))
    assert solver.missing(variants.laprls_l1(40))  # its square margin loss blocks first


def test_selection_picks_irls_mm_for_ere_group():
    model = variants.ere_group(600)
    assert ssl_opt.select(model, backend="fast").solver == SOLVER
    assert SOLVER in ssl_opt.select(model).predicted_time


# ---------------------------------------------------------------- the polish by elimination
def test_pivots_are_private_columns():
    """A pivot is the largest entry of a row among the columns no other row touches; a row
    whose columns are all shared has none (written out by hand)."""
    AK = sp.csr_matrix(np.array([[1.0, 0.0, 3.0, -2.0, 0.0],
                                 [0.0, 5.0, 3.0, 0.0, 0.0],
                                 [0.0, 0.0, 1.0, 0.0, 0.0]]))
    piv, coef, ok = irls_mm_eliminate.pivots(AK, 5)
    assert ok.tolist() == [True, True, False]
    assert piv[:2].tolist() == [3, 1] and coef[:2].tolist() == [-2.0, 5.0]


@pytest.mark.parametrize("dense", [False, True])
@pytest.mark.parametrize("size, C", [(1, 3), (2, 1)])
def test_reduced_hessian_against_dense_blocks(size, C, dense):
    """``Kᵀ blkdiag(a_g I + b_g z_g z_gᵀ) K`` with ``K = B ⊗ I_C``, against the dense blocks
    and np.kron (groups of ``size`` rows × C columns, row-major unknowns; B sparse or a
    dense array, as for small reduced problems; some groups without weight)."""
    rng = np.random.default_rng(4)
    G, n = 5, 4
    B = sp.random(G * size, n, density=0.6, random_state=4, format="csr")
    Z = rng.standard_normal((G * size, C))
    a, b = rng.uniform(0.5, 2.0, G), np.where(rng.random(G) < 0.5, 0.0, -rng.random(G))
    a[0] = b[0] = 0.0
    blocks = np.zeros((G * size * C, G * size * C))
    for g in range(G):
        z = Z[g * size:(g + 1) * size].ravel()
        sl = slice(g * size * C, (g + 1) * size * C)
        blocks[sl, sl] = a[g] * np.eye(size * C) + b[g] * np.outer(z, z)
    K = np.kron(B.toarray(), np.eye(C))
    H = irls_mm_eliminate.reduced_hessian(B.toarray() if dense else B, Z, a, b, size, C)
    H = H if dense else H.toarray()
    np.testing.assert_allclose(H, K.T @ blocks @ K, atol=1e-12)


def test_ere_huber_is_certified_by_elimination():
    """ERE with Huber edges: nearly every robust-fit group at its kink (F_i = X_i W + b), so
    the active-set polish by elimination certifies after the first stage; against CVXPY."""
    model = variants.ere_huber(300)
    sol = ssl_opt.solve(model, solver=SOLVER)
    assert sol.status == "optimal" and sol.info["endpoint"] == "eliminated"
    assert sol.info["stages"] <= 2
    ref = _reference_check(model, sol)
    assert abs(sol.objective - ref.objective) <= 1e-8 * abs(ref.objective)


def test_a_smooth_model_of_matrix_scores_solves_without_weighted_blocks():
    """Graph quadratic plus a squared error on the labeled rows: no norm or Huber term, so
    no weighted block (a regression: the empty weights once failed to split). Against the
    normal equations (λL + J)F = J·Y_pad, J the labeled rows' selector."""
    from ssl_opt.builders import knn_graph, laplacian
    from ssl_opt.modeling.terms import GraphQuadratic, SquaredError

    X = np.random.default_rng(3).normal(size=(40, 2))
    L = laplacian(knn_graph(X, n_neighbors=5))
    Y = np.eye(3)[[0, 1, 2, 0, 1, 2]]
    F = Variable("F", (40, 3))
    model = Model([GraphQuadratic(F, L, 0.3), SquaredError(F[:6], Y)], prediction=F)
    sol = ssl_opt.solve(model, solver="irls-mm")
    J = np.zeros(40)
    J[:6] = 1.0
    expected = np.linalg.solve(0.3 * L.toarray() + np.diag(J), np.vstack([Y, np.zeros((34, 3))]))
    assert sol.status == "optimal"
    np.testing.assert_allclose(sol.x["F"], expected, atol=1e-8)
