"""EREClassifier and LRLClassifier: scikit-learn's checks, the optimum of the ERE / LRL problem
built and solved directly, label-order invariance, out-of-sample scores against numpy,
multi-label targets, diagnostics and parameter validation."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_blobs, make_multilabel_classification
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from ssl_opt import solve
from ssl_opt.builders import knn_graph
from ssl_opt.estimators._diagnostics import DegenerateProblemWarning
from ssl_opt.estimators.ere import (
    EXPECTED_FAILED_CHECKS,
    EREClassifier,
    LRLClassifier,
    _warn_if_constant,
)
from ssl_opt.problems.ere.lrl import LRL
from ssl_opt.problems.ere.problem import ERE


@parametrize_with_checks(
    [EREClassifier(), EREClassifier(robust=False, graph_weights="binary"), LRLClassifier()],
    expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS.get(type(est).__name__, {}))
def test_sklearn_compatible(estimator, check):
    check(estimator)


# ---------------------------------------------------------------------------- data


def _data(n=45, seed=0, n_labeled=4, centers=3):
    """Blobs in 3-D, ``n_labeled`` labels per class at random positions (interleaved -1)."""
    X, y = make_blobs(n, n_features=3, centers=centers, cluster_std=1.5, random_state=seed)
    rng = np.random.default_rng(seed)
    y_semi = np.full(n, -1)
    for c in range(centers):
        idx = rng.choice(np.flatnonzero(y == c), n_labeled, replace=False)
        y_semi[idx] = c
    return X, y, y_semi


def _direct_problem(kind, X, y_semi, k, alpha, beta):
    """The problem built by hand: labeled points first (stable), kNN heat graph of the
    reordered points, one-hot Y."""
    lab = np.flatnonzero(y_semi != -1)
    order = np.concatenate([lab, np.flatnonzero(y_semi == -1)])
    Xo = X[order]
    A = knn_graph(Xo, n_neighbors=k, weights="heat")
    Y = np.eye(y_semi.max() + 1)[y_semi[lab]]
    if kind == "lrl":
        return LRL(Xo, A, Y, alpha, beta), order
    return ERE(Xo, A, Y, alpha, beta, robust=(kind == "robust")), order


def _lrl_closed_form(X, y_semi, k, alpha, beta):
    """LRL's minimizer from dense numpy normal equations (gradient of [004 eq. 5] = 0)."""
    A = knn_graph(X, n_neighbors=k, weights="heat").toarray()
    L = np.diag(A.sum(axis=1)) - A
    lab = y_semi != -1
    Xl = X[lab]
    Y = np.eye(y_semi.max() + 1)[y_semi[lab]]
    Z = np.hstack([Xl, np.ones((Xl.shape[0], 1))])
    d = X.shape[1]
    H = alpha * Z.T @ Z
    H[:d, :d] += X.T @ L @ X + beta * np.eye(d)
    theta = np.linalg.solve(H, alpha * Z.T @ Y)
    return theta[:d], theta[d]


# ---------------------------------------------------------------------------- optimum


@pytest.mark.parametrize("kind, solver", [("robust", "irls"), ("squared", "irls"),
                                          ("lrl", "irls")])
def test_solution_is_the_optimum_of_the_problem(kind, solver):
    X, _, y = _data()
    k, alpha, beta = 6, 0.5, 0.05
    if kind == "lrl":
        est = LRLClassifier(alpha, beta, n_neighbors=k, solver=solver)
    else:
        est = EREClassifier(alpha, beta, robust=(kind == "robust"), n_neighbors=k,
                            solver=solver)
    est.fit(X, y)
    problem, order = _direct_problem(kind, X, y, k, alpha, beta)
    ref = solve(problem, backend="reference")
    p_star = problem.objective(ref)
    f_est = problem.objective(est.solution_.x)
    assert abs(f_est - p_star) <= 1e-6 * max(1.0, abs(p_star))
    assert est.certificate().passed
    # W is unique (β‖W‖² is strictly convex in W): coef_ = Wᵀ of the reference.
    np.testing.assert_allclose(est.coef_, ref.x["W"].T, atol=1e-4)
    lab = y != -1
    np.testing.assert_array_equal(est.transduction_[lab], y[lab])
    if kind != "lrl":  # transduction from F, mapped back to the original order
        F = np.empty_like(ref.x["F"])
        F[order] = est.solution_.x["F"]
        np.testing.assert_array_equal(est.transduction_, F.argmax(axis=1))


