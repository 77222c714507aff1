"""The linear semi-supervised SVM family [001], docs/design.md §4.2: L2-SVM-MFN, TSVM and DA S3VM.

Every check compares against something computed *independently* of the code under test: the
CVXPY reference, scikit-learn's liblinear, dense numpy linear algebra, scipy (finite
differences, ``minimize_scalar``, ``brentq``) or brute-force enumeration written here.
"""

from __future__ import annotations

import os
from itertools import combinations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import brentq, check_grad, minimize_scalar
from scipy.special import expit

import ssl_opt
from ssl_opt.datasets.synthetic import gaussian_blobs
from ssl_opt.exceptions import InvalidInputError, UnsupportedProblemError
from ssl_opt.numerics.cgls import cgls
from ssl_opt.numerics.design import LinearDesign
from ssl_opt.numerics.line_search import weighted_squared_hinge_step
from ssl_opt.plugins.linear.da import balance_root
from ssl_opt.plugins.linear.mfn import mfn
from ssl_opt.plugins.linear.tsvm import switch_labels
from ssl_opt.problems import DAS3VM, TSVM, LinearSVM
from ssl_opt.solution import OPTIMAL

EXAMPLES = int(os.environ.get("SSL_OPT_EXAMPLES", 10))


# ------------------------------------------------------------------------------------ helpers


def _rel(a, b):
    return abs(a - b) / max(1.0, abs(b))


def _augmented(X, bias):
    """The dense ``X̃ = [X, 1]`` built here with numpy (the library never forms it)."""
    A = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=float)
    return np.hstack([A, np.ones((A.shape[0], 1))]) if bias else A


def _l2(z):
    return np.maximum(0.0, 1.0 - z) ** 2


def _np_svm_objective(A, y, c, lam, w):
    return 0.5 * lam * w @ w + 0.5 * c @ _l2(y * (A @ w))


def _np_tsvm_objective(A, y, y_u, lam, lam_u, w):
    l, u = y.size, y_u.size
    o = A @ w
    return (0.5 * lam * w @ w + _l2(y * o[:l]).sum() / (2 * l)
            + lam_u * _l2(y_u * o[l:]).sum() / (2 * u))


def _svm_instance(seed, n=60, d=8, sparse=False, zero_costs=True):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    if sparse:
        X[rng.random((n, d)) < 0.6] = 0.0
        X = sp.csr_matrix(X)
    w_true = rng.standard_normal(d)
    y = np.sign(_augmented(X, False) @ w_true + 0.7 * rng.standard_normal(n))
    y[y == 0] = 1.0
    y[:2] = [1.0, -1.0]
    cost = rng.uniform(0.0, 2.0, n)
    if zero_costs:
        cost[rng.random(n) < 0.2] = 0.0
    return X, y, cost


def _best_switch_decrease(problem, w, y_u):
    """Brute force: the largest objective decrease of one (positive, negative) label switch at
    fixed ``w`` (``<= 0`` when no pair improves), by evaluating every switched labeling."""
    base = problem.objective({"w": w, "y_u": y_u})
    best = -np.inf
    for i in np.flatnonzero(y_u > 0):
        for j in np.flatnonzero(y_u < 0):
            z = y_u.copy()
            z[i], z[j] = -1.0, 1.0
            best = max(best, base - problem.objective({"w": w, "y_u": z}))
    return best, base


def _inner_reference(problem, y_u):
    """CVXPY optimum of the TSVM inner L2-SVM for labels ``y_u``, built here from the data."""
    l, u = problem.l, problem.u
    X = problem.design.X
    cost = np.r_[np.full(l, 1.0 / l), np.full(u, problem.lam_u / u)]
    inner = LinearSVM(X, np.r_[problem.y, y_u], problem.lam, cost=cost, bias=problem.bias)
    return ssl_opt.solve(inner, solver="cvxpy")


def _my_closed_form_p(o_u, lam_u, r, T):
    """``p_j = expit((s − g_j)/T)`` with ``mean(p) = r`` by scipy's brentq [001 eq. 9]."""
    g = lam_u * (_l2(o_u) - _l2(-o_u))

    def h(s):
        return float(np.mean(expit((s - g) / T))) - r

    lo, hi = g.min() - 50 * T - 1.0, g.max() + 50 * T + 1.0
    s = brentq(h, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=1000)
    return expit((s - g) / T)


def _failed(cert):
    return {c.name for c in cert.checks if not c.passed}


