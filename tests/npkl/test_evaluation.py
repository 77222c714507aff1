"""Tests for the NPKL evaluation tools (ssl_opt.problems.npkl.evaluation) and data
(ssl_opt.datasets.clusters).

Each function is checked against an independent, deliberately naive computation: brute-force
pair counting, exhaustive search over partitions, numpy's own eigenvalues, explicit loops.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import chisquare
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score
from sklearn.neighbors import KNeighborsClassifier

from ssl_opt.datasets import Dataset
from ssl_opt.datasets.clusters import (
    chessboard,
    double_spiral,
    load_iris_data,
    load_wine_data,
    pairwise_constraints,
    paper_constraint_count,
)
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.problems.npkl.evaluation import (
    evaluate_kernel,
    kernel_factor,
    kernel_kmeans,
    nmi,
    pair_accuracy,
)

# ----------------------------------------------------------------------------- metrics


def _pair_accuracy_loop(a, b):
    n = len(a)
    agree = 0
    for i in range(n):
        for j in range(i):
            agree += (a[i] == a[j]) == (b[i] == b[j])
    return agree / (n * (n - 1) / 2)


@pytest.mark.parametrize("seed", range(6))
def test_pair_accuracy_matches_double_loop(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 40))
    a = rng.integers(0, 1 + seed % 4, size=n)
    b = rng.integers(-2, 2, size=n) * 7  # a different label alphabet
    assert pair_accuracy(a, b) == pytest.approx(_pair_accuracy_loop(a, b), abs=1e-12)


def test_pair_accuracy_invariances():
    a = np.array([0, 0, 1, 1, 2, 2])
    assert pair_accuracy(a, (a + 1) % 3) == 1.0
    # point 5 moved into cluster 0: pairs (4,5), (0,5), (1,5) become wrong, 12 of 15 right
    b = np.array([0, 0, 1, 1, 2, 0])
    assert pair_accuracy(a, b) == pytest.approx(_pair_accuracy_loop(a, b))
    assert pair_accuracy(a, b) == pytest.approx(12 / 15)


def _nmi_arithmetic(a, b):
    """NMI = I / ((H(a) + H(b)) / 2) from the contingency table."""
    _, ia = np.unique(a, return_inverse=True)
    _, ib = np.unique(b, return_inverse=True)
    n = len(a)
    P = np.zeros((ia.max() + 1, ib.max() + 1))
    for i, j in zip(ia, ib, strict=True):
        P[i, j] += 1.0 / n
    pa, pb = P.sum(1), P.sum(0)
    nz = P > 0
    mi = np.sum(P[nz] * np.log(P[nz] / np.outer(pa, pb)[nz]))
    ha, hb = -np.sum(pa * np.log(pa)), -np.sum(pb * np.log(pb))
    return mi / ((ha + hb) / 2)


def test_nmi_matches_contingency_formula():
    rng = np.random.default_rng(3)
    for _ in range(5):
        a = rng.integers(0, 3, size=50)
        b = np.where(rng.random(50) < 0.7, a, rng.integers(0, 4, size=50))
        assert nmi(a, b) == pytest.approx(_nmi_arithmetic(a, b), rel=1e-10)
    assert nmi([0, 0, 1, 1], [5, 5, 3, 3]) == pytest.approx(1.0)


# ----------------------------------------------------------------------------- kernel_factor


def test_kernel_factor_reconstructs_psd():
    rng = np.random.default_rng(0)
    B = rng.standard_normal((8, 3))
    A = B @ B.T
    Phi = kernel_factor(A)
    assert Phi.shape == (8, 3)
    np.testing.assert_allclose(Phi @ Phi.T, A, atol=1e-10)
    full = rng.standard_normal((6, 6))
    A = full @ full.T + 0.1 * np.eye(6)
    Phi = kernel_factor(A)
    assert Phi.shape == (6, 6)
    np.testing.assert_allclose(Phi @ Phi.T, A, atol=1e-10)


def test_kernel_factor_clips_negative_eigenvalues():
    rng = np.random.default_rng(1)
    M = rng.standard_normal((7, 7))
    M = M + M.T
    w = np.linalg.eigvalsh(M)
    assert w.min() < 0 < w.max()
    Phi = kernel_factor(M)
    assert Phi.shape[1] == np.sum(w > 1e-10 * w.max())
    P = Phi @ Phi.T
    np.testing.assert_allclose(np.linalg.eigvalsh(P), np.sort(np.maximum(w, 0)), atol=1e-10)
    # The PSD projection: distance to M is the norm of the negative eigenvalues.
    assert np.linalg.norm(M - P) == pytest.approx(np.linalg.norm(w[w < 0]), rel=1e-10)
    # Negative definite: empty factor.
    assert kernel_factor(-np.eye(3)).shape == (3, 0)


def test_kernel_factor_bad_inputs():
    with pytest.raises(InvalidInputError, match="K must be square"):
        kernel_factor(np.ones((3, 2)))
    with pytest.raises(InvalidInputError, match="K must be symmetric"):
        kernel_factor(np.array([[1.0, 2.0], [0.0, 1.0]]))
    with pytest.raises(InvalidInputError, match="K contains NaN"):
        kernel_factor(np.array([[1.0, np.nan], [np.nan, 1.0]]))
    with pytest.raises(InvalidInputError, match="rtol"):
        kernel_factor(np.eye(2), rtol=-1.0)


# ----------------------------------------------------------------------------- kernel k-means


def _kkm_objective(K, labels):
    total = 0.0
    for c in np.unique(labels):
        idx = np.flatnonzero(labels == c)
        total += np.trace(K[np.ix_(idx, idx)]) - K[np.ix_(idx, idx)].sum() / idx.size
    return total


def _best_two_partition(K):
    n = K.shape[0]
    best = np.inf
    for bits in itertools.product((0, 1), repeat=n - 1):
        lab = np.array((0, *bits))
        if lab.min() == lab.max():
            continue
        best = min(best, _kkm_objective(K, lab))
    return best


def _rbf_instance(seed, n=9):
    X = np.random.default_rng(seed).standard_normal((n, 2))
    sq = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    return np.exp(-sq / 2.0)  # RBF kernel: full rank, nonlinear feature space


def _kernel_distances(K, labels):
    """||phi_i - mean_c||^2 for every point i and cluster c, from K alone."""
    D = []
    for c in np.unique(labels):
        idx = np.flatnonzero(labels == c)
        D.append(
            np.diag(K) - 2 * K[:, idx].mean(1) + K[np.ix_(idx, idx)].sum() / idx.size**2
        )
    return np.stack(D, axis=1)


@pytest.mark.parametrize("seed", [0, 1, 4])
def test_kernel_kmeans_attains_exhaustive_optimum(seed):
    K = _rbf_instance(seed)
    labels = kernel_kmeans(K, n_clusters=2, n_init=50, seed=seed)
    assert labels.shape == (9,) and set(labels.tolist()) == {0, 1}
    assert _kkm_objective(K, labels) == pytest.approx(_best_two_partition(K), rel=1e-9)


@pytest.mark.parametrize("seed", range(5))
def test_kernel_kmeans_is_a_lloyd_fixed_point(seed):
    """Always a local optimum: each point is nearest (in feature space) to its own cluster mean.

    For seeds 2 and 3 the exhaustive optimum is strictly lower: Lloyd's algorithm started from
    any pair of data points (k-means++ always starts from data points) never reaches it, so no
    number of restarts finds it. Kernel k-means is a local method.
    """
    K = _rbf_instance(seed)
    labels = kernel_kmeans(K, n_clusters=2, n_init=50, seed=seed)
    D = _kernel_distances(K, labels)
    _, own = np.unique(labels, return_inverse=True)
    assert np.all(D[np.arange(9), own] <= D.min(axis=1) + 1e-12)
    assert _kkm_objective(K, labels) >= _best_two_partition(K) - 1e-12


def test_kernel_kmeans_K_and_factor_agree():
    rng = np.random.default_rng(5)
    centers = np.array([[0.0, 0.0, 0.0], [4.0, 0.0, 0.0], [0.0, 4.0, 0.0]])
    B = np.repeat(centers, 10, axis=0) + 0.5 * rng.standard_normal((30, 3))
    truth = np.repeat(np.arange(3), 10)
    a = kernel_kmeans(B @ B.T, n_clusters=3, seed=1)
    b = kernel_kmeans(factor=B, n_clusters=3, seed=1)
    assert pair_accuracy(a, b) == 1.0
    assert pair_accuracy(truth, a) == 1.0
    res = evaluate_kernel(B @ B.T, y=truth)
    assert res == {"pair_accuracy": 1.0, "nmi": pytest.approx(1.0)}
    assert evaluate_kernel(factor=B, y=truth)["pair_accuracy"] == 1.0


def test_kernel_kmeans_bad_inputs():
    K = np.eye(4)
    with pytest.raises(InvalidInputError, match="exactly one of K"):
        kernel_kmeans(n_clusters=2)
    with pytest.raises(InvalidInputError, match="exactly one of K"):
        kernel_kmeans(K, factor=np.ones((4, 2)), n_clusters=2)
    with pytest.raises(InvalidInputError, match="n_clusters"):
        kernel_kmeans(K, n_clusters=5)
    with pytest.raises(InvalidInputError, match="n_clusters"):
        kernel_kmeans(K, n_clusters=0)
    with pytest.raises(InvalidInputError, match="n_init"):
        kernel_kmeans(K, n_clusters=2, n_init=0)
    with pytest.raises(InvalidInputError, match="seed"):
        kernel_kmeans(K, n_clusters=2, seed=-1)
    with pytest.raises(InvalidInputError, match="factor"):
        kernel_kmeans(factor=np.ones(4), n_clusters=2)
    with pytest.raises(InvalidInputError, match="y has 3 labels"):
        evaluate_kernel(K, y=[0, 1, 0])
    with pytest.raises(InvalidInputError, match="same length"):
        pair_accuracy([0, 1, 0], [0, 1])
    with pytest.raises(InvalidInputError, match="y_pred must be 1-D"):
        nmi([0, 1], [[0, 1]])


# ----------------------------------------------------------------------------- constraints


def test_paper_constraint_counts():
    assert paper_constraint_count(150) == 180  # iris
    assert paper_constraint_count(178) == 214  # wine
    assert paper_constraint_count(100) == 120  # chessboard (Table 3)
    assert paper_constraint_count(178, "little") == 71
    assert paper_constraint_count(150, setting="little") == 60
    # round half up vs float arithmetic, over a range of n
    for n in range(2, 400):
        assert paper_constraint_count(n) == int(np.floor(4 * n * 0.3 + 0.5 + 1e-9))
    with pytest.raises(InvalidInputError, match="setting"):
        paper_constraint_count(100, "lots")
    with pytest.raises(InvalidInputError, match="n must be"):
        paper_constraint_count(1)


def _check_constraints(y, pairs, labels, m, m_must):
    n = len(y)
    assert pairs.shape == (m, 2) and pairs.dtype == np.int64
    assert labels.shape == (m,)
    assert np.all(pairs[:, 0] < pairs[:, 1])
    assert pairs.min() >= 0 and pairs.max() < n
    assert len({(int(i), int(j)) for i, j in pairs}) == m
    for (i, j), lab in zip(pairs, labels, strict=True):
        assert lab == (1 if y[i] == y[j] else -1)
    assert np.sum(labels == 1) == m_must
    assert np.sum(labels == -1) == m - m_must


def test_pairwise_constraints_on_iris():
    y = load_iris_data().y
    pairs, labels = pairwise_constraints(y, 180, seed=0)
    _check_constraints(y, pairs, labels, 180, 90)
    again = pairwise_constraints(y, 180, seed=0)
    np.testing.assert_array_equal(again[0], pairs)
    np.testing.assert_array_equal(again[1], labels)
    other = pairwise_constraints(y, 180, seed=1)
    assert not np.array_equal(other[0], pairs)


@pytest.mark.parametrize(
    ("m", "frac", "m_must"),
    [(5, 0.5, 3), (7, 0.5, 4), (10, 0.3, 3), (5, 0.3, 2), (6, 0.0, 0), (6, 1.0, 6)],
)
def test_pairwise_constraints_split(m, frac, m_must):
    y = np.array([3, 3, 3, 3, -1, -1, -1, 8, 8, 8])
    pairs, labels = pairwise_constraints(y, m, seed=2, must_link_fraction=frac)
    _check_constraints(y, pairs, labels, m, m_must)


def test_pairwise_constraints_all_pairs_and_float_labels():
    y = np.array([0.0, 0.0, 0.0, 1.0, 1.0])  # 4 must-link pairs, 6 cannot-link pairs
    pairs, labels = pairwise_constraints(y, 8, seed=0)
    _check_constraints(y, pairs, labels, 8, 4)
    pairs, labels = pairwise_constraints(y, 10, seed=0, must_link_fraction=0.4)
    assert {(int(i), int(j)) for i, j in pairs} == set(itertools.combinations(range(5), 2))


@pytest.mark.parametrize(("n_pairs", "frac"), [(2, 0.5), (3, 1 / 3), (6, 0.5)])
def test_pairwise_constraints_uniform(n_pairs, frac):
    """Every admissible pair is drawn, with frequencies consistent with uniformity.

    (2, 0.5) and (3, 1/3) use the rejection sampler; (6, 0.5) requests 3 of 4 must-links
    and 3 of 6 cannot-links, the enumeration path for must-links.
    """
    y = np.array([0, 0, 0, 1, 1])
    n, trials = 5, 400
    counts = {kind: {} for kind in (1, -1)}
    for s in range(trials):
        pairs, labels = pairwise_constraints(y, n_pairs, seed=s, must_link_fraction=frac)
        for (i, j), lab in zip(pairs, labels, strict=True):
            counts[int(lab)][(int(i), int(j))] = counts[int(lab)].get((int(i), int(j)), 0) + 1
    same = {(i, j) for i, j in itertools.combinations(range(n), 2) if y[i] == y[j]}
    diff = set(itertools.combinations(range(n), 2)) - same
    assert set(counts[1]) == same
    assert set(counts[-1]) == diff
    for kind in (1, -1):
        freq = np.array(list(counts[kind].values()))
        assert chisquare(freq).pvalue > 1e-3


def test_pairwise_constraints_uniform_unbalanced_classes():
    """Rejection path with unequal classes: chi-square against the uniform law on pairs."""
    y = np.array([0] * 6 + [1] * 3 + [2])  # must: 15 + 3 = 18 pairs, cannot: 45 - 18 = 27
    must, cannot = {}, {}
    for s in range(300):
        pairs, labels = pairwise_constraints(y, 8, seed=s)
        for (i, j), lab in zip(pairs, labels, strict=True):
            d = must if lab == 1 else cannot
            d[(int(i), int(j))] = d.get((int(i), int(j)), 0) + 1
    assert len(must) == 18 and len(cannot) == 27
    assert chisquare(np.array(list(must.values()))).pvalue > 1e-3
    assert chisquare(np.array(list(cannot.values()))).pvalue > 1e-3


def test_pairwise_constraints_bad_inputs():
    y = np.array([0, 0, 1, 1])
    with pytest.raises(InvalidInputError, match="y must be 1-D"):
        pairwise_constraints(y.reshape(2, 2), 2)
    with pytest.raises(InvalidInputError, match="y must hold integer"):
        pairwise_constraints([0.5, 1.0, 0.0], 2)
    with pytest.raises(InvalidInputError, match="y must hold integer"):
        pairwise_constraints(["a", "b"], 1)
    with pytest.raises(InvalidInputError, match="y holds a single class"):
        pairwise_constraints([2, 2, 2], 2)
    pairs, labels = pairwise_constraints([2, 2, 2], 2, must_link_fraction=1.0)
    assert np.all(labels == 1)
    with pytest.raises(InvalidInputError, match="n_pairs"):
        pairwise_constraints(y, 0)
    with pytest.raises(InvalidInputError, match="n_pairs=6 .* 3 must-link pairs but y admits"):
        pairwise_constraints(y, 6)
    with pytest.raises(InvalidInputError, match="must_link_fraction must be in"):
        pairwise_constraints(y, 2, must_link_fraction=1.5)
    with pytest.raises(InvalidInputError, match="must_link_fraction must be in"):
        pairwise_constraints(y, 2, must_link_fraction=-0.1)
    with pytest.raises(InvalidInputError, match="seed"):
        pairwise_constraints(y, 2, seed=-3)


# ----------------------------------------------------------------------------- data sets


def test_chessboard():
    d = chessboard(100, seed=0)
    assert isinstance(d, Dataset) and d.n_clusters == 2
    # every point's class is known: y is all of y_all, and there is no test set
    assert d.n_labeled == 100 and d.y_all.dtype == np.int64
    np.testing.assert_array_equal(d.y, d.y_all)
    assert d.X_test.shape == (0, 2) and d.y_test.shape == (0,)
    assert d.X.shape == (100, 2) and d.X.dtype == np.float64 and d.y.shape == (100,)
    assert np.bincount(d.y).tolist() == [50, 50]
    assert np.bincount(chessboard(101, seed=0).y).tolist() == [51, 50]
    assert np.all((d.X >= 0) & (d.X < 4))
    # independent parity computation
    np.testing.assert_array_equal(d.y, (np.floor(d.X[:, 0]) + np.floor(d.X[:, 1])) % 2)
    # every cell is used on a larger board
    big = chessboard(800, seed=1)
    assert len({tuple(c) for c in np.floor(big.X).astype(int)}) == 16
    # not linearly separable
    lin = LogisticRegression().fit(big.X, big.y)
    assert lin.score(big.X, big.y) < 0.7
    np.testing.assert_array_equal(chessboard(100, seed=0).X, d.X)
    assert not np.array_equal(chessboard(100, seed=1).X, d.X)


def test_double_spiral():
    d = double_spiral(100, seed=0)
    assert d.X.shape == (100, 2) and d.n_clusters == 2
    assert np.bincount(d.y).tolist() == [50, 50]
    assert np.bincount(double_spiral(101, seed=0).y).tolist() == [51, 50]
    knn = cross_val_score(KNeighborsClassifier(5), d.X, d.y, cv=5).mean()
    lin = cross_val_score(LogisticRegression(), d.X, d.y, cv=5).mean()
    assert knn > 0.95
    assert lin < 0.8
    np.testing.assert_array_equal(double_spiral(100, seed=0).X, d.X)
    assert not np.array_equal(double_spiral(100, seed=1).X, d.X)
    clean = double_spiral(60, noise=0.0, seed=0)
    r = np.linalg.norm(clean.X, axis=1)
    assert r.min() >= 1 / 5 - 1e-12 and r.max() <= 1 + 1e-12


def test_uci_sets():
    iris, wine = load_iris_data(), load_wine_data()
    assert iris.X.shape == (150, 4) and np.bincount(iris.y).tolist() == [50, 50, 50]
    assert wine.X.shape == (178, 13) and np.bincount(wine.y).tolist() == [59, 71, 48]
    assert iris.n_clusters == 3 and wine.n_clusters == 3
    z = load_wine_data(standardize=True).X
    np.testing.assert_allclose(z.mean(0), 0.0, atol=1e-12)
    np.testing.assert_allclose(z.std(0), 1.0, rtol=1e-12)
    np.testing.assert_allclose(z * wine.X.std(0) + wine.X.mean(0), wine.X, rtol=1e-12)
    with pytest.raises(InvalidInputError, match="standardize"):
        load_iris_data(standardize="yes")


def test_generator_bad_inputs():
    with pytest.raises(InvalidInputError, match="n must be"):
        chessboard(1)
    with pytest.raises(InvalidInputError, match="n must be an integer"):
        chessboard(10.5)
    with pytest.raises(InvalidInputError, match="noise"):
        double_spiral(10, noise=-0.1)
    with pytest.raises(InvalidInputError, match="noise"):
        double_spiral(10, noise=float("nan"))
    with pytest.raises(InvalidInputError, match="seed"):
        double_spiral(10, seed="x")


def test_paper_pipeline_on_iris_smoke():
    """Evaluating the raw linear kernel of iris: k-means on iris is known to reach ~0.88 Rand."""
    d = load_iris_data()
    res = evaluate_kernel(factor=d.X, y=d.y, n_init=5)
    assert 0.8 < res["pair_accuracy"] < 0.95
    assert 0.7 < res["nmi"] < 0.85
