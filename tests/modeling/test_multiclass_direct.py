"""Multi-output LapRLS models by one factorization (plugins/model/laprls_columns.py): the
solution against the CVXPY reference, against c independently solved binary LapRLS problems and
against a dense solve of the model's own stationarity system; models of another structure are
refused with the term that breaks it."""

from __future__ import annotations

import numpy as np
import pytest

import ssl_opt
from ssl_opt import registry
from ssl_opt.builders import knn_graph, laplacian, rbf_kernel
from ssl_opt.modeling import Model, Variable
from ssl_opt.modeling.terms import L1, GraphQuadratic, Ridge, RKHSNorm, SquaredError
from ssl_opt.modeling.variants import multiclass_laprls, multiclass_simplex
from ssl_opt.problems import LapRLS

SOLVER = "laprls-columns"


def _blobs(n: int, seed: int = 0, ridge: float = 0.0):
    from sklearn.datasets import make_blobs

    X, labels = make_blobs(n_samples=n, centers=3, cluster_std=1.2, random_state=seed)
    first = np.concatenate([np.flatnonzero(labels == k)[:3] for k in range(3)])
    order = np.concatenate([first, np.setdiff1d(np.arange(n), first)])
    X, labels = X[order], labels[order]
    K = rbf_kernel(X, sigma=1.5) + ridge * np.eye(n)
    return K, laplacian(knn_graph(X, n_neighbors=6)), labels, first.size


def _rel(a: float, b: float) -> float:
    return abs(a - b) / max(1.0, abs(b))


@pytest.mark.parametrize("n", [45, 120])
def test_variant_matches_reference_and_is_picked(n):
    model = multiclass_laprls(n)
    assert ssl_opt.select(model, backend="fast").solver == SOLVER
    assert ssl_opt.select(model).solver == SOLVER
    sol = ssl_opt.solve(model, backend="fast")
    assert sol.solver == SOLVER and sol.status == "optimal"
    assert {k: v.shape for k, v in sol.x.items()} == {"alpha": (n, 3), "b": (3,)}
    ref = ssl_opt.solve(model, solver="cvxpy")
    assert _rel(sol.objective, ref.objective) <= 1e-8
    assert ssl_opt.certify(model, sol, reference=ref).passed


def test_equals_c_independent_binary_laprls():
    model = multiclass_laprls(90)
    fit, rkhs, graph = model.terms
    sol = ssl_opt.solve(model, solver=SOLVER)
    for k in range(3):
        binary = LapRLS(rkhs.M, graph.M, fit.target[:, k], rkhs.weight / fit.weight,
                        graph.weight / fit.weight)
        ref = ssl_opt.solve(binary, solver="laprls-direct")
        alpha = sol.x["alpha"][:, k]
        scale = max(1.0, np.abs(ref.x["alpha"]).max())
        assert np.abs(alpha - ref.x["alpha"]).max() <= 1e-8 * scale
        assert abs(sol.x["b"][k] - ref.x["b"]) <= 1e-8 * max(1.0, abs(ref.x["b"]))
        # the model objective is 2w · Σ_k (binary objective)
    total = sum(2 * fit.weight * LapRLS(rkhs.M, graph.M, fit.target[:, k],
                                        rkhs.weight / fit.weight, graph.weight / fit.weight)
                .objective({"alpha": sol.x["alpha"][:, k], "b": sol.x["b"][k]})
                for k in range(3))
    assert _rel(sol.objective, total) <= 1e-12


def _dense_minimizer(model: Model) -> dict:
    """The minimizer of a strictly convex quadratic model from its own gradients: ∇F is
    affine, so H e_j = ∇F(e_j) − ∇F(0) and θ* = −H⁻¹∇F(0)."""
    def grad(theta):
        return model.pack(model.smooth_gradient(model.unpack_flat(theta)))

    g0 = grad(np.zeros(model.size))
    H = np.column_stack([grad(e) - g0 for e in np.eye(model.size)])
    return model.unpack_flat(np.linalg.solve(0.5 * (H + H.T), -g0))