# ---------------------------------------------------------------------- L2-SVM-MFN [001 §2]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_mfn_matches_cvxpy_reference(seed, sparse, bias):
    X, y, cost = _svm_instance(seed, sparse=sparse)
    problem = LinearSVM(X, y, 0.1, cost=cost, bias=bias)
    ref = ssl_opt.solve(problem, solver="cvxpy")
    sol = ssl_opt.solve(problem, solver="mfn")
    assert sol.status == OPTIMAL
    assert sol.x["w"].shape == (X.shape[1] + int(bias),)
    assert _rel(sol.objective, ref.objective) < 1e-7
    # The objective evaluated here with numpy agrees with the reported one.
    A = _augmented(X, bias)
    assert _rel(_np_svm_objective(A, y, cost, 0.1, sol.x["w"]), sol.objective) < 1e-12
    # The L2-SVM is strongly convex: the minimizer is unique.
    np.testing.assert_allclose(sol.x["w"], ref.x["w"], atol=1e-5)
    cert = ssl_opt.certify(problem, sol, reference=ref)
    assert cert.passed, cert.report()


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(4, 40),
    d=st.integers(1, 8),
    log_lam=st.floats(-2, 1),
    zero_fraction=st.floats(0.0, 0.5),
    sparse=st.booleans(),
    bias=st.booleans(),
    seed=st.integers(0, 10**6),
)
def test_mfn_random_instances_match_reference(n, d, log_lam, zero_fraction, sparse, bias, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    if sparse:
        X[rng.random((n, d)) < 0.5] = 0.0
        X = sp.csr_matrix(X)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    y[:2] = [1.0, -1.0]
    cost = rng.uniform(0.0, 3.0, n)
    cost[rng.random(n) < zero_fraction] = 0.0
    problem = LinearSVM(X, y, 10.0**log_lam, cost=cost, bias=bias)
    ref = ssl_opt.solve(problem, solver="cvxpy")
    sol = ssl_opt.solve(problem, solver="mfn")
    # MFN is exact up to its CGLS tolerance: the reference can never be better by more.
    assert sol.objective <= ref.objective + 1e-7 * max(1.0, ref.objective)
    if ref.status == OPTIMAL:
        assert _rel(sol.objective, ref.objective) < 1e-7
    assert ssl_opt.certify(problem, sol, reference=ref).passed


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mfn_matches_sklearn_linearsvc(seed):
    """liblinear's primal trust-region Newton on the same problem: with C = 1/(2λ) its
    objective ½‖w̃‖² + C Σ c_i l2 is J/λ, the intercept being regularized (scaling 1)."""
    from sklearn.svm import LinearSVC

    X, y, cost = _svm_instance(seed, n=80, d=5, zero_costs=False)
    lam = 0.05
    problem = LinearSVM(X, y, lam, cost=cost, bias=True)
    sol = ssl_opt.solve(problem, solver="mfn")
    clf = LinearSVC(loss="squared_hinge", dual=False, C=1 / (2 * lam), fit_intercept=True,
                    intercept_scaling=1, tol=1e-10, max_iter=10000)
    clf.fit(X, y, sample_weight=cost)
    w_sk = np.r_[clf.coef_.ravel(), clf.intercept_]
    f_sk = _np_svm_objective(_augmented(X, True), y, cost, lam, w_sk)
    assert _rel(sol.objective, f_sk) < 1e-6
    assert sol.objective <= f_sk + 1e-9 * f_sk
    np.testing.assert_allclose(sol.x["w"], w_sk, atol=1e-4)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_svm_objective_gradient_against_numpy(sparse, bias):
    X, y, cost = _svm_instance(7, n=30, d=5, sparse=sparse)
    lam = 0.3
    problem = LinearSVM(X, y, lam, cost=cost, bias=bias)
    A = _augmented(X, bias)
    rng = np.random.default_rng(1)
    for _ in range(5):
        w = rng.normal(0, 0.7, A.shape[1])
        slack = np.maximum(0.0, 1.0 - y * (A @ w))
        grad = lam * w - A.T @ (cost * y * slack)
        assert _rel(problem.objective({"w": w}), _np_svm_objective(A, y, cost, lam, w)) < 1e-13
        np.testing.assert_allclose(problem.gradient({"w": w})["w"], grad, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(problem.outputs(w), A @ w, rtol=1e-13, atol=1e-13)
        # The model certificate: ‖∇J‖∞ over the largest pulled gradient of a term (the loss
        # term's X̃ᵀ(c∘y∘slack), the ridge's λw), at least 1.
        loss_part = A.T @ (cost * y * slack)
        scale = max(1.0, np.abs(loss_part).max(), np.abs(lam * w).max())
        assert _rel(problem.kkt({"w": w})["stationarity"], np.abs(grad).max() / scale) < 1e-12

        def f(v):
            return problem.objective({"w": v})

        def g(v):
            return problem.gradient({"w": v})["w"]

        err = check_grad(f, g, w)
        assert err < 1e-5 * max(1.0, np.linalg.norm(grad)), err


def test_extra_rows_of_X_are_ignored_by_linear_svm():
    X, y, cost = _svm_instance(3, n=40, d=4)
    full = LinearSVM(X, y[:25], 0.2, cost=cost[:25])
    head = LinearSVM(X[:25], y[:25], 0.2, cost=cost[:25])
    a = ssl_opt.solve(full, solver="mfn")
    b = ssl_opt.solve(head, solver="cvxpy")
    assert _rel(a.objective, b.objective) < 1e-7


def _canonical_and_duplicated_csr(X):
    """``X`` as CSR with every non-zero split in two duplicate, unsorted entries."""
    coo = sp.coo_matrix(X)
    rows = np.r_[coo.row, coo.row]
    cols = np.r_[coo.col, coo.col]
    vals = np.r_[0.25 * coo.data, 0.75 * coo.data]
    order = np.lexsort((-cols, rows))  # descending columns: unsorted indices
    indptr = np.r_[0, np.cumsum(np.bincount(rows, minlength=X.shape[0]))]
    return sp.csr_matrix((vals[order], cols[order], indptr), shape=X.shape)


@pytest.mark.parametrize("fmt", ["csc", "coo", "csr_array", "duplicates", "int"])
def test_mfn_accepts_any_matrix_format(fmt):
    X, y, cost = _svm_instance(6, n=40, d=5, sparse=True)
    dense = X.toarray()
    if fmt == "int":
        dense = np.round(3 * dense)
        Xin = dense.astype(np.int64)
    else:
        Xin = {"csc": sp.csc_matrix(dense), "coo": sp.coo_matrix(dense),
               "csr_array": sp.csr_array(dense),
               "duplicates": _canonical_and_duplicated_csr(dense)}[fmt]
    ref = ssl_opt.solve(LinearSVM(dense, y, 0.1, cost=cost), solver="cvxpy")
    sol = ssl_opt.solve(LinearSVM(Xin, y, 0.1, cost=cost), solver="mfn")
    assert _rel(sol.objective, ref.objective) < 1e-7
    assert _rel(_np_svm_objective(_augmented(dense, True), y, cost, 0.1, sol.x["w"]),
                ref.objective) < 1e-7


def test_problem_construction_leaves_callers_matrix_untouched():
    X = _canonical_and_duplicated_csr(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 4.0]]))
    data, indices, indptr = X.data.copy(), X.indices.copy(), X.indptr.copy()
    LinearSVM(X, np.array([1.0, -1.0]), 0.1)
    np.testing.assert_array_equal(X.indptr, indptr)
    np.testing.assert_array_equal(X.indices, indices)
    np.testing.assert_array_equal(X.data, data)


def _strongly_regularized_instance():
    """λ/c = 1000: the objective is ≈ ½Σc, so its relative decrease per Newton step is tiny."""
    rng = np.random.default_rng(16)
    X = 0.5 * rng.standard_normal((23, 3))
    X[rng.random(X.shape) < 0.7] = 0.0
    y = np.where(rng.random(23) < 0.5, 1.0, -1.0)
    y[:2] = [1.0, -1.0]
    return LinearSVM(X, y, 1000.0), X, y


def test_mfn_strongly_regularized_objective_is_right():
    problem, X, y = _strongly_regularized_instance()
    ref = ssl_opt.solve(problem, solver="cvxpy")
    sol = ssl_opt.solve(problem, solver="mfn")
    assert _rel(sol.objective, ref.objective) < 1e-9
    exact = ssl_opt.solve(problem, solver="mfn", forcing=0.0)  # exact CGLS steps
    assert exact.status == OPTIMAL
    assert ssl_opt.certify(problem, exact, reference=ref).passed


def test_mfn_strongly_regularized_converges_and_certifies():
    problem, _, _ = _strongly_regularized_instance()
    ref = ssl_opt.solve(problem, solver="cvxpy")
    sol = ssl_opt.solve(problem, solver="mfn")
    cert = ssl_opt.certify(problem, sol, reference=ref)
    assert cert.passed, cert.report()
    assert sol.status == OPTIMAL


# --------------------------------------------------------------------------- CGLS [001 §2.1]


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_cgls_matches_dense_normal_equations(sparse, bias):
    X, _, _ = _svm_instance(11, n=40, d=7, sparse=sparse)
    rng = np.random.default_rng(2)
    C = rng.uniform(0.0, 2.0, 40)
    C[:5] = 0.0
    b = rng.normal(size=40)
    lam = 0.3
    design = LinearDesign(X, bias)
    A = _augmented(X, bias)
    exact = np.linalg.solve(lam * np.eye(A.shape[1]) + A.T @ (C[:, None] * A), A.T @ (C * b))
    res = cgls(design, C, b, lam, np.zeros(A.shape[1]), tol=1e-13)
    assert res.converged
    assert 0 < res.iterations <= A.shape[1] + 5  # CG: at most dim steps in exact arithmetic
    np.testing.assert_allclose(res.beta, exact, rtol=1e-9, atol=1e-10)
    # Seeding from the solution: nothing left to do.
    seeded = cgls(design, C, b, lam, exact, tol=1e-8)
    assert seeded.iterations == 0 and seeded.converged
    np.testing.assert_array_equal(seeded.beta, exact)
    # Seeding near the solution needs fewer steps than a cold start.
    near = cgls(design, C, b, lam, exact + 1e-6 * rng.normal(size=exact.size), tol=1e-13)
    assert near.converged and near.iterations <= res.iterations
    np.testing.assert_allclose(near.beta, exact, rtol=1e-9, atol=1e-10)


# ------------------------------------------------------------------ line search [001 eq. 5]


