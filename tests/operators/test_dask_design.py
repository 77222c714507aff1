"""The Dask-distributed linear design (ssl_opt/operators/distributed.py) on a 2-worker
LocalCluster: products and row subsets against the dense formula ``[X, 1]`` computed in memory,
and MFN / TSVM / DA over the distributed rows against the same solvers in memory (whose
solutions are certified against the CVXPY reference)."""

from __future__ import annotations

import dask.array as da
import distributed
import numpy as np
import pytest
import scipy.sparse as sp

import ssl_opt
from ssl_opt.datasets.text_generator import synthetic_text
from ssl_opt.exceptions import InvalidInputError, UnsupportedProblemError
from ssl_opt.modeling import Model
from ssl_opt.numerics.cgls import cgls
from ssl_opt.numerics.design import LinearDesign
from ssl_opt.operators import DaskDesign
from ssl_opt.operators import distributed as dist
from ssl_opt.problems import DAS3VM, TSVM, LinearSVM

LAM = 1e-2


@pytest.fixture(scope="module")
def text():
    return synthetic_text(60, 30, nnz_per_row=6, n_labeled=10, seed=1)


def as_dask(X, rows=13, cols=None):
    return da.from_array(X, chunks=(rows, cols or X.shape[1]), asarray=False)


def augmented(X, bias):
    """``[X, 1]`` as a dense array: the independent formula the products must match."""
    X = X.toarray() if sp.issparse(X) else np.asarray(X)
    return np.hstack([X, np.ones((X.shape[0], 1))]) if bias else X


@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("merge", [True, False])
@pytest.mark.parametrize("bias", [True, False])
def test_products_and_rows_match_the_dense_formula(client, text, sparse, merge, bias):
    X = text.X if sparse else text.X.toarray()
    # Column chunks (7 wide) are merged into whole rows; 13-row chunks do not align with
    # the slices below.
    design = DaskDesign(as_dask(X, 13, 7), bias, client=client, merge=merge)
    Xt = augmented(X, bias)
    n, dim = Xt.shape
    assert (design.n, design.d, design.dim, design.bias) == (60, 30, dim, bias)
    assert design.sparse is sparse and not design.in_memory
    assert design.nnz == (text.X.nnz if sparse else X.size)
    assert design.n_blocks == (2 if merge else 5)
    rng = np.random.default_rng(0)
    w, v, V = rng.standard_normal(dim), rng.standard_normal(n), rng.standard_normal((n, 3))
    tol = dict(rtol=0, atol=1e-12)
    np.testing.assert_allclose(design.matvec(w), Xt @ w, **tol)
    np.testing.assert_allclose(design.rmatvec(v), Xt.T @ v, **tol)
    np.testing.assert_allclose(design.rmatvec(V), Xt.T @ V, **tol)
    subsets = [np.array([0, 3, 12, 13, 14, 40, 59]), slice(5, 31), slice(None, None, 4),
               rng.random(n) < 0.3, np.array([59, 2, 2, 30, 1]), np.array([], dtype=int)]
    for index in subsets:
        sub, rows = design.rows(index), Xt[index]
        assert sub.n == rows.shape[0] and sub.dim == dim
        np.testing.assert_allclose(sub.matvec(w), rows @ w, **tol)
        u = rng.standard_normal(rows.shape[0])
        np.testing.assert_allclose(sub.rmatvec(u), rows.T @ u, **tol)
    stacked = design.stacked([np.arange(10), np.arange(10, 60), np.arange(10, 60)])
    rows = np.vstack([Xt[:10], Xt[10:], Xt[10:]])
    np.testing.assert_allclose(stacked.matvec(w), rows @ w, **tol)
    assert stacked.n == 110


def test_traffic_counts_the_bytes_of_the_docstring(client, text):
    design = DaskDesign(as_dask(text.X), True, client=client)
    B, n, d = design.n_blocks, design.n, design.d
    design.traffic.reset()
    design.matvec(np.ones(d + 1))
    design.rmatvec(np.ones(n))
    t = design.traffic.snapshot()
    assert t["matvecs"] == t["rmatvecs"] == 1 and t["round_trips"] == 2
    assert t["tasks"] == 3 * B - 1
    assert t["bytes_to_workers"] == 8 * (B * d + n)
    assert t["bytes_from_workers"] == 8 * (n + d)
    assert t["bytes_between_workers"] == 8 * (B - 1) * d


