"""docs/design.md §5: every public entry point rejects bad input with a ValueError naming it."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from ssl_opt.problems import LapRLS, LapSVM


@pytest.fixture
def parts(problem_factory):
    p = problem_factory("blobs", n=20, n_labeled=4)
    return np.array(p.K), sp.csr_matrix(p.L).toarray(), np.array(p.y)


def test_valid_input_builds(parts):
    K, L, y = parts
    assert LapSVM(K, L, y, 1.0, 1.0).n == 20
    assert LapRLS(K, sp.csr_matrix(L), y, 1.0, 1.0, bias=False).l == 4


@pytest.mark.parametrize(
    "mutate, match",
    [
        (lambda K, L, y: (np.where(np.eye(20, dtype=bool), np.nan, K), L, y), "K contains NaN"),
        (lambda K, L, y: (K, np.where(np.eye(20, dtype=bool), np.inf, L), y), "L contains NaN"),
        (lambda K, L, y: (K[:, :19], L, y), "K must be square"),
        (lambda K, L, y: (K, L[:19, :19], y), "L must be 20x20"),
        (lambda K, L, y: (K + np.triu(np.ones((20, 20)), 1), L, y), "K must be symmetric"),
        (lambda K, L, y: (K, L + np.triu(np.ones((20, 20)), 1), y), "L must be symmetric"),
        (lambda K, L, y: (K, L, np.array([1, 0, -1, 1])), "y must hold only -1 and \\+1"),
        (lambda K, L, y: (K, L, np.array([])), "at least one labeled point"),
        (lambda K, L, y: (K, L, np.ones(4)), "one class only"),
        (lambda K, L, y: (K, L, np.r_[y, y, y, y, y, y]), "only 20 points"),
        (lambda K, L, y: (K, L, np.array([1.0, np.nan])), "y contains NaN"),
        (lambda K, L, y: (K, L, y.reshape(2, 2)), "y must be 1-D"),
    ],
)
def test_bad_data(parts, mutate, match):
    K, L, y = mutate(*parts)
    with pytest.raises(ValueError, match=match):
        LapSVM(K, L, y, 1.0, 1.0)


@pytest.mark.parametrize("name, value", [("gamma_A", 0.0), ("gamma_A", -1.0),
                                         ("gamma_I", 0), ("gamma_I", np.nan),
                                         ("gamma_A", "1"), ("gamma_I", True)])
def test_bad_regularization(parts, name, value):
    K, L, y = parts
    kwargs = {"gamma_A": 1.0, "gamma_I": 1.0, name: value}
    with pytest.raises(ValueError, match=name):
        LapSVM(K, L, y, **kwargs)


def test_bad_loss_and_bias(parts):
    K, L, y = parts
    with pytest.raises(ValueError, match="loss must be one of"):
        LapSVM(K, L, y, 1.0, 1.0, loss="cubic")
    with pytest.raises(ValueError, match="bias"):
        LapSVM(K, L, y, 1.0, 1.0, bias="yes")
    with pytest.raises(ValueError, match="delta"):
        from ssl_opt.components import HuberHinge

        HuberHinge(delta=0)


def test_problem_is_immutable(parts):
    p = LapSVM(*parts, 1.0, 1.0)
    with pytest.raises(AttributeError, match="immutable"):
        p.gamma_A = 2.0
    with pytest.raises(ValueError):
        p.K[0, 0] = 5.0


@pytest.mark.parametrize("solver,options,match", [
    ("newton", {"tol": -1.0}, "tol must be >= 0"),
    ("newton", {"max_iter": 2.5}, "max_iter must be an integer"),
    ("newton", {"max_iter": -1}, "max_iter must be >= 0"),
    ("pcg", {"tol": float("nan")}, "tol"),
    ("pcg", {"max_iter": -3}, "max_iter must be >= 0"),
    ("pcg", {"early_stopping": "sometimes"}, "early_stopping must be one of"),
    ("pcg", {"check_every": 0}, "check_every must be >= 1"),
    ("pcg", {"refresh": 0}, "refresh must be >= 1"),
    ("pcg", {"callback": 3}, "callback must be callable"),
    ("laprls-direct", {"tol": 1e-3}, r"unknown option\(s\) \['tol'\]"),
])
def test_solver_options_are_checked_by_name(parts, solver, options, match):
    import ssl_opt

    K, L, y = parts
    p = LapSVM(K, L, y, 1.0, 1.0, loss="squared")
    with pytest.raises(ssl_opt.InvalidInputError, match=match):
        ssl_opt.solve(p, solver=solver, **options)


# ---------------------------------------------------------------- issue 14: every array argument

def _nonconvex_L(L):
    return L - 2.0 * np.eye(L.shape[0])


BAD_ARRAYS = {
    "complex": (lambda a: a.astype(complex), "complex"),
    "nan": (lambda a: np.where(np.ones_like(a, dtype=bool), np.nan, a), "NaN"),
    "string": (lambda a: np.full(a.shape, "x"), "numeric"),
}


@pytest.mark.parametrize("cls", [LapSVM, LapRLS])
@pytest.mark.parametrize("arg", ["K", "L", "y"])
@pytest.mark.parametrize("bad", sorted(BAD_ARRAYS))
def test_every_array_argument_refuses_bad_values_by_name(parts, cls, arg, bad):
    K, L, y = parts
    args = {"K": K, "L": L, "y": y}
    make, _ = BAD_ARRAYS[bad]
    args[arg] = make(args[arg])
    with pytest.raises(ValueError, match=rf"^{arg} ") as info:
        cls(args["K"], args["L"], args["y"], 1.0, 1.0)
    assert str(info.value).startswith(arg)
    if bad == "complex":
        assert "complex" in str(info.value)


def test_empty_kernel_is_blamed_on_K_not_L(parts):
    _, L, y = parts
    with pytest.raises(ValueError, match="^K is empty"):
        LapSVM(np.zeros((0, 0)), L, y, 1.0, 1.0)


@pytest.mark.parametrize("cls", [LapSVM, LapRLS])
@pytest.mark.parametrize("sparse_L", [False, True])
def test_caller_arrays_stay_writeable_and_unchanged(parts, cls, sparse_L):
    K, L, y = parts
    L_in = sp.csr_matrix(L) if sparse_L else L
    copies = (K.copy(), L.copy(), y.copy())
    cls(K, L_in, y, 1.0, 1.0)
    assert K.flags.writeable and y.flags.writeable
    np.testing.assert_array_equal(K, copies[0])
    np.testing.assert_array_equal(y, copies[2])
    L_back = L_in.toarray() if sparse_L else L_in
    np.testing.assert_array_equal(L_back, copies[1])
    if not sparse_L:
        assert L_in.flags.writeable


def _non_canonical_csr(M):
    """CSR of ``M`` with every entry stored twice (half the value each), indices unsorted."""
    csr = sp.csr_matrix(M)
    data, indices, indptr = [], [], [0]
    for i in range(csr.shape[0]):
        cols = csr.indices[csr.indptr[i]:csr.indptr[i + 1]][::-1]
        vals = csr.data[csr.indptr[i]:csr.indptr[i + 1]][::-1] / 2
        indices.extend(np.r_[cols, cols])
        data.extend(np.r_[vals, vals])
        indptr.append(len(indices))
    return sp.csr_matrix((np.array(data), np.array(indices), np.array(indptr)), shape=M.shape)


def test_non_canonical_sparse_laplacian_is_not_canonicalized_in_place(parts):
    K, L, y = parts
    raw = _non_canonical_csr(L)
    assert not raw.has_canonical_format
    before = (raw.data.copy(), raw.indices.copy(), raw.indptr.copy())
    p = LapSVM(K, raw, y, 1.0, 1.0)
    np.testing.assert_array_equal(raw.data, before[0])
    np.testing.assert_array_equal(raw.indices, before[1])
    np.testing.assert_array_equal(raw.indptr, before[2])
    assert raw.data.flags.writeable
    np.testing.assert_allclose(sp.csr_matrix(p.L).toarray() if sp.issparse(p.L) else p.L, L)


@pytest.mark.parametrize("arg, make", [
    ("K", lambda K, L: (K - 2.0 * np.abs(K).max() * np.eye(K.shape[0]), L)),
    ("L", lambda K, L: (K, -L)),  # negative edge weights
    ("L", lambda K, L: (K, _nonconvex_L(L))),
    ("L", lambda K, L: (K, sp.csr_matrix(-L))),
])
def test_indefinite_kernel_or_laplacian_is_refused(parts, arg, make):
    K, L, y = parts
    K_bad, L_bad = make(K, L)
    with pytest.raises(ValueError, match=rf"^{arg} is not positive semidefinite"):
        LapSVM(K_bad, L_bad, y, 1.0, 1.0)
    # the same data with PSD matrices builds (guards against a check that refuses everything)
    LapSVM(K, L, y, 1.0, 1.0)


BAD_WARM_STARTS = [
    ("nan", lambda n: {"alpha": np.full(n, np.nan), "b": 0.0}, r"warm_start\['alpha'\].*NaN"),
    ("inf b", lambda n: {"alpha": np.zeros(n), "b": np.inf}, r"warm_start\['b'\].*NaN or inf"),
    ("shape", lambda n: {"alpha": np.zeros(n - 1), "b": 0.0}, r"warm_start\['alpha'\].*shape"),
    ("type", lambda n: "zeros", "warm_start must be a dict"),
    ("int", lambda n: 5, "warm_start must be a dict"),
    ("missing", lambda n: {"alpha": np.zeros(n)}, "warm_start is missing variable 'b'"),
    ("complex", lambda n: {"alpha": np.zeros(n, complex), "b": 0.0},
     r"warm_start\['alpha'\] has a complex dtype"),
    ("string", lambda n: {"alpha": ["a"] * n, "b": 0.0}, r"warm_start\['alpha'\] must be numeric"),
]


@pytest.mark.parametrize("solver", ["newton", "pcg"])
@pytest.mark.parametrize("label, make, match", BAD_WARM_STARTS, ids=[b[0] for b in BAD_WARM_STARTS])
def test_bad_warm_start_is_refused_by_name(parts, solver, label, make, match):
    import ssl_opt

    K, L, y = parts
    p = LapSVM(K, L, y, 1.0, 1.0, loss="squared")
    with pytest.raises(ssl_opt.InvalidInputError, match=match):
        ssl_opt.solve(p, solver=solver, warm_start=make(p.n))


@pytest.mark.parametrize("validation, match", [
    (lambda K, y: (K[:4].astype(complex), y), "validation K_val has a complex dtype"),
    (lambda K, y: (np.full((4, 20), np.nan), y), "validation K_val contains NaN"),
    (lambda K, y: (np.full((4, 20), "a"), y), "validation K_val must be a numeric matrix"),
    (lambda K, y: (K[:4], y.astype(complex)), "validation y_val has a complex dtype"),
    (lambda K, y: (K[:4, :19], y), r"K_val of shape \(\|V\|, 20\)"),
    (lambda K, y: (K[:4], np.array([1.0, 2.0, -1.0, 1.0])), "y_val must hold ±1"),
    (lambda K, y: K, "validation must be a pair"),
])
def test_bad_validation_set_is_refused_by_name(parts, validation, match):
    import ssl_opt

    K, L, y = parts
    p = LapSVM(K, L, y, 1.0, 1.0, loss="squared")
    with pytest.raises(ssl_opt.InvalidInputError, match=match):
        ssl_opt.solve(p, solver="pcg", early_stopping="validation", validation=validation(K, y))


@pytest.mark.parametrize("solver", ["newton", "pcg"])
@pytest.mark.parametrize("options, name", [
    ({"tol": -1}, "tol"), ({"tol": float("nan")}, "tol"), ({"tol": "1e-6"}, "tol"),
    ({"max_iter": -5}, "max_iter"), ({"max_iter": 2.5}, "max_iter"),
    ({"max_iter": "10"}, "max_iter"),
])
def test_bad_options_are_refused_by_name(parts, solver, options, name):
    import ssl_opt

    K, L, y = parts
    p = LapSVM(K, L, y, 1.0, 1.0, loss="squared")
    with pytest.raises(ssl_opt.InvalidInputError, match=f"^{name} must"):
        ssl_opt.solve(p, solver=solver, **options)


@pytest.mark.parametrize("solver", ["newton", "pcg", "laprls-direct"])
@pytest.mark.parametrize("arg", ["K", "L"])
def test_indefinite_matrix_above_the_build_check_is_caught_by_the_curvature_test(solver, arg):
    """Above PSD_DENSE_MAX_N the build does no eigenvalue solve; Newton and PCG refuse the
    first direction of negative curvature instead of reporting a stationary point as optimal."""
    import ssl_opt
    from ssl_opt._validation import PSD_DENSE_MAX_N
    from ssl_opt.builders import graph_laplacian_from_data, rbf_kernel

    n = PSD_DENSE_MAX_N + 100
    X = np.random.default_rng(0).standard_normal((n, 3))
    K, L = rbf_kernel(X, sigma=1.0), graph_laplacian_from_data(X)
    y = np.where(X[:20, 0] > 0, 1.0, -1.0)
    K_bad, L_bad = (K - 0.5 * np.eye(n), L) if arg == "K" else (K, -L)
    bad = K_bad if arg == "K" else L_bad
    assert np.linalg.eigvalsh(bad.toarray() if sp.issparse(bad) else bad)[0] < -0.1
    p = LapSVM(K_bad, L_bad, y, 1.0, 1.0, loss="squared")
    with pytest.raises(ssl_opt.InvalidInputError, match=f"^{arg} is not positive semidefinite"):
        ssl_opt.solve(p, solver=solver)
    assert ssl_opt.solve(LapSVM(K, L, y, 1.0, 1.0, loss="squared"), solver=solver).status \
        == "optimal"


def test_complex_kernel_operator_is_refused(parts):
    from scipy.sparse.linalg import aslinearoperator

    K, L, y = parts
    with pytest.raises(ValueError, match="^K has a complex dtype"):
        LapSVM(aslinearoperator(K.astype(complex)), L, y, 1.0, 1.0)
    assert LapSVM(aslinearoperator(K), L, y, 1.0, 1.0).n == 20