def _line_search_case(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 25))
    gap = rng.normal(0.0, 1.0, k)
    gap[rng.random(k) < 0.15] = 0.0
    t = rng.normal(0.0, 1.0, k)
    t[rng.random(k) < 0.15] = 0.0
    c = rng.uniform(0.0, 2.0, k)
    c[rng.random(k) < 0.2] = 0.0
    a0 = float(rng.normal(0.0, 2.0))
    a1 = float(rng.choice([0.0, rng.uniform(0.01, 3.0)]))
    if a1 == 0.0 and not np.any((c > 0) & (t < 0)):
        a1 = 0.5  # otherwise φ may be unbounded below (not a valid line search)
    return gap, t, c, a0, a1


@pytest.mark.parametrize("seed", range(40))
def test_weighted_line_search_matches_minimize_scalar(seed):
    gap, t, c, a0, a1 = _line_search_case(seed)

    def phi(s):  # the convex 1-D objective whose derivative the line search zeroes
        return a0 * s + 0.5 * a1 * s * s + 0.5 * float(c @ np.maximum(0.0, gap - s * t) ** 2)

    def dphi(s):
        return a0 + a1 * s - float(c @ (t * np.maximum(0.0, gap - s * t)))

    s = weighted_squared_hinge_step(gap, t, c, a0, a1)
    assert s >= 0.0 and np.isfinite(s)
    # Independent: find an upper bracket where φ' > 0, then scipy's bounded Brent.
    hi = 1.0
    while dphi(hi) <= 0:
        hi *= 2.0
    ref = minimize_scalar(phi, bounds=(0.0, hi), method="bounded",
                          options={"xatol": 1e-13, "maxiter": 5000})
    assert phi(s) <= ref.fun + 1e-10 * max(1.0, abs(ref.fun))
    # First-order condition on s ≥ 0: φ'(s) = 0, or s = 0 with φ'(0) ≥ 0.
    scale = max(1.0, abs(a0), float(c @ np.abs(t * gap)))
    if s == 0.0:
        assert dphi(0.0) >= -1e-12 * scale
    else:
        assert abs(dphi(s)) <= 1e-10 * scale
        assert abs(s - ref.x) <= 1e-5 * max(1.0, s)


# ------------------------------------------------ DA's merged rows (each unlabeled row once)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_mfn_row_merging_equals_stacked_design(sparse, bias):
    rng = np.random.default_rng(5)
    l, u, d = 10, 15, 6
    X = rng.standard_normal((l + u, d))
    if sparse:
        X[rng.random(X.shape) < 0.5] = 0.0
        X = sp.csr_matrix(X)
    y = np.where(rng.random(l) < 0.5, 1.0, -1.0)
    y[:2] = [1.0, -1.0]
    p = rng.random(u)
    p[:3] = [0.0, 1.0, 0.5]  # costs exactly 0 on one side of two rows
    lam, lam_u = 0.05, 2.0
    rows = np.r_[np.arange(l), np.arange(l, l + u), np.arange(l, l + u)]
    labels = np.r_[y, np.ones(u), -np.ones(u)]
    costs = np.r_[np.full(l, 1 / l), lam_u * p / u, lam_u * (1 - p) / u]
    merged = mfn(LinearDesign(X, bias), labels, costs, lam, rows=rows, tol=1e-10)
    assert merged.outputs.shape == (l + u,)  # outputs on unique rows only
    # The stacked design, rows duplicated explicitly here.
    X_st = X[rows] if not sparse else sp.csr_matrix(X.toarray()[rows])
    stacked = mfn(LinearDesign(X_st, bias), labels, costs, lam, tol=1e-10)
    ref = ssl_opt.solve(LinearSVM(X_st, labels, lam, cost=costs, bias=bias), solver="cvxpy")
    np.testing.assert_allclose(merged.w, stacked.w, atol=1e-6)
    np.testing.assert_allclose(merged.w, ref.x["w"], atol=1e-6)
    A = _augmented(X_st, bias)
    assert _rel(merged.objective, _np_svm_objective(A, labels, costs, lam, merged.w)) < 1e-12
    assert _rel(merged.objective, ref.objective) < 1e-9


# ------------------------------------------------------------------------- no densification


def test_mfn_never_densifies_sparse_input(monkeypatch):
    X, y, cost = _svm_instance(4, n=120, d=30, sparse=True)
    problem = LinearSVM(X, y, 0.1, cost=cost)
    ref = ssl_opt.solve(problem, solver="cvxpy")
    A = _augmented(X, True)

    def refuse(self, *args, **kwargs):
        raise AssertionError("a sparse matrix was densified")

    for cls in type(X).__mro__:
        for name in ("toarray", "todense"):
            if name in vars(cls):
                monkeypatch.setattr(cls, name, refuse)
    with pytest.raises(AssertionError, match="densified"):
        X.toarray()  # the patch is active
    fresh = LinearSVM(X, y, 0.1, cost=cost)
    sol = ssl_opt.solve(fresh, solver="mfn")
    t_data = gaussian_blobs(n=60, n_labeled=10, d=4, seed=2)
    Xs = sp.csr_matrix(np.where(np.abs(t_data.X) < 0.4, 0.0, t_data.X))
    tsvm = ssl_opt.solve(TSVM(Xs, t_data.y, 0.1, 1.0, r=0.5), solver="tsvm")
    da = ssl_opt.solve(DAS3VM(Xs, t_data.y, 0.1, 1.0, r=0.5), solver="da")
    monkeypatch.undo()
    assert sol.status == OPTIMAL
    assert _rel(sol.objective, ref.objective) < 1e-7
    assert _rel(_np_svm_objective(A, y, cost, 0.1, sol.x["w"]), ref.objective) < 1e-7
    assert np.all(np.isfinite(tsvm.x["w"])) and np.all(np.isfinite(da.x["w"]))


# ------------------------------------------------------------------------- TSVM [001 §3.1]


TSVM_INSTANCES = [
    # (n, n_labeled, d, separation, seed, lam, lam_u) — several have switches along the path
    (18, 8, 3, 3.0, 3, 0.1, 1.0),
    (40, 4, 2, 2.0, 1, 0.01, 1.0),
    (60, 6, 3, 1.5, 8, 0.01, 1.0),
    (100, 4, 10, 1.0, 1, 0.01, 1.0),
]


@pytest.mark.parametrize("case", TSVM_INSTANCES)
@pytest.mark.parametrize("S", [1, 10_000])
def test_tsvm_solution_is_block_optimal(case, S):
    n, n_labeled, d, sep, seed, lam, lam_u = case
    data = gaussian_blobs(n=n, n_labeled=n_labeled, d=d, separation=sep, seed=seed)
    problem = TSVM(data.X, data.y, lam, lam_u, r=0.5)
    sol = ssl_opt.solve(problem, solver="tsvm", S=S)
    assert sol.status == OPTIMAL
    w, y_u = sol.x["w"], sol.x["y_u"]
    # Integral and balanced: round(r·u) positives.
    assert set(np.unique(y_u)) <= {-1.0, 1.0}
    assert int((y_u > 0).sum()) == int(round(0.5 * (n - n_labeled)))
    # The objective, from numpy.
    A = _augmented(data.X, True)
    assert _rel(sol.objective, _np_tsvm_objective(A, data.y, y_u, lam, lam_u, w)) < 1e-12
    # No single pair switch at w lowers the objective (brute force over all pairs).
    decrease, base = _best_switch_decrease(problem, w, y_u)
    assert decrease <= 1e-12 * max(1.0, base)
    # w is the exact optimum for the final labels.
    ref = _inner_reference(problem, y_u)
    assert _rel(sol.objective, ref.objective) < 1e-7
    inner = problem.inner_problem(sol)
    assert _rel(inner.objective({"w": w}), ref.objective) < 1e-7
    cert = ssl_opt.certify(problem, sol)
    assert cert.passed, cert.report()


