"""``predict_proba`` on every classifier: the temperature fitted as its definition says
(checked against a direct grid minimization of the cross-entropy), probabilities consistent with
``predict``, and calibrated where the true probabilities are known."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_blobs, make_moons

from ssl_opt.estimators import ESTIMATORS, EREClassifier, LinearL2SVC
from ssl_opt.estimators._probability import fit_scale

CLASSIFIERS = [cls for cls in ESTIMATORS if hasattr(cls, "predict")]


def _platt_cross_entropy(A, f, positive):
    """Platt's (1999) objective written out for two classes: targets (N+ + 1)/(N+ + 2) on
    positives and 1/(N- + 2) on negatives, p = 1/(1 + exp(-A f))."""
    n_pos, n_neg = positive.sum(), (~positive).sum()
    t = np.where(positive, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))
    z = A * f
    return -np.sum(t * -np.logaddexp(0, -z) + (1 - t) * -np.logaddexp(0, z))


def test_binary_scale_minimizes_platts_objective():
    rng = np.random.default_rng(0)
    f = np.concatenate([rng.normal(1.0, 0.8, 15), rng.normal(-1.0, 0.8, 9)])
    positive = np.arange(24) < 15
    indicator = np.column_stack([~positive, positive]).astype(float)
    A = fit_scale(f, indicator)
    grid = np.linspace(0.01, 20, 200_001)
    values = [_platt_cross_entropy(a, f, positive) for a in grid[::100]]
    coarse = grid[::100][int(np.argmin(values))]
    fine = grid[(grid > coarse - 0.02) & (grid < coarse + 0.02)]
    best = fine[np.argmin([_platt_cross_entropy(a, f, positive) for a in fine])]
    assert A == pytest.approx(best, rel=1e-3)


def test_multiclass_scale_minimizes_the_smoothed_cross_entropy():
    rng = np.random.default_rng(1)
    codes = rng.integers(0, 3, 30)
    S = rng.normal(size=(30, 3)) + 2.0 * np.eye(3)[codes]
    Y = np.eye(3)[codes]
    counts = Y.sum(axis=0)

    def objective(a):
        Z = a * S
        logp = Z - np.log(np.exp(Z).sum(axis=1, keepdims=True))
        t_true = (counts[codes] + 1) / (counts[codes] + 2)
        T = np.where(Y > 0, t_true[:, None], ((1 - t_true) / 2)[:, None])
        return -np.sum(T * logp)

    grid = np.linspace(0.001, 10, 100_001)
    best = grid[np.argmin([objective(a) for a in grid])]
    assert fit_scale(S, Y) == pytest.approx(best, rel=1e-3)


@pytest.mark.parametrize("cls", CLASSIFIERS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("centers", [2, 3])
def test_probabilities_agree_with_predict(cls, centers):
    X, y = (make_moons(80, noise=0.1, random_state=0) if centers == 2
            else make_blobs(90, centers=3, random_state=0))
    y = y.copy()
    y[12:] = -1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = cls().fit(X, y)
    P = est.predict_proba(X)
    assert P.shape == (X.shape[0], centers)
    assert np.all(P >= 0) and np.allclose(P.sum(axis=1), 1.0)
    np.testing.assert_array_equal(est.classes_[P.argmax(axis=1)], est.predict(X))
    np.testing.assert_allclose(np.exp(est.predict_log_proba(X)), P, atol=1e-12)


def test_probabilities_are_calibrated_where_the_truth_is_known():
    """Labels drawn with P(y = 1 | x) = σ(3 x₁): the fitted probabilities are within 0.03 of
    the true ones on average (2,000 labeled points)."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(4000, 2))
    truth = 1 / (1 + np.exp(-3 * X[:, 0]))
    y = (rng.random(4000) < truth).astype(int)
    y[2000:] = -1
    est = LinearL2SVC().fit(X, y)
    error = np.abs(est.predict_proba(X)[:, 1] - truth)
    assert error.mean() < 0.03


def test_few_labels_give_moderate_probabilities():
    """Two labels per class of well separated blobs: no probability of the labeled points'
    classes above Platt's target (N + 1)/(N + 2) = 3/4 by more than the fit allows."""
    X, y = make_blobs(60, centers=[[-4, 0], [4, 0]], cluster_std=0.5, random_state=0)
    labeled = np.concatenate([np.flatnonzero(y == 0)[:2], np.flatnonzero(y == 1)[:2]])
    y_semi = np.full(60, -1)
    y_semi[labeled] = y[labeled]
    P = LinearL2SVC().fit(X, y_semi).predict_proba(X[labeled])
    assert np.all(P[np.arange(4), y[labeled]] < 0.9)


def test_multilabel_probabilities_are_per_label():
    X, _ = make_blobs(60, centers=3, random_state=0)
    Y = np.zeros((60, 3), dtype=int)
    Y[:, 0] = X[:, 0] > 0
    Y[:, 1] = X[:, 1] > 0
    Y[:, 2] = 1 - Y[:, 0]
    Y[15:] = -1
    est = EREClassifier().fit(X, Y)
    P = est.predict_proba(X)
    assert P.shape == (60, 3) and np.all((P > 0) & (P < 1))
    D = est.decision_function(X)
    clear = np.abs(D) > 1e-9  # a label constant on the labeled points sits at τ, round-off
    np.testing.assert_array_equal((P >= 0.5)[clear], (D >= 0)[clear])
    np.testing.assert_array_equal((P >= 0.5)[clear], est.predict(X)[clear] == 1)
