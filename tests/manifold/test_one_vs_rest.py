"""One-vs-rest kernel manifold problems (ssl_opt/problems/one_vs_rest.py): c binary problems
that differ only in their labels, solved by one LU (``laprls-direct``) or class by class
(``one-vs-rest``), each checked against the c binary problems solved independently and against
the CVXPY reference of the whole; the residuals are the classes' own, the largest over them."""

from __future__ import annotations

import numpy as np
import pytest

import ssl_opt
from ssl_opt.builders import knn_graph, laplacian, rbf_kernel
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.problems import LapRLS, LapSVM, OneVsRest
from ssl_opt.solution import Solution


def _classes(n: int = 60, c: int = 3, seed: int = 0, loss: str = "squared_hinge"):
    from sklearn.datasets import make_blobs

    X, labels = make_blobs(n_samples=n, centers=c, cluster_std=1.3, random_state=seed)
    first = np.concatenate([np.flatnonzero(labels == k)[:3] for k in range(c)])
    order = np.concatenate([first, np.setdiff1d(np.arange(n), first)])
    X, labels = X[order], labels[order]
    K = rbf_kernel(X, sigma=1.5)
    L = laplacian(knn_graph(X, n_neighbors=6), normalized=True)
    Y = np.where(labels[: first.size, None] == np.arange(c)[None, :], 1.0, -1.0)
    binary = LapSVM(K, L, Y[:, 0], 1e-2, 1e-1, loss=loss)
    return OneVsRest(binary, Y), K, L, Y


def _independent(K, L, Y, loss):
    """Each class as its own binary problem, solved by the family's exact solver."""
    out = []
    for k in range(Y.shape[1]):
        p = (LapRLS(K, L, Y[:, k], 1e-2, 1e-1) if loss == "square"
             else LapSVM(K, L, Y[:, k], 1e-2, 1e-1, loss=loss))
        out.append(ssl_opt.solve(p, solver="laprls-direct" if loss == "square" else "newton"))
    return out


@pytest.mark.parametrize("loss, solver", [("square", "laprls-direct"),
                                          ("squared_hinge", "one-vs-rest")])
def test_solution_equals_the_classes_solved_independently(loss, solver):
    problem, K, L, Y = _classes(loss=loss)
    solution = ssl_opt.solve(problem, solver=solver)
    assert solution.status == "optimal"
    alone = _independent(K, L, Y, loss)
    np.testing.assert_allclose(solution.x["alpha"],
                               np.column_stack([s.x["alpha"] for s in alone]), atol=1e-8)
    np.testing.assert_allclose(solution.x["b"], [float(s.x["b"]) for s in alone], atol=1e-8)
    assert solution.objective == pytest.approx(sum(s.objective for s in alone), rel=1e-10)
    for k, column in enumerate(problem.split(solution)):
        assert column.objective == pytest.approx(alone[k].objective, rel=1e-10)


@pytest.mark.parametrize("loss", ["square", "squared_hinge"])
def test_certified_against_the_reference_of_the_whole(loss):
    problem, *_ = _classes(loss=loss)
    solution = ssl_opt.solve(problem, backend="fast")
    assert solution.backend == "fast"
    certificate = ssl_opt.certify(problem, solution)
    assert certificate.passed, certificate.report()
    assert certificate.reference_objective is not None
    # a point off the optimum in one class only fails
    x = {k: v.copy() for k, v in solution.x.items()}
    x["alpha"][:, 1] *= 1.01
    off = Solution(x, problem.objective(x), "optimal", 1, 0.0, "fast", solution.solver,
                   info={"tolerance_family": solution.info["tolerance_family"]})
    assert not ssl_opt.certify(problem, off).passed


def test_residuals_are_the_largest_of_the_classes():
    problem, *_ = _classes()
    rng = np.random.default_rng(1)
    x = {"alpha": rng.normal(size=(problem.first.n, problem.c)), "b": rng.normal(size=3)}
    expected = max(p.kkt({"alpha": x["alpha"][:, k], "b": x["b"][k]})["stationarity"]
                   for k, p in enumerate(problem.columns))
    assert problem.kkt(x)["stationarity"] == expected


def test_selection_weighs_one_lu_against_the_classes_one_by_one():
    problem, *_ = _classes(n=200, c=4, loss="square")
    selection = ssl_opt.select(problem, backend="fast")
    times = selection.predicted_time
    assert {"laprls-direct", "one-vs-rest"} <= set(times)
    assert times["one-vs-rest"] > times["laprls-direct"]  # c LUs against one
    assert selection.solver == "laprls-direct"
    squared = _classes(n=200, c=4)[0]
    assert ssl_opt.select(squared, backend="fast").solver == "one-vs-rest"


