"""LapSVM solver benchmark: reference (CVXPY), Newton, PCG to tolerance and early-stopped PCG.

For two moons and G50C-like data at several sizes n (``--sizes``, default 500 1000 2000 4000) this
prints, in one fixed-width table, for every solver: status, iterations, time (kernel and
Laplacian construction excluded: both are precomputed), PCG time per iteration divided by the
time of one product ``K @ v`` (median of several, same K), out-of-sample test error
(``sign(K_test @ alpha + b)``), transductive error on the unlabeled training points, the
objective's relative gap to the best objective found, and the speed-up Newton time / time.
It then checks the targets

* early-stopped PCG >= 50x faster than Newton at n = 4000 with test error within 1 point,
* PCG time per iteration within 2x of one product with K,

and prints the anchor figures (paper authors' Matlab code run in Octave; LAMDA-SSL LapSVM)
next to the measured two-moons numbers.

Settings
--------
two moons: ``two_moons(noise=0.1)``, 10 labeled points (5 per class), RBF sigma = 0.3, kNN graph
with 10 neighbours and heat weights (width = mean kNN distance), normalized Laplacian, p = 1,
gamma_A = 1, gamma_I = 100. With noise 0.1 the moons' tips overlap slightly: the nearest-curve
(near-Bayes) rule errs on about 0.4 % of the points, and a kNN graph has a few edges between
the moons. With only 2-4 labeled points the semi-supervised solution was poor at n >= 2000
(10-30 % error for every gamma tried), hence 10 labeled points.

G50C-like: ``g50c_like(d=50)``, 50 labeled, sigma = 17.5, nn = 50 (binary weights, see
``g50c_table4.py``), normalized Laplacian, p = 5, gamma_A = 0.1, gamma_I = 10 (the paper's G50C
settings). These were tuned for n = 550; at larger n the same settings give a larger error
(the graph gets relatively sparser), which is reported as measured.

L^5 of a 50-NN graph is a full matrix returned as scipy CSR. A CSR product with it costs several
dense products with K, and Newton's ``L @ K`` becomes a slow sparse-times-dense product, unless
LapSVM stores such an L dense (it does when more than 25 % is filled; the L column then reads
``csr>D``). With ``--laplacian both`` (default) a Laplacian denser than 25 % that LapSVM keeps
sparse is also run as a dense ndarray (rows ``dense``); ``as-built`` passes only the builder's
CSR matrix; ``dense`` passes every Laplacian denser than 25 % as an ndarray.

PCG cost per iteration is compared with the median time of back-to-back products ``K @ v``
(at n = 4000 K takes 128 MB and may stay in a large last-level cache) and with a "cold" time
measured after streaming through a ``--evict-mib`` buffer, when K comes from main memory.

Validation rule: a separate set of ``--n-val`` labeled points (default 50) drawn from the same
distribution, not part of the training set; the test set (``--n-test``) is disjoint from it.

Run from the repository root::

    python benchmarks/bench_lapsvm.py                       # sizes 500 1000 2000 4000
    python benchmarks/bench_lapsvm.py --sizes 500 --datasets two_moons --plot conv.png
"""

from __future__ import annotations

import argparse
import math
import platform
import sys
import time
import warnings

import _source_tree  # noqa: F401  (the tree's ssl_opt, not an installed copy)
import numpy as np
import scipy.sparse as sp

import ssl_opt
from ssl_opt.builders import knn_graph, laplacian, rbf_kernel
from ssl_opt.datasets.synthetic import g50c_like, two_moons
from ssl_opt.problems import LapSVM

DATASETS = ("two_moons", "g50c_like")

CONFIG = {
    "two_moons": dict(
        n_labeled=10, noise=0.1, sigma=0.3, n_neighbors=10, weights="heat", power=1,
        gamma_A=1.0, gamma_I=100.0,
    ),
    "g50c_like": dict(
        n_labeled=50, d=50, sigma=17.5, n_neighbors=50, weights="binary", power=5,
        gamma_A=0.1, gamma_I=10.0,
    ),
}

