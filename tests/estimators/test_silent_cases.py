"""Inputs that used to give a wrong answer without a word, or a raw error from a library:
each is now a ValueError naming the argument and the fix, or a named warning."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_blobs, make_moons
from sklearn.model_selection import GridSearchCV, StratifiedKFold

from ssl_opt import estimators as E
from ssl_opt.datasets.text import load_svmlight
from ssl_opt.estimators import DegenerateProblemWarning, LabelConventionWarning
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.model_selection import LabeledKFold

CLASSIFIERS = [c for c in E.ESTIMATORS if c is not E.NPKLKernel]


@pytest.fixture(scope="module")
def moons():
    X, y = make_moons(120, noise=0.1, random_state=0)
    semi = np.full(y.shape, -1)
    rng = np.random.default_rng(0)
    for k in (0, 1):
        semi[rng.choice(np.flatnonzero(y == k), 5, replace=False)] = k
    return X, y, semi


@pytest.mark.parametrize("Est", CLASSIFIERS, ids=lambda c: c.__name__)
def test_string_minus_one_is_refused_not_a_third_class(Est, moons):
    X, _, semi = moons
    with pytest.raises(ValueError, match="string '-1'"):
        Est().fit(X, semi.astype(str))


def test_the_suggested_conversion_of_string_labels_works(moons):
    X, y, semi = moons
    ys = semi.astype(str).astype(object)
    ys[ys == "-1"] = -1
    est = E.LapRLSC().fit(X, ys)
    assert sorted(est.classes_) == ["0", "1"]
    same_as_integers = E.LapRLSC().fit(X, semi).predict(X).astype(str)
    np.testing.assert_array_equal(est.predict(X), same_as_integers)


def test_mixed_string_and_numeric_labels_are_named(moons):
    X, _, _ = moons
    y = np.array([0, "a"] * 60, dtype=object)
    with pytest.raises(ValueError, match="mixes string and numeric labels"):
        E.LapSVC().fit(X, y)


def test_plus_minus_one_labels_with_zero_unlabeled_warn(moons):
    X, y, semi = moons
    pm = np.zeros_like(semi)
    labeled = semi != -1
    pm[labeled] = 2 * y[labeled] - 1
    with pytest.warns(LabelConventionWarning, match="0 for unlabeled"):
        E.LapRLSC().fit(X, pm)
    with warnings.catch_warnings():  # scikit-learn's convention on the same data: no warning
        warnings.simplefilter("error", LabelConventionWarning)
        E.LapRLSC().fit(X, semi)


@pytest.mark.parametrize("Est", [E.LapSVC, E.LaplacianAssignment, E.EREClassifier],
                         ids=lambda c: c.__name__)
def test_n_neighbors_not_below_n_warns(Est, moons):
    X, _, semi = moons
    with pytest.warns(DegenerateProblemWarning, match="n_neighbors=500 is not below"):
        Est(n_neighbors=500).fit(X, semi)


@pytest.mark.parametrize("Est", CLASSIFIERS, ids=lambda c: c.__name__)
def test_overflowing_X_is_refused(Est, moons):
    X, _, semi = moons
    with pytest.raises(ValueError, match="overflow float64"):
        Est().fit(X * 1e200, semi)


def test_overflowing_X_at_predict_is_refused(moons):
    X, _, semi = moons
    est = E.LinearL2SVC().fit(X, semi)
    with pytest.raises(ValueError, match="overflow float64"):
        est.predict(X * 1e200)


def test_non_numeric_X_names_X_and_the_fix(moons):
    _, _, semi = moons
    X = np.array([["a", "b"]] * semi.size, dtype=object)
    with pytest.raises(ValueError, match="X must hold numbers only.*OneHotEncoder"):
        E.LapSVC().fit(X, semi)


def test_a_bad_X_val_is_named_X_val(moons):
    X, y, semi = moons
    est = E.LapSVC(early_stopping="validation")
    with pytest.raises(ValueError, match="^X_val is invalid"):
        est.fit(X, semi, X_val=X[:10, :1], y_val=y[:10])


def test_score_leaves_out_unlabeled_targets(moons):
    X, y, semi = moons
    est = E.LapRLSC().fit(X, semi)
    mixed = y.copy()
    mixed[::2] = -1
    keep = mixed != -1
    assert est.score(X, mixed) == pytest.approx(np.mean(est.predict(X[keep]) == y[keep]))
    with pytest.raises(ValueError, match="LabeledKFold"):
        est.score(X, np.full_like(y, -1))


def test_grid_search_without_labeled_kfold_scores_labeled_points_only(moons):
    X, y, semi = moons
    cv = list(StratifiedKFold(3).split(X, semi))
    search = GridSearchCV(E.LapRLSC(), {"gamma_I": [1e-2, 1.0]}, cv=cv).fit(X, semi)
    # the score of each fold, computed here on its labeled test points only
    for k, (train, test) in enumerate(cv):
        est = E.LapRLSC(**search.cv_results_["params"][0]).fit(X[train], semi[train])
        keep = test[semi[test] != -1]
        expected = np.mean(est.predict(X[keep]) == semi[keep])
        assert search.cv_results_[f"split{k}_test_score"][0] == pytest.approx(expected)
    assert search.best_score_ > 0.5  # against the -1 targets it was below 0.1
    labeled = GridSearchCV(E.LapRLSC(), {"gamma_I": [1e-2]}, cv=LabeledKFold(3)).fit(X, semi)
    assert np.isfinite(labeled.best_score_)


def test_one_class_taking_every_unlabeled_point_warns():
    X, y = make_blobs(60, centers=[[0, 0], [6, 0]], cluster_std=0.5, random_state=0)
    semi = np.full(60, -1)
    semi[np.flatnonzero(y == 0)[:3]] = 0
    semi[np.flatnonzero(y == 1)[:3]] = 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateProblemWarning)
        E.LaplacianAssignment().fit(X, semi)
    # a graph term so heavy that the labeled majority's class floods the graph
    semi[np.flatnonzero(y == 0)[:25]] = 0
    X_far = X.copy()
    with pytest.warns(DegenerateProblemWarning, match="one class takes all"):
        E.LaplacianAssignment(lam=1e6, n_neighbors=59).fit(X_far, semi)


def test_class_ratio_from_an_unrepresentative_labeled_set_warns():
    X, y = make_blobs(300, centers=[[-2, 0], [2, 0]], cluster_std=1.0, random_state=0)
    rng = np.random.default_rng(1)
    semi = np.full(300, -1)
    picked = np.r_[rng.choice(np.flatnonzero(y == 1), 8, replace=False),
                   rng.choice(np.flatnonzero(y == 0), 2, replace=False)]
    semi[picked] = y[picked]
    for method in ("tsvm", "da"):
        with pytest.warns(DegenerateProblemWarning, match="r = 0.80 of class 1"):
            E.TransductiveSVC(method=method).fit(X, semi)
        with warnings.catch_warnings():  # the user's own ratio is not second-guessed
            warnings.simplefilter("error", DegenerateProblemWarning)
            E.TransductiveSVC(method=method, ratio=0.5).fit(X, semi)


def test_class_ratio_of_a_random_labeled_set_does_not_warn():
    X, y = make_blobs(300, centers=[[-2, 0], [2, 0]], cluster_std=1.0, random_state=0)
    semi = np.full(300, -1)
    picked = np.random.default_rng(2).choice(300, 20, replace=False)
    semi[picked] = y[picked]
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateProblemWarning)
        E.TransductiveSVC().fit(X, semi)


def test_svmlight_with_nan_features_is_refused(tmp_path):
    path = tmp_path / "nan.svm"
    path.write_text("1 1:0.5 2:nan\n-1 1:1\n")
    with pytest.raises(InvalidInputError, match="NaN or inf features"):
        load_svmlight(path)


def test_term_weight_that_is_not_a_number_is_named():
    from ssl_opt.modeling import Variable
    from ssl_opt.modeling.terms import Ridge

    with pytest.raises(InvalidInputError, match="weight of Ridge.*got 'abc'"):
        Ridge(Variable("x", (3,)), "abc")


def test_kernel_operator_arguments_are_named():
    from ssl_opt.operators import KernelOperator

    X = np.random.default_rng(0).normal(size=(20, 3))
    with pytest.raises(InvalidInputError, match="dtype must be float64 or float32"):
        KernelOperator(X, dtype="abc")
    K = KernelOperator(X)
    for v in (np.ones(7), np.ones((7, 2))):
        with pytest.raises(InvalidInputError, match="must have 20 rows"):
            K @ v
    assert np.allclose(K @ np.ones(20), K.matmat(np.eye(20)).sum(axis=1))


def test_dense_operator_beyond_memory_is_the_packages_error(monkeypatch):
    from ssl_opt.estimators import manifold
    from ssl_opt.exceptions import InsufficientMemoryError
    from ssl_opt.operators import plan

    real = plan.kernel_plan
    monkeypatch.setattr(manifold, "kernel_plan",
                        lambda n, d, **kw: real(n, d, memory_budget=1024, **kw))
    X, y = make_moons(60, noise=0.1, random_state=0)
    semi = np.where(np.arange(60) < 10, y, -1)
    with pytest.raises(InsufficientMemoryError, match="operator='matrix-free'") as err:
        E.LapSVC(operator="dense").fit(X, semi)
    assert isinstance(err.value, MemoryError)


def test_a_closed_dask_client_is_named():
    distributed = pytest.importorskip("distributed")
    from ssl_opt.operators.distributed import DaskDesign

    client = distributed.Client(distributed.LocalCluster(n_workers=1, processes=False,
                                                         dashboard_address=None))
    client.close()
    X = np.random.default_rng(0).normal(size=(20, 3))
    with pytest.raises(InvalidInputError, match="client is closed"):
        DaskDesign(X, True, client=client)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_npkl_defaults_report_optimal_only_where_the_certificate_passes(seed):
    X, y = make_moons(100, noise=0.1, random_state=0)
    semi = np.where(np.arange(100) < 10, y, -1)
    est = E.NPKLKernel(random_state=seed).fit(X, semi)
    assert est.solution_.status == "optimal"
    certificate = est.certificate(reference=False)
    assert certificate.passed, certificate.residuals


@pytest.mark.parametrize("Est", E.ESTIMATORS, ids=lambda c: c.__name__)
def test_help_shows_the_parameters(Est):
    import pydoc

    text = pydoc.render_doc(Est)
    assert "Parameters" in (Est.__doc__ or "")
    for name in Est().get_params():
        assert name in text, name


def test_a_fitted_npkl_kernel_pickles_and_predicts_the_same():
    import pickle

    from ssl_opt.numerics.factor import SPDFactor

    X, y = make_moons(300, noise=0.1, random_state=0)
    semi = np.where(np.arange(300) < 30, y, -1)
    est = E.NPKLKernel(random_state=0).fit(X, semi)
    assert est.problem_.boundary_reduction()._factor.kind == "sparse"  # the SuperLU path
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_allclose(again.transform(X[:40]), est.transform(X[:40]), rtol=1e-12,
                               atol=1e-12)
    A = est.problem_.boundary_reduction()._factor._A
    b = np.arange(A.shape[0], dtype=float)
    x = pickle.loads(pickle.dumps(SPDFactor(A))).solve(b)
    np.testing.assert_allclose(A @ x, b, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("Est", CLASSIFIERS, ids=lambda c: c.__name__)
def test_n_iter_counts_the_solvers_iterations(Est, moons):
    import ssl_opt

    X, _, semi = moons
    est = Est()
    assert not hasattr(est, "n_iter_")
    est.fit(X, semi)
    again = ssl_opt.solve(est.problem_, solver=est.solution_.solver)  # the same solve, redone
    assert est.n_iter_ == again.iterations > 0


def test_n_iter_has_one_entry_per_class_one_vs_rest():
    # the classes warm-start one another, so a cold re-solve counts differently: the count
    # itself is checked on the binary fits above
    X, y = make_blobs(90, centers=3, random_state=0)
    semi = np.where(np.arange(90) % 6 == 0, y, -1)
    for Est in (E.LapSVC, E.TransductiveSVC):
        n_iter = Est().fit(X, semi).n_iter_
        assert n_iter.shape == (3,) and n_iter.dtype.kind == "i" and np.all(n_iter >= 1)


def test_residuals_above_tolerance_names_a_bad_family():
    from ssl_opt import registry
    from ssl_opt.certificate import residuals_above_tolerance

    problem = {e.name: e for e in registry.examples()}["lapsvm-moons"].build()
    with pytest.raises(InvalidInputError, match="family must be one of"):
        residuals_above_tolerance(problem, {}, "fast")
