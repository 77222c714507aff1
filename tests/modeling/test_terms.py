"""The built-in terms and constraints of the modelling layer, against independent computations:
their CVXPY expressions, finite differences, pyproximal's proximal operators, CVXPY solves of
the prox / projection problems, the subdifferential and normal cone written through the
conjugate (support function) identities, and an end-to-end certificate on CVXPY solutions."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pyproximal
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.special import lambertw

import ssl_opt
from ssl_opt.builders.laplacian import laplacian
from ssl_opt.components import MarginLoss
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.modeling import (
    L1,
    Balance,
    Box,
    ElasticNet,
    Entropy,
    FixedRows,
    GraphQuadratic,
    GraphTV,
    GroupL21,
    GroupNorms,
    HuberNorms,
    Linear,
    LinearEquality,
    LinearScore,
    MarginLossTerm,
    Model,
    NonNegative,
    QuadraticForm,
    Ridge,
    RKHSNorm,
    SimplexRows,
    SquaredError,
    SumOfRowNorms,
    Term,
    Variable,
    check_term,
)
from ssl_opt.modeling.terms.entropy import log_lambertw_exp

N, C = 6, 3
SHAPES = [(), (N,), (N, C)]
LOSSES = ["squared_hinge", "square", "hinge", "huber", "logistic"]
#: Clarabel to ~1e-12: its default tolerances leave ~1e-6 errors on exponential cones.
TIGHT = {"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12, "tol_ktratio": 1e-10,
         "max_iter": 500}


def _rng(seed=0):
    return np.random.default_rng(seed)


def _signs(shape, rng):
    return rng.choice([-1.0, 1.0], size=shape)


def _psd(n, rng):
    A = rng.standard_normal((n, n - 2))
    return A @ A.T / n


def _graph(n, rng, density=0.6):
    W = sp.random(n, n, density=density, random_state=rng.integers(1 << 30),
                  data_rvs=lambda k: rng.uniform(0.2, 1.0, k))
    W = sp.triu(W, k=1)
    W = (W + W.T).tocsr()
    W = W + sp.diags(np.ones(n - 1) * 0.3, 1, shape=(n, n)) + sp.diags(
        np.ones(n - 1) * 0.3, -1, shape=(n, n))  # connected
    return sp.csr_matrix(W)


def _make(kind, shape, rng):
    """A term of ``kind`` on a variable of ``shape`` (None when not meaningful)."""
    x = Variable("z", shape)
    w = 0.7
    if kind.startswith("margin:"):
        return MarginLossTerm(x, _signs(shape, rng), kind.split(":")[1], weight=w)
    simple = {
        "squared_error": lambda: SquaredError(x, rng.standard_normal(shape), w),
        "linear": lambda: Linear(x, rng.standard_normal(shape), w),
        "linear_score": lambda: LinearScore(x, rng.standard_normal(shape), w),
        "ridge": lambda: Ridge(x, w),
        "l1": lambda: L1(x, w),
        "l1_array": lambda: L1(x, rng.uniform(0.1, 1.0, shape)),
        "elastic_net": lambda: ElasticNet(x, 0.6, 0.3),
        "group_norms": lambda: GroupNorms(x, w),
        "huber_norms": lambda: HuberNorms(x, w, delta=0.8),
        "entropy": lambda: Entropy(x, w),
    }
    if kind in simple:
        return simple[kind]()
    if not shape:
        return None
    n = shape[0]
    if kind == "group_norms_rows":
        return GroupNorms(x, rng.uniform(0.1, 1.0, n))
    if kind == "huber_norms_rows":
        return HuberNorms(x, rng.uniform(0.1, 1.0, n), delta=0.5)
    if kind == "quadratic_dense":
        return QuadraticForm(x, _psd(n, rng), w)
    if kind == "rkhs":
        return RKHSNorm(x, _psd(n, rng), w)
    if kind == "graph_quadratic":
        return GraphQuadratic(x, laplacian(_graph(n, rng)), w)
    if kind == "quadratic_normalized":
        return QuadraticForm(x, laplacian(_graph(n, rng), normalized=True), w)
    if kind == "graph_tv_l1":
        return GraphTV(x, _graph(n, rng).toarray(), w, norm="l1")
    if kind == "graph_tv_l2":
        return GraphTV(x, _graph(n, rng), w, norm="l2")
    raise AssertionError(kind)


KINDS = ([f"margin:{loss}" for loss in LOSSES] + [
    "squared_error", "linear", "linear_score", "ridge", "l1", "l1_array", "elastic_net",
    "group_norms", "huber_norms", "entropy", "group_norms_rows", "huber_norms_rows",
    "quadratic_dense", "rkhs", "graph_quadratic", "quadratic_normalized", "graph_tv_l1",
    "graph_tv_l2"])
#: Kinds that need a matrix (no scalar argument), and the non-smooth kinds.
MATRIX_KINDS = {"group_norms_rows", "huber_norms_rows", "quadratic_dense", "rkhs",
                "graph_quadratic", "quadratic_normalized", "graph_tv_l1", "graph_tv_l2"}
NONSMOOTH_KINDS = {"margin:hinge", "l1", "l1_array", "elastic_net", "group_norms",
                   "group_norms_rows", "entropy", "graph_tv_l1", "graph_tv_l2"}
CASES = [(k, s) for k in KINDS for s in SHAPES if s or k not in MATRIX_KINDS]
SMOOTH_CASES = [(k, s) for k, s in CASES if k not in NONSMOOTH_KINDS]


def _term(kind, shape, seed=0):
    return _make(kind, shape, _rng(seed))


def _point(term, rng, scale=1.5):
    if isinstance(term, Entropy):
        return rng.uniform(0.05, 2.0, term.shape)
    return scale * rng.standard_normal(term.shape)


def _cvx_value(expr_fn, z):
    return float(expr_fn(cp.Constant(z)).value)


# ---------------------------------------------------------------------------- values
@pytest.mark.parametrize("kind,shape", CASES)
def test_value_matches_cvxpy_expression(kind, shape):
    term = _term(kind, shape)
    rng = _rng(1)
    for _ in range(3):
        z = _point(term, rng)
        assert term.value(z) == pytest.approx(_cvx_value(term.cvxpy, z), rel=1e-9, abs=1e-12)


def test_entropy_value_conventions():
    t = Entropy(Variable("p", (3,)), 2.0)
    assert t.value(np.array([0.0, 1.0, 0.5])) == pytest.approx(2 * 0.5 * np.log(0.5))
    assert t.value(np.array([-1e-3, 1.0, 0.5])) == np.inf


# --------------------------------------------------------------------- derivatives
def _fd_gradient(term, z, eps=1e-6):
    g = np.zeros(z.shape)
    for idx in np.ndindex(z.shape):
        e = np.zeros(z.shape)
        e[idx] = eps
        g[idx] = (term.value(z + e) - term.value(z - e)) / (2 * eps)
    return g


@pytest.mark.parametrize("kind,shape", CASES)
def test_smoothness_is_declared_by_capabilities(kind, shape):
    assert _term(kind, shape).smooth == (kind not in NONSMOOTH_KINDS)


@pytest.mark.parametrize("kind,shape", SMOOTH_CASES)
def test_gradient_and_hessp_by_finite_differences(kind, shape):
    term = _term(kind, shape)
    rng = _rng(2)
    z = _point(term, rng)
    check_term(term, z)
    assert np.allclose(term.gradient(z), _fd_gradient(term, z), rtol=1e-5, atol=1e-6)
    if "hessp" in term.capabilities:
        v = rng.standard_normal(term.shape)
        eps = 1e-6
        fd = (term.gradient(z + eps * v) - term.gradient(z - eps * v)) / (2 * eps)
        assert np.allclose(term.hessp(z, v), fd, rtol=1e-5, atol=1e-6)


def test_huber_norms_hessp_on_both_sides_of_delta():
    x = Variable("F", (4, 2))
    term = HuberNorms(x, [0.5, 1.0, 2.0, 0.3], delta=1.0)
    z = np.array([[0.1, 0.2], [3.0, -1.0], [0.6, 0.7], [-2.0, 0.1]])  # inside and outside
    v = _rng(3).standard_normal(z.shape)
    fd = (term.gradient(z + 1e-7 * v) - term.gradient(z - 1e-7 * v)) / 2e-7
    assert np.allclose(term.hessp(z, v), fd, atol=1e-6)


# ------------------------------------------------------------------------- proxes
def _cvx_prox(term, v, t):
    """argmin_p h(p) + Σ (p − v)²/(2t) by CVXPY (t scalar or per entry)."""
    p = cp.Variable(term.shape)
    t = np.broadcast_to(np.asarray(t, dtype=float), term.shape)
    fit = cp.sum(cp.multiply(1.0 / (2.0 * t), cp.square(p - v))) if term.shape else (
        cp.square(p - v) / (2.0 * float(t)))
    cp.Problem(cp.Minimize(term.cvxpy(p) + fit)).solve(solver="CLARABEL", **TIGHT)
    return np.asarray(p.value).reshape(term.shape)


def _pyproximal_prox(term, v, t):
    """pyproximal's prox of the same function, or None when it has no match."""
    if isinstance(term, GraphTV):
        term = term._h
    if isinstance(term, L1):
        w = np.broadcast_to(term.w, term.shape).ravel() if term.shape else term.w
        return np.asarray(pyproximal.L1(sigma=w).prox(np.ravel(v), t)).reshape(term.shape)
    if isinstance(term, GroupNorms) and len(term.shape) == 2 and np.ndim(term.w) == 0:
        n, c = term.shape  # L21 groups the COLUMNS of its (ndim, N) reshape: pass Vᵀ
        out = pyproximal.L21(ndim=c, sigma=term.w).prox(v.T.ravel(), t)
        return out.reshape(c, n).T
    if isinstance(term, HuberNorms):
        rows = v.reshape(v.shape[0], -1) if v.ndim else v.reshape(1, 1)
        w = np.broadcast_to(term.w, (rows.shape[0],))
        out = [pyproximal.HuberCircular(alpha=term.delta).prox(r, t * wi)
               for r, wi in zip(rows, w, strict=True)]
        return np.array(out).reshape(term.shape)
    if isinstance(term, Ridge):
        return pyproximal.L2(sigma=2 * term.weight).prox(np.ravel(v), t).reshape(term.shape)
    if isinstance(term, SquaredError):
        return pyproximal.L2(b=np.ravel(term.target), sigma=2 * term.weight).prox(
            np.ravel(v), t).reshape(term.shape)
    return None


