"""Is a kernel operator's predicted product time within 1.5x of the measured one? The model
(``KernelOperator.product_seconds()``, from n, d and the precision) and the timed sample
(``product_seconds(measure=True)``, what ``select`` uses) against the product itself, side
by side in one run.

    python benchmarks/bench_operator_product.py            # ~2 minutes
    python benchmarks/bench_operator_product.py --large    # adds n = 40,000 (~8 minutes)

Instances: n points from a standard normal in d dimensions, an RBF kernel at the median
pairwise distance (the estimators' default) and at a thirtieth of it (a narrow kernel: most
entries underflow, which the model cannot see), float32 and float64 blocks. For each, on a
operator: one untimed product, then three rounds of [a timed sample on a fresh operator,
one product], interleaved. The measured time is the fastest product; each of the three timed
samples is compared with it, and so is the model.
"""

from __future__ import annotations

import argparse
import os
import time

import _source_tree  # noqa: F401  (the checkout's ssl_opt, not an installed copy)
import numpy as np

from ssl_opt.estimators._kernels import median_distance
from ssl_opt.operators import KernelOperator
from ssl_opt.text_table import text_table

ROUNDS = 3
WITHIN = 1.5


def _instances(large: bool):
    sizes = (5_000, 10_000, 20_000) + ((40_000,) if large else ())
    for n in sizes:
        for d in (2, 10, 50):
            X = np.random.default_rng(n + d).standard_normal((n, d))
            median = float(median_distance(X))
            for width, sigma in (("median", median), ("median/30", median / 30)):
                for dtype in (np.float32, np.float64):
                    yield n, d, width, sigma, dtype, X


def _run(n, d, width, sigma, dtype, X) -> dict:
    op = KernelOperator(X, "rbf", sigma=sigma, dtype=dtype)
    v = np.random.default_rng(0).standard_normal(n)
    op @ v
    products, timed, costs = [], [], []
    for _ in range(ROUNDS):
        fresh = KernelOperator(X, "rbf", sigma=sigma, dtype=dtype)  # nothing cached
        begin = time.perf_counter()
        timed.append(fresh.product_seconds(measure=True))
        costs.append(time.perf_counter() - begin)
        begin = time.perf_counter()
        op @ v
        products.append(time.perf_counter() - begin)
    measured = min(products)
    return {"n": n, "d": d, "sigma": width, "dtype": np.dtype(dtype).name,
            "measured": measured, "model": op.product_seconds(),
            "timed": [t / measured for t in timed], "cost": float(np.median(costs))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--large", action="store_true", help="add n = 40,000")
    args = parser.parse_args()
    print(f"load at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"{os.cpu_count()} cores", flush=True)
    start = time.perf_counter()
    rows, results = [], []
    for instance in _instances(args.large):
        r = _run(*instance)
        results.append(r)
        rows.append([f"{r['n']:,}", r["d"], r["sigma"], r["dtype"], f"{r['measured']:.3g}",
                     f"{r['model'] / r['measured']:.2f}",
                     " ".join(f"{t:.2f}" for t in r["timed"]),
                     f"{1e3 * r['cost']:.0f} ({100 * r['cost'] / r['measured']:.0f} %)"])
        print(" | ".join(str(c) for c in rows[-1]), flush=True)
    print()
    print(text_table(rows, ["n", "d", "σ", "blocks", "product s", "model/measured",
                            "timed/measured (3 samples)", "sample ms (% of a product)"]))
    model = [r["model"] / r["measured"] for r in results]
    timed = [t for r in results for t in r["timed"]]

    def within(ratios):
        return sum(1 / WITHIN <= x <= WITHIN for x in ratios)

    print(f"\nmodel within {WITHIN}x of the measured product: {within(model)} of {len(model)} "
          f"(range {min(model):.2f}-{max(model):.2f})")
    print(f"timed sample within {WITHIN}x: {within(timed)} of {len(timed)} "
          f"(range {min(timed):.2f}-{max(timed):.2f})")
    print(f"load at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
