"""``ssl-opt bench FAMILY``: reference and fast solvers side by side on the same instances.

For every variant of the family and every size of the grid, each applicable solver runs on the
same generated instance (runs under 0.2 s three times, keeping the fastest; wall time and peak
memory by :func:`~ssl_opt.selection.measure.measure`; a solver with a ``time_limit`` option
gets the benchmark's, so no run goes far past it; one predicted beyond it is skipped),
is certified against the best certified reference
optimum (objective gap and the problem's own residuals), and is compared with its cost-model
prediction. The report holds:

* a CSV of every run;
* the time-vs-size plot, with the measured crossover between the reference and the fastest fast
  solver marked, and the convergence plot (objective suboptimality and residuals against time,
  against the reference optimum) at the largest size that has one;
* a Markdown summary: per-size times, the crossover, what ``backend="auto"`` chose and how much
  slower it was than the best solver, prediction accuracy, and the shifted geometric mean of
  run times (shift 10 s; failed or skipped runs count as the time limit), as in qpbenchmark.
"""

from __future__ import annotations

import csv
import math
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ssl_opt import registry
from ssl_opt._validation import check_int, check_positive
from ssl_opt.certificate import certify
from ssl_opt.exceptions import InvalidInputError, UnsupportedProblemError
from ssl_opt.selection import model_store
from ssl_opt.selection.generators import cost_size
from ssl_opt.selection.measure import measure_fastest
from ssl_opt.selection.select import predict, select
from ssl_opt.solution import OPTIMAL

SHIFT_SECONDS = 10.0
#: Slowdown of ``auto``'s choice over the best solver that the benchmark tolerates.
AUTO_TARGET = 2.0
#: History columns plotted as the residual of a run, first found first.
RESIDUAL_COLUMNS = ("grad_norm", "stationarity", "residual", "primal_residual", "kl", "change")


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


@dataclass
class Run:
    """One solver on one instance (a CSV row)."""

    variant: str
    scale: int
    size: float
    solver: str
    backend: str
    status: str
    certified: bool | None
    time_s: float
    peak_memory_mib: float
    iterations: int
    objective: float
    reference_objective: float
    rel_gap: float
    max_residual: float
    residuals: str
    predicted_time_s: float
    predicted_memory_mib: float
    prediction_source: str
    held_out: bool
    auto_choice: bool
    #: The model's size at this run over the largest size it was calibrated on.
    beyond_calibration: float = math.nan
    note: str = ""

    @property
    def succeeded(self) -> bool:
        return self.status == OPTIMAL and self.certified is not False


@dataclass
class VariantSummary:
    key: str
    sizes: list[float]
    crossover_measured: str
    crossover_predicted: str
    auto: list[tuple[float, str, float | None]]  # size, chosen solver, slowdown vs best
    shgeom: dict[str, float]
    success: dict[str, float]
    convergence: dict = field(default_factory=dict)


@dataclass
class BenchReport:
    family: str
    runs: list[Run]
    summaries: list[VariantSummary]
    time_limit: float
    files: dict[str, str] = field(default_factory=dict)
    operator: str = "dense"

    def predicted_runs(self) -> list[Run]:
        """Held-out runs that succeeded and have a prediction."""
        return [r for r in self.runs
                if r.held_out and r.succeeded and r.predicted_time_s == r.predicted_time_s]

    def prediction_accuracy(self) -> tuple[int, int]:
        """(within 2x, total) over :meth:`predicted_runs`."""
        runs = self.predicted_runs()
        return sum(_within_2x(r) for r in runs), len(runs)


def _within_2x(run: Run) -> bool:
    return 0.5 <= run.time_s / run.predicted_time_s <= 2.0


def _residual_text(residuals: dict) -> str:
    return ";".join(f"{k}={v:.3g}" for k, v in sorted(residuals.items()))


def _run_one(problem, solver, prediction, scale, size, key, model_sizes,
             repeat_below, time_limit) -> tuple[Run, object]:
    """One timed solve; a solver with a ``time_limit`` option gets the benchmark's (it then
    returns its best point with status ``time_limit`` unless that point certifies)."""
    beyond = prediction.size / max(model_sizes) if model_sizes else math.nan
    limit = {"time_limit": time_limit} if "time_limit" in solver.options else {}
    m, _ = measure_fastest(lambda: solver.solve(problem, **limit), repeat_below)
    sol = m.result
    return Run(key, scale, size, solver.name, solver.backend, sol.status, None, m.seconds,
               m.peak_bytes / 2**20, int(sol.iterations), float(sol.objective), math.nan,
               math.nan, math.nan, "", prediction.seconds, prediction.memory / 2**20,
               prediction.source, bool(model_sizes) and prediction.size not in model_sizes,
               False, beyond), sol


def _skipped(key, scale, size, solver, prediction, note) -> Run:
    return Run(key, scale, size, solver.name, solver.backend, "skipped", None, math.nan,
               math.nan, 0, math.nan, math.nan, math.nan, math.nan, "", prediction.seconds,
               prediction.memory / 2**20, prediction.source, False, False, note=note)