def test_newton_starts_every_class_from_one_shared_factorization():
    problem, *_ = _classes()
    shared = ssl_opt.solve(problem, solver="one-vs-rest", class_solver="newton")
    alone = ssl_opt.solve(problem, solver="one-vs-rest", class_solver="newton",
                          shared_start=False)
    assert shared.info["shared_start"] and not alone.info["shared_start"]
    # the shared LapRLS solution is Newton's first step from 0 for the squared hinge: each
    # class counts it, and factorizes nothing of its own (the later steps update that LU)
    assert shared.iterations == alone.iterations
    assert [c.info["factorizations"] for c in shared.info["columns"]] == [0] * problem.c
    assert all(c.info["factorizations"] >= 1 for c in alone.info["columns"])
    np.testing.assert_allclose(shared.x["alpha"], alone.x["alpha"], atol=1e-8)


def test_class_options_and_warm_starts_reach_each_class():
    problem, *_ = _classes()
    solution = ssl_opt.solve(problem, solver="one-vs-rest", class_solver="pcg",
                             class_options=[{"tol": 1e-3}, {"tol": 1e-9}, {"tol": 1e-9}])
    columns = problem.split(solution)
    assert columns[0].info["options"]["tol"] == 1e-3 and columns[1].info["options"]["tol"] == 1e-9
    warm = ssl_opt.solve(problem, solver="one-vs-rest", class_solver="newton",
                         warm_start=solution)
    assert all(c.iterations <= 3 for c in problem.split(warm))
    with pytest.raises(InvalidInputError, match="one dict per class"):
        ssl_opt.solve(problem, solver="one-vs-rest", class_options=[{}])
    with pytest.raises(InvalidInputError, match="class_solver"):
        ssl_opt.solve(problem, solver="one-vs-rest", class_solver="no-such-solver")


def test_bad_input_is_refused_with_the_argument_named():
    problem, K, L, Y = _classes()
    with pytest.raises(InvalidInputError, match="c >= 2"):
        OneVsRest(problem.first, Y[:, :1])
    for bad in (np.where(Y > 0, 2.0, 0.0), np.where(Y > 0, np.nan, -1.0),
                np.where(Y > 0, np.inf, -1.0)):
        with pytest.raises(InvalidInputError, match=r"Y must hold -1 or \+1"):
            OneVsRest(problem.first, bad)
    with pytest.raises(InvalidInputError, match="Y has a complex dtype"):
        OneVsRest(problem.first, Y + 0j)
    with pytest.raises(InvalidInputError, match="Y must be numeric"):
        OneVsRest(problem.first, [["a", "b"]] * Y.shape[0])
    with pytest.raises(InvalidInputError, match="one row per labeled point"):
        OneVsRest(problem.first, Y[:-1])
    kept = Y.copy()
    OneVsRest(problem.first, kept)
    assert kept.flags.writeable and np.array_equal(kept, Y)  # the caller's array untouched
    with pytest.raises(InvalidInputError, match="with_labels"):
        OneVsRest(K, Y)


def test_class_solver_choice_counts_the_shared_factorization():
    """Ten classes: Newton factorizes once for all of them (the shared start) and PCG iterates
    per class, so the one-vs-rest choice is not the binary one times c. The pick must be the
    faster of the two forced runs, where they differ by 2× or more."""
    import time

    from sklearn.datasets import load_digits

    from ssl_opt.plugins.model.one_vs_rest import class_choice
    from ssl_opt.selection.select import select

    X, labels = load_digits(return_X_y=True)
    X, labels = X[:900], labels[:900]
    first = np.concatenate([np.flatnonzero(labels == k)[:3] for k in range(10)])
    order = np.concatenate([first, np.setdiff1d(np.arange(labels.size), first)])
    X, labels = X[order], labels[order]
    K = rbf_kernel(X, sigma=float(np.median(np.linalg.norm(X[:200, None] - X[None, :200],
                                                           axis=-1))))
    L = laplacian(knn_graph(X, n_neighbors=10), normalized=True)
    Y = np.where(labels[:30, None] == np.arange(10)[None, :], 1.0, -1.0)
    problem = OneVsRest(LapSVM(K, L, Y[:, 0], 1e-2, 1.0, loss="squared_hinge"), Y)
    chosen = select(problem.first, "auto")
    pick, total = class_choice(problem, chosen, shared=True)
    assert total <= problem.c * chosen.predicted_time[chosen.solver]
    seconds = {}
    for name in ("newton", "pcg"):
        best = np.inf
        for _ in range(2):
            start = time.perf_counter()
            ssl_opt.solve(problem, solver="one-vs-rest", class_solver=name)
            best = min(best, time.perf_counter() - start)
        seconds[name] = best
    faster, slower = sorted(seconds, key=seconds.get)
    if seconds[slower] >= 2.0 * seconds[faster]:
        assert pick == faster, (pick, seconds)
    solution = ssl_opt.solve(problem, solver="one-vs-rest")
    assert solution.info["class_solvers"] == [pick] * problem.c
