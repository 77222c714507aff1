"""ERE benchmark [004]: the IRLS plugin against CVXPY+Clarabel, plain IRLS against the
accelerated defaults, the toy robustness example and multi-label F1 — side by side in one run.

Instances (``ssl_opt.problems.ere.examples.clusters_with_outliers``): c unit Gaussian clusters
in d dimensions (centers N(0, 2.5² I)), 2 labeled points per class for the small instances and
n/(20c) per class for the large ones, 5–10 % of the unlabeled points pushed far away
(outliers, 8× a standard normal draw around their center), binary kNN graph (union
symmetrization). Robust ERE [004 eq. 9].

Parts (stdout is the report, progress goes to stderr):

(a) Small kinked instances, n = 60–150: Clarabel (the registered ``cvxpy`` reference,
    tolerances 1e-10) against IRLS in four settings — plain [004 Alg. 2] (fixed δ = 1e-12σ²,
    no acceleration), δ-continuation only, Anderson only (the default), both. Columns: steps
    and seconds to the certified stop (IRLS's stopping test, ``plugins/ere/stopping.py``:
    subgradient ≤ 1e-7, kink slack ≤ 5e-7), steps to 1e-5 relative of the SOCP optimum (read
    off ``solution.history``), final relative gap, status.
(b) n = 1,000 (k = 10, ~8,000 edges, d = 10, c = 10) and 2,000: Clarabel time against IRLS
    (``linear_solver`` auto, factor, cg): time to the certified stop and time to 1e-5 of the SOCP
    optimum, relative gap.
(c) Large: n = 20,000, d = 50, c = 10, k = 10 (full mode; ``--quick``: n = 5,000). Clarabel is
    not run there: its time is *extrapolated* from (b) with a power law in the number of cone
    entries ``(edges + n)·c`` fitted on the measured sizes (say so in the report), unless
    ``--clarabel-cap S`` is given, which runs it with a wall-clock cap (a capped run gives a
    lower bound). IRLS time, steps, status, linear solver, and its objective's relative change
    over its last 50 steps.
(d) Toy example [004 Fig. 1] (``elongated_gaussians``: two elongated Gaussians, 10 outliers
    along the separating direction, 4 labeled points per class at the far ends of each
    cluster), α = 0.3, β = 0.01: angle between the true direction (0, 1) and the discriminant
    direction W[:, 0] − W[:, 1] of ERE (IRLS and Clarabel) and of LRL; figure
    ``docs/figures/ere_toy.png``.
(e) Multi-label: macro / micro F1 (``sklearn.metrics.f1_score``) of ERE and LRL on a synthetic
    multi-label set (overlapping clusters, a point also carries the class of its second-nearest
    center when that center is within 1.2× its own distance), transductive (scores F, or XW + b
    for LRL, thresholds τ_k = mean model score of the labeled positives) and out-of-sample
    (``Wᵀx + b`` on held-out points).
(f) Linear solvers: on the n = 1,000, c = 3 system, one refactorization of N in its fixed
    pattern (the factor path, QDLDL) against a new SuperLU factorization, one BLAS thread as
    IRLS runs; then ``linear_solver="auto"``'s pick and time against each path forced, at
    n = 1,000–4,000, d = 10–50, c = 3–10 (``--quick``: the two n = 1,000 rows).
(g) Graph-TV denoising on a 60 × 60 grid (``SumOfNorms`` with 7,080 scalar groups, most at
    their kink; ``--quick``: 20 × 20): IRLS with its kink-set polish against Clarabel, with
    each point's subgradient residual (IRLS's stopping test) and model stationarity
    (``problem.kkt``, the certificate).

Run from the repository root::

    python benchmarks/bench_ere.py            # full, ~4 min on 2 cores
    python benchmarks/bench_ere.py --quick    # ~1 min smoke test
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import _source_tree  # noqa: F401  (the tree's ssl_opt, not an installed copy)
import numpy as np
from _linear_common import fmt, header_lines, log, print_table
from sklearn.metrics import f1_score

import ssl_opt
from ssl_opt.plugins.ere.stopping import stopping_residuals
from ssl_opt.problems import ERE, LRL
from ssl_opt.problems.ere.examples import clusters_with_outliers, elongated_gaussians

FIGURE = Path(__file__).resolve().parent.parent / "docs" / "figures" / "ere_toy.png"
TARGET_GAP = 1e-5
SETTINGS = {
    "plain [004 Alg. 2]": {"anderson": 0, "continuation": False},
    "continuation": {"anderson": 0, "continuation": True},
    "Anderson (default)": {},
    "Anderson + continuation": {"continuation": True},
}


def first_time_below(sol, p_star: float, target: float = TARGET_GAP):
    """(steps, seconds) of the first iterate (or Richardson extrapolation of two stage ends,
    column ``extrapolated_objective``) within ``target`` relative of ``p_star``."""
    obj = sol.history["objective"]
    if "extrapolated_objective" in sol.history.columns:
        obj = np.fmin(obj, sol.history["extrapolated_objective"])
    gaps = (obj - p_star) / abs(p_star)
    hit = np.flatnonzero(gaps <= target)
    if hit.size == 0:
        return None, None
    return int(hit[0]) + 1, float(sol.history["time"][hit[0]])


def instance(n, d, c, k, alpha, beta, outliers, seed, l_per_class=2):
    data = clusters_with_outliers(n=n, d=d, c=c, l_per_class=l_per_class, n_neighbors=k,
                                  outliers=outliers, seed=seed)
    return ERE(data.X, data.A, data.Y, alpha, beta)


# ------------------------------------------------------------------------------ (a)


def part_a(args) -> None:
    print("\n## (a) small kinked instances: IRLS settings vs Clarabel\n")
    cases = [(60, 4, 3, 6, 1.0, 0.05, 0.1, 0), (80, 4, 3, 5, 0.3, 0.05, 0.1, 4),
             (100, 4, 3, 8, 0.3, 0.01, 0.1, 1), (150, 5, 4, 6, 1.0, 0.01, 0.1, 3)]
    if args.quick:
        cases = cases[:2]
    rows = []
    for n, d, c, k, alpha, beta, out, seed in cases:
        problem = instance(n, d, c, k, alpha, beta, out, seed)
        log(f"(a) n={n}")
        ref = ssl_opt.solve(problem, solver="cvxpy")
        p_star = ref.objective
        name = f"n={n} d={d} c={c} k={k} α={alpha} β={beta}"
        rows.append([name, "Clarabel", "-", fmt(ref.time, ".3f"), "-", "-", ref.status])
        for label, opts in SETTINGS.items():
            sol = ssl_opt.solve(problem, solver="irls", max_iter=20_000, **opts)
            steps, _ = first_time_below(sol, p_star)
            gap = (sol.objective - p_star) / abs(p_star)
            rows.append(["", label, sol.iterations, fmt(sol.time, ".3f"), fmt(steps),
                         fmt(gap, ".1e"), sol.status])
    print_table(["instance", "solver", "steps", "time_s", "steps_to_1e-5", "rel_gap",
                 "status"], rows)


# ------------------------------------------------------------------------------ (b), (c)


def medium(args) -> list[tuple[int, float, float]]:
    print("\n## (b) n = 1,000 / 2,000 (k = 10, d = 10, c = 10): Clarabel vs IRLS\n")
    rows, measured = [], []
    sizes = (1000,) if args.quick else (1000, 2000)
    for n in sizes:
        problem = instance(n, 10, 10, 10, 1.0, 0.05, 0.05, 0, l_per_class=max(2, n // 200))
        log(f"(b) n={n}: Clarabel")
        ref = ssl_opt.solve(problem, solver="cvxpy")
        entries = (problem.n_edges + problem.n) * problem.c
        measured.append((entries, ref.time))
        name = f"n={n:,} edges={problem.n_edges:,}"
        rows.append([name, "Clarabel", "-", fmt(ref.time, ".2f"), "-", "-", "-", ref.status])
        for ls in ("auto", "factor", "cg"):
            log(f"(b) n={n}: IRLS {ls}")
            sol = ssl_opt.solve(problem, solver="irls", linear_solver=ls)
            steps, t5 = first_time_below(sol, ref.objective)
            gap = (sol.objective - ref.objective) / abs(ref.objective)
            rows.append(["", f"irls {ls} ({sol.info['linear_solver']})", sol.iterations,
                         fmt(sol.time, ".2f"), fmt(t5, ".2f"), fmt(gap, ".1e"),
                         fmt(ref.time / sol.time, ".1f"), sol.status])
    print_table(["instance", "solver", "steps", "time_s", "time_to_1e-5", "rel_gap",
                 "clarabel/irls", "status"], rows)
    return measured


def extrapolate(measured, entries: float) -> float:
    if len(measured) == 1:
        e0, t0 = measured[0]
        return t0 * (entries / e0) ** 1.2  # exponent assumed (one size measured)
    e = np.log([m[0] for m in measured])
    t = np.log([m[1] for m in measured])
    slope, icpt = np.polyfit(e, t, 1)
    return float(np.exp(icpt + slope * np.log(entries)))


def part_c(args, measured) -> None:
    n = 5000 if args.quick else 20_000
    print(f"\n## (c) large: n = {n:,}, d = 50, c = 10, k = 10\n")
    t0 = time.perf_counter()
    problem = instance(n, 50, 10, 10, 1.0, 0.05, 0.05, 0, l_per_class=n // 200)
    t_graph = time.perf_counter() - t0
    log(f"(c) n={n}: IRLS")
    sol = ssl_opt.solve(problem, solver="irls", max_iter=args.max_iter)
    entries = (problem.n_edges + problem.n) * problem.c
    if args.clarabel_cap:
        log(f"(c) Clarabel with a {args.clarabel_cap:.0f} s cap")
        clarabel = run_capped_clarabel(problem, args.clarabel_cap)
        how = "measured" if clarabel < args.clarabel_cap else f"capped (> {clarabel:.0f} s)"
    else:
        clarabel = extrapolate(measured, entries)
        how = f"extrapolated from {len(measured)} measured size(s), power law in (edges+n)·c"
    rows = [[f"n={n:,} edges={problem.n_edges:,}", sol.info["linear_solver"], sol.iterations,
             fmt(sol.time, ".1f"), fmt(t_graph, ".1f"), sol.status,
             "yes" if sol.info["extrapolated"] else "no", fmt(clarabel, ".0f"),
             fmt(clarabel / sol.time, ".1f")]]
    print_table(["instance", "linear_solver", "steps", "irls_s", "graph_s", "status",
                 "extrapolated", "clarabel_s", "speedup"], rows)
    print(f"\nClarabel time: {how}. Targets: under 60 s for n = 20,000; >= 10x faster than "
          "Clarabel.")
    cert = sol.info.get("last_certificate")
    if cert:
        print("last certificate of the solver: " + ", ".join(f"{k}={v:.1e}"
                                                             for k, v in cert.items()))


def run_capped_clarabel(problem, cap: float) -> float:
    """Clarabel's wall time on ``problem`` in a child process killed after ``cap`` seconds."""
    import multiprocessing as mp

    def target(q):
        sol = ssl_opt.solve(problem, solver="cvxpy")
        q.put(sol.time)

    q = mp.Queue()
    proc = mp.Process(target=target, args=(q,))
    start = time.perf_counter()
    proc.start()
    proc.join(cap)
    if proc.is_alive():
        proc.terminate()
        proc.join()
        return cap
    return float(q.get()) if not q.empty() else time.perf_counter() - start


