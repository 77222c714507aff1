"""Dask benchmark (docs/scaling.md): the linear family over a design matrix row-partitioned
across the workers of a ``distributed`` cluster (ssl_opt.operators.DaskDesign) against the same
solvers in memory, side by side in one run.

A synthetic text-like CSR matrix (Zipf word frequencies, ~``nnz`` distinct words per row,
log-tf × rank-idf weights, unit rows) is generated chunk by chunk — on the workers for the Dask
runs (``dask.array.from_delayed``), in this process for the in-memory run, the same chunks from
the same seeds — with labels ``sign(X w* − median + noise)`` from a planted ``w*``.

(a) MFN (every row labeled) in memory, on a 1-worker and a 2-worker LocalCluster (one thread,
    one process each), each with the fused CGLS (``DaskDesign(fused=True)``, the default: one
    synchronization and only (d+1)-vectors per iteration) and the unfused one (``X̃p`` and
    ``X̃ᵀz`` as two products, n-vectors through the client): the objective difference (target
    1e-10 relative), time (best of ``--repeat``), Newton steps, CGLS iterations, time per CGLS
    iteration and its overhead against in memory, synchronizations and bytes through the client.
(b) TSVM (``--labeled`` rows labeled) the same, one run each.
(c) A scaling model of a run over W workers, ``T(W) = T_client + κ·R/W + S·L + S_r·⌈log₂W⌉·h
    + bytes(W)/BW + tasks(W)·s``: client-side time, product compute (``κ`` seconds per row
    touched, measured inside tasks on a worker; ``R`` rows touched), ``S`` synchronizations
    of latency ``L``, a tree level ``h`` per reduction done on the workers, bytes through the
    client and the scheduler's cost ``s`` per task. Measured here: κ, h, s, loopback bandwidth;
    ``L`` is fitted from each 1-worker run, then the 2-worker run is *predicted* and compared
    with its measurement; then 10–100 workers and one CGLS iteration on a ~30 GiB matrix are
    predicted for an assumed network, fused and unfused.
(d) ``--out-of-core``: a pass over a larger matrix spilled by the workers to disk, measured,
    and extrapolated to a ~30 GiB text matrix.

Run from the repository root::

    python benchmarks/bench_dask.py                  # 100,000 x 20,000 (~10 minutes here)
    python benchmarks/bench_dask.py --quick          # 20,000 x 5,000 (a minute or two)
    python benchmarks/bench_dask.py --out-of-core    # adds (d) (several minutes more)
"""

from __future__ import annotations

import argparse
import math
import shutil
import sys
import tempfile
import time
import warnings

import _source_tree  # noqa: F401  (the tree's ssl_opt, not an installed copy)
import numpy as np
import scipy.sparse as sp

import ssl_opt
from ssl_opt.numerics.design import LinearDesign
from ssl_opt.operators.distributed import CLIENT_SUM_BYTES
from ssl_opt.problems import TSVM, LinearSVM

SEED = 0
#: CSR bytes per stored entry (float64 value + int32 column index).
CSR_BYTES_PER_NNZ = 12
#: Scheduler seconds per task on a dedicated node (dask's best-practices page: "somewhere
#: between 200us and 1ms" per task; the lower bound, an assumption).
SCHEDULER_TASK = 200e-6


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------ data
def text_chunk(index: int, rows: int, d: int, nnz: int, seed: int = SEED) -> sp.csr_matrix:
    """Rows ``index·rows …`` of the text-like matrix: ``nnz`` word draws per row from Zipf
    frequencies ``∝ 1/(rank + 2.7)`` (duplicates merged), weights ``log(1 + tf)·(1 + idf)``
    with ``idf = log(d / (rank + 1))``, rows scaled to unit norm. Reproducible per chunk."""
    rank_of_word = np.random.default_rng(seed).permutation(d)
    word_of_rank = np.argsort(rank_of_word)
    p = 1.0 / (np.arange(d) + 2.7)
    cdf = np.cumsum(p) / p.sum()
    rng = np.random.default_rng([seed, index])
    ranks = np.minimum(np.searchsorted(cdf, rng.random(rows * nnz)), d - 1)
    X = sp.csr_matrix((np.ones(rows * nnz), (np.repeat(np.arange(rows), nnz),
                                             word_of_rank[ranks])), shape=(rows, d))
    X.sum_duplicates()
    idf = np.log(d / (1.0 + rank_of_word))
    X.data = np.log1p(X.data) * (1.0 + idf[X.indices])
    norms = np.sqrt(np.bincount(np.repeat(np.arange(rows), np.diff(X.indptr)),
                                weights=X.data**2, minlength=rows))
    X.data /= np.repeat(np.maximum(norms, 1e-12), np.diff(X.indptr))
    return X


