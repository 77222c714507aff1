"""The benchmark's hard time limit (a worker process killed at the limit), its CSV written as
each instance finishes, and its convergence figure."""

from __future__ import annotations

import csv
import time

import numpy as np
import pytest

import ssl_opt
from ssl_opt import registry
from ssl_opt.selection.bench import hard_limit, run_bench
from ssl_opt.selection.generators import Generator
from ssl_opt.selection.isolated import ChildError, KilledRun, Worker, portable
from ssl_opt.solution import Solution

MOONS = "manifold/squared_hinge"


def test_a_run_past_the_hard_limit_is_killed_on_time():
    """CVXPY's solve of this LapSVM takes over a second; the worker is killed at 0.2 s and the
    next run starts a new one."""
    with Worker() as worker:
        start = time.perf_counter()
        with pytest.raises(KilledRun, match="hard limit") as killed:
            worker.run((MOONS, 800, 0, "dense"), "cvxpy", {}, 0.0, hard_limit=0.2)
        assert killed.value.seconds == 0.2
        assert time.perf_counter() - start < 30.0  # building the instance included
        again = worker.run((MOONS, 60, 0, "dense"), "newton", {}, 0.0, hard_limit=60.0)
        assert again.result.status == "optimal"


def test_a_run_in_the_worker_returns_what_a_run_here_returns():
    problem = registry.generators()[MOONS].instance(60, 0)
    here = ssl_opt.solve(problem, solver="newton")
    with Worker() as worker:
        m = worker.run((MOONS, 60, 0, "dense"), "newton", {}, 0.0, 60.0)
    there = m.result
    assert isinstance(there, Solution) and there.status == here.status
    assert there.iterations == here.iterations
    np.testing.assert_array_equal(there.x["alpha"], here.x["alpha"])

    def untimed(rows):
        return [{k: v for k, v in row.items() if k != "time"} for row in rows]

    assert untimed(there.history.rows) == untimed(here.history.rows)
    assert m.seconds > 0 and m.peak_bytes >= 0


def test_an_error_in_the_worker_comes_back_with_its_type_and_message():
    with Worker() as worker:
        with pytest.raises(ChildError, match="SolverNotFoundError: no solver named 'nope'"):
            worker.run((MOONS, 60, 0, "dense"), "nope", {}, 0.0, 60.0)
        with pytest.raises(ChildError, match="unknown option"):
            worker.run((MOONS, 60, 0, "dense"), "newton", {"bogus": 1}, 0.0, 60.0)
        # the worker survives a solve that raised
        assert worker.run((MOONS, 60, 0, "dense"), "newton", {}, 0.0, 60.0).result.optimal


def test_unpicklable_info_stays_behind():
    sol = Solution({"w": np.ones(3)}, 1.0, "optimal", 1, 0.0, "fast", "x")
    sol.info.update(kept=3, handle=lambda: None)  # a lambda does not pickle
    assert portable(sol).info == {"kept": 3} and sol.info["kept"] == 3


def test_the_bench_kills_a_run_past_the_hard_limit(cache):
    """At n = 1,000 CVXPY takes seconds and has no way to stop itself at a time limit; it is
    killed at 0.6 s, recorded as ``time_limit`` with the time it was given, and skipped at the
    next size, while Newton (tens of milliseconds) runs at both."""
    start = time.perf_counter()
    rep = run_bench("manifold", sizes=[60, 1000, 1100], variants=["squared_hinge"],
                    progress=False, solvers=["newton", "cvxpy"], kill_after=0.6,
                    repeat_below=0.0)
    assert time.perf_counter() - start < 60.0
    runs = {(r.scale, r.solver): r for r in rep.runs}
    assert runs[(60, "cvxpy")].status == "optimal" and runs[(60, "cvxpy")].certified
    killed = runs[(1000, "cvxpy")]
    assert killed.status == "time_limit" and killed.time_s == 0.6
    assert "killed after" in killed.note and not killed.succeeded
    assert runs[(1100, "cvxpy")].status == "skipped"  # slower than the limit at a smaller size
    assert all(runs[(n, "newton")].status == "optimal" for n in (60, 1000, 1100))


def test_hard_limit_leaves_room_above_the_time_limit():
    assert hard_limit(60.0) == 90.0 and hard_limit(4.0) == 14.0


def test_the_csv_keeps_the_instances_finished_before_an_interruption(cache, tmp_path,
                                                                      monkeypatch):
    build = Generator.instance

    def instance(self, scale, seed=0, operator="dense"):
        if scale > 60:
            raise KeyboardInterrupt  # the user stops the benchmark at the second size
        return build(self, scale, seed, operator)

    monkeypatch.setattr(Generator, "instance", instance)
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        run_bench("lass", sizes=[60, 90], variants=["qp"], out_dir=out, progress=False,
                  solvers=["admm-split", "cvxpy"])
    with open(out / "lass.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert {(r["scale"], r["solver"]) for r in rows} == {("60", "admm-split"), ("60", "cvxpy")}
    assert all(r["certified"] == "True" for r in rows)


def test_the_residual_plotted_is_one_recorded_along_the_run():
    from ssl_opt.selection.bench_report import residual_column
    from ssl_opt.solution import History

    admm = History()
    for k in range(5):  # the certificate is checked at the end only, primal at every check
        admm.append(iteration=k, primal=10.0**-k, time=0.1 * k)
    admm.append(iteration=5, primal=1e-6, certificate=1e-9, time=0.6)
    assert residual_column(admm) == "primal"
    pdhg = History()
    for k in range(3):
        pdhg.append(iteration=k, stationarity=1.0, certificate=10.0**-k, time=0.1 * k)
    assert residual_column(pdhg) == "certificate"
    assert residual_column(History()) is None


def test_the_convergence_figure_says_when_a_panel_has_nothing(tmp_path):
    """A fast solver that records no objective leaves the left panel without a line: it says
    so instead of being an empty frame."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ssl_opt.selection.bench_report import BenchReport, VariantSummary, plot_convergence
    from ssl_opt.solution import History

    hist = History()
    for k in range(4):
        hist.append(iteration=k, primal=10.0**-k, time=0.01 * (k + 1))
    conv = {"size": 100, "p_star": 1.0, "reference_time": 0.05, "histories": {"x": hist}}
    summary = VariantSummary("lass/qp", [100], "-", "-", [], {}, {}, conv)
    report = BenchReport("lass", [], [summary], 60.0)
    texts = []
    original = plt.Axes.text
    plt.Axes.text = lambda self, *a, **k: texts.append(a[2]) or original(self, *a, **k)
    try:
        assert plot_convergence(report, tmp_path / "c.png")
    finally:
        plt.Axes.text = original
    assert texts == ["no fast solver recorded a relative suboptimality"]
    assert (tmp_path / "c.png").stat().st_size > 5_000