@pytest.mark.parametrize("kind,shape", CASES)
def test_prox_against_pyproximal_or_cvxpy(kind, shape):
    term = _term(kind, shape)
    if "prox" not in term.capabilities:
        assert kind in ("margin:logistic",) or isinstance(term, QuadraticForm)
        return
    rng = _rng(4)
    v = _point(term, rng, scale=2.0) if not isinstance(term, Entropy) else (
        2.0 * rng.standard_normal(term.shape))
    t = 0.6
    p = term.prox(v, t)
    check_term(term, _point(term, rng))
    ref = _pyproximal_prox(term, v, t)
    if ref is not None:
        assert np.allclose(p, ref, atol=1e-10), kind
    ref = _cvx_prox(term, v, t)
    assert np.allclose(p, ref, atol=2e-5 * max(1.0, np.max(np.abs(v)))), kind
    if term.elementwise_prox and shape:
        ts = rng.uniform(0.1, 2.0, term.shape)
        assert np.allclose(term.prox(v, ts), _cvx_prox(term, v, ts), atol=2e-5 * max(
            1.0, np.max(np.abs(v))))


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge", "square", "huber"])
def test_margin_prox_at_regime_boundaries(loss):
    """The closed-form margin proxes are continuous across their regimes and optimal: the
    optimality condition (y v − m)/s ∈ ∂φ(m) holds with the loss's own subgradient bounds."""
    y = np.array([1.0, -1.0] * 6)
    term = MarginLossTerm(Variable("f", (12,)), y, loss, weight=0.5)
    t = 0.8
    s = t * 0.5
    u = np.array([1 - s - 1e-9, 1 - s, 1 - s + 1e-9, 1.0, 1 + 1e-9, 0.3, -3.0, 4.0, 0.999,
                  1 - 0.5 - s, 1 - 0.5 - s + 1e-12, 0.5])
    p = term.prox(y * u, t)
    m = y * p
    lo, hi = term.loss.subgradient_interval(m, 1e-8)
    g = (m - u) / s  # = −(u − m)/s must lie in ∂φ(m) with a minus sign: (u − m)/s ∈ −∂φ
    assert np.all(-g >= lo - 1e-7) and np.all(-g <= hi + 1e-7)