def chunk_rows(n: int, rows: int) -> list[int]:
    return [min(rows, n - a) for a in range(0, n, rows)]


def in_memory_matrix(n, d, nnz, rows) -> sp.csr_matrix:
    return sp.vstack([text_chunk(i, r, d, nnz) for i, r in enumerate(chunk_rows(n, rows))],
                     format="csr")


def dask_matrix(n, d, nnz, rows):
    """The same matrix as a dask array whose chunks are generated on the workers."""
    import dask
    import dask.array as da

    parts = [da.from_delayed(dask.delayed(text_chunk)(i, r, d, nnz), shape=(r, d),
                             dtype=np.float64, meta=sp.csr_matrix((0, d)))
             for i, r in enumerate(chunk_rows(n, rows))]
    return da.concatenate(parts, axis=0)


def planted_labels(outputs: np.ndarray, noise: float = 0.1) -> np.ndarray:
    """``sign(o − median(o) + noise·std(o)·ε)`` for the outputs ``o = X w*``."""
    eps = np.random.default_rng(SEED + 2).standard_normal(outputs.size)
    return np.where(outputs - np.median(outputs) + noise * outputs.std() * eps >= 0, 1.0, -1.0)


def planted_w(d: int) -> np.ndarray:
    return np.random.default_rng(SEED + 1).standard_normal(d)


# ------------------------------------------------------------------------- measurements
def worker_seconds_per_row(block, repeat: int = 5) -> tuple[float, int]:
    """Runs on a worker: seconds of one ``X_b w`` plus one ``X_bᵀ v`` per row (best of
    ``repeat``), and the block's rows."""
    rng = np.random.default_rng(0)
    w, v = rng.standard_normal(block.shape[1]), rng.standard_normal(block.shape[0])
    best = math.inf
    for _ in range(repeat):
        start = time.perf_counter()
        block @ w
        block.T @ v
        best = min(best, time.perf_counter() - start)
    return best / (2 * block.shape[0]), block.shape[0]


def noop(*args):
    return None