def cgls_instance(text, seed=2):
    """A weighted least-squares instance on the text matrix (some zero weights, as MFN's
    inactive rows) and its exact solution from the dense normal equations [001 eq. 4]."""
    rng = np.random.default_rng(seed)
    n = text.X.shape[0]
    C = rng.uniform(0.0, 2.0, n)
    C[::7] = 0.0
    b = rng.standard_normal(n)
    lam = 0.3
    A = augmented(text.X, True)
    exact = np.linalg.solve(lam * np.eye(A.shape[1]) + A.T @ (C[:, None] * A), A.T @ (C * b))
    return C, b, lam, A, exact


def true_relative_residual(A, C, b, lam, beta):
    """``‖X̃ᵀCb − (λI + X̃ᵀCX̃)β‖ / ‖X̃ᵀCb‖`` from the dense matrix."""
    rhs = A.T @ (C * b)
    return np.linalg.norm(rhs - lam * beta - A.T @ (C * (A @ beta))) / np.linalg.norm(rhs)


@pytest.mark.parametrize("merge", [True, False])
def test_fused_cgls_matches_in_memory_cgls_with_one_synchronization_per_iteration(
        client, text, merge):
    C, b, lam, A, exact = cgls_instance(text)
    design = DaskDesign(as_dask(text.X), True, client=client, merge=merge)
    local = LinearDesign(text.X, True)
    B, n, dim = design.n_blocks, design.n, design.dim
    beta0 = np.zeros(dim)
    for outputs0, tol in ((None, 1e-12), (np.zeros(n), 1e-12), (np.zeros(n), 1e-6)):
        ref = cgls(local, C, b, lam, beta0, outputs0, tol=tol)
        design.traffic.reset()
        res = cgls(design, C, b, lam, beta0, outputs0, tol=tol)
        t = design.traffic.snapshot()
        assert res.converged and ref.converged and res.residual <= tol
        # dim = 31: CG's exact-arithmetic bound; the last iterations chase round-off, where
        # the recurrence residual and the in-memory one (from z) part by a few iterations.
        assert abs(res.iterations - ref.iterations) <= (1 if tol > 1e-8 else 3)
        if tol < 1e-8:
            np.testing.assert_allclose(res.beta, exact, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(res.beta, ref.beta, rtol=1e-10, atol=1e-12)
        assert res.residual == pytest.approx(true_relative_residual(A, C, b, lam, res.beta),
                                             rel=1e-3, abs=1e-15)
        # One synchronization per iteration, plus the start and the final true residual.
        k = res.iterations
        assert (t["cgls_steps"], t["residual_checks"], t["cgls_solves"]) == (k, 1, 1)
        assert t["round_trips"] == k + 2 and t["matvecs"] == t["rmatvecs"] == 0
        # Only (dim)-vectors per iteration; C, b (and o0) go to the workers once.
        sent = n if outputs0 is not None else B * dim  # o0, or β to compute it
        assert t["bytes_to_workers"] == 8 * (2 * n + sent + B * dim * (k + 1))
        assert t["bytes_from_workers"] == 8 * B * (2 * dim + k * (dim + 1) + dim)
        assert t["tasks"] == B * (k + 3)


def test_unfused_cgls_keeps_two_synchronizations_per_iteration(client, text):
    C, b, lam, _, exact = cgls_instance(text)
    design = DaskDesign(as_dask(text.X), True, client=client, fused=False)
    assert design.cgls is None and design.rows(slice(0, 30)).cgls is None
    res = cgls(design, C, b, lam, np.zeros(design.dim), np.zeros(design.n), tol=1e-12)
    np.testing.assert_allclose(res.beta, exact, rtol=1e-10, atol=1e-12)
    t = design.traffic
    assert t.cgls_steps == 0 and t.round_trips == 2 * res.iterations + 1


def test_fused_cgls_on_row_subsets_seeds_and_caps(client, text):
    """MFN's calls: a row subset with outputs from a seed; a capped (crude) solve is reported
    unconverged with its iteration count; a seed at the solution stops at once."""
    C, b, lam, _, _ = cgls_instance(text, seed=5)
    design = DaskDesign(as_dask(text.X), True, client=client)
    idx = np.array([1, 2, 3, 17, 20, 33, 34, 35, 36, 50, 58])
    sub, rows = design.rows(idx), augmented(text.X, True)[idx]
    lam = 0.05
    exact = np.linalg.solve(lam * np.eye(rows.shape[1]) + rows.T @ (C[idx, None] * rows),
                            rows.T @ (C[idx] * b[idx]))
    seed = np.random.default_rng(1).standard_normal(design.dim)
    res = cgls(sub, C[idx], b[idx], lam, seed, rows @ seed, tol=1e-11)
    assert res.converged
    np.testing.assert_allclose(res.beta, exact, rtol=1e-9, atol=1e-11)
    capped = cgls(sub, C[idx], b[idx], lam, seed, rows @ seed, tol=1e-11, max_iter=3)
    ref = cgls(LinearDesign(text.X, True).rows(idx), C[idx], b[idx], lam, seed, rows @ seed,
               tol=1e-11, max_iter=3)
    assert (capped.iterations, capped.converged) == (3, False)
    np.testing.assert_allclose(capped.beta, ref.beta, rtol=1e-12, atol=1e-14)
    assert capped.residual == pytest.approx(ref.residual, rel=1e-9)
    # An inexact Newton step (forcing): stops at η‖r₀‖, unconverged, without the true residual.
    design.traffic.reset()
    loose = cgls(sub, C[idx], b[idx], lam, seed, rows @ seed, tol=1e-11, forcing=0.1)
    ref = cgls(LinearDesign(text.X, True).rows(idx), C[idx], b[idx], lam, seed, rows @ seed,
               tol=1e-11, forcing=0.1)
    assert (loose.iterations, loose.converged) == (ref.iterations, False)
    assert loose.residual == pytest.approx(ref.residual, rel=1e-6)
    assert design.traffic.residual_checks == 0
    design.traffic.reset()
    done = cgls(sub, C[idx], b[idx], lam, exact, rows @ exact, tol=1e-6)
    assert (done.iterations, done.converged) == (0, True)
    assert design.traffic.round_trips == 1
    zero = cgls(sub, np.zeros(idx.size), b[idx], lam, seed, rows @ seed)
    assert (zero.iterations, zero.converged) == (0, True) and not zero.beta.any()


def test_fused_cgls_certifies_convergence_by_the_true_residual(client, text, monkeypatch):
    """A recurrence residual that drifted from the true one (here: an error of 1e-6·‖X̃ᵀCq‖
    injected once, at the second iteration; it stays in the recurrence) reports convergence
    too early; the true residual then replaces it and CGLS goes on until the true residual
    meets the tolerance."""
    C, b, lam, A, exact = cgls_instance(text)
    design = DaskDesign(as_dask(text.X), True, client=client)
    step, calls = design._step, []
    error = 1e-6 * np.random.default_rng(0).standard_normal(design.dim)

    def drifting(rows, p):
        u, s = step(rows, p)
        calls.append(None)
        return (u + np.linalg.norm(u) * error if len(calls) == 2 else u), s

    monkeypatch.setattr(design, "_step", drifting)
    res = cgls(design, C, b, lam, np.zeros(design.dim), None, tol=1e-10)
    assert res.converged
    assert true_relative_residual(A, C, b, lam, res.beta) <= 1e-10
    np.testing.assert_allclose(res.beta, exact, rtol=1e-7, atol=1e-8)
    assert design.traffic.residual_checks >= 2  # the early claim was refused


def test_fused_cgls_tree_sum(client, text, monkeypatch):
    """Partial sums above CLIENT_SUM_BYTES are added pairwise on the workers."""
    C, b, lam, _, exact = cgls_instance(text)
    monkeypatch.setattr(dist, "CLIENT_SUM_BYTES", 0)
    design = DaskDesign(as_dask(text.X), True, client=client, merge=False)  # 5 blocks
    res = cgls(design, C, b, lam, np.zeros(design.dim), np.zeros(design.n), tol=1e-12)
    np.testing.assert_allclose(res.beta, exact, rtol=1e-10, atol=1e-12)
    t = design.traffic
    assert t.round_trips == res.iterations + 2
    assert t.bytes_between_workers == 8 * 4 * (2 * design.dim + res.iterations
                                               * (design.dim + 1) + design.dim)


def test_problems_build_the_design_from_a_dask_array(client, text):
    with pytest.raises(InvalidInputError, match="client"):
        LinearSVM(as_dask(text.X), text.y, LAM)  # no default client: the fixture's is not
    with client.as_current():
        problem = LinearSVM(as_dask(text.X), text.y, LAM)
    assert isinstance(problem.design, DaskDesign)
    assert problem.design.n == problem.l == 10  # the labeled rows, cut on the workers
    assert problem.structure.sizes["nnz"] == text.X[:10].nnz


def sparse_and_dense(text):
    return [("sparse", text.X), ("dense", text.X.toarray())]


@pytest.mark.parametrize(("kind", "fused"), [("sparse", True), ("dense", True),
                                             ("sparse", False)])
def test_mfn_over_dask_gives_the_in_memory_objective(client, text, kind, fused):
    X = dict(sparse_and_dense(text))[kind]
    memory = LinearSVM(X, text.y, LAM)
    ref = ssl_opt.solve(memory, solver="mfn")
    assert ssl_opt.certify(memory, ref).passed  # against the CVXPY reference
    design = DaskDesign(as_dask(X), True, client=client, fused=fused)
    problem = LinearSVM(design, text.y, LAM)
    design.traffic.reset()
    sol = ssl_opt.solve(problem, solver="mfn")
    # Fused: every CGLS iteration is one fused step and no X̃ᵀv runs; unfused: the reverse.
    t = design.traffic
    assert t.cgls_steps == (sol.info["cg_iterations"] if fused else 0)
    assert (t.rmatvecs == 0) is fused
    assert abs(sol.objective - ref.objective) <= 1e-10 * abs(ref.objective)
    np.testing.assert_allclose(sol.x["w"], ref.x["w"], rtol=0, atol=1e-8)
    cert = ssl_opt.certify(problem, sol)
    assert cert.passed and cert.residuals_only
    assert any("X is distributed" in note for note in cert.notes)


def test_tsvm_over_dask_gives_the_in_memory_objective(client, text):
    opts = {"lam_u_start": 0.3, "lam_u_factor": 4.0}  # few stages: ~300 products, a fast test
    memory = TSVM(text.X, text.y, LAM, 1.0)
    ref = ssl_opt.solve(memory, solver="tsvm", **opts)
    assert ssl_opt.certify(memory, ref).passed
    problem = TSVM(DaskDesign(as_dask(text.X), True, client=client), text.y, LAM, 1.0)
    sol = ssl_opt.solve(problem, solver="tsvm", **opts)
    # Fused: no X̃ᵀv product ran (the unfused CGLS needs one per iteration); info's count
    # leaves out the labeled start's CGLS iterations.
    t = problem.design.traffic
    assert t.rmatvecs == 0 and t.cgls_steps >= sol.info["cg_iterations"] > 0
    assert abs(sol.objective - ref.objective) <= 1e-10 * abs(ref.objective)
    np.testing.assert_array_equal(sol.x["y_u"], ref.x["y_u"])
    assert ssl_opt.certify(problem, sol).passed


def test_da_over_dask_gives_the_in_memory_objective(client, text):
    # Two temperatures (~600 products: each costs ~10 ms of dask messaging here).
    opts = {"anneal_rate": 8.0, "kl_tol": 1e-2, "T0_factor": 0.2, "max_outer": 2,
            "polish_tol": 1e-8}
    memory = DAS3VM(text.X, text.y, LAM, 1.0)
    ref = ssl_opt.solve(memory, solver="da", **opts)
    assert ssl_opt.certify(memory, ref).passed
    problem = DAS3VM(DaskDesign(as_dask(text.X), True, client=client), text.y, LAM, 1.0)
    sol = ssl_opt.solve(problem, solver="da", **opts)
    t = problem.design.traffic
    assert t.rmatvecs == 0 and t.cgls_steps > 0  # the fused CGLS ran the w-steps
    assert abs(sol.objective - ref.objective) <= 1e-10 * abs(ref.objective)
    np.testing.assert_allclose(sol.x["p"], ref.x["p"], rtol=0, atol=1e-8)
    assert ssl_opt.certify(problem, sol).passed


def test_what_needs_x_in_memory_is_refused(client, text):
    problem = LinearSVM(DaskDesign(as_dask(text.X), True, client=client), text.y, LAM)
    with pytest.raises(InvalidInputError, match="distributed"):
        problem.design.X  # noqa: B018
    with pytest.raises(UnsupportedProblemError, match="the reference needs it in memory"):
        ssl_opt.solve(problem, solver="cvxpy")
    # A named model whose outputs are products through the design: no CVXPY form.
    assert isinstance(problem, Model) and not problem.terms[0].argument.explicit
    tsvm = TSVM(DaskDesign(as_dask(text.X[:20]), True, client=client), text.y, LAM, 1.0)
    with pytest.raises(UnsupportedProblemError, match="the reference needs it in memory"):
        ssl_opt.solve(tsvm, solver="tsvm-exhaustive")  # u = 10 would be enumerable


def test_bad_input(client, text, monkeypatch):
    X = text.X.toarray()
    with pytest.raises(InvalidInputError, match="DaskDesign"):
        LinearDesign(as_dask(X), True)  # would gather X
    with pytest.raises(InvalidInputError, match="NaN or inf"):
        DaskDesign(as_dask(np.where(X > 0.5, np.nan, X)), client=client)
    with pytest.raises(InvalidInputError, match="real numbers"):
        DaskDesign(as_dask(X + 1j), client=client)
    with pytest.raises(InvalidInputError, match="2-D"):
        DaskDesign(da.ones(10, chunks=5), client=client)
    with pytest.raises(InvalidInputError, match="empty"):
        DaskDesign(da.ones((0, 3), chunks=(5, 3)), client=client)
    with pytest.raises(InvalidInputError, match="client must be a distributed.Client"):
        DaskDesign(as_dask(X), client="tcp://scheduler:8786")
    with pytest.raises(InvalidInputError, match="dask.array"):
        DaskDesign([[1.0, 2.0]], client=client)

    def no_client():
        raise ValueError("No clients found")

    monkeypatch.setattr(distributed, "default_client", no_client)
    with pytest.raises(InvalidInputError, match="client=Client"):
        DaskDesign(as_dask(X))
    # An in-memory matrix is split into one block per worker.
    design = DaskDesign(sp.csr_matrix(X), False, client=client)
    assert design.n_blocks == 2 and design.sparse
    np.testing.assert_allclose(design.matvec(np.ones(30)), X.sum(axis=1), rtol=0, atol=1e-12)


def test_selection_charges_the_synchronizations(client, text):
    """select: a distributed X leaves O(n) vectors on the client and multiplies the in-memory
    cost model by the ratio of the product pairs, synchronizations included."""
    design = DaskDesign(as_dask(text.X), bias=True, client=client)
    problem = LinearSVM(design, text.y, LAM)
    local = LinearSVM(text.X, text.y, LAM)
    on_dask = ssl_opt.select(problem).predictions["mfn"]
    in_memory = ssl_opt.select(local).predictions["mfn"]
    assert 0 < problem.design.sync_seconds < 1.0
    ratio = problem.design.product_seconds() / local.design.product_seconds()
    assert ratio > 1
    assert on_dask.seconds == pytest.approx(in_memory.seconds * ratio, rel=1e-9)
    assert on_dask.memory == 8.0 * 12 * problem.design.n
    assert "synchronization" in on_dask.note and "X on the workers" in on_dask.note
