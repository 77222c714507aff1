"""LASS benchmark: the generic solvers against CVXPY+Clarabel, OSQP and the paper's ADMM iteration.

The generic solvers are what ``ssl_opt.solve(problem)`` picks (``auto``; the chosen solver is
printed), plus ``admm-split`` and ``fista`` by name, each with its defaults.

Problem [002 eq. 1]: ``min λ tr(ZᵀLZ) − tr(GᵀZ)`` s.t. the rows of Z (N × K) lie on the simplex,
``L`` the Laplacian of a kNN graph (k = 10, binary weights, ``ssl_opt.builders.knn_graph``).
λ = ``--lam`` (default 0.1; the objective only depends on G/λ, and with G in {−1, 0, 1} and
node degrees of ~12, λ = 0.1 lets a tagged item pull its assignment by ~0.4 towards its
category, between the LP regime (λ → 0) and full smoothing).

Instances (``clusters``): N points drawn from K unit-variance Gaussian clusters (uniform cluster
sizes) in d = 2 (centers on a jittered square grid, spacing 4) or d = 10 (centers N(0, 1.75² I));
about 90 % of the kNN edges join items of the same cluster and the graph is connected (checked
and printed: ``problem.components[0]``). G holds the expert information: +1 for the item's true
category on ``--tagged`` (20 %) of the items and −1 ("not this category") for a random wrong
category on ``--negative`` (2 %) of the items; every other entry is 0. The intrinsic dimension
drives the fill of a sparse factorization of 2λL + ρI (2-D: small; 10-D: large).

The paper's ADMM [002 eq. 17] is ``plain_admm`` below (Y = U = 0 start, closed-form row-sum
multiplier, one SuperLU factor of 2λL + ρI for all K columns, fixed ρ), with the paper's
default ρ* = 2λ√(μ₂ μ_max) (``paper_rho``: μ₂ and μ_max the smallest non-zero and the largest
eigenvalue of L). KKT = the max of ``problem.kkt`` (relative residuals, from Z alone).

Parts (stdout is the report, progress goes to stderr; times are the wall time of one solve,
best of ``--repeat`` with the solvers interleaved):

(a) Anchor: the paper's Matlab ADMM (run in Octave) takes 782 iterations and 0.2 s for N = 300,
    K = 3 and reaches the CVXPY objective to 3e-9 relative. Our instance: two moons (200 points,
    noise 0.1) plus a third category, a Gaussian blob of 100 points (std 0.25) next to the lower
    moon, with the G recipe above. Rows: auto, admm-split, fista, and the paper's iteration
    (``plain_admm``, ρ*, the paper's stopping rule max|ΔZ| < ``--anchor-tol``): time,
    iterations, objective gap to Clarabel, KKT, next to the paper's numbers.
(b) Instances N = 1,000 / 2,000 (with the Clarabel reference), 10,000 and 100,000 (full mode;
    ``--no-huge`` skips it), K = 10 (and K = 20 at N = 10,000), 2-D and 10-D: graph build time
    (separately), then per solver (auto, admm-split, fista) time, iterations, status, max KKT
    residual, objective gap (to Clarabel, or to the lowest of the three objectives where there
    is no Clarabel run), fraction of exact zeros in Z (and of entries <= 1e-9), accuracy of
    argmax Z on untagged items, Clarabel time / solver time.
(c) Generic solvers at N = 2,000 and 10,000 (K = 10), next to the issue's measurements
    (Clarabel 16 s, OSQP called directly 63 s, a 25-line ADMM with one SuperLU factor 0.4 s at
    N = 2,000 and 5.4 s at N = 10,000): CVXPY+Clarabel (the reference backend), OSQP called
    directly on the vectorized QP (eps_abs = eps_rel = ``--osqp-eps``, polish on), the 25-line
    ADMM (``plain_admm`` at the fixed ρ*, stopped when max|Z − Y| and ρ max|ΔY|/max(1, max|G|)
    are both <= ``--admm25-tol``, default 1e-8 like the generic solvers' tol, or after
    ``--admm25-time-limit`` s; not at 10-D N = 10,000, where the factor fills in) and auto.
    ρ* is far from the best fixed ρ here: at N = 2,000 2-D the iteration took 4,770 iterations
    at ρ*, 488 at 10ρ*, 225 at 30ρ* (``--admm25-rho-factor``), and at N = 10,000 2-D it had not
    converged after 3,000 iterations at ρ*. In ``--quick`` mode the N = 600 and 3,000 instances
    stand in (no issue comparison).
(d) Figure (the paper's Figure 1 experiment): two moons (200 points, noise 0.1), K = 2, +1 for
    one point in each moon; relative error |f(Z_k) − f*|/|f*| of the objective at the iterate
    Z_k (f* = Clarabel) versus iteration for ρ = ρ*·{1/100 ... 100}, and iterations to 1e-6
    (and 1e-3) versus ρ, from ``plain_admm``. Saved to ``docs/figures/lass_rho.png``.

Run from the repository root::

    python benchmarks/bench_lass.py            # full, ~5-7 min on 2 cores (OSQP ~1 min)
    python benchmarks/bench_lass.py --quick    # ~30 s smoke test
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
import warnings
from pathlib import Path
from types import SimpleNamespace

import _source_tree  # noqa: F401  (the tree's ssl_opt, not an installed copy)
import numpy as np
import scipy.sparse as sp
from _linear_common import fmt, header_lines, log, print_table, verdict
from scipy.sparse.linalg import eigsh, lobpcg, splu

import ssl_opt
from ssl_opt.builders import knn_graph
from ssl_opt.datasets.synthetic import two_moons
from ssl_opt.problems import LASS

KNN = 10
KKT_TARGET = 1e-6
GAP_TARGET = 1e-6
# The generic solvers timed in parts (a)-(c): label -> solver name (None: ssl_opt.solve picks).
GENERIC = {"auto": None, "admm-split": "admm-split", "fista": "fista"}
# The paper's Matlab ADMM in Octave, N = 300, K = 3.
PAPER = {"iterations": 782, "time": 0.2, "gap": 3e-9}
# The issue's measurements on this QP (kNN k = 10, K = 10).
ISSUE = {"clarabel_2000": 16.0, "osqp_2000": 63.0, "admm25_2000": 0.4, "admm25_10000": 5.4,
         "admm25_10000_its": 253, "admm25_kkt": 2e-8}
SPEEDUP_TARGET = 20.0  # Clarabel time / auto's time at N = 2,000
TIME_10K = 5.0
TIME_100K = 120.0
DENSE_EIG_MAX = 400  # paper_rho: dense eigenvalues below this many items
FIGURE = Path(__file__).resolve().parent.parent / "docs" / "figures" / "lass_rho.png"


# ----------------------------------------------------------------------------- instances


def clusters(N: int, K: int, d: int, args, seed: int) -> dict:
    """K Gaussian clusters in d dimensions, kNN graph, G with tags on a fraction of items."""
    from scipy.sparse.csgraph import connected_components

    for draw in range(1, 21):  # re-draw (next seed) until the kNN graph is connected
        rng = np.random.default_rng([seed, draw])
        if d == 2:
            m = int(np.ceil(np.sqrt(K)))
            grid = np.array([(i, j) for i in range(m) for j in range(m)], dtype=float)[:K]
            centers = 4.0 * grid + rng.uniform(-0.5, 0.5, (K, 2))
        else:
            centers = 1.75 * rng.standard_normal((K, d))
        y = rng.integers(0, K, N)
        X = centers[y] + rng.standard_normal((N, d))
        t0 = time.perf_counter()
        W = knn_graph(X, n_neighbors=KNN)
        t_graph = time.perf_counter() - t0
        if connected_components(W, directed=False)[0] == 1:
            break
    G, tagged = tags(y, K, args.tagged, args.negative, rng)
    name = f"N={N:,} K={K} {d}-D"
    return dict(name=name, N=N, K=K, d=d, W=W, G=G, y=y, tagged=tagged, t_graph=t_graph,
                draws=draw)


def tags(y: np.ndarray, K: int, frac: float, neg: float, rng) -> tuple[np.ndarray, np.ndarray]:
    N = y.size
    G = np.zeros((N, K))
    tagged = rng.random(N) < frac
    G[tagged, y[tagged]] = 1.0
    bad = np.flatnonzero(rng.random(N) < neg)
    G[bad, (y[bad] + rng.integers(1, K, bad.size)) % K] = -1.0
    return G, tagged


def anchor_instance(args) -> dict:
    """Two moons (200) + a blob (100) as a third category: N = 300, K = 3."""
    data = two_moons(200, n_labeled=2, noise=0.1, seed=args.seed)
    rng = np.random.default_rng(args.seed)
    blob = np.array([2.6, 1.0]) + 0.25 * rng.standard_normal((100, 2))
    X = np.vstack([data.X, blob])
    y = np.concatenate([(data.y_all > 0).astype(int), np.full(100, 2)])
    t0 = time.perf_counter()
    W = knn_graph(X, n_neighbors=KNN)
    t_graph = time.perf_counter() - t0
    G, tagged = tags(y, 3, args.tagged, args.negative, rng)
    return dict(name="moons+blob N=300 K=3", N=300, K=3, d=2, W=W, G=G, y=y, tagged=tagged,
                t_graph=t_graph)


# ----------------------------------------------------------------------------- solvers


def kkt_max(problem, x) -> float:
    """Max of the relative KKT residuals of ``x`` (a Solution or ``{"Z": Z}``)."""
    return max(problem.kkt(x).values())


def timed(run):
    """``(result, wall time)`` of ``run()``; the warnings it raised go to ``result.warnings``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        result = run()
        wall = time.perf_counter() - t0
    notes = {f"{w.category.__name__} from {Path(w.filename).name}:{w.lineno}: "
             f"{' '.join(str(w.message).split())[:100]}" for w in caught}
    return result, wall, notes


