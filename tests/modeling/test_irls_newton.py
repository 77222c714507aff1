"""The smoothing Newton solver of models (plugins/model/irls_newton.py) and its parts — the
assembled Hessian (assembly.py), the kernel-range Newton system, the kink-set polish and the
multiplier refinement (kink_polish.py) — against independent computations: Hessian products
through the terms' own ``hessp`` and the expressions' adjoints, finite differences, closed
forms (soft and block soft thresholding with an orthonormal design), a direct dense Newton
solve, the CVXPY reference and ``ssl_opt.certify``; plus wrong oracles and honest statuses."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import ssl_opt
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.modeling import Model, Term, Variable, check_term, matmul, variants  # noqa: F401
from ssl_opt.modeling.terms import (
    L1,
    ElasticNet,
    GraphQuadratic,
    GraphTV,
    GroupNorms,
    HuberNorms,
    MarginLossTerm,
    Ridge,
    RKHSNorm,
    SimplexRows,
    SquaredError,
)
from ssl_opt.plugins.model.assembly import HessianAssembler, KernelReduction
from ssl_opt.plugins.model.common import linear_part
from ssl_opt.plugins.model.irls_newton import IRLSNewton
from ssl_opt.solution import MAX_ITERATIONS, OPTIMAL

SOLVER = IRLSNewton()


def _hessians(model, terms, theta, delta=1e-2):
    values = model.unpack_flat(theta)
    zs = [t.argument.value(values) for t in terms]
    return zs, [t.hessian(z) if t.smooth else t.smoothed(z, delta)[2]
                for t, z in zip(terms, zs, strict=True)]


def _product_by_terms(model, terms, hessians, v):
    """``Σ_k A_kᵀ S_k A_k v`` through the expressions (linear_part, adjoint): no assembly."""
    dv = model.unpack_flat(v)
    out = np.zeros(model.size)
    for t, S in zip(terms, hessians, strict=True):
        dz = np.ravel(linear_part(t.argument, dv))
        Sd = S @ dz if (sp.issparse(S) or np.ndim(S) == 2) else np.asarray(S) * dz
        out += model.pack(t.argument.adjoint(np.reshape(Sd, t.shape)))
    return out


@pytest.mark.parametrize("name", ["lapsvm_tv", "laprls_l1", "ere_group", "ere_huber",
                                  "multiclass_laprls", "linear_huber_enet"])
def test_assembled_hessian_equals_the_terms_products(name):
    model = variants.VARIANTS[name](40 if "linear" not in name else 60)
    terms = model.terms
    rng = np.random.default_rng(3)
    theta = rng.standard_normal(model.size)
    _, hessians = _hessians(model, terms, theta)
    H = HessianAssembler(model, terms).assemble(hessians)
    for _ in range(3):
        v = rng.standard_normal(model.size)
        expected = _product_by_terms(model, terms, hessians, v)
        np.testing.assert_allclose(H @ v, expected, rtol=1e-10,
                                   atol=1e-10 * np.abs(expected).max())


def test_assembled_hessian_of_a_smooth_model_matches_finite_differences():
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((30, 5)), np.sign(rng.standard_normal(30))
    w, b = Variable("w", (5,)), Variable("b")
    model = Model([MarginLossTerm(X @ w + b, y, "logistic", 0.7), Ridge(w, 0.3),
                   HuberNorms((X @ w)[:10] * 2.0, 1.5, 0.4)])
    theta = 0.3 * rng.standard_normal(model.size)
    _, hessians = _hessians(model, model.terms, theta)
    H = HessianAssembler(model, model.terms).assemble(hessians, dense=True)
    eps = 1e-6
    numeric = np.column_stack([
        (model.pack(model.smooth_gradient(model.unpack_flat(theta + eps * e)))
         - model.pack(model.smooth_gradient(model.unpack_flat(theta - eps * e)))) / (2 * eps)
        for e in np.eye(model.size)])
    np.testing.assert_allclose(H, numeric, atol=1e-6)


def test_kernel_reduced_direction_equals_the_dense_newton_direction():
    model = variants.lapsvm_tv(40)
    terms = model.terms
    K = next(t.K for t in terms if isinstance(t, RKHSNorm))
    rng = np.random.default_rng(1)
    theta = 0.1 * rng.standard_normal(model.size)
    zs, hessians = _hessians(model, terms, theta, delta=1e-1)
    assembler = HessianAssembler(model, terms)
    reduction = KernelReduction(assembler, model)
    assert reduction.applies
    values = model.unpack_flat(theta)
    gradients = [t.gradient(z) if t.smooth else t.smoothed(z, 1e-1)[1]
                 for t, z in zip(terms, zs, strict=True)]
    grad = sum(model.pack(t.argument.adjoint(g)) for t, g in zip(terms, gradients, strict=True))
    d = reduction.direction(hessians, reduction.pulled_core(gradients), grad, theta,
                            np.arange(model.size))
    H = assembler.assemble(hessians, dense=True)
    # Newton's equations hold (H d = −g), and f moves as the dense solve's f (K may be
    # numerically singular, so α itself is compared through K).
    np.testing.assert_allclose(H @ d, -grad, atol=1e-8 * np.abs(grad).max())
    dense = np.linalg.lstsq(H, -grad, rcond=1e-13)[0]
    a = slice(0, K.shape[0])
    np.testing.assert_allclose(K @ d[a] + d[-1], K @ dense[a] + dense[-1], atol=1e-6)
    del values


def test_reduction_is_refused_when_alpha_enters_a_norm_directly():
    model = variants.laprls_l1(30)
    reduction = KernelReduction(HessianAssembler(model, model.terms), model)
    assert not reduction.applies and "l1" in reduction.reason


# ------------------------------------------------------------------- closed forms
def test_lasso_with_orthonormal_design_is_soft_thresholding():
    rng = np.random.default_rng(4)
    Q, _ = np.linalg.qr(rng.standard_normal((40, 12)))
    y = 3 * rng.standard_normal(40)
    w = Variable("w", (12,))
    lam = 0.8
    model = Model([SquaredError(Q @ w, y, 0.5), L1(w, lam)])
    sol = ssl_opt.solve(model, solver="irls-newton")
    c = Q.T @ y
    closed = np.sign(c) * np.maximum(np.abs(c) - lam, 0.0)
    assert sol.status == OPTIMAL
    np.testing.assert_allclose(sol.x["w"], closed, atol=1e-7)
    assert ssl_opt.certify(model, sol).passed


def test_group_lasso_with_orthonormal_design_is_block_soft_thresholding():
    rng = np.random.default_rng(5)
    Q, _ = np.linalg.qr(rng.standard_normal((60, 15)))
    Y = rng.standard_normal((60, 3))
    W = Variable("W", (15, 3))
    lam = 1.0
    model = Model([SquaredError(Q @ W, Y, 0.5), GroupNorms(W, lam)])
    sol = ssl_opt.solve(model, solver="irls-newton")
    C = Q.T @ Y
    norms = np.linalg.norm(C, axis=1, keepdims=True)
    closed = np.maximum(1 - lam / norms, 0.0) * C
    assert sol.status == OPTIMAL and (norms[:, 0] < lam).any()
    np.testing.assert_allclose(sol.x["W"], closed, atol=1e-7)


# ------------------------------------------------------------------- against the reference
@pytest.mark.parametrize("name,n", [("lapsvm_tv", 60), ("laprls_l1", 60), ("ere_group", 60),
                                    ("ere_huber", 80), ("multiclass_laprls", 45)])
def test_variants_match_the_reference_and_certify(name, n):
    model = variants.VARIANTS[name](n)
    sol = ssl_opt.solve(model, solver="irls-newton")
    ref = ssl_opt.solve(model, solver="cvxpy")
    assert sol.status == OPTIMAL
    assert abs(sol.objective - ref.objective) <= 1e-7 * max(1.0, abs(ref.objective))
    assert ssl_opt.certify(model, sol, reference=ref).passed


def test_elastic_net_on_a_fused_chain_matches_the_reference():
    rng = np.random.default_rng(6)
    n = 50
    y = np.repeat(rng.standard_normal(5), 10) + 0.1 * rng.standard_normal(n)
    W = sp.diags([np.ones(n - 1)], [1], shape=(n, n))
    x = Variable("x", (n,))
    model = Model([SquaredError(x, y, 0.5), GraphTV(x, W + W.T, 0.4),
                   ElasticNet(x, 0.05, 0.02)])
    sol = ssl_opt.solve(model, solver="irls-newton")
    ref = ssl_opt.solve(model, solver="cvxpy")
    assert sol.status == OPTIMAL
    assert abs(sol.objective - ref.objective) <= 1e-8 * max(1.0, abs(ref.objective))
    assert ssl_opt.certify(model, sol, reference=ref).passed


def _with_and_without_polish(monkeypatch, model, module, switch: str, endpoint: str,
                             rel: float):
    """irls-newton on ``model`` as is and with ``module.switch = 0`` (the polish off): both
    optimal, at the reference's objective (``rel``) and certified; the polish ends the first
    solve, in fewer Newton steps. Returns the polished solution."""
    ref = ssl_opt.solve(model, solver="cvxpy")
    polished = ssl_opt.solve(model, solver="irls-newton")
    monkeypatch.setattr(module, switch, 0)
    plain = ssl_opt.solve(model, solver="irls-newton")
    assert polished.info["endpoint"] == endpoint
    assert plain.info["endpoint"] != endpoint
    for sol in (polished, plain):
        assert sol.status == OPTIMAL
        assert abs(sol.objective - ref.objective) <= rel * max(1.0, abs(ref.objective))
        assert ssl_opt.certify(model, sol, reference=ref).passed
    assert polished.iterations < plain.iterations
    return polished


def test_kink_polish_returns_the_certified_point(monkeypatch):
    import ssl_opt.plugins.model.irls_newton as module

    _with_and_without_polish(monkeypatch, variants.ere_huber(100), module, "POLISH_TRIES",
                             "polished", 1e-7)


def test_huber_polish_certifies_a_kernel_model_earlier(monkeypatch):
    """LapSVM + TV on a kernel expansion: the Huber polish (kink edges held within ε of their
    kink) returns a point the certificate passes, at the reference's objective, in fewer
    Newton steps than the stage ends alone; every polished kink edge sits inside the
    certificate's kink tolerance, checked on f = Kα + b recomputed here."""
    import ssl_opt.plugins.model.kink_polish as polish_module

    model = variants.lapsvm_tv(250)
    polished = _with_and_without_polish(monkeypatch, model, polish_module, "HUBER_ROUNDS",
                                        "huber polish", 1e-8)
    tv = model.nonsmooth_terms[0]
    K = model.terms[1].M  # the RKHS norm's kernel
    f = K @ polished.x["alpha"] + polished.x["b"]
    i, j = tv.edges
    gaps = np.abs(f[i] - f[j])
    u = np.ravel(polished.info["multipliers"][0])
    inside = np.abs(u) < tv.edge_weights * (1 - 1e-6)  # multipliers strictly inside: kinks
    assert inside.any() and np.all(gaps[inside] <= 1e-6 * max(1.0, gaps.max()))


