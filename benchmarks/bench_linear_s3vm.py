"""Linear S3VM speed benchmark: MFN, TSVM and DA against SVMlin and scikit-learn's liblinear.

Part (a), SVMlin anchors. The paper authors' C++ SVMlin, measured on this kind of machine with
lambda = 0.001 and lambda' = 1 (``-W 0.001 -U 1``), on

* synthetic text 40,000 x 10,000, ~60 non-zeros per row, 400 labeled rows:
  MFN 0.35 s, TSVM 12.1 s (446 switches), DA 18.4 s;
* a 2,000 x 2,000 synthetic text set: MFN 0.01 s, TSVM 0.40 s, DA 1.24 s.

Both instances come from ``ssl_opt.datasets.text.synthetic_text`` (seed ``--seed``). The number
of labeled rows of the 2,000 x 2,000 set is not part of the anchor; 50 are used (PCMAC-like,
``--small-labeled``). "MFN" is read as the supervised L2-SVM on the labeled rows alone with
costs 1/l, i.e. ``LinearSVM(X[:l], y, lam, cost=1/l)`` (the first step of TSVM and DA); an
informational row gives the same rows with unit costs (SVMlin's ``-A 1`` default Cp = Cn = 1).
TSVM runs with S = 10,000 (SVMlin's default, also ours). For each solver the table prints our
time (best of ``--repeat`` runs; solver time only, the problem objects are built beforehand),
SVMlin's reported time (context only: SVMlin does not run here, so no ratio is formed with
it; ``bench_ratios.py`` has the side-by-side ratios), the TSVM objective at the solution with
its best balanced labeling (``problem.best_labeling_objective(x)``, the number SVMlin prints,
for TSVM and DA alike), switches / MFN calls and the transductive error on the unlabeled rows.

Part (b), MFN vs liblinear on a fully labeled 100,000 x 20,000 synthetic tf-idf set with 50
non-zeros per row (the reference measurement: liblinear 2.7 s on an instance of that shape).
The L2-SVM ``lam/2 |w|^2 + 1/2 sum_i max(0, 1 - y_i x~_i'w)^2`` (unit costs, bias as a
regularized constant feature) is liblinear's primal L2-loss SVM (``LinearSVC(loss=
"squared_hinge", dual=False, C=1/(2 lam), fit_intercept=True, intercept_scaling=1)``, the
trust-region Newton solver) divided by C. Regularization: ``--svm-lams`` (default 0.5 and 1e-3):
lam = 0.5 is C = 1, liblinear's default and the usual setting for tf-idf text (primary); lam =
1e-3 (C = 500) is SVMlin's lambda taken with unit costs, a weakly regularized problem that needs
more Newton/CG work. liblinear's ``tol`` is chosen per lambda by a sweep from loose to tight
(1e-1, 1e-2, ...): the loosest tol whose objective is within 1e-6 (relative) of MFN's objective
is kept and timed (best of ``--repeat``, the sweep run included); the sweep is printed. MFN runs
with its default options (tol 1e-7). Objectives are compared with ``problem.objective`` and the
relative stationarity ``problem.kkt({"w": w})["stationarity"]`` is printed for both. liblinear's
time is the wall time of ``LinearSVC.fit``, which includes scikit-learn's conversion of X to
liblinear's sparse format (its size is printed as well, measured by a fit that stops at once).
An informational MFN tol sweep shows what MFN needs for the same 1e-6 accuracy.

Memory: one more (untimed) MFN solve per lambda under ``tracemalloc`` (peak of the traced
allocations during the solve; numpy and scipy.sparse register their buffers) and with the peak
RSS reset just before it (``/proc/self/clear_refs``), so that ``ru_maxrss`` after the solve is
the peak of the solve itself; both are printed next to the size of X (data + indices + indptr).

``--quick`` (smoke test, ~20 s): part (a) on 5,000 x 2,000 (200 labeled) instead of 40,000 x
10,000 (its anchor targets are then not applicable) plus the 2,000 x 2,000 set; part (b) on
20,000 x 5,000 with lam = 0.5 only.

Run from the repository root::

    python benchmarks/bench_linear_s3vm.py            # full, ~3-4 min on 2 cores
    python benchmarks/bench_linear_s3vm.py --quick
"""

