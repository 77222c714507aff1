"""LapSVC / LapRLSC against the underlying problems solved directly, closed forms and
independent one-vs-rest runs."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_blobs, make_moons

import ssl_opt
from ssl_opt.builders import knn_graph, laplacian
from ssl_opt.estimators import DegenerateProblemWarning, LapRLSC, LapSVC
from ssl_opt.problems import LapRLS, LapSVM


def _semi(y, n_labeled, seed=0):
    rng = np.random.default_rng(seed)
    ys = np.array(y, dtype=object if np.asarray(y).dtype.kind in "OU" else None)
    ys = ys.copy()
    hidden = rng.permutation(len(y))[n_labeled:]
    ys[hidden] = -1
    return ys


def _moons(n=120, n_labeled=12, seed=0):
    X, y = make_moons(n, noise=0.12, random_state=seed)
    ys = _semi(y, n_labeled, seed)
    return X, y, ys


def _rbf(A, B, sigma):
    d2 = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)
    return np.exp(-d2 / (2 * sigma**2))


def _problem_by_hand(X, ys, est, loss="squared_hinge"):
    """The problem the estimator should solve, built independently: labeled first, ±1 with
    classes_[1] → +1, K from the test's own RBF, the same kNN graph."""
    lab = np.flatnonzero(ys != -1)
    unl = np.flatnonzero(ys == -1)
    order = np.concatenate([lab, unl])
    Xo = X[order]
    K = _rbf(Xo, Xo, est.kernel_params_["sigma"])
    L = laplacian(knn_graph(Xo, n_neighbors=est.n_neighbors), normalized=True)  # the default
    y_pm = np.where(ys[lab] == est.classes_[1], 1.0, -1.0)
    if loss == "square":
        return LapRLS(K, L, y_pm, est.gamma_A, est.gamma_I), order
    return LapSVM(K, L, y_pm, est.gamma_A, est.gamma_I, loss=loss), order


@pytest.mark.parametrize("Est, loss", [(LapSVC, "squared_hinge"), (LapRLSC, "square"),
                                       (LapSVC, "hinge")])
def test_binary_fit_is_the_certified_optimum_of_the_problem(Est, loss):
    X, _, ys = _moons()
    est = Est(gamma_A=1e-2, gamma_I=1e-1) if Est is LapRLSC else Est(
        gamma_A=1e-2, gamma_I=1e-1, loss=loss)
    est.fit(X, ys)
    problem, order = _problem_by_hand(X, ys, est, loss)
    ref = ssl_opt.solve(problem, backend="reference")
    assert est.solution_.objective == pytest.approx(ref.objective, rel=1e-6, abs=1e-9)
    assert est.certificate().passed
    # the estimator's α in sample order is the problem's α in labeled-first order
    x = {"alpha": est.dual_coef_[order], "b": np.array(est.intercept_)}
    assert problem.objective(x) == pytest.approx(ref.objective, rel=1e-6, abs=1e-9)


def test_string_labels_in_any_order_give_the_ordered_result():
    X, y, ys = _moons()
    names = np.array(["ham", "spam"], dtype=object)
    ys_named = np.array([-1 if v == -1 else names[v] for v in ys], dtype=object)
    a = LapSVC().fit(X, ys)
    b = LapSVC().fit(X, ys_named)
    assert list(b.classes_) == ["ham", "spam"]
    np.testing.assert_allclose(b.decision_function(X), a.decision_function(X), atol=1e-10)
    np.testing.assert_array_equal(b.predict(X), names[a.predict(X)])
    np.testing.assert_array_equal(b.transduction_, names[a.transduction_])


def test_out_of_sample_is_the_kernel_expansion_in_blocks():
    X, _, ys = _moons()
    X_new = np.random.default_rng(3).normal(size=(53, 2))
    est = LapSVC(block_size=7).fit(X, ys)
    expected = _rbf(X_new, X, est.kernel_params_["sigma"]) @ est.dual_coef_ + est.intercept_
    np.testing.assert_allclose(est.decision_function(X_new), expected, atol=1e-10)
    # on the training points the expansion is the solution's f
    np.testing.assert_allclose(est.decision_function(X), est.decision_values_, atol=1e-10)


def test_default_width_is_the_median_distance():
    X, _, ys = _moons()
    est = LapRLSC().fit(X, ys)
    d = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))[np.triu_indices(len(X), 1)]
    assert est.kernel_params_["sigma"] == pytest.approx(np.median(d), rel=1e-10)


