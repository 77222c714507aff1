"""``ssl-opt bench`` and ``ssl-opt calibrate`` on tiny grids, checked against independent
computations (the reference backend, closed forms, the CSV re-read from disk)."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest

import ssl_opt
from ssl_opt import registry
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.selection import model_store
from ssl_opt.selection.bench import log_crossing, run_bench, shifted_geometric_mean
from ssl_opt.selection.calibrate import calibrate, calibrate_and_save, report
from ssl_opt.selection.generators import Generator, cost_size, geometric_scales


def test_shifted_geometric_mean_closed_form():
    # (10 · 20 · 40)^(1/3) = 20
    assert shifted_geometric_mean([0.0, 10.0, 30.0], shift=10) == pytest.approx(10.0)
    assert shifted_geometric_mean([3.0, 3.0]) == pytest.approx(3.0)
    with pytest.raises(InvalidInputError):
        shifted_geometric_mean([1.0, -1.0])
    with pytest.raises(InvalidInputError):
        shifted_geometric_mean([1.0, math.inf])


def test_log_crossing_interpolates_in_log_log():
    # log r goes from log 0.5 to log 2 between 100 and 400: halfway in log size, at 200
    assert log_crossing([100, 400], [0.5, 2.0]) == pytest.approx(200.0)
    assert log_crossing([10, 100, 1000], [0.1, 1.0, 10.0]) == pytest.approx(100.0)
    assert log_crossing([10, 100], [2.0, 3.0]) is None
    assert log_crossing([10, 100], [0.2, 0.3]) is None


def test_geometric_scales():
    assert geometric_scales(100, 400, 2.0) == (100, 200, 400)
    assert geometric_scales(2, 5, 1.1) == (2, 3, 4, 5)


def test_every_generator_builds_what_it_claims():
    for key, gen in registry.generators().items():
        problem = gen.instance(gen.calibration_scales[0], seed=1)
        assert f"{problem.structure.family}/{problem.structure.variant}" == key
        assert cost_size(problem, gen.size_keys) > 0
        assert not set(gen.bench_scales) & set(gen.calibration_scales), key
    bad = Generator("lass/other", ("N",), registry.generators()["lass/qp"].build, "", (10,), (20,))
    with pytest.raises(InvalidInputError, match="lass/qp"):
        bad.instance(100)


def test_calibrate_measures_grows_and_fits(cache):
    models, runs, path = calibrate_and_save(generators=["lass/qp"], solvers=["admm-split"],
                                            target_seconds=0.05, max_seconds=30, progress=False)
    assert [m.solver for m in models] == ["admm-split"]
    scales = [r.scale for r in runs]
    assert scales == sorted(scales) and len(scales) >= 2
    # it stops after the first run longer than the target once min_points (3) sizes are
    # measured, or at the end of the grid
    assert (all(not (r.seconds > 0.05 and i + 1 >= 3) for i, r in enumerate(runs[:-1]))
            or sum(r.seconds for r in runs) > 30)
    sizes = [r.size for r in runs]
    gen = registry.generators()["lass/qp"]
    assert sizes[0] == cost_size(gen.instance(scales[0]), ("N", "K"))
    # written where the user cache is, and picked up by selection
    assert path == str(cache / model_store.FILENAME)
    entry = model_store.load_models()[("admm-split", "lass/qp")]
    assert entry[1] == "calibrated" and len(entry[0].points) == len(runs)
    assert "admm-split" in report(models) and "lass/qp" in report(models)


def test_calibrate_rejects_unknown_names():
    with pytest.raises(InvalidInputError, match="generator"):
        calibrate(generators=["nope/nope"], progress=False)
    with pytest.raises(InvalidInputError, match="solver"):
        calibrate(solvers=["nope"], progress=False)
    with pytest.raises(InvalidInputError, match="target_seconds"):
        calibrate(target_seconds=0, progress=False)
    with pytest.raises(InvalidInputError, match="min_points"):
        calibrate(min_points=1, progress=False)


def test_bench_rows_agree_with_an_independent_reference_solve(cache, tmp_path):
    out = tmp_path / "out"
    rep = run_bench("npkl", sizes=[30, 45], variants=["square"], out_dir=out, progress=False)
    with open(out / "npkl.csv") as fh:
        rows = list(csv.DictReader(fh))
    gen = registry.generators()["npkl/square"]
    for scale in (30, 45):
        problem = gen.instance(scale, 0)
        ref = ssl_opt.solve(problem, backend="reference")
        mine = [r for r in rows if int(r["scale"]) == scale]
        # the paper's BCD, both SDP references, and the generic solvers with a projection
        assert {r["solver"] for r in mine} == {"bcd", "cvxpy", "cvxpy-boundary", "fista", "pdhg"}
        for r in mine:
            assert float(r["reference_objective"]) == pytest.approx(ref.objective, rel=1e-7)
            assert r["status"] == "optimal" and r["certified"] == "True"
            assert abs(float(r["rel_gap"])) < 1e-6
            assert float(r["size"]) == problem.structure.sizes["l"]
            assert float(r["time_s"]) > 0 and float(r["peak_memory_mib"]) >= 0
        chosen = [r["solver"] for r in mine if r["auto_choice"] == "True"]
        assert chosen == [ssl_opt.select(problem).solver]
    summary = (out / "npkl.md").read_text()
    assert "crossover" in summary and "shifted geometric mean" in summary
    # the prediction count of the summary, recomputed from the CSV
    judged = [float(r["time_s"]) / float(r["predicted_time_s"]) for r in rows
              if r["held_out"] == "True" and r["status"] == "optimal"
              and r["certified"] == "True" and r["predicted_time_s"] != "nan"]
    assert judged
    ok = sum(0.5 <= x <= 2 for x in judged)
    assert f"Prediction: {ok} of {len(judged)} held-out runs" in summary
    assert summary.count("\n- npkl/square ") == len(judged) - ok
    for name in ("npkl_time.png", "npkl_convergence.png"):
        assert (out / name).stat().st_size > 10_000
    s = rep.summaries[0]
    assert min(s.shgeom.values()) == pytest.approx(1.0)
    # the measured slowdown of auto's choice, recomputed from the CSV
    for size, solver, slowdown in s.auto:
        times = {r["solver"]: float(r["time_s"]) for r in rows if float(r["size"]) == size}
        assert slowdown == pytest.approx(times[solver] / min(times.values()))


def test_bench_skips_what_is_predicted_beyond_the_time_limit(cache, tmp_path):
    from ssl_opt.selection.cost_model import CostModel, PowerLaw

    slow = CostModel("cvxpy", "lass/qp", ("N", "K"), PowerLaw(0, 1e6, 0), None,
                     ((1.0, 1e6, 0.0), (2.0, 1e6, 0.0)))
    model_store.save_models([slow])
    model_store.clear_cache()
    rep = run_bench("lass", sizes=[60], out_dir=None, progress=False, time_limit=5,
                    isolate=False)
    status = {r.solver: r.status for r in rep.runs}
    assert status["cvxpy"] == "skipped" and status["admm-split"] == "optimal"
    skipped = next(r for r in rep.runs if r.solver == "cvxpy")
    assert "time limit" in skipped.note and np.isnan(skipped.beyond_calibration)
    assert np.isnan(rep.runs[0].reference_objective)


def test_bench_passes_its_time_limit_to_a_solver_that_takes_one(cache):
    """pdhg on the hinge NPKL at l = 69 needs ~14,000 iterations (over 10 s); predicted fast
    here, it runs, and with the benchmark's 1 s limit it stops and says so."""
    from ssl_opt.selection.cost_model import CostModel, PowerLaw

    fast = CostModel("pdhg", "npkl/hinge", ("l",), PowerLaw(0, 0.1, 0), None,
                     ((1.0, 0.1, 0.0), (2.0, 0.1, 0.0)))
    model_store.save_models([fast])
    model_store.clear_cache()
    rep = run_bench("npkl", sizes=[100], variants=["hinge"], solvers=["pdhg"], out_dir=None,
                    progress=False, time_limit=1.0)
    run = next(r for r in rep.runs if r.solver == "pdhg")
    assert run.status == "time_limit" and run.time_s < 5.0