from __future__ import annotations

import argparse
import gc
import resource
import sys
import time
import tracemalloc
import warnings

import _source_tree  # noqa: F401  (the tree's ssl_opt, not an installed copy)
import numpy as np
from _linear_common import (
    TARGET_TIME_RATIO,
    best_of,
    csr_bytes,
    fmt,
    header_lines,
    log,
    mib,
    print_table,
    transductive_error,
    verdict,
    warm_up,
)

import ssl_opt
from ssl_opt.datasets.text_generator import synthetic_text
from ssl_opt.problems import DAS3VM, TSVM, LinearSVM

# SVMlin (C++), measured by the paper's authors on this kind of machine; lambda = 1e-3, lambda' = 1.
ANCHORS = {
    "large": {"mfn": 0.35, "tsvm": 12.1, "da": 18.4, "tsvm_switches": 446},
    "small": {"mfn": 0.01, "tsvm": 0.40, "da": 1.24, "tsvm_switches": None},
}
LIBLINEAR_REFERENCE_S = 2.7  # the liblinear time on a 100,000 x 20,000 tf-idf set
OBJ_REL_TARGET = 1e-6
LIBLINEAR_TOLS = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8)
MFN_TOLS = (1e-3, 1e-4, 1e-5, 1e-6)  # informational; the default 1e-7 is timed separately


# ----------------------------------------------------------------------------- part (a)


def anchor_instances(args) -> list[dict]:
    if args.quick:
        large = dict(key="large", n=5000, d=2000, nnz=60, l=200, anchored=False)
    else:
        large = dict(key="large", n=40000, d=10000, nnz=60, l=400, anchored=True)
    small = dict(key="small", n=2000, d=2000, nnz=60, l=args.small_labeled, anchored=True)
    return [large, small]


def run_anchor_instance(spec: dict, args) -> dict:
    t0 = time.perf_counter()
    data = synthetic_text(spec["n"], spec["d"], nnz_per_row=spec["nnz"], n_labeled=spec["l"],
                          seed=args.seed)
    t_gen = time.perf_counter() - t0
    X, y, y_all, l = data.X, data.y, data.y_all, spec["l"]
    name = f"text {spec['n']}x{spec['d']}, l={l}"
    log(f"(a) {name}: nnz={X.nnz} (generated in {t_gen:.1f} s)")
    lam, lam_u = args.lam, args.lam_u
    X_lab = X[:l]
    rows = []

    def supervised(label, cost, anchor_key):
        problem = LinearSVM(X_lab, y, lam, cost=cost)
        sol, t, k = best_of(lambda: ssl_opt.solve(problem, solver="mfn"), args.repeat)
        w = sol.x["w"]
        out = X @ w[:-1] + w[-1]
        rows.append(dict(method=label, time=t, runs=k, anchor=anchor_key, objective=sol.objective,
                         obj_kind="L2-SVM", switches=None, mfn_calls=1,
                         err=transductive_error(out, y_all, l), status=sol.status))

    log("    MFN ...")
    supervised("MFN (labeled rows, c=1/l)", np.full(l, 1.0 / l), "mfn")
    supervised("  info: MFN, c=1", None, None)

    log("    TSVM ...")
    tsvm = TSVM(X, y, lam, lam_u)
    sol, t, k = best_of(lambda: ssl_opt.solve(tsvm, solver="tsvm", S=args.S), args.repeat,
                        args.time_budget)
    rows.append(dict(method=f"TSVM (S={args.S})", time=t, runs=k, anchor="tsvm",
                     objective=tsvm.best_labeling_objective(sol), obj_kind="TSVM",
                     switches=sol.info["switches"], mfn_calls=sol.info["retrains"],
                     err=transductive_error(tsvm.prediction(sol), y_all, l), status=sol.status,
                     stages=sol.info["stages"]))

    log("    DA ...")
    da = DAS3VM(X, y, lam, lam_u)
    sol, t, k = best_of(lambda: ssl_opt.solve(da, solver="da"), args.repeat, args.time_budget)
    rows.append(dict(method="DA", time=t, runs=k, anchor="da",
                     objective=sol.info["tsvm_objective"], obj_kind="TSVM", switches=None,
                     mfn_calls=sol.info["mfn_calls"],
                     err=transductive_error(da.prediction(sol), y_all, l), status=sol.status,
                     stages=sol.info["stages"]))
    return dict(spec=spec, name=name, nnz=X.nnz, rows=rows, t_gen=t_gen)


