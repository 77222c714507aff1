"""LaplacianAssignment: scikit-learn's checks, the optimum of the LASS problem built and solved
directly, label-order invariance, the out-of-sample map against numpy, diagnostics and
parameter validation."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_blobs, make_moons
from sklearn.utils.estimator_checks import parametrize_with_checks

from ssl_opt import solve
from ssl_opt.builders import knn_graph
from ssl_opt.estimators._diagnostics import DegenerateProblemWarning
from ssl_opt.estimators.lass import EXPECTED_FAILED_CHECKS, LaplacianAssignment
from ssl_opt.problems.lass.problem import LASS


@parametrize_with_checks(
    [LaplacianAssignment(), LaplacianAssignment(graph_weights="binary", lam=0.1)],
    expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS.get(type(est).__name__, {}))
def test_sklearn_compatible(estimator, check):
    check(estimator)


# ---------------------------------------------------------------------------- data


def _data(n=60, seed=0, n_labeled=3):
    """Three blobs, ``n_labeled`` labels per class at random positions (interleaved -1)."""
    X, y = make_blobs(n, centers=3, cluster_std=1.2, random_state=seed)
    rng = np.random.default_rng(seed)
    y_semi = np.full(n, -1)
    for c in range(3):
        idx = rng.choice(np.flatnonzero(y == c), n_labeled, replace=False)
        y_semi[idx] = c
    return X, y, y_semi


def _project_simplex(v: np.ndarray) -> np.ndarray:
    """Euclidean projection of one vector onto the simplex by bisection on the threshold τ
    (Σ max(v − τ, 0) = 1), independent of the library's sort-based projection."""
    lo, hi = v.min() - 1.0, v.max()
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if np.maximum(v - mid, 0.0).sum() > 1.0:
            lo = mid
        else:
            hi = mid
    return np.maximum(v - 0.5 * (lo + hi), 0.0)


