"""Reproduce the G50C LapSVM/LapRLS rows of Table 4 of Melacci & Belkin (JMLR 2011).

Data: the ten fixed splits of ``g50c.mat`` (shared data folder; 50 labeled and 500 unlabeled
points each). The script prints a message and exits with status 0 when the file is absent.

Settings (paper, Section 6.3 and appendix Table 9, G50C rows): RBF kernel
``exp(-||x - z||^2 / (2 sigma^2))`` with sigma = 17.5; kNN graph with nn = 50; normalized
Laplacian raised to the power p = 5; and

=====================================  =========  =========  ===================================
method                                 gamma_A    gamma_I    solved here with
=====================================  =========  =========  ===================================
LapRLSC                                1e-6       1e-2       ``LapRLS`` / ``"laprls-direct"``
LapSVM Dual (Original), hinge loss     1          10         primal hinge, ``"cvxpy"``
LapSVM Primal (Newton), squared hinge  1e-1       10         ``"newton"``; also early-stopped PCG
=====================================  =========  =========  ===================================

(Table 9 also lists SVM gamma_A = 1e-1 and RLSC gamma_A = 1, sigma = 17.5, not reproduced.)
The original LapSVM is solved through its *primal* hinge program: with a normalized Laplacian
(L 1 != 0) and a bias the dual of the paper's Section 2.1 drops b from f'Lf and is not the same
problem, so ``"cvxpy-dual"`` refuses it.

Reported: the mean (standard deviation, N-1 normalization as in Matlab) over the ten splits of
the error rate on the 500 unlabeled points, next to the paper's U column (LapRLSC 6.03 (1.32),
LapSVM Dual 5.52 (1.15), LapSVM Primal Newton 6.16 (1.48); Table 7: PCG stability 6.13 (1.46),
validation 6.16 (1.48), mixed 6.16 (1.48)). The splits differ: the paper used a 4-fold protocol
(3 random repetitions, 12 splits) with |L| = 50, |U| = 314, |V| = 50, |T| = 136, whereas
``g50c.mat`` has 10 splits with |L| = 50, |U| = 500 and no validation or test set, so the
numbers are comparable only roughly.

Early-stopped PCG (squared-hinge LapSVM, same gammas as Newton) is timed next to Newton. The
stability rule needs no extra labels. The validation and mixed rules need a labeled validation
set that ``g50c.mat`` does not have: 50 points of U (fixed seed per split) lend their labels to
the stopping rule only; errors are still measured on all 500 points of U, so for those two rules
V is a subset of U (a mild optimistic bias, documented in the printout).

Graph weights: ``--weights both`` (default) runs binary and heat-kernel weights (heat width =
mean kNN distance, like Sindhwani's code with GraphWeightParam = 0) and prints which is closer to
the paper (mean absolute difference of the three U-column means). Measured on the ten splits:
binary LapRLSC 5.16, hinge 7.86, Newton 6.68 (sum of |differences| 3.73 points); heat 5.28,
8.00, 6.68 (3.75 points). The two are practically tied; **binary weights are kept as the
primary choice** (marginally closer, and the weighting used for G50C-like in
``bench_lapsvm.py``). Heat weights barely matter here: with nn = 50 in 50 dimensions the kNN
distances are nearly equal, so the heat weights are nearly constant (split 0: 5th-95th
percentile 0.54-0.67, median 0.60) and the normalized Laplacian removes their common scale.

Supplementary rows (``--no-extras`` to skip): the same three methods without the bias b. They
show that most of the gap to the paper (and the outlier split 4, where 20 of the 50 labeled
points are positive and the squared-hinge bias moves to b = 0.83) comes from the bias.

Run from the repository root::

    python benchmarks/g50c_table4.py
    python benchmarks/g50c_table4.py --weights binary --splits 0 1 2
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import _source_tree  # noqa: F401  (the tree's ssl_opt, not an installed copy)
import numpy as np

import ssl_opt
from ssl_opt.builders import graph_laplacian_from_data, rbf_kernel
from ssl_opt.datasets.synthetic import load_g50c, shared_data_dir
from ssl_opt.problems import LapRLS, LapSVM

SIGMA, NN, POWER = 17.5, 50, 5
N_VAL = 50

# (label, problem class / loss, gamma_A, gamma_I, solver, options, bias)
METHODS = [
    ("LapRLSC", "squared", 1e-6, 1e-2, "laprls-direct", {}, True),
    ("LapSVM Dual (Original) [hinge]", "hinge", 1.0, 10.0, "cvxpy", {}, True),
    ("LapSVM Primal (Newton)", "squared_hinge", 1e-1, 10.0, "newton", {}, True),
    ("LapSVM Primal PCG [stability]", "squared_hinge", 1e-1, 10.0, "pcg",
     {"early_stopping": "stability"}, True),
    ("LapSVM Primal PCG [validation]*", "squared_hinge", 1e-1, 10.0, "pcg",
     {"early_stopping": "validation"}, True),
    ("LapSVM Primal PCG [mixed]*", "squared_hinge", 1e-1, 10.0, "pcg",
     {"early_stopping": "mixed"}, True),
    ("LapSVM Primal PCG [to tol]", "squared_hinge", 1e-1, 10.0, "pcg", {}, True),
]
EXTRAS = [
    ("LapRLSC, no bias", "squared", 1e-6, 1e-2, "laprls-direct", {}, False),
    ("LapSVM hinge, no bias", "hinge", 1.0, 10.0, "cvxpy", {}, False),
    ("LapSVM Newton, no bias", "squared_hinge", 1e-1, 10.0, "newton", {}, False),
]
# Paper, Table 4 (U, V, T columns) and Table 7 (PCG rows), G50C: (mean, std).
PAPER = {
    "LapRLSC": ((6.03, 1.32), (6.17, 3.66), (6.54, 2.11)),
    "LapSVM Dual (Original) [hinge]": ((5.52, 1.15), (5.67, 2.67), (5.51, 1.65)),
    "LapSVM Primal (Newton)": ((6.16, 1.48), (6.17, 3.46), (7.27, 2.87)),
    "LapSVM Primal PCG [stability]": ((6.13, 1.46), (6.17, 3.46), (7.27, 2.87)),
    "LapSVM Primal PCG [validation]*": ((6.16, 1.48), (6.17, 3.46), (7.27, 2.87)),
    "LapSVM Primal PCG [mixed]*": ((6.16, 1.48), (6.17, 3.46), (7.27, 2.87)),
}
# Paper, Table 6 (G50C training times in seconds, Matlab 7.6, 2.33 GHz): mean (std).
PAPER_TIME = {
    "LapSVM Dual (Original) [hinge]": "0.155 (0.004)",
    "LapSVM Primal (Newton)": "0.134 (0.006)",
    "LapSVM Primal PCG [stability]": "0.044 (0.006)",
    "LapSVM Primal PCG [validation]*": "0.043 (0.006)",
    "LapSVM Primal PCG [mixed]*": "0.044 (0.006)",
}
TABLE4_ROWS = ("LapRLSC", "LapSVM Dual (Original) [hinge]", "LapSVM Primal (Newton)")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def find_g50c() -> Path | None:
    folders = [shared_data_dir(), Path(__file__).resolve().parents[2] / "shared" / "data"]
    for folder in folders:
        if folder is not None and (Path(folder) / "g50c.mat").is_file():
            return Path(folder) / "g50c.mat"
    return None


def build_problem(K, L, y, loss, gamma_A, gamma_I, bias):
    if loss == "squared":
        return LapRLS(K, L, y, gamma_A, gamma_I, bias=bias)
    return LapSVM(K, L, y, gamma_A, gamma_I, loss=loss, bias=bias)


def run_split(path: Path, split: int, weights: str, methods, repeats: int, seed: int) -> dict:
    data = load_g50c(split, path=path)
    l = data.n_labeled  # noqa: E741
    t0 = time.perf_counter()
    K = rbf_kernel(data.X, sigma=SIGMA)
    L = graph_laplacian_from_data(data.X, n_neighbors=NN, weights=weights, normalized=True,
                                  power=POWER)
    t_build = time.perf_counter() - t0
    rng = np.random.default_rng(seed + split)
    val_idx = l + rng.choice(data.X.shape[0] - l, size=N_VAL, replace=False)
    validation = (K[val_idx], data.y_all[val_idx])
    y_u = data.y_all[l:]
    out = {"t_build": t_build, "n_pos_labeled": int(np.sum(data.y > 0))}
    for label, loss, gA, gI, solver, opts, bias in methods:
        problem = build_problem(K, L, data.y, loss, gA, gI, bias)
        options = dict(opts)
        if opts.get("early_stopping") in ("validation", "mixed"):
            options["validation"] = validation
        times, sol = [], None
        for _ in range(1 if solver == "cvxpy" else repeats):
            s = ssl_opt.solve(problem, solver=solver, **options)
            times.append(s.time)
            sol = sol or s
        f_u = K[l:] @ sol.x["alpha"] + (float(sol.x["b"]) if bias else 0.0)
        out[label] = {
            "err": 100.0 * float(np.mean(np.sign(f_u) != y_u)),
            "time": float(np.median(times)),
            "iters": sol.iterations,
            "status": sol.status,
            "b": float(sol.x["b"]),
        }
    return out


def mean_std(values) -> tuple[float, float]:
    v = np.asarray(values, dtype=float)
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.0


def summarize(results: list[dict], methods) -> dict:
    summary = {}
    for label, *_ in methods:
        rows = [r[label] for r in results]
        statuses = sorted({r["status"] for r in rows})
        summary[label] = {
            "err": mean_std([r["err"] for r in rows]),
            "time": mean_std([r["time"] for r in rows]),
            "iters": mean_std([r["iters"] for r in rows]),
            "status": ",".join(statuses),
        }
    return summary


def print_summary(weights: str, summary: dict, methods, n_splits: int) -> None:
    head = (f"{'method':<33} {'U err % (ours)':>15} {'U err % (paper)':>15} {'diff':>6} "
            f"{'time s (ours)':>15} {'time s (paper)':>14} {'iters':>12} {'status':<14}")
    print(f"-- graph weights: {weights}; {n_splits} splits of g50c.mat "
          f"(|L|=50, |U|=500); mean (std)")
    print(head)
    print("-" * len(head))
    for label, *_ in methods:
        s = summary[label]
        m, sd = s["err"]
        paper = PAPER.get(label)
        ptxt = f"{paper[0][0]:.2f} ({paper[0][1]:.2f})" if paper else "-"
        diff = f"{m - paper[0][0]:+.2f}" if paper else "-"
        tm, tsd = s["time"]
        im, isd = s["iters"]
        print(f"{label:<33} {f'{m:.2f} ({sd:.2f})':>15} {ptxt:>15} {diff:>6} "
              f"{f'{tm:.4f} ({tsd:.4f})':>15} {PAPER_TIME.get(label, '-'):>14} "
              f"{f'{im:.1f} ({isd:.1f})':>12} {s['status']:<14}")
    print()


def print_per_split(weights: str, results: list[dict], splits, methods) -> None:
    labels = [m[0] for m in methods]
    short = {
        "LapRLSC": "LapRLS",
        "LapSVM Dual (Original) [hinge]": "hinge",
        "LapSVM Primal (Newton)": "Newton",
        "LapSVM Primal PCG [stability]": "PCG-st",
        "LapSVM Primal PCG [validation]*": "PCG-val",
        "LapSVM Primal PCG [mixed]*": "PCG-mix",
        "LapSVM Primal PCG [to tol]": "PCG-tol",
        "LapRLSC, no bias": "RLS-nob",
        "LapSVM hinge, no bias": "hin-nob",
        "LapSVM Newton, no bias": "New-nob",
    }
    print(f"-- per-split U error % (graph weights: {weights}); #pos = positives among the 50 "
          "labeled; b = Newton's bias")
    head = f"{'split':>5} {'#pos':>4} {'b':>6} " + " ".join(
        f"{short.get(x, x[:7]):>8}" for x in labels)
    print(head)
    print("-" * len(head))
    for split, r in zip(splits, results, strict=True):
        b = r["LapSVM Primal (Newton)"]["b"]
        print(f"{split:>5} {r['n_pos_labeled']:>4} {b:>6.2f} "
              + " ".join(f"{r[x]['err']:>8.2f}" for x in labels))
    print()


def closeness(summary: dict) -> float:
    return float(np.mean([abs(summary[k]["err"][0] - PAPER[k][0][0]) for k in TABLE4_ROWS]))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--weights", choices=("binary", "heat", "both"), default="both")
    p.add_argument("--splits", type=int, nargs="+", default=None,
                   help="split indices (default: all ten)")
    p.add_argument("--repeats", type=int, default=5,
                   help="timed runs of the fast solvers (median reported; cvxpy runs once)")
    p.add_argument("--seed", type=int, default=0, help="seed of the validation subsets")
    p.add_argument("--no-extras", action="store_true", help="skip the no-bias rows")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    path = find_g50c()
    if path is None:
        print("g50c.mat not found (looked in SSL_OPT_DATA, ../shared/data and the shared/data "
              "folder next to the checkout); skipping the G50C Table 4 reproduction.")
        return 0
    warnings.simplefilter("ignore", category=UserWarning)
    start = time.perf_counter()
    from scipy.io import loadmat

    n_splits = int(np.atleast_2d(loadmat(str(path))["idxLabs"]).shape[0])
    splits = args.splits if args.splits is not None else list(range(n_splits))
    methods = METHODS + ([] if args.no_extras else EXTRAS)
    weight_list = ["binary", "heat"] if args.weights == "both" else [args.weights]

    print("# G50C, LapSVM/LapRLS rows of Table 4 of Melacci & Belkin (JMLR 2011)")
    print(f"# data: {path}")
    print(f"# sigma={SIGMA}, kNN nn={NN}, normalized Laplacian, power p={POWER}; "
          "gammas from appendix Table 9: LapRLSC (1e-6, 1e-2), hinge LapSVM (1, 10), "
          "primal LapSVM (1e-1, 10)")
    print("# NOTE: the paper's splits differ (4-fold protocol, 12 splits, |U|=314, |V|=50, "
          "|T|=136); here the 10 fixed splits of g50c.mat (|L|=50, |U|=500), so the "
          "comparison is only rough.")
    print("# The hinge LapSVM is solved in the primal (cvxpy): with a normalized L and a bias "
          "the paper's dual drops b from f'Lf and is a different problem.")
    print(f"# * validation/mixed: V = {N_VAL} points of U whose labels are shown only to the "
          "stopping rule; errors are measured on all of U (V is a subset of U).")
    print("# Times: solver only (K and L precomputed), median of repeats per split, then mean "
          "(std) over splits; paper times are Matlab 7.6 on a 2.33 GHz machine (Table 6).")
    print()

    all_summaries = {}
    for weights in weight_list:
        log(f"graph weights: {weights}")
        results = []
        for split in splits:
            log(f"  split {split} ...")
            results.append(run_split(path, split, weights, methods, args.repeats, args.seed))
        summary = summarize(results, methods)
        all_summaries[weights] = summary
        t_build = mean_std([r["t_build"] for r in results])
        print_summary(weights, summary, methods, len(splits))
        print_per_split(weights, results, splits, methods)
        print(f"   (K and L^5 construction, excluded above: {t_build[0]:.2f} s per split)")
        print()

    print("-- closeness to the paper's U column (mean |ours - paper| over LapRLSC, LapSVM "
          "Dual, LapSVM Primal Newton):")
    for weights, summary in all_summaries.items():
        print(f"   {weights:<7} {closeness(summary):.3f} points")
    if len(all_summaries) > 1:
        best = min(all_summaries, key=lambda w: closeness(all_summaries[w]))
        print(f"   closer to the paper: {best} weights")
    newton = {w: s["LapSVM Primal (Newton)"] for w, s in all_summaries.items()}
    pcg = {w: s["LapSVM Primal PCG [stability]"] for w, s in all_summaries.items()}
    for w in all_summaries:
        speed = newton[w]["time"][0] / pcg[w]["time"][0]
        print(f"   {w}: Newton {newton[w]['time'][0]:.4f} s vs PCG [stability] "
              f"{pcg[w]['time'][0]:.4f} s (x{speed:.1f}); U error {newton[w]['err'][0]:.2f} "
              f"vs {pcg[w]['err'][0]:.2f} (paper: 0.134 s vs 0.044 s, x3.0; 6.16 vs 6.13)")
    print()
    print(f"# total wall time {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