def print_anchor_tables(results: list[dict], args) -> list[tuple[str, bool | None]]:
    """Our times next to SVMlin's reported ones. SVMlin does not run here, so no ratio is
    formed with it (``benchmarks/bench_ratios.py`` has the side-by-side ratios that can be
    measured here)."""
    headers = ["instance", "method", "ours [s]", "runs", "SVMlin reported [s]", "objective",
               "switches (SVMlin)", "MFN calls", "transd. err %", "status"]
    table = []
    for res in results:
        spec = res["spec"]
        anchors = ANCHORS[spec["key"]] if spec["anchored"] else {}
        for i, r in enumerate(res["rows"]):
            ref = anchors.get(r["anchor"]) if r["anchor"] else None
            sw = fmt(r["switches"], "d")
            ref_sw = anchors.get("tsvm_switches") if r["anchor"] == "tsvm" else None
            if ref_sw is not None:
                sw += f" ({ref_sw})"
            table.append([
                res["name"] if i == 0 else "", r["method"], fmt(r["time"], ".4g"),
                str(r["runs"]), fmt(ref, ".3g"),
                f"{r['objective']:.8g} [{r['obj_kind']}]", sw, fmt(r["mfn_calls"], "d"),
                f"{r['err']:.2f}", r["status"],
            ])
    print_table(headers, table, align="<<>>>>>>><")
    print("   SVMlin's times were reported for this kind of machine (module docstring); SVMlin "
          "does not run here, so they are context, not a ratio.")
    for res in results:
        tsvm = next(r for r in res["rows"] if r["anchor"] == "tsvm")
        da = next(r for r in res["rows"] if r["anchor"] == "da")
        print(f"   {res['name']}: nnz={res['nnz']} ({res['nnz'] / res['spec']['n']:.1f} per row); "
              f"TSVM {tsvm['stages']} lambda' stages, DA {da['stages']} temperatures; "
              f"DA - TSVM objective {da['objective'] - tsvm['objective']:+.3g}")
    if any(not res["spec"]["anchored"] for res in results):
        print("   (--quick: the first instance is smaller than the 40,000 x 10,000 anchor, so no "
              "SVMlin time is shown for it)")
    return []


# ----------------------------------------------------------------------------- part (b)


def status_of_fit(clf) -> int:
    return int(np.max(clf.n_iter_))


def liblinear_fit(X, y, lam, tol):
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    clf = LinearSVC(loss="squared_hinge", penalty="l2", dual=False, C=1.0 / (2.0 * lam),
                    fit_intercept=True, intercept_scaling=1.0, tol=tol, max_iter=1000)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        t0 = time.perf_counter()
        clf.fit(X, y)
        elapsed = time.perf_counter() - t0
    converged = not any(issubclass(c.category, ConvergenceWarning) for c in caught)
    w = np.concatenate([clf.coef_.ravel(), np.atleast_1d(clf.intercept_)])
    return w, elapsed, status_of_fit(clf), converged


def vm_rss_bytes() -> int | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def reset_peak_rss() -> bool:
    """Reset the peak RSS (VmHWM, ru_maxrss) of this process (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def release_free_heap() -> None:
    """Return freed heap pages to the OS (glibc ``malloc_trim``), so that a later RSS peak
    measures new allocations rather than reused free memory."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def memory_of_mfn(problem) -> dict:
    gc.collect()
    release_free_heap()
    reset = reset_peak_rss()
    rss0 = vm_rss_bytes()
    tracemalloc.start()
    tracemalloc.reset_peak()
    ssl_opt.solve(problem, solver="mfn")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    return dict(traced_peak=peak, rss_before=rss0, maxrss=maxrss, reset=reset)