# Anchor figures for two moons (seconds): the paper authors' Matlab code run in Octave, and
# the LapSVM of the Python library LAMDA-SSL.
ANCHORS = {
    2000: {"octave_newton": 3.2, "octave_pcg_es": 0.03, "lamda": 11.0},
    4000: {"octave_newton": 26.0, "octave_pcg_es": 0.19, "lamda": 87.0},
}
TARGET_SPEEDUP = 50.0
TARGET_ERR_POINTS = 1.0
TARGET_ITER_OVER_KV = 2.0
#: PCG time per iteration over its two products, t(K@v) + t(L@v), from n = 1000 up.
TARGET_ITER_OVER_PRODUCTS, TARGET_PRODUCTS_FROM_N = 1.5, 1000
DENSE_L_THRESHOLD = 0.25
ES_RULES = ("stability", "validation", "mixed")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- data


def make_instance(name: str, n: int, n_val: int, n_test: int, seed: int) -> dict:
    cfg = CONFIG[name]
    if name == "two_moons":
        data = two_moons(n=n, n_labeled=cfg["n_labeled"], noise=cfg["noise"], seed=seed,
                         n_test=n_val + n_test)
    else:
        data = g50c_like(n=n, n_labeled=cfg["n_labeled"], d=cfg["d"], seed=seed,
                         n_test=n_val + n_test)
    t0 = time.perf_counter()
    K = rbf_kernel(data.X, sigma=cfg["sigma"])
    K_val = rbf_kernel(data.X_test[:n_val], data.X, sigma=cfg["sigma"])
    K_test = rbf_kernel(data.X_test[n_val:], data.X, sigma=cfg["sigma"])
    t_kernel = time.perf_counter() - t0
    t0 = time.perf_counter()
    W = knn_graph(data.X, n_neighbors=cfg["n_neighbors"], weights=cfg["weights"])
    L = laplacian(W, normalized=True, power=cfg["power"])
    t_lap = time.perf_counter() - t0
    return dict(
        name=name, n=n, data=data, K=K, K_val=K_val, y_val=data.y_test[:n_val],
        K_test=K_test, y_test=data.y_test[n_val:], L=L, t_kernel=t_kernel, t_lap=t_lap,
        density=L.nnz / float(n * n), cfg=cfg,
    )


def run_variants(inst: dict, args) -> list[dict]:
    """Run with the builder's CSR Laplacian and, for a Laplacian denser than 25 % that LapSVM
    keeps sparse, also with it as a dense ndarray (``--laplacian``)."""
    L = inst["L"]
    dense_ok = inst["density"] > DENSE_L_THRESHOLD
    if args.laplacian == "dense" and dense_ok:
        return [run_instance(inst, L.toarray(), "dense", args)]
    first = run_instance(inst, L, "csr", args)
    out = [first]
    if args.laplacian == "both" and dense_ok and sp.issparse(first["problem"].L):
        out.append(run_instance(inst, L.toarray(), "dense", args))
    return out


# ----------------------------------------------------------------------------- timing


_EVICT: list[np.ndarray] = []


def median_product_time(M, n: int, reps: int = 25, seed: int = 0, cold: bool = False) -> float:
    """Median time of ``M @ v``; ``cold``: after streaming through a buffer larger than the
    last-level cache before each product, so that M is read from main memory."""
    v = np.random.default_rng(seed).standard_normal(n)
    M @ v  # warm-up
    times = []
    for _ in range(reps):
        if cold:
            _EVICT[0].sum()
        t0 = time.perf_counter()
        M @ v
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def timed_solve(problem, solver: str, repeats: int, budget: float, **options):
    """First solution and the median wall time over up to ``repeats`` runs within ``budget``."""
    times, first = [], None
    spent = 0.0
    for _ in range(max(1, repeats)):
        sol = ssl_opt.solve(problem, solver=solver, **options)
        times.append(sol.time)
        spent += sol.time
        if first is None:
            first = sol
        if spent > budget:
            break
    return first, float(np.median(times)), len(times)