def test_tsvm_multiple_switching_needs_fewer_retrainings():
    """Warm start at the target λ' with every unlabeled label wrong: many pairs must switch."""
    data = gaussian_blobs(n=60, n_labeled=6, d=3, separation=3.0, seed=1)
    problem = TSVM(data.X, data.y, 0.05, 1.0, r=0.5)
    labeled = ssl_opt.solve(LinearSVM(data.X[:6], data.y, 0.05), solver="cvxpy")
    o_u = _augmented(data.X[6:], True) @ labeled.x["w"]
    wrong = np.where(o_u < np.median(o_u), 1.0, -1.0)  # the worst balanced labeling
    start = {"w": labeled.x["w"], "y_u": wrong}
    one = ssl_opt.solve(problem, solver="tsvm", S=1, warm_start=start)
    many = ssl_opt.solve(problem, solver="tsvm", S=10_000, warm_start=start)
    assert one.info["switches"] > 1 and many.info["switches"] > 1
    assert many.info["retrains"] < one.info["retrains"]
    for sol in (one, many):
        decrease, base = _best_switch_decrease(problem, sol.x["w"], sol.x["y_u"])
        assert decrease <= 1e-12 * max(1.0, base)
        assert int((sol.x["y_u"] > 0).sum()) == problem.n_pos
        assert _rel(sol.objective, _inner_reference(problem, sol.x["y_u"]).objective) < 1e-7


def test_tsvm_default_path_with_switches_large_S_not_slower():
    data = gaussian_blobs(n=100, n_labeled=4, d=10, separation=1.0, seed=1)
    problem = TSVM(data.X, data.y, 0.01, 1.0, r=0.5)
    one = ssl_opt.solve(problem, solver="tsvm", S=1)
    many = ssl_opt.solve(problem, solver="tsvm", S=10_000)
    assert one.info["switches"] > 0 and many.info["switches"] > 0
    assert many.info["retrains"] <= one.info["retrains"]


@pytest.mark.parametrize("bad_labels", ["all_positive", "zero_label"])
def test_tsvm_warm_start_labels_are_validated_or_rebalanced(bad_labels):
    data = gaussian_blobs(n=18, n_labeled=8, d=3, seed=3)
    problem = TSVM(data.X, data.y, 0.1, 1.0, r=0.5)
    y_u = np.ones(10) if bad_labels == "all_positive" else np.r_[np.ones(5), -np.ones(4), 0.0]
    try:
        sol = ssl_opt.solve(problem, solver="tsvm", warm_start={"w": np.zeros(4), "y_u": y_u})
    except InvalidInputError:
        return  # rejecting the start is fine
    assert set(np.unique(sol.x["y_u"])) <= {-1.0, 1.0}
    assert int((sol.x["y_u"] > 0).sum()) == 5 or sol.status != OPTIMAL


def _tiny_tsvm(seed=0, u=6):
    data = gaussian_blobs(n=8 + u, n_labeled=8, d=3, separation=2.0, seed=seed)
    return data, TSVM(data.X, data.y, 0.1, 1.0, r=0.5)


@pytest.mark.parametrize("seed", [0, 4])
def test_exhaustive_reference_equals_own_enumeration(seed):
    data, problem = _tiny_tsvm(seed)
    values = {}
    for positives in combinations(range(problem.u), 3):
        y_u = -np.ones(problem.u)
        y_u[list(positives)] = 1.0
        values[positives] = _inner_reference(problem, y_u).objective
    assert len(values) == 20
    best = min(values.values())
    ex = ssl_opt.solve(problem, solver="tsvm-exhaustive")
    assert ex.status == OPTIMAL and ex.info["labelings"] == 20
    assert _rel(ex.objective, best) < 1e-7
    # Its point is a balanced labeling and attains the value claimed.
    A = _augmented(data.X, True)
    assert int((ex.x["y_u"] > 0).sum()) == 3
    assert _rel(_np_tsvm_objective(A, data.y, ex.x["y_u"], 0.1, 1.0, ex.x["w"]), best) < 1e-7
    # The heuristic can never beat the global optimum.
    for S in (1, 10_000):
        sol = ssl_opt.solve(problem, solver="tsvm", S=S)
        assert sol.objective >= best - 1e-9
    # DA's target has the same global optimum when r·u is integral [001 §3.2].
    da_problem = DAS3VM(data.X, data.y, 0.1, 1.0, r=0.5)
    ex_da = ssl_opt.solve(da_problem, solver="tsvm-exhaustive")
    assert _rel(ex_da.objective, best) < 1e-7
    assert float(ex_da.x["T"]) == 0.0 and set(np.unique(ex_da.x["p"])) <= {0.0, 1.0}
    cert = ssl_opt.certify(da_problem, ex_da)
    assert cert.passed, cert.report()
    # At T = 0, p must solve the linear program min Σ p_j g_j over balanced p (brute force):
    # the reversed labeling is feasible but not optimal for the optimum's w.
    w = ex_da.x["w"]
    o_u = A[problem.l:] @ w
    g = _l2(o_u) - _l2(-o_u)
    p_bad = 1.0 - ex_da.x["p"]
    lp_min = min(g[list(c)].sum() for c in combinations(range(problem.u), 3))
    x_bad = {"w": w, "p": p_bad, "T": np.array(0.0)}
    J = da_problem.objective(x_bad)
    expected = 0.5 * (1.0 / problem.u) * (g @ p_bad - lp_min) / max(1.0, J)
    assert expected > 1e-3
    bad = ssl_opt.certify(da_problem, x_bad, reference=False)
    assert "p_optimality" in _failed(bad)
    assert _rel(bad.residuals["p_optimality"], expected) < 1e-9


# -------------------------------------------------------------------------- label switching


def _l2_switch_gain(o):
    """``l2(−o) − l2(o)`` written out: the loss change of relabeling +1 → −1 at output o."""
    return np.maximum(0.0, 1.0 + o) ** 2 - np.maximum(0.0, 1.0 - o) ** 2


def _switch_count_reference(y_u, o_u, max_pairs):
    """Max k with (k-th smallest positive output) < (k-th largest negative output), capped."""
    pos = sorted(o for o, y in zip(o_u, y_u, strict=True) if y > 0)
    neg = sorted((o for o, y in zip(o_u, y_u, strict=True) if y < 0), reverse=True)
    k = 0
    while k < min(len(pos), len(neg)) and pos[k] < neg[k]:
        k += 1
    return min(k, max_pairs)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), u=st.integers(1, 30), cap=st.integers(1, 6))
def test_switch_labels_against_brute_force(seed, u, cap):
    rng = np.random.default_rng(seed)
    o_u = rng.normal(0.0, 1.5, u)
    y_u = np.where(rng.random(u) < 0.5, 1.0, -1.0)
    expected_all = _switch_count_reference(y_u, o_u, u)
    # S large: every improving pair switches ...
    z = y_u.copy()
    count = switch_labels(z, o_u, 10_000, _l2_switch_gain)
    assert count == expected_all
    assert z.sum() == y_u.sum()  # balance preserved
    assert int((z != y_u).sum()) == 2 * count
    # ... and the result is the best labeling with that many positives at fixed outputs:
    # every positive output above every negative one.
    if (z > 0).any() and (z < 0).any():
        assert o_u[z > 0].min() > o_u[z < 0].max()
    # The switched positives are the smallest positive outputs, the negatives the largest.
    flipped_pos = np.flatnonzero((y_u > 0) & (z < 0))
    pos_sorted = np.sort(o_u[y_u > 0])
    np.testing.assert_array_equal(np.sort(o_u[flipped_pos]), pos_sorted[:count])
    # S caps the number of pairs.
    z = y_u.copy()
    assert switch_labels(z, o_u, cap, _l2_switch_gain) == _switch_count_reference(y_u, o_u, cap)
    assert z.sum() == y_u.sum()