def test_entropy_prox_lambert_w_and_extremes():
    term = Entropy(Variable("p", (8,)), 0.9)
    v = np.array([-3.0, -0.5, 0.0, 0.3, 1.0, 2.5, 7.0, 20.0])
    t = 0.4
    s = t * 0.9
    closed = s * np.real(lambertw(np.exp(v / s - 1.0) / s))
    assert np.allclose(term.prox(v, t), closed, rtol=1e-13, atol=1e-300)
    # Far beyond exp's range, the optimality equation s(log p + 1) + p = v holds to ~1e-15.
    for v_big, t_small in [(1e4, 1e-3), (1e8, 0.5), (-800.0, 1.0), (5.0, 1e-9)]:
        p = term.prox(np.array([v_big] * 8), t_small)
        s = t_small * 0.9
        assert np.all(p >= 0) and np.all(np.isfinite(p))  # e^-889 rounds to 0 (v = -800)
        if p[0] > 1e-300:
            resid = s * (np.log(p) + 1.0) + p - v_big
            assert np.all(np.abs(resid) <= 1e-12 * max(1.0, abs(v_big), s * abs(np.log(p[0]))))
    x = np.array([-700.0, -50.0, -1.0, 0.0, 1.0, 30.0, 700.0])
    assert np.allclose(log_lambertw_exp(x), np.log(np.real(lambertw(np.exp(x)))), rtol=1e-14,
                       atol=1e-15)
    x = np.array([1e3, 1e6, 1e200, -1e5])  # W(e^x) itself over/underflows: y + e^y = x
    y = log_lambertw_exp(x)  # (y to one ulp, so e^y to about |y| ulps)
    assert np.all(np.abs(y + np.exp(y) - x) <= 2e-16 * (1.0 + np.abs(y)) * np.abs(x))


def test_entropy_mirror_step_against_cvxpy():
    rng = _rng(5)
    z = rng.uniform(0.1, 1.0, 6)
    g = rng.standard_normal(6)
    w, t = 0.7, 0.5
    term = Entropy(Variable("p", (6,)), w)
    p = cp.Variable(6)
    cp.Problem(cp.Minimize(g @ p + w * cp.sum(-cp.entr(p)) + cp.sum(cp.kl_div(p, z)) / t)
               ).solve(solver="CLARABEL", **TIGHT)
    assert np.allclose(term.mirror_step(z, g, t), p.value, rtol=1e-7, atol=1e-9)


# -------------------------------------------------------------- subdifferentials
def _cvx_project_onto(u, constraints_of):
    q = cp.Variable(u.shape)
    cp.Problem(cp.Minimize(cp.sum_squares(q - u)), constraints_of(q)).solve(solver="CLARABEL")
    return np.asarray(q.value).reshape(u.shape)


def _norm_subdifferential(z, w_rows, l2: bool):
    """∂(Σ_i w_i‖z_i‖) = {q : ‖q_i‖_* ≤ w_i, ⟨q, z⟩ = Σ_i w_i‖z_i‖} (the conjugate identity)."""
    Z = z.reshape(z.shape[0], -1)
    value = float(np.sum(w_rows * (np.linalg.norm(Z, axis=1) if l2 else np.abs(Z).sum(1))))

    def cons(q):
        Q = cp.reshape(q, Z.shape, order="C") if q.ndim == 1 and Z.shape[1] > 1 else q
        Q = Q if Q.ndim == 2 else cp.reshape(Q, (Z.shape[0], 1), order="C")
        dual = cp.norm(Q, 2, axis=1) <= w_rows if l2 else cp.abs(Q) <= np.broadcast_to(
            np.reshape(w_rows, (-1, 1)), Z.shape)
        return [dual, cp.sum(cp.multiply(Q, Z)) == value]
    return cons