def interleaved(runs: dict, repeat: int, budget: float) -> dict:
    """Call every ``runs[label]()`` once per round, ``repeat`` rounds; a solver stops
    repeating once its runs took ``budget`` seconds. Returns per label the first result, the
    best wall time, the number of runs and the warnings raised."""
    out = {label: SimpleNamespace(result=None, times=[], warnings=set()) for label in runs}
    for _ in range(max(1, repeat)):
        for label, run in runs.items():
            rec = out[label]
            if sum(rec.times) > budget:
                continue
            result, wall, notes = timed(run)
            rec.times.append(wall)
            rec.warnings |= notes
            if rec.result is None:
                rec.result = result
    for rec in out.values():
        rec.time, rec.runs, rec.warnings = min(rec.times), len(rec.times), sorted(rec.warnings)
    return out


def generic_runs(problem) -> dict:
    return {label: (lambda s=solver: ssl_opt.solve(problem, solver=s))
            for label, solver in GENERIC.items()}


def label_of(label: str, sol) -> str:
    return f"auto → {sol.solver}" if label == "auto" else label


def reference(problem, solver: str = "CLARABEL") -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sol, wall, _ = timed(lambda: ssl_opt.solve(problem, solver="cvxpy", cvxpy_solver=solver))
    return dict(sol=sol, time=wall, objective=sol.objective, kkt=kkt_max(problem, sol),
                solve_time=sol.info.get("solve_time"), status=sol.status)