@pytest.mark.parametrize("Est, solver", [(LapRLSC, "laprls-direct"), (LapSVC, "newton")])
def test_one_vs_rest_equals_independent_binary_problems(Est, solver):
    X, y = make_blobs(150, centers=4, cluster_std=1.5, random_state=1)
    ys = y.copy()
    ys[np.random.default_rng(0).permutation(150)[20:]] = -1
    for k in range(4):  # at least one label per class
        ys[np.flatnonzero(y == k)[0]] = k
    est = Est(gamma_A=1e-2, gamma_I=1e-2).fit(X, ys)
    assert len(est.solution_) == 4 and est.dual_coef_.shape == (150, 4)
    if Est is LapRLSC:  # one factorization shared by the four classes
        assert est.solution_[0].info["shared_factorization"] == 4
    lab, unl = np.flatnonzero(ys != -1), np.flatnonzero(ys == -1)
    order = np.concatenate([lab, unl])
    Xo = X[order]
    K = _rbf(Xo, Xo, est.kernel_params_["sigma"])
    L = laplacian(knn_graph(Xo, n_neighbors=10), normalized=True)
    for k in range(4):
        y_pm = np.where(ys[lab] == k, 1.0, -1.0)
        p = (LapRLS(K, L, y_pm, 1e-2, 1e-2) if Est is LapRLSC
             else LapSVM(K, L, y_pm, 1e-2, 1e-2))
        sol = ssl_opt.solve(p, solver=solver)
        np.testing.assert_allclose(est.dual_coef_[order, k], sol.x["alpha"], atol=1e-8)
        assert est.intercept_[k] == pytest.approx(float(sol.x["b"]), abs=1e-8)
    assert all(c.passed for c in est.certificate())
    np.testing.assert_array_equal(est.predict(X), np.argmax(est.decision_function(X), axis=1))


def test_precomputed_kernel_affinity_and_laplacian_match_the_built_ones():
    X, _, ys = _moons()
    # γ_A = 1e-2: at the default 1e-6 α is determined to ~1e-6 relative only (f is not)
    est = LapSVC(1e-2, sigma=0.4).fit(X, ys)
    K = _rbf(X, X, 0.4)
    W = knn_graph(X, n_neighbors=10)
    via_kernel = LapSVC(1e-2, kernel="precomputed").fit(K, ys, affinity=W)
    via_laplacian = LapSVC(1e-2, sigma=0.4).fit(X, ys, laplacian=laplacian(W, normalized=True))
    X_new = np.random.default_rng(1).normal(size=(9, 2))
    for other in (via_kernel, via_laplacian):
        np.testing.assert_allclose(other.dual_coef_, est.dual_coef_, atol=1e-8)
    np.testing.assert_allclose(via_kernel.decision_function(_rbf(X_new, X, 0.4)),
                               est.decision_function(X_new), atol=1e-8)


def test_precomputed_kernel_graph_uses_kernel_distances():
    # with a linear kernel, d² = K_ii + K_jj − 2K_ij is the Euclidean distance: same kNN graph
    X, _, ys = _moons()
    a = LapRLSC(kernel="linear").fit(X, ys)
    b = LapRLSC(kernel="precomputed").fit(X @ X.T, ys)
    np.testing.assert_allclose(b.dual_coef_, a.dual_coef_, atol=1e-7)


def test_sparse_input_equals_dense():
    X, _, ys = _moons()
    # One solver for both: on this rank-2 K the coefficients are not unique (α + null(K) gives
    # the same f), and auto's choice rests on timings measured at each fit.
    # γ_A = 1e-2: at the default 1e-6 α is determined to ~1e-6 relative only (f is not)
    a = LapSVC(1e-2, kernel="linear", solver="newton").fit(X, ys)
    b = LapSVC(1e-2, kernel="linear", solver="newton").fit(sp.csr_matrix(X), ys)
    np.testing.assert_allclose(b.dual_coef_, a.dual_coef_, atol=1e-9)


def test_early_stopping_runs_pcg_with_the_rule():
    X, y, ys = _moons(200, 10)
    stab = LapSVC(early_stopping="stability").fit(X, ys)
    assert stab.solution_.solver == "pcg"
    assert stab.solution_.info["options"]["early_stopping"] == "stability"
    with pytest.raises(ValueError, match="X_val"):
        LapSVC(early_stopping="validation").fit(X, ys)
    X_val, y_val = make_moons(40, noise=0.12, random_state=5)
    val = LapSVC(early_stopping="validation").fit(X, ys, X_val=X_val, y_val=y_val)
    assert val.solution_.solver == "pcg"
    assert np.mean(val.transduction_ == y) > 0.8