def test_l1_and_group_subgradient_projection_at_kinks():
    rng = _rng(6)
    z = np.array([[0.0, 1.0, -2.0], [0.0, 0.0, 0.0], [0.5, 0.0, 0.0], [0.0, 0.0, 0.0],
                  [1.0, 1.0, 1.0], [-0.3, 0.0, 0.4]])
    u = 2.0 * rng.standard_normal(z.shape)
    w = rng.uniform(0.3, 1.0, N)
    x = Variable("F", (N, C))
    l1 = L1(x, np.broadcast_to(w[:, None], z.shape))
    ref = _cvx_project_onto(u, _norm_subdifferential(z, w, l2=False))
    assert np.allclose(l1.project_subgradient(z, u, 0.0), ref, atol=1e-6)
    group = GroupNorms(x, w)
    ref = _cvx_project_onto(u, _norm_subdifferential(z, w, l2=True))
    assert np.allclose(group.project_subgradient(z, u, 0.0), ref, atol=1e-6)
    # Entries within tol of the kink count as at it.
    tiny = z + 1e-9 * (z == 0)
    assert np.allclose(group.project_subgradient(tiny, u, 1e-8), ref, atol=1e-6)
    # ElasticNet: the ℓ1 part shifted by the gradient 2·l2·z.
    en = ElasticNet(x, 0.8, 0.25)
    ref = 0.5 * z + _cvx_project_onto(u - 0.5 * z, _norm_subdifferential(z, 0.8, l2=False))
    assert np.allclose(en.project_subgradient(z, u, 0.0), ref, atol=1e-6)


def test_graph_tv_subgradient_projection_and_structure():
    rng = _rng(7)
    W = _graph(N, rng).toarray()
    f = Variable("f", (N, 2))
    tv = GraphTV(f, W, 0.4, norm="l2")
    i, j = np.nonzero(np.triu(W, 1))
    assert tv.D.shape == (len(i), N) and sp.isspmatrix_csr(tv.D)
    F = rng.standard_normal((N, 2))
    F[1] = F[0]  # an edge (if present) at the kink
    F[3] = F[0]
    z = tv.D @ F
    assert np.allclose(z, F[i] - F[j])
    assert tv.value(z) == pytest.approx(0.4 * np.sum(W[i, j] * np.linalg.norm(F[i] - F[j],
                                                                               axis=1)))
    assert tv.argument.value({"f": F}) == pytest.approx(z)
    u = rng.standard_normal(z.shape)
    ref = _cvx_project_onto(u, _norm_subdifferential(z, 0.4 * W[i, j], l2=True))
    assert np.allclose(tv.project_subgradient(z, u, 0.0), ref, atol=1e-6)
    assert tv.base is f and tv.norm == "l2"


def test_hinge_subgradient_projection_at_kinks():
    rng = _rng(8)
    y = _signs((8,), rng)
    m = np.array([1.0, 1.0, 0.2, 3.0, 1.0, -1.0, 1.0 + 1e-12, 2.0])
    z = y * m
    w = 0.6
    term = MarginLossTerm(Variable("f", (8,)), y, "hinge", w)
    u = rng.standard_normal(8)

    def cons(q):  # q = w y g with g ∈ [−1, 0] and φ(m) + φ*(g) = g m, φ*(g) = g on [−1, 0]
        g = cp.multiply(y, q) / w
        return [g >= -1, g <= 0, np.maximum(0.0, 1.0 - m) + g == cp.multiply(g, m)]
    ref = _cvx_project_onto(u, cons)
    # m = 1 + 1e-12 is at the kink only within the tolerance.
    got = term.project_subgradient(z, u, 1e-9)
    assert np.allclose(np.delete(got, 6), np.delete(ref, 6), atol=1e-6)
    assert -w <= y[6] * got[6] <= 0.0
    assert np.allclose(got[6], np.clip(u[6], min(0, -w * y[6]), max(0, -w * y[6])))


def test_smooth_terms_subgradient_is_gradient_and_entropy_boundary():
    rng = _rng(9)
    term = HuberNorms(Variable("F", (N, C)), 0.5, delta=0.3)
    z = rng.standard_normal((N, C))
    assert np.array_equal(term.project_subgradient(z, rng.standard_normal(z.shape), 1e-6),
                          term.gradient(z))
    ent = Entropy(Variable("p", (4,)), 2.0)
    z = np.array([0.5, 1.0, 0.0, 1e-9])
    u = np.array([10.0, -3.0, -50.0, 10.0])
    got = ent.project_subgradient(z, u, 1e-8)
    assert np.allclose(got[:2], 2.0 * (np.log(z[:2]) + 1.0))
    assert got[2] == -50.0  # −50 < 2(log 1e-8 + 1): a subgradient at some 0 < z' ≤ tol
    assert got[3] == pytest.approx(2.0 * (np.log(1e-9 + 1e-8) + 1.0))


# --------------------------------------------------------------------- constraints
def _constraint_cases(rng):
    x1, x2 = Variable("z", (N,)), Variable("Z", (N, C))
    lo = -rng.uniform(0.1, 1.0, (N, C))
    hi = rng.uniform(0.1, 1.0, (N, C))
    hi[0, 0] = np.inf
    lo[1, 1] = -np.inf
    return [
        SimplexRows(x2), SimplexRows(x1), NonNegative(x2), NonNegative(Variable("s")),
        Box(x2, lo, hi), Box(x1, -0.5, 0.25),
        FixedRows(x2, [0, 3], rng.standard_normal((2, C))),
        FixedRows(x1, np.arange(N) < 2, 0.5),
        LinearEquality(x2, rng.standard_normal((N, C)), 0.7), Balance(x1, 0.2),
        Balance(x2, -0.1),
    ]