# ------------------------------------------------------------------- oracles, statuses, reasons
class _WrongHessianRidge(Term):
    name = "wrong_ridge"

    def value(self, z):
        return float(np.sum(z * z))

    def cvxpy(self, z):
        import cvxpy as cp

        return cp.sum_squares(z)

    def gradient(self, z):
        return 2.0 * z

    def hessian(self, z):
        return np.full(np.size(z), 3.0)  # should be 2


def test_a_wrong_assembled_hessian_is_caught():
    w = Variable("w", (4,))
    term = _WrongHessianRidge(w)
    with pytest.raises(InvalidInputError, match="hessian"):
        check_term(term, np.ones(4))
    model = Model([term, SquaredError(w, np.arange(4.0))])
    with pytest.raises(InvalidInputError, match="hessian"):
        ssl_opt.solve(model, solver="irls-newton")


class _WrongSmoothing(L1):
    def smoothed(self, z, delta, hessian=True):
        value, grad, hess = super().smoothed(z, delta, hessian)
        return value, 1.5 * grad, hess


def test_a_wrong_smoothing_is_caught_by_check_term():
    w = Variable("w", (5,))
    with pytest.raises(InvalidInputError, match="smoothed"):
        check_term(_WrongSmoothing(w, 0.3), np.linspace(-1, 1, 5))