def test_switch_labels_with_one_class_or_no_improvement():
    o = np.array([2.0, 1.0, -1.0, -2.0])
    y = np.array([1.0, 1.0, -1.0, -1.0])  # already ordered: nothing improves
    z = y.copy()
    assert switch_labels(z, o, 10, _l2_switch_gain) == 0
    np.testing.assert_array_equal(z, y)
    z = np.ones(4)
    assert switch_labels(z, o, 10, _l2_switch_gain) == 0
    z = -y  # fully reversed: both pairs improve
    assert switch_labels(z, o, 10, _l2_switch_gain) == 2
    np.testing.assert_array_equal(z, y)


# --------------------------------------------------------------------- DA S3VM [001 §3.2]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), u=st.integers(1, 40), log_T=st.floats(-3, 1.5),
       r=st.floats(0.02, 0.98))
def test_balance_root_matches_brentq(seed, u, log_T, r):
    rng = np.random.default_rng(seed)
    g = rng.normal(0.0, 2.0, u)
    T = 10.0**log_T
    p, s = balance_root(g, T, r)
    assert abs(p.mean() - r) <= 1e-10
    np.testing.assert_allclose(p, expit((s - g) / T), rtol=1e-12, atol=1e-15)

    def h(v):
        return float(np.mean(expit((v - g) / T))) - r

    ref = brentq(h, g.min() - 60 * T - 1, g.max() + 60 * T + 1, xtol=1e-15,
                 rtol=4 * np.finfo(float).eps, maxiter=1000)
    np.testing.assert_allclose(p, expit((ref - g) / T), atol=1e-9)
    # A seed anywhere gives the same root.
    p2, _ = balance_root(g, T, r, s0=s + 0.3)
    np.testing.assert_allclose(p2, p, atol=1e-9)


def test_das3vm_objectives_against_numpy():
    data = gaussian_blobs(n=20, n_labeled=6, d=3, seed=2)
    problem = DAS3VM(data.X, data.y, 0.2, 1.5, r=0.4)
    rng = np.random.default_rng(0)
    A = _augmented(data.X, True)
    for _ in range(3):
        w = rng.normal(0, 0.5, A.shape[1])
        p = rng.uniform(0.01, 0.99, problem.u)
        o = A @ w
        l, u = problem.l, problem.u
        target = (0.1 * w @ w + _l2(data.y * o[:l]).sum() / (2 * l)
                  + 1.5 * (p @ _l2(o[l:]) + (1 - p) @ _l2(-o[l:])) / (2 * u))
        entropy = (p * np.log(p) + (1 - p) * np.log(1 - p)).sum()
        assert _rel(problem.objective({"w": w, "p": p}), target) < 1e-13
        assert _rel(problem.annealing_objective({"w": w, "p": p}, 0.7),
                    target + 0.7 * entropy / (2 * u)) < 1e-13
        np.testing.assert_allclose(problem.closed_form_p(o[l:], 0.7),
                                   _my_closed_form_p(o[l:], 1.5, 0.4, 0.7), atol=1e-9)
    # At binary p the target is the TSVM objective.
    y_u = np.where(rng.random(problem.u) < 0.5, 1.0, -1.0)
    assert _rel(problem.objective({"w": w, "p": (y_u > 0).astype(float)}),
                _np_tsvm_objective(A, data.y, y_u, 0.2, 1.5, w)) < 1e-13


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_das3vm_gradient_against_numpy_and_finite_differences(sparse, bias):
    """The gradient of the T = 0 objective [001 eq. 7] from the formula with
    ``l2'(z) = −2(1 − z)₊`` on the dense ``X̃`` built here, and central differences of the
    numpy objective along random directions (``p`` also outside [0, 1], where the objective
    is still defined: it is linear in ``p``)."""
    X, y, _ = _svm_instance(5, n=24, d=4, sparse=sparse)
    l, lam, lam_u = 10, 0.2, 1.5
    y_l = y[:l]
    problem = DAS3VM(X, y_l, lam, lam_u, r=0.4, bias=bias)
    A = _augmented(X, bias)
    u = A.shape[0] - l

    def objective(w, p):
        o = A @ w
        return (0.5 * lam * w @ w + _l2(y_l * o[:l]).sum() / (2 * l)
                + lam_u * (p @ _l2(o[l:]) + (1 - p) @ _l2(-o[l:])) / (2 * u))

    def dl2(z):
        return -2.0 * np.maximum(0.0, 1.0 - z)

    rng = np.random.default_rng(3)
    h = 1e-6
    for _ in range(4):
        w = rng.normal(0, 0.7, A.shape[1])
        p = rng.uniform(-0.5, 1.5, u)
        o = A @ w
        d_o = np.concatenate([y_l * dl2(y_l * o[:l]) / (2 * l),
                              lam_u * (p * dl2(o[l:]) - (1 - p) * dl2(-o[l:])) / (2 * u)])
        expected = {"w": lam * w + A.T @ d_o,
                    "p": lam_u * (_l2(o[l:]) - _l2(-o[l:])) / (2 * u)}
        grad = problem.gradient({"w": w, "p": p})
        assert set(grad) == {"w", "p"}
        for key in expected:
            np.testing.assert_allclose(grad[key], expected[key], rtol=1e-12, atol=1e-14)
        for key, value in (("w", w), ("p", p)):
            d = rng.standard_normal(value.shape)
            args_plus = {"w": w, "p": p, key: value + h * d}
            args_minus = {"w": w, "p": p, key: value - h * d}
            fd = (objective(**args_plus) - objective(**args_minus)) / (2 * h)
            assert abs(fd - grad[key] @ d) < 1e-7 * max(1.0, abs(fd)), (key, fd, grad[key] @ d)


@pytest.mark.parametrize("seed", [0, 1, 3])
def test_da_solution_is_in_closed_form_and_certified(seed):
    data = gaussian_blobs(n=18, n_labeled=8, d=3, seed=seed)
    problem = DAS3VM(data.X, data.y, 0.1, 1.0, r=0.5)
    sol = ssl_opt.solve(problem, solver="da")
    w, p, T = sol.x["w"], sol.x["p"], float(sol.x["T"])
    assert T > 0
    o_u = _augmented(data.X, True)[problem.l:] @ w
    np.testing.assert_allclose(p, _my_closed_form_p(o_u, 1.0, 0.5, T), atol=1e-8)
    np.testing.assert_allclose(p, problem.closed_form_p(o_u, T), atol=1e-8)
    assert abs(p.mean() - 0.5) < 1e-10 and p.min() >= 0 and p.max() <= 1
    # w is the optimum for p: CVXPY on the stacked problem built here.
    l, u = problem.l, problem.u
    rows = np.r_[np.arange(l), np.arange(l, l + u), np.arange(l, l + u)]
    labels = np.r_[data.y, np.ones(u), -np.ones(u)]
    costs = np.r_[np.full(l, 1 / l), p / u, (1 - p) / u]
    ref = ssl_opt.solve(LinearSVM(data.X[rows], labels, 0.1, cost=costs), solver="cvxpy")
    assert _rel(_np_svm_objective(_augmented(data.X[rows], True), labels, costs, 0.1, w),
                ref.objective) < 1e-7
    # The T = 0 target can never be below the global optimum (enumeration).
    ex = ssl_opt.solve(problem, solver="tsvm-exhaustive")
    assert sol.objective >= ex.objective - 1e-9
    cert = ssl_opt.certify(problem, sol)
    assert cert.passed, cert.report()


