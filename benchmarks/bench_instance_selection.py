"""Does ``auto`` pick the fastest solver on real-data kernel instances? Every realistic
solver forced on each instance, interleaved with ``ssl_opt.solve(problem)`` (its selection,
conditioning probe and race included, timed end to end on a fresh problem), best of
several, side by side in one run.

    python benchmarks/bench_instance_selection.py              # ~10 minutes
    python benchmarks/bench_instance_selection.py --quick      # digits and moons, 2 γ_A
    python benchmarks/bench_instance_selection.py --holdout    # data no constant was fitted on

Instances: scikit-learn's digits as a binary problem (digits 0-4 against 5-9) and as 10
classes (one-vs-rest), breast cancer (standardized), g50c-like data (50 dimensions) and two
moons with n = 2,000, RBF kernel at the median distance and a 10-NN graph; LapRLS (squared
loss) and LapSVM (squared hinge), γ_A ∈ {1e-6, 1e-4, 1e-2, 1} and γ_I ∈ {1e-2, 1}, the range
of the LapSVM paper's tables. Solvers: PCG, Newton, the direct LapRLS solve, and the generic
``irls-newton`` and ``newton-cg`` (binary); for 10 classes, the solvers that take all the
classes at once (the direct solve: one LU, ten right-hand sides) and one-vs-rest with PCG,
Newton or the direct solve per class. FISTA, L-BFGS and PDHG are predicted 10x slower or more
here and left out; so is the CVXPY reference (seconds at these sizes).

Every run, forced or auto, is on a fresh problem object built from the same K and L (nothing a
previous run cached, such as K's entry scale, carries over). A run is certified when it ends
``optimal`` with an objective within 1e-6 (relative) of the best objective any run reached on
the instance. Printed per instance: the solver auto ended with, how its race went (if it ran
one), its time, the fastest certified solver and its time, their ratio, and the cost of
choosing (the selection with its probes, plus the slice of a lost race); then each forced
run's predicted against measured time. The shipped cost models were fitted on two moons at
γ_A = 1e-2, γ_I = 1; PCG's iterations per √κ and the race's constants were chosen on the
binary instances here, so ``--holdout`` runs the same grid on data none of them saw.
"""

from __future__ import annotations

import argparse
import csv
import os
import time
import warnings

import _source_tree  # noqa: F401  (the checkout's ssl_opt, not an installed copy)
import numpy as np
from sklearn.datasets import (
    load_breast_cancer,
    load_digits,
    make_circles,
    make_classification,
)
from sklearn.preprocessing import StandardScaler

import ssl_opt
from ssl_opt.builders import graph_laplacian_from_data, rbf_kernel
from ssl_opt.datasets import g50c_like, two_moons
from ssl_opt.estimators._kernels import median_distance
from ssl_opt.problems import LapRLS, LapSVM, OneVsRest
from ssl_opt.text_table import text_table

GAMMA_A = (1e-6, 1e-4, 1e-2, 1.0)
GAMMA_I = (1e-2, 1.0)
BINARY = ("pcg", "newton", "laprls-direct", "irls-newton", "newton-cg")
CLASS_SOLVERS = ("pcg", "newton", "laprls-direct")
#: A forced run predicted beyond this many seconds is skipped (its row says so).
SKIP_SECONDS = 60.0
CERTIFIED_GAP = 1e-6


def _labeled_first(X, t, per_class, seed):
    """X, t reordered with ``per_class`` labeled points of every class first."""
    rng = np.random.default_rng(seed)
    lab = np.concatenate([rng.choice(np.flatnonzero(t == c), per_class, replace=False)
                          for c in np.unique(t)])
    order = np.r_[lab, np.setdiff1d(np.arange(len(t)), lab)]
    return X[order], t[order], lab.size


def datasets(quick: bool):
    """(name, X, targets of the labeled points: ±1 vector or (l, c) ±1 matrix)."""
    X, t = load_digits(return_X_y=True)
    Xd, td, l = _labeled_first(X / 16.0, t, 5, 0)
    yield "digits 0-4 vs 5-9", Xd, np.where(td[:l] < 5, 1.0, -1.0)
    yield "digits 10 classes", Xd, np.where(td[:l, None] == np.arange(10), 1.0, -1.0)
    data = two_moons(n=2000, n_labeled=10, noise=0.1, seed=0)
    yield "two moons n=2000", data.X, data.y
    if quick:
        return
    X, t = load_breast_cancer(return_X_y=True)
    Xb, tb, l = _labeled_first(StandardScaler().fit_transform(X), t, 5, 0)
    yield "breast cancer", Xb, np.where(tb[:l] > 0, 1.0, -1.0)
    data = g50c_like(n=550, seed=0)
    yield "g50c-like", data.X, data.y


