"""The augmented Lagrangian with Newton inner solves (``alm-newton``) for constraints on affine
expressions, and what it rests on: each constraint's distance Hessian (against finite
differences of ``v − P(v)``) and the factored low-rank Hessian in the kernel-reduced Newton
system (against the same term with a dense Hessian and against CVXPY)."""

import numpy as np
import pytest
import scipy.sparse as sp

import ssl_opt
from ssl_opt.builders import knn_graph, laplacian, rbf_kernel
from ssl_opt.datasets.synthetic import two_moons
from ssl_opt.modeling import Model, Term, Variable, variants
from ssl_opt.modeling.term import LowRank, apply_hessian
from ssl_opt.modeling.terms import (
    Balance,
    Box,
    FixedRows,
    GraphQuadratic,
    LinearEquality,
    MarginLossTerm,
    NonNegative,
    Ridge,
    RKHSNorm,
    SimplexRows,
    SquaredError,
)

cp = pytest.importorskip("cvxpy")


def _constraints():
    z, Z = Variable("z", (7,)), Variable("Z", (5, 3))
    rng = np.random.default_rng(0)
    return [
        (NonNegative(z), rng.normal(size=7)),
        (Box(z, -0.5, 0.5), rng.normal(size=7)),
        (FixedRows(z, [1, 3], [0.0, 1.0]), rng.normal(size=7)),
        (LinearEquality(z, rng.normal(size=7), 0.3), rng.normal(size=7)),
        (Balance(z, 0.3), rng.normal(size=7)),
        (SimplexRows(Z), rng.normal(size=(5, 3))),
    ]


@pytest.mark.parametrize("index", range(6))
def test_distance_hessian_is_the_jacobian_of_v_minus_its_projection(index):
    """``∇²(½dist²) = I − ∂P``: central differences of ``v − P(v)`` at a point off every
    kink of the projection (random normal entries)."""
    c, v = _constraints()[index]
    n, eps = v.size, 1e-6

    def residual(w):
        w = w.reshape(v.shape)
        return np.ravel(w - c.prox(w, 1.0))

    J = np.column_stack([(residual(v.ravel() + eps * e) - residual(v.ravel() - eps * e))
                         / (2 * eps) for e in np.eye(n)])
    H = c.distance_hessian(v)
    dense = (H.toarray() if hasattr(H, "toarray")
             else np.diag(H) if np.ndim(H) == 1 else np.asarray(H))
    np.testing.assert_allclose(dense, J, atol=1e-8)
    d = np.random.default_rng(1).normal(size=n)
    np.testing.assert_allclose(apply_hessian(H, d), J @ d, atol=1e-8)
    assert "distance_hessian" in c.capabilities


def test_low_rank_products_and_matrix():
    rng = np.random.default_rng(0)
    U, s, v = rng.normal(size=(6, 2)), np.array([2.0, 0.5]), rng.normal(size=6)
    H = LowRank(U, s)
    dense = U @ np.diag(s) @ U.T
    np.testing.assert_allclose(H.toarray(), dense, atol=1e-14)
    np.testing.assert_allclose(H @ v, dense @ v, atol=1e-14)
    np.testing.assert_allclose((3.0 * H).toarray(), 3.0 * dense, atol=1e-13)


class _SumPenalty(Term):
    """``w/2·(⟨a, z⟩ − c)²`` with its Hessian ``w·aaᵀ`` factored (``low_rank``) or dense."""

    name = "sum_penalty"
    program_class = "QP"

    def __init__(self, argument, a, c, weight, low_rank):
        super().__init__(argument, weight)
        self.a, self.c, self.low_rank = np.asarray(a, dtype=float), float(c), low_rank

    def value(self, z):
        return 0.5 * self.weight * float(self.a @ z - self.c) ** 2

    def cvxpy(self, z):
        return 0.5 * self.weight * cp.square(self.a @ z - self.c)

    def gradient(self, z):
        return self.weight * float(self.a @ z - self.c) * self.a

    def hessian(self, z):
        if self.low_rank:
            return LowRank(self.a[:, None], np.array([self.weight]))
        return self.weight * np.outer(self.a, self.a)


