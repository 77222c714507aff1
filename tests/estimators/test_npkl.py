"""NPKLKernel: scikit-learn's checks, the learned kernel against the NPKL problem solved directly
by the reference SDP, the factor, the constraint rule for y, out-of-sample against an
independent numpy computation, kernel k-means clustering and bad input."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.datasets import make_blobs
from sklearn.metrics import normalized_mutual_info_score
from sklearn.neighbors import NearestNeighbors, kneighbors_graph
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

import ssl_opt
from ssl_opt.datasets.clusters import double_spiral, pairwise_constraints, paper_constraint_count
from ssl_opt.estimators._diagnostics import DegenerateProblemWarning
from ssl_opt.estimators.npkl import EXPECTED_FAILED_CHECKS, NPKLKernel
from ssl_opt.problems import NPKL


@parametrize_with_checks(
    [NPKLKernel(), NPKLKernel(loss="squared_hinge", graph_weights="heat", n_neighbors=4)],
    expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS.get(type(est).__name__, {}))
def test_sklearn_compatible(estimator, check):
    check(estimator)


# ------------------------------------------------------------------ independent constructions
def knn_similarity(X, k, heat_sigma=None):
    """Union-symmetrized kNN graph from scikit-learn directly (binary or heat weights)."""
    if heat_sigma is None:
        A = kneighbors_graph(X, k, mode="connectivity")
    else:
        A = kneighbors_graph(X, k, mode="distance")
        A.data = np.exp(-A.data**2 / (2.0 * heat_sigma**2))
    return sp.csr_matrix(A.maximum(A.T))


def partly_labeled(y, per_class, seed):
    rng = np.random.default_rng(seed)
    out = np.full(y.shape, -1)
    for c in np.unique(y):
        idx = rng.choice(np.flatnonzero(y == c), per_class, replace=False)
        out[idx] = y[idx]
    return out


@pytest.fixture(scope="module")
def spiral():
    d = double_spiral(n=40, noise=0.03, seed=1)
    pairs, labels = pairwise_constraints(d.y, 24, seed=2)
    return d.X, d.y, pairs, labels


# ------------------------------------------------------------------ against the reference
@pytest.mark.parametrize("loss, solver", [("square", "auto"), ("squared_hinge", "auto"),
                                          ("hinge", "reference")])
def test_kernel_reaches_the_reference_optimum(spiral, loss, solver):
    X, _, pairs, labels = spiral
    C = 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateProblemWarning)
        est = NPKLKernel(C=C, loss=loss, solver=solver, random_state=0).fit(
            X, pairs=pairs, pair_labels=labels)
    # The problem built here: sklearn's kNN graph, δ = (C/2)·l/n, the same pairs.
    delta = 0.5 * C * np.unique(pairs).size / X.shape[0]
    assert est.delta_ == pytest.approx(delta, rel=1e-14)
    problem = NPKL(knn_similarity(X, 5), pairs, labels, C, loss=loss, delta=delta)
    ref = ssl_opt.solve(problem, backend="reference")
    omega_ref = problem.objective(ref.x)
    omega_est = problem.objective({"Z": est.kernel_})
    # The hinge optimum need not be unique (design §4.4): compare objective values.
    assert abs(omega_est - omega_ref) <= 1e-5 * max(1.0, abs(omega_ref))
    assert np.linalg.eigvalsh(est.kernel_)[0] >= -1e-7 * np.abs(est.kernel_).max()


def test_certificate_passes(spiral):
    X, _, pairs, labels = spiral
    est = NPKLKernel(random_state=0).fit(X, pairs=pairs, pair_labels=labels)
    assert est.solution_.solver == "bcd"
    assert est.certificate().passed


@pytest.mark.parametrize("solver", ["auto", "reference"])
def test_factor_reconstructs_the_kernel(spiral, solver):
    X, _, pairs, labels = spiral
    est = NPKLKernel(solver=solver, random_state=0).fit(X, pairs=pairs, pair_labels=labels)
    F, Z = est.factor_, est.kernel_
    scale = np.abs(Z).max()
    tol = 1e-10 if solver == "auto" else 1e-6  # the reference's Z is PSD to solver accuracy
    np.testing.assert_allclose(F @ F.T, Z, atol=tol * scale)
    # Principal axes: orthogonal columns of decreasing norm.
    G = F.T @ F
    np.testing.assert_allclose(G - np.diag(np.diag(G)), 0.0, atol=1e-9 * scale)
    assert np.all(np.diff(np.diag(G)) <= 1e-12 * scale)
    np.testing.assert_array_equal(est.transform(X), F)
    np.testing.assert_array_equal(clone(est).fit_transform(X, pairs=pairs, pair_labels=labels),
                                  F)


# ------------------------------------------------------------------ pairs derived from y
def expected_sample_size(n, n_labeled):
    m = (4 * n * 30 + 50) // 100  # round(4n·30%), halves up [003 §4.2]
    return min(n_labeled, max(s for s in range(2, n + 1) if s * (s - 1) // 2 <= m))


@pytest.mark.parametrize("n, per_class, n_classes", [(60, 10, 3), (90, 2, 3), (45, 15, 3),
                                                     (80, 3, 5)])
def test_pairs_from_y_are_all_pairs_of_a_seeded_sample(n, per_class, n_classes):
    X, y_true = make_blobs(n, centers=n_classes, random_state=0)
    y = partly_labeled(y_true, per_class, seed=3)
    y_str = np.where(y < 0, -1, y * 7 + 100)  # arbitrary label values
    est = NPKLKernel(random_state=5).fit(X, y_str)
    labeled = np.flatnonzero(y >= 0)
    chosen = np.unique(est.pairs_)
    s = expected_sample_size(n, labeled.size)
    assert chosen.size == s
    assert np.isin(chosen, labeled).all()
    assert np.unique(y[chosen]).size == min(s, n_classes)  # every class when s allows
    expected = {(i, j): (1 if y[i] == y[j] else -1)
                for i, j in itertools.combinations(sorted(chosen.tolist()), 2)}
    got = {(int(i), int(j)): int(t) for (i, j), t in zip(est.pairs_, est.pair_labels_,
                                                         strict=True)}
    assert got == expected
    # Seeded: same random_state, same pairs; another one, another sample (when s < l).
    again = NPKLKernel(random_state=5).fit(X, y_str)
    np.testing.assert_array_equal(again.pairs_, est.pairs_)
    if s < labeled.size:
        other = NPKLKernel(random_state=6).fit(X, y_str)
        assert not np.array_equal(np.unique(other.pairs_), chosen)


# ------------------------------------------------------------------ out-of-sample
@pytest.mark.parametrize("weights", ["binary", "heat"])
def test_transform_new_points_is_the_harmonic_extension(weights):
    X, y_true = make_blobs(90, centers=3, cluster_std=0.8, random_state=2)
    X_new = make_blobs(25, centers=3, cluster_std=0.8, random_state=7)[0]
    y = partly_labeled(y_true, 4, seed=0)
    k = 6
    est = NPKLKernel(n_neighbors=k, graph_weights=weights, random_state=0).fit(X, y)
    F, delta = est.factor_, est.delta_
    nn = NearestNeighbors(n_neighbors=k).fit(X)
    sigma = None
    if weights == "heat":
        sigma = nn.kneighbors()[0].mean()
        assert est.sigma_ == pytest.approx(sigma, rel=1e-12)
    S = knn_similarity(X, k, heat_sigma=sigma)
    d = np.asarray(S.sum(axis=1)).ravel()
    # [003 Prop. 1]: an unconstrained training point is the weighted mean of its neighbours,
    # φ_i = (1+δ)⁻¹ Σ_j S_ij φ_j / √(d_i d_j) — the rule transform applies to new points.
    U = np.setdiff1d(np.arange(X.shape[0]), est.pairs_)
    harmonic = (S[U] @ (F / np.sqrt(d)[:, None])) / np.sqrt(d[U])[:, None] / (1 + delta)
    np.testing.assert_allclose(F[U], harmonic, atol=1e-9 * np.abs(F).max())
    # New points: their k nearest training points, the training degrees.
    dist, ind = nn.kneighbors(X_new)
    w = np.ones_like(dist) if sigma is None else np.exp(-dist**2 / (2 * sigma**2))
    expected = np.einsum("mk,mkr->mr", w / np.sqrt(w.sum(1, keepdims=True) * d[ind]), F[ind])
    np.testing.assert_allclose(est.transform(X_new), expected / (1 + delta), rtol=1e-10,
                               atol=1e-12)
    # Training rows inside a batch keep their learned rows.
    mixed = np.vstack([X_new[:3], X[10:12]])
    out = est.transform(mixed)
    np.testing.assert_array_equal(out[3:], F[10:12])
    np.testing.assert_allclose(out[:3], expected[:3] / (1 + delta), rtol=1e-10, atol=1e-12)


def test_sparse_input_gives_the_dense_result():
    X, y_true = make_blobs(50, centers=2, random_state=1)
    y = partly_labeled(y_true, 4, seed=0)
    dense = NPKLKernel(random_state=0).fit(X, y)
    sparse = NPKLKernel(random_state=0).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(sparse.kernel_, dense.kernel_, atol=1e-10)
    X_new = X[:5] + 0.1
    np.testing.assert_allclose(sparse.transform(sp.csr_matrix(X_new)), dense.transform(X_new),
                               atol=1e-10)
    np.testing.assert_array_equal(sparse.transform(sp.csr_matrix(X)), sparse.factor_)


# ------------------------------------------------------------------ clustering
def test_fit_predict_clusters_separated_blobs():
    centers = [[0.0, 0.0], [6.0, 0.0], [0.0, 6.0]]
    X, y_true = make_blobs(150, centers=centers, cluster_std=0.7, random_state=0)
    y = partly_labeled(y_true, 4, seed=1)
    est = NPKLKernel(random_state=0)
    labels = est.fit_predict(X, y)
    np.testing.assert_array_equal(labels, est.labels_)
    assert np.unique(labels).size == 3  # n_clusters from the classes of y
    assert normalized_mutual_info_score(y_true, labels) >= 0.9
    must = est.pairs_[est.pair_labels_ == 1]
    assert np.mean(labels[must[:, 0]] == labels[must[:, 1]]) >= 0.9
    cannot = est.pairs_[est.pair_labels_ == -1]
    assert np.mean(labels[cannot[:, 0]] != labels[cannot[:, 1]]) >= 0.9


def test_fit_predict_with_explicit_pairs():
    # The paper's double spiral protocol: 120 random pairs on 100 points, C = 0.1 [003 Table 3].
    d = double_spiral(n=100, seed=0)
    X, y_true = d.X, d.y
    pairs, labels = pairwise_constraints(y_true, paper_constraint_count(100), seed=0)
    est = NPKLKernel(C=0.1, n_clusters=2, random_state=0)
    pred = est.fit_predict(X, pairs=pairs, pair_labels=labels)
    assert normalized_mutual_info_score(y_true, pred) >= 0.9
    assert not hasattr(est, "classes_")


# ------------------------------------------------------------------ workflow
def test_warm_start_reuses_the_previous_factor(spiral):
    X, _, pairs, labels = spiral
    est = NPKLKernel(C=1.0, warm_start=True, random_state=0)
    est.fit(X, pairs=pairs, pair_labels=labels)
    first = est.solution_
    est.set_params(C=1.1).fit(X, pairs=pairs, pair_labels=labels)
    cold = NPKLKernel(C=1.1, random_state=0).fit(X, pairs=pairs, pair_labels=labels)
    assert est.solution_.iterations < cold.solution_.iterations
    assert est.solution_ is not first
    p = cold.problem_
    assert p.objective({"Z": est.kernel_}) == pytest.approx(p.objective({"Z": cold.kernel_}),
                                                            rel=1e-7)


def test_pipeline_and_inputs_unchanged():
    X, y_true = make_blobs(40, centers=2, random_state=3)
    y = partly_labeled(y_true, 3, seed=0)
    pairs = np.array([[0, 1], [2, 5]])
    pair_labels = np.array([1, -1])
    X0, y0, p0, t0 = X.copy(), y.copy(), pairs.copy(), pair_labels.copy()
    out = make_pipeline(StandardScaler(), NPKLKernel(random_state=0)).fit_transform(X, y)
    assert out.shape[0] == 40
    NPKLKernel().fit(X, pairs=pairs, pair_labels=pair_labels)
    for a, b in [(X, X0), (y, y0), (pairs, p0), (pair_labels, t0)]:
        np.testing.assert_array_equal(a, b)


def test_component_without_constraints_warns():
    X = np.vstack([make_blobs(20, centers=[[0, 0]], random_state=0)[0],
                   make_blobs(20, centers=[[50, 50]], random_state=1)[0]])
    y = np.full(40, -1)
    y[[0, 1, 2, 3]] = [0, 0, 1, 1]
    with pytest.warns(DegenerateProblemWarning, match="no constrained point"):
        est = NPKLKernel(random_state=0).fit(X, y)
    np.testing.assert_allclose(est.factor_[20:], 0.0, atol=1e-12)


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("kwargs, match", [
    ({"pairs": [[0, 40]], "pair_labels": [1]}, "pairs"),
    ({"pairs": [[-1, 3]], "pair_labels": [1]}, "pairs"),
    ({"pairs": [[2, 2]], "pair_labels": [1]}, "pairs"),
    ({"pairs": [[0, 1], [1, 0]], "pair_labels": [1, 1]}, "pairs"),
    ({"pairs": np.empty((0, 2), dtype=int), "pair_labels": []}, "pairs"),
    ({"pairs": [[0, 1]], "pair_labels": [0]}, "pair_labels"),
    ({"pairs": [[0, 1]], "pair_labels": [2.0]}, "pair_labels"),
    ({"pairs": [[0, 1], [2, 3]], "pair_labels": [1]}, "pair_labels"),
    ({"pairs": [[0, 1]]}, "pair_labels"),
    ({"pair_labels": [1]}, "pairs"),
    ({}, "pairs"),
])
def test_bad_constraints_raise_naming_the_argument(kwargs, match):
    X = make_blobs(40, random_state=0)[0]
    with pytest.raises(ValueError, match=match):
        NPKLKernel().fit(X, **kwargs)


@pytest.mark.parametrize("params, match", [
    ({"C": 0.0}, "C"), ({"C": "big"}, "C"), ({"delta": -1.0}, "delta"),
    ({"n_neighbors": 0}, "n_neighbors"), ({"graph_weights": "cosine"}, "graph_weights"),
    ({"rank": 0}, "rank"), ({"n_clusters": 0}, "n_clusters"), ({"solver": ""}, "solver"),
    ({"solver": "no-such-solver"}, "solver"), ({"solver_options": 3}, "solver_options"),
])
def test_bad_parameters_raise_at_fit(params, match):
    X, y = make_blobs(30, random_state=0)
    est = NPKLKernel(**params)  # __init__ only stores
    with pytest.raises(ValueError, match=match):
        est.fit(X, y)


def test_y_without_enough_labels_and_missing_n_clusters():
    X = make_blobs(30, random_state=0)[0]
    y = np.full(30, -1)
    y[4] = 1
    with pytest.raises(ValueError, match="y has 1 labeled"):
        NPKLKernel().fit(X, y)
    with pytest.raises(ValueError, match="n_clusters"):
        NPKLKernel().fit_predict(X, pairs=[[0, 1]], pair_labels=[1])