def test_da_finds_global_optimum_where_tsvm_gets_stuck():
    data = gaussian_blobs(n=18, n_labeled=8, d=3, seed=3)
    tsvm_problem = TSVM(data.X, data.y, 0.1, 1.0, r=0.5)
    da_problem = DAS3VM(data.X, data.y, 0.1, 1.0, r=0.5)
    tsvm = ssl_opt.solve(tsvm_problem, solver="tsvm")
    da = ssl_opt.solve(da_problem, solver="da")
    ex = ssl_opt.solve(tsvm_problem, solver="tsvm-exhaustive")
    # TSVM is block-optimal yet clearly above the global optimum ...
    assert tsvm.objective > ex.objective * 1.3
    assert ssl_opt.certify(tsvm_problem, tsvm).passed
    # ... while DA reaches it, both as its own target and in TSVM terms (its labels).
    assert _rel(da.objective, ex.objective) < 1e-6
    assert da.objective <= tsvm.objective
    A = _augmented(data.X, True)
    y_u = np.where(A[8:] @ da.x["w"] >= np.median(A[8:] @ da.x["w"]), 1.0, -1.0)
    assert int((y_u > 0).sum()) == 5
    assert _rel(_np_tsvm_objective(A, data.y, y_u, 0.1, 1.0, da.x["w"]), ex.objective) < 1e-6
    np.testing.assert_array_equal(y_u, ex.x["y_u"])


# ------------------------------------------------------------ certificates can fail [§4.2]


def test_linear_svm_certificate_fails_for_perturbed_w():
    X, y, cost = _svm_instance(0)
    problem = LinearSVM(X, y, 0.1, cost=cost)
    ref = ssl_opt.solve(problem, solver="cvxpy")
    sol = ssl_opt.solve(problem, solver="mfn")
    bad = {"w": sol.x["w"] + 1e-3 * np.random.default_rng(0).normal(size=sol.x["w"].size)}
    cert = ssl_opt.certify(problem, bad, reference=ref)
    assert not cert.passed
    assert {"stationarity", "objective_gap"} <= _failed(cert)
    nan = ssl_opt.certify(problem, {"w": np.full(sol.x["w"].size, np.nan)}, reference=ref)
    assert not nan.passed and "finite" in _failed(nan)


@pytest.fixture(scope="module")
def tsvm_setup():
    data = gaussian_blobs(n=18, n_labeled=8, d=3, seed=3)
    problem = TSVM(data.X, data.y, 0.1, 1.0, r=0.5)
    return data, problem, ssl_opt.solve(problem, solver="tsvm")


def test_tsvm_certificate_fails_for_perturbed_w(tsvm_setup):
    _, problem, sol = tsvm_setup
    bad = {"w": sol.x["w"] + 0.05, "y_u": sol.x["y_u"]}
    cert = ssl_opt.certify(problem, bad, reference=False)
    assert not cert.passed
    assert {"stationarity", "inner_objective_gap"} <= _failed(cert)


def test_tsvm_certificate_fails_for_improving_switch(tsvm_setup):
    data, problem, sol = tsvm_setup
    A = _augmented(data.X, True)
    o_u = A[problem.l:] @ sol.x["w"]
    y_u = np.where(o_u < np.median(o_u), 1.0, -1.0)  # the worst balanced labeling
    w = _inner_reference(problem, y_u).x["w"]  # ... with w optimal for it
    decrease, base = _best_switch_decrease(problem, w, y_u)
    assert decrease > 1e-3  # precondition: an improving pair exists (brute force)
    cert = ssl_opt.certify(problem, {"w": w, "y_u": y_u}, reference=False)
    assert _failed(cert) == {"switch_gain"}, cert.report()
    assert _rel(cert.residuals["switch_gain"], decrease / max(1.0, base)) < 1e-9


def test_tsvm_certificate_fails_for_unbalanced_labels(tsvm_setup):
    _, problem, sol = tsvm_setup
    y_u = sol.x["y_u"].copy()
    y_u[np.flatnonzero(y_u < 0)[0]] = 1.0  # one positive too many
    w = _inner_reference(problem, y_u).x["w"]
    cert = ssl_opt.certify(problem, {"w": w, "y_u": y_u}, reference=False)
    assert "balance" in _failed(cert)
    assert "stationarity" not in _failed(cert)
    assert _rel(cert.residuals["balance"], 1.0 / problem.u) < 1e-12
    frac = sol.x["y_u"] * 0.5  # not ±1
    cert = ssl_opt.certify(problem, {"w": sol.x["w"], "y_u": frac}, reference=False)
    assert "integrality" in _failed(cert)


def test_da_certificate_fails_for_p_off_closed_form():
    data = gaussian_blobs(n=18, n_labeled=8, d=3, seed=3)
    problem = DAS3VM(data.X, data.y, 0.1, 1.0, r=0.5)
    sol = ssl_opt.solve(problem, solver="da")
    T = float(sol.x["T"])
    shift = np.where(np.arange(problem.u) % 2 == 0, 0.05, -0.05)
    p = np.clip(np.full(problem.u, 0.5) + shift, 0, 1)  # balanced, interior, not closed form
    x = {"w": sol.x["w"], "p": p, "T": np.array(T)}
    w = ssl_opt.solve(problem.inner_problem(x), solver="cvxpy").x["w"]  # w optimal for p
    x["w"] = w
    o_u = _augmented(data.X, True)[problem.l:] @ w
    off = float(np.max(np.abs(p - _my_closed_form_p(o_u, 1.0, 0.5, T))))
    assert off > 1e-2
    cert = ssl_opt.certify(problem, x, reference=False)
    assert _failed(cert) == {"p_optimality"}, cert.report()
    assert abs(cert.residuals["p_optimality"] - off) < 1e-8
    unbalanced = dict(x, p=np.clip(p + 0.1, 0, 1))
    assert "balance" in _failed(ssl_opt.certify(problem, unbalanced, reference=False))


# -------------------------------------------------------------------------------- bad input


@pytest.fixture
def data():
    d = gaussian_blobs(n=16, n_labeled=6, d=3, seed=0)
    return d.X, d.y


@pytest.mark.parametrize("cls", [TSVM, DAS3VM])
@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"lam": 0.0}, "lam must be > 0"),
        ({"lam": -1.0}, "lam must be > 0"),
        ({"lam": "1"}, "lam must be a positive real"),
        ({"lam_u": -0.1}, "lam_u must be >= 0"),
        ({"lam_u": np.nan}, "lam_u"),
        ({"r": 0.0}, r"r \(fraction"),
        ({"r": 1.0}, r"r \(fraction"),
        ({"r": 1.5}, r"r \(fraction"),
        ({"r": -0.2}, r"r \(fraction"),
        ({"bias": 1}, "bias must be True or False"),
        ({"bias": "yes"}, "bias must be True or False"),
    ],
)
def test_transductive_bad_parameters(data, cls, kwargs, match):
    X, y = data
    args = {"lam": 0.1, "lam_u": 1.0, "r": 0.5, "bias": True}
    args.update(kwargs)
    with pytest.raises(InvalidInputError, match=match):
        cls(X, y, **args)


