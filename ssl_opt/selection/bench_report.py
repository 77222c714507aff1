"""The results of ``ssl-opt bench`` (:mod:`ssl_opt.selection.bench`) and their report: the
runs and per-variant summaries, the CSV, the time-vs-size and convergence plots and the
Markdown summary."""

from __future__ import annotations

import csv
import math
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ssl_opt import registry
from ssl_opt._validation import check_writable_directory
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.selection import model_store
from ssl_opt.solution import OPTIMAL

#: Slowdown of ``auto``'s choice over the best solver that the benchmark tolerates.
AUTO_TARGET = 2.0
#: History columns plotted as the residual of a run, the first recorded at two points or more:
#: the model's certificate where a generic solver records it along the run (the same measure
#: for each of them), else the method's own.
RESIDUAL_COLUMNS = ("certificate", "grad_norm", "stationarity", "residual", "primal_residual",
                    "primal", "kl", "change")


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

    @property
    def within_2x(self) -> bool:
        """The measured time within a factor 2 of the predicted one."""
        return 0.5 <= self.time_s / self.predicted_time_s <= 2.0


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
        return sum(r.within_2x for r in runs), len(runs)


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
    return check_writable_directory(out, name)


def append_runs(path: str | Path, runs: list[Run], start: bool = False) -> None:
    """Append ``runs`` to the CSV at ``path`` (with ``start``: a new file with the header
    first), flushed at once: a benchmark that is stopped keeps the rows it finished."""
    with open(path, "w" if start else "a", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=[f.name for f in fields(Run)])
        if start:
            writer.writeheader()
        writer.writerows(asdict(r) for r in runs)


def write_report(report: BenchReport, out_dir: str | Path) -> dict[str, str]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = {"csv": str(out / f"{report.family}.csv"),
             "time_plot": str(out / f"{report.family}_time.png"),
             "convergence_plot": str(out / f"{report.family}_convergence.png"),
             "summary": str(out / f"{report.family}.md")}
    append_runs(files["csv"], report.runs, start=True)
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


def _colors(report: BenchReport) -> dict[str, tuple]:
    """One colour per solver across every panel of both figures (tab20 beyond ten solvers, so
    that no two share one)."""
    from matplotlib import colormaps

    names = {r.solver for r in report.runs} | {
        n for s in report.summaries for n in s.convergence.get("histories", {})}
    palette = colormaps["tab10" if len(names) <= 10 else "tab20"]
    return {name: palette(i % palette.N) for i, name in enumerate(sorted(names))}


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
    from matplotlib.ticker import NullFormatter

    fig, axes = plt.subplots(len(shown), 2, figsize=(10.5, 3.6 * len(shown)), squeeze=False)
    colors = _colors(report)
    for row, summary in zip(axes, shown, strict=True):
        conv = summary.convergence
        p_star = conv["p_star"]
        for name, hist in sorted(conv["histories"].items()):
            cols = hist.columns
            if "time" not in cols:
                continue
            if "objective" in cols:
                gap = (hist["objective"] - p_star) / max(1.0, abs(p_star))
                _plot_finite(row[0], hist["time"], gap, colors[name], name)
            res = residual_column(hist)
            if res is not None:
                _plot_finite(row[1], hist["time"], hist[res], colors[name], f"{name}: {res}")
        for ax, label in zip(row, ("relative suboptimality", "residual"), strict=True):
            if not ax.lines:
                ax.text(0.5, 0.5, f"no fast solver recorded a {label}", ha="center",
                        va="center", transform=ax.transAxes, fontsize=9)
            ax.axvline(conv["reference_time"], color="k", ls=":", lw=1.0,
                       label="reference finished")
            ax.set(xscale="log", yscale="log", xlabel="seconds", ylabel=label,
                   title=f"{summary.key}, size {conv['size']:.4g}")
            ax.xaxis.set_minor_formatter(NullFormatter())  # no overlapping minor labels
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def residual_column(history) -> str | None:
    """The column of ``history`` plotted as its residual: the first of
    :data:`RESIDUAL_COLUMNS` recorded at two points or more, else the first present."""
    present = [c for c in RESIDUAL_COLUMNS if c in history.columns]
    return next((c for c in present if np.isfinite(history[c]).sum() >= 2),
                present[0] if present else None)


def _plot_finite(ax, t, values, color, label) -> None:
    """The points of one history column that were recorded (rows without it hold NaN), on a
    log scale with zeros raised to 1e-16; nothing when none was."""
    keep = np.isfinite(t) & np.isfinite(values)
    if keep.any():
        ax.plot(t[keep], np.maximum(values[keep], 1e-16), ".-", color=color, label=label, ms=3)


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
             f"Prediction: {ok} of {total} held-out runs within 2x of their prediction (the "
             "cost model's, or the solver's own from measurements on the instance)"
             + (f" ({100 * ok / total:.0f} %)." if total else "."), ""]
    misses = [r for r in report.predicted_runs() if not r.within_2x]
    if misses:
        lines += ["Outside 2x (measured / predicted time; then the size as a multiple of the "
                  "largest size the model was calibrated on):", ""]
        lines += [f"- {r.variant} {r.solver} at size {r.size:.4g}: {r.time_s:.3g} s / "
                  f"{r.predicted_time_s:.3g} s = {r.time_s / r.predicted_time_s:.2g}x the "
                  f"prediction; size {r.beyond_calibration:.2g} times the largest calibrated"
                  for r in misses]
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