def test_constraint_projection_against_cvxpy_and_pyproximal():
    rng = _rng(10)
    for con in _constraint_cases(rng):
        v = 2.0 * rng.standard_normal(con.shape)
        p = con.prox(v, 0.3)
        q = cp.Variable(con.shape)
        cp.Problem(cp.Minimize(cp.sum_squares(q - v)), con.cvxpy(q)).solve(solver="CLARABEL")
        assert np.allclose(p, q.value, atol=1e-6), con.describe()
        assert con.feasibility(p) <= 1e-12
        assert con.value(p) == 0.0
        check_term(con, np.asarray(q.value))
    x2 = Variable("Z", (N, C))
    v = rng.standard_normal((N, C))
    py = pyproximal.Simplex(n=N * C, radius=1.0, dims=(N, C), axis=-1, xtol=1e-12,
                            maxiter=200).prox(v.ravel(), 1.0).reshape(N, C)
    assert np.allclose(SimplexRows(x2).prox(v, 1.0), py, atol=1e-7)
    lo, hi = -rng.uniform(0, 1, (N, C)), rng.uniform(0, 1, (N, C))
    assert np.allclose(Box(x2, lo, hi).prox(v, 1.0), pyproximal.Box(lo, hi).prox(v, 1.0))
    assert np.allclose(NonNegative(x2).prox(v, 1.0), pyproximal.Box(0.0, np.inf).prox(v, 1.0))


def _normal_cone_reference(con, z, u):
    """N_C(z) = {q : σ_C(q) = ⟨q, z⟩}, σ_C the support function, written per set (the
    projection onto a cone is positively homogeneous: solved for u/max|u|, rescaled)."""
    scale = max(float(np.max(np.abs(u))), 1e-300)
    return scale * _normal_cone_projection(con, z, u / scale)


def _normal_cone_projection(con, z, u):
    if isinstance(con, SimplexRows):
        Z = z.reshape(1, -1) if z.ndim == 1 else z

        def cons(q):  # σ(row) = max_k q_k ≤ ⟨q_row, z_row⟩
            Q = cp.reshape(q, Z.shape, order="C") if q.ndim == 1 else q
            inner = cp.sum(cp.multiply(Q, Z), axis=1, keepdims=True)
            return [Q <= inner @ np.ones((1, Z.shape[1]))]
    elif isinstance(con, NonNegative):
        def cons(q):
            return [q <= 0, cp.sum(cp.multiply(q, z)) == 0]
    elif isinstance(con, Box):
        def cons(q):  # q = a − b, a, b ≥ 0, σ = Σ hi a − lo b ≤ ⟨q, z⟩
            a, b = cp.Variable(z.shape, nonneg=True), cp.Variable(z.shape, nonneg=True)
            fin_hi, fin_lo = np.isfinite(con.hi), np.isfinite(con.lo)
            extra = [a[~fin_hi] == 0] if np.any(~fin_hi) else []
            extra += [b[~fin_lo] == 0] if np.any(~fin_lo) else []
            sigma = (cp.sum(cp.multiply(np.where(fin_hi, con.hi, 0), a))
                     - cp.sum(cp.multiply(np.where(fin_lo, con.lo, 0), b)))
            return [q == a - b, sigma <= cp.sum(cp.multiply(q, z))] + extra
    elif isinstance(con, FixedRows):
        free = np.setdiff1d(np.arange(con.shape[0]), con.rows)

        def cons(q):
            return [q[free] == 0]
    elif isinstance(con, LinearEquality):
        def cons(q):
            lam = cp.Variable()
            return [q == lam * con.a]
    return _cvx_project_onto(u, cons)


def test_normal_cone_projection_against_cvxpy():
    rng = _rng(11)
    for con in _constraint_cases(rng):
        if not con.shape:
            continue
        # a feasible point with constraints active exactly
        v = 2.0 * rng.standard_normal(con.shape)
        z = con.prox(v, 1.0)
        if isinstance(con, (NonNegative, SimplexRows)):
            assert np.any(z == 0)
        u = 3.0 * rng.standard_normal(con.shape)
        got = con.project_subgradient(z, u, 0.0)
        ref = _normal_cone_reference(con, z, u)
        assert np.allclose(got, ref, atol=2e-6), con.describe()


def test_simplex_normal_cone_projection_edge_cases():
    con = SimplexRows(Variable("Z", (3, 4)))
    Z = np.array([[1.0, 0.0, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25], [0.0, 0.5, 0.5, 0.0]])
    rng = _rng(12)
    for _ in range(20):
        U = rng.standard_normal((3, 4)) * rng.choice([0.01, 1.0, 100.0])
        U[2, 0] = U[2, 3]  # ties among active entries
        got = con.project_subgradient(Z, U, 0.0)
        assert np.allclose(got, _normal_cone_reference(con, Z, U), atol=1e-6 * max(
            1.0, np.max(np.abs(U))))
    # u already in the cone is returned unchanged.
    inside = np.array([[2.0, -1.0, 0.0, 1.5], [0.3] * 4, [-4.0, 1.0, 1.0, -2.0]])
    assert np.allclose(con.project_subgradient(Z, inside, 0.0), inside)


def _budgeted_cone_reference(Z, U, tol, budget, simplex):
    """The projection onto ``{ν·1 + w : −b_k ≤ w_k ≤ 0}`` (``ν = 0`` for NonNegative),
    ``b_k = ∞`` where ``z_k ≤ tol``, ``budget/z_k`` up to ``z_k = √budget``, 0 beyond, row by
    row as a CVXPY QP."""
    out = np.empty_like(U)
    for i in range(U.shape[0]):
        w = cp.Variable(U.shape[1])
        nu = cp.Variable() if simplex else 0.0
        bound = np.where(Z[i] <= tol, -1e300, -budget / np.maximum(Z[i], tol))
        bound = np.where(Z[i] > np.sqrt(budget), 0.0, bound)
        finite = bound > -1e300
        cons = [w <= 0] + ([w[finite] >= bound[finite]] if finite.any() else [])
        cp.Problem(cp.Minimize(cp.sum_squares(U[i] - nu - w)), cons).solve(solver="CLARABEL")
        out[i] = (nu.value if simplex else 0.0) + w.value
    return out