# ------------------------------------------------------------------------------ (d)


def angle(W, true) -> float:
    w = W[:, 0] - W[:, 1]
    nw = np.linalg.norm(w)
    if nw == 0:
        return float("nan")
    return float(np.degrees(np.arccos(min(1.0, abs(w @ true) / nw))))


def part_d(args) -> None:
    print("\n## (d) toy example [004 Fig. 1]: angle to the true direction (0, 1)\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data, true = elongated_gaussians(seed=0)
    ere = ERE(data.X, data.A, data.Y, 0.3, 0.01)
    lrl = LRL(data.X, data.A, data.Y, 0.3, 0.01)
    s_irls = ssl_opt.solve(ere, solver="irls")
    s_ref = ssl_opt.solve(ere, solver="cvxpy")
    s_lrl = ssl_opt.solve(lrl, solver="irls")
    rows = [["ERE (IRLS)", fmt(angle(s_irls.x["W"], true), ".3f")],
            ["ERE (Clarabel)", fmt(angle(s_ref.x["W"], true), ".3f")],
            ["LRL (closed form)", fmt(angle(s_lrl.x["W"], true), ".2f")]]
    seeds = (1, 2) if args.quick else (1, 2, 3, 4)
    for seed in seeds:
        d2, t2 = elongated_gaussians(seed=seed)
        a_e = angle(ssl_opt.solve(ERE(d2.X, d2.A, d2.Y, 0.3, 0.01), solver="irls").x["W"], t2)
        a_l = angle(ssl_opt.solve(LRL(d2.X, d2.A, d2.Y, 0.3, 0.01), solver="irls").x["W"], t2)
        rows.append([f"seed {seed}: ERE / LRL", f"{fmt(a_e, '.3f')} / {fmt(a_l, '.2f')}"])
    print_table(["method", "angle_deg"], rows)

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    X, y = data.X, data.Y_all[:, 1]
    ax = axes[0]
    ax.scatter(*X[(y == 0) & ~data.outlier].T, s=8, c="tab:blue", label="class 1")
    ax.scatter(*X[(y == 1) & ~data.outlier].T, s=8, c="tab:orange", label="class 2")
    ax.scatter(*X[data.outlier].T, s=20, marker="x", c="k", label="outliers")
    ax.scatter(*X[: ere.l].T, s=60, facecolors="none", edgecolors="r", label="labeled")
    for W, name, style in ((s_irls.x["W"], "ERE", "g-"), (s_lrl.x["W"], "LRL", "m--")):
        w = W[:, 0] - W[:, 1]
        w = 4.0 * w / np.linalg.norm(w)
        ax.plot([-w[0], w[0]], [-w[1], w[1]], style, lw=2,
                label=f"{name} direction ({angle(W, true):.1f}°)")
    ax.set_title("(a) projection direction W[:,0] − W[:,1]")
    ax.set_aspect("equal", adjustable="datalim")
    ax.legend(fontsize=7, loc="lower left")
    ax = axes[1]
    F = s_irls.x["F"]
    inl = ~data.outlier
    ax.scatter(F[inl, 0], F[inl, 1], s=10, c=np.where(y[inl] == 1, "tab:orange", "tab:blue"),
               label="inliers (class colour)")
    ax.scatter(F[data.outlier, 0], F[data.outlier, 1], s=20, marker="x", c="k",
               label="outliers")
    ax.legend(fontsize=7)
    ax.set_xlabel("F[:, 0]")
    ax.set_ylabel("F[:, 1]")
    ax.set_title("(b) ERE embedding F")
    fig.tight_layout()
    FIGURE.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(FIGURE, dpi=110)
    plt.close(fig)
    print(f"\nfigure: {FIGURE.relative_to(FIGURE.parent.parent.parent)}")


# ------------------------------------------------------------------------------ (e)


def part_e(args) -> None:
    print("\n## (e) multi-label: F1 of ERE vs LRL\n")
    n, n_test = (300, 200) if args.quick else (1000, 500)
    rows = []
    for seed in range(2 if args.quick else 5):
        data = clusters_with_outliers(n=n + n_test, d=8, c=5, l_per_class=4, n_neighbors=10,
                                      outliers=0.05, separation=1.8, multilabel=True,
                                      seed=seed)
        X, A, Y_all = data.X[:n], data.A[:n][:, :n], data.Y_all
        l = data.Y.shape[0]
        truth_u = Y_all[l:n].astype(int)
        truth_t = Y_all[n:].astype(int)
        X_test = data.X[n:]
        for name, problem in (("ERE", ERE(X, A, data.Y, 1.0, 0.05)),
                              ("LRL", LRL(X, A, data.Y, 1.0, 0.05))):
            sol = ssl_opt.solve(problem, solver="irls")
            pred_u = problem.predict(sol.x, multilabel=True)[l:]
            pred_t = problem.predict(sol.x, X_new=X_test, multilabel=True)
            rows.append([seed, name,
                         fmt(f1_score(truth_u, pred_u, average="macro", zero_division=0), ".3f"),
                         fmt(f1_score(truth_u, pred_u, average="micro", zero_division=0), ".3f"),
                         fmt(f1_score(truth_t, pred_t, average="macro", zero_division=0), ".3f"),
                         fmt(f1_score(truth_t, pred_t, average="micro", zero_division=0), ".3f")])
    print_table(["seed", "method", "macro_F1_unlabeled", "micro_F1_unlabeled",
                 "macro_F1_test", "micro_F1_test"], rows)


# ------------------------------------------------------------------------------ (f)


def part_f(args) -> None:
    """The factor path's refactorization against a new SuperLU factorization of the same N,
    and ``linear_solver="auto"``'s pick against each path forced."""
    import scipy.sparse as sp
    from threadpoolctl import threadpool_limits

    from ssl_opt.numerics.factor import SPDFactor
    from ssl_opt.plugins.ere.weighted_ls import EREStep

    print("\n## (f) IRLS linear solvers: refactored LDLᵀ vs SuperLU; auto's pick\n")
    problem = instance(1000, 10, 3, 10, 1.0, 0.05, 0.05, 0, l_per_class=5)
    step = EREStep(problem, "factor")
    rng = np.random.default_rng(0)
    N, entries = step._assemble(rng.random(problem.n_edges) + 0.1, rng.random(problem.n) + 0.1)
    upper = step._upper(entries)
    with threadpool_limits(1):  # as IRLS runs its steps
        step._ldl.factor_upper(upper)
        t_ldl = min(_seconds(lambda: step._ldl.factor_upper(upper)) for _ in range(5))
        t_lu = min(_seconds(lambda: SPDFactor(sp.csc_matrix(N))) for _ in range(5))
    print(f"n = 1,000, c = 3: N is {N.shape[0]}×{N.shape[0]} with {N.nnz:,} non-zeros, "
          f"{step._ldl.fill:,} in L; LDLᵀ refactor {t_ldl * 1e3:.1f} ms, new SuperLU "
          f"factorization {t_lu * 1e3:.1f} ms\n")
    cases = [(1000, 10, 3), (1000, 10, 10), (2000, 10, 3), (2000, 10, 10), (4000, 10, 3),
             (3000, 50, 10)]
    if args.quick:
        cases = cases[:2]
    rows = []
    for n, d, c in cases:
        problem = instance(n, d, c, 10, 1.0, 0.05, 0.05, 0, l_per_class=max(2, n // 200))
        times, pick = {}, None
        for ls in ("auto", "factor", "cg"):
            log(f"(f) n={n} d={d} c={c}: {ls}")
            sol = ssl_opt.solve(problem, solver="irls", linear_solver=ls)
            times[ls] = sol.time
            pick = sol.info["linear_solver"] if ls == "auto" else pick
        rows.append([f"n={n:,} d={d} c={c}", f"{pick}, {times['auto']:.2f} s",
                     fmt(times["factor"], ".2f"), fmt(times["cg"], ".2f")])
    print_table(["instance", "auto picks", "factor_s", "cg_s"], rows)


def part_g(args) -> None:
    """Graph-TV denoising on an m×m grid, a sum of scalar norms: IRLS (kink-set polish) against
    Clarabel, with the subgradient residual of each point."""
    import scipy.sparse as sp

    from ssl_opt.problems import SumOfNorms

    m = 20 if args.quick else 60
    print(f"\n## (g) graph TV on a {m} × {m} grid (SumOfNorms, scalar groups)\n")
    rng = np.random.default_rng(0)
    idx = np.arange(m * m).reshape(m, m)
    edges = np.vstack([np.c_[idx[:, :-1].ravel(), idx[:, 1:].ravel()],
                       np.c_[idx[:-1].ravel(), idx[1:].ravel()]])
    e = len(edges)
    G = sp.csr_matrix((np.r_[np.ones(e), -np.ones(e)],
                       (np.r_[np.arange(e), np.arange(e)], np.r_[edges[:, 0], edges[:, 1]])),
                      shape=(e, m * m))
    y = (idx // (m // 3)).ravel() % 2 + 0.3 * rng.standard_normal(m * m)
    problem = SumOfNorms(sp.eye(m * m), -y, G, np.zeros(e), 1, np.full(e, 0.2))
    log("(g) Clarabel")
    ref = ssl_opt.solve(problem, solver="cvxpy")
    log("(g) IRLS")
    sol = ssl_opt.solve(problem, solver="irls")
    rows = [[name, s.status, s.iterations, fmt(s.time, ".2f"),
             fmt((s.objective - ref.objective) / abs(ref.objective), ".1e"),
             fmt(stopping_residuals(problem, s.x["x"])["subgradient"], ".1e"),
             fmt(problem.kkt(s)["stationarity"], ".1e"),
             "yes" if s.info.get("polished") else "-"]
            for name, s in (("Clarabel", ref), ("IRLS", sol))]
    print_table(["solver", "status", "iterations", "time_s", "gap to Clarabel",
                 "subgradient residual", "model stationarity", "polished"], rows)


def _seconds(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--clarabel-cap", type=float, default=0.0,
                        help="run Clarabel on the large instance with this wall-clock cap (s)")
    parser.add_argument("--max-iter", type=int, default=10_000)
    parser.add_argument("--parts", default="abcdefg")
    args = parser.parse_args()
    for line in header_lines("bench_ere.py" + (" --quick" if args.quick else "")):
        print(line)
    print(f"# {os.cpu_count()} cores; timings are wall-clock on this machine")
    start = time.perf_counter()
    measured = []
    if "a" in args.parts:
        part_a(args)
    if "b" in args.parts or "c" in args.parts:
        measured = medium(args)
    if "c" in args.parts:
        part_c(args, measured)
    if "d" in args.parts:
        part_d(args)
    if "e" in args.parts:
        part_e(args)
    if "f" in args.parts:
        part_f(args)
    if "g" in args.parts:
        part_g(args)
    print(f"\ntotal {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
