"""``operator="matrix-free"`` on the manifold estimators: the same fit as a stored K solved by
the same solver (PCG), K never stored, and clear errors where it cannot apply."""

from __future__ import annotations

import numpy as np
import pytest

from ssl_opt.datasets import two_moons
from ssl_opt.estimators import LapRLSC, LapSVC
from ssl_opt.operators import KernelOperator


def _data(n=300, classes=2, seed=0):
    data = two_moons(n=n, n_labeled=n, noise=0.1, seed=seed)
    labels = (data.y_all > 0).astype(int)
    if classes == 3:  # split one moon in two by its x coordinate
        labels = np.where((labels == 1) & (data.X[:, 0] > 1.0), 2, labels)
    y = np.full(n, -1)
    labeled = np.concatenate([np.flatnonzero(labels == c)[:4] for c in range(classes)])
    y[labeled] = labels[labeled]
    return data.X, y


@pytest.mark.parametrize("cls", [LapSVC, LapRLSC])
@pytest.mark.parametrize("classes", [2, 3])
def test_matrix_free_fit_equals_the_stored_kernel(cls, classes):
    X, y = _data(classes=classes)
    stored = cls(1.0, 10.0, sigma=0.3, solver="pcg").fit(X, y)
    free = cls(1.0, 10.0, sigma=0.3, operator="matrix-free").fit(X, y)
    problems = free.problem_ if classes > 2 else [free.problem_]
    assert all(isinstance(p.K, KernelOperator) for p in problems)
    scores = stored.decision_function(X)
    np.testing.assert_allclose(free.decision_function(X), scores,
                               atol=1e-8 * np.abs(scores).max())
    np.testing.assert_array_equal(free.predict(X), stored.predict(X))
    certificates = free.certificate() if classes > 2 else [free.certificate()]
    assert all(c.passed for c in np.atleast_1d(certificates))


def test_float32_tiles_give_the_same_predictions():
    X, y = _data()
    stored = LapSVC(1.0, 10.0, sigma=0.3, solver="pcg").fit(X, y)
    free = LapSVC(1.0, 10.0, sigma=0.3, operator="matrix-free-float32").fit(X, y)
    scores = stored.decision_function(X)
    np.testing.assert_allclose(free.decision_function(X), scores,
                               atol=1e-4 * np.abs(scores).max())


@pytest.mark.parametrize("params,match", [
    ({"operator": "sparse"}, "operator must be one of"),
    ({"operator": "matrix-free", "kernel": "precomputed"}, "cannot take"),
    ({"operator": "matrix-free", "solver": "newton"}, "would form K"),
])
def test_operator_misuse_is_a_clear_error(params, match):
    X, y = _data(n=60)
    with pytest.raises(ValueError, match=match):
        LapSVC(**params).fit(X, y)