def _kernel_model(low_rank, n=50):
    data = two_moons(n=n, n_labeled=6, noise=0.1, seed=3)
    K = rbf_kernel(data.X, sigma=0.35)
    L = laplacian(knn_graph(data.X, n_neighbors=6))
    alpha, b = Variable("alpha", (n,)), Variable("b")
    f = K @ alpha + b
    a = np.where(np.arange(n) >= 6, 1.0 / (n - 6), 0.0)
    terms = [MarginLossTerm(f[:6], data.y, "squared_hinge", 0.5), RKHSNorm(alpha, K, 0.005),
             GraphQuadratic(f, L, 0.5), _SumPenalty(f, a, 0.4, 30.0, low_rank)]
    return Model(terms, prediction=f)


def test_low_rank_hessian_in_the_kernel_reduced_newton_system():
    """A term on ``f = Kα + b`` whose Hessian is ``w·aaᵀ``: the factored form gives the same
    solution as the dense one, and both match CVXPY."""
    low, dense = _kernel_model(True), _kernel_model(False)
    a = ssl_opt.solve(low, solver="irls-newton")
    b = ssl_opt.solve(dense, solver="irls-newton")
    ref = ssl_opt.solve(dense, solver="cvxpy")
    assert a.optimal and b.optimal and ref.optimal
    np.testing.assert_allclose(low.f.value(a.x), dense.f.value(b.x), atol=1e-7)
    assert abs(a.objective - ref.objective) <= 1e-7 * max(1.0, abs(ref.objective))


def _certified(model, **options):
    ref = ssl_opt.solve(model, solver="cvxpy")
    sol = ssl_opt.solve(model, solver="alm-newton", **options)
    assert ref.optimal, ref.status
    assert sol.status == "optimal", (sol.status, sol.info.get("certificate"))
    assert abs(sol.objective - ref.objective) <= 1e-7 * max(1.0, abs(ref.objective))
    assert ssl_opt.certify(model, sol, reference=ref).passed
    return sol, ref


@pytest.mark.parametrize("builder", ["lapsvm_balance", "lapsvm_box", "label_propagation"])
def test_constrained_variants_match_the_reference(builder):
    model = variants.VARIANTS[builder](80)
    # kernel-factor runs alm-newton on the kernel variants restated in K's pivoted factor.
    assert ssl_opt.select(model, backend="fast").solver in ("alm-newton", "kernel-factor") \
        or builder == "label_propagation"
    sol, _ = _certified(model)
    z = model.constraints[0].argument.value(sol.x)
    assert model.constraints[0].feasibility(z) <= 1e-8


def test_the_box_binds_and_the_balance_moves_the_mean():
    """The constraints are active: without them the optimum leaves the box and has another
    unlabeled mean (so the tests above are not passing on an inactive constraint)."""
    for builder in ("lapsvm_box", "lapsvm_balance"):
        model = variants.VARIANTS[builder](80)
        free = Model(model.terms, prediction=model.prediction_expression)
        x = ssl_opt.solve(free, solver="irls-newton").x
        c = model.constraints[0]
        assert c.feasibility(c.argument.value(x)) > 1e-3


def test_active_simplex_rows_on_kernel_scores():
    """Simplex rows on f = Kα + b fitted to ±1 one-vs-rest targets: a row of targets sums to
    −1, so the fit without the constraint leaves the simplex."""
    from sklearn.datasets import make_blobs

    X, labels = make_blobs(n_samples=45, centers=3, cluster_std=1.2, random_state=0)
    K = rbf_kernel(X, sigma=1.5)
    L = laplacian(knn_graph(X, n_neighbors=6))
    alpha, b = Variable("alpha", (45, 3)), Variable("b", (3,))
    f = K @ alpha + b
    targets = 2.0 * np.eye(3)[labels[:9]] - 1.0
    terms = [SquaredError(f[:9], targets, 0.5), RKHSNorm(alpha, K, 0.05),
             GraphQuadratic(f, L, 0.5)]
    model = Model(terms, [SimplexRows(f)], prediction=f)
    x = ssl_opt.solve(Model(terms, prediction=f), solver="irls-newton").x
    assert model.constraints[0].feasibility(f.value(x)) > 1e-3
    _certified(model)