def run_bench(family: str, sizes: list[int] | None = None, variants: list[str] | None = None,
              solvers: list[str] | None = None, seed: int = 0, time_limit: float = 60.0,
              out_dir: str | Path | None = None, progress: bool = True,
              repeat_below: float = 0.2, operator: str = "dense") -> BenchReport:
    """Run the benchmark of ``family`` (e.g. ``"npkl"``) and write the report to ``out_dir``.

    Runs shorter than ``repeat_below`` seconds are repeated and the fastest of three kept.
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
    models = model_store.load_models()
    runs: list[Run] = []
    summaries: list[VariantSummary] = []
    steps = [(k, g, s) for k, g in gens.items() for s in (sizes or sorted(g.bench_scales))]
    bar = tqdm(steps, desc=f"bench {family}", unit="instance", disable=not progress)
    too_slow: set[tuple[str, str]] = set()
    convergence: dict[str, dict] = {}
    with _operator_context(operator):
        for key, gen, scale in bar:
            bar.set_postfix_str(f"{key} at {scale}")
            problem = gen.instance(scale, seed, operator)
            _bench_instance(problem, key, gen, scale, table, models, time_limit, too_slow,
                            repeat_below, runs, convergence, frozenset(solvers or ()))
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
                    repeat_below, runs, convergence, named=frozenset()) -> None:
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
                                    model_sizes, repeat_below, time_limit)
            except Exception as exc:  # one solver's bug must not end the benchmark
                run, sol = _skipped(key, scale, size, solver, prediction,
                                    f"raised {type(exc).__name__}: {exc}"), None
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


# ----------------------------------------------------------------------------- output


def check_output_directory(path: str | Path, name: str) -> Path:
    """``path`` as a directory that exists or can be created: neither it nor a parent may be a
    file. Checked before a benchmark runs, so a bad path fails at once, not after the runs."""
    out = Path(path)
    for where in (out, *out.parents):
        if where.exists():
            if not where.is_dir():
                raise InvalidInputError(
                    f"{name} {str(path)!r} must be a directory, but {str(where)!r} is a file; "
                    "choose another output directory.")
            break
    return out


def write_report(report: BenchReport, out_dir: str | Path) -> dict[str, str]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = {"csv": str(out / f"{report.family}.csv"),
             "time_plot": str(out / f"{report.family}_time.png"),
             "convergence_plot": str(out / f"{report.family}_convergence.png"),
             "summary": str(out / f"{report.family}.md")}
    with open(files["csv"], "w", newline="") as fh:
        names = list(asdict(report.runs[0])) if report.runs else ["variant"]
        writer = csv.DictWriter(fh, fieldnames=names)
        writer.writeheader()
        for r in report.runs:
            writer.writerow(asdict(r))
    plot_times(report, files["time_plot"])
    if not plot_convergence(report, files["convergence_plot"]):
        del files["convergence_plot"]
    Path(files["summary"]).write_text(markdown(report, files))
    report.files = files
    return files


def _grid(n: int):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = min(3, max(1, n))
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 4.0 * rows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return plt, fig, axes.flat


def _colors(report: BenchReport) -> dict[str, str]:
    """One colour per solver across every panel of both figures."""
    return {name: f"C{i % 10}" for i, name in enumerate(sorted({r.solver for r in report.runs}))}


def plot_times(report: BenchReport, path) -> None:
    """Measured time vs size (markers, crossed when the run was not optimal or not
    certified), the predicted time (dashed) and the measured crossover (dotted line)."""
    plt, fig, axes = _grid(len(report.summaries))
    colors = _colors(report)
    for ax, summary in zip(axes, report.summaries, strict=False):
        runs = [r for r in report.runs if r.variant == summary.key and r.time_s == r.time_s]
        for name in sorted({r.solver for r in runs}):
            mine = sorted((r for r in runs if r.solver == name), key=lambda r: r.size)
            color = colors[name]
            style = "s-" if mine[0].backend == "reference" else "o-"
            ax.plot([r.size for r in mine], [r.time_s for r in mine], style, color=color,
                    label=name, mfc=color)
            bad = [r for r in mine if not r.succeeded]
            ax.plot([r.size for r in bad], [r.time_s for r in bad], "x", color="k", ms=9)
            predicted = sorted((r for r in report.runs if r.variant == summary.key
                                and r.solver == name and r.predicted_time_s == r.predicted_time_s),
                               key=lambda r: r.size)
            ax.plot([r.size for r in predicted], [r.predicted_time_s for r in predicted], "--",
                    color=color, lw=0.8)
        try:
            cross = float(summary.crossover_measured)
        except ValueError:
            cross = None
        if cross is not None:
            ax.axvline(cross, color="k", ls=":", lw=1.2, label=f"crossover ≈ {cross:.3g}")
        size_name = "·".join(registry.generators()[summary.key].size_keys)
        ax.set(xscale="log", yscale="log", xlabel=f"size ({size_name})", ylabel="seconds",
               title=summary.key)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("measured (markers; x = not optimal or not certified), model (dashed)",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_convergence(report: BenchReport, path) -> bool:
    """Objective suboptimality and a residual against time, per fast solver, at the largest
    size with a certified reference; the reference's own time is the dotted line."""
    shown = [s for s in report.summaries if s.convergence]
    if not shown:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(shown), 2, figsize=(10.5, 3.6 * len(shown)), squeeze=False)
    colors = _colors(report)
    for row, summary in zip(axes, shown, strict=True):
        conv = summary.convergence
        p_star = conv["p_star"]
        for name, hist in sorted(conv["histories"].items()):
            cols = hist.columns
            if "time" not in cols:
                continue
            t = hist["time"]
            if "objective" in cols:
                gap = np.maximum((hist["objective"] - p_star) / max(1.0, abs(p_star)), 1e-16)
                row[0].plot(t, gap, ".-", color=colors[name], label=name, ms=3)
            res = next((c for c in RESIDUAL_COLUMNS if c in cols), None)
            if res is not None:
                row[1].plot(t, np.maximum(hist[res], 1e-16), ".-", color=colors[name],
                            label=f"{name}: {res}", ms=3)
        for ax, label in zip(row, ("relative suboptimality", "residual"), strict=True):
            ax.axvline(conv["reference_time"], color="k", ls=":", lw=1.0,
                       label="reference finished")
            ax.set(xscale="log", yscale="log", xlabel="seconds", ylabel=label,
                   title=f"{summary.key}, size {conv['size']:.4g}")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def _fmt_time(r: Run) -> str:
    if r.status == "skipped":
        return "skipped"
    if r.succeeded:
        return f"{r.time_s:.3g}"
    why = r.status + (", not certified" if r.certified is False else "")
    return f"{r.time_s:.3g} ({why})"