def warm_up() -> None:
    """Pay imports and BLAS/LAPACK start-up once, outside the measurements."""
    data = two_moons(n=60, n_labeled=4, noise=0.1, seed=1)
    K = rbf_kernel(data.X, sigma=0.3)
    L = laplacian(knn_graph(data.X, n_neighbors=6), normalized=True)
    problem = LapSVM(K, L, data.y, 1.0, 1.0)
    for solver in ("newton", "pcg", "cvxpy"):
        try:
            ssl_opt.solve(problem, solver=solver)
        except Exception as exc:  # noqa: BLE001 - report and carry on
            log(f"warm-up of {solver} failed: {exc}")


# ----------------------------------------------------------------------------- runs


def errors(inst: dict, sol) -> tuple[float, float]:
    if sol is None or sol.status == "failed":
        return float("nan"), float("nan")
    alpha, b = sol.x["alpha"], float(sol.x["b"])
    l = inst["data"].n_labeled  # noqa: E741
    f_test = inst["K_test"] @ alpha + b
    test = 100.0 * float(np.mean(np.sign(f_test) != inst["y_test"]))
    f_u = inst["K"][l:] @ alpha + b
    transd = 100.0 * float(np.mean(np.sign(f_u) != inst["data"].y_all[l:]))
    return test, transd


def run_instance(inst: dict, L, lfmt: str, args) -> dict:
    cfg, n = inst["cfg"], inst["n"]
    problem = LapSVM(inst["K"], L, inst["data"].y, cfg["gamma_A"], cfg["gamma_I"])
    if lfmt == "csr" and not sp.issparse(problem.L):
        lfmt = "csr>D"  # passed as CSR, stored dense by LapSVM
    t_kv = [median_product_time(inst["K"], n)]
    t_lv = median_product_time(problem.L, n)
    runs: list[dict] = []

    def record(label, solver, **options):
        log(f"  {inst['name']} n={n} L={lfmt}: {label} ...")
        budget = args.time_budget
        reps = args.repeats if solver != "cvxpy" else 1
        try:
            sol, t, k = timed_solve(problem, solver, reps, budget, **options)
        except Exception as exc:  # noqa: BLE001 - a failure is a result too
            log(f"    {label} raised {type(exc).__name__}: {exc}")
            runs.append(dict(label=label, sol=None, time=float("nan"), reps=0,
                             status=f"error:{type(exc).__name__}"))
            return
        log(f"    {sol.status}, {sol.iterations} it, {t:.4g} s (median of {k})")
        status = sol.status
        if status == "optimal" and str(sol.info.get("converged_by", "")).startswith("objective"):
            status = "optimal(rnd)"  # stopped by PCG's round-off rule, not by ‖∇J‖ <= tol
        runs.append(dict(label=label, sol=sol, time=t, reps=k, status=status))

    if n <= args.cvxpy_max_n:
        record("cvxpy (ref.)", "cvxpy")
    record("newton", "newton")
    pcg_opts = {} if args.pcg_max_iter is None else {"max_iter": args.pcg_max_iter}
    record("pcg (tol)", "pcg", **pcg_opts)
    validation = (inst["K_val"], inst["y_val"])
    for rule in ES_RULES:
        opts = dict(pcg_opts, early_stopping=rule)
        if rule != "stability":
            opts["validation"] = validation
        record(f"pcg-es {rule}", "pcg", **opts)
    t_kv.append(median_product_time(inst["K"], n, seed=1))
    t_kv_cold = median_product_time(inst["K"], n, reps=15, cold=True)
    for r in runs:
        r["test"], r["transd"] = errors(inst, r["sol"])
    objs = [r["sol"].objective for r in runs
            if r["sol"] is not None and np.isfinite(r["sol"].objective)
            and r["label"] in ("cvxpy (ref.)", "newton", "pcg (tol)")]
    best = min(objs) if objs else float("nan")
    for r in runs:
        obj = r["sol"].objective if r["sol"] is not None else float("nan")
        r["gap"] = (obj - best) / max(1.0, abs(best))
    return dict(inst=inst, lfmt=lfmt, runs=runs, t_kv=float(np.median(t_kv)), t_lv=t_lv,
                t_kv_cold=t_kv_cold, best=best, problem=problem)


