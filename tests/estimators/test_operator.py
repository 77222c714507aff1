"""``operator="matrix-free"`` on the manifold estimators: the same fit as a stored K solved by
the same solver (PCG), K never stored, and clear errors where it cannot apply."""

from __future__ import annotations

import numpy as np
import pytest

from ssl_opt.datasets import two_moons
from ssl_opt.estimators import LapRLSC, LapSVC
from ssl_opt.operators import KernelOperator, NystromOperator


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


@pytest.mark.parametrize("cls", [LapSVC, LapRLSC])
@pytest.mark.parametrize("classes", [2, 3])
def test_nystrom_fit_equals_the_stored_approximate_kernel(cls, classes):
    """operator="nystrom" fits K̃ = ΦΦᵀ: the same decision function as a fit on the dense K̃
    (kernel="precomputed", an independent solver path), extended to new points through the
    feature map; the approximation is reported on the solution."""
    from ssl_opt.builders import rbf_kernel

    X, y = _data(classes=classes)
    fit = cls(1.0, 10.0, sigma=0.3, operator="nystrom", n_landmarks=80).fit(X, y)
    problems = fit.problem_ if classes > 2 else [fit.problem_]
    assert all(isinstance(p.K, NystromOperator) for p in problems)
    solutions = fit.solution_ if classes > 2 else [fit.solution_]
    assert all("Nyström" in s.info["approximation"] for s in solutions)
    # The same landmark points, on the training rows in their given order.
    op = NystromOperator(X, "rbf", landmarks=problems[0].K.Z, sigma=0.3)
    Kt = op.to_dense()
    stored = cls(1.0, 10.0, kernel="precomputed", solver="newton" if cls is LapSVC else "auto",
                 graph_weights="binary").fit(Kt, y, affinity=_knn(X))
    free = cls(1.0, 10.0, sigma=0.3, operator="nystrom", n_landmarks=80).fit(
        X, y, affinity=_knn(X))
    scores = stored.decision_values_
    np.testing.assert_allclose(free.decision_values_, scores, atol=1e-7 * np.abs(scores).max())
    # Out of sample: φ(x)ᵀ(Φᵀα) + b against K̃(x, X)α + b from the textbook formula.
    new = X[:25] + 0.05
    Z = op.Z
    cross = (rbf_kernel(new, Z, sigma=0.3) @ np.linalg.pinv(rbf_kernel(Z, sigma=0.3),
                                                            rcond=1e-10, hermitian=True)
             @ rbf_kernel(Z, X, sigma=0.3))
    expected = cross @ stored.dual_coef_ + stored.intercept_
    np.testing.assert_allclose(free.decision_function(new), expected,
                               atol=1e-6 * np.abs(expected).max())


def _knn(X):
    from ssl_opt.builders import knn_graph

    return knn_graph(X, n_neighbors=10, weights="binary")


def test_nystrom_misuse_is_a_clear_error():
    X, y = _data(n=60)
    with pytest.raises(ValueError, match="n_landmarks"):
        LapSVC(operator="nystrom", n_landmarks=0).fit(X, y)
    with pytest.raises(ValueError, match="would form K"):
        LapSVC(operator="nystrom", solver="newton").fit(X, y)
    # n_landmarks above n is clipped to n (K̃ = K up to the dropped eigenvalues).
    fit = LapSVC(1.0, 1.0, operator="nystrom", n_landmarks=1000).fit(X, y)
    assert fit.problem_.K.Z.shape[0] == 60


def test_auto_operator_goes_matrix_free_when_the_kernel_does_not_fit(monkeypatch):
    """operator="auto": the stored K while it fits, the exact matrix-free operator when the
    (here artificially small) memory cannot hold it; an explicit "dense" is refused with the
    plan before K is allocated."""
    from ssl_opt.selection import measure

    X, y = _data()
    roomy = LapSVC(1.0, 10.0, sigma=0.3).fit(X, y)
    assert roomy.operator_ == "dense" and isinstance(roomy.problem_.K, np.ndarray)
    monkeypatch.setattr(measure, "available_memory", lambda: 8.0 * 300**2)
    tight = LapSVC(1.0, 10.0, sigma=0.3).fit(X, y)
    assert tight.operator_ == "matrix-free" and isinstance(tight.problem_.K, KernelOperator)
    assert "matrix-free" in tight.operator_plan_.table()
    stored = LapSVC(1.0, 10.0, sigma=0.3, solver="pcg", operator="dense")
    with pytest.raises(MemoryError, match="operator='matrix-free'"):
        stored.fit(X, y)
    monkeypatch.undo()
    scores = stored.fit(X, y).decision_function(X)
    np.testing.assert_allclose(tight.decision_function(X), scores,
                               atol=1e-8 * np.abs(scores).max())