def _knn_numpy(X_train, X_new, k, exclude_self):
    D = np.sqrt(((X_new[:, None, :] - X_train[None, :, :]) ** 2).sum(-1))
    if exclude_self:
        np.fill_diagonal(D, np.inf)
    ind = np.argsort(D, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(D, ind, axis=1), ind


# ---------------------------------------------------------------------------- optimum


@pytest.mark.parametrize("graph_weights", ["heat", "binary"])
def test_solution_is_the_optimum_of_the_lass_problem(graph_weights):
    X, _, y = _data()
    k, lam = 6, 0.05
    est = LaplacianAssignment(lam=lam, n_neighbors=k, graph_weights=graph_weights,
                              solver="fista").fit(X, y)
    # The problem built by hand: kNN graph of X, G = indicator of the labeled points' class.
    W = knn_graph(X, n_neighbors=k, weights=graph_weights)
    G = np.zeros((X.shape[0], 3))
    lab = np.flatnonzero(y != -1)
    G[lab, y[lab]] = 1.0
    problem = LASS(W, G, lam)
    ref = solve(problem, backend="reference")
    p_star = problem.objective(ref)
    f_est = problem.objective({"Z": est.label_distributions_})
    assert abs(f_est - p_star) <= 1e-6 * max(1.0, abs(p_star))
    assert est.certificate().passed
    np.testing.assert_allclose(est.label_distributions_.sum(axis=1), 1.0, atol=1e-12)
    assert est.label_distributions_.min() >= 0.0
    # Small λ clamps the labels: labeled points keep their class.
    np.testing.assert_array_equal(est.transduction_[lab], y[lab])


def test_precomputed_affinity_equals_knn_graph():
    X, _, y = _data()
    W = knn_graph(X, n_neighbors=6, weights="heat")
    a = LaplacianAssignment(n_neighbors=6).fit(X, y)
    b = LaplacianAssignment().fit(X, y, affinity=W.toarray())
    np.testing.assert_allclose(b.label_distributions_, a.label_distributions_, atol=1e-6)
    with pytest.raises(ValueError, match="affinity"):
        b.predict(X[:3])  # fitted on an affinity: new points need their similarities
    W3 = W[:3].toarray()
    np.testing.assert_array_equal(b.predict(X[:3], affinity=W3),
                                  b.classes_[np.argmax(W3 @ b.label_distributions_, axis=1)])


# ---------------------------------------------------------------------------- labels


def test_label_values_and_order_do_not_matter():
    X, _, y = _data(n=45)
    names = np.array(["zebra", "ant", "moth"])  # sorted: ant, moth, zebra
    rng = np.random.default_rng(3)
    perm = rng.permutation(X.shape[0])
    y_str = np.array([-1 if v == -1 else names[v] for v in y], dtype=object)
    X_new = X[:10] + 0.3
    base = LaplacianAssignment(n_neighbors=5).fit(X, y)
    other = LaplacianAssignment(n_neighbors=5).fit(X[perm], y_str[perm])
    assert list(other.classes_) == ["ant", "moth", "zebra"]
    np.testing.assert_array_equal(other.predict(X_new), names[base.predict(X_new)])
    np.testing.assert_array_equal(other.transduction_, names[base.transduction_[perm]])
    col = [list(other.classes_).index(name) for name in names]  # base column → other column
    np.testing.assert_allclose(other.predict_proba(X_new)[:, col], base.predict_proba(X_new),
                               atol=1e-6)
    np.testing.assert_allclose(other.label_distributions_[:, col],
                               base.label_distributions_[perm], atol=1e-6)


# ---------------------------------------------------------------------------- out of sample


@pytest.mark.parametrize("graph_weights", ["heat", "binary"])
def test_out_of_sample_map_equals_numpy(graph_weights):
    X, _, y = _data()
    k, lam = 5, 0.05
    est = LaplacianAssignment(lam=lam, n_neighbors=k, graph_weights=graph_weights).fit(X, y)
    rng = np.random.default_rng(1)
    X_new = X[rng.choice(X.shape[0], 12)] + rng.normal(scale=0.5, size=(12, 2))
    g = rng.normal(scale=0.3, size=(12, 3))
    # W_new: each new point's k nearest training points, weighted like the training graph
    # (heat width: the mean distance of the training points to their k neighbours).
    dist, ind = _knn_numpy(X, X_new, k, exclude_self=False)
    if graph_weights == "heat":
        sigma = _knn_numpy(X, X, k, exclude_self=True)[0].mean()
        w = np.exp(-dist ** 2 / (2 * sigma ** 2))
    else:
        w = np.ones_like(dist)
    Z = est.label_distributions_
    expected = np.empty((12, 3))
    for i in range(12):
        d = w[i].sum()
        z_bar = w[i] @ Z[ind[i]] / d
        expected[i] = _project_simplex(z_bar + g[i] / (2 * lam * d))
    np.testing.assert_allclose(est.predict_proba(X_new, label_similarity=g), expected,
                               atol=1e-9)
    # g = 0 (the default): the neighbours' weighted average.
    z0 = np.stack([w[i] @ Z[ind[i]] / w[i].sum() for i in range(12)])
    np.testing.assert_allclose(est.predict_proba(X_new), z0, atol=1e-9)
    np.testing.assert_array_equal(est.predict(X_new), est.classes_[z0.argmax(axis=1)])


def test_out_of_sample_with_precomputed_similarities():
    X, _, y = _data()
    est = LaplacianAssignment(lam=0.05).fit(X, y, affinity=knn_graph(X, 6, "binary"))
    rng = np.random.default_rng(2)
    W_new = rng.random((4, X.shape[0])) * (rng.random((4, X.shape[0])) < 0.1)
    W_new[3] = 0.0  # no training neighbour: the argmax of g
    g = np.array([[0, 0, 0], [0.5, 0, 0], [0, 0, 2.0], [0, 1.0, 0.2]])
    Z = est.label_distributions_
    expected = [_project_simplex(W_new[i] @ Z / W_new[i].sum()
                                 + g[i] / (2 * 0.05 * W_new[i].sum())) for i in range(3)]
    expected.append([0.0, 1.0, 0.0])
    np.testing.assert_allclose(est.predict_proba(X[:4], affinity=sp.csr_matrix(W_new),
                                                 label_similarity=g), expected, atol=1e-9)


# ---------------------------------------------------------------------------- diagnostics


def test_warm_start_and_moons_accuracy():
    X, y = make_moons(200, noise=0.08, random_state=0)
    y_semi = np.full(200, -1)
    for c in (0, 1):
        y_semi[np.flatnonzero(y == c)[:2]] = c
    est = LaplacianAssignment(lam=0.01, warm_start=True, solver="admm-split")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateProblemWarning)
        est.fit(X, y_semi)
    assert np.mean(est.transduction_ == y) > 0.95
    first = est.solution_
    est.set_params(lam=0.012).fit(X, y_semi)
    assert est.solution_ is not first and est.certificate().passed


# ---------------------------------------------------------------------------- validation


@pytest.mark.parametrize("params, name", [
    ({"lam": 0.0}, "lam"), ({"lam": -1.0}, "lam"), ({"lam": "a"}, "lam"),
    ({"n_neighbors": 0}, "n_neighbors"), ({"n_neighbors": 2.5}, "n_neighbors"),
    ({"graph_weights": "gauss"}, "graph_weights"), ({"sigma": -1.0}, "sigma"),
    ({"solver": ""}, "solver"), ({"solver": "no-such-solver"}, "no-such-solver"),
    ({"solver_options": [1]}, "solver_options"), ({"warm_start": "yes"}, "warm_start"),
])
def test_bad_parameters_raise_naming_them(params, name):
    X, _, y = _data(n=30)
    with pytest.raises(ValueError, match=name):
        LaplacianAssignment(**params).fit(X, y)


def test_bad_fit_and_predict_arguments():
    X, _, y = _data(n=30)
    with pytest.raises(ValueError, match="affinity"):
        LaplacianAssignment().fit(X, y, affinity=np.zeros((5, 5)))
    with pytest.raises(ValueError, match="-1"):
        LaplacianAssignment().fit(X, np.full(30, -1))
    est = LaplacianAssignment().fit(X, y)
    with pytest.raises(ValueError, match="affinity"):
        est.predict_proba(X[:2], affinity=np.ones((2, 7)))
    with pytest.raises(ValueError, match="label_similarity"):
        est.predict_proba(X[:2], label_similarity=np.ones((2, 2)))
