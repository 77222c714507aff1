"""``kernel-factor`` (plugins/model/kernel_factor.py) and the restatement it solves
(ssl_opt/modeling/kernel_range.py): exact identities of the pivoted factor, solutions against
the CVXPY reference and the stated model's certificate, the structures it refuses, honest
statuses."""

from __future__ import annotations

import numpy as np
import pytest

import ssl_opt
from ssl_opt.builders import rbf_kernel
from ssl_opt.exceptions import InvalidInputError, UnsupportedProblemError
from ssl_opt.modeling import variants
from ssl_opt.modeling.kernel_range import KernelRange, pivoted_factor
from ssl_opt.plugins.model import kernel_factor

#: Sizes at which the variants' RBF kernels have numerical rank below n.
SIZES = {"lapsvm_balance": 700, "lapsvm_box": 300, "multiclass_laprls": 300,
         "multiclass_simplex": 300, "lapsvm_tv": 300}


def _kernel(n=200, seed=0):
    X = np.random.default_rng(seed).standard_normal((n, 2))
    return rbf_kernel(X, sigma=1.0)


def test_the_expansion_reproduces_the_factor_exactly():
    """α(h) = E_P L^{-T} h: Kα = R h and αᵀKα = ‖h‖² to round-off, for the full K (computed
    independently from K itself), and K − RRᵀ within the factor's tolerance. h = Rᵀv, as at
    an optimum (h = −Rᵀg/2w): a random h has entries on the last pivots (L_jj ~ 3e-7) that
    make α ~1e6 and Kα's round-off ~1e-8."""
    K = _kernel()
    f = pivoted_factor(K)
    assert 0 < f.rank < K.shape[0]
    h = f.R.T @ np.random.default_rng(1).standard_normal((K.shape[0], 3))
    alpha = f.expansion(h, K.shape[0])
    assert np.count_nonzero(np.any(alpha != 0, axis=1)) <= f.rank
    np.testing.assert_allclose(K @ alpha, f.R @ h, atol=1e-9 * np.abs(f.R @ h).max())
    np.testing.assert_allclose(np.trace(alpha.T @ K @ alpha), np.sum(h * h), rtol=1e-8)
    assert np.abs(K - f.R @ f.R.T).max() <= 1e-12 * K.diagonal().max()


def test_an_indefinite_matrix_is_refused():
    K = np.array([[1.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    with pytest.raises(InvalidInputError, match="positive semidefinite"):
        pivoted_factor(K)


def test_the_restated_model_has_the_stated_objective():
    model = variants.lapsvm_balance(150)
    found = KernelRange.of(model)
    rng = np.random.default_rng(2)
    x = found.restrict({name: rng.standard_normal(shape)
                        for name, shape in model.variables.items()})
    assert found.model.objective(x) == pytest.approx(model.objective(found.expand(x)),
                                                     rel=1e-10)


@pytest.mark.parametrize("builder", sorted(SIZES))
def test_variants_match_the_reference(builder):
    model = variants.VARIANTS[builder](SIZES[builder])
    sol = ssl_opt.solve(model, solver="kernel-factor")
    ref = ssl_opt.solve(model, solver="cvxpy")
    assert sol.status == "optimal" and ref.optimal, (sol.status, ref.status)
    rank = sol.info["kernel_ranks"]["alpha"]
    assert rank < SIZES[builder]
    assert abs(sol.objective - ref.objective) <= 1e-7 * max(1.0, abs(ref.objective))
    assert ssl_opt.certify(model, sol, reference=ref).passed


def test_a_warm_start_from_the_stated_solution():
    model = variants.multiclass_simplex(200)
    first = ssl_opt.solve(model, solver="kernel-factor")
    again = ssl_opt.solve(model, solver="kernel-factor", warm_start=first)
    assert again.status == "optimal"
    assert again.iterations <= first.iterations
    assert again.objective == pytest.approx(first.objective, rel=1e-8)


def test_a_loose_factor_ends_stalled_not_optimal(monkeypatch):
    """With pivots dropped up to 1e-2·max diag K the restated optimum is no longer the stated
    model's: the inner solver says optimal, the stated certificate does not."""
    model = variants.multiclass_laprls(200)
    monkeypatch.setattr(kernel_factor, "FACTOR_RTOL", 1e-2)
    sol = ssl_opt.solve(model, solver="kernel-factor")
    assert sol.status == "stalled"
    assert "certificate" in sol.info["reason"]
    assert not ssl_opt.certify(model, sol).passed


def _named_lapsvm():
    from ssl_opt.datasets.synthetic import two_moons
    from ssl_opt.problems import LapSVM

    data = two_moons(n=80, n_labeled=8, noise=0.1, seed=0)
    K = rbf_kernel(data.X, sigma=0.35)
    from ssl_opt.builders import knn_graph, laplacian

    return LapSVM(K, laplacian(knn_graph(data.X, n_neighbors=6)), data.y, gamma_A=1e-2,
                  gamma_I=1.0)


def test_refused_structures_are_named():
    solver = ssl_opt.registry.solvers()["kernel-factor"]
    assert any("kernel variable" in r for r in solver.missing(variants.laprls_l1(60)))
    assert any("kernel variable" in r for r in solver.missing(variants.multiclass_l21(45)))
    assert any("plain model" in r for r in solver.missing(_named_lapsvm()))
    with pytest.raises(UnsupportedProblemError, match="kernel variable"):
        ssl_opt.solve(variants.label_propagation(60), solver="kernel-factor")


def test_a_kernel_of_high_rank_is_refused_before_its_factor():
    """At n = 400 the two-moons kernel has rank ~280 (the sample estimates 292): above n/2,
    refused with the estimate; the factor itself finds the same order."""
    model = variants.lapsvm_balance(400)
    reasons = ssl_opt.registry.solvers()["kernel-factor"].missing(model)
    assert any("numerical rank" in r for r in reasons), reasons
    K = model.terms[1].K
    assert pivoted_factor(K).rank > 0.5 * K.shape[0]


@pytest.mark.parametrize("option, bad", [("inner", "nope"), ("inner", "kernel-factor"),
                                         ("inner", 3), ("tol", float("nan")), ("max_iter", 0),
                                         ("check_terms", "yes")])
def test_a_bad_option_is_refused_by_name(option, bad):
    with pytest.raises(InvalidInputError, match=option):
        ssl_opt.solve(variants.lapsvm_balance(60), solver="kernel-factor", **{option: bad})