def osqp_direct(problem, eps: float, time_limit: float) -> dict:
    """OSQP on vec(Z) (column-major): P = I_K ⊗ 2λL, A = [1ᵀ ⊗ I_N; I], polish on."""
    import osqp

    N, K = problem.N, problem.K
    t0 = time.perf_counter()
    P = sp.triu(sp.kron(sp.identity(K), 2.0 * problem.lam * problem.L), format="csc")
    q = -problem.G.T.ravel()
    A = sp.vstack([sp.kron(np.ones((1, K)), sp.identity(N)), sp.identity(N * K)], format="csc")
    lo = np.concatenate([np.ones(N), np.zeros(N * K)])
    hi = np.concatenate([np.ones(N), np.full(N * K, np.inf)])
    m = osqp.OSQP()
    m.setup(P=P, q=q, A=A, l=lo, u=hi, eps_abs=eps, eps_rel=eps, max_iter=1_000_000,
            polish=True, verbose=False, time_limit=time_limit)
    res = m.solve()
    wall = time.perf_counter() - t0
    x = {"Z": res.x.reshape(K, N).T}
    status = res.info.status if isinstance(res.info.status, str) else str(res.info.status)
    return dict(time=wall, iterations=int(res.info.iter), objective=problem.objective(x),
                kkt=kkt_max(problem, x), status=status, version=osqp.__version__)


def laplacian_extremes(L) -> tuple[float, float]:
    """``(μ₂, μ_max)``: smallest non-zero and largest eigenvalue of a connected graph's L.

    Dense ``eigvalsh`` below ``DENSE_EIG_MAX`` items; otherwise Lanczos (``eigsh``) for μ_max
    and LOBPCG for μ₂, orthogonal to L's null vector 1 and Jacobi-preconditioned (ρ* is a
    heuristic: a few digits are plenty)."""
    n = L.shape[0]
    if n < DENSE_EIG_MAX:
        mu = np.linalg.eigvalsh(L.toarray())
        return float(mu[1]), float(mu[-1])
    L = sp.csr_matrix(L)
    mu_max = float(eigsh(L, k=1, which="LA", tol=1e-4, return_eigenvectors=False)[0])
    X = np.random.default_rng(0).standard_normal((n, 2))
    M = sp.diags(1.0 / np.maximum(L.diagonal(), 1e-12))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # lobpcg: "not reaching the requested tolerance"
        mu = lobpcg(L, X, Y=np.ones((n, 1)), M=M, largest=False, tol=1e-4, maxiter=500)[0]
    return float(np.min(mu)), mu_max


def paper_rho(problem) -> float:
    """The paper's default penalty ρ* = 2λ√(μ₂ μ_max) (connected graph)."""
    mu2, mu_max = laplacian_extremes(problem.L)
    return 2.0 * problem.lam * float(np.sqrt(max(mu2, 1e-12 * mu_max) * mu_max))


def plain_admm(L, G, lam: float, rho: float, max_iter: int, tol: float | None = None,
               rule: str = "residuals", objective=None, stop_below: float | None = None,
               time_limit: float = np.inf):
    """The paper's iteration [002 eq. 17] with one SuperLU factor (the 25-line ADMM).

    Y = U = 0 start, fixed ρ. ``tol`` with ``rule="residuals"``: stop when max|Z − Y| and
    ρ max|ΔY|/max(1, max|G|) are both <= tol; ``rule="change"``: the paper's max|ΔZ| < tol.
    ``objective(Z)`` is recorded every iteration when given, and with ``stop_below`` the run
    ends once it has stayed below that value for 50 iterations; ``time_limit`` [s] ends it too.
    """
    t0 = time.perf_counter()
    n, K = G.shape
    A = sp.csc_matrix(2.0 * lam * L + rho * sp.identity(n))
    lu = splu(A, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
              options={"SymmetricMode": True})
    g_sum, scale = G.sum(axis=1), max(1.0, float(np.abs(G).max()))
    Z, Y, U = np.zeros((n, K)), np.zeros((n, K)), np.zeros((n, K))
    values, streak, status = [], 0, "max_iter"
    for it in range(1, max_iter + 1):  # noqa: B007 (it is returned)
        YU = Y - U
        nu = (rho / K) * YU.sum(axis=1) + (g_sum - rho) / K
        Z_prev, Y_prev = Z, Y
        Z = lu.solve(G + rho * YU - nu[:, None])
        Y = np.maximum(Z + U, 0.0)
        U += Z - Y
        if objective is not None:
            values.append(objective(Z))
            if stop_below is not None:
                streak = streak + 1 if values[-1] <= stop_below else 0
                if streak >= 50:
                    break
        if tol is not None:
            if rule == "change":
                done = it > 1 and float(np.abs(Z - Z_prev).max()) < tol
            else:
                done = (float(np.abs(Z - Y).max()) <= tol
                        and rho * float(np.abs(Y - Y_prev).max()) / scale <= tol)
            if done:
                status = "converged"
                break
        if time.perf_counter() - t0 > time_limit:
            status = "time_limit"
            break
    return SimpleNamespace(x={"Z": Z}, iterations=it, time=time.perf_counter() - t0,
                           values=np.array(values), status=status)