# ----------------------------------------------------------------------------- printing


def fmt(x, spec: str, width: int) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-".rjust(width)
    return format(x, spec).rjust(width)


def by_label(res: dict, label: str) -> dict | None:
    return next((r for r in res["runs"] if r["label"] == label), None)


def print_main_table(results: list[dict]) -> None:
    head = (f"{'data':<10} {'n':>5} {'L':<5} {'solver':<18} {'status':<14} {'iters':>6} "
            f"{'time[s]':>9} {'(t/it)/tKv':>10} {'test%':>6} {'transd%':>7} {'rel.gap':>9} "
            f"{'Newton/t':>9}")
    print(head)
    print("-" * len(head))
    for res in results:
        inst = res["inst"]
        newton = by_label(res, "newton")
        t_newton = newton["time"] if newton else float("nan")
        for r in res["runs"]:
            sol = r["sol"]
            iters = sol.iterations if sol is not None else None
            per_it = (r["time"] / iters / res["t_kv"]
                      if iters and r["label"].startswith("pcg") else None)
            ratio = t_newton / r["time"] if r["time"] and r["label"] != "newton" else None
            print(f"{inst['name']:<10} {inst['n']:>5} {res['lfmt']:<5} {r['label']:<18} "
                  f"{r['status'][:14]:<14} {fmt(iters, 'd', 6)} {fmt(r['time'], '.4g', 9)} "
                  f"{fmt(per_it, '.2f', 10)} {fmt(r['test'], '.2f', 6)} "
                  f"{fmt(r['transd'], '.2f', 7)} {fmt(r['gap'], '.1e', 9)} "
                  f"{fmt(ratio, '.3g', 9)}")
        print()


def print_products_table(results: list[dict]) -> None:
    head = (f"{'data':<10} {'n':>5} {'L':<5} {'nnz(L)/n^2':>10} {'build K[s]':>10} "
            f"{'build L[s]':>10} {'t(K@v)[ms]':>10} {'cold[ms]':>8} {'t(L@v)[ms]':>10} "
            f"{'PCG ms/it':>9} {'/t(K@v)':>8} {'target<=2':>9} {'/cold':>6} "
            f"{'/(K+L)':>7} {'<=1.5':>5}")
    print(head)
    print("-" * len(head))
    for res in results:
        inst = res["inst"]
        pcg = by_label(res, "pcg (tol)")
        per_it = (pcg["time"] / pcg["sol"].iterations
                  if pcg and pcg["sol"] is not None and pcg["sol"].iterations else float("nan"))
        ratio = per_it / res["t_kv"]
        ok = "PASS" if ratio <= TARGET_ITER_OVER_KV else "FAIL"
        per_products = per_it / (res["t_kv"] + res["t_lv"])
        ok_products = ("-" if inst["n"] < TARGET_PRODUCTS_FROM_N
                       else "PASS" if per_products <= TARGET_ITER_OVER_PRODUCTS else "FAIL")
        print(f"{inst['name']:<10} {inst['n']:>5} {res['lfmt']:<5} {inst['density']:>10.3f} "
              f"{inst['t_kernel']:>10.3f} {inst['t_lap']:>10.3f} {1e3 * res['t_kv']:>10.3f} "
              f"{1e3 * res['t_kv_cold']:>8.3f} {1e3 * res['t_lv']:>10.3f} {1e3 * per_it:>9.3f} "
              f"{ratio:>8.2f} {ok:>9} {per_it / res['t_kv_cold']:>6.2f} "
              f"{per_products:>7.2f} {ok_products:>5}")