@pytest.mark.parametrize("seed", range(6))
def test_budgeted_normal_cone_projections_against_cvxpy(seed):
    """With a complementarity budget, an entry near its bound may carry a multiplier up to
    budget/z (|w z| ≤ budget); budget 0 is the exact normal cone."""
    rng = _rng(40 + seed)
    N, K = 6, int(rng.integers(1, 6))
    Z = rng.dirichlet(np.ones(K), size=N)
    Z[rng.random((N, K)) < 0.3] = 0.0
    Z[rng.random((N, K)) < 0.2] = 1e-5  # degenerate-looking entries
    U = rng.standard_normal((N, K)) * rng.choice([0.01, 1.0, 10.0])
    budget = float(10.0 ** rng.uniform(-6, -1))
    tol = 1e-6
    for con, simplex in ((SimplexRows(Variable("Z", (N, K))), True),
                         (NonNegative(Variable("Z", (N, K))), False)):
        got = con.project_subgradient(Z, U, tol, budget)
        ref = _budgeted_cone_reference(Z, U, tol, budget, simplex)
        # the same distance (the projection is unique; CVXPY's point to its accuracy)
        assert np.allclose(got, ref, atol=1e-5 * max(1.0, np.abs(U).max())), con.describe()
        exact = con.project_subgradient(Z, U, tol)
        assert np.allclose(con.project_subgradient(Z, U, tol, 1e-300), exact, atol=1e-12)
        # a larger budget never moves the projection farther from U
        assert np.sum((U - got) ** 2) <= np.sum((U - exact) ** 2) + 1e-12


def test_bounds():
    x = Variable("Z", (N, C))
    lo, hi = NonNegative(x).bounds()
    assert np.all(lo == 0) and np.all(hi == np.inf)
    lo, hi = Box(x, -1.0, 2.0).bounds()
    assert np.all(lo == -1) and np.all(hi == 2)
    lo, hi = FixedRows(x, [1], np.ones((1, C))).bounds()
    assert np.all(lo[1] == 1) and np.all(hi[1] == 1) and np.all(np.isinf(lo[0]))
    assert "bounds" not in SimplexRows(x).capabilities


# --------------------------------------------------------------------- capabilities
def test_capabilities_follow_the_loss():
    x = Variable("f", (4,))
    y = np.array([1.0, -1.0, 1.0, -1.0])
    hinge = MarginLossTerm(x, y, "hinge").capabilities
    assert "gradient" not in hinge and "hessp" not in hinge
    assert {"prox", "subdifferential", "value", "cvxpy"} <= hinge
    logistic = MarginLossTerm(x, y, "logistic").capabilities
    assert {"gradient", "hessp", "subdifferential"} <= logistic and "prox" not in logistic
    assert {"gradient", "hessp", "prox"} <= MarginLossTerm(x, y, "huber").capabilities
    assert not MarginLossTerm(x, y, "hinge").smooth

    class Smooth(MarginLoss):  # a user loss with a derivative only
        def value(self, m):
            return np.logaddexp(0.0, -m)

        def cvxpy(self, m):
            return cp.logistic(-m)

        def derivative(self, m):
            return -1.0 / (1.0 + np.exp(m))

    caps = MarginLossTerm(x, y, Smooth()).capabilities
    assert "gradient" in caps and "hessp" not in caps and "prox" not in caps
    ent = Entropy(x).capabilities
    assert {"prox", "subdifferential", "mirror"} <= ent and "gradient" not in ent
    assert Entropy(x).program_class == "exponential-cone"
    op = spla.aslinearoperator(np.eye(4))
    assert "cvxpy" not in QuadraticForm(x, op).capabilities
    assert {"gradient", "hessp"} <= QuadraticForm(x, op).capabilities
    assert "prox" in GraphTV(x, np.ones((4, 4)) - np.eye(4)).capabilities
    assert GroupL21 is GroupNorms and SumOfRowNorms is GroupNorms


def test_linear_operator_quadratic_form_matches_dense():
    rng = _rng(13)
    M = _psd(N, rng)
    x = Variable("F", (N, C))
    a, b = QuadraticForm(x, M, 0.3), QuadraticForm(x, spla.aslinearoperator(M), 0.3)
    z, v = rng.standard_normal((N, C)), rng.standard_normal((N, C))
    assert b.value(z) == pytest.approx(a.value(z))
    assert np.allclose(b.gradient(z), a.gradient(z)) and np.allclose(b.hessp(z, v),
                                                                      a.hessp(z, v))


def test_laplacian_cvxpy_form_is_a_sparse_sum_of_squares():
    rng = _rng(14)
    L = laplacian(_graph(40, rng, density=0.1))
    term = GraphQuadratic(Variable("f", (40,)), L + 0.1 * sp.eye(40), 1.0)
    B = term.sum_of_squares_factor()
    assert sp.issparse(B) and abs(B.T @ B - term.M).max() < 1e-12
    assert RKHSNorm(Variable("a", (N,)), _psd(N, rng)).sum_of_squares_factor() is None
    for shape in ((40,), (40, 3)):
        term = GraphQuadratic(Variable("F", shape), L, 0.7)
        z = rng.standard_normal(shape)
        assert _cvx_value(term.cvxpy, z) == pytest.approx(term.value(z), rel=1e-10)


# ------------------------------------------------------------------- bad user terms
class _BadGradient(Term):
    name = "bad_gradient"

    def value(self, z):
        return float(np.sum(z**2))

    def cvxpy(self, z):
        return cp.sum_squares(z)

    def gradient(self, z):
        return z  # should be 2z


