"""Modelling-layer benchmark (docs/modeling.md): every variant's fast path against the CVXPY
reference, and the generic solvers against the papers' solvers on the families written as
compositions — side by side in one run.

Parts (stdout is the report, progress goes to stderr):

(a) Variants (``ssl_opt.modeling.variants``) at growing sizes: the reference (``cvxpy``,
    Clarabel, tolerances 1e-10) and the fast solver ``select(model, backend="fast")`` picks,
    each timed once on the same instance; the fast objective's relative gap to the reference,
    whether the fast solution certifies against that reference, and what ``auto`` picks; the
    last column times ``irls-newton`` where it applies but is not the pick, and where the pick
    is ``alm-newton`` (constraints on an expression) the model without its constraints, and
    where it is ``kernel-factor`` the fast solver the stated model would get without it. A
    variant's sizes stop growing once the reference takes ≥ ``--ref-cap`` seconds (default
    10): the last row is the ≥10 s comparison of the issue; the crossover is the smallest
    size where the fast path is faster.
(b) Families as named models: each family's problem (a Model of its terms) solved by the
    family's solver twice (the same result; the second time measures the run-to-run spread) and
    by the generic solvers that apply to it, e.g. ``newton-cg`` and ``irls-newton`` for LapSVM —
    "how much a paper's solver buys". LASS has no paper solver left (docs/lass.md): its rows
    compare each generic solver with what ``solve`` picks (family solver ``auto``). TSVM (a
    named transductive model) compares ``tsvm`` with ``tsvm-model``, the same switching with
    each inner L2-SVM solved through ``solve``.

Run from the repository root::

    python benchmarks/bench_modeling.py            # full (minutes; the references dominate)
    python benchmarks/bench_modeling.py --quick    # small sizes only
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import _source_tree  # noqa: F401  (the tree's ssl_opt, not an installed copy)
import numpy as np

import ssl_opt
from ssl_opt import registry
from ssl_opt.modeling import Model, variants

#: Sizes per variant (its builder's first argument), smallest first.
GRIDS = {
    "lapsvm_tv": (60, 120, 250, 500, 1000, 1500, 2000, 3000, 4000),
    "laprls_l1": (60, 120, 250, 500, 1000, 1500, 2000),
    "linear_huber_enet": (200, 1000, 4000, 16000, 40000),
    "linear_logistic_enet": (200, 1000, 4000, 16000, 40000),
    "lass_entropy": (150, 600, 2400, 8000, 20000),
    "lass_l1_graph": (150, 600, 2400, 8000, 20000),
    "ere_group": (60, 200, 600, 1500, 4000, 10000),
    "ere_huber": (60, 200, 600, 1500, 4000, 10000),
    "multiclass_laprls": (90, 250, 500, 1000, 1500, 2500, 3500, 5000),
    "multiclass_simplex": (90, 250, 500, 1000, 1500, 2500, 4000),
    "multiclass_l21": (90, 250, 500, 1000, 1500, 2500, 3500),
    "lapsvm_balance": (60, 120, 250, 500, 1000, 1500, 2000, 3000, 4000),
    "lapsvm_box": (60, 120, 250, 500, 1000, 1500, 2000, 3000),
    "label_propagation": (150, 600, 2400, 8000, 20000, 50000),
}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def variant_rows(name: str, sizes, ref_cap: float, repeat: int = 1) -> list[str]:
    rows = []
    for size in sizes:
        model = variants.VARIANTS[name](size)
        fast = ssl_opt.select(model, backend="fast")
        fast_name = fast.solver
        auto = ssl_opt.select(model).solver
        log(f"{name} n={size}: reference ...")
        ref, t_ref = timed(lambda m=model: ssl_opt.solve(m, solver="cvxpy"))
        log(f"{name} n={size}: {fast_name} ...")
        sol, t_fast = timed(lambda m=model, f=fast_name: ssl_opt.solve(m, solver=f))
        for _ in range(repeat - 1):  # best of `repeat` (the reference runs once)
            t_fast = min(t_fast, timed(lambda m=model, f=fast_name: ssl_opt.solve(m, solver=f))[1])
        gap = (sol.objective - ref.objective) / max(1.0, abs(ref.objective))
        passed = ssl_opt.certify(model, sol, reference=ref).passed if ref.optimal else None
        newton = "—"
        if fast_name == "kernel-factor":  # the gain of the factor: the stated model's pick
            stated = min((t, n) for n, t in fast.predicted_time.items()
                         if n != fast_name and registry.get_solver(n).backend == "fast")[1]
            log(f"{name} n={size}: {stated} on the stated model ...")
            other, t_other = timed(lambda m=model, s=stated: ssl_opt.solve(m, solver=s))
            newton = f"stated: {stated} {t_other:.3g} ({other.status})"
        elif fast_name != "irls-newton" and not registry.get_solver("irls-newton").missing(model):
            log(f"{name} n={size}: irls-newton ...")
            other, t_other = timed(lambda m=model: ssl_opt.solve(m, solver="irls-newton"))
            newton = f"{t_other:.3g} ({other.status})"
        elif fast_name == "alm-newton":  # the price of the constraints: the model without them
            free = Model(model.terms, prediction=model.prediction_expression)
            log(f"{name} n={size}: irls-newton without the constraints ...")
            other, t_other = timed(lambda m=free: ssl_opt.solve(m, solver="irls-newton"))
            newton = f"without constraints {t_other:.3g} ({other.status})"
        rows.append(f"| {name} | {size} | {model.size} | {t_ref:.3g} ({ref.status}) | "
                    f"{fast_name} | {t_fast:.3g} ({sol.status}) | {t_ref / t_fast:.1f}× | "
                    f"{gap:+.1e} | {passed} | {auto} | {newton} |")
        print(rows[-1], flush=True)
        if t_ref >= ref_cap:
            break
    return rows


def _digits_cases() -> list:
    """The problems the estimators build on scikit-learn's digits (1,797 points, 64 features
    scaled to [0, 1], shuffled with seed 0, the first 100 labeled): LapSVM and LapRLS on the
    parity of the digit (γ_A = γ_I = 1e-2, the values its docs were measured at), LASS and
    robust ERE on the ten classes (estimator defaults)."""
    from sklearn.datasets import load_digits

    from ssl_opt.estimators import EREClassifier, LaplacianAssignment, LapRLSC, LapSVC

    X, t = load_digits(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(t))
    X, t = X[order] / 16.0, t[order]
    y = np.full(len(t), -1)
    y[:100] = t[:100]
    parity = np.where(y >= 0, y % 2, -1)
    gammas = {"gamma_A": 1e-2, "gamma_I": 1e-2}  # the estimators' defaults until 2026-11-29
    return [
        ("LapSVM (digits)", LapSVC(**gammas, solver="newton").fit(X, parity).problem_, "newton"),
        ("LapRLS (digits)", LapRLSC(**gammas, solver="laprls-direct").fit(X, parity).problem_,
         "laprls-direct"),
        ("LASS (digits)", LaplacianAssignment().fit(X, y).problem_, None),
        ("ERE (digits)", EREClassifier(solver="irls").fit(X, y).problem_, "irls"),
    ]


#: The generic solvers compared with each family's paper solver (irls-newton assembles the
#: Hessian: not on LASS's simplex rows nor on the 64,000-feature LinearSVM).
GENERIC = {"LapSVM": ("newton-cg", "irls-newton"), "LapRLS": ("newton-cg", "irls-newton"),
           "LinearSVM": ("newton-cg", "lbfgs"), "LASS": ("pdhg", "admm-split", "fista"),
           "ERE": ("pdhg", "irls-newton", "irls-mm"), "TSVM": ("tsvm-model",)}


def _lass_clusters(N: int, K: int, d: int):
    """benchmarks/bench_lass.py's instance: K Gaussian clusters in d dimensions, a 10-NN graph,
    20 % of the items tagged (+1), 2 % negative tags, λ = 0.1 (where a sparse factorization of
    the Laplacian fills in at d = 10)."""
    from types import SimpleNamespace

    import bench_lass

    from ssl_opt.problems import LASS

    inst = bench_lass.clusters(N, K, d, SimpleNamespace(tagged=0.2, negative=0.02), 0)
    return LASS(inst["W"], inst["G"], 0.1)


def family_rows(quick: bool, repeat: int = 1, limit: float = 60.0,
                families: list[str] | None = None) -> None:
    """Each family's paper solver on the problem, twice, and the generic solvers on the same
    named model: interleaved, best of ``repeat``; a generic solver
    stops at ``limit`` seconds (status ``time_limit``)."""
    from ssl_opt.problems.ere.examples import _clusters_at
    from ssl_opt.problems.lass.examples import _moons_at as lass_at
    from ssl_opt.problems.linear.examples import register_generators as linear_generators
    from ssl_opt.problems.manifold.examples import _moons_at, lapsvm_with_loss

    linear = {g.key: g for g in linear_generators()}
    cases = [
        ("LapSVM", _moons_at(lapsvm_with_loss("squared_hinge"))(500 if quick else 2000, 0),
         "newton"),
        ("LapRLS", _moons_at(lapsvm_with_loss("square"))(500 if quick else 2000, 0),
         "laprls-direct"),
        ("LASS", lass_at(1000 if quick else 5000, 0), None),
        *([] if quick else [("LASS", lass_at(30000, 0), None),
                            ("LASS (10-D clusters)", _lass_clusters(10000, 10, 10), None)]),
        ("ERE", _clusters_at("robust")(200 if quick else 1000, 0), "irls"),
    ]
    svm = linear.get("linear/l2svm")
    if svm is not None:
        cases.insert(2, ("LinearSVM", svm.instance(svm.bench_scales[2 if quick else 4]),
                         "mfn"))
    tsvm = linear.get("linear/tsvm")
    if tsvm is not None:
        scales = tsvm.bench_scales[1:3] if quick else tsvm.bench_scales[1:5]
        cases += [("TSVM", tsvm.instance(n), "tsvm") for n in scales]
    cases += _digits_cases()
    if families:
        cases = [c for c in cases if c[0].split()[0] in families]
    one, five, fifteen = os.getloadavg()
    print(f"\n## (b) Families as compositions (interleaved, best of {repeat}; load average "
          f"{one:.2f} {five:.2f} {fifteen:.2f})\n")
    print("| family | size | family solver direct (s) | solved again (s) | same result | "
          "generic solver | generic (s) | generic / family | generic status, gap |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, problem, family_solver in cases:
        model = problem
        generics = GENERIC[label.split()[0]]
        runs = {"direct": (problem, family_solver), "lowered": (model, family_solver)}
        runs.update({g: (model, g) for g in generics})
        best: dict[str, tuple] = {}
        for _ in range(repeat):
            for key, (p, name) in runs.items():
                log(f"{label}: {key} ...")
                # A generic solver takes the composition as is (no lowering).
                opts = {"time_limit": limit} if key in generics else {}
                sol, t = timed(lambda p=p, name=name, o=opts: ssl_opt.solve(p, solver=name, **o))
                if key not in best or t < best[key][1]:
                    best[key] = (sol, t)
        direct, t_direct = best["direct"]
        lowered, t_lowered = best["lowered"]
        same = abs(lowered.objective - direct.objective) <= 1e-12 * max(1.0, abs(
            direct.objective))
        for generic in generics:
            sol, t_generic = best[generic]
            gap = (sol.objective - direct.objective) / max(1.0, abs(direct.objective))
            print(f"| {label} | {problem.structure.sizes} | {t_direct:.3g} "
              f"({family_solver or 'auto: ' + direct.solver}) | {t_lowered:.3g} | "
                  f"{same} | {generic} | {t_generic:.3g} | {t_generic / t_direct:.2f}× | "
                  f"{sol.status}, {gap:+.1e} |", flush=True)
    one, five, fifteen = os.getloadavg()
    print(f"\nload average at the end {one:.2f} {five:.2f} {fifteen:.2f}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only")
    parser.add_argument("--ref-cap", type=float, default=10.0,
                        help="stop growing a variant once the reference takes this long")
    parser.add_argument("--only", nargs="*", default=None, help="variants to run")
    parser.add_argument("--repeat", type=int, default=1,
                        help="time the fast solver this many times and report the best")
    parser.add_argument("--no-families", action="store_true", help="skip part (b)")
    parser.add_argument("--families-only", action="store_true", help="part (b) only")
    parser.add_argument("--generic-limit", type=float, default=60.0,
                        help="part (b): seconds a generic solver may take (time_limit)")
    parser.add_argument("--families", nargs="*", default=None,
                        help="part (b): only these families (LapSVM, LapRLS, LinearSVM, LASS, "
                             "ERE)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    print("# Modelling-layer benchmark\n")
    print(f"numpy {np.__version__}, ssl_opt {ssl_opt.__version__}\n")
    if not args.families_only:
        print("## (a) Variants: fast path against the CVXPY reference\n")
        print("| variant | size | unknowns | reference s (status) | fast solver | fast s "
              "(status) | speed-up | gap to reference | certified | auto picks | irls-newton s "
              "(when not picked) |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for name in args.only or GRIDS:
            sizes = GRIDS[name][:2] if args.quick else GRIDS[name]
            variant_rows(name, sizes, args.ref_cap, args.repeat)
    if not args.no_families:
        family_rows(args.quick, args.repeat, args.generic_limit, args.families)


if __name__ == "__main__":
    main()