def print_targets(results: list[dict]) -> None:
    head = (f"{'data':<10} {'n':>5} {'L':<5} {'early stopping':<16} {'Newton[s]':>9} "
            f"{'PCG-ES[s]':>9} {'speed-up':>8} {'>=50x':>5} {'test% N':>7} {'test% ES':>8} "
            f"{'|diff|':>6} {'<=1pt':>5}")
    print(head)
    print("-" * len(head))
    for res in results:
        inst = res["inst"]
        newton = by_label(res, "newton")
        for rule in ES_RULES:
            es = by_label(res, f"pcg-es {rule}")
            if newton is None or es is None or es["sol"] is None:
                continue
            speed = newton["time"] / es["time"]
            diff = abs(es["test"] - newton["test"])
            print(f"{inst['name']:<10} {inst['n']:>5} {res['lfmt']:<5} {rule:<16} "
                  f"{newton['time']:>9.3f} {es['time']:>9.4f} {speed:>8.1f} "
                  f"{'yes' if speed >= TARGET_SPEEDUP else 'no':>5} {newton['test']:>7.2f} "
                  f"{es['test']:>8.2f} {diff:>6.2f} "
                  f"{'yes' if diff <= TARGET_ERR_POINTS else 'no':>5}")


def print_anchors(results: list[dict]) -> None:
    head = (f"{'two moons':<34} {'n':>5} {'Newton[s]':>9} {'PCG-ES[s]':>9} "
            f"{'Newton/PCG-ES':>13} {'LAMDA-SSL[s]':>12}")
    print(head)
    print("-" * len(head))
    for n, a in ANCHORS.items():
        print(f"{'anchor: authors Matlab in Octave':<34} {n:>5} {a['octave_newton']:>9.3g} "
              f"{a['octave_pcg_es']:>9.3g} {a['octave_newton'] / a['octave_pcg_es']:>13.0f} "
              f"{'-':>12}")
        print(f"{'anchor: LAMDA-SSL LapSVM (Python)':<34} {n:>5} {'-':>9} {'-':>9} {'-':>13} "
              f"{a['lamda']:>12.3g}")
        for res in results:
            if res["inst"]["name"] != "two_moons" or res["inst"]["n"] != n:
                continue
            newton = by_label(res, "newton")
            for rule in ES_RULES:
                es = by_label(res, f"pcg-es {rule}")
                if newton and es and es["sol"] is not None:
                    print(f"{'measured, PCG-ES ' + rule:<34} {n:>5} {newton['time']:>9.3g} "
                          f"{es['time']:>9.3g} {newton['time'] / es['time']:>13.1f} "
                          f"{'-':>12}")
    measured = sorted({r["inst"]["n"] for r in results if r["inst"]["name"] == "two_moons"})
    if not set(measured) & set(ANCHORS):
        print("(no two-moons size matching an anchor was run; anchors are at n = 2000, 4000)")


# ----------------------------------------------------------------------------- plot


