"""``ssl-opt bench FAMILY``: reference and fast solvers side by side on the same instances.

For every variant of the family and every size of the grid, each applicable solver runs on the
same generated instance (runs under 0.2 s three times, keeping the fastest; wall time and peak
memory by :func:`~ssl_opt.selection.measure.measure`), is certified against the best certified
reference optimum (objective gap and the problem's own residuals), and is compared with its
cost-model prediction. The time limit holds two ways: a solver with a ``time_limit`` option
gets the benchmark's and stops at its next check; and the solves run in a worker process that
is killed at the hard limit (:func:`hard_limit`: the limit plus half of it, at least 10 s more;
:mod:`~ssl_opt.selection.isolated`), so a Newton step, a factorization or a CVXPY call cannot
run on past it. A run predicted beyond the limit is skipped. The report holds:

* a CSV of every run, written as each instance finishes (an interrupted benchmark leaves the
  rows of the instances it finished);
* the time-vs-size plot, with the measured crossover between the reference and the fastest fast
  solver marked, and the convergence plot (objective suboptimality and residuals against time,
  against the reference optimum) at the largest size that has one;
* a Markdown summary: per-size times, the crossover, what ``backend="auto"`` chose and how much
  slower it was than the best solver, prediction accuracy, and the shifted geometric mean of
  run times (shift 10 s; failed or skipped runs count as the time limit), as in qpbenchmark.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ssl_opt import registry
from ssl_opt._validation import check_bool, check_int, check_positive
from ssl_opt.certificate import certify
from ssl_opt.exceptions import InvalidInputError, UnsupportedProblemError
from ssl_opt.optional import installed
from ssl_opt.selection import model_store
from ssl_opt.selection.bench_report import (
    BenchReport,
    Run,
    VariantSummary,
    append_runs,
    check_output_directory,
    write_report,
)
from ssl_opt.selection.generators import cost_size
from ssl_opt.selection.isolated import ChildError, KilledRun, Worker
from ssl_opt.selection.measure import measure_fastest
from ssl_opt.selection.select import predict, select
from ssl_opt.solution import OPTIMAL, TIME_LIMIT

SHIFT_SECONDS = 10.0


def hard_limit(time_limit: float) -> float:
    """Seconds after which a run in the worker is killed: the time limit plus half of it, at
    least 10 s more (room for a cooperative stop's final certificate)."""
    return time_limit + max(10.0, 0.5 * time_limit)


def shifted_geometric_mean(values, shift: float = SHIFT_SECONDS) -> float:
    """``exp(mean(log(v + shift))) − shift`` of non-negative values (Mittelmann's shgeom)."""
    v = np.asarray(values, dtype=float)
    if v.size == 0 or np.any(v < 0) or not np.all(np.isfinite(v)):
        raise InvalidInputError("shifted_geometric_mean needs finite non-negative values.")
    if shift <= 0:
        raise InvalidInputError(f"shift must be positive, got {shift!r}.")
    return float(np.exp(np.mean(np.log(v + shift))) - shift)


def log_crossing(sizes, ratios) -> float | None:
    """First size where ``ratios`` (reference / fast time) rises through 1, interpolated
    linearly in ``log size`` and ``log ratio``; None when it does not cross on the grid."""
    s, r = np.asarray(sizes, float), np.asarray(ratios, float)
    for i in range(len(s) - 1):
        if r[i] <= 1.0 < r[i + 1]:
            a, b = math.log(r[i]), math.log(r[i + 1])
            t = 0.0 if b == a else -a / (b - a)
            return float(math.exp(math.log(s[i]) + t * (math.log(s[i + 1]) - math.log(s[i]))))
    return None


def _residual_text(residuals: dict) -> str:
    return ";".join(f"{k}={v:.3g}" for k, v in sorted(residuals.items()))


def _run_one(problem, solver, prediction, scale, size, key, model_sizes, time_limit,
             measure) -> tuple[Run, object]:
    """One timed solve by ``measure(solver, options) -> (Measurement, note)``; a solver with a
    ``time_limit`` option gets the benchmark's (it then returns its best point with status
    ``time_limit`` unless that point certifies)."""
    beyond = prediction.size / max(model_sizes) if model_sizes else math.nan
    limit = {"time_limit": time_limit} if "time_limit" in solver.options else {}
    m, note = measure(solver, limit)
    sol = m.result
    return Run(key, scale, size, solver.name, solver.backend, sol.status, None, m.seconds,
               m.peak_bytes / 2**20, int(sol.iterations), float(sol.objective), math.nan,
               math.nan, math.nan, "", prediction.seconds, prediction.memory / 2**20,
               prediction.source, bool(model_sizes) and prediction.size not in model_sizes,
               False, beyond, note=note), sol


def _in_process(problem, repeat_below):
    def measure(solver, options):
        return measure_fastest(lambda: solver.solve(problem, **options), repeat_below)[0], ""
    return measure


def _in_worker(worker: Worker, problem, instance: tuple, repeat_below, kill_after):
    """Runs in ``worker``; a solver or generator registered in this process only (not through
    an installed plugin) runs here instead, without the hard limit, and says so."""
    here = _in_process(problem, repeat_below)

    def measure(solver, options):
        if not worker.knows(solver.name, instance[0]):
            m, _ = here(solver, options)
            return m, ("ran in this process, without the hard limit: registered here only, "
                       "not through an installed plugin")
        return worker.run(instance, solver.name, options, repeat_below, kill_after), ""
    return measure


def _skipped(key, scale, size, solver, prediction, note) -> Run:
    return Run(key, scale, size, solver.name, solver.backend, "skipped", None, math.nan,
               math.nan, 0, math.nan, math.nan, math.nan, math.nan, "", prediction.seconds,
               prediction.memory / 2**20, prediction.source, False, False, note=note)


def run_bench(family: str, sizes: list[int] | None = None, variants: list[str] | None = None,
              solvers: list[str] | None = None, seed: int = 0, time_limit: float = 60.0,
              out_dir: str | Path | None = None, progress: bool = True,
              repeat_below: float = 0.2, operator: str = "dense",
              isolate: bool | None = None, kill_after: float | None = None) -> BenchReport:
    """Run the benchmark of ``family`` (e.g. ``"npkl"``) and write the report to ``out_dir``
    (the CSV grows as each instance finishes).

    Runs shorter than ``repeat_below`` seconds are repeated and the fastest of three kept.
    ``isolate`` (default: unless the operator is "dask", whose data live on the cluster this
    process holds) runs the solves in a worker process killed after ``kill_after`` seconds
    (default :func:`hard_limit` of ``time_limit``); such a run is recorded with status
    ``time_limit`` and the time it was given. The worker builds each instance itself from the
    generator, so a solver or generator must be registered through an installed plugin (an
    entry point), not only in this process, to run there.
    ``operator`` holds the instances' data in another operator kind (``Generator.operators``:
    "matrix-free" or "nystrom" kernels, a "dask" design matrix on a local cluster, see
    docs/scaling.md); only the variants that offer it run."""
    from tqdm.auto import tqdm

    gens = {k: g for k, g in registry.generators().items() if g.family == family}
    if not gens:
        families = sorted({g.family for g in registry.generators().values()})
        raise InvalidInputError(f"no generator for family {family!r}; families: {families}.")
    if variants:
        unknown = sorted(set(variants) - {k.split("/", 1)[1] for k in gens})
        if unknown:
            raise InvalidInputError(f"family {family!r} has no variant {unknown}; it has "
                                    f"{sorted(k.split('/', 1)[1] for k in gens)}.")
        gens = {k: g for k, g in gens.items() if k.split("/", 1)[1] in variants}
    if not isinstance(operator, str):
        raise InvalidInputError(f"operator must be a string, got {operator!r}.")
    offered = sorted({k for g in gens.values() for k in g.operators})
    if operator not in offered:
        raise InvalidInputError(f"family {family!r} offers the operator kinds {offered}, not "
                                f"{operator!r}.")
    gens = {k: g for k, g in gens.items() if operator in g.operators}
    table = registry.solvers()
    if solvers:
        unknown = sorted(set(solvers) - set(table))
        if unknown:
            raise InvalidInputError(f"no solver {unknown}; registered: {sorted(table)}.")
        table = {k: v for k, v in table.items() if k in solvers}
    time_limit = check_positive(time_limit, "time_limit")
    seed = check_int(seed, "seed", 0, 2**32 - 1)
    if sizes is not None:
        if isinstance(sizes, (str, bytes)) or not hasattr(sizes, "__iter__"):
            raise InvalidInputError(f"sizes must be a list of integers, got {sizes!r}.")
        sizes = sorted({check_int(s, "sizes", 1) for s in sizes})
        if not sizes:
            sizes = None
    if out_dir is not None:
        check_output_directory(out_dir, "out_dir")
    isolate = operator != "dask" if isolate is None else check_bool(isolate, "isolate")
    kill = hard_limit(time_limit) if kill_after is None else check_positive(kill_after,
                                                                            "kill_after")
    models = model_store.load_models()
    runs: list[Run] = []
    summaries: list[VariantSummary] = []
    steps = [(k, g, s) for k, g in gens.items() for s in (sizes or sorted(g.bench_scales))]
    bar = tqdm(steps, desc=f"bench {family}", unit="instance", disable=not progress)
    too_slow: set[tuple[str, str]] = set()
    convergence: dict[str, dict] = {}
    csv_path = None if out_dir is None else Path(out_dir) / f"{family}.csv"
    preload = tuple(sorted({p for s in table.values() for p in s.needs_packages
                            if installed(p)}))
    with Worker(preload) as worker, _operator_context(operator):
        for key, gen, scale in bar:
            bar.set_postfix_str(f"{key} at {scale}")
            problem = gen.instance(scale, seed, operator)
            measure = (_in_worker(worker, problem, (key, scale, seed, operator), repeat_below,
                                  kill)
                       if isolate else _in_process(problem, repeat_below))
            done = len(runs)
            _bench_instance(problem, key, gen, scale, table, models, time_limit, too_slow,
                            runs, convergence, frozenset(solvers or ()), measure)
            if csv_path is not None:
                append_runs(csv_path, runs[done:], start=done == 0)
    for key in gens:
        summaries.append(_summarize(key, [r for r in runs if r.variant == key], time_limit,
                                    convergence.get(key, {})))
    report = BenchReport(family, runs, summaries, time_limit, operator=operator)
    if out_dir is not None:
        write_report(report, out_dir)
    return report


def _operator_context(operator: str):
    """A 2-worker local dask cluster for the "dask" kind when no client is set; else nothing."""
    import contextlib

    if operator != "dask":
        return contextlib.nullcontext()
    from distributed import Client, LocalCluster, default_client

    try:
        default_client()
        return contextlib.nullcontext()
    except ValueError:
        pass
    stack = contextlib.ExitStack()
    cluster = stack.enter_context(LocalCluster(n_workers=2, threads_per_worker=1,
                                               dashboard_address=":0"))
    stack.enter_context(Client(cluster))
    return stack


def _bench_instance(problem, key, gen, scale, table, models, time_limit, too_slow,
                    runs, convergence, named, measure) -> None:
    """Every applicable solver on one instance, certified; appends to ``runs``. A solver
    that declares it does not reach a certified optimum on the instance (``inexact``, e.g.
    FISTA on a kernel expansion) is listed as skipped with its reason, unless it is
    ``named`` or ``auto``'s choice."""
    size = cost_size(problem, gen.size_keys)
    here: list[tuple[Run, object]] = []
    try:
        chosen = select(problem).solver
    except UnsupportedProblemError:
        chosen = None
    for name, solver in table.items():
        if not solver.supports(problem):
            continue
        prediction = predict(solver, problem)
        entry = models.get((name, key))
        model_sizes = {p[0] for p in entry[0].points} if entry else set()
        inexact = "" if name in named or name == chosen else solver.inexact(problem)
        if inexact:
            here.append((_skipped(key, scale, size, solver, prediction,
                                  f"does not reach a certified optimum here ({inexact}); "
                                  "name it in solvers= to run it"), None))
        elif (key, name) in too_slow:
            here.append((_skipped(key, scale, size, solver, prediction,
                                  "slower than the time limit at a smaller size"), None))
        elif prediction.seconds > time_limit:
            here.append((_skipped(key, scale, size, solver, prediction,
                                  f"predicted {prediction.seconds:.3g} s > time limit"),
                         None))
        else:
            try:
                run, sol = _run_one(problem, solver, prediction, scale, size, key,
                                    model_sizes, time_limit, measure)
            except KilledRun as exc:
                run, sol = _skipped(key, scale, size, solver, prediction, str(exc)), None
                run.status, run.time_s = TIME_LIMIT, exc.seconds
                too_slow.add((key, name))
            except Exception as exc:  # one solver's bug must not end the benchmark
                why = str(exc) if isinstance(exc, ChildError) else f"{type(exc).__name__}: {exc}"
                run, sol = _skipped(key, scale, size, solver, prediction, f"raised {why}"), None
                run.status = "error"
                too_slow.add((key, name))
            if run.time_s > time_limit:
                too_slow.add((key, name))
            here.append((run, sol))
    _certify_all(problem, here)
    for run, _ in here:
        run.auto_choice = run.solver == chosen
    refs = [(r, s) for r, s in here if r.backend == "reference" and r.succeeded]
    if refs and any(r.backend == "fast" and s is not None for r, s in here):
        convergence[key] = {"size": size, "p_star": refs[0][0].reference_objective,
                            "reference_time": min(r.time_s for r, _ in refs),
                            "histories": {r.solver: s.history for r, s in here
                                          if r.backend == "fast" and s is not None}}
    runs.extend(r for r, _ in here)


def _certify_all(problem, here) -> None:
    """Certify every finished run against the best certified reference optimum."""
    ref_sol = None
    for run, sol in here:
        if run.backend == "reference" and sol is not None and run.status == OPTIMAL:
            cert = certify(problem, sol, reference=False)
            run.certified = cert.passed
            run.max_residual = max(cert.residuals.values(), default=math.nan)
            run.residuals = _residual_text(cert.residuals)
            if cert.passed and (ref_sol is None or sol.objective < ref_sol.objective):
                ref_sol = sol
    for run, sol in here:
        if ref_sol is not None:
            run.reference_objective = float(ref_sol.objective)
            if run.objective == run.objective:
                run.rel_gap = (run.objective - ref_sol.objective) / max(1.0,
                                                                        abs(ref_sol.objective))
        if sol is None or run.backend == "reference":
            continue
        cert = certify(problem, sol, reference=ref_sol if ref_sol is not None else False)
        run.certified = cert.passed
        run.max_residual = max(cert.residuals.values(), default=math.nan)
        run.residuals = _residual_text(cert.residuals)


def _summarize(key, runs, time_limit, convergence) -> VariantSummary:
    sizes = sorted({r.size for r in runs})
    by = {(r.size, r.solver): r for r in runs}
    names = sorted({r.solver for r in runs})
    refs = [n for n in names if any(r.solver == n and r.backend == "reference" for r in runs)]
    fasts = [n for n in names if n not in refs]

    def best(group, size):
        times = [by[(size, n)].time_s for n in group
                 if (size, n) in by and by[(size, n)].succeeded]
        return min(times) if times else math.nan

    pairs = [(s, best(refs, s), best(fasts, s)) for s in sizes]
    pairs = [(s, tr, tf) for s, tr, tf in pairs if tr == tr and tf == tf]
    if not refs or not fasts:
        measured = "no reference and fast solver to compare"
    elif not pairs:
        measured = "no size where both finished"
    else:
        ratios = [tr / tf for _, tr, tf in pairs]
        cross = log_crossing([p[0] for p in pairs], ratios)
        if cross is not None:
            measured = f"{cross:.3g}"
        elif all(r > 1 for r in ratios):
            measured = f"below {pairs[0][0]:.4g} (fast solvers already faster)"
        elif all(r <= 1 for r in ratios):
            measured = f"above {pairs[-1][0]:.4g} (reference faster on the grid)"
        else:
            measured = "no single crossing (see the table)"
    predicted = _predicted_crossover(runs, refs, fasts, sizes)
    auto = []
    for s in sizes:
        chosen = [by[(s, n)] for n in names if (s, n) in by and by[(s, n)].auto_choice]
        fastest = best(names, s)
        if not chosen:
            auto.append((s, "-", None))
            continue
        c = chosen[0]
        if fastest != fastest:  # no run was certified optimal: nothing to compare with
            auto.append((s, c.solver, math.nan))
        else:
            auto.append((s, c.solver, c.time_s / fastest if c.succeeded else math.inf))
    shgeom, success = {}, {}
    for n in names:
        times = [by[(s, n)].time_s if (s, n) in by and by[(s, n)].succeeded else time_limit
                 for s in sizes if (s, n) in by]
        shgeom[n] = shifted_geometric_mean(times)
        success[n] = float(np.mean([by[(s, n)].succeeded for s in sizes if (s, n) in by]))
    floor = min(shgeom.values(), default=1.0)
    shgeom = {n: v / floor if floor > 0 else math.nan for n, v in shgeom.items()}
    return VariantSummary(key, sizes, measured, predicted, auto, shgeom, success, convergence)


def _predicted_crossover(runs, refs, fasts, sizes) -> str:
    """The crossing of the predicted times of the best reference and best fast solver on the
    grid (predictions exist for skipped runs too)."""
    pred = {(r.size, r.solver): r.predicted_time_s for r in runs}

    def best(group, size):
        values = [pred[(size, n)] for n in group if pred.get((size, n), math.nan) > 0]
        return min(values) if values else math.nan

    pts = [(s, best(refs, s), best(fasts, s)) for s in sizes]
    pts = [(s, tr, tf) for s, tr, tf in pts if tr == tr and tf == tf]
    if not refs or not fasts or not pts:
        return "no predictions for both"
    ratios = [tr / tf for _, tr, tf in pts]
    cross = log_crossing([p[0] for p in pts], ratios)
    if cross is not None:
        return f"{cross:.3g}"
    if all(r > 1 for r in ratios):
        return f"below {pts[0][0]:.4g}"
    return f"above {pts[-1][0]:.4g}" if all(r <= 1 for r in ratios) else "no single crossing"
