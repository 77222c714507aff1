"""The estimators on the papers' protocols: reproduction, multi-class cost, prediction memory.

Sections (``--only`` picks some):

* ``table4`` — [000 Table 4] through ``LapRLSC`` / ``LapSVC`` on G50C and PCMAC (the shared data
  folder; skipped when absent). Each of the ten fixed splits keeps its 50 labeled points; its
  unlabeled points are divided, with a seeded permutation, into U, V and T of the paper's sizes
  (G50C 314/50/136, PCMAC 1358/50/488: [000 Table 2]). The estimator is fitted on L ∪ U with the
  paper's parameters ([000 Table 9]: G50C σ = 17.5, nn = 50, p = 5; PCMAC σ = 2.7, nn = 50,
  p = 5; normalized Laplacian; the γs below); V is not used (the parameters are the paper's).
  U error is ``transduction_`` on U, T error is ``predict`` on T (out of sample). Printed next
  to the paper's mean (std) with "within 1 std" per cell.
* ``pcmac_s3vm`` — TSVM and DA through ``TransductiveSVC`` on PCMAC (λ = 1e-3, λ' = 1, r from
  the labeled points), transductive error on the 1896 unlabeled rows, next to the same problems
  solved directly (``ssl_opt.solve``). The paper's PCMAC numbers are not in our text of [001]
  (it stops before the experiments), so no ratio with them is formed.
* ``multiclass`` — 20 classes, 1,440 points (synthetic: 20 Gaussian clusters in 1,024
  dimensions, COIL20's sizes; 2 labels per class as COIL20's |L| = 40): LapRLSC 20-class time
  over one binary problem of the same size (target ≤ 1.5), LapSVC (Newton) 20-class time
  against the paper's 7.26 s for COIL20 [000 Table 3] (target ≤ 7.3 s).
* ``memory`` — peak memory of ``decision_function`` on 10,000 new points (tracemalloc) against
  one block of K(X_new, X_train) and the whole of it.

Run from the repository root::

    python benchmarks/bench_estimators.py
    python benchmarks/bench_estimators.py --only multiclass memory --splits 0 1
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
import warnings

import _source_tree  # noqa: F401  (the tree's ssl_opt, not an installed copy)
import numpy as np

from ssl_opt.datasets import load_g50c, load_pcmac, shared_data_dir
from ssl_opt.estimators import DegenerateProblemWarning, LapRLSC, LapSVC
from ssl_opt.estimators._kernels import block_rows

# (data set, method, paper U mean, std, paper T mean, std) from [000 Table 4]
PAPER = {
    ("G50C", "LapRLSC"): (6.03, 1.32, 6.54, 2.11),
    ("G50C", "LapSVM Dual (Original)"): (5.52, 1.15, 5.51, 1.65),
    ("G50C", "LapSVM Primal (Newton)"): (6.16, 1.48, 7.27, 2.87),
    ("PCMAC", "LapRLSC"): (9.67, 0.74, 9.34, 1.5),
    ("PCMAC", "LapSVM Dual (Original)"): (10.78, 1.83, 11.05, 2.94),
    ("PCMAC", "LapSVM Primal (Newton)"): (9.68, 0.77, 9.37, 1.51),
}

# [000 Table 9]: kernel width, neighbours, Laplacian degree, and (γ_A, γ_I) per method
SETTINGS = {
    "G50C": {"sigma": 17.5, "nn": 50, "p": 5, "sizes": (314, 50, 136),
             "gammas": {"LapRLSC": (1e-6, 1e-2), "LapSVM Dual (Original)": (1.0, 10.0),
                        "LapSVM Primal (Newton)": (1e-1, 10.0)}},
    "PCMAC": {"sigma": 2.7, "nn": 50, "p": 5, "sizes": (1358, 50, 488),
              "gammas": {"LapRLSC": (1e-6, 1e-2), "LapSVM Dual (Original)": (1e-6, 1e-4),
                         "LapSVM Primal (Newton)": (1e-6, 1.0)}},
}


def _estimator(method: str, gamma_A: float, gamma_I: float, s: dict):
    common = {"sigma": s["sigma"], "n_neighbors": s["nn"], "laplacian_power": s["p"],
              "normalized_laplacian": True}
    if method == "LapRLSC":
        return LapRLSC(gamma_A, gamma_I, **common)
    if method == "LapSVM Dual (Original)":
        return LapSVC(gamma_A, gamma_I, loss="hinge", **common)
    return LapSVC(gamma_A, gamma_I, solver="newton", **common)


def _protocol_split(data, sizes, seed):
    """Indices (L, U, T) in data's rows: the split's labeled rows, then U and T drawn from its
    unlabeled rows (V, drawn too, is left out)."""
    l = data.n_labeled  # noqa: E741
    rest = l + np.random.default_rng(seed).permutation(data.n - l)
    n_u, n_v, n_t = sizes
    n_t = min(n_t, rest.size - n_u - n_v)
    return np.arange(l), rest[:n_u], rest[n_u + n_v:n_u + n_v + n_t]


def table4(splits, path) -> None:
    print("\n## [000 Table 4] through the estimators (error %, mean (std) over splits)")
    loaders = {"G50C": load_g50c, "PCMAC": load_pcmac}
    rows = []
    for name, loader in loaders.items():
        s = SETTINGS[name]
        errors = {m: ([], [], []) for m in s["gammas"]}
        for split in splits:
            data = loader(split, path)
            L, U, T = _protocol_split(data, s["sizes"], seed=split)
            train = np.concatenate([L, U])
            X = data.X[train]
            labels = np.where(data.y_all > 0, "pos", "neg").astype(object)
            y = labels[train].copy()
            y[L.size:] = -1
            for method, (gA, gI) in s["gammas"].items():
                est = _estimator(method, gA, gI, s)
                start = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", DegenerateProblemWarning)
                    est.fit(X, y)
                seconds = time.perf_counter() - start
                err_u = 100 * np.mean(est.transduction_[L.size:] != labels[U])
                err_t = 100 * np.mean(est.predict(data.X[T]) != labels[T])
                errors[method][0].append(err_u)
                errors[method][1].append(err_t)
                errors[method][2].append(seconds)
        for method, (eu, et, secs) in errors.items():
            pu, su, pt, st = PAPER[(name, method)]
            mu, mt = np.mean(eu), np.mean(et)
            sdu = np.std(eu, ddof=1) if len(eu) > 1 else 0.0
            sdt = np.std(et, ddof=1) if len(et) > 1 else 0.0
            rows.append((name, method, f"{mu:.2f} ({sdu:.2f})", f"{pu} ({su})",
                         "yes" if abs(mu - pu) <= su else "NO",
                         f"{mt:.2f} ({sdt:.2f})", f"{pt} ({st})",
                         "yes" if abs(mt - pt) <= st else "NO", f"{np.mean(secs):.2f}"))
    head = ("set", "method", "U ours", "U paper", "within", "T ours", "T paper", "within",
            "fit s")
    _print(head, rows)


def pcmac_s3vm(splits, path) -> None:
    from ssl_opt.api import solve
    from ssl_opt.estimators import TransductiveSVC
    from ssl_opt.problems import DAS3VM, TSVM

    print("\n## PCMAC TSVM / DA through TransductiveSVC (transductive error %, 1896 rows)")
    rows = []
    for method, Problem in (("tsvm", TSVM), ("da", DAS3VM)):
        est_err, direct_err, est_t, direct_t = [], [], [], []
        for split in splits:
            data = load_pcmac(split, path)
            l = data.n_labeled  # noqa: E741
            perm = np.random.default_rng(split).permutation(data.n)  # any order works
            labels = np.where(data.y_all > 0, "mac", "win").astype(object)
            y = labels[perm].copy()
            y[perm >= l] = -1
            est = TransductiveSVC(method=method, lam=1e-3, lam_u=1.0)
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DegenerateProblemWarning)
                est.fit(data.X[perm], y)
            est_t.append(time.perf_counter() - start)
            unl = perm >= l
            est_err.append(100 * np.mean(est.transduction_[unl] != labels[perm][unl]))
            r = float(np.mean(data.y > 0))
            p = Problem(data.X, data.y, 1e-3, 1.0, r=r)
            start = time.perf_counter()
            sol = solve(p, solver=method)
            direct_t.append(time.perf_counter() - start)
            pred = np.sign(np.asarray(p.outputs(sol.x["w"]))[l:])
            direct_err.append(100 * np.mean(pred != data.y_all[l:]))
        sd = np.std(est_err, ddof=1) if len(splits) > 1 else 0.0
        rows.append((method, f"{np.mean(est_err):.2f} ({sd:.2f})", f"{np.mean(direct_err):.2f}",
                     f"{np.mean(est_t):.2f}", f"{np.mean(direct_t):.2f}"))
    _print(("method", "estimator err", "direct err", "estimator s", "direct s"), rows)


def _coil_like(n=1440, d=1024, c=20, per_class=2, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(c, d)) * 0.35
    labels = np.repeat(np.arange(c), n // c)
    X = centers[labels] + rng.normal(size=(n, d)) * 0.5
    y = -np.ones(n, dtype=np.int64)
    for k in range(c):
        y[rng.choice(np.flatnonzero(labels == k), per_class, replace=False)] = k
    return X, y, labels


def multiclass(repeat: int) -> None:
    print("\n## 20 classes, 1,440 points, d = 1,024 (COIL20's sizes; synthetic clusters)")
    X, y, labels = _coil_like()
    y_bin = np.where(y == -1, -1, (y == 0).astype(np.int64))

    def best(make, yy):
        times = []
        for _ in range(repeat):
            est = make()
            start = time.perf_counter()
            est.fit(X, yy)
            times.append(time.perf_counter() - start)
        return min(times), est

    kw = {"gamma_A": 1e-6, "gamma_I": 1e-2, "n_neighbors": 10}
    t_bin, _ = best(lambda: LapRLSC(**kw), y_bin)
    t_multi, est = best(lambda: LapRLSC(**kw), y)
    err = 100 * np.mean(est.transduction_[y == -1] != labels[y == -1])
    t_svm, svc = best(lambda: LapSVC(gamma_A=1e-6, gamma_I=1.0, solver="newton"), y)
    err_svm = 100 * np.mean(svc.transduction_[y == -1] != labels[y == -1])
    t_svm_bin, _ = best(lambda: LapSVC(gamma_A=1e-6, gamma_I=1.0, solver="newton"), y_bin)
    newton_steps = sum(s.iterations for s in svc.solution_)
    rows = [("LapRLSC", f"{t_bin:.3f}", f"{t_multi:.3f}", f"{t_multi / t_bin:.2f}",
             "<= 1.5x binary", "yes" if t_multi <= 1.5 * t_bin else "NO", f"{err:.1f}"),
            ("LapSVC (Newton)", f"{t_svm_bin:.3f}", f"{t_svm:.3f}", f"{t_svm / t_svm_bin:.2f}",
             "<= 7.3 s (paper COIL20)", "yes" if t_svm <= 7.3 else "NO", f"{err_svm:.1f}")]
    _print(("estimator", "binary s", "20-class s", "ratio", "target", "met", "U err %"), rows)
    print(f"(fit times include the kernel and graph; best of {repeat}; LapSVC took "
          f"{newton_steps} Newton steps over 20 classes)")


def memory() -> None:
    print("\n## decision_function on 10,000 new points: peak memory (tracemalloc)")
    rng = np.random.default_rng(0)
    rows = []
    for n_train, block in ((1440, None), (5000, None), (5000, 200)):
        X = rng.normal(size=(n_train, 20))
        y = -np.ones(n_train, dtype=np.int64)
        y[:20] = np.arange(20) % 2
        est = LapRLSC(block_size=block).fit(X, y)
        X_new = rng.normal(size=(10_000, 20))
        rows_per_block = block or block_rows(n_train)
        tracemalloc.start()
        est.decision_function(X_new)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        mib = 2**20
        one_block = min(rows_per_block, 10_000) * n_train * 8 / mib
        rows.append((n_train, rows_per_block, f"{peak / mib:.1f}", f"{one_block:.1f}",
                     f"{10_000 * n_train * 8 / mib:.1f}", f"{peak / mib / one_block:.2f}"))
    _print(("n_train", "block rows", "peak MiB", "one block MiB", "full K MiB",
            "peak / block"), rows)
    print("(peak / block includes the kernel's temporaries for that block: squared distances "
          "and the product; never more than one block is alive)")


def _print(head, rows) -> None:
    table = [tuple(map(str, head))] + [tuple(map(str, r)) for r in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    for k, r in enumerate(table):
        print("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)))
        if k == 0:
            print("  ".join("-" * w for w in widths))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", default=["table4", "pcmac_s3vm", "multiclass",
                                                       "memory"])
    parser.add_argument("--splits", nargs="*", type=int, default=list(range(10)))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data", default=None, help="folder with g50c.mat and text1.mat")
    args = parser.parse_args()
    path = args.data or shared_data_dir()
    for section in args.only:
        if section in ("table4", "pcmac_s3vm") and path is None:
            print(f"\n## {section}: skipped (no data folder; pass --data or set "
                  "SSL_OPT_DATA)")
            continue
        if section == "table4":
            table4(args.splits, path)
        elif section == "pcmac_s3vm":
            pcmac_s3vm(args.splits, path)
        elif section == "multiclass":
            multiclass(args.repeat)
        elif section == "memory":
            memory()


if __name__ == "__main__":
    main()
