"""Every fitted estimator pickles, predicts the same after unpickling and certifies the same
problem; a dense kernel fit does not carry its n×n kernel in the pickle."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_digits, make_moons

from ssl_opt.estimators import ESTIMATORS, LapRLSC, LapSVC


def _fit(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, y)


def _outputs(est, X):
    if hasattr(est, "predict_proba"):
        return est.predict_proba(X)
    return est.transform(X)


def _residuals(est):
    certs = est.certificate(reference=False)
    return [c.residuals for c in (certs if isinstance(certs, list) else [certs])]


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_unpickled_estimator_predicts_and_certifies_the_same(cls):
    X, y = make_moons(80, noise=0.1, random_state=0)
    y[12:] = -1
    est = _fit(cls(), X, y)
    clone = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(_outputs(clone, X), _outputs(est, X))
    assert _residuals(clone) == _residuals(est)


@pytest.mark.parametrize("cls", [LapSVC, LapRLSC], ids=lambda c: c.__name__)
@pytest.mark.parametrize("kernel", ["rbf", "precomputed"])
def test_a_dense_kernel_fit_pickles_without_its_kernel(cls, kernel):
    X, y = load_digits(return_X_y=True)
    X, y = X[:400], y[:400].copy()
    y[60:] = -1
    data = X @ X.T if kernel == "precomputed" else X
    est = _fit(cls(kernel=kernel), data, y)
    n = X.shape[0]
    size = len(pickle.dumps(est))
    # the precomputed Gram matrix is the training data itself (X_fit_), kept once
    assert size < 8 * n * n * (1.5 if kernel == "precomputed" else 0.5)
    clone = pickle.loads(pickle.dumps(est))
    Xt = data[:50]
    np.testing.assert_array_equal(clone.decision_function(Xt), est.decision_function(Xt))
    assert _residuals(clone) == _residuals(est)
    np.testing.assert_array_equal(clone.problem_[0].K, est.problem_[0].K)