def test_lrl_equals_dense_normal_equations_out_of_sample():
    X, _, y = _data()
    k, alpha, beta = 6, 2.0, 0.1
    est = LRLClassifier(alpha, beta, n_neighbors=k).fit(X, y)
    W, b = _lrl_closed_form(X, y, k, alpha, beta)
    np.testing.assert_allclose(est.coef_, W.T, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(est.intercept_, b, rtol=1e-8, atol=1e-10)
    X_new = np.random.default_rng(4).normal(size=(7, 3)) * 5
    np.testing.assert_allclose(est.decision_function(X_new), X_new @ W + b, atol=1e-8)
    np.testing.assert_array_equal(est.predict(X_new), (X_new @ W + b).argmax(axis=1))


# ---------------------------------------------------------------------------- out of sample


@pytest.mark.parametrize("centers", [2, 3])
def test_decision_function_is_the_linear_model(centers):
    X, _, y = _data(centers=centers)
    est = EREClassifier(0.5, 0.05, n_neighbors=6).fit(X, y)
    W, b = est.solution_.x["W"], est.solution_.x["b"]
    X_new = np.random.default_rng(5).normal(size=(9, 3)) * 4
    S = X_new @ W + b
    expected = S[:, 1] - S[:, 0] if centers == 2 else S
    np.testing.assert_allclose(est.decision_function(X_new), expected, atol=1e-10)
    np.testing.assert_allclose(est.coef_, W.T)
    np.testing.assert_allclose(est.intercept_, b)
    np.testing.assert_array_equal(est.predict(X_new), est.classes_[S.argmax(axis=1)])


# ---------------------------------------------------------------------------- labels


@pytest.mark.parametrize("cls", [EREClassifier, LRLClassifier])
def test_label_values_and_order_do_not_matter(cls):
    X, _, y = _data()
    names = np.array(["zebra", "ant", "moth"])  # sorted: ant, moth, zebra
    perm = np.random.default_rng(3).permutation(X.shape[0])
    y_str = np.array([-1 if v == -1 else names[v] for v in y], dtype=object)
    X_new = X[:10] + 0.4
    base = cls(0.5, 0.05, n_neighbors=6, solver="reference").fit(X, y)
    other = cls(0.5, 0.05, n_neighbors=6, solver="reference").fit(X[perm], y_str[perm])
    assert list(other.classes_) == ["ant", "moth", "zebra"]
    np.testing.assert_array_equal(other.predict(X_new), names[base.predict(X_new)])
    np.testing.assert_array_equal(other.transduction_, names[base.transduction_[perm]])
    col = [list(other.classes_).index(name) for name in names]
    np.testing.assert_allclose(other.decision_function(X_new)[:, col],
                               base.decision_function(X_new), atol=1e-5)


# ---------------------------------------------------------------------------- multi-label


@pytest.mark.parametrize("robust", [True, False])
def test_multilabel(robust):
    X, Y = make_multilabel_classification(n_samples=60, n_features=4, n_classes=3,
                                          n_labels=2, random_state=1)
    X = StandardScaler().fit_transform(X)
    y = Y.copy()
    unl = np.arange(60) % 3 != 0  # a third labeled, interleaved
    y[unl] = -1
    est = EREClassifier(1.0, 0.05, robust=robust, n_neighbors=6, solver="irls").fit(X, y)
    assert list(est.classes_) == [0, 1, 2]
    # Optimum of the problem built by hand (labeled rows first).
    order = np.concatenate([np.flatnonzero(~unl), np.flatnonzero(unl)])
    A = knn_graph(X[order], n_neighbors=6, weights="heat")
    problem = ERE(X[order], A, Y[~unl], 1.0, 0.05, robust=robust)
    p_star = problem.objective(solve(problem, backend="reference"))
    assert abs(problem.objective(est.solution_.x) - p_star) <= 1e-6 * max(1.0, abs(p_star))
    assert est.certificate().passed
    # τ_k: mean linear score of the labeled positives of class k; predict: S ≥ τ.
    W, b = est.solution_.x["W"], est.solution_.x["b"]
    S_l = X[~unl] @ W + b
    tau = (Y[~unl] * S_l).sum(axis=0) / Y[~unl].sum(axis=0)
    np.testing.assert_allclose(est.thresholds_, tau, atol=1e-10)
    X_new = X[unl][:15] + 0.1
    S = X_new @ W + b
    np.testing.assert_allclose(est.decision_function(X_new), S - tau, atol=1e-10)
    pred = est.predict(X_new)
    assert pred.shape == (15, 3) and pred.dtype == y.dtype
    np.testing.assert_array_equal(pred, (S >= tau).astype(int))
    np.testing.assert_array_equal(est.transduction_[~unl], Y[~unl])
    assert est.transduction_.shape == Y.shape


def test_multilabel_target_errors():
    X, _, _ = _data(n=20)
    y = np.zeros((20, 3), dtype=int)
    y[:, 0] = 1
    y[5] = [-1, 0, 1]
    with pytest.raises(ValueError, match="-1 in every column"):
        EREClassifier().fit(X, y)
    y[5] = [0, 1, 0]
    with pytest.raises(ValueError, match=r"columns \[2\]"):
        EREClassifier().fit(X, y)
    with pytest.raises(ValueError, match="no labeled sample"):
        EREClassifier().fit(X, -np.ones((20, 3), dtype=int))
    with pytest.raises(ValueError, match="0/1"):
        EREClassifier().fit(X, np.full((20, 3), 0.5))


# ---------------------------------------------------------------------------- diagnostics


def test_constant_model_warns():
    with pytest.warns(DegenerateProblemWarning, match="nearly constant"):
        _warn_if_constant(np.ones((5, 3)) + 1e-5 * np.arange(5)[:, None])
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateProblemWarning)
        _warn_if_constant(np.eye(3))  # a working model: no warning