def test_an_iteration_cap_returns_the_best_iterate_honestly():
    model = variants.lapsvm_tv(60)
    sol = ssl_opt.solve(model, solver="irls-newton", max_iter=3)
    assert sol.status == MAX_ITERATIONS
    assert np.isfinite(sol.objective)
    assert sol.objective == pytest.approx(model.objective(sol.x))


def test_missing_names_what_irls_newton_cannot_take():
    n = 20
    alpha = Variable("alpha", (n, 3))
    K = np.eye(n)
    f = K @ alpha
    simplex = Model([SquaredError(f, np.zeros((n, 3)))], [SimplexRows(f)])
    assert any("simplex" in r for r in SOLVER.missing(simplex))

    class ValueOnly(Term):
        name = "value_only"

        def value(self, z):
            return float(np.sum(np.abs(z)))

        def cvxpy(self, z):
            import cvxpy as cp

            return cp.sum(cp.abs(z))

    w = Variable("w", (4,))
    assert any("value_only" in r for r in SOLVER.missing(Model([ValueOnly(w), Ridge(w)])))
    op = sp.linalg.aslinearoperator(np.eye(4))
    products_only = Model([SquaredError(matmul(op, w), np.ones(4)), L1(w, 0.1)])
    assert any("products-only" in r for r in SOLVER.missing(products_only))


def test_select_prefers_irls_newton_for_a_kernel_model_with_tv():
    """irls-newton on the model, or on it restated in K's pivoted factor (kernel-factor)."""
    model = variants.lapsvm_tv(600)
    chosen = ssl_opt.select(model, backend="fast")
    assert chosen.solver in ("irls-newton", "kernel-factor")
    if chosen.solver == "kernel-factor":
        assert "irls-newton predicted" in chosen.predictions["kernel-factor"].note
    assert "irls-newton" in ssl_opt.select(model).predictions


def test_graph_quadratic_hessian_is_kron_for_matrix_arguments():
    rng = np.random.default_rng(2)
    W = sp.random(8, 8, density=0.5, random_state=2)
    L = sp.csgraph.laplacian(W + W.T)
    Z = Variable("Z", (8, 3))
    term = GraphQuadratic(Z, L, 0.7)
    z, d = rng.standard_normal((8, 3)), rng.standard_normal((8, 3))
    np.testing.assert_allclose(term.hessian(z) @ d.ravel(), term.hessp(z, d).ravel(),
                               atol=1e-12)