def run_svm_comparison(X, y, lam: float, args) -> dict:
    problem = LinearSVM(X, y, lam)
    log(f"(b) lambda={lam:g}: MFN ...")
    mfn_sol, mfn_t, mfn_k = best_of(lambda: ssl_opt.solve(problem, solver="mfn"), args.repeat)
    w_mfn = mfn_sol.x["w"]
    j_mfn = mfn_sol.objective

    def rel(j):
        return (j - j_mfn) / abs(j_mfn)

    sweep, chosen = [], None
    for tol in LIBLINEAR_TOLS:
        log(f"    liblinear tol={tol:g} ...")
        w, t, it, conv = liblinear_fit(X, y, lam, tol)
        j = problem.objective({"w": w})
        row = dict(tol=tol, time=t, iters=it, converged=conv, objective=j, rel=rel(j),
                   stat=problem.kkt({"w": w})["stationarity"], w=w)
        sweep.append(row)
        if abs(row["rel"]) <= OBJ_REL_TARGET:
            chosen = row
            break
    if chosen is None:
        chosen = min(sweep, key=lambda r: abs(r["rel"]))
    times = [chosen["time"]]
    for _ in range(max(1, args.repeat) - 1):
        times.append(liblinear_fit(X, y, lam, chosen["tol"])[1])
    _, t_overhead, _, _ = liblinear_fit(X, y, lam, 1e6)  # stops at once: conversion + gradient

    mfn_sweep = []
    if not args.no_mfn_sweep:
        for tol in MFN_TOLS:
            log(f"    MFN tol={tol:g} ...")
            s, t, _ = best_of(lambda tol=tol: ssl_opt.solve(problem, solver="mfn", tol=tol),
                              args.repeat)
            r = rel(s.objective)
            mfn_sweep.append(dict(tol=tol, time=t, iters=s.iterations,
                                  cg=s.info["cg_iterations"], objective=s.objective, rel=r,
                                  stat=problem.kkt(s.x)["stationarity"]))
            if abs(r) <= OBJ_REL_TARGET:
                break
    log("    memory ...")
    mem = memory_of_mfn(problem)
    return dict(lam=lam, mfn=dict(time=mfn_t, runs=mfn_k, objective=j_mfn,
                                  iters=mfn_sol.iterations, cg=mfn_sol.info["cg_iterations"],
                                  stat=problem.kkt(mfn_sol.x)["stationarity"],
                                  status=mfn_sol.status, w=w_mfn),
                sweep=sweep, chosen=chosen, lib_time=min(times), lib_runs=len(times),
                lib_overhead=t_overhead, mfn_sweep=mfn_sweep, mem=mem)