def held_out():
    """Data not used to choose any constant of the selection (the race's were chosen on the
    binary instances of :func:`datasets`): digits odd against even, two circles, and a
    20-dimensional scikit-learn classification problem."""
    X, t = load_digits(return_X_y=True)
    Xd, td, l = _labeled_first(X / 16.0, t, 3, 1)
    yield "digits odd vs even", Xd, np.where(td[:l] % 2 == 1, 1.0, -1.0)
    Xc, tc = make_circles(n_samples=1500, noise=0.08, factor=0.5, random_state=0)
    Xc, tc, l = _labeled_first(Xc, tc, 5, 0)
    yield "circles n=1500", Xc, np.where(tc[:l] > 0, 1.0, -1.0)
    Xm, tm = make_classification(n_samples=1200, n_features=20, n_informative=6,
                                 class_sep=1.0, random_state=0)
    Xm, tm, l = _labeled_first(StandardScaler().fit_transform(Xm), tm, 10, 0)
    yield "classification d=20 n=1200", Xm, np.where(tm[:l] > 0, 1.0, -1.0)


def instances(quick: bool, holdout: bool = False):
    gammas_A = (1e-6, 1e-2) if quick else GAMMA_A
    for name, X, Y in (held_out() if holdout else datasets(quick)):
        K = rbf_kernel(X, sigma=median_distance(X))
        L = graph_laplacian_from_data(X, n_neighbors=10)
        for loss in ("squared", "squared_hinge"):
            for gamma_I in GAMMA_I:
                for gamma_A in gammas_A:
                    def build(K=K, L=L, Y=Y, loss=loss, gamma_A=gamma_A, gamma_I=gamma_I):
                        y = Y if Y.ndim == 1 else Y[:, 0]
                        binary = (LapRLS(K, L, y, gamma_A, gamma_I) if loss == "squared"
                                  else LapSVM(K, L, y, gamma_A, gamma_I, loss=loss))
                        return binary if Y.ndim == 1 else OneVsRest(binary, Y)
                    label = f"{name}, {loss}, γ_A={gamma_A:g}, γ_I={gamma_I:g}"
                    yield label, build


def _runs(problem) -> dict[str, tuple[str, dict]]:
    """Forced runs: label -> (solver, options)."""
    get = ssl_opt.registry.get_solver
    if isinstance(problem, OneVsRest):
        # Solvers that take every class at once (laprls-direct: one LU, c right-hand sides),
        # then the classes one by one with each class solver.
        runs = {s: (s, {}) for s in CLASS_SOLVERS + ("laprls-columns",)
                if get(s).supports(problem)}
        runs.update({f"one-vs-rest/{s}": ("one-vs-rest", {"class_solver": s})
                     for s in CLASS_SOLVERS if get(s).supports(problem.first)})
        return runs
    return {s: (s, {}) for s in BINARY if get(s).supports(problem)}


def _predicted(problem, runs) -> dict[str, float]:
    """Each forced run's predicted seconds, from one selection of the problem (and one of its
    first class for the one-vs-rest runs: c times the class solver's prediction)."""
    whole = ssl_opt.select(problem).predictions
    per_class = (ssl_opt.select(problem.first).predictions
                 if isinstance(problem, OneVsRest) else {})
    out = {}
    for key, (solver, options) in runs.items():
        if solver == "one-vs-rest":
            found = per_class.get(options["class_solver"])
            out[key] = np.nan if found is None else problem.c * found.seconds
        else:
            found = whole.get(solver)
            out[key] = np.nan if found is None else found.seconds
    return out


def _auto(problem):
    """``ssl_opt.solve(problem)``: the selection, its probes and, where it plans one, the race
    (``solution.info["race"]``)."""
    return ssl_opt.solve(problem)


def _race_outcome(solution) -> str:
    said = solution.info.get("race", "")
    for word in ("finished", "continued", "switched"):
        if word in said:
            return word
    return "-"