class _BadProx(Term):
    name = "bad_prox"

    def value(self, z):
        return float(np.sum(np.abs(z)))

    def cvxpy(self, z):
        return cp.sum(cp.abs(z))

    def prox(self, v, t):
        return np.sign(v) * np.maximum(np.abs(v) - 2 * t, 0.0)  # threshold should be t


class _ShiftedProx(_BadProx):
    name = "shifted_prox"

    def prox(self, v, t):
        return np.sign(v) * np.maximum(np.abs(v) - t, 0.0) + 0.05


class _BadHessp(Term):
    name = "bad_hessp"

    def value(self, z):
        return float(np.sum(np.exp(z)))

    def cvxpy(self, z):
        return cp.sum(cp.exp(z))

    def gradient(self, z):
        return np.exp(z)

    def hessp(self, z, v):
        return v  # should be exp(z)·v


@pytest.mark.parametrize("cls,oracle", [(_BadGradient, "gradient"), (_ShiftedProx, "prox"),
                                        (_BadHessp, "Hessian")])
def test_check_term_catches_wrong_user_oracles(cls, oracle):
    term = cls(Variable("z", (5,)))
    with pytest.raises(InvalidInputError, match=oracle):
        check_term(term, _rng(15).standard_normal(5) + 1.0)


def test_check_term_catches_a_wrong_threshold_away_from_kinks():
    """A soft threshold at 2t instead of t. check_term perturbs every entry at once, so when
    the returned point has entries at the kink 0 their first-order increase can hide the
    error elsewhere (see the report); away from the kink it is caught."""
    term = _BadProx(Variable("z", (3,)))
    with pytest.raises(InvalidInputError, match="prox"):
        check_term(term, np.array([40.0, -35.0, 50.0]), rng=np.random.default_rng(1))


# ------------------------------------------------------------------------ bad input
def test_bad_input_names_the_argument():
    x = Variable("f", (4,))
    F = Variable("F", (4, 2))
    cases = [
        (lambda: MarginLossTerm(x, [1, -1, 0, 1]), "y of MarginLossTerm"),
        (lambda: MarginLossTerm(x, [1, -1, 1]), "y of MarginLossTerm"),
        (lambda: MarginLossTerm(x, [1, -1, 1, 1], loss="nope"), "loss"),
        (lambda: SquaredError(F, np.ones((3, 2))), "target of SquaredError"),
        (lambda: Linear(x, np.ones(5)), "c of Linear"),
        (lambda: LinearScore(F, np.ones((4, 3))), "G of LinearScore"),
        (lambda: QuadraticForm(x, np.ones((3, 3))), "M of QuadraticForm"),
        (lambda: QuadraticForm(x, np.triu(np.ones((4, 4)))), "symmetric"),
        (lambda: QuadraticForm(x, -np.eye(4)), "positive semidefinite"),
        (lambda: GraphQuadratic(x, -np.eye(4)), "L of GraphQuadratic"),
        (lambda: RKHSNorm(Variable("s"), np.eye(1)), "argument of RKHSNorm"),
        (lambda: GraphTV(x, -np.ones((4, 4))), "W of GraphTV"),
        (lambda: GraphTV(x, np.triu(np.ones((4, 4)), 1)), "symmetric"),
        (lambda: GraphTV(x, np.eye(4)), "no edge"),
        (lambda: GraphTV(x, np.ones((4, 4)), norm="linf"), "norm of GraphTV"),
        (lambda: HuberNorms(x, delta=0.0), "delta of HuberNorms"),
        (lambda: GroupNorms(F, np.ones(3)), "weight of GroupNorms"),
        (lambda: GroupNorms(F, -1.0), "weight of GroupNorms"),
        (lambda: ElasticNet(x, 1.0, -1.0), "l2 of ElasticNet"),
        (lambda: Ridge(x, -1.0), "weight of Ridge"),
        (lambda: Box(x, 1.0, 0.0), "lo of Box"),
        (lambda: Box(x, np.zeros(3), 1.0), "lo of Box"),
        (lambda: FixedRows(x, [0, 0], 1.0), "rows of FixedRows"),
        (lambda: FixedRows(x, [7], 1.0), "rows of FixedRows"),
        (lambda: FixedRows(F, [0, 1], np.ones((2, 3))), "values of FixedRows"),
        (lambda: LinearEquality(x, np.zeros(4), 1.0), "a of LinearEquality"),
        (lambda: LinearEquality(x, np.ones(4), np.nan), "b of LinearEquality"),
        (lambda: Balance(x, "half"), "r of Balance"),
        (lambda: L1("f", 1.0), "argument of L1"),
    ]
    for build, words in cases:
        with pytest.raises(InvalidInputError, match=words):
            build()


