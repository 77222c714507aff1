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

Run from the repository root::

    python benchmarks/bench_scaling.py                   # (a) (b) at n = 10,000; (c) at 100,000
    python benchmarks/bench_scaling.py --quick           # smaller sizes (a minute)
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
from ssl_opt.operators import KernelOperator

SIGMA, NEIGHBOURS, GAMMA_A, GAMMA_I = 0.3, 10, 1.0, 100.0


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


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--parts", default="abc", help="which parts to run (default abc)")
    parser.add_argument("--n-large", type=int, default=None, help="n of part (c)")
    parser.add_argument("--float32", action="store_true", help="float32 blocks in part (c)")
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


if __name__ == "__main__":
    main()