def _timed(action):
    began = time.perf_counter()
    result = action()
    return time.perf_counter() - began, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="digits and moons, γ_A 1e-6, 1e-2")
    parser.add_argument("--repeat", type=int, default=3, help="best of this many (runs < 1 s)")
    parser.add_argument("--csv", help="write every run to this CSV file")
    parser.add_argument("--holdout", action="store_true",
                        help="the held-out data instead (digits odd/even, circles, a "
                             "20-dimensional classification problem)")
    args = parser.parse_args()
    print(f"load at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    warnings.simplefilter("ignore")
    began = time.perf_counter()
    summary, rows = [], []
    for label, build in instances(args.quick, args.holdout):
        problem = build()
        runs = _runs(problem)
        selection = ssl_opt.select(problem)
        plan = getattr(selection, "race", None)
        for pick in [selection.solver] + ([plan.resumable, plan.rival] if plan else []):
            if pick != "one-vs-rest":  # (one-vs-rest with each class solver is forced already)
                runs.setdefault(pick, (pick, {}))  # auto's picks are among the forced runs
        predicted = _predicted(problem, runs)
        first = problem.first if isinstance(problem, OneVsRest) else problem
        root_kappa = np.sqrt(first.conditioning.condition)  # PCG's probe (cached by select)
        best = {k: np.inf for k in runs}
        results, auto_best, auto_pick, choosing, raced = {}, np.inf, "", np.nan, "-"
        for round_ in range(args.repeat):
            for key, (solver, options) in runs.items():
                if predicted[key] > SKIP_SECONDS or (round_ and best[key] > 1.0):
                    continue
                fresh = build()  # as auto's: nothing cached from an earlier run
                seconds, solution = _timed(lambda p=fresh, s=solver, o=options: ssl_opt.solve(
                    p, solver=s, **o))
                best[key] = min(best[key], seconds)
                results[key] = solution
            if round_ and auto_best > 1.0:
                continue
            fresh = build()  # a new problem: the conditioning probe is paid again
            seconds, solution = _timed(lambda p=fresh: _auto(p))
            if seconds < auto_best:
                auto_best = seconds
                auto_pick = solution.solver + (
                    f"/{solution.info['class_solvers'][0]}" if "class_solvers" in solution.info
                    else "")
                # Choosing: the selection with its probes, and a lost race's slice (older
                # revisions record neither).
                choosing = (solution.info.get("selection_seconds", np.nan)
                            + solution.info.get("race_lost_seconds", 0.0))
                raced = _race_outcome(solution)
        objectives = [r.objective for r in results.values() if r.status == "optimal"]
        floor = min(objectives) if objectives else np.nan
        certified = {k: best[k] for k, r in results.items() if r.status == "optimal"
                     and r.objective <= floor + CERTIFIED_GAP * max(1.0, abs(floor))}
        fastest = min(certified, key=certified.get) if certified else "none"
        t_fast = certified.get(fastest, np.nan)
        summary.append([label, auto_pick, raced, f"{auto_best:.3g}", fastest, f"{t_fast:.3g}",
                        f"{auto_best / t_fast:.2f}", f"{100 * choosing / auto_best:.1f}%"])
        for key in runs:
            ran = key in results
            rows.append({"instance": label, "run": key, "predicted": predicted[key],
                         "measured": best[key] if ran else np.nan,
                         "status": results[key].status if ran else "skipped (predicted "
                         f"> {SKIP_SECONDS:g} s)",
                         "certified": key in certified, "auto": auto_pick,
                         "iterations": results[key].iterations if ran else np.nan,
                         "sqrt_kappa": root_kappa, "n": first.n})
        print(" | ".join(summary[-1]), flush=True)
    print()
    print(text_table(summary, ["instance", "auto's pick", "race", "auto s",
                               "fastest certified", "s", "auto/fastest", "choosing"]))
    ratios = np.array([float(r[6]) for r in summary])
    fast = np.array([float(r[5]) for r in summary])
    share = np.array([float(r[7].rstrip("%")) for r in summary])
    for name, keep in (("all", np.isfinite(ratios)), ("fastest >= 0.1 s", fast >= 0.1),
                       ("fastest < 0.1 s", fast < 0.1)):
        r = ratios[keep & np.isfinite(ratios)]
        if r.size:
            print(f"{name}: auto within 1.25x of the fastest certified run on "
                  f"{np.sum(r <= 1.25)} of {r.size} instances, more than 2x on "
                  f"{np.sum(r > 2)} (worst {r.max():.2f}x, geometric mean "
                  f"{np.exp(np.mean(np.log(r))):.3f}x); choosing's share of auto's time, "
                  f"median {np.nanmedian(share[keep]):.1f}%")
    races = [r[2] for r in summary]
    print("races: " + ", ".join(f"{w} {races.count(w)}" for w in ("finished", "continued",
                                                                    "switched")))
    timed = [r for r in rows if np.isfinite(r["measured"]) and np.isfinite(r["predicted"])]
    factor = np.array([r["predicted"] / r["measured"] for r in timed])
    inside = np.abs(np.log(factor)) <= np.log(2)
    print(f"predictions within 2x of the measured time: {inside.sum()} of {factor.size}")
    misses = [[r["instance"], r["run"], f"{r['predicted']:.3g}", f"{r['measured']:.3g}",
               f"{r['predicted'] / r['measured']:.2f}"] for r, ok in zip(timed, inside, strict=True)
              if not ok]
    if misses:
        print(text_table(misses, ["instance", "run", "predicted s", "measured s",
                                  "predicted/measured"]))
    pcg = [r for r in rows if r["run"] == "pcg" and r["status"] == "optimal"]
    per_root = np.array([(r["iterations"] - 10) / r["sqrt_kappa"] for r in pcg
                         if 2.5 * r["sqrt_kappa"] + 10 < 3 * r["n"] and r["iterations"] > 10])
    if per_root.size:
        print(f"binary PCG to optimal: {len(pcg)} runs, {min(r['iterations'] for r in pcg)}"
              f"-{max(r['iterations'] for r in pcg)} iterations; where its bound is below 3n, "
              f"{per_root.min():.2f}-{per_root.max():.2f} iterations per root of kappa "
              f"(geometric mean {np.exp(np.mean(np.log(per_root))):.2f}, {per_root.size} runs)")
    if args.csv:
        with open(args.csv, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    print(f"\nload at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"{time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