# ---------------------------------------------------------------- end-to-end certificate
def _smoke_models():
    rng = _rng(16)
    n, d, l = 8, 3, 6
    X = rng.standard_normal((n, d))
    y = _signs((l,), rng)
    y[:2] = [1.0, -1.0]
    K = np.exp(-np.square(X[:, None] - X[None]).sum(-1) / 4.0)
    W = _graph(n, rng)
    L = laplacian(W)
    G = rng.standard_normal((n, C))
    T = rng.standard_normal((n, C))
    t = rng.standard_normal(n)
    w, b = Variable("w", (d,)), Variable("b")
    alpha, f, F = Variable("alpha", (n,)), Variable("f", (n,)), Variable("F", (n, C))
    models = {}
    for loss in LOSSES:
        models[f"margin:{loss}"] = Model(
            [MarginLossTerm((X @ w + b)[:l], y, loss, 1.0), Ridge(w, 0.1)])
    models["rkhs+graph+hinge"] = Model(
        [MarginLossTerm((K @ alpha + b)[:l], y, "hinge", 0.5), RKHSNorm(alpha, K, 0.05),
         GraphQuadratic(K @ alpha + b, L, 0.02)])
    fit = SquaredError(F, T, 0.5)
    fit1 = SquaredError(f, t, 0.5)
    models["linear"] = Model([Linear(F, G, 0.3), fit])
    models["quadratic_normalized"] = Model(
        [QuadraticForm(f, laplacian(W, normalized=True), 0.7), fit1])
    models["l1"] = Model([L1(F, 0.4), fit])
    models["elastic_net"] = Model([ElasticNet(2.0 * f - 0.3, 0.5, 0.1), fit1])
    models["group_norms"] = Model([GroupNorms(F, rng.uniform(0.5, 1.5, n)), fit])
    models["huber_norms"] = Model([HuberNorms(F, 0.8, delta=0.4), fit])
    models["graph_tv_l1"] = Model([GraphTV(F, W, 0.3, norm="l1"), fit])
    models["graph_tv_l2"] = Model([GraphTV(f, W.toarray(), 0.3, norm="l2"), fit1])
    models["entropy+simplex"] = Model([Entropy(F, 0.3), Linear(F, G, 1.0)], [SimplexRows(F)])
    models["lass"] = Model([GraphQuadratic(F, L, 0.5), LinearScore(F, G, 1.0)],
                           [SimplexRows(F)])
    models["nonnegative"] = Model([fit], [NonNegative(F)])
    models["box"] = Model([fit], [Box(F, -0.3, 0.5)])
    models["fixed_rows"] = Model([fit, GraphQuadratic(F, L, 1.0)],
                                 [FixedRows(F, [0, 2], np.ones((2, C)))])
    models["linear_equality"] = Model([fit], [LinearEquality(F, G, 1.0)])
    models["balance"] = Model([MarginLossTerm((X @ w + b)[:l], y, "hinge", 1.0),
                               Ridge(w, 0.1)], [Balance((X @ w + b)[l:], 0.3)])
    return models


@pytest.mark.parametrize("name", list(_smoke_models()))
def test_cvxpy_solution_passes_the_model_certificate(name):
    model = _smoke_models()[name]
    solution = ssl_opt.solve(model, solver="cvxpy", solver_options=TIGHT)
    kkt = model.kkt(solution)
    assert kkt["stationarity"] <= 1e-5, (name, kkt)
    assert kkt.get("feasibility", 0.0) <= 1e-6, (name, kkt)
    # The certificate can fail: a perturbed point is not optimal.
    rng = _rng(17)
    moved = {k: v + 0.05 * rng.standard_normal(v.shape) for k, v in solution.x.items()}
    bad = model.kkt(moved)
    assert max(bad.values()) > 1e-3, (name, bad)


def test_exact_entropy_simplex_optimum_certifies_to_round_off():
    """min ⟨G, F⟩ + w Σ F log F over simplex rows is solved by F = softmax(−G/w) per row."""
    rng = _rng(18)
    G = rng.standard_normal((N, C))
    F = Variable("F", (N, C))
    model = Model([Entropy(F, 0.4), Linear(F, G)], [SimplexRows(F)])
    E = np.exp(-G / 0.4)
    kkt = model.kkt({"F": E / E.sum(axis=1, keepdims=True)})
    assert kkt["stationarity"] <= 1e-12 and kkt["feasibility"] <= 1e-15


@pytest.mark.parametrize("loss", ["squared_hinge", "hinge", "square", "logistic"])
def test_margin_loss_sample_weight_against_the_weighted_sum(loss):
    """``w Σ_i c_i φ(y_i z_i)``: value, gradient and Hessian against the weighted sum and its
    derivatives written here; the prox against the entrywise prox of the loss with steps
    ``t w c_i`` (a zero weight leaves the entry as it is), the CVXPY form against the value."""
    rng = np.random.default_rng(3)
    n = 12
    z, y = rng.normal(0.0, 1.5, n), np.where(rng.random(n) < 0.5, 1.0, -1.0)
    c = rng.uniform(0.0, 3.0, n)
    c[:2] = 0.0
    x = Variable("x", (n,))
    term = MarginLossTerm(x, y, loss, 0.7, sample_weight=c)
    phi = term.loss
    assert abs(term.value(z) - 0.7 * c @ phi.value(y * z)) <= 1e-12
    zc = cp.Parameter(n, value=z)
    assert abs(float(term.cvxpy(zc).value) - term.value(z)) <= 1e-10
    if "derivative" in phi.capabilities:
        np.testing.assert_allclose(term.gradient(z), 0.7 * c * y * phi.derivative(y * z),
                                   rtol=1e-13, atol=1e-15)
    if "second_derivative" in phi.capabilities:
        v = rng.standard_normal(n)
        np.testing.assert_allclose(term.hessp(z, v), 0.7 * c * phi.second_derivative(y * z) * v,
                                   rtol=1e-13, atol=1e-15)
    if "prox" in phi.capabilities:
        t = 0.3
        p = term.prox(z, t)
        np.testing.assert_allclose(p, y * phi.prox(y * z, t * 0.7 * c), rtol=1e-13, atol=1e-15)
        np.testing.assert_array_equal(p[:2], z[:2])
    check_term(term, z, rng=np.random.default_rng(0))  # finite differences, prox optimality
    with pytest.raises(InvalidInputError, match="sample_weight"):
        MarginLossTerm(x, y, loss, sample_weight=-c)
    with pytest.raises(InvalidInputError, match="sample_weight"):
        MarginLossTerm(x, y, loss, sample_weight=c[:-1])
