"""ssl_opt.model_selection: the L/U/V/T split of Melacci & Belkin (2011) §6, the labeled-only
cross-validation splitter in GridSearchCV, and the unlabeled / test scores.

Every property is checked against an independent computation: class counts against the
population quotas ``m * n_k / n``, grid-search scores against a hand-written loop over the folds,
scores against :mod:`sklearn.metrics` applied to hand-indexed predictions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.datasets import make_blobs
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, f1_score, log_loss
from sklearn.model_selection import GridSearchCV
from sklearn.semi_supervised import LabelSpreading

from ssl_opt.model_selection import (
    LabeledKFold,
    SemiSupervisedSplit,
    semi_supervised_split,
    test_score,
    unlabeled_score,
)

PARTS = ("labeled", "unlabeled", "validation", "test")


def _labels(sizes, values=None):
    values = np.arange(len(sizes)) if values is None else np.asarray(values)
    return np.repeat(values, sizes)


def _check_split(split, y, counts, min_one=("labeled", "validation")):
    """Disjoint, sorted, requested sizes, one per class where required, within one of quota."""
    n = y.size
    every = np.concatenate([getattr(split, p) for p in PARTS])
    assert np.unique(every).size == every.size, "parts overlap"
    assert every.min(initial=0) >= 0 and every.max(initial=0) < n
    classes, n_k = np.unique(y, return_counts=True)
    for part in PARTS:
        idx = getattr(split, part)
        assert np.all(np.diff(idx) > 0), f"{part} is not sorted"
        if counts.get(part) is not None:
            assert idx.size == counts[part], part
        got = np.array([np.sum(y[idx] == c) for c in classes])
        if part in min_one and idx.size:
            assert np.all(got >= 1), f"{part} misses a class: {got}"
        if part in counts and counts[part] is not None:
            quota = idx.size * n_k / n
            assert np.all(np.abs(got - quota) <= 1), f"{part} not stratified: {got} vs {quota}"
    np.testing.assert_array_equal(split.train, np.union1d(split.labeled, split.unlabeled))


@pytest.mark.parametrize("sizes,kw", [
    ([60, 40], dict(n_labeled=10, n_validation=10, n_test=25)),
    ([100, 70, 30], dict(n_labeled=12, n_unlabeled=80, n_validation=6, n_test=0.25)),
    ([20] * 10, dict(n_labeled=0.1, n_validation=10, n_test=0.2)),
    ([7, 3], dict(n_labeled=2)),
])
def test_split_is_disjoint_stratified_with_a_label_per_class(sizes, kw):
    y = _labels(sizes, values=np.arange(len(sizes)) * 3 - 1)  # arbitrary values, -1 included
    split = semi_supervised_split(y, **kw, random_state=0)
    n = y.size
    counts = {"labeled": kw["n_labeled"], "unlabeled": kw.get("n_unlabeled"),
              "validation": kw.get("n_validation", 0), "test": kw.get("n_test", 0)}
    counts = {k: (round(v * n) if isinstance(v, float) else v) for k, v in counts.items()}
    _check_split(split, y, counts)
    if kw.get("n_unlabeled") is None:  # U takes every remaining sample
        assert sum(getattr(split, p).size for p in PARTS) == n


@st.composite
def _sizes_and_counts(draw):
    """Class sizes and counts |L|, |V|, |T| with |L| + |V| + |T| <= n / 2 where the minimum of
    one sample per class does not bind (every class's quota in L and V is at least one)."""
    sizes = draw(st.lists(st.integers(8, 60), min_size=2, max_size=5))
    n = sum(sizes)
    low = -(-n // min(sizes))  # ceil(n / n_min): the smallest class's quota is >= 1
    room = n // 2 - low
    l = low + int(draw(st.floats(0, 0.5)) * room)
    v = draw(st.sampled_from([0, low]))
    v += int(draw(st.floats(0, 1)) * (n // 2 - l - v)) if v else 0
    t = int(draw(st.floats(0, 1)) * (n // 2 - l - v))
    return sizes, l, v, t


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_sizes_and_counts(), seed=st.integers(0, 2**16))
def test_split_properties_hold_for_random_class_sizes(case, seed):
    sizes, l, v, t = case
    y = _labels(sizes)
    n = y.size
    assert l + v + t <= n // 2
    split = semi_supervised_split(y, l, n_validation=v, n_test=t, random_state=seed)
    _check_split(split, y, {"labeled": l, "validation": v, "test": t})
    assert split.unlabeled.size == n - l - v - t


def test_split_follows_the_paper_table_2_sizes():
    # G50C in Melacci & Belkin (2011), Table 2: |L| = 50, |U| = 314, |V| = 50, |T| = 136 of 550
    y = np.where(np.arange(550) % 2 == 0, 1.0, -1.0)
    split = semi_supervised_split(y, 50, n_validation=50, n_test=136, random_state=3)
    assert [getattr(split, p).size for p in PARTS] == [50, 314, 50, 136]
    for part in PARTS:
        assert abs(np.sum(y[getattr(split, part)] == 1.0) - getattr(split, part).size / 2) <= 1


def test_split_is_reproducible_and_depends_on_the_seed():
    y = _labels([40, 35, 25])
    a = semi_supervised_split(y, 9, n_validation=6, n_test=20, random_state=7)
    b = semi_supervised_split(y, 9, n_validation=6, n_test=20, random_state=7)
    c = semi_supervised_split(y, 9, n_validation=6, n_test=20, random_state=8)
    for part in PARTS:
        np.testing.assert_array_equal(getattr(a, part), getattr(b, part))
    assert not np.array_equal(a.labeled, c.labeled)
    g = semi_supervised_split(y, 9, random_state=np.random.default_rng(7))
    h = semi_supervised_split(y, 9, random_state=np.random.default_rng(7))
    np.testing.assert_array_equal(g.labeled, h.labeled)


@pytest.mark.parametrize("stratify", [True, False])
def test_rare_classes_still_get_one_label_each(stratify):
    # quotas of the rare classes in L and V are 3 * 5/100 = 0.15: the minimum of one binds
    y = _labels([90, 5, 5])
    for seed in range(20):
        split = semi_supervised_split(y, 3, n_validation=3, n_test=10, stratify=stratify,
                                      random_state=seed)
        _check_split(split, y, {"labeled": None, "validation": None}, min_one=PARTS[::2])
        assert (split.labeled.size, split.validation.size, split.test.size) == (3, 3, 10)
        assert sorted(y[split.labeled]) == [0, 1, 2] == sorted(y[split.validation])


@pytest.mark.parametrize("kw,match", [
    (dict(n_labeled=2), "n_labeled >= 3"),
    (dict(n_labeled=5, n_validation=2), "n_validation >= 3"),
    (dict(n_labeled=5, n_test=60), "exceeds"),
    (dict(n_labeled=1.5), "fraction in \\(0, 1\\)"),
    (dict(n_labeled=-3), "n_labeled must be >= 0"),
    (dict(n_labeled=5, n_test=True), "n_test"),
    (dict(n_labeled=5, random_state=-1), "random_state"),
    (dict(n_labeled=5, stratify="yes"), "stratify"),
])
def test_split_names_the_bad_argument(kw, match):
    y = _labels([20, 20, 20])
    with pytest.raises(ValueError, match=match):
        semi_supervised_split(y, **kw)


def test_split_refuses_bad_targets():
    with pytest.raises(ValueError, match="1-D"):
        semi_supervised_split(np.zeros((4, 2)), 2)
    with pytest.raises(ValueError, match="NaN"):
        semi_supervised_split(np.array([0.0, 1.0, np.nan]), 2)
    with pytest.raises(ValueError, match="continuous|Unknown label"):
        semi_supervised_split(np.linspace(0, 1, 20), 2)
    with pytest.raises(ValueError, match="no sample of some class"):
        # the test part's quota of class 1 (8 * 2/10 = 1.6) rounds to both its samples
        semi_supervised_split(np.array([0] * 8 + [1] * 2), 2, n_test=8, random_state=0)


def test_masked_labels_align_with_train_and_mark_unlabeled():
    y = np.array(["a", "b", "c"] * 10)
    split = semi_supervised_split(y, 6, n_test=9, random_state=0)
    before = y.copy()
    masked = split.masked_labels(y)
    np.testing.assert_array_equal(y, before)
    train = split.train
    assert masked.shape == train.shape
    for pos, i in enumerate(train):
        assert masked[pos] == (y[i] if i in set(split.labeled.tolist()) else -1)
    yi = np.arange(30) % 3
    masked = split.masked_labels(yi)
    assert masked.dtype.kind == "i" and np.sum(masked == -1) == split.unlabeled.size
    with pytest.raises(ValueError, match="relabel"):
        split.masked_labels(np.where(yi == 0, -1, 1))  # ±1 labels: -1 would mean unlabeled
    with pytest.raises(ValueError, match="30 samples"):
        split.masked_labels(yi[:10])


def test_from_indices_converts_matlab_one_based_indices():
    labs = np.array([[1.0, 4.0, 7.0]])  # as load_mat returns a row of idxLabs
    unls = np.array([2.0, 3.0, 5.0, 6.0])
    split = SemiSupervisedSplit.from_indices(labs, unls, 8, test=[8.0], one_based=True)
    np.testing.assert_array_equal(split.labeled, [0, 3, 6])
    np.testing.assert_array_equal(split.unlabeled, [1, 2, 4, 5])
    np.testing.assert_array_equal(split.test, [7])
    assert split.validation.size == 0
    with pytest.raises(ValueError, match="disjoint"):
        SemiSupervisedSplit.from_indices([1, 2], [2, 3], 4, one_based=True)
    with pytest.raises(ValueError, match="one_based=True"):
        SemiSupervisedSplit.from_indices([1, 4], [2, 3], 4)
    with pytest.raises(ValueError, match="integer"):
        SemiSupervisedSplit.from_indices([1.5], [2], 4)


# ----------------------------------------------------------------------------- LabeledKFold


@pytest.fixture(scope="module")
def blobs():
    X, y = make_blobs(n_samples=150, centers=3, cluster_std=2.0, random_state=0)
    split = semi_supervised_split(y, 30, n_test=30, random_state=0)
    return X, y, split


def test_labeled_kfold_tests_only_labeled_and_trains_on_all_unlabeled():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 90)
    y[rng.random(90) < 0.6] = -1
    labeled, unlabeled = np.flatnonzero(y != -1), np.flatnonzero(y == -1)
    cv = LabeledKFold(n_splits=4, random_state=0)
    assert cv.get_n_splits() == 4
    tests = []
    X = np.zeros((90, 2))
    for train, test in cv.split(X, y):
        assert np.all(y[test] != -1)
        assert np.isin(unlabeled, train).all()
        assert np.intersect1d(train, test).size == 0
        np.testing.assert_array_equal(np.union1d(train, test), np.arange(90))
        for c in range(3):  # stratified: each fold holds a quarter of each class, +-1
            assert abs(np.sum(y[test] == c) - np.sum(y[labeled] == c) / 4) < 1
        tests.append(test)
    np.testing.assert_array_equal(np.sort(np.concatenate(tests)), labeled)
    again = [t for _, t in LabeledKFold(n_splits=4, random_state=0).split(X, y)]
    for a, b in zip(tests, again, strict=True):
        np.testing.assert_array_equal(a, b)


def test_labeled_kfold_in_grid_search_equals_a_hand_written_loop(blobs):
    X, y, split = blobs
    X_train, y_train = X[split.train], split.masked_labels(y)
    cv = LabeledKFold(n_splits=3, random_state=1)
    grid = {"gamma": [0.05, 0.5, 5.0], "alpha": [0.1, 0.5]}
    search = GridSearchCV(LabelSpreading(max_iter=200), grid, cv=cv).fit(X_train, y_train)
    folds = list(cv.split(X_train, y_train))
    for i, params in enumerate(search.cv_results_["params"]):
        scores = []
        for train, test in folds:
            est = clone(LabelSpreading(max_iter=200)).set_params(**params)
            est.fit(X_train[train], y_train[train])
            scores.append(accuracy_score(y_train[test], est.predict(X_train[test])))
        assert search.cv_results_["mean_test_score"][i] == pytest.approx(np.mean(scores))
    best = int(np.argmax(search.cv_results_["mean_test_score"]))
    assert search.best_params_ == search.cv_results_["params"][best]
    assert 0.5 < search.best_score_ <= 1.0


def test_labeled_kfold_names_the_problem():
    X = np.zeros((6, 1))
    with pytest.raises(ValueError, match="needs y"):
        next(LabeledKFold().split(X, None))
    with pytest.raises(ValueError, match="n_splits"):
        next(LabeledKFold(n_splits=1).split(X, np.zeros(6)))
    with pytest.raises(ValueError, match="label more samples"):
        next(LabeledKFold().split(X, np.array([0, 1, -1, -1, -1, -1])))
    with pytest.raises(ValueError, match="one label per sample"):
        next(LabeledKFold().split(X, np.zeros(5)))
    assert "LabeledKFold(n_splits=3" in repr(LabeledKFold())


# ----------------------------------------------------------------------------- scores


def test_scores_equal_sklearn_metrics_by_hand(blobs):
    X, y, split = blobs
    est = LabelSpreading(gamma=0.5).fit(X[split.train], split.masked_labels(y))
    position = {int(i): p for p, i in enumerate(split.train)}
    rows = [position[int(i)] for i in split.unlabeled]
    y_u = y[split.unlabeled]
    assert unlabeled_score(est, y, split) == pytest.approx(
        accuracy_score(y_u, est.transduction_[rows]))
    assert unlabeled_score(est, y, split, "f1_macro") == pytest.approx(
        f1_score(y_u, est.transduction_[rows], average="macro"))
    assert unlabeled_score(est, y, split, "neg_log_loss") == pytest.approx(
        -log_loss(y_u, est.label_distributions_[rows], labels=est.classes_))
    y_t = y[split.test]
    assert test_score(est, X, y, split) == pytest.approx(
        accuracy_score(y_t, est.predict(X[split.test])))
    assert test_score(est, X, y, split, "neg_log_loss") == pytest.approx(
        -log_loss(y_t, est.predict_proba(X[split.test]), labels=est.classes_))


def test_unlabeled_score_predicts_when_there_is_no_transduction(blobs):
    X, y, split = blobs
    est = LogisticRegression().fit(X[split.labeled], y[split.labeled])
    assert unlabeled_score(est, y, split, X=X) == pytest.approx(
        accuracy_score(y[split.unlabeled], est.predict(X[split.unlabeled])))
    with pytest.raises(ValueError, match="pass X="):
        unlabeled_score(est, y, split)
    with pytest.raises(ValueError, match="all samples"):
        unlabeled_score(est, y, split, X=X[split.train])


def test_scores_name_the_mistake(blobs):
    X, y, split = blobs
    full = LabelSpreading(gamma=0.5).fit(X, np.where(np.isin(np.arange(150), split.labeled), y, -1))
    with pytest.raises(ValueError, match="X\\[split.train\\]"):
        unlabeled_score(full, y, split)
    no_test = semi_supervised_split(y, 10, random_state=0)
    with pytest.raises(ValueError, match="n_test > 0"):
        test_score(full, X, y, no_test)
    with pytest.raises(ValueError, match="150 samples"):
        test_score(full, X, y[:10], split)