def big_array(nbytes: int) -> np.ndarray:
    return np.ones(nbytes // 8)


def median_seconds(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def cluster_constants(client, design) -> dict:
    """κ per worker, the latency of one synchronization (ping), one more dependent hop (h),
    the scheduler's cost per task (s) and the loopback bandwidth."""
    kappa = client.gather([client.submit(worker_seconds_per_row, b, pure=False)
                           for b in design._blocks])
    ping = median_seconds(lambda: client.submit(noop, pure=False).result(), 60)
    chain = median_seconds(
        lambda: client.submit(noop, client.submit(noop, pure=False), pure=False).result(), 60)
    start = time.perf_counter()
    futures = [client.submit(noop, k, pure=False) for k in range(2000)]
    submit = (time.perf_counter() - start) / 2000
    client.gather(futures)
    per_task = (time.perf_counter() - start) / 2000
    size = 64 * 2**20
    future = client.submit(big_array, size, pure=False)
    future.result()
    bandwidth = size / min(median_seconds(lambda: client.gather(future), 1) for _ in range(3))
    return {"kappa": [k for k, _ in kappa], "ping": ping, "hop": max(0.0, chain - ping),
            "task": per_task, "submit": submit, "bandwidth": bandwidth}


def memory_seconds_per_row(X, repeat: int = 5) -> float:
    return worker_seconds_per_row(X, repeat)[0]


def product_pair_seconds(design, repeat: int = 5) -> float:
    """Best-of time of one matvec + one rmatvec on the whole design."""
    rng = np.random.default_rng(3)
    w, v = rng.standard_normal(design.dim), rng.standard_normal(design.n)
    return min(median_seconds(lambda: (design.matvec(w), design.rmatvec(v)), 1)
               for _ in range(repeat))


def fused_step_seconds(design, repeat: int = 5) -> float:
    """Best-of time of one fused CGLS step (``X̃p``, ``qᵀCq``, ``X̃ᵀCq`` in one task per block)
    over all rows, ``C = 1``."""
    rows = design._send_rows(np.ones(design.n), np.ones(design.n))
    p = np.random.default_rng(3).standard_normal(design.dim)
    return min(median_seconds(lambda: design._step(rows, p), 1) for _ in range(repeat))


def client_newton_seconds(n: int, repeat: int = 3) -> float:
    """The client's O(n) work in one MFN Newton step besides the products (plugins/linear/
    mfn.py: active set, merged costs, the pieces of o, C, b sent, the same-piece test, the
    exact line search, the outputs' update and the objective), all rows active-ish (best of)."""
    from ssl_opt.numerics.line_search import weighted_squared_hinge_step
    from ssl_opt.plugins.linear.mfn import _merge_active, _objective

    rng = np.random.default_rng(5)
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    c, o, o_bar = np.ones(n), rng.standard_normal(n), rng.standard_normal(n)

    def step():
        active = (y * o < 1.0) & (c > 0)
        rows, C, b = _merge_active(n, None, active, y, c)
        o[rows].copy(), C.copy(), b.copy()  # the slices split by block and sent
        m_bar = y * o_bar
        bool(np.all(m_bar[active] <= 1.0) and np.all(m_bar[~active & (c > 0)] >= 1.0))
        delta = weighted_squared_hinge_step(1.0 - y * o, y * (o_bar - o), c, 0.0, 1.0)
        _objective(0.1, np.zeros(3), y, c, o + delta * (o_bar - o))

    return min(median_seconds(step, 1) for _ in range(repeat))


def client_step_seconds(dim: int, pieces: int, repeat: int = 5) -> float:
    """The client's work in one fused CGLS iteration with ``dim`` weights: add ``pieces``
    partial sums of ``dim + 1`` floats, then the updates of ``β``, ``r``, ``p`` (best of)."""
    rng = np.random.default_rng(4)
    parts = [rng.standard_normal(dim + 1) for _ in range(pieces)]
    beta, r, p = (rng.standard_normal(dim) for _ in range(3))

    def step():
        total = parts[0].copy()
        for part in parts[1:]:
            total += part
        u, s = total[:-1], total[-1]
        gamma = 1.0 / (0.1 * float(p @ p) + abs(s) + 1.0)
        np.add(beta, gamma * p, out=beta)
        np.subtract(r, gamma * (u + 0.1 * p), out=r)
        np.multiply(p, 0.5 * float(r @ r) / float(r @ r), out=p)
        np.add(p, r, out=p)
        np.multiply(p, 1e-3, out=p)  # keep the numbers bounded over the repeats

    return min(median_seconds(step, 1) for _ in range(repeat))


# ------------------------------------------------------------------------------- solves
def run(problem_factory, solver, options, repeat: int):
    """Best-of-``repeat`` solve; the traffic of the first run (None in memory)."""
    best, first, traffic = math.inf, None, None
    for k in range(repeat):
        problem = problem_factory()
        design = problem.design
        if hasattr(design, "traffic"):
            design.traffic.reset()
        start = time.perf_counter()
        sol = ssl_opt.solve(problem, solver=solver, **options)
        best = min(best, time.perf_counter() - start)
        if k == 0:
            first = sol
            traffic = design.traffic.snapshot() if hasattr(design, "traffic") else None
    return first, best, traffic


def summarize(name, sol, seconds, traffic, memory) -> dict:
    cg = int(sol.info.get("cg_iterations", 0))
    row = {"run": name, "seconds": seconds, "objective": sol.objective, "cg": cg,
           "steps": sol.iterations, "per_cg": seconds / max(cg, 1), "traffic": traffic,
           "info": sol.info}
    row["diff"] = (abs(sol.objective - memory["objective"]) / abs(memory["objective"])
                   if memory else 0.0)
    row["overhead"] = row["per_cg"] - memory["per_cg"] if memory else 0.0
    return row


def print_solve_table(rows, extra=()) -> None:
    head = ("| run | seconds | objective | rel. difference | " + " | ".join(h for h, _ in extra)
            + (" | " if extra else "") + "CGLS iterations | ms per CGLS iteration | overhead "
            "(ms per CGLS it.) | synchronizations | per CGLS it. | MiB through the client |")
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for r in rows:
        t = r["traffic"]
        syncs = f"{t['round_trips']:,}" if t else "—"
        per_it = f"{t['round_trips'] / max(r['cg'], 1):.2f}" if t else "—"
        mib = (f"{(t['bytes_to_workers'] + t['bytes_from_workers']) / 2**20:,.0f}"
               if t else "—")
        cells = [r["run"], f"{r['seconds']:.2f}", f"{r['objective']:.12g}",
                 f"{r['diff']:.1e}" if r["diff"] or t else "—",
                 *[fn(r) for _, fn in extra], f"{r['cg']:,}", f"{1e3 * r['per_cg']:.2f}",
                 f"{1e3 * r['overhead']:+.2f}" if t else "—", syncs, per_it, mib]
        print("| " + " | ".join(cells) + " |", flush=True)


# --------------------------------------------------------------------------- the model
def tree_sum(W: int, dim: int) -> bool:
    """Whether the fused CGLS adds its W partial sums on the workers (as DaskDesign does)."""
    return W > 1 and 8 * W * (dim + 1) > CLIENT_SUM_BYTES


class Model:
    """``T(W) = T_client + κ·R/W + S·L + S_r·⌈log₂W⌉·h + bytes(W)/BW + tasks(W)·s``.

    Counts from a 1-worker run's traffic (one block per worker): R rows touched, S
    synchronizations, M matvecs (``w`` goes to every worker, ``n`` floats back), X̃ᵀv products
    (``v`` split, a tree: one d-vector back, ``2W − 1`` tasks) and F fused reductions (fused
    CGLS steps, starts and true residuals: ``dim`` floats to every worker, ``dim + 1`` back from
    each — or from the tree's root when their sum exceeds ``CLIENT_SUM_BYTES``). Bytes through
    the client ``8·(W·d·M + d·S_r) + 8·F·(W·dim + (dim + 1)·(W or 1)) + n-vectors``; S_r counts
    the reductions done by a tree; tasks ``W·(M + F + subsets)`` plus the trees' ``W − 1``
    (a row subset, and a solve's ``C, b``, is one task per worker)."""

    def __init__(self, kappa, latency, hop, task, bandwidth):
        self.kappa, self.latency, self.hop, self.task, self.bandwidth = (
            kappa, latency, hop, task, bandwidth)

    @staticmethod
    def counts(traffic, d: int) -> dict:
        """The counts of a run on one worker (one block)."""
        m, r = traffic["matvecs"], traffic["rmatvecs"]
        f = traffic["cgls_steps"] + traffic["cgls_solves"] + traffic["residual_checks"]
        dim = d + 1
        vectors = (traffic["bytes_to_workers"] + traffic["bytes_from_workers"]
                   - 8 * d * (m + r) - 8 * f * (2 * dim + 1))
        return {"rows": traffic["rows"], "syncs": traffic["round_trips"], "matvecs": m,
                "rmatvecs": r, "fused": f, "subsets": traffic["tasks"] - m - r - f,
                "vector_bytes": vectors, "d": d}

    def parts(self, c, W: int, client_seconds: float) -> dict:
        levels = math.ceil(math.log2(W)) if W > 1 else 0
        dim = c["d"] + 1
        tree = tree_sum(W, dim)
        fused_bytes = 8 * c["fused"] * (W * dim + (dim + 1) * (1 if tree else W))
        nbytes = c["vector_bytes"] + 8 * c["d"] * (W * c["matvecs"] + c["rmatvecs"]) + fused_bytes
        tasks = (W - 1) * (c["matvecs"] + c["subsets"] + 2 * c["rmatvecs"]
                           + c["fused"] * (1 + tree))
        tree_reductions = c["rmatvecs"] + c["fused"] * tree
        return {"client": client_seconds, "compute": self.kappa * c["rows"] / W,
                "latency": c["syncs"] * self.latency + tree_reductions * levels * self.hop,
                "bytes": nbytes / self.bandwidth, "scheduler": tasks * self.task}

    def predict(self, c, W: int, client_seconds: float) -> float:
        return sum(self.parts(c, W, client_seconds).values())

    @classmethod
    def fit_latency(cls, measured: float, c, client_seconds, kappa, hop, task, bandwidth):
        """``L`` such that the model reproduces the 1-worker measurement."""
        base = cls(kappa, 0.0, hop, task, bandwidth).predict(c, 1, client_seconds)
        return max(0.0, (measured - base) / c["syncs"])


# ----------------------------------------------------------------------------- the parts
def start_cluster(workers: int, memory_limit="auto"):
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           dashboard_address=":0", memory_limit=memory_limit)
    return cluster, Client(cluster)


VARIANTS = ((True, "fused"), (False, "unfused"))


def dask_runs(args, X_mem, y_all, memory_rows, tsvm_memory) -> list[dict]:
    """For each cluster size, the same design solved with the fused CGLS and the unfused one
    (``design.fused`` switched between the runs: the problems' row subsets inherit it)."""
    from ssl_opt.operators import DaskDesign

    results = []
    for W in (1, 2):
        log(f"[{W} worker(s)] starting a LocalCluster, generating X on the workers ...")
        cluster, client = start_cluster(W)
        try:
            start = time.perf_counter()
            design = DaskDesign(dask_matrix(args.n, args.d, args.nnz, args.chunk_rows), True,
                                client=client)
            setup = time.perf_counter() - start
            y_dask = planted_labels(design.matvec(np.append(planted_w(args.d), 0.0)))
            same = bool(np.array_equal(y_dask, y_all))
            consts = cluster_constants(client, design)
            pair, step = product_pair_seconds(design), fused_step_seconds(design)
            result = {"W": W, "setup": setup, "labels_identical": same, "consts": consts,
                      "pair": pair, "step": step, "nnz": design.nnz, "mfn": {}, "tsvm": {}}
            name = f"Dask, {W} worker{'s' * (W > 1)}"
            for fused, variant in VARIANTS:
                design.fused = fused
                log(f"[{W}] setup {setup:.1f} s, labels identical: {same}; MFN {variant} ...")
                sol, t, traffic = run(lambda d=design: LinearSVM(d, y_all, args.lam), "mfn", {},
                                      args.repeat)
                result["mfn"][fused] = summarize(f"{name}, {variant}", sol, t, traffic,
                                                 memory_rows["mfn"])
                if not args.skip_tsvm:
                    log(f"[{W}] TSVM {variant} ...")
                    sol, t, traffic = run(
                        lambda d=design: TSVM(d, y_all[: args.labeled], args.tsvm_lam,
                                              args.lam_u), "tsvm", {}, 1)
                    result["tsvm"][fused] = summarize(f"{name}, {variant}", sol, t, traffic,
                                                      tsvm_memory)
            results.append(result)
            del design
        finally:
            client.close()
            cluster.close()
    return results


def memory_runs(args, X, y_all) -> dict:
    design = LinearDesign(X, True)
    kappa = memory_seconds_per_row(X)
    pair = product_pair_seconds(design)
    log("[memory] MFN ...")
    sol, t, _ = run(lambda: LinearSVM(X, y_all, args.lam), "mfn", {}, args.repeat)
    mfn = summarize("in memory", sol, t, None, None)
    tsvm = None
    if not args.skip_tsvm:
        log("[memory] TSVM ...")
        sol, t, _ = run(lambda: TSVM(X, y_all[: args.labeled], args.tsvm_lam, args.lam_u),
                        "tsvm", {}, 1)
        tsvm = summarize("in memory", sol, t, None, None)
    return {"kappa": kappa, "pair": pair, "mfn": mfn, "tsvm": tsvm}


def client_seconds(row, kappa_memory: float) -> float:
    """Time the in-memory run spent outside the products: its time minus κ·R (R from the
    Dask run's count of rows touched, the same solve)."""
    return max(0.0, row["seconds"] - kappa_memory * row["traffic"]["rows"])


def print_model(args, memory, dask) -> None:
    one, two = dask
    c1 = one["consts"]
    args._constants = c1
    kappa = float(np.mean(c1["kappa"]))
    print(f"\n## (c) Scaling model at {args.n:,} x {args.d:,}\n")
    print("| constant | value | how |")
    print("|---|---|---|")
    print(f"| κ, one worker | {1e9 * kappa:.1f} ns per row per product | X_b w and X_bᵀ v timed "
          "inside a task (1-worker cluster, the whole X) |")
    print(f"| κ, two workers | {', '.join(f'{1e9 * k:.1f}' for k in two['consts']['kappa'])} "
          "ns per row per product | the same, on each worker's half, concurrently |")
    print(f"| κ, in memory | {1e9 * memory['kappa']:.1f} ns per row per product | the same in "
          "this process |")
    print(f"| ping | {1e3 * c1['ping']:.2f} ms | submit + result of a no-op task (median) |")
    print(f"| h | {1e3 * c1['hop']:.2f} ms | one more dependent task (a tree level) |")
    print(f"| s | {1e6 * c1['task']:.0f} µs per task | 2,000 no-op tasks, wall time / 2,000 "
          "(client, scheduler and worker share the 2 cores: serial here) |")
    print(f"| s on a cluster | {1e6 * (c1['submit'] + SCHEDULER_TASK):.0f} µs per task | "
          f"client-side submit {1e6 * c1['submit']:.0f} µs (measured) + "
          f"{1e6 * SCHEDULER_TASK:.0f} µs at the scheduler (assumed, dask's documented "
          "lower bound); the workers' part runs in parallel |")
    print(f"| loopback bandwidth | {c1['bandwidth'] / 1e9:.2f} GB/s | gather of 64 MiB from a "
          "worker |")
    print()
    rows = []
    for key, label in (("mfn", "MFN"), ("tsvm", "TSVM")):
        if not one[key]:
            continue
        for fused, variant in VARIANTS:
            traffic = one[key][fused]["traffic"]
            counts = Model.counts(traffic, args.d)
            tc = client_seconds({**memory[key], "traffic": traffic}, memory["kappa"])
            L = Model.fit_latency(one[key][fused]["seconds"], counts, tc, kappa, c1["hop"],
                                  c1["task"], c1["bandwidth"])
            model = Model(kappa, L, c1["hop"], c1["task"], c1["bandwidth"])
            predicted = model.predict(counts, 2, tc)
            measured = two[key][fused]["seconds"]
            rows.append({"label": f"{label}, {variant}", "solve": key, "fused": fused,
                         "counts": counts, "tc": tc, "L": L, "model": model,
                         "predicted": predicted, "measured": measured})
    print("| solve | synchronizations | L fitted (ms) | client-side s | predicted 2 workers (s) "
          "| measured 2 workers (s) | error |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['label']} | {r['counts']['syncs']:,} | {1e3 * r['L']:.2f} | {r['tc']:.2f} "
              f"| {r['predicted']:.1f} | {r['measured']:.1f} | "
              f"{100 * (r['predicted'] - r['measured']) / r['measured']:+.0f} % |")
    print(f"\nPredicted on a cluster (assumed network: {args.bandwidth / 1e9:g} GB/s, "
          f"{1e3 * args.latency:g} ms per message; L = fitted + 4 messages, h = measured + 2 "
          "messages, s on a cluster; one block per worker, κ as measured here; the parts of the "
          "fused runs, the totals of both):\n")
    net_cols = [10, 20, 50, 100]
    print("| solve | part | " + " | ".join(f"W = {W}" for W in (1, 2, *net_cols)) + " |")
    print("|---|---|" + "---|" * (2 + len(net_cols)))
    for r in rows:
        net = cluster_model(args, r["model"], c1)
        parts = {W: net.parts(r["counts"], W, r["tc"]) for W in (1, 2, *net_cols)}
        if r["fused"]:
            for part in ("compute", "latency", "bytes", "scheduler", "client"):
                print(f"| {r['label']} | {part} (s) | "
                      + " | ".join(f"{parts[W][part]:.1f}" for W in parts) + " |")
        print(f"| {r['label']} | **total (s)** | "
              + " | ".join(f"**{sum(parts[W].values()):.1f}**" for W in parts) + " |")
    print_large_matrix(args, rows, net_cols, dask)


def cluster_model(args, model: Model, constants: dict) -> Model:
    """The fitted model with the assumed network's message latency and bandwidth added and
    the per-task cost of a dedicated scheduler."""
    return Model(model.kappa, model.latency + 4 * args.latency, model.hop + 2 * args.latency,
                 constants["submit"] + SCHEDULER_TASK, args.bandwidth)


def print_large_matrix(args, rows, net_cols, dask) -> None:
    """Per CGLS iteration on a ~30 GiB text matrix (all rows active: the worst case), with
    κ scaled to its non-zeros per row; the unfused client's time per row as in the MFN run,
    the fused client's d-vector work measured; then the fused run's cost per Newton step."""
    nnz_row = args._nnz_per_row
    n = int(30 * 2**30 / (CSR_BYTES_PER_NNZ * nnz_row))
    d = 252_000  # the vocabulary of the paper's largest text collection [001 §4]
    mfn = {r["fused"]: r for r in rows if r["solve"] == "mfn"}
    cols = (1, 2, *net_cols)
    print(f"\nOne CGLS iteration on a ~30 GiB text matrix ({n:,} x {d:,}, {nnz_row:.0f} "
          "non-zeros per row, every row active), same constants; unfused: the client's time "
          "per row as in the MFN run; fused: the client's (d + 1)-vector work, measured; the "
          f"fused partial sums are added on the workers (a tree) when W·(d + 2)·8 > "
          f"{CLIENT_SUM_BYTES / 2**20:g} MiB:\n")
    print("| CGLS | part | " + " | ".join(f"W = {W}" for W in cols) + " |")
    print("|---|---|" + "---|" * len(cols))
    for fused, variant in VARIANTS:
        r = mfn[fused]
        net = cluster_model(args, r["model"], args._constants)
        if fused:
            it = {"rows": 2 * n, "syncs": 1, "matvecs": 0, "rmatvecs": 0, "fused": 1,
                  "subsets": 0, "vector_bytes": 0, "d": d}
            parts = {W: net.parts(it, W, client_step_seconds(d, 1 if tree_sum(W, d + 1) else W))
                     for W in cols}
        else:
            it = {"rows": 2 * n, "syncs": 2, "matvecs": 1, "rmatvecs": 1, "fused": 0,
                  "subsets": 0, "vector_bytes": 8 * 2 * n, "d": d}
            client = r["tc"] / (r["counts"]["rows"] / 2) * n  # client s per row per pair
            parts = {W: net.parts(it, W, client) for W in cols}
        for part in ("compute", "latency", "bytes", "scheduler", "client"):
            print(f"| {variant} | {part} (s) | "
                  + " | ".join(f"{parts[W][part]:.3f}" for W in cols) + " |")
        print(f"| {variant} | **total (s)** | "
              + " | ".join(f"**{sum(parts[W].values()):.3f}**" for W in cols) + " |")
    # Once per Newton step (a CGLS solve) the fused MFN still moves n-vectors: the active rows'
    # indices, C, b and o to the workers, X̃w̄ back; and the client's O(n) work.
    t = dask[0]["mfn"][True]["traffic"]
    steps = max(1, t["cgls_solves"])
    per_row = 8 * (4 + 1)  # index + C + b + o to the workers, outputs back (all rows active)
    newton = client_newton_seconds(args.n) / args.n  # client s per row per Newton step
    print(f"\nPer Newton step (one CGLS solve) the fused MFN still moves ~{per_row} bytes per "
          f"row through the client (active-row indices, C, b, o0 out; X̃w̄ back): "
          f"{per_row * n / 2**30:.1f} GiB, {per_row * n / args.bandwidth:.1f} s at "
          f"{args.bandwidth / 1e9:g} GB/s, plus the client's O(n) work (active set, line "
          f"search, measured at n = {args.n:,}: {1e9 * newton:.0f} ns per row, "
          f"{newton * n:.1f} s), and 3 synchronizations; the MFN run of (a) averaged "
          f"{t['cgls_steps'] / steps:.0f} CGLS iterations per Newton step. The client holds "
          f"~12 n-vectors: {8 * n * 12 / 2**30:.1f} GiB.")


def out_of_core(args) -> None:
    """A pass over a matrix spilled to disk by workers with a small memory limit."""
    from ssl_opt.operators import DaskDesign

    n = args.ooc_rows
    print(f"\n## (d) Out of core: {n:,} x {args.d:,} with workers limited to "
          f"{args.ooc_memory / 2**30:g} GiB each (spilling to disk)\n")
    spill = tempfile.mkdtemp(prefix="ssl_opt_spill_")
    import dask

    with dask.config.set({"temporary-directory": spill}):
        cluster, client = start_cluster(2, memory_limit=args.ooc_memory)
        try:
            start = time.perf_counter()
            design = DaskDesign(dask_matrix(n, args.d, args.nnz, args.ooc_chunk), True,
                                client=client, merge=False)
            setup = time.perf_counter() - start
            gib = design.nnz * CSR_BYTES_PER_NNZ / 2**30
            pair = min(median_seconds(lambda: (design.matvec(np.ones(design.dim)),
                                               design.rmatvec(np.ones(design.n))), 1)
                       for _ in range(2))
            step = fused_step_seconds(design, repeat=2)
        finally:
            client.close()
            cluster.close()
            shutil.rmtree(spill, ignore_errors=True)
    rate = 2 * gib / pair
    full = 30.0
    print("| matrix (GiB of CSR) | generate + persist (s) | one CGLS iteration unfused: X p "
          "and Xᵀz (s) | GiB/s per pass | fused: X p and XᵀCq in one task per block (s) |")
    print("|---|---|---|---|---|")
    print(f"| {gib:.2f} | {setup:.0f} | {pair:.1f} | {rate:.2f} | {step:.1f} |")
    per_it = 2 * full / rate
    fused_it = step * full / gib
    cg = getattr(args, "_mfn_cg", None)
    print(f"\nExtrapolated to {full:g} GiB: {per_it:.0f} s per unfused CGLS iteration (two "
          f"passes over X), {fused_it:.0f} s fused (each block read back once), "
          f"{100 * per_it / 3600:.1f} h and {100 * fused_it / 3600:.1f} h per 100 CGLS "
          "iterations"
          + (f"; the MFN run of (a) needed {cg:,}" if cg else "")
          + ". The passes are bound by reading the spilled blocks back (disk or page cache, "
          "unpickling) on 2 cores; more workers divide them (more memory, fewer spills).")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--d", type=int, default=20_000)
    parser.add_argument("--nnz", type=int, default=50, help="word draws per row")
    parser.add_argument("--labeled", type=int, default=300, help="labeled rows of TSVM")
    parser.add_argument("--chunk-rows", type=int, default=10_000)
    parser.add_argument("--lam", type=float, default=0.1, help="λ of the MFN L2-SVM")
    parser.add_argument("--tsvm-lam", type=float, default=0.01)
    parser.add_argument("--lam-u", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-tsvm", action="store_true")
    parser.add_argument("--bandwidth", type=float, default=1e9, help="assumed network B/s")
    parser.add_argument("--latency", type=float, default=5e-4, help="assumed s per message")
    parser.add_argument("--quick", action="store_true", help="20,000 x 5,000")
    parser.add_argument("--out-of-core", action="store_true")
    parser.add_argument("--only-out-of-core", action="store_true", help="(d) alone")
    parser.add_argument("--ooc-rows", type=int, default=4_000_000)
    parser.add_argument("--ooc-chunk", type=int, default=25_000)
    parser.add_argument("--ooc-memory", type=float, default=0.5 * 2**30)
    args = parser.parse_args()
    if args.quick:
        args.n, args.d, args.chunk_rows, args.labeled = 20_000, 5_000, 5_000, 100
    warnings.simplefilter("ignore")
    import dask
    import distributed

    if args.only_out_of_core:
        out_of_core(args)
        return

    print(f"# bench_dask: {args.n:,} x {args.d:,}, ~{args.nnz} word draws per row; MFN λ = "
          f"{args.lam:g} (every row labeled), TSVM λ = {args.tsvm_lam:g}, λ' = {args.lam_u:g}, "
          f"{args.labeled} labeled; dask {dask.__version__}, distributed "
          f"{distributed.__version__}; LocalCluster: processes, 1 thread each")
    log("[memory] generating X ...")
    X = in_memory_matrix(args.n, args.d, args.nnz, args.chunk_rows)
    y_all = planted_labels(X @ planted_w(args.d))
    memory = memory_runs(args, X, y_all)
    dask_results = dask_runs(args, X, y_all, memory, memory["tsvm"])
    print(f"\nX: {X.nnz:,} non-zeros ({X.nnz / args.n:.1f} per row), "
          f"{X.nnz * CSR_BYTES_PER_NNZ / 2**20:.0f} MiB as CSR; labels positive "
          f"{np.mean(y_all > 0):.3f}; labels computed over Dask identical to in memory: "
          f"{all(r['labels_identical'] for r in dask_results)}; generate + persist on the "
          "workers: " + ", ".join(f"{r['setup']:.1f} s ({r['W']} worker{'s' * (r['W'] > 1)})"
                                 for r in dask_results))
    print("\nOne X̃p + X̃ᵀz over all rows (best of 5): in memory "
          f"{1e3 * memory['pair']:.1f} ms; " + "; ".join(
              f"{r['W']} worker{'s' * (r['W'] > 1)} {1e3 * r['pair']:.1f} ms unfused, "
              f"{1e3 * r['step']:.1f} ms fused (one task per block)" for r in dask_results))
    print(f"\n## (a) MFN, every row labeled (best of {args.repeat})\n")
    print_solve_table([memory["mfn"]] + [r["mfn"][f] for r in dask_results for f, _ in VARIANTS],
                      [("Newton steps", lambda r: str(r["steps"]))])
    if not args.skip_tsvm:
        print(f"\n## (b) TSVM, {args.labeled} labeled rows (one run each; CGLS iterations "
              "without the labeled start's)\n")
        print_solve_table([memory["tsvm"]]
                          + [r["tsvm"][f] for r in dask_results for f, _ in VARIANTS],
                          [("retrains", lambda r: f"{r['info']['retrains']:,}"),
                           ("switches", lambda r: f"{r['info']['switches']:,}")])
    args._nnz_per_row = X.nnz / args.n
    print_model(args, memory, dask_results)
    if args.out_of_core:
        args._mfn_cg = memory["mfn"]["cg"]
        out_of_core(args)


if __name__ == "__main__":
    main()