def print_svm_results(results: list[dict], X, n: int, d: int, args) -> list[tuple[str, bool]]:
    targets = []
    x_bytes = csr_bytes(X)
    for res in results:
        lam = res["lam"]
        m, ch = res["mfn"], res["chosen"]
        print(f"-- lambda = {lam:g} (liblinear C = 1/(2 lambda) = {1 / (2 * lam):g}); "
              f"relative differences are (J - J_MFN)/|J_MFN|")
        print()
        print("   liblinear tol sweep (single runs, loose to tight; stops at the first tol within "
              f"{OBJ_REL_TARGET:g} of MFN):")
        rows = [[fmt(r["tol"], "g"), f"{r['time']:.3f}", str(r["iters"]),
                 "yes" if r["converged"] else "no", f"{r['objective']:.12g}",
                 f"{r['rel']:+.2e}", f"{r['stat']:.2e}"] for r in res["sweep"]]
        print_table(["tol", "time [s]", "Newton its", "converged", "objective", "rel. diff",
                     "stationarity"], rows, indent="   ")
        if res["mfn_sweep"]:
            print()
            print("   info: MFN tol sweep (best of --repeat; stops at the first tol within "
                  f"{OBJ_REL_TARGET:g}):")
            rows = [[fmt(r["tol"], "g"), f"{r['time']:.3f}", str(r["iters"]), str(r["cg"]),
                     f"{r['objective']:.12g}", f"{r['rel']:+.2e}", f"{r['stat']:.2e}"]
                    for r in res["mfn_sweep"]]
            print_table(["tol", "time [s]", "Newton its", "CG its", "objective", "rel. diff",
                         "stationarity"], rows, indent="   ")
        print()
        ratio = m["time"] / res["lib_time"]
        rel_obj = (ch["objective"] - m["objective"]) / abs(m["objective"])
        rows = [
            ["MFN (default, tol 1e-7)", f"{m['time']:.3f}", str(m["runs"]),
             f"{m['iters']} / {m['cg']} CG", f"{m['objective']:.12g}", "0",
             f"{m['stat']:.2e}", m["status"]],
            [f"liblinear (tol {ch['tol']:g})", f"{res['lib_time']:.3f}", str(res["lib_runs"]),
             f"{ch['iters']}", f"{ch['objective']:.12g}", f"{rel_obj:+.2e}",
             f"{ch['stat']:.2e}", "converged" if ch["converged"] else "max_iter"],
        ]
        print_table(["solver", "time [s]", "runs", "iterations", "objective", "rel. diff",
                     "stationarity", "status"], rows, indent="   ")
        w_diff = np.linalg.norm(m["w"] - ch["w"]) / max(1e-300, np.linalg.norm(m["w"]))
        print(f"   MFN / liblinear time = {ratio:.2f} (target <= {TARGET_TIME_RATIO}); "
              f"|w_MFN - w_lib| / |w_MFN| = {w_diff:.2e}; liblinear fit that stops at once "
              f"(X conversion + one gradient): {res['lib_overhead']:.3f} s; reference: liblinear "
              f"{LIBLINEAR_REFERENCE_S} s on a 100,000 x 20,000 tf-idf set")
        mem = res["mem"]
        dense = 8.0 * n * (d + 1)
        traced = mem["traced_peak"]
        print(f"   memory of one MFN solve: X (CSR data+indices+indptr) {mib(x_bytes)}; "
              f"tracemalloc peak {mib(traced)} = {traced / x_bytes:.2f} x X; "
              f"RSS before {mib(mem['rss_before'] or float('nan'))}, ru_maxrss after "
              f"{mib(mem['maxrss'])} (peak reset before the solve: "
              f"{'yes' if mem['reset'] else 'NO - includes earlier peaks'}), growth "
              f"{mib(mem['maxrss'] - (mem['rss_before'] or 0))}; a dense copy of X~ would take "
              f"{dense / 2**30:.1f} GiB")
        print()
        targets.append((f"MFN vs liblinear (tol {ch['tol']:g}), lambda={lam:g}: {m['time']:.3g} s "
                        f"vs {res['lib_time']:.3g} s (x{ratio:.2f} <= {TARGET_TIME_RATIO})",
                        ratio <= TARGET_TIME_RATIO))
        targets.append((f"same objective, lambda={lam:g}: |rel. diff| = {abs(rel_obj):.1e} "
                        f"<= {OBJ_REL_TARGET:g}", abs(rel_obj) <= OBJ_REL_TARGET))
        grow = mem["maxrss"] - (mem["rss_before"] or 0)
        targets.append((f"no dense copy of X, lambda={lam:g}: traced peak "
                        f"{mem['traced_peak'] / x_bytes:.2f} x X, RSS growth "
                        f"{grow / x_bytes:.2f} x X (dense X~ = {dense / x_bytes:.0f} x X)",
                        max(mem["traced_peak"], grow) < 0.1 * dense))
    return targets


