"""Does the benchmark's worker process measure what its own process would?

``ssl-opt bench`` runs every solve in a worker process it can kill at the hard time limit
(``ssl_opt/selection/isolated.py``). Here the same grid runs in the benchmark's process
(``isolate=False``, the old path) and in the worker, interleaved (the order alternates every
round), keeping each run's best time over the rounds; the table gives worker / in-process per
run and the geometric mean per family variant, with the machine's load.

    python benchmarks/bench_isolation.py                          # manifold, 3 rounds
    python benchmarks/bench_isolation.py --family lass --sizes 180 900 3000 9000
"""

from __future__ import annotations

import argparse
import math
import os
import time

import _source_tree  # noqa: F401  (the checkout's ssl_opt, not an installed copy)

from ssl_opt.selection.bench import run_bench
from ssl_opt.text_table import text_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--family", default="manifold")
    parser.add_argument("--variant", nargs="*", default=None)
    parser.add_argument("--sizes", nargs="*", type=int, default=[40, 100, 250, 500, 1000])
    parser.add_argument("--solvers", nargs="*", default=None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--time-limit", type=float, default=30.0)
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")
    print(f"load at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    best: dict[tuple, dict[bool, float]] = {}
    start = time.perf_counter()
    for k in range(args.rounds):
        for isolate in ((False, True) if k % 2 == 0 else (True, False)):
            rep = run_bench(args.family, sizes=args.sizes, variants=args.variant,
                            solvers=args.solvers, progress=False, isolate=isolate,
                            time_limit=args.time_limit)
            for r in rep.runs:
                if r.succeeded:
                    slot = best.setdefault((r.variant, r.size, r.solver), {})
                    slot[isolate] = min(slot.get(isolate, math.inf), r.time_s)
    rows, logs = [], {}
    for (variant, size, solver), times in sorted(best.items()):
        if len(times) < 2:
            continue
        ratio = times[True] / times[False]
        logs.setdefault(variant, []).append(math.log(ratio))
        rows.append([variant, f"{size:.4g}", solver, f"{times[False]:.4g}",
                     f"{times[True]:.4g}", f"{ratio:.2f}"])
    print(text_table(rows, ["variant", "size", "solver", "in process s", "worker s",
                            "worker / in process"]))
    print()
    for variant, values in logs.items():
        mean = math.exp(sum(values) / len(values))
        low, high = math.exp(min(values)), math.exp(max(values))
        print(f"{variant}: geometric mean worker / in process {mean:.3f} over {len(values)} "
              f"runs, range {low:.2f}-{high:.2f}")
    print(f"\n{args.rounds} rounds in {time.perf_counter() - start:.0f} s; load at end: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