def markdown(report: BenchReport, files: dict[str, str]) -> str:
    ok, total = report.prediction_accuracy()
    kind = "" if report.operator == "dense" else f" ({report.operator} operator)"
    lines = [f"# Benchmark: {report.family}{kind}", "",
             f"Run {datetime.now(timezone.utc).isoformat(timespec='seconds')} on "
             f"{model_store.machine_description()['processor']} "
             f"({model_store.machine_description()['cpus']} CPUs); time limit "
             f"{report.time_limit:g} s. Times in seconds; the size is the cost models' size.", "",
             f"Prediction: {ok} of {total} held-out runs within 2x of the calibrated model"
             + (f" ({100 * ok / total:.0f} %)." if total else "."), ""]
    misses = [r for r in report.predicted_runs() if not _within_2x(r)]
    if misses:
        lines += ["Outside 2x (measured / predicted; size over the largest calibrated size):", ""]
        lines += [f"- {r.variant} {r.solver} at size {r.size:.4g}: {r.time_s:.3g} s / "
                  f"{r.predicted_time_s:.3g} s; {r.beyond_calibration:.2g}x" for r in misses]
        lines.append("")
    for s in report.summaries:
        runs = [r for r in report.runs if r.variant == s.key]
        names = sorted({r.solver for r in runs})
        by = {(r.size, r.solver): r for r in runs}
        lines += [f"## {s.key}", "",
                  "| size | " + " | ".join(names) + " | auto | auto / best |",
                  "|---:|" + "---:|" * len(names) + "---|---:|"]
        for (size, chosen, slowdown) in s.auto:
            cells = [_fmt_time(by[(size, n)]) if (size, n) in by else "-" for n in names]
            ratio = ("-" if slowdown is None else "n/a (none certified)"
                     if slowdown != slowdown else f"{slowdown:.2f}")
            lines.append(f"| {size:.4g} | " + " | ".join(cells) + f" | {chosen} | {ratio} |")
        worst = max((x for _, _, x in s.auto if x is not None and x == x), default=math.nan)
        lines += ["", f"- crossover (reference slower than the fastest fast solver beyond): "
                      f"measured {s.crossover_measured}; predicted {s.crossover_predicted}",
                  f"- auto: at most {worst:.2f}x the best solver on this grid "
                  f"(target {AUTO_TARGET:g}x)",
                  "- shifted geometric mean of time (shift 10 s, normalized to the best; "
                  "failures count as the time limit): "
                  + ", ".join(f"{n} {v:.3g}" for n, v in sorted(s.shgeom.items(),
                                                                 key=lambda kv: kv[1])),
                  "- success rate: " + ", ".join(f"{n} {100 * v:.0f} %"
                                                 for n, v in sorted(s.success.items())), ""]
    for label in ("time_plot", "convergence_plot"):
        if label in files:
            lines.append(f"![{label}]({Path(files[label]).name})")
    lines += ["", f"Every run: `{Path(files['csv']).name}`.", ""]
    return "\n".join(lines)
