"""Design measurements quoted in the docs, in one reproducible run (~4 minutes).

1. MFN's inexact-Newton forcing term (0 vs 0.1) on synthetic text 100,000 x 20,000.
2. TSVM with S = 1 vs S = 10,000 on synthetic text 40,000 x 10,000 (400 labeled rows).
3. SuperLU fill and factor time of 2λL + ρI (``SPDFactor``) for 10-NN graphs of 2-D and
   10-D data.
6. MFN's step cap with its default forcing: Newton steps to the optimum, and where the former
   cap of 50 stopped, on PCMAC with every row labeled (split 0; skipped without the data
   folder) and on synthetic text 800 x 3,000 at λ = 1e-4; forcing 0 (exact steps) beside it.

Parts 4 and 5 (ADMM acceleration, ADMM's block-CG stopping rule) measured the options of the
LASS ADMM plugin, which was removed; the numbering is kept because the docs cite "part 6".

Usage: ``python benchmarks/ablations.py [--skip-slow]`` (``--skip-slow`` drops the ~2-minute
single-switch TSVM run).
"""

from __future__ import annotations

import argparse
import sys
import time

import _source_tree  # noqa: F401  (the tree's ssl_opt, not an installed copy)
import numpy as np
import scipy.sparse as sp

import ssl_opt
from ssl_opt.builders import knn_graph
from ssl_opt.builders.laplacian import laplacian
from ssl_opt.datasets.synthetic import two_moons
from ssl_opt.datasets.text_generator import synthetic_text
from ssl_opt.numerics.factor import SPDFactor
from ssl_opt.plugins.linear.mfn import mfn
from ssl_opt.problems import TSVM, LinearSVM


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def mfn_forcing() -> None:
    data = synthetic_text(100_000, 20_000, nnz_per_row=50, n_labeled=100_000, seed=0)
    problem = LinearSVM(data.X, data.y, 1e-3)
    print("\n== 1. MFN forcing, synthetic_text 100,000 x 20,000, 50 nnz/row, λ = 1e-3")
    for forcing in (0.0, 0.1):
        res, t = timed(lambda f=forcing: mfn(problem.design, problem.y, problem.cost,
                                            problem.lam, tol=1e-7, forcing=f))
        print(f"   forcing={forcing:<4} {t:6.2f} s  Newton {res.iterations:3d}  CGLS "
              f"{res.cg_iterations:5d}  objective {res.objective:.10f}  stationarity "
              f"{problem.kkt({'w': res.w})['stationarity']:.1e}")


def tsvm_switching() -> None:
    data = synthetic_text(40_000, 10_000, nnz_per_row=60, n_labeled=400, r=0.5, seed=0)
    print("\n== 2. TSVM S = 10,000 vs S = 1, synthetic_text 40,000 x 10,000, l = 400, "
          "λ = 1e-3, λ' = 1")
    for S in (10_000, 1):
        problem = TSVM(data.X, data.y, 1e-3, 1.0)
        sol, t = timed(lambda p=problem, s=S: ssl_opt.solve(p, solver="tsvm", S=s))
        print(f"   S={S:<6} {t:7.1f} s  MFN calls {sol.info['retrains']:5d}  switches "
              f"{sol.info['switches']:5d}  objective {sol.objective:.6f}")


def factor_fill() -> None:
    print("\n== 3. SuperLU (symmetric mode, MMD on A + Aᵀ) of 2L + 0.1 I, 10-NN graphs")
    rng = np.random.default_rng(0)
    for n, dim in ((10_000, 2), (10_000, 10), (100_000, 2)):
        X = two_moons(n=n, n_labeled=2, noise=0.1, seed=0).X if dim == 2 else \
            rng.normal(size=(n, dim))
        L = laplacian(knn_graph(X, n_neighbors=10))
        factor, t = timed(lambda lap=L, m=n: SPDFactor(sp.csc_matrix(2.0 * lap
                                                                     + 0.1 * sp.identity(m))))
        print(f"   N={n:<7} {dim:2d}-D  factor {t:6.2f} s  entries {factor.fill / 1e6:5.2f}M")


def mfn_defaults() -> None:
    from ssl_opt.datasets import load_pcmac, shared_data_dir

    print("\n== 6. MFN step cap (defaults: forcing 0.1, max_iter 300; former cap 50)")
    instances = []
    folder = shared_data_dir()
    if folder is not None and (folder / "text1.mat").exists():
        pcmac = load_pcmac(0, path=folder)
        instances.append(("PCMAC, all labeled, λ = 1e-3", LinearSVM(pcmac.X, pcmac.y_all, 1e-3)))
    text = synthetic_text(800, 3000, nnz_per_row=55, n_labeled=800, seed=0)
    instances.append(("text 800 x 3000, λ = 1e-4", LinearSVM(text.X, text.y_all, 1e-4)))
    for name, problem in instances:
        ref = ssl_opt.solve(problem, backend="reference").objective
        for label, options in (("defaults", {}), ("max_iter=50", {"max_iter": 50}),
                               ("forcing=0", {"forcing": 0.0})):
            sol, t = timed(lambda p=problem, o=options: ssl_opt.solve(p, solver="mfn", **o))
            print(f"   {name:<30} {label:<12} {sol.status:<15} Newton {sol.iterations:3d}  "
                  f"{t:6.3f} s  gap {(sol.objective - ref) / abs(ref):.1e}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--skip-slow", action="store_true", help="skip the S = 1 TSVM run")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    ssl_opt.solve(LinearSVM(np.eye(3), [1.0, -1.0, 1.0], 1.0), solver="mfn")  # load plugins
    mfn_forcing()
    if not args.skip_slow:
        tsvm_switching()
    factor_fill()
    mfn_defaults()
    print(f"\n# total {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
