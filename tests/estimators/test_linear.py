"""scikit-learn estimators of the linear family [001]: LinearL2SVC, TransductiveSVC (TSVM, DA).

Every comparison is with something built here independently of the estimator: the problems
assembled by hand with numpy (labeled rows first, ±1 labels) and solved with
``ssl_opt.solve`` (the CVXPY reference for the convex L2-SVM), numpy products for the
out-of-sample scores, and the same data in another label coding, row order or format.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.datasets import make_blobs
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MaxAbsScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

import ssl_opt
from ssl_opt.datasets import gaussian_blobs, synthetic_text
from ssl_opt.estimators._diagnostics import DegenerateProblemWarning
from ssl_opt.estimators.linear import EXPECTED_FAILED_CHECKS, LinearL2SVC, TransductiveSVC
from ssl_opt.problems import DAS3VM, TSVM, LinearSVM

ESTIMATORS = [LinearL2SVC(), TransductiveSVC(method="tsvm"), TransductiveSVC(method="da")]
TRANSDUCTIVE = {"tsvm": TSVM, "da": DAS3VM}


@parametrize_with_checks(
    ESTIMATORS, expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS.get(
        type(est).__name__, {}))
def test_sklearn_checks(estimator, check):
    check(estimator)


# ------------------------------------------------------------------------------------ data


def _binary(seed=0, n=50, n_labeled=10, d=4, separation=3.0):
    """Shuffled two-class data with 0/1 labels and -1 on the unlabeled rows; also the true
    labels of every row."""
    data = gaussian_blobs(n=n, n_labeled=n_labeled, d=d, separation=separation, seed=seed)
    truth = (data.y_all > 0).astype(int)
    y = np.full(n, -1)
    y[:n_labeled] = truth[:n_labeled]
    perm = np.random.default_rng(seed).permutation(n)
    return np.asarray(data.X)[perm], y[perm], truth[perm]


def _multiclass(seed=0, n=90, n_labeled=18, classes=(3, 7, 11)):
    X, codes = make_blobs(n_samples=n, centers=len(classes), n_features=3, cluster_std=1.5,
                          random_state=seed)
    truth = np.asarray(classes)[codes]
    rng = np.random.default_rng(seed)
    labeled = np.zeros(n, dtype=bool)
    for k in range(len(classes)):  # every class labeled
        labeled[rng.choice(np.flatnonzero(codes == k), n_labeled // len(classes), False)] = True
    y = np.where(labeled, truth, -1)
    return X, y, truth


def _labeled_first(X, y):
    """Rows reordered by hand: labeled ones first, each group in its original order."""
    lab = np.flatnonzero(y != -1)
    unl = np.flatnonzero(y == -1)
    return np.concatenate([lab, unl]), lab.size


def _clip_ratio(r, u):
    return min(max(r, 1.0 / u), 1.0 - 1.0 / u)


def _augmented(X):
    A = X.toarray() if sp.issparse(X) else np.asarray(X)
    return np.hstack([A, np.ones((A.shape[0], 1))])


# ------------------------------------------------------------------- equals the problem


def test_l2svc_equals_reference_optimum():
    X, y, _ = _binary(seed=1)
    est = LinearL2SVC(lam=1e-2).fit(X, y)
    lab = y != -1
    problem = LinearSVM(X[lab], np.where(y[lab] == 1, 1.0, -1.0), 1e-2)
    ref = ssl_opt.solve(problem, backend="reference")
    w = np.append(est.coef_[0], est.intercept_[0])
    assert abs(problem.objective({"w": w}) - ref.objective) <= 1e-6 * max(1.0, ref.objective)
    np.testing.assert_allclose(w, ref.x["w"], atol=1e-4)
    assert est.certificate().passed


@pytest.mark.parametrize("method", ["tsvm", "da"])
def test_transductive_equals_problem_solved_directly(method):
    X, y, _ = _binary(seed=2)
    est = TransductiveSVC(method=method, lam=1e-2, lam_u=0.5).fit(X, y)
    order, l = _labeled_first(X, y)
    y_pm = np.where(y[order[:l]] == 1, 1.0, -1.0)
    r = float(np.mean(y_pm > 0))
    assert _clip_ratio(r, X.shape[0] - l) == r  # no clipping on this instance
    problem = TRANSDUCTIVE[method](X[order], y_pm, 1e-2, 0.5, r=r)
    direct = ssl_opt.solve(problem)
    np.testing.assert_allclose(est.coef_[0], direct.x["w"][:-1], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(est.intercept_[0], direct.x["w"][-1], rtol=1e-10, atol=1e-12)
    assert abs(problem.objective(est.solution_) - direct.objective) <= 1e-10
    assert est.certificate().passed
    assert ssl_opt.certify(problem, est.solution_).passed


def test_transductive_all_labeled_is_the_l2svm_with_costs_1_over_l():
    X, _, truth = _binary(seed=3, n=30)
    est = TransductiveSVC(lam=1e-2, solver="tsvm", solver_options={"S": 1, "tol": 1e-9}).fit(
        X, truth)
    l = X.shape[0]
    problem = LinearSVM(X, np.where(truth == 1, 1.0, -1.0), 1e-2, cost=np.full(l, 1.0 / l))
    ref = ssl_opt.solve(problem, backend="reference")
    assert isinstance(est.problem_, LinearSVM) and est.solution_.solver == "mfn"
    w = np.append(est.coef_[0], est.intercept_[0])
    assert abs(problem.objective({"w": w}) - ref.objective) <= 1e-6 * max(1.0, ref.objective)
    assert np.isnan(est.ratio_).all()
    # TSVM options given with solver="auto" do not break the fallback (GridSearchCV folds)
    auto = TransductiveSVC(lam=1e-2, solver_options={"S": 1, "tol": 1e-9}).fit(X, truth)
    np.testing.assert_allclose(auto.coef_, est.coef_, rtol=1e-8, atol=1e-10)


# ------------------------------------------------------------------- labels and row order


@pytest.mark.parametrize("est", ESTIMATORS, ids=lambda e: repr(e))
def test_string_labels_interleaved_equal_ordered_numeric(est):
    X, y, _ = _binary(seed=4)
    strings = np.array(["ham", "spam"], dtype=object)
    y_str = np.array([-1 if v == -1 else strings[v] for v in y], dtype=object)
    a = clone(est).fit(X, y_str)
    order, l = _labeled_first(X, y)
    b = clone(est).fit(X[order], y[order])  # 0/1 coding, labeled rows first
    assert list(a.classes_) == ["ham", "spam"]
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-10, atol=1e-12)
    X_new = np.random.default_rng(0).normal(size=(20, X.shape[1]))
    np.testing.assert_array_equal(a.predict(X_new), strings[b.predict(X_new)])
    np.testing.assert_array_equal(a.transduction_[order], strings[b.transduction_])
    # the ±1 coding of the problems: "spam" (classes_[1]) is +1
    w = np.asarray(a.solution_.x["w"])
    assert np.mean(np.sign(_augmented(X[order[:l]]) @ w) == np.where(
        y[order[:l]] == 1, 1, -1)) >= 0.9


def test_arbitrary_integer_label_values():
    X, y, _ = _binary(seed=5)
    y73 = np.where(y == -1, -1, np.where(y == 1, 3, 7))  # classes_ [3, 7]: 7 is +1
    a = TransductiveSVC().fit(X, y73)
    b = TransductiveSVC().fit(X, np.where(y == -1, -1, 1 - y))  # the same +1 rows
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(a.classes_, [3, 7])


# ------------------------------------------------------------------------- multi-class


@pytest.mark.parametrize("method", [None, "tsvm", "da"])
def test_multiclass_equals_independent_binary_problems(method):
    X, y, truth = _multiclass()
    est = LinearL2SVC(lam=1e-2) if method is None else TransductiveSVC(method, lam=1e-2)
    est.fit(X, y)
    order, l = _labeled_first(X, y)
    u = X.shape[0] - l
    assert isinstance(est.problem_, list) and len(est.solution_) == 3
    for k, c in enumerate([3, 7, 11]):
        y_k = np.where(y[order[:l]] == c, 1.0, -1.0)
        if method is None:
            problem = LinearSVM(X[order[:l]], y_k, 1e-2)
        else:
            r = _clip_ratio(float(np.mean(y_k > 0)), u)
            assert est.ratio_[k] == pytest.approx(r)
            problem = TRANSDUCTIVE[method](X[order], y_k, 1e-2, 1.0, r=r)
        w = ssl_opt.solve(problem).x["w"]
        np.testing.assert_allclose(est.coef_[k], w[:-1], rtol=1e-8, atol=1e-8)
        np.testing.assert_allclose(est.intercept_[k], w[-1], rtol=1e-8, atol=1e-8)
    scores = est.decision_function(X)
    assert scores.shape == (X.shape[0], 3)
    np.testing.assert_array_equal(est.predict(X), np.array([3, 7, 11])[scores.argmax(1)])
    np.testing.assert_array_equal(est.transduction_, est.predict(X))
    assert np.mean(est.transduction_ == truth) > 0.8


def test_ratio_from_labels_is_clipped():
    X, _, truth = _binary(seed=6, n=30)
    y = np.full(30, -1)
    pos, neg = np.flatnonzero(truth == 1), np.flatnonzero(truth == 0)
    y[pos[:1]] = 1
    y[neg] = 0  # one labeled positive among 16 labeled rows: r = 1/16 < 1/u with u = 14
    u = int(np.sum(y == -1))
    assert 1 / 16 < 1 / u
    est = TransductiveSVC().fit(X, y)
    assert est.ratio_[0] == pytest.approx(1 / u)
    assert est.problem_.n_pos == 1
    assert TransductiveSVC(ratio=0.3).fit(X, y).problem_.r == 0.3


# ------------------------------------------------------------------- out-of-sample, sparse


@pytest.mark.parametrize("est", ESTIMATORS, ids=lambda e: repr(e))
@pytest.mark.parametrize("multiclass", [False, True])
def test_out_of_sample_decision_is_x_w_plus_b(est, multiclass):
    X, y, _ = _multiclass() if multiclass else _binary(seed=7)
    est = clone(est).fit(X, y)
    X_new = np.random.default_rng(1).normal(size=(25, X.shape[1]))
    solutions = est.solution_ if multiclass else [est.solution_]
    W = np.stack([np.asarray(s.x["w"]) for s in solutions], axis=1)  # (d + 1, k)
    expected = X_new @ W[:-1] + W[-1]
    got = est.decision_function(X_new)
    np.testing.assert_allclose(got, expected if multiclass else expected[:, 0], rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_allclose(est.decision_function(sp.csr_matrix(X_new)), got, atol=1e-12)


@pytest.mark.parametrize("est", ESTIMATORS, ids=lambda e: repr(e))
@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_sparse_and_dense_give_the_same_result(est, fmt):
    if getattr(est, "method", None) == "da":  # DA's default stops agree to ~1e-7 only
        est = clone(est).set_params(solver_options={"tol": 1e-10, "polish_tol": 1e-12})
    data = synthetic_text(n=120, d=300, nnz_per_row=20, n_labeled=20, seed=0)
    y = np.full(data.n, -1)
    y[:data.n_labeled] = (data.y > 0).astype(int)
    perm = np.random.default_rng(0).permutation(data.n)
    Xs, y = data.X[perm], y[perm]
    dense = clone(est).fit(Xs.toarray(), y)
    sparse = clone(est).fit(Xs.asformat(fmt), y)
    assert sp.issparse(sparse.problem_.design.X)  # never densified
    np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(sparse.intercept_, dense.intercept_, rtol=1e-8, atol=1e-10)
    np.testing.assert_array_equal(sparse.transduction_, dense.transduction_)
    np.testing.assert_array_equal(sparse.predict(Xs), dense.predict(Xs.toarray()))


def test_inputs_not_modified_and_no_intercept():
    X, y, _ = _binary(seed=8)
    Xs = sp.csr_matrix(X)
    X0, y0, data0 = X.copy(), y.copy(), Xs.data.copy()
    est = TransductiveSVC(fit_intercept=False).fit(Xs, y)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)
    np.testing.assert_array_equal(Xs.data, data0)
    assert X.flags.writeable and y.flags.writeable
    assert est.coef_.shape == (1, X.shape[1]) and est.intercept_.tolist() == [0.0]
    np.testing.assert_allclose(est.decision_function(X), X @ est.coef_[0], atol=1e-12)


# ------------------------------------------------------------------- warm start, grid


def test_warm_start_reuses_the_previous_solution():
    X, y, _ = _binary(seed=9, n=80)
    cold = TransductiveSVC(lam=1e-2).fit(X, y)
    warm = TransductiveSVC(lam=1e-3, warm_start=True).fit(X, y)
    warm.set_params(lam=1e-2).fit(X, y)
    assert warm.solution_.info["retrains"] < cold.solution_.info["retrains"]
    assert warm.certificate().passed
    svc_cold = LinearL2SVC(lam=1e-2).fit(X, y)
    svc_warm = LinearL2SVC(lam=1e-1, warm_start=True).fit(X, y).set_params(lam=1e-2).fit(X, y)
    np.testing.assert_allclose(svc_warm.coef_, svc_cold.coef_, rtol=1e-5, atol=1e-6)


def test_pipeline_and_grid_search():
    X, y, truth = _binary(seed=10, n=90, n_labeled=30)
    lab = y != -1
    pipe = make_pipeline(MaxAbsScaler(), TransductiveSVC(warm_start=True))
    grid = GridSearchCV(pipe, {"transductivesvc__lam": [1e-3, 1e-2]}, cv=3)
    grid.fit(X[lab], y[lab])
    assert grid.best_score_ > 0.8
    assert grid.score(X, truth) > 0.8


# ------------------------------------------------------------------- warnings and errors


@pytest.mark.parametrize("method", ["tsvm", "da"])
def test_degenerate_run_warns(method):
    X, y, _ = _binary(seed=11, n=60)
    # r = 0.99 with a heavy unlabeled term: every unlabeled row ends up positive
    with pytest.warns(DegenerateProblemWarning, match="one class") as record:
        TransductiveSVC(method=method, ratio=0.99, lam_u=100.0).fit(X, y)
    assert record[0].filename == __file__  # points at the caller's fit
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateProblemWarning)
        TransductiveSVC(method=method).fit(X, y)  # balanced data, labeled ratio: no warning


@pytest.mark.parametrize("est, param, value", [
    (LinearL2SVC(), "lam", 0.0),
    (LinearL2SVC(), "lam", "big"),
    (LinearL2SVC(), "fit_intercept", "yes"),
    (LinearL2SVC(), "warm_start", 1),
    (LinearL2SVC(), "solver", ""),
    (LinearL2SVC(), "solver_options", ["tol"]),
    (TransductiveSVC(), "method", "s3vm"),
    (TransductiveSVC(), "lam_u", -1.0),
    (TransductiveSVC(), "ratio", 1.0),
    (TransductiveSVC(), "ratio", 0.0),
    (TransductiveSVC(), "ratio", True),
    (TransductiveSVC(), "lam", -1e-3),
])
def test_bad_parameters_raise_value_error_naming_them(est, param, value):
    X, y, _ = _binary(seed=12, n=20)
    with pytest.raises(ValueError, match=param):
        clone(est).set_params(**{param: value}).fit(X, y)


def test_unknown_solver_raises_value_error():
    X, y, _ = _binary(seed=13, n=20)
    with pytest.raises(ValueError, match="no-such-solver"):
        TransductiveSVC(solver="no-such-solver").fit(X, y)
    with pytest.raises(ValueError):
        LinearL2SVC(solver="tsvm").fit(X, y)  # a TSVM solver cannot solve the L2-SVM