def test_warm_start_reuses_previous_solution():
    X, _, y = _data()
    est = EREClassifier(0.5, 0.05, n_neighbors=6, solver="irls", warm_start=True).fit(X, y)
    est.set_params(alpha=0.55).fit(X, y)
    problem, _ = _direct_problem("robust", X, y, 6, 0.55, 0.05)
    p_star = problem.objective(solve(problem, backend="reference"))
    assert abs(problem.objective(est.solution_.x) - p_star) <= 1e-6 * max(1.0, abs(p_star))


# ---------------------------------------------------------------------------- validation


@pytest.mark.parametrize("cls", [EREClassifier, LRLClassifier])
@pytest.mark.parametrize("params, name", [
    ({"alpha": 0.0}, "alpha"), ({"alpha": -1}, "alpha"), ({"beta": 0.0}, "beta"),
    ({"beta": "x"}, "beta"), ({"n_neighbors": 0}, "n_neighbors"),
    ({"graph_weights": "gauss"}, "graph_weights"), ({"sigma": 0.0}, "sigma"),
    ({"solver": ""}, "solver"), ({"solver_options": "fast"}, "solver_options"),
    ({"warm_start": 1}, "warm_start"),
])
def test_bad_parameters_raise_naming_them(cls, params, name):
    X, _, y = _data(n=20)
    with pytest.raises(ValueError, match=name):
        cls(**params).fit(X, y)


def test_bad_robust_and_affinity():
    X, _, y = _data(n=20)
    with pytest.raises(ValueError, match="robust"):
        EREClassifier(robust="yes").fit(X, y)
    with pytest.raises(ValueError, match="affinity"):
        EREClassifier().fit(X, y, affinity=np.zeros((3, 3)))
    with pytest.raises(ValueError, match="affinity"):
        EREClassifier().fit(X, y, affinity=-np.ones((20, 20)))


# -- alpha="auto" and degenerate fits ------------------------------------------------------
def _moons(n=400, n_labeled=4, seed=0):
    from ssl_opt.datasets import two_moons

    data = two_moons(n=n, n_labeled=n_labeled, seed=seed)
    return data.X, data.semi_supervised_targets(), data.class_labels()


def test_auto_alpha_avoids_the_constant_embedding_that_small_alpha_gives():
    """With 4 labels robust ERE at alpha = 1 keeps each label on its point and F is constant
    (chance accuracy, a warning); alpha="auto" raises alpha until the fit is not degenerate
    and the transduction is far above chance."""
    from ssl_opt.estimators import DegenerateProblemWarning

    X, y, truth = _moons()
    unlabeled = y == -1
    with pytest.warns(DegenerateProblemWarning, match="constant"):
        small = EREClassifier(alpha=1.0).fit(X, y)
    assert small.degenerate_ is not None
    assert np.mean(small.transduction_[unlabeled] == truth[unlabeled]) == pytest.approx(0.5,
                                                                                      abs=0.02)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateProblemWarning)
        auto = EREClassifier().fit(X, y)
    assert auto.degenerate_ is None and auto.alpha_ > 1.0
    assert np.mean(auto.transduction_[unlabeled] == truth[unlabeled]) > 0.7
    # the ladder's first rung is the graph's mean degree, each next one twice the last
    A = auto.problem_.A
    degree = A.sum() / A.shape[0]
    assert np.log2(auto.alpha_ / degree) == pytest.approx(round(np.log2(auto.alpha_ / degree)))


def test_a_degenerate_fit_scores_nan_and_a_grid_search_ranks_it_last():
    from sklearn.model_selection import GridSearchCV

    from ssl_opt.estimators import DegenerateProblemWarning
    from ssl_opt.model_selection import LabeledKFold

    X, y, _ = _moons(n=400, n_labeled=6, seed=0)
    with pytest.warns(DegenerateProblemWarning):
        collapsed = EREClassifier(alpha=1.0).fit(X, y)
    with pytest.warns(DegenerateProblemWarning, match="score is NaN"):
        assert np.isnan(collapsed.score(X, y))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        grid = GridSearchCV(EREClassifier(), {"alpha": [1.0, 100.0]},
                            cv=LabeledKFold(3, random_state=0)).fit(X, y)
    # alpha = 1 collapses on every fold of 4 labels: NaN, ranked last
    assert all(np.isnan(grid.cv_results_[f"split{k}_test_score"][0]) for k in range(3))
    assert grid.cv_results_["rank_test_score"][0] == 2
    assert grid.best_params_ == {"alpha": 100.0}


def test_auto_alpha_is_refused_where_it_does_not_exist():
    X, y, _ = _moons()
    with pytest.raises(ValueError, match="alpha"):
        LRLClassifier(alpha="auto").fit(X, y)
    with pytest.raises(ValueError, match="alpha"):
        EREClassifier(alpha="big").fit(X, y)