def test_warm_start_reuses_the_previous_solution():
    X, _, ys = _moons(200, 20)
    est = LapSVC(gamma_I=1e-1, warm_start=True, solver="newton").fit(X, ys)
    est.set_params(gamma_I=1.1e-1)
    est.fit(X, ys)
    cold = LapSVC(gamma_I=1.1e-1, solver="newton").fit(X, ys)
    assert est.solution_.info["options"]["warm_start"] is not None
    np.testing.assert_allclose(est.dual_coef_, cold.dual_coef_, atol=1e-7)


def test_degenerate_runs_warn():
    X, _, ys = _moons()
    with pytest.warns(DegenerateProblemWarning, match="nearly the identity"):
        LapRLSC(sigma=1e-3).fit(X, ys)
    with pytest.warns(DegenerateProblemWarning, match="nearly constant"):
        LapRLSC(sigma=1e4).fit(X, ys)
    X2 = np.vstack([X, X + 100.0])
    ys2 = np.concatenate([ys, -np.ones_like(ys)])  # the far copy has no label
    with pytest.warns(DegenerateProblemWarning, match="without a labeled point"):
        LapRLSC(n_neighbors=3).fit(X2, ys2)


@pytest.mark.parametrize("params, name", [
    ({"gamma_A": 0.0}, "gamma_A"), ({"gamma_I": -1.0}, "gamma_I"),
    ({"kernel": "cosine"}, "kernel"), ({"n_neighbors": 0}, "n_neighbors"),
    ({"early_stopping": "patience"}, "early_stopping"), ({"sigma": -1.0}, "sigma"),
    ({"graph_weights": "distance"}, "graph_weights"), ({"laplacian_power": 0}, "laplacian_power"),
    ({"early_stopping": "stability", "solver": "newton"}, "early_stopping"),
])
def test_bad_parameters_name_themselves(params, name):
    X, _, ys = _moons()
    with pytest.raises(ValueError, match=name):
        LapSVC(**params).fit(X, ys)


def test_labels_errors():
    X, _, _ = _moons()
    with pytest.raises(ValueError, match="no labeled"):
        LapSVC().fit(X, -np.ones(len(X)))
    y_one = -np.ones(len(X))
    y_one[:5] = 1
    with pytest.raises(ValueError, match="class"):
        LapSVC().fit(X, y_one)


def test_prediction_holds_one_block_of_the_cross_kernel_at_a_time():
    import tracemalloc

    X, _, ys = _moons(300, 10)
    est = LapRLSC(block_size=50).fit(X, ys)
    X_new = np.random.default_rng(0).normal(size=(4000, 2))
    tracemalloc.start()
    est.decision_function(X_new)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    block, full = 50 * 300 * 8, 4000 * 300 * 8
    assert peak < 4 * block + 3 * 4000 * 8 < full / 4  # the blocks' temporaries and the output


def test_shared_factorization_refuses_problems_it_cannot_solve():
    from ssl_opt.exceptions import UnsupportedProblemError
    from ssl_opt.problems import OneVsRest

    X, _, ys = _moons()
    est = LapSVC().fit(X, ys)
    classes = OneVsRest(est.problem_, np.column_stack([est.problem_.y, -est.problem_.y]))
    with pytest.raises(UnsupportedProblemError, match="quadratic"):
        ssl_opt.solve(classes, solver="laprls-direct")  # squared hinge: one step is not it
    solution = ssl_opt.solve(classes.with_loss("square"), solver="laprls-direct")
    assert solution.info["shared_factorization"] == 2


@pytest.mark.parametrize("kwargs, message", [
    ({"affinity": np.ones((5, 5)) - np.eye(5)}, "affinity must be 120x120"),
    ({"affinity": np.full((120, 120), np.nan)}, "affinity contains NaN"),
    ({"laplacian": np.eye(5)}, "laplacian must be 120x120"),
    ({"laplacian": np.eye(120) * 1j}, "laplacian has a complex dtype"),
    ({"laplacian": np.triu(np.ones((120, 120)))}, "laplacian must be symmetric"),
])
def test_bad_graph_inputs_name_the_argument(kwargs, message):
    X, _, ys = _moons()
    with pytest.raises(ValueError, match=message):
        LapSVC().fit(X, ys, **kwargs)