@contextlib.contextmanager
def blas_threads(n: int | None):
    if n is None:
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=n):
        yield


def blas_info() -> str:
    try:
        from threadpoolctl import threadpool_info

        pools: dict[str, list[str]] = {}
        for i in threadpool_info():
            pools.setdefault(i["internal_api"], []).append(str(i["num_threads"]))
        return (" ".join(f"{api} threads={','.join(n)}" for api, n in pools.items())
                or "no thread pool found")
    except ImportError:
        return "threadpoolctl not installed"


def zero_fractions(Z: np.ndarray) -> tuple[float, float]:
    return float(np.mean(Z == 0.0)), float(np.mean(Z <= 1e-9))


def rel_gap(f: float, f0: float) -> float:
    return (f - f0) / abs(f0)


def warm_up() -> None:
    t0 = time.perf_counter()
    args = argparse.Namespace(tagged=0.2, negative=0.02)
    inst = clusters(200, 3, 2, args, seed=12345)
    p = LASS(inst["W"], inst["G"], 0.1)
    for run in generic_runs(p).values():
        run()
    reference(p)
    log(f"warm-up done in {time.perf_counter() - t0:.2f} s")


# ----------------------------------------------------------------------------- part (a)


def run_anchor(args) -> list[tuple[str, bool | None]]:
    inst = anchor_instance(args)
    p = LASS(inst["W"], inst["G"], args.lam)
    log("(a) anchor N=300 K=3 ...")
    ref = reference(p)
    rho = paper_rho(p)
    paper_label = f"paper's iteration (ρ*, stop max|ΔZ|<{args.anchor_tol:g})"
    runs = generic_runs(p)
    runs[paper_label] = lambda: plain_admm(p.L, p.G, p.lam, rho, 20_000, tol=args.anchor_tol,
                                           rule="change")
    timing = interleaved(runs, args.repeat, 10.0)
    f_ref = ref["objective"]
    table = []
    for label, rec in timing.items():
        s = rec.result
        table.append([label_of(label, s), f"{rec.time:.3f}", str(rec.runs), f"{PAPER['time']:.2f}",
                      f"{rec.time / PAPER['time']:.2f}", str(s.iterations),
                      str(PAPER["iterations"]), f"{rel_gap(p.objective(s.x), f_ref):+.1e}",
                      f"{PAPER['gap']:.0e}", f"{kkt_max(p, s.x):.1e}", s.status])
    print(f"== (a) Anchor: the paper's Matlab ADMM (Octave), N = 300, K = 3: {PAPER['iterations']} "
          f"iterations, {PAPER['time']} s, objective to {PAPER['gap']:g} of CVXPY")
    print(f"   instance: two moons (200 points, noise 0.1, seed {args.seed}) + a Gaussian blob "
          f"(100 points, std 0.25) as a third category; kNN k = {KNN} (binary), components = "
          f"{p.components[0]}; {int(inst['tagged'].sum())} items tagged +1, "
          f"{int((inst['G'] < 0).sum())} entries −1; λ = {args.lam:g}; graph built in "
          f"{inst['t_graph']:.3f} s; ρ* = {rho:.4g}")
    print(f"   reference: CVXPY+Clarabel {ref['time']:.2f} s, objective {f_ref:.12g}, max KKT "
          f"{ref['kkt']:.1e}")
    print()
    print_table(["solver", "ours [s]", "runs", "paper [s]", "ours/paper", "iterations",
                 "paper its", "obj. gap", "paper gap", "KKT", "status"], table,
                align="<>>>>>>>>><")
    print()
    auto = timing["auto"]
    gap = abs(rel_gap(auto.result.objective, f_ref))
    return [
        (f"anchor N=300 K=3: auto ({auto.result.solver}) {auto.time:.3f} s <= paper's "
         f"{PAPER['time']} s (x{auto.time / PAPER['time']:.2f}; {auto.result.iterations} vs "
         f"{PAPER['iterations']} iterations)", auto.time <= PAPER["time"]),
        (f"anchor N=300 K=3: auto |objective gap| {gap:.1e} <= paper's {PAPER['gap']:g}",
         gap <= PAPER["gap"]),
    ]


# ----------------------------------------------------------------------------- part (b)


def instance_specs(args) -> list[tuple[int, int, int, bool]]:
    """(N, K, d, with_reference)."""
    if args.quick:
        return [(600, 10, 2, True), (600, 10, 10, True), (3000, 10, 2, False)]
    specs = [(1000, 10, 2, True), (1000, 10, 10, True), (2000, 10, 2, True),
             (2000, 10, 10, True), (10000, 10, 2, False), (10000, 10, 10, False),
             (10000, 20, 2, False)]
    if not args.no_huge:
        specs += [(100000, args.huge_k, d, False) for d in args.huge_dims]
    return specs