# ----------------------------------------------------------------------------- main


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="small sizes, ~20 s (smoke test)")
    p.add_argument("--repeat", type=int, default=3, help="timed runs per solver (best reported)")
    p.add_argument("--time-budget", type=float, default=45.0,
                   help="stop repeating TSVM/DA once their runs took this many seconds")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lam", type=float, default=1e-3, help="lambda of part (a)")
    p.add_argument("--lam-u", type=float, default=1.0, help="lambda' of part (a)")
    p.add_argument("--S", type=int, default=10_000, help="TSVM switches per retraining")
    p.add_argument("--small-labeled", type=int, default=50,
                   help="labeled rows of the 2,000 x 2,000 set")
    p.add_argument("--svm-lams", type=float, nargs="+", default=None,
                   help="lambdas of part (b) (default 0.5 1e-3; --quick: 0.5)")
    p.add_argument("--svm-size", type=int, nargs=2, default=None, metavar=("N", "D"),
                   help="part (b) size (default 100000 20000; --quick: 20000 5000)")
    p.add_argument("--no-mfn-sweep", action="store_true", help="skip the informational MFN sweep")
    p.add_argument("--skip-anchors", action="store_true", help="skip part (a)")
    p.add_argument("--skip-liblinear", action="store_true", help="skip part (b)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    start = time.perf_counter()
    for line in header_lines("bench_linear_s3vm: MFN / TSVM / DA vs SVMlin and liblinear"):
        print(line)
    print(f"# mode={'quick' if args.quick else 'full'} repeat={args.repeat} (best time) "
          f"seed={args.seed}; times are solver time only (data and problem objects built "
          "beforehand); the machine is shared, so single timings can be noisy")
    print()
    log("warming up ...")
    warm_up()
    targets: list[tuple[str, bool | None]] = []

    if not args.skip_anchors:
        results = [run_anchor_instance(spec, args) for spec in anchor_instances(args)]
        print(f"== (a) SVMlin anchors: lambda = {args.lam:g}, lambda' = {args.lam_u:g}, "
              f"r = labeled positive fraction; synthetic_text(..., seed={args.seed})")
        print("   MFN = L2-SVM-MFN on the labeled rows alone with costs 1/l, i.e. "
              "LinearSVM(X[:l], y, lam, cost=np.full(l, 1/l)) (our reading of SVMlin's MFN "
              "figure); the 'info' row uses unit costs")
        print("   objective: [TSVM] = problem.best_labeling_objective(x) (best balanced "
              "labeling of the unlabeled rows; what SVMlin prints), [L2-SVM] = the supervised "
              "objective")
        print("   transd. err = error of sign(x~'w) on the unlabeled rows; MFN calls = TSVM "
              "retrainings / DA w-steps")
        print()
        targets += print_anchor_tables(results, args)
        print()

    if not args.skip_liblinear:
        n, d = args.svm_size or ((20000, 5000) if args.quick else (100000, 20000))
        lams = args.svm_lams or ([0.5] if args.quick else [0.5, 1e-3])
        t0 = time.perf_counter()
        data = synthetic_text(n, d, nnz_per_row=50, n_labeled=n, seed=args.seed)
        log(f"(b) generated {n}x{d} in {time.perf_counter() - t0:.1f} s")
        X, y = data.X, data.y
        svm_results = [run_svm_comparison(X, y, lam, args) for lam in lams]
        print(f"== (b) L2-SVM-MFN vs scikit-learn liblinear (LinearSVC primal, squared hinge): "
              f"synthetic_text({n}, {d}, nnz_per_row=50, n_labeled={n}, seed={args.seed}), "
              f"all rows labeled, nnz={X.nnz}")
        print("   objective lam/2 |w|^2 + 1/2 sum max(0, 1 - y x~'w)^2 with unit costs; liblinear "
              "minimizes C times it plus a constant factor (C = 1/(2 lam)); w_lib = [coef_, "
              "intercept_]; stationarity = problem.kkt(w)['stationarity'] (the model's: "
              "|grad|_inf / max(1, |lam w|_inf, |X~'(c y slack)|_inf))")
        print(f"   lambda = {lams[0]:g} is the primary setting (C = {1 / (2 * lams[0]):g})")
        print()
        targets += print_svm_results(svm_results, X, n, d, args)

    print("== Targets")
    for text, ok in targets:
        print(f"   {verdict(ok):<4}  {text}")
    print()
    print(f"# total wall time {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