def test_constraints_on_a_sparse_linear_model():
    """Non-negative scores and a linear equality on f = Xw + b with sparse X (the assembled,
    not kernel-reduced, Newton system; the equality's factored Hessian as a dense block)."""
    rng = np.random.default_rng(0)
    X = sp.random(60, 15, density=0.3, random_state=1, format="csr")
    t = rng.normal(size=60)
    w, b = Variable("w", (15,)), Variable("b")
    f = X @ w + b
    model = Model([SquaredError(f, t, 0.5), Ridge(w, 0.1)],
                  [NonNegative(f), LinearEquality(f[:30], np.ones(30), 12.0)], prediction=f)
    _certified(model)


def test_fixed_rows_of_an_expression():
    """Hard labels ``f[:l] = y`` on a kernel expansion (fixed rows of an expression, not of a
    variable: alm-newton's affine case)."""
    n = 40
    data = two_moons(n=n, n_labeled=6, noise=0.1, seed=0)
    K = rbf_kernel(data.X, sigma=0.35)
    L = laplacian(knn_graph(data.X, n_neighbors=6))
    alpha, b = Variable("alpha", (n,)), Variable("b")
    f = K @ alpha + b
    model = Model([RKHSNorm(alpha, K, 0.01), GraphQuadratic(f, L, 0.5)],
                  [FixedRows(f, np.arange(6), data.y)], prediction=f)
    sol, _ = _certified(model)
    np.testing.assert_allclose(model.f.value(sol.x)[:6], data.y, atol=1e-8)


def test_conflicting_boxes_end_infeasible():
    """``f ≥ 1`` and ``f ≤ −1`` on the same outputs: no point is feasible."""
    base = variants.lapsvm_box(40)
    f = base.constraints[0].argument
    model = Model(base.terms, [Box(f, 1.0, 2.0), Box(f, -2.0, -1.0)], prediction=f)
    sol = ssl_opt.solve(model, solver="alm-newton", max_iter=15)
    assert sol.status == "infeasible"
    assert "box" in sol.info["reason"]


def test_what_it_needs_is_named():
    z = Variable("z", (5,))
    only_fixed = Model([Ridge(z, 1.0)], [FixedRows(z, [0], [1.0])])
    reasons = ssl_opt.registry.get_solver("alm-newton").missing(only_fixed)
    assert reasons and "irls-newton" in reasons[0]
    boxed = Model([Ridge(z, 1.0)], [Box(z, 0.5, 1.0)])
    assert not ssl_opt.registry.get_solver("alm-newton").missing(boxed)
    with pytest.raises(ssl_opt.exceptions.InvalidInputError, match="rho0"):
        ssl_opt.solve(boxed, solver="alm-newton", rho0=-1.0)


def test_a_warm_start_from_the_optimum_takes_one_outer_iteration():
    model = variants.lapsvm_balance(60)
    first = ssl_opt.solve(model, solver="alm-newton")
    again = ssl_opt.solve(model, solver="alm-newton", warm_start=first)
    assert again.optimal and again.iterations <= 2


class _GradientOnly(Term):
    """``w Σ (√(1 + z²) − 1)`` (pseudo-Huber) with a value, a CVXPY form and a gradient only."""

    name = "pseudo_huber"
    program_class = "SOCP"

    def value(self, z):
        return self.weight * float(np.sum(np.sqrt(1 + z**2) - 1))

    def cvxpy(self, z):
        return self.weight * cp.sum(cp.norm(cp.vstack([np.ones(z.shape[0]), z]), axis=0) - 1)

    def gradient(self, z):
        return self.weight * z / np.sqrt(1 + z**2)


def test_auto_does_not_send_a_gradient_only_term_on_a_kernel_to_pdhg():
    """A user term with only a gradient on α of a kernel expansion: the only fast solver that
    takes it is pdhg, which carries K's conditioning (tens of thousands of iterations where the
    reference takes well under a second); auto keeps the reference, and it is optimal."""
    base = variants.laprls_l1(60)
    alpha = base.terms[1].argument
    model = Model(list(base.terms[:3]) + [_GradientOnly(alpha, 1e-3)],
                  prediction=base.prediction_expression)
    assert ssl_opt.select(model, backend="fast").solver == "pdhg"
    assert ssl_opt.select(model).solver == "cvxpy"
    assert ssl_opt.solve(model).optimal