def test_bench_skips_a_solver_that_declares_it_stalls_unless_named(cache):
    """FISTA declares that it stalls on a kernel expansion (LapSVM, a named model every
    generic solver applies to): the bench lists it as skipped with that reason, and runs it
    when it is named; its run then stops short of the certificate, as it said."""
    rep = run_bench("manifold", sizes=[60], variants=["squared_hinge"], progress=False,
                    isolate=False,
                    solvers=["fista", "newton", "irls-newton", "cvxpy"])
    ran = {r.solver: r for r in rep.runs}
    assert ran["fista"].status != "skipped"
    assert not ran["fista"].certified and ran["irls-newton"].certified
    rep = run_bench("manifold", sizes=[60], variants=["squared_hinge"], progress=False,
                    isolate=False)
    ran = {r.solver: r for r in rep.runs}
    assert ran["fista"].status == "skipped" and "kernel expansion" in ran["fista"].note
    assert ran["newton"].certified and ran["irls-newton"].certified


def test_bench_rejects_unknown_family_variant_and_solver():
    with pytest.raises(InvalidInputError, match="families"):
        run_bench("nope", progress=False)
    with pytest.raises(InvalidInputError, match="variant"):
        run_bench("npkl", variants=["nope"], progress=False)
    with pytest.raises(InvalidInputError, match="solver"):
        run_bench("npkl", solvers=["nope"], progress=False)
    with pytest.raises(InvalidInputError, match="sizes"):
        run_bench("npkl", sizes=[50, 0], progress=False)
    with pytest.raises(InvalidInputError, match="time_limit"):
        run_bench("npkl", time_limit=-1, progress=False)