def generic_sizes(args) -> tuple[int, int]:
    """N of part (c)'s instances: the issue's (2,000 with Clarabel and OSQP; 10,000)."""
    return (600, 3000) if args.quick else (2000, 10000)


def run_instance(spec, args, idx: int) -> dict:
    N, K, d, with_ref = spec
    inst = clusters(N, K, d, args, seed=args.seed + 17 * idx + 1)
    p = LASS(inst["W"], inst["G"], args.lam)
    log(f"(b) {inst['name']}: graph {inst['t_graph']:.2f} s, {p.components[0]} component(s); "
        f"{', '.join(GENERIC)} ...")
    timing = interleaved(generic_runs(p), args.repeat, args.time_budget)
    for rec in timing.values():
        Z = rec.result.x["Z"]
        rec.kkt = kkt_max(p, rec.result)
        rec.exact0, rec.small0 = zero_fractions(Z)
        rec.acc = float(np.mean(Z.argmax(axis=1)[~inst["tagged"]]
                                == inst["y"][~inst["tagged"]]))
    res = dict(inst=inst, problem=p, timing=timing, ref=None, osqp=None)
    if with_ref and N <= args.ref_max_n:
        log(f"    Clarabel ({N * K:,} variables) ...")
        res["ref"] = reference(p)
        if N == generic_sizes(args)[0] and d in args.osqp_dims:
            log(f"    OSQP direct (eps {args.osqp_eps:g}) ...")
            res["osqp"] = osqp_direct(p, args.osqp_eps, args.osqp_time_limit)
    # Gap to Clarabel, else to the lowest objective of the generic solvers.
    res["f0"] = (res["ref"]["objective"] if res["ref"] is not None
                 else min(rec.result.objective for rec in timing.values()))
    for rec in timing.values():
        rec.gap = rel_gap(rec.result.objective, res["f0"])
    return res


def print_instances(results, args) -> list[tuple[str, bool | None]]:
    headers = ["instance", "comps", "nnz(W)/N", "graph [s]", "solver", "time [s]", "runs", "its",
               "status", "KKT", "obj. gap", "Z==0", "Z<=1e-9", "acc %", "Clar./solver"]
    table = []
    for r in results:
        p, ref, inst = r["problem"], r["ref"], r["inst"]
        first = [inst["name"], str(p.components[0]) + (f" (draw {inst['draws']})"
                                                        if inst["draws"] > 1 else ""),
                 f"{p.W.nnz / p.N:.1f}", f"{inst['t_graph']:.2f}"]
        for label, rec in r["timing"].items():
            s = rec.result
            table.append(first + [
                label_of(label, s), f"{rec.time:.3f}", str(rec.runs), str(s.iterations), s.status,
                f"{rec.kkt:.1e}", f"{rec.gap:+.1e}", f"{100 * rec.exact0:.1f}%",
                f"{100 * rec.small0:.1f}%", f"{100 * rec.acc:.1f}",
                "-" if ref is None else f"{ref['time'] / rec.time:.1f}"])
            first = [""] * 4
    print(f"== (b) Instances: K Gaussian clusters, kNN k = {KNN} (binary weights), "
          f"λ = {args.lam:g}, {100 * args.tagged:g} % of items tagged +1 (true category), "
          f"{100 * args.negative:g} % with one −1 (a wrong category)")
    print("   solvers with their defaults: auto = ssl_opt.solve(problem) (the solver it picked "
          "after the arrow), admm-split and fista by name; time = wall time of ssl_opt.solve, "
          f"best of --repeat {args.repeat} (interleaved) within {args.time_budget:g} s per "
          "solver")
    print("   KKT = max of problem.kkt (relative residuals); obj. gap = (f − f_Clarabel)"
          "/|f_Clarabel|, or where there is no Clarabel run (f − f_best)/|f_best| with f_best the "
          "lowest objective of the three solvers")
    print("   Z==0 / Z<=1e-9: fraction of exact zeros / of entries <= 1e-9 in the returned Z; "
          "acc = argmax Z = true cluster on untagged items; graph = knn_graph time (not in the "
          "solve time)")
    print()
    print_table(headers, table, align="<>>><>>><>>>>>>")
    for r in results:
        ref = r["ref"]
        if ref is not None:
            print(f"   {r['inst']['name']}: Clarabel total {ref['time']:.2f} s (its own solve "
                  f"{fmt(ref['solve_time'], '.2f')} s; CVXPY canonicalization the rest), objective "
                  f"{ref['objective']:.12g}, max KKT {ref['kkt']:.1e}, {ref['status']}")
        for label, rec in r["timing"].items():
            if rec.warnings:
                print(f"   {r['inst']['name']}: warnings during {label}: "
                      f"{'; '.join(rec.warnings)}")
    print()
    targets = []
    for r in results:
        name, timing = r["inst"]["name"], r["timing"]
        kkts = "/".join(f"{rec.kkt:.1e}" for rec in timing.values())
        worst = max(rec.kkt for rec in timing.values())
        targets.append((f"{name}: KKT {kkts} ({'/'.join(GENERIC)}) <= {KKT_TARGET:g}",
                        worst <= KKT_TARGET))
        gaps = [abs(rec.gap) for rec in timing.values()]
        to = "Clarabel" if r["ref"] is not None else "the best solver"
        targets.append((f"{name}: |objective gap to {to}| {'/'.join(f'{g:.1e}' for g in gaps)} "
                        f"<= {GAP_TARGET:g}", max(gaps) <= GAP_TARGET))
        if r["problem"].components[0] != 1:
            targets.append((f"{name}: graph connected ({r['problem'].components[0]} components)",
                            False))
        N, K, auto = r["inst"]["N"], r["inst"]["K"], timing["auto"]
        others = ", ".join(f"{label} {rec.time:.3g} s" for label, rec in timing.items()
                           if label != "auto")
        if N == 2000 and r["ref"] is not None:
            ratio = r["ref"]["time"] / auto.time
            targets.append((f"{name}: auto ({auto.result.solver}) {auto.time:.3g} s vs Clarabel "
                            f"{r['ref']['time']:.3g} s: x{ratio:.1f} faster (>= "
                            f"{SPEEDUP_TARGET:g}; {others})", ratio >= SPEEDUP_TARGET))
        if N == 10000 and K == 10:
            targets.append((f"{name}: auto ({auto.result.solver}) {auto.time:.2f} s < "
                            f"{TIME_10K:g} s ({others})", auto.time < TIME_10K))
        if N == 100000:
            targets.append((f"{name}: auto ({auto.result.solver}) {auto.time:.1f} s < "
                            f"{TIME_100K:g} s ({others}; graph {r['inst']['t_graph']:.1f} s not "
                            "included)", auto.time < TIME_100K))
    return targets