@pytest.mark.parametrize("bias", [True, False])
def test_any_order_names_real_targets_and_no_bias(bias):
    """Terms in another order, other names, one-hot (not ±1) targets, a Ridge-form fit, with
    and without a bias (then with a dense L): against a dense solve of the model's gradient
    system (K + 0.5 I, so that the coefficients are unique) and the reference objective."""
    n = 40
    K, L, labels, l = _blobs(n, seed=3, ridge=0.5)
    L = L if bias else L.toarray()
    onehot = np.eye(3)[labels[:l]]
    W = Variable("W", (n, 3))
    scores = K @ W
    if bias:
        c = Variable("c", (3,))
        scores = scores + c
    model = Model([GraphQuadratic(scores, L, 0.3), Ridge(scores[:l] - onehot, 0.7),
                   RKHSNorm(W, K, 0.02)], prediction=scores)
    sol = ssl_opt.solve(model, backend="fast")
    assert sol.solver == SOLVER and sol.status == "optimal"
    assert set(sol.x) == ({"W", "c"} if bias else {"W"})
    exact = _dense_minimizer(model)
    for name, value in exact.items():
        assert np.abs(sol.x[name] - value).max() <= 1e-8 * max(1.0, np.abs(value).max())
    ref = ssl_opt.solve(model, solver="cvxpy")
    assert _rel(sol.objective, ref.objective) <= 1e-8
    assert ssl_opt.certify(model, sol).passed


def _refusal(model: Model) -> str:
    reasons = registry.get_solver(SOLVER).missing(model)
    assert reasons, "laprls-columns accepted a model of another structure"
    assert ssl_opt.select(model, backend="fast").solver != SOLVER
    return " ".join(reasons)


def test_refuses_an_extra_l1_term_naming_it():
    model = multiclass_laprls(45)
    assert "L1(" in _refusal(model.add(L1(model["alpha"], 1e-3)))


def test_refuses_a_weight_per_class_naming_the_fit():
    K, L, labels, l = _blobs(45)
    A, b = Variable("alpha", (45, 3)), Variable("b", (3,))
    f = K @ A + b
    per_class = np.array([1.0, 2.0, 1.0])  # w_k ‖f_k − t_k‖² with w = (1, 4, 1)·½
    targets = 2.0 * np.eye(3)[labels[:l]] - 1.0
    model = Model([SquaredError(f[:l] * per_class, targets * per_class, 0.5),
                   RKHSNorm(A, K, 0.005), GraphQuadratic(f, L, 0.5)], prediction=f)
    assert "SquaredError(" in _refusal(model)


def test_refuses_another_kernel_or_graph_argument_and_a_constraint():
    K, L, labels, l = _blobs(45)
    A, b = Variable("alpha", (45, 3)), Variable("b", (3,))
    f = K @ A + b
    targets = 2.0 * np.eye(3)[labels[:l]] - 1.0
    other_K = Model([SquaredError(f[:l], targets, 0.5), RKHSNorm(A, K + np.eye(45), 0.005),
                     GraphQuadratic(f, L, 0.5)], prediction=f)
    assert "RKHSNorm(" in _refusal(other_K)
    scaled_graph = Model([SquaredError(f[:l], targets, 0.5), RKHSNorm(A, K, 0.005),
                          GraphQuadratic(f * np.array([1.0, 1.0, 3.0]), L, 0.5)],
                         prediction=f)
    assert "GraphQuadratic(" in _refusal(scaled_graph)
    assert "SimplexRows" in _refusal(multiclass_simplex(45))


def test_binary_laprls_still_lowers_to_laprls_direct():
    K, L, labels, l = _blobs(60)
    y = np.where(labels[:l] == 0, 1.0, -1.0)
    problem = LapRLS(K, L, y, 1e-2, 1.0)
    model = problem  # a named model: a Model of its terms
    assert ssl_opt.select(model, backend="fast").solver == "laprls-direct"
    assert registry.get_solver(SOLVER).missing(model)
    sol = ssl_opt.solve(model, backend="fast")
    direct = ssl_opt.solve(problem, solver="laprls-direct")
    np.testing.assert_array_equal(sol.x["alpha"], direct.x["alpha"])
    # the same single-output model written with SquaredError: refused, naming the shape
    alpha, b = Variable("alpha", (60,)), Variable("b")
    f = K @ alpha + b
    vector = Model([SquaredError(f[:l], y, 0.5), RKHSNorm(alpha, K, 5e-3),
                    GraphQuadratic(f, L, 0.5)], prediction=f)
    assert "is a vector" in _refusal(vector)