def save_plot(results: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    ncol = min(3, len(results))
    nrow = -(-len(results) // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.4 * ncol, 3.6 * nrow), squeeze=False)
    for ax in axes.ravel()[len(results):]:
        ax.set_visible(False)
    for ax, res in zip(axes.ravel(), results, strict=False):
        hist_objs = []
        for label in ("newton", "pcg (tol)"):
            r = by_label(res, label)
            if r and r["sol"] is not None and len(r["sol"].history):
                hist_objs.append(np.nanmin(r["sol"].history["objective"]))
        best = min([res["best"], *hist_objs]) if hist_objs else res["best"]
        floor = 1e-16 * max(1.0, abs(best))
        for label, style in (("newton", "o-"), ("pcg (tol)", ".-")):
            r = by_label(res, label)
            if not r or r["sol"] is None or not len(r["sol"].history):
                continue
            h = r["sol"].history
            ax.plot(h["time"], np.maximum(h["objective"] - best, floor), style, ms=3,
                    label=label)
        for rule, marker in zip(ES_RULES, ("s", "^", "v"), strict=True):
            r = by_label(res, f"pcg-es {rule}")
            if r and r["sol"] is not None:
                ax.plot([r["sol"].time], [max(r["sol"].objective - best, floor)], marker,
                        label=f"PCG-ES {rule}")
        ax.set_yscale("log")
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("time [s]")
        ax.set_ylabel("J - J*")
        ax.set_title(f"{res['inst']['name']} n={res['inst']['n']} L={res['lfmt']}", fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    log(f"saved convergence plot to {path}")


# ----------------------------------------------------------------------------- main


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2000, 4000])
    p.add_argument("--datasets", nargs="+", choices=DATASETS, default=list(DATASETS))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--n-val", type=int, default=50, help="validation set size (labeled)")
    p.add_argument("--n-test", type=int, default=2000, help="out-of-sample test set size")
    p.add_argument("--repeats", type=int, default=3,
                   help="timed runs per solver (median reported; cvxpy runs once)")
    p.add_argument("--time-budget", type=float, default=15.0,
                   help="stop repeating a solver once its runs took this many seconds")
    p.add_argument("--cvxpy-max-n", type=int, default=600)
    p.add_argument("--pcg-max-iter", type=int, default=None,
                   help="iteration cap for PCG (default: the solver's, 10 n + 100)")
    p.add_argument("--laplacian", choices=("as-built", "dense", "both"), default="both",
                   help="format of Laplacians denser than 25%% (see the module docstring)")
    p.add_argument("--evict-mib", type=int, default=512,
                   help="buffer streamed before each 'cold' K@v timing (> last-level cache)")
    p.add_argument("--plot", metavar="PNG", default=None,
                   help="save a convergence plot (J - J* vs time)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    warnings.simplefilter("ignore", category=UserWarning)
    start = time.perf_counter()
    print(f"# bench_lapsvm: sizes={args.sizes} datasets={args.datasets} seed={args.seed} "
          f"repeats={args.repeats} |V|={args.n_val} |T|={args.n_test}")
    print(f"# python {platform.python_version()}, numpy {np.__version__}, "
          f"{platform.machine()}, ssl_opt {ssl_opt.__version__}")
    for name in args.datasets:
        cfg = CONFIG[name]
        print(f"# {name}: " + ", ".join(f"{k}={v}" for k, v in cfg.items()))
    _EVICT.append(np.ones(max(1, args.evict_mib) * 2**17))
    log("warming up ...")
    warm_up()
    results = []
    for name in args.datasets:
        for n in args.sizes:
            log(f"building {name} n={n} ...")
            inst = make_instance(name, n, args.n_val, args.n_test, args.seed)
            log(f"  K {inst['t_kernel']:.2f} s, L {inst['t_lap']:.2f} s "
                f"(nnz/n^2 = {inst['density']:.3f}) - excluded from solver times")
            results.extend(run_variants(inst, args))
    print()
    print("== Solvers (times exclude K/L construction; median of repeats; "
          "(t/it)/tKv = PCG time per iteration / time of one K@v)")
    print("   test% = out-of-sample error sign(K_test a + b); transd% = error on the unlabeled "
          "training points; rel.gap = (J - J_best)/max(1,|J_best|)")
    print("   L: csr = builder's CSR matrix, dense = passed as ndarray, csr>D = passed as CSR and "
          "stored dense by LapSVM")
    print("   optimal(rnd) = PCG stopped because J stalled at round-off for 20 iterations with "
          "|grad| <= sqrt(tol), not by |grad| <= tol")
    print()
    print_main_table(results)
    print("== Products and PCG cost per iteration (targets: PCG time/iteration <= 2 x t(K@v); "
          "<= 1.5 x its two products t(K@v) + t(L@v) from n = 1000)")
    print("   t(K@v): median of back-to-back products (K may stay in the last-level cache); "
          "cold: K read from main memory")
    print("   (a PCG iteration does one K and one L product; K and a dense L together can "
          "exceed the cache)")
    print()
    print_products_table(results)
    print()
    print(f"== Targets: early-stopped PCG >= {TARGET_SPEEDUP:.0f}x faster than Newton at "
          f"n = 4000, test error within {TARGET_ERR_POINTS:.0f} point")
    print()
    print_targets(results)
    if 4000 not in args.sizes:
        print("(the speed-up target is defined at n = 4000, which was not run)")
    print()
    print("== Anchors (two moons)")
    print()
    print_anchors(results)
    print()
    if args.plot:
        save_plot(results, args.plot)
    print(f"# total wall time {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