# ----------------------------------------------------------------------------- part (c)


def run_generic(results, args) -> list[tuple[str, bool | None]]:
    small, large = generic_sizes(args)
    chosen = [r for r in results if (r["inst"]["N"] == small and r["ref"] is not None)
              or (r["inst"]["N"] == large and r["inst"]["K"] == 10)]
    if not chosen:
        return []
    for r in chosen:
        p = r["problem"]
        r["admm25"] = None
        if r["inst"]["d"] != 2 and p.N > small:  # the factor fills in (part (b)'s 10-D)
            continue
        log(f"(c) {r['inst']['name']}: ρ* and the 25-line ADMM ...")
        rho = args.admm25_rho_factor * paper_rho(p)
        out = plain_admm(p.L, p.G, p.lam, rho, args.admm25_max_iter, tol=args.admm25_tol,
                         time_limit=args.admm25_time_limit)
        out.rho, out.objective, out.kkt = rho, p.objective(out.x), kkt_max(p, out.x)
        r["admm25"] = out
    print("== (c) Generic solvers vs the 25-line ADMM, next to the issue's measurements "
          f"(kNN k = {KNN}, K = 10)" + (" -- --quick: N = 600 / 3,000 stand in for the issue's "
                                        "2,000 / 10,000" if args.quick else ""))
    factor = "" if args.admm25_rho_factor == 1 else f"{args.admm25_rho_factor:g}·"
    print("   25-line ADMM = plain_admm() in this file: the paper's iteration, one SuperLU factor "
          f"(symmetric mode, MMD), fixed ρ = {factor}ρ* (ρ* = 2λ√(μ₂ μ_max)), stopped when "
          f"max|Z − Y| and ρ max|ΔY|/max(1, max|G|) are both <= {args.admm25_tol:g} "
          "(--admm25-tol; the generic solvers' default tol is 1e-8), after "
          f"{args.admm25_max_iter} iterations or {args.admm25_time_limit:g} s; its time "
          "includes the factorization, not ρ*'s eigenvalues")
    print(f"   OSQP direct = osqp {_osqp_version()} on vec(Z) with eps_abs = eps_rel = "
          f"{args.osqp_eps:g}, polish")
    print()
    headers = ["instance", "solver", "time [s]", "issue [s]", "ours/issue", "its", "KKT",
               "obj. gap", "status"]
    table = []
    targets = []
    for r in chosen:
        p, ref, f0 = r["problem"], r["ref"], r["f0"]
        issue_a = ISSUE["admm25_2000"] if p.N == small else ISSUE["admm25_10000"]
        rows = []
        if ref is not None:
            rows.append(["CVXPY+Clarabel", ref["time"], ISSUE["clarabel_2000"],
                         ref["sol"].iterations, ref["kkt"], "0 (ref)", ref["status"]])
        o = r.get("osqp")
        if o is not None:
            rows.append(["OSQP direct", o["time"], ISSUE["osqp_2000"], o["iterations"], o["kkt"],
                         f"{rel_gap(o['objective'], f0):+.1e}", o["status"]])
        a = r["admm25"]
        if a is not None:
            rows.append([f"25-line ADMM (ρ={a.rho:.3g})", a.time, issue_a, a.iterations, a.kkt,
                         f"{rel_gap(a.objective, f0):+.1e}", a.status])
        auto = r["timing"]["auto"]
        rows.append([label_of("auto", auto.result), auto.time, issue_a,
                     auto.result.iterations, auto.kkt, f"{auto.gap:+.1e}", auto.result.status])
        first = r["inst"]["name"]
        for label, t, issue, its, kkt, gap, status in rows:
            table.append([first, label, f"{t:.3f}", f"{issue:g}", f"{t / issue:.2f}", str(its),
                          f"{kkt:.1e}", gap, status])
            first = ""
        if not args.quick:
            targets.append((f"{r['inst']['name']}: auto ({auto.result.solver}) {auto.time:.3g} s "
                            f"<= the issue's 25-line ADMM {issue_a:g} s "
                            f"(x{auto.time / issue_a:.2f})", auto.time <= issue_a))
    print_table(headers, table, align="<<>>>>>><")
    print(f"   issue: Clarabel {ISSUE['clarabel_2000']:g} s and OSQP {ISSUE['osqp_2000']:g} s at "
          f"N = 2,000; the 25-line ADMM reached KKT {ISSUE['admm25_kkt']:g} in "
          f"{ISSUE['admm25_2000']} s (N = 2,000) and {ISSUE['admm25_10000']} s "
          f"({ISSUE['admm25_10000_its']} iterations, N = 10,000); 'issue [s]' for the ADMM and "
          "auto rows is the 25-line ADMM's time. Without Clarabel the gap is to the lowest "
          "objective of part (b)'s solvers.")
    print()
    return targets


