"""Scaling benchmark (docs/scaling.md): the manifold family on a matrix-free kernel operator
(ssl_opt.operators.KernelOperator) against the dense kernel, side by side in one run.

Parts (stdout is the report, progress goes to stderr):

(a) One product ``K @ v``: dense (the stored matrix) against the operator (float64 and float32
    blocks), and the memory each needs — the operator recomputes K, so a product costs more;
    what it buys is memory.
(b) LapSVM (squared hinge, two moons) solved by PCG to tolerance on the dense K and on the
    operator: the same objective (relative difference, the target is 1e-10), time and
    products.
(c) Early-stopped PCG (stability rule) on the operator at large n, where the dense K does not
    fit (8n² bytes: 75 GiB at n = 100,000): time, iterations, products, peak resident memory
    of the process (the target is < 2 GiB at n = 100,000), and the test error on held-out
    points (out of sample through the operator's own kernel).
(d) Nyström against the exact kernel where both run (two moons in D dimensions, D − 2 of
    them noise): for a range of landmark counts, the trace and sampled spectral errors of K̃,
    the time of lowrank-newton and of PCG on K̃, and what the approximation does to the
    problem: the optimum on K̃ against the exact optimum, the exact objective at the Nyström
    α (a feasible point of the exact problem: how far from optimal it is there), the largest
    difference between the two decision functions on the training points, and test errors.
(f) The matrix-free kernel with its products on a dask LocalCluster (DaskKernelOperator):
    one product in this process (2 threads) against 1 worker × 2 threads and 2 worker
    processes × 1 thread, and PCG on a smaller n to the same objective; a model
    ``n²c/(W·t) + sync`` fitted on the measurements predicts 10-100 workers.
(e) Nyström LapSVM at n = 1,000,000 (the target is under 10 minutes here, with the graph):
    time of each stage, peak memory, the approximation's trace error and the test error
    (``--dims``: 6 by default; scikit-learn's exact 10-NN search takes 7-10 minutes alone at
    d = 10).

Run from the repository root::

    python benchmarks/bench_scaling.py                   # (a) (b) at n = 10,000; (c) at 100,000
    python benchmarks/bench_scaling.py --quick           # smaller sizes (a minute)
    python benchmarks/bench_scaling.py --parts de        # Nyström: (d) at 10,000, (e) at 10⁶
    python benchmarks/bench_scaling.py --parts f         # the kernel on a dask LocalCluster
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
import warnings

import _source_tree  # noqa: F401  (the tree's ssl_opt, not an installed copy)
import numpy as np

import ssl_opt
from ssl_opt.builders import knn_graph, laplacian, rbf_kernel
from ssl_opt.datasets.synthetic import two_moons
from ssl_opt.operators import KernelOperator, NystromOperator

SIGMA, NEIGHBOURS, GAMMA_A, GAMMA_I = 0.3, 10, 1.0, 100.0
#: Part (d)/(e) data: two moons plus noise dimensions of this standard deviation.
NOISE_DIMS_STD, DIMS = 0.1, 10


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def peak_rss_gib() -> float:
    """Peak resident memory of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def moons(n: int, seed: int = 0):
    """Two moons with max(10, n/1000) labeled points (10 labels leave the early-stopped
    solution at n = 20,000 with a 24 % test error)."""
    data = two_moons(n=n, n_labeled=max(10, n // 1000), noise=0.1, seed=seed)
    W = knn_graph(data.X, n_neighbors=NEIGHBOURS, weights="heat")
    return data, laplacian(W, normalized=True)


def moons_in(n: int, dims: int, n_test: int = 0, seed: int = 0):
    """Two moons in ``dims`` dimensions: the two of the moons and ``dims − 2`` of Gaussian
    noise (standard deviation ``NOISE_DIMS_STD``), max(10, n/1000) labeled; the Laplacian of
    the 10-NN heat graph, and a test set."""
    data = two_moons(n=n, n_labeled=max(10, n // 1000), noise=0.1, seed=seed, n_test=n_test)
    rng = np.random.default_rng(seed + 1)
    X = np.hstack([data.X, NOISE_DIMS_STD * rng.standard_normal((n, dims - 2))])
    X_test = np.hstack([data.X_test, NOISE_DIMS_STD * rng.standard_normal((n_test, dims - 2))])
    W = knn_graph(X, n_neighbors=NEIGHBOURS, weights="heat")
    return X, data.y, laplacian(W, normalized=True), X_test, data.y_test


def best_of(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def part_a(n: int) -> None:
    print(f"\n## (a) One product K @ v at n = {n:,}\n")
    data, _ = moons(n)
    v = np.random.default_rng(1).standard_normal(n)
    K = rbf_kernel(data.X, sigma=SIGMA)
    dense = best_of(lambda M=K: M @ v)
    print("| K | seconds per product | ratio to dense | memory of K (MiB) |")
    print("|---|---|---|---|")
    print(f"| dense float64 | {dense:.4f} | 1.0 | {K.nbytes / 2**20:.0f} |")
    del K
    for dtype in (np.float64, np.float32):
        op = KernelOperator(data.X, "rbf", sigma=SIGMA, dtype=dtype)
        t = best_of(lambda op=op: op @ v)
        print(f"| operator {np.dtype(dtype).name} | {t:.4f} | {t / dense:.1f} | "
              f"{op.bytes_in_flight / 2**20:.1f} (tiles in flight) |", flush=True)


def part_b(n: int) -> None:
    print(f"\n## (b) PCG to tolerance at n = {n:,}: dense K against the operator\n")
    data, L = moons(n)
    print("| K | seconds | iterations | products with K | objective | relative difference |")
    print("|---|---|---|---|---|---|")
    K = rbf_kernel(data.X, sigma=SIGMA)
    problem = ssl_opt.problems.LapSVM(K, L, data.y, GAMMA_A, GAMMA_I)
    log(f"(b) n={n}: dense PCG ...")
    del K
    start = time.perf_counter()
    dense = ssl_opt.solve(problem, solver="pcg")
    t_dense = time.perf_counter() - start
    print(f"| dense | {t_dense:.3g} | {dense.iterations} | — | {dense.objective:.12g} | — |",
          flush=True)
    del problem
    op = KernelOperator(data.X, "rbf", sigma=SIGMA)
    problem = ssl_opt.problems.LapSVM(op, L, data.y, GAMMA_A, GAMMA_I)
    log(f"(b) n={n}: operator PCG ...")
    start = time.perf_counter()
    sol = ssl_opt.solve(problem, solver="pcg")
    t_op = time.perf_counter() - start
    diff = abs(sol.objective - dense.objective) / abs(dense.objective)
    print(f"| operator float64 | {t_op:.3g} | {sol.iterations} | {op.products} | "
          f"{sol.objective:.12g} | {diff:.1e} |", flush=True)


def part_c(n: int, dtype, n_test: int = 2000) -> None:
    print(f"\n## (c) Early-stopped PCG on the operator at n = {n:,} ({np.dtype(dtype).name} "
          "blocks)\n")
    log(f"(c) n={n}: data and graph ...")
    data, L = moons(n)
    test = two_moons(n=n_test, n_labeled=n_test, noise=0.1, seed=7)
    op = KernelOperator(data.X, "rbf", sigma=SIGMA, dtype=dtype)
    problem = ssl_opt.problems.LapSVM(op, L, data.y, GAMMA_A, GAMMA_I)
    choice = ssl_opt.select(problem)
    log(f"(c) n={n}: select → {choice.solver}; PCG with early stopping ...")
    start = time.perf_counter()
    sol = ssl_opt.solve(problem, solver="pcg", early_stopping="stability")
    seconds = time.perf_counter() - start
    # Out of sample in blocks of 100 test points (a 2,000 × n kernel would be 1.6 GB at 10⁵).
    scores = np.concatenate([rbf_kernel(test.X[i:i + 100], data.X, sigma=SIGMA) @ sol.x["alpha"]
                             for i in range(0, n_test, 100)])
    predicted = np.sign(scores + sol.x["b"])
    error = float(np.mean(predicted != test.y))
    print("| n | select picks | status | iterations | products with K | seconds | "
          "peak memory (GiB) | test error |")
    print("|---|---|---|---|---|---|---|---|")
    print(f"| {n:,} | {choice.solver} | {sol.status} | {sol.iterations} | {op.products} | "
          f"{seconds:.0f} | {peak_rss_gib():.2f} | {100 * error:.2f} % |", flush=True)


def part_d(n: int, landmarks: tuple[int, ...], n_test: int = 2000) -> None:
    print(f"\n## (d) Nyström against the exact kernel at n = {n:,}, d = {DIMS}\n")
    log(f"(d) n={n}: data, graph, exact solve (PCG on the dense K) ...")
    X, y, L, X_test, y_test = moons_in(n, DIMS, n_test)
    exact = ssl_opt.problems.LapSVM(rbf_kernel(X, sigma=SIGMA), L, y, GAMMA_A, GAMMA_I)
    start = time.perf_counter()
    best = ssl_opt.solve(exact, solver="pcg", tol=1e-10)
    t_exact = time.perf_counter() - start
    f_best = exact.prediction(best.x)
    K_test = rbf_kernel(X_test, X, sigma=SIGMA)
    err_exact = float(np.mean(np.sign(K_test @ best.x["alpha"] + best.x["b"]) != y_test))
    print(f"Exact kernel: PCG to 1e-10 in {t_exact:.1f} s, objective {best.objective:.8g}, "
          f"test error {100 * err_exact:.2f} %.\n")
    print("| landmarks | rank | trace error | sampled spectral error | Φ (s) | lowrank-newton "
          "(s) | PCG on K̃ (s) | optimum on K̃ vs exact | exact objective at the Nyström α, "
          "excess | max decision difference | test error |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for m in landmarks:
        log(f"(d) m={m} ...")
        start = time.perf_counter()
        K = NystromOperator(X, "rbf", landmarks=m, sigma=SIGMA)
        t_phi = time.perf_counter() - start
        problem = ssl_opt.problems.LapSVM(K, L, y, GAMMA_A, GAMMA_I)
        start = time.perf_counter()
        sol = ssl_opt.solve(problem, solver="lowrank-newton")
        t_newton = time.perf_counter() - start
        start = time.perf_counter()
        pcg = ssl_opt.solve(problem, solver="pcg", tol=1e-10)
        t_pcg = time.perf_counter() - start
        if abs(pcg.objective - sol.objective) > 1e-8 * abs(sol.objective):
            log(f"(d) m={m}: PCG {pcg.objective!r} and lowrank-newton {sol.objective!r} differ")
        report = K.approximation(sample=2000)
        shift = (sol.objective - best.objective) / best.objective
        excess = (exact.objective(sol.x) - best.objective) / best.objective
        diff = float(np.max(np.abs(problem.prediction(sol.x) - f_best))
                     / np.max(np.abs(f_best)))
        w = K.factor.T @ sol.x["alpha"]
        err = float(np.mean(np.sign(K.features(X_test) @ w + sol.x["b"]) != y_test))
        print(f"| {m} | {K.rank} | {report['trace_error']:.1e} | "
              f"{report['sample_spectral_error']:.1e} | {t_phi:.2f} | {t_newton:.2f} | "
              f"{t_pcg:.2f} | {shift:+.1e} | {excess:.1e} | {diff:.1e} | "
              f"{100 * err:.2f} % |", flush=True)


def part_e(n: int, m: int, dims: int, n_test: int = 10000) -> None:
    print(f"\n## (e) Nyström LapSVM at n = {n:,}, d = {dims}, {m} landmarks\n")
    log(f"(e) n={n}: data and graph ...")
    start = time.perf_counter()
    X, y, L, X_test, y_test = moons_in(n, dims, n_test)
    t_graph = time.perf_counter() - start
    log(f"(e) n={n}: Φ ...")
    start = time.perf_counter()
    K = NystromOperator(X, "rbf", landmarks=m, sigma=SIGMA)
    t_phi = time.perf_counter() - start
    problem = ssl_opt.problems.LapSVM(K, L, y, GAMMA_A, GAMMA_I)
    choice = ssl_opt.select(problem)
    log(f"(e) n={n}: select → {choice.solver}; solving ...")
    start = time.perf_counter()
    sol = ssl_opt.solve(problem, solver=choice.solver)
    t_solve = time.perf_counter() - start
    start = time.perf_counter()
    cert = ssl_opt.certify(problem, sol)
    t_cert = time.perf_counter() - start
    w = K.factor.T @ sol.x["alpha"]
    err = float(np.mean(np.sign(K.features(X_test) @ w + sol.x["b"]) != y_test))
    total = t_graph + t_phi + t_solve
    print("| stage | seconds |")
    print("|---|---|")
    print(f"| data and 10-NN graph | {t_graph:.1f} |")
    print(f"| Φ ({n:,} × {K.rank}) | {t_phi:.1f} |")
    print(f"| solve ({choice.solver}: {sol.status}, {sol.iterations} iterations) | "
          f"{t_solve:.1f} |")
    print(f"| **total** | **{total:.1f}** ({total / 60:.1f} min) |")
    print(f"| certificate ({'passed' if cert.passed else 'FAILED'}, on K̃) | {t_cert:.1f} |")
    print(f"\nrelative trace error {K.trace_error:.2e}; test error {100 * err:.2f} % on "
          f"{n_test:,} held-out points; peak resident memory {peak_rss_gib():.2f} GiB "
          f"(Φ {K.nbytes / 2**30:.2f} GiB; a dense K would be {8 * n * n / 2**40:.1f} TiB); "
          f"select: {choice.reason}", flush=True)


def part_f(n: int, n_pcg: int) -> None:
    from distributed import Client, LocalCluster

    from ssl_opt.operators import DaskKernelOperator

    print(f"\n## (f) Kernel products on a dask LocalCluster at n = {n:,}\n")
    X, y, L, _, _ = moons_in(n, DIMS)
    v = np.random.default_rng(1).standard_normal(n)
    local = KernelOperator(X, "rbf", sigma=SIGMA)
    t_local = best_of(lambda: local @ v, repeat=2)
    reference = local @ v
    print("| where | workers × threads | seconds per product | vs in process | sync (ms) | "
          "max difference |")
    print("|---|---|---|---|---|---|")
    print(f"| this process | 1 × {local.threads} | {t_local:.3f} | 1.0 | — | — |", flush=True)
    rows = []
    for workers, threads in ((1, 2), (2, 1)):
        with LocalCluster(n_workers=workers, threads_per_worker=threads, processes=True,
                          dashboard_address=":0") as cluster, Client(cluster) as client:
            op = DaskKernelOperator(X, "rbf", client=client, sigma=SIGMA)
            t = best_of(lambda op=op: op @ v, repeat=2)
            diff = float(np.max(np.abs(op @ v - reference)) / np.max(np.abs(reference)))
            sync = op.sync_seconds
            rows.append((workers * threads, t, sync))
            print(f"| LocalCluster | {workers} × {threads} | {t:.3f} | {t / t_local:.2f} | "
                  f"{1e3 * sync:.1f} | {diff:.1e} |", flush=True)
            if workers == 2:
                Xp, yp, Lp, _, _ = moons_in(n_pcg, DIMS)
                problem = ssl_opt.problems.LapSVM(
                    DaskKernelOperator(Xp, "rbf", client=client, sigma=SIGMA), Lp, yp,
                    GAMMA_A, GAMMA_I)
                start = time.perf_counter()
                sol = ssl_opt.solve(problem, solver="pcg")
                t_cluster = time.perf_counter() - start
                here = ssl_opt.problems.LapSVM(KernelOperator(Xp, "rbf", sigma=SIGMA), Lp, yp,
                                               GAMMA_A, GAMMA_I)
                start = time.perf_counter()
                ref = ssl_opt.solve(here, solver="pcg")
                t_here = time.perf_counter() - start
                gap = abs(sol.objective - ref.objective) / abs(ref.objective)
                print(f"\nPCG at n = {n_pcg:,}: {sol.iterations} iterations, {t_cluster:.1f} s on "
                      f"2 workers against {t_here:.1f} s in this process; relative objective "
                      f"difference {gap:.1e}.\n", flush=True)
    # Model: compute per thread c·n² (from 1 × 2) plus one sync, checked on 2 × 1.
    threads, t12, sync12 = rows[0]
    per_thread = (t12 - sync12) * threads
    _, t21, sync21 = rows[1]
    predicted = per_thread / 2 + sync21
    print(f"Model T(W) = {per_thread:.3g} s / (W·t) + sync, fitted on 1 × 2: predicts 2 × 1 at "
          f"{predicted:.3f} s, measured {t21:.3f} s ({100 * (predicted / t21 - 1):+.0f} %).")
    print("\nPredicted seconds per product (1 thread per worker, sync 2 ms on a cluster "
          "network, n² scaling of the compute):\n")
    print("| n | W = 1 | 10 | 20 | 50 | 100 |")
    print("|---|---|---|---|---|---|")
    for size in (100_000, 1_000_000):
        c = per_thread * (size / n) ** 2
        cells = " | ".join(f"{c / w + 2e-3 + 8 * size * w / 1e9:.3g}"
                           for w in (1, 10, 20, 50, 100))
        print(f"| {size:,} | {cells} |")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--parts", default="abcde", help="which parts to run (default abcde)")
    parser.add_argument("--n-large", type=int, default=None, help="n of part (c)")
    parser.add_argument("--float32", action="store_true", help="float32 blocks in part (c)")
    parser.add_argument("--n-huge", type=int, default=None, help="n of part (e)")
    parser.add_argument("--landmarks", type=int, default=300, help="landmarks of part (e)")
    parser.add_argument("--dims", type=int, default=6,
                        help="dimensions of part (e) (the 10-NN graph dominates: 51 s at d = 6, "
                             "7-10 min at d = 10 for n = 10⁶)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    n_small = 3000 if args.quick else 10000
    n_large = args.n_large or (20000 if args.quick else 100000)
    print("# Scaling benchmark\n")
    print(f"numpy {np.__version__}, ssl_opt {ssl_opt.__version__}")
    if "a" in args.parts:
        part_a(n_small)
    if "b" in args.parts:
        part_b(n_small)
    if "c" in args.parts:
        part_c(n_large, np.float32 if args.float32 else np.float64)
    if "d" in args.parts:
        part_d(n_small, (30, 100, 300) if args.quick else (100, 300, 1000, 2000))
    if "f" in args.parts:
        part_f(5000 if args.quick else 20000, 2000 if args.quick else 5000)
    if "e" in args.parts:
        part_e(args.n_huge or (100000 if args.quick else 1000000), args.landmarks, args.dims)


if __name__ == "__main__":
    main()