@pytest.mark.parametrize("kwargs,match", [
    ({"time_limit": math.nan}, "time_limit"), ({"time_limit": math.inf}, "time_limit"),
    ({"time_limit": "60"}, "time_limit"), ({"seed": -1}, "seed"), ({"seed": 1.5}, "seed"),
    ({"sizes": "60"}, "sizes"), ({"sizes": [40.5]}, "sizes"),
    ({"isolate": "no"}, "isolate"), ({"kill_after": 0}, "kill_after"),
    ({"kill_after": math.nan}, "kill_after"),
])
def test_bench_rejects_bad_numbers_before_running(kwargs, match):
    with pytest.raises(InvalidInputError, match=match):
        run_bench("lass", **{"sizes": [40], **kwargs}, progress=False)


def test_bench_and_calibration_refuse_an_unwritable_output_before_running(tmp_path, monkeypatch):
    from ssl_opt.selection import calibrate as calibrate_module

    def started(*args, **kwargs):
        raise AssertionError("the runs started before the output path was checked")

    monkeypatch.setattr(calibrate_module, "calibrate", started)
    monkeypatch.setattr(model_store, "load_models", started)
    existing = tmp_path / "report.md"
    existing.write_text("keep")
    for out in (existing, existing / "below"):
        with pytest.raises(InvalidInputError, match="out_dir .* is a file"):
            run_bench("lass", sizes=[40], out_dir=out, progress=False)
    with pytest.raises(InvalidInputError, match="path .* is a directory"):
        calibrate_and_save(path=tmp_path)
    with pytest.raises(InvalidInputError, match="is a file, not a directory"):
        calibrate_and_save(path=existing / "models.json")
    assert existing.read_text() == "keep"