def _osqp_version() -> str:
    try:
        import osqp

        return osqp.__version__
    except ImportError:
        return "(not installed)"


# ----------------------------------------------------------------------------- part (d)


def run_figure(args) -> list[tuple[str, bool | None]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = two_moons(200, n_labeled=2, noise=0.1, seed=args.seed)
    y = (data.y_all > 0).astype(int)
    W = knn_graph(data.X, n_neighbors=KNN)
    G = np.zeros((200, 2))
    G[0, y[0]] = 1.0
    G[1, y[1]] = 1.0  # rows 0 and 1 are one labeled point of each moon
    p = LASS(W, G, args.lam)
    log("(d) figure: reference and ρ sweep ...")
    ref = reference(p)
    f_star = ref["objective"]
    rho_star = paper_rho(p)
    auto = ssl_opt.solve(p)

    def rel_err(Z):
        return abs(p.objective({"Z": Z}) - f_star) / abs(f_star)

    curve_factors = [0.01, 0.1, 0.3, 1.0, 3.0, 10.0, 100.0]
    iters = args.fig_iters
    curves = {}
    for f in curve_factors:
        curves[f] = plain_admm(p.L, p.G, p.lam, f * rho_star, iters, objective=rel_err).values
    sweep_factors = np.logspace(-2, 2, 17 if not args.quick else 9)
    sweep = []
    for f in sweep_factors:
        v = plain_admm(p.L, p.G, p.lam, f * rho_star, iters, objective=rel_err,
                       stop_below=1e-6).values
        sweep.append((f, first_below(v, 1e-6), first_below(v, 1e-3), v.size))

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    colors = plt.cm.viridis(np.linspace(0, 0.95, len(curve_factors)))
    for c, f in zip(colors, curve_factors, strict=True):
        v = np.maximum(curves[f], 1e-16)
        ax1.semilogy(np.arange(1, v.size + 1), v, color=c, lw=1.4 if f == 1.0 else 1.0,
                     label=f"ρ = ρ*·{f:g}" + (" (paper's default)" if f == 1.0 else ""))
    ax1.axhline(1e-6, color="gray", ls=":", lw=0.8)
    ax1.set_xlabel("iteration")
    ax1.set_ylabel("|f(Z_k) − f*| / |f*|")
    ax1.set_title(f"two moons N=200, K=2, λ={args.lam:g}; ρ*={rho_star:.3g}")
    ax1.set_ylim(1e-13, 1e4)
    ax1.legend(fontsize=7, ncol=2, loc="upper right")
    xs = [s[0] for s in sweep]
    it6 = [s[1] if s[1] is not None else np.nan for s in sweep]
    it3 = [s[2] if s[2] is not None else np.nan for s in sweep]
    ax2.loglog(xs, it6, "o-", label="to 1e-6")
    ax2.loglog(xs, it3, "s--", label="to 1e-3")
    cens = [x for x, s in zip(xs, sweep, strict=True) if s[1] is None]
    if cens:
        ax2.loglog(cens, [iters] * len(cens), "v", color="C3", label=f"> {iters} (not reached)")
    ax2.axvline(1.0, color="gray", ls=":", lw=0.8)
    ax2.set_xlabel("ρ / ρ*")
    ax2.set_ylabel("iterations")
    ax2.set_title("iterations to relative objective error")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    FIGURE.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(FIGURE, dpi=120)
    plt.close(fig)

    best = min((s for s in sweep if s[1] is not None), key=lambda s: s[1], default=None)
    at_star = next(s for s in sweep if abs(np.log10(s[0])) < 1e-9)
    print("== (d) Figure: the paper's Figure 1 experiment (relative objective error vs iteration "
          "and ρ)")
    print(f"   two moons N = 200 (noise 0.1), K = 2, kNN k = {KNN}, λ = {args.lam:g}, +1 for one "
          f"point of each moon; components = {p.components[0]}; f* = Clarabel {f_star:.12g}")
    print("   curves: the paper's iteration (plain_admm in this file, Y = U = 0 start, fixed ρ); "
          f"ρ* = 2λ√(μ₂ μ_max) = {rho_star:.4g}; for comparison auto ({auto.solver}): "
          f"{auto.iterations} iterations, objective gap {rel_gap(auto.objective, f_star):+.1e}")
    print()
    table = [[f"{f:.3g}", f"{f * rho_star:.3g}", fmt(i3, "d"), fmt(i6, "d") if i6 else f">{iters}"]
             for f, i6, i3, _ in sweep]
    print_table(["ρ/ρ*", "ρ", "its to 1e-3", "its to 1e-6"], table, indent="   ")
    print(f"   saved {FIGURE.relative_to(FIGURE.parent.parent.parent)}")
    if best is not None:
        print(f"   fastest to 1e-6: ρ = ρ*·{best[0]:.3g} ({best[1]} iterations) vs "
              f"{at_star[1]} at ρ*")
    print()
    return []


def first_below(v: np.ndarray, level: float) -> int | None:
    """1-based index from which ``v`` stays <= level to the end of the run."""
    above = np.flatnonzero(v > level)
    if above.size == 0:
        return 1 if v.size else None
    k = int(above[-1]) + 1
    return k + 1 if k < v.size else None


# ----------------------------------------------------------------------------- main


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="small sizes, ~30 s (smoke test)")
    p.add_argument("--no-huge", action="store_true", help="skip N = 100,000")
    p.add_argument("--huge-dims", type=int, nargs="+", default=[2],
                   help="dimensions of the N = 100,000 instances (default 2)")
    p.add_argument("--huge-k", type=int, default=10, help="K of the N = 100,000 instances")
    p.add_argument("--osqp-dims", type=int, nargs="*", default=[2],
                   help="dimensions of the N = 2,000 instances also solved by OSQP (default 2; "
                   "the 10-D one takes ~50 s; none: skip OSQP)")
    p.add_argument("--osqp-eps", type=float, default=1e-7)
    p.add_argument("--osqp-time-limit", type=float, default=150.0)
    p.add_argument("--lam", type=float, default=0.1, help="λ of every instance")
    p.add_argument("--tagged", type=float, default=0.2, help="fraction of items tagged +1")
    p.add_argument("--negative", type=float, default=0.02,
                   help="fraction of items with one −1 entry")
    p.add_argument("--repeat", type=int, default=3,
                   help="timed runs of each solver, interleaved (best reported)")
    p.add_argument("--time-budget", type=float, default=5.0,
                   help="a solver stops repeating once its runs took this many seconds")
    p.add_argument("--ref-max-n", type=int, default=2000, help="largest N solved by Clarabel")
    p.add_argument("--anchor-tol", type=float, default=1e-6,
                   help="tol of the paper's max|ΔZ| rule in part (a)")
    p.add_argument("--admm25-tol", type=float, default=1e-8,
                   help="tol of the 25-line ADMM's residual rule in part (c)")
    p.add_argument("--admm25-max-iter", type=int, default=20000)
    p.add_argument("--admm25-time-limit", type=float, default=30.0,
                   help="seconds after which the 25-line ADMM stops (part (c))")
    p.add_argument("--admm25-rho-factor", type=float, default=1.0,
                   help="the 25-line ADMM's fixed ρ in units of ρ* (default 1: the paper's ρ*)")
    p.add_argument("--fig-iters", type=int, default=None,
                   help="iterations per ρ in the figure (default 4000; --quick 1500)")
    p.add_argument("--blas-threads", type=int, default=None,
                   help="limit BLAS threads for the whole run (threadpoolctl; default: no limit)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--skip", nargs="*", default=[], choices=["a", "b", "c", "d"],
                   help="parts to skip (c needs b)")
    args = p.parse_args(argv)
    if args.fig_iters is None:
        args.fig_iters = 1500 if args.quick else 4000
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    start = time.perf_counter()
    for line in header_lines("bench_lass: the generic solvers for LASS vs CVXPY+Clarabel, OSQP "
                             "and the paper's ADMM"):
        print(line)
    load = os.getloadavg()
    print(f"# mode={'quick' if args.quick else 'full'} repeat={args.repeat} (best time) "
          f"seed={args.seed} λ={args.lam:g}; {os.cpu_count()} CPUs, load average "
          f"{load[0]:.2f} at start; BLAS: {blas_info()}"
          + (f" (limited to {args.blas_threads} by --blas-threads)" if args.blas_threads else ""))
    print("# times are wall times of the solve only (instances and problem objects built "
          "beforehand); the machine is shared, so single timings can be noisy")
    print()
    targets: list[tuple[str, bool | None]] = []
    with blas_threads(args.blas_threads):
        log("warming up ...")
        warm_up()
        if "a" not in args.skip:
            targets += run_anchor(args)
        results = []
        if "b" not in args.skip:
            results = [run_instance(s, args, i) for i, s in enumerate(instance_specs(args))]
            targets += print_instances(results, args)
        if "c" not in args.skip:
            targets += run_generic(results, args)
        if "d" not in args.skip:
            targets += run_figure(args)
    if args.quick:
        print("   (--quick: no N = 2,000 / 10,000 / 100,000 instances, so their targets are not "
              "checked)")
    print("== Targets")
    for text, ok in targets:
        print(f"   {verdict(ok):<4}  {text}")
    print()
    print(f"# load average at the end {os.getloadavg()[0]:.2f}; total wall time "
          f"{time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