@pytest.mark.parametrize("kwargs", [{"lam_u": "1"}, {"r": "0.5"}])
def test_transductive_rejects_string_parameters(data, kwargs):
    X, y = data
    args = {"lam": 0.1, "lam_u": 1.0, "r": 0.5}
    args.update(kwargs)
    with pytest.raises(InvalidInputError):
        TSVM(X, y, **args)


@pytest.mark.parametrize("cls", [TSVM, DAS3VM])
def test_transductive_bad_data(data, cls):
    X, y = data
    with pytest.raises(InvalidInputError, match="no unlabeled rows"):
        cls(X[:6], y, 0.1, 1.0)
    with pytest.raises(InvalidInputError, match="only -1 and \\+1"):
        cls(X, np.r_[y[:-1], 0.0], 0.1, 1.0)
    with pytest.raises(InvalidInputError, match="one class only"):
        cls(X, np.ones(6), 0.1, 1.0)
    with pytest.raises(InvalidInputError, match="X contains NaN"):
        cls(np.where(np.eye(16, 3, dtype=bool), np.nan, X), y, 0.1, 1.0)
    with pytest.raises(InvalidInputError, match="X contains NaN"):
        cls(sp.csr_matrix(np.where(np.eye(16, 3, dtype=bool), np.inf, X)), y, 0.1, 1.0)
    with pytest.raises(InvalidInputError, match="only 16 points"):
        cls(X, np.r_[y, y, y], 0.1, 1.0)


def test_linear_svm_bad_input(data):
    X, y = data
    with pytest.raises(InvalidInputError, match="lam must be > 0"):
        LinearSVM(X, y, 0.0)
    with pytest.raises(InvalidInputError, match="lam must be > 0"):
        LinearSVM(X, y, -2.0)
    with pytest.raises(InvalidInputError, match="only -1 and \\+1"):
        LinearSVM(X, np.r_[y[:-1], 2.0], 0.1)
    with pytest.raises(InvalidInputError, match="one class only"):
        LinearSVM(X, -np.ones(5), 0.1)
    with pytest.raises(InvalidInputError, match=r"cost must have shape \(6,\)"):
        LinearSVM(X, y, 0.1, cost=np.ones(5))
    with pytest.raises(InvalidInputError, match=r"cost must have shape"):
        LinearSVM(X, y, 0.1, cost=np.ones((6, 1)))
    with pytest.raises(InvalidInputError, match="non-negative"):
        LinearSVM(X, y, 0.1, cost=np.r_[np.ones(5), -1.0])
    with pytest.raises(InvalidInputError, match="non-negative"):
        LinearSVM(X, y, 0.1, cost=np.r_[np.ones(5), np.nan])
    with pytest.raises(InvalidInputError, match="X contains NaN"):
        LinearSVM(np.where(np.eye(16, 3, dtype=bool), np.nan, X), y, 0.1)
    with pytest.raises(InvalidInputError, match="bias must be True or False"):
        LinearSVM(X, y, 0.1, bias=None)
    with pytest.raises(InvalidInputError, match="X must be 2-D"):
        LinearSVM(X[:, 0], y, 0.1)
    assert LinearSVM(X, y, 0.1, bias=np.bool_(False)).design.dim == 3
    assert issubclass(InvalidInputError, ValueError)


def test_solver_options_and_capabilities_are_checked(data):
    X, y = data
    svm = LinearSVM(X, y, 0.1)
    with pytest.raises(InvalidInputError, match=r"unknown option\(s\) \['tolerance'\]"):
        ssl_opt.solve(svm, solver="mfn", tolerance=1e-3)
    tsvm = TSVM(X, y, 0.1, 1.0)
    with pytest.raises(InvalidInputError, match="S must be >= 1"):
        ssl_opt.solve(tsvm, solver="tsvm", S=0)
    with pytest.raises(InvalidInputError, match="unknown option"):
        ssl_opt.solve(tsvm, solver="tsvm", s=2)
    da = DAS3VM(X, y, 0.1, 1.0)
    with pytest.raises(InvalidInputError, match="anneal_rate must be > 1"):
        ssl_opt.solve(da, solver="da", anneal_rate=1.0)
    with pytest.raises(UnsupportedProblemError, match="problem type TSVM"):
        ssl_opt.solve(tsvm, solver="mfn")
    with pytest.raises(UnsupportedProblemError, match="cannot solve this LinearSVM.*TSVM"):
        ssl_opt.solve(svm, solver="tsvm")


@pytest.mark.parametrize("solver,options,match", [
    ("mfn", {"tol": -1e-3}, "tol must be >= 0"),
    ("mfn", {"max_iter": 1.5}, "max_iter must be an integer"),
    ("mfn", {"cg_max_iter": -1}, "cg_max_iter must be >= 0"),
    ("mfn", {"forcing": -0.1}, "forcing must be >= 0"),
    ("tsvm", {"S": 2.0}, "S must be an integer"),
    ("tsvm", {"lam_u_start": 0.0}, "lam_u_start must be > 0"),
    ("tsvm", {"lam_u_factor": 1.0}, "lam_u_factor must be > 1"),
    ("tsvm", {"mfn_max_iter": -2}, "mfn_max_iter must be >= 0"),
    ("tsvm", {"max_retrain": "many"}, "max_retrain must be an integer"),
    ("tsvm", {"verbose": 1}, "verbose must be True or False"),
    ("da", {"T0_factor": 0.0}, "T0_factor must be > 0"),
    ("da", {"anneal_rate": 0.5}, "anneal_rate must be > 1"),
    ("da", {"kl_tol": -1.0}, "kl_tol must be >= 0"),
    ("da", {"entropy_tol": float("inf")}, "entropy_tol"),
    ("da", {"max_outer": 0}, "max_outer must be >= 1"),
    ("da", {"max_inner": 0}, "max_inner must be >= 1"),
    ("da", {"polish_tol": -1.0}, "polish_tol must be >= 0"),
    ("da", {"tol": "small"}, "tol must be a real number"),
])
def test_solver_options_are_checked_by_name(data, solver, options, match):
    X, y = data
    problem = {"mfn": LinearSVM(X[:6], y, 0.1), "tsvm": TSVM(X, y, 0.1, 1.0),
               "da": DAS3VM(X, y, 0.1, 1.0)}[solver]
    with pytest.raises(InvalidInputError, match=match):
        ssl_opt.solve(problem, solver=solver, **options)


def test_tsvm_switch_gain_is_the_l2_loss_change():
    rng = np.random.default_rng(0)
    o = rng.normal(0.0, 2.0, 50)
    data = gaussian_blobs(n=18, n_labeled=8, d=3, seed=3)
    np.testing.assert_array_equal(TSVM(data.X, data.y, 0.1, 1.0).switch_gain(o),
                                  _l2_switch_gain(o))


def test_exhaustive_refuses_large_u():
    big = gaussian_blobs(n=19, n_labeled=6, d=2, seed=0)  # u = 13
    for cls in (TSVM, DAS3VM):
        with pytest.raises(UnsupportedProblemError, match="u = 13 > 12"):
            ssl_opt.solve(cls(big.X, big.y, 0.1, 1.0, r=0.5), solver="tsvm-exhaustive")
    odd = gaussian_blobs(n=13, n_labeled=6, d=2, seed=0)  # u = 7, r·u = 3.5
    with pytest.raises(UnsupportedProblemError, match="integral r·u"):
        ssl_opt.solve(DAS3VM(odd.X, odd.y, 0.1, 1.0, r=0.5), solver="tsvm-exhaustive")


