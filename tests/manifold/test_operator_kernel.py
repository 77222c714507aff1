"""LapSVM / LapRLS with K a products-only ``LinearOperator`` (issue 18): PCG, its early stopping,
the certificate and the selection never form the n×n kernel; each result is compared with the
same computation on the dense K and with an independent one (Newton, the CVXPY reference, the
8n² of a dense copy)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

import ssl_opt
from ssl_opt.builders import graph_laplacian_from_data, rbf_kernel
from ssl_opt.datasets.synthetic import two_moons
from ssl_opt.exceptions import UnsupportedProblemError
from ssl_opt.problems import LapRLS, LapSVM
from ssl_opt.problems.manifold import problem as manifold_problem
from ssl_opt.selection import measure
from ssl_opt.selection.select import predict
from ssl_opt.solution import EARLY_STOPPED, OPTIMAL


class ProductsOnly(LinearOperator):
    """K through products only; a request for more than ``max_columns`` columns at once (a
    densification such as ``K @ eye(n)``) fails the test."""

    def __init__(self, K, max_columns=None):
        super().__init__(np.float64, K.shape)
        self.M = K
        self.max_columns = max_columns or K.shape[0] // 2
        self.columns_multiplied = 0

    def _matvec(self, v):
        return self._matmat(np.reshape(v, (-1, 1))).ravel()

    def _matmat(self, V):
        assert V.shape[1] <= self.max_columns, f"K densified: {V.shape[1]} columns at once"
        self.columns_multiplied += V.shape[1]
        return self.M @ V

    def _adjoint(self):
        return self


class WithColumns(ProductsOnly):
    """An operator that also gives ``columns(idx)`` and ``diagonal()`` (as KernelOperator)."""

    def __init__(self, K):
        super().__init__(K)
        self.columns_read = 0

    def columns(self, idx):
        self.columns_read += len(idx)
        return self.M[:, idx]

    def diagonal(self):
        return np.diag(self.M).copy()


class LowRank(ProductsOnly):
    """``K = ZZᵀ`` by products ``Z(ZᵀV)`` of at most 4 columns, never stored."""

    def __init__(self, Z):
        LinearOperator.__init__(self, np.float64, (Z.shape[0], Z.shape[0]))
        self.Z, self.max_columns, self.columns_multiplied = Z, 4, 0

    def _matmat(self, V):
        assert V.shape[1] <= self.max_columns, f"K densified: {V.shape[1]} columns at once"
        self.columns_multiplied += V.shape[1]
        return self.Z @ (self.Z.T @ V)


def _data(n=200, n_labeled=8, seed=0):
    data = two_moons(n=n, n_labeled=n_labeled, noise=0.1, seed=seed, n_test=40)
    K = rbf_kernel(data.X, sigma=0.35)
    L = graph_laplacian_from_data(data.X, n_neighbors=6)
    return data, K, L


def _pair(loss, n=200, operator=ProductsOnly, **kwargs):
    data, K, L = _data(n)
    if loss == "squared":
        return (LapRLS(K, L, data.y, 1e-2, 1.0, **kwargs),
                LapRLS(operator(K), L, data.y, 1e-2, 1.0, **kwargs))
    return (LapSVM(K, L, data.y, 1e-2, 1.0, loss=loss, **kwargs),
            LapSVM(operator(K), L, data.y, 1e-2, 1.0, loss=loss, **kwargs))


def _rel(a, b):
    return abs(a - b) / max(1.0, abs(b))


@pytest.mark.parametrize("loss", ["squared_hinge", "squared", "logistic"])
@pytest.mark.parametrize("bias", [True, False])
def test_pcg_on_an_operator_equals_the_dense_solve(loss, bias):
    dense, op = _pair(loss, bias=bias)
    sol_op = ssl_opt.solve(op, solver="pcg", tol=1e-10)
    sol_dense = ssl_opt.solve(dense, solver="pcg", tol=1e-10)
    assert sol_op.status == OPTIMAL
    assert _rel(sol_op.objective, sol_dense.objective) < 1e-10
    exact = ssl_opt.solve(dense, solver="newton")  # independent: dense Newton
    assert _rel(sol_op.objective, exact.objective) < 1e-9
    assert "K_dense" not in vars(op) and op.K.columns_multiplied > 0


@pytest.mark.parametrize("rule", ["stability", "validation", "mixed"])
def test_early_stopped_pcg_on_an_operator_equals_the_dense_run(rule):
    data, K, L = _data(300, n_labeled=4)
    dense = LapSVM(K, L, data.y, 1e-3, 1.0)
    op = LapSVM(ProductsOnly(K), L, data.y, 1e-3, 1.0)
    K_val = rbf_kernel(data.X_test, data.X, sigma=0.35)
    runs = {}
    for name, p, val in (("dense", dense, K_val), ("op", op, ProductsOnly(K_val, 1))):
        options = {} if rule == "stability" else {"validation": (val, data.y_test)}
        runs[name] = ssl_opt.solve(p, solver="pcg", early_stopping=rule, **options)
    assert runs["op"].status == runs["dense"].status == EARLY_STOPPED
    assert runs["op"].iterations == runs["dense"].iterations
    assert _rel(runs["op"].objective, runs["dense"].objective) < 1e-10
    assert "K_dense" not in vars(op)


@pytest.mark.parametrize("operator", [ProductsOnly, WithColumns])
@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_certificate_from_products_equals_the_dense_certificate(loss, operator):
    dense, op = _pair(loss, n=150, operator=operator)
    ref = ssl_opt.solve(dense, backend="reference")  # independent optimum (CVXPY)
    assert ref.status == OPTIMAL
    cert_dense = ssl_opt.certify(dense, ref, reference=ref)
    cert_op = ssl_opt.certify(op, ref, reference=ref)
    assert cert_dense.passed and cert_op.passed, cert_op.report()
    assert cert_op.residuals.keys() == cert_dense.residuals.keys() == {"stationarity"}
    for name, value in cert_dense.residuals.items():
        assert abs(cert_op.residuals[name] - value) <= 1e-8 * max(1.0, value)
    assert "K_dense" not in vars(op)
    if loss == "hinge":  # the kink points exist: the certificate chose their subgradients
        m = dense.y * dense.prediction(ref)[: dense.l]
        kinks = int(np.sum(np.abs(m - 1.0) <= 1e-6))
        assert kinks > 0
        if operator is WithColumns:  # from products K·v alone, no column of K
            assert op.K.columns_read == 0
    # a point off the optimum: the residuals still agree, and now fail
    off = {"alpha": ref.x["alpha"] * 1.01, "b": ref.x["b"]}
    r_dense, r_op = dense.kkt(off)["stationarity"], op.kkt(off)["stationarity"]
    assert r_dense > 1e-6 and abs(r_op - r_dense) <= 1e-8 * r_dense


def test_operator_columns_and_scales_equal_the_dense_entries():
    data, K, L = _data(120)
    idx = np.array([3, 0, 77, 119])
    for operator in (ProductsOnly, WithColumns):
        p = LapSVM(operator(K), L, data.y, 1e-2, 1.0)
        np.testing.assert_array_equal(p.K_columns(idx), K[:, idx])
    blocked = LapSVM(ProductsOnly(K, max_columns=1), L, data.y, 1e-2, 1.0)
    old = manifold_problem.COLUMN_BLOCK_BYTES
    manifold_problem.COLUMN_BLOCK_BYTES = 8 * 120  # one column per product
    try:
        np.testing.assert_array_equal(blocked.K_columns(idx), K[:, idx])
    finally:
        manifold_problem.COLUMN_BLOCK_BYTES = old
    with_diag = LapSVM(WithColumns(K), L, data.y, 1e-2, 1.0)
    assert with_diag.entry_scales[0] == np.max(np.abs(K))
    assert LapSVM(ProductsOnly(K), L, data.y, 1e-2, 1.0).entry_scales[0] == 0.0


def test_select_picks_pcg_when_the_dense_kernel_exceeds_the_budget():
    dense, op = _pair("squared_hinge", n=300)
    n = op.n
    from ssl_opt import registry

    solvers = registry.solvers()
    dense_memory = {name: predict(solvers[name], dense).memory
                    for name in ("newton", "cvxpy")}
    # every dense solver needs its modeled memory + 8n² on the operator: above this budget
    budget = min(dense_memory.values()) + 4.0 * n**2
    sel = ssl_opt.select(op, memory_budget=budget)
    assert sel.solver == "pcg"
    for name, modeled in dense_memory.items():
        assert sel.predicted_memory[name] == pytest.approx(modeled + 8.0 * n**2)
    assert sel.predicted_memory["pcg"] < 1e3 * n  # O(n) vectors
    assert "products-only" in sel.reason and "over the memory limit" in sel.reason
    assert "newton" in sel.reason and "8n²" in sel.reason
    # the dense twin is not affected
    assert ssl_opt.select(dense).predicted_memory["newton"] == pytest.approx(
        dense_memory["newton"])


def test_dense_solvers_refuse_an_operator_that_does_not_fit(monkeypatch):
    data, K, L = _data(100)
    op = LapRLS(ProductsOnly(K, max_columns=100), L, data.y, 1e-2, 1.0)
    monkeypatch.setattr(measure, "available_memory", lambda: 1e4)
    for name in ("newton", "laprls-direct"):
        why = " ".join(ssl_opt.registry.get_solver(name).missing(op))
        assert "products-only operator" in why and "'pcg'" in why
        with pytest.raises(UnsupportedProblemError, match="pcg"):
            ssl_opt.solve(op, solver=name)
    assert ssl_opt.solve(op, solver="pcg").status == OPTIMAL
    monkeypatch.undo()
    exact = ssl_opt.solve(op, solver="laprls-direct")  # small: densified in blocks
    assert exact.status == OPTIMAL


def test_pcg_at_n_100000_with_products_only():
    """A rank-5 kernel operator and a path-graph Laplacian: select names pcg and why; PCG
    and its certificate read K only through products of a few columns."""
    n = 100_000
    Z = np.random.default_rng(0).standard_normal((n, 5)) / 3
    K = LowRank(Z)
    e = np.ones(n)
    L = sp.diags([-e[:-1], np.r_[1.0, 2 * e[2:], 1.0], -e[:-1]], [-1, 0, 1], format="csr")
    y = np.where(Z[:100, 0] > 0, 1.0, -1.0)
    p = LapSVM(K, L, y, 1e-2, 1.0)
    sel = ssl_opt.select(p, memory_budget=2 * 2**30)
    assert sel.solver == "pcg" and "products-only" in sel.reason
    assert sel.predicted_memory["pcg"] < 64 * 2**20
    assert "newton" in sel.unsupported or sel.predicted_memory["newton"] > 2 * 2**30
    sol = ssl_opt.solve(p, solver="pcg", early_stopping="stability", max_iter=200)
    assert sol.status in (OPTIMAL, EARLY_STOPPED)
    assert ssl_opt.certify(p, sol, reference=False).residuals["stationarity"] < np.inf
    assert "K_dense" not in vars(p)
