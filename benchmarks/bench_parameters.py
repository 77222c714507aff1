"""How LapRLSC's accuracy moves with each of its parameters, on the data sets of
``bench_defaults.py`` (the package's generators and scikit-learn's bundled sets), mean
transductive accuracy over seeds: the evidence behind docs/parameters.md.

    python benchmarks/bench_parameters.py            # 3 seeds, about three minutes
    python benchmarks/bench_parameters.py --seeds 1

Three sweeps, each from the defaults (gamma_A = 1e-6, gamma_I = 1, sigma = the median
distance, n_neighbors = 10): the (gamma_A, gamma_I) grid; sigma as a multiple of the median
distance; and n_neighbors. Every fit uses ``solver="laprls-direct"`` (one factorization whatever the
conditioning), so the sweep measures the model, not the solver that ``"auto"`` would pick.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import _source_tree  # noqa: F401  (the checkout's ssl_opt, not an installed copy)
import numpy as np
from bench_defaults import cases

from ssl_opt.estimators import LapRLSC
from ssl_opt.text_table import text_table

GAMMA_A = (1e-6, 1e-4, 1e-2, 1.0)
GAMMA_I = (1e-2, 1.0, 100.0)
SIGMA_FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0)
NEIGHBOURS = (5, 10, 20, 50)


def _accuracy(X, y, truth, **params) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = LapRLSC(solver="laprls-direct", **params).fit(X, y)
    unlabeled = y == -1
    return float(np.mean(est.transduction_[unlabeled] == truth[unlabeled]))


def _table(results: dict, configs: list, label) -> None:
    """Rows: data sets, then the mean; columns: ``configs`` (``label(config)`` heads them)."""
    rows = [[case] + [f"{100 * np.mean(results[case][c]):.1f}" for c in configs]
            for case in results]
    rows.append(["mean over the data sets"] + [
        f"{100 * np.mean([np.mean(results[case][c]) for case in results]):.1f}"
        for c in configs])
    print(text_table(rows, ["data"] + [label(c) for c in configs]))
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    if args.seeds < 1:
        parser.error("--seeds must be >= 1")
    start = time.perf_counter()
    print(f"load at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    grid = [(a, i) for a in GAMMA_A for i in GAMMA_I]
    gammas: dict = {}
    sigmas: dict = {}
    neighbours: dict = {}
    for seed in range(args.seeds):
        for case, X, y, truth in cases(seed):
            for a, i in grid:
                gammas.setdefault(case, {}).setdefault((a, i), []).append(
                    _accuracy(X, y, truth, gamma_A=a, gamma_I=i))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                median = LapRLSC(solver="laprls-direct").fit(X, y).kernel_params_["sigma"]
            for f in SIGMA_FACTORS:
                sigmas.setdefault(case, {}).setdefault(f, []).append(
                    _accuracy(X, y, truth, sigma=f * median))
            for k in NEIGHBOURS:
                neighbours.setdefault(case, {}).setdefault(k, []).append(
                    _accuracy(X, y, truth, n_neighbors=k))
    print(f"LapRLSC transductive accuracy %, mean of {args.seeds} seeds\n")
    print("gamma_A / gamma_I (sigma = median distance, n_neighbors = 10):")
    _table(gammas, grid, lambda c: f"{c[0]:g}/{c[1]:g}")
    print("sigma as a multiple of the median distance (gamma_A = 1e-6, gamma_I = 1):")
    _table(sigmas, list(SIGMA_FACTORS), lambda f: f"{f:g}x")
    print("n_neighbors (gamma_A = 1e-6, gamma_I = 1, sigma = median distance):")
    _table(neighbours, list(NEIGHBOURS), str)
    print(f"{time.perf_counter() - start:.0f} s; load at end: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