def test_da_stops_at_the_entropy_floor_when_r_u_is_fractional():
    """mean(p) = r with r·u = 5.5 keeps one p_j fractional: the mean entropy cannot go below
    h(0.5)/u = log(2)/u, so annealing must stop on that floor, not run every stage."""
    data = gaussian_blobs(n=19, n_labeled=8, d=3, seed=3)
    problem = DAS3VM(data.X, data.y, 0.1, 1.0, r=0.5)
    assert problem.r * problem.u == 5.5
    sol = ssl_opt.solve(problem, solver="da")
    entropy = sol.history["entropy"]
    floor = np.log(2.0) / problem.u
    assert np.all(entropy >= floor - 1e-12)  # the floor is a true lower bound
    assert sol.status == OPTIMAL
    assert sol.info["stages"] < 30
    assert abs(entropy[-1] - floor) < 1e-6
    assert ssl_opt.certify(problem, sol).passed


@pytest.mark.parametrize("lam", [1e-3, 1e-4])
def test_mfn_defaults_converge_on_pcmac_like_text(lam):
    """Every row labeled, as in the PCMAC run where the former defaults (50 steps) stopped
    0.4 % above the optimum (11 % at λ = 1e-4 here): the defaults reach the CVXPY optimum."""
    from ssl_opt.datasets import synthetic_text

    data = synthetic_text(n=800, d=3000, nnz_per_row=55, n_labeled=800, seed=0)
    problem = LinearSVM(data.X, data.y_all, lam)
    ref = ssl_opt.solve(problem, backend="reference")
    sol = ssl_opt.solve(problem, solver="mfn")
    assert sol.status == "optimal"
    assert abs(sol.objective - ref.objective) <= 1e-8 * max(1.0, abs(ref.objective))


def test_mfn_defaults_converge_on_pcmac():
    from ssl_opt.datasets import load_pcmac, shared_data_dir

    folder = shared_data_dir()
    if folder is None or not (folder / "text1.mat").exists():
        pytest.skip("shared data folder with text1.mat is absent")
    data = load_pcmac(0, path=folder)
    problem = LinearSVM(data.X, data.y_all, 1e-3)  # every row labeled
    ref = ssl_opt.solve(problem, backend="reference")
    sol = ssl_opt.solve(problem, solver="mfn")
    assert sol.status == "optimal"
    assert abs(sol.objective - ref.objective) <= 1e-8 * max(1.0, abs(ref.objective))


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_svm_is_a_named_model_the_generic_solvers_take_as_it_is(sparse, bias):
    """LinearSVM is a Model of its two terms (docs/design.md §2a) in the one variable w (the
    bias last): the terms' sum is the formula written out here with numpy, the generic solvers
    apply with no lowering and reach the CVXPY optimum, a plain Model of the same terms lowers
    back to LinearSVM (so mfn applies to it), and the certificate rejects a perturbed point."""
    from ssl_opt.modeling import Model

    X, y, cost = _svm_instance(11, n=50, d=6, sparse=sparse)
    problem = LinearSVM(X, y, 0.2, cost=cost, bias=bias)
    assert isinstance(problem, Model)
    A = _augmented(X, bias)
    assert problem.variables == {"w": (A.shape[1],)}
    w = np.random.default_rng(2).normal(0.0, 0.8, A.shape[1])
    by_hand = _np_svm_objective(A, y, cost, 0.2, w)
    assert _rel(sum(t.value(t.argument.value({"w": w})) for t in problem.terms), by_hand) < 1e-12
    ref = ssl_opt.solve(problem, solver="cvxpy")
    for generic in ("newton-cg", "irls-newton"):
        sol = ssl_opt.solve(problem, solver=generic)
        assert "lowered_to" not in sol.info
        assert sol.status == OPTIMAL and _rel(sol.objective, ref.objective) < 1e-9
        assert ssl_opt.certify(problem, sol, reference=ref).passed
    plain = Model(problem.terms, prediction=problem.prediction_expression)
    lowered = ssl_opt.solve(plain, solver="mfn")
    assert lowered.info["lowered_to"] == "LinearSVM"
    assert _rel(lowered.objective, ref.objective) < 1e-9
    off = {"w": ref.x["w"] + 1e-2}
    assert problem.kkt(off)["stationarity"] > 1e-4


def test_mfn_meets_the_model_certificate_at_any_gradient_scale():
    """mfn's CGLS stops at ‖∇J‖₂ ≤ tol·max(1, λ‖w‖∞) as well as at its relative tolerance, so
    its solution is stationary as the model's certificate measures it (‖∇J‖∞ over the largest
    term gradient), also when ‖X̃ᵀCy‖ is large: many rows, large costs, small λ."""
    rng = np.random.default_rng(8)
    X = sp.random(3000, 200, density=0.05, random_state=8, format="csr")
    y = np.where(rng.random(3000) < 0.5, 1.0, -1.0)
    problem = LinearSVM(X, y, 1e-4, cost=rng.uniform(1.0, 20.0, 3000))
    sol = ssl_opt.solve(problem, solver="mfn")
    assert sol.status == OPTIMAL
    assert problem.kkt(sol)["stationarity"] <= 1e-7


@pytest.mark.parametrize("kind", ["tsvm", "da"])
def test_transductive_stationarity_is_the_inner_models_certificate(kind):
    """TSVM's and DA's ``stationarity`` is a view of the one certificate: the model certificate
    of their convex inner problem (a LinearSVM with the labels or ``p`` fixed; DA's lists every
    unlabeled row twice), computed here through that model, at arbitrary points."""
    data = gaussian_blobs(n=40, n_labeled=10, d=4, seed=6)
    rng = np.random.default_rng(6)
    for bias in (True, False):
        if kind == "tsvm":
            problem = TSVM(data.X, data.y, 0.3, 0.7, bias=bias)
            second = {"y_u": np.where(rng.random(problem.u) < 0.5, 1.0, -1.0)}
        else:
            problem = DAS3VM(data.X, data.y, 0.3, 0.7, bias=bias)
            second = {"p": rng.random(problem.u), "T": np.array(0.0)}
        for _ in range(3):
            x = {"w": rng.normal(0.0, 1.0, problem.design.dim), **second}
            inner = problem.inner_problem(x)
            by_model = inner.kkt({"w": x["w"]})["stationarity"]
            assert _rel(problem.kkt(x)["stationarity"], by_model) < 1e-12


@pytest.mark.parametrize("d", [1, 3])
def test_the_named_form_lowers_in_either_order(d):
    """``1 w[d] + X @ w[:d]`` is the named LinearSVM's outputs written the other way round (and
    with one feature, where both parts read one entry of w): mfn applies through the lowering
    and reaches the CVXPY optimum of the model as written."""
    from ssl_opt.modeling import MarginLossTerm, Model, Ridge, Variable, matmul

    X, y, _ = _svm_instance(13, n=30, d=d)
    w = Variable("w", (d + 1,))
    f = matmul(np.ones((30, 1)), w[d:]) + matmul(X, w[:d])
    model = Model([MarginLossTerm(f, y, "squared_hinge", 0.5), Ridge(w, 0.05)])
    sol = ssl_opt.solve(model, solver="mfn")
    ref = ssl_opt.solve(model, solver="cvxpy")
    assert sol.info["lowered_to"] == "LinearSVM"
    assert _rel(sol.objective, ref.objective) < 1e-9