def test_measure_sees_a_known_allocation():
    from ssl_opt.selection.measure import available_memory, measure

    nbytes = 64 * 2**20
    m = measure(lambda: float(np.ones(nbytes // 8).sum()))
    assert m.result == nbytes // 8
    assert 0.9 * nbytes <= m.peak_bytes <= 1.5 * nbytes
    assert m.seconds > 0 and available_memory() > nbytes


def test_cli_calibrate_and_bench(tmp_path):
    import json
    import os
    import subprocess

    env = {**os.environ, model_store.CACHE_ENV: str(tmp_path / "cache")}
    out = subprocess.run(["ssl-opt", "calibrate", "--generators", "lass/qp", "--solvers",
                          "admm-split", "--target-seconds", "0.02",
                          "--output", str(tmp_path / "m.json"),
                          "--no-progress"], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    doc = json.loads((tmp_path / "m.json").read_text())
    assert [(m["solver"], m["key"]) for m in doc["models"]] == [("admm-split", "lass/qp")]
    assert "lass/qp" in out.stdout and "expected b" in out.stdout
    out = subprocess.run(["ssl-opt", "bench", "lass", "--sizes", "60", "--out",
                          str(tmp_path / "b"), "--no-progress"], capture_output=True, text=True,
                         env=env)
    assert out.returncode == 0, out.stderr
    for name in ("lass.csv", "lass.md", "lass_time.png", "lass_convergence.png"):
        assert (tmp_path / "b" / name).exists()


def test_measure_fastest_repeats_only_short_runs():
    from ssl_opt.selection.measure import measure_fastest

    calls = []
    best, spent = measure_fastest(lambda: calls.append(1), repeat_below=10.0)
    assert len(calls) == 3 and spent >= best.seconds > 0
    calls.clear()
    measure_fastest(lambda: calls.append(1), repeat_below=1e-12)
    assert len(calls) == 1


@pytest.mark.parametrize("operator,kind", [("matrix-free", "KernelOperator"),
                                           ("nystrom", "NystromOperator")])
def test_bench_runs_a_family_on_another_operator_kind(cache, operator, kind):
    """The same instances with K held as an operator: every run is certified against the
    reference on the same (exact or approximated) kernel, solved here independently."""
    rep = run_bench("manifold", sizes=[60], variants=["squared_hinge"], operator=operator,
                    progress=False)
    assert rep.operator == operator
    problem = registry.generators()["manifold/squared_hinge"].instance(60, 0, operator)
    assert type(problem.K).__name__ == kind
    dense = ssl_opt.problems.LapSVM(problem.K_columns(np.arange(60)), problem.L, problem.y,
                                    problem.gamma_A, problem.gamma_I)
    best = ssl_opt.solve(dense, solver="cvxpy").objective
    ran = {r.solver: r for r in rep.runs if r.status == "optimal"}
    assert "pcg" in ran and ("lowrank-newton" in ran) == (operator == "nystrom")
    for r in ran.values():
        assert r.certified and r.objective == pytest.approx(best, rel=1e-6)
    with pytest.raises(InvalidInputError, match="operator kinds"):
        run_bench("manifold", sizes=[60], operator="sparse", progress=False)
    with pytest.raises(InvalidInputError, match="no operator kind"):
        registry.generators()["lass/qp"].instance(60, 0, "nystrom")


def test_bench_runs_the_linear_family_over_dask(cache):
    """``--operator dask``: the generated X row-partitioned on a local 2-worker cluster the
    benchmark starts; MFN's objective equals the in-memory solve of the same instance."""
    # The generic solvers apply to the named model too (products through the design); the
    # family's solver and the reference are the point here.
    rep = run_bench("linear", sizes=[500], variants=["l2svm"], operator="dask",
                    solvers=["mfn", "cvxpy"], progress=False)
    problem = registry.generators()["linear/l2svm"].instance(500, 0)
    best = ssl_opt.solve(problem, solver="cvxpy").objective
    ran = {r.solver: r for r in rep.runs}
    assert set(ran) == {"mfn"}  # the CVXPY reference refuses a distributed X
    assert ran["mfn"].status == "optimal" and ran["mfn"].certified
    assert ran["mfn"].objective == pytest.approx(best, rel=1e-7)


def test_bench_runs_the_manifold_family_on_dask_kernel_products(cache):
    """``--operator dask`` on the manifold family: PCG's products on a local cluster reach
    the optimum of the same instance with its K stored (solved here by CVXPY)."""
    rep = run_bench("manifold", sizes=[60], variants=["squared"], operator="dask",
                    solvers=["pcg", "cvxpy"], progress=False)
    problem = registry.generators()["manifold/squared"].instance(60, 0)
    best = ssl_opt.solve(problem, solver="cvxpy").objective
    ran = {r.solver: r for r in rep.runs if r.status == "optimal"}
    assert "pcg" in ran and ran["pcg"].certified
    assert ran["pcg"].objective == pytest.approx(best, rel=1e-7)


def test_a_missed_prediction_reads_as_a_time_ratio_and_a_size_ratio():
    from ssl_opt.selection.bench_report import BenchReport, Run, markdown

    run = Run("npkl/square", 3, 277.0, "bcd", "fast", "optimal", True, 0.06, 1.0, 20, 1.0,
              1.0, 0.0, 1e-9, "", 0.14, 1.0, "shipped", True, True, beyond_calibration=0.17)
    files = {"csv": "npkl.csv", "time_plot": "npkl_time.png",
             "convergence_plot": "npkl_convergence.png", "summary": "npkl.md"}
    text = markdown(BenchReport("npkl", [run], [], 60.0), files)
    line = next(line for line in text.splitlines() if line.startswith("- npkl/square bcd"))
    assert "0.06 s / 0.14 s = 0.43x the prediction" in line  # 0.06 / 0.14, computed here
    assert "size 0.17 times the largest calibrated" in line


def test_calibrate_warns_when_the_machine_is_loaded(monkeypatch):
    import os
    import warnings

    from ssl_opt.selection import calibrate as calibration
    from ssl_opt.selection.model_store import CostModelWarning

    cpus = os.cpu_count() or 1
    monkeypatch.setattr(os, "getloadavg", lambda: (4.0 * cpus, 1.0, 1.0))
    with pytest.warns(CostModelWarning, match="machine is loaded"):
        assert calibration.check_machine_load() == 4.0 * cpus
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error", CostModelWarning)
        assert calibration.check_machine_load() == 0.0

    def unavailable():
        raise OSError("no load average here")

    monkeypatch.setattr(os, "getloadavg", unavailable)
    assert calibration.check_machine_load() is None
