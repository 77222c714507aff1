"""The command line refuses a bad value the way argparse refuses a bad flag: one line on
stderr, ``ssl-opt: error: ...`` naming the argument, exit code 2, no traceback, and before
any benchmark or calibration run starts."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from ssl_opt import cli
from ssl_opt.selection import bench, calibrate


@pytest.fixture
def no_runs(monkeypatch):
    """Make a benchmark or a calibration that starts fail loudly: each refusal below must
    come before any run."""
    def started(*args, **kwargs):
        raise AssertionError("a run started although an argument is bad")

    monkeypatch.setattr(bench, "run_bench", started)
    monkeypatch.setattr(calibrate, "calibrate", started)


def _refused(argv, capsys) -> str:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("ssl-opt: error: ")
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize("argv,named", [
    (["bench", "nosuchfamily"], "argument family: no family 'nosuchfamily'"),
    (["bench", "npkl", "--sizes", "-5"], "argument --sizes must be >= 1, got -5"),
    (["bench", "npkl", "--sizes", "60", "0"], "argument --sizes"),
    (["bench", "npkl", "--time-limit", "-1"], "argument --time-limit must be > 0"),
    (["bench", "npkl", "--time-limit", "0"], "argument --time-limit"),
    (["bench", "npkl", "--time-limit", "nan"], "argument --time-limit"),
    (["bench", "npkl", "--time-limit", "inf"], "argument --time-limit"),
    (["bench", "npkl", "--seed", "-1"], "argument --seed"),
    (["bench", "npkl", "--variant", "nope"], "argument --variant: no npkl variant 'nope'"),
    (["bench", "npkl", "--solvers", "pcg", "nosuch"], "argument --solvers: no solver 'nosuch'"),
    (["calibrate", "--solvers", "nosuch"], "argument --solvers: no solver 'nosuch'"),
    (["calibrate", "--generators", "npkl"], "argument --generators: no generator 'npkl'"),
    (["calibrate", "--target-seconds", "-1"], "argument --target-seconds"),
    (["calibrate", "--max-seconds", "nan"], "argument --max-seconds"),
    (["calibrate", "--seed", "-3"], "argument --seed"),
    (["certify", "--example", "nosuch"], "argument --example: no example named ['nosuch']"),
])
def test_a_bad_value_is_one_line_and_exit_code_2(argv, named, capsys, no_runs):
    assert named in _refused(argv, capsys)


def test_out_pointing_at_a_file_is_refused(tmp_path, capsys, no_runs):
    existing = tmp_path / "results.csv"
    existing.write_text("keep me")
    line = _refused(["bench", "npkl", "--sizes", "40", "--out", str(existing)], capsys)
    assert "argument --out" in line and "is a file" in line
    line = _refused(["bench", "npkl", "--out", str(existing / "sub")], capsys)
    assert "argument --out" in line
    assert existing.read_text() == "keep me"


def test_calibrate_output_must_be_a_writable_file_name(tmp_path, capsys, no_runs):
    line = _refused(["calibrate", "--output", str(tmp_path)], capsys)
    assert "argument --output" in line and "is a directory" in line
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    line = _refused(["calibrate", "--output", str(blocker / "models.json")], capsys)
    assert "argument --output" in line and "is a file" in line


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs a path no one can write")
def test_unwritable_outputs_are_refused_before_the_run(monkeypatch, capsys, no_runs):
    line = _refused(["bench", "lass", "--out", "/proc/ssl-opt-x"], capsys)
    assert "argument --out '/proc/ssl-opt-x' cannot be written" in line
    monkeypatch.setenv("SSL_OPT_CACHE_DIR", "/proc/ssl-opt-y")
    line = _refused(["calibrate", "--generators", "lass/qp"], capsys)
    assert "$SSL_OPT_CACHE_DIR '/proc/ssl-opt-y' cannot be written" in line


def test_quick_certify_runs_every_solver_once_where_it_is_exact():
    from ssl_opt import registry

    examples = registry.examples()
    plan = cli.representatives(examples)
    named = [name for _, _, names in plan for name in names]
    problems = {e.name: e.build() for e in examples}
    applicable = {name for name, solver in registry.solvers().items()
                  if any(solver.supports(p) for p in problems.values())}
    assert sorted(named) == sorted(applicable)  # each applicable solver exactly once
    for example, problem, names in plan:
        for name in names:
            solver = registry.get_solver(name)
            assert solver.supports(problem)
            exact_somewhere = any(solver.supports(p) and not solver.inexact(p)
                                  for p in problems.values())
            assert not (exact_somewhere and solver.inexact(problem)), (name, example.name)
    assert len(plan) < len(examples)


def test_certify_table_fits_100_columns_with_the_reasons_below():
    long = "FAIL: " + "; ".join(["stationarity 3.1e-03 > 1.0e-06"] * 6)
    rows = [["model-transductive-huber-enet", "cvxpy-boundary", "reference", "12.345", 12345,
             "-1234.5678", "1.0e-10*", "1.0e-09", "PASS"],
            ["model-transductive-huber-enet", "irls-newton", "fast", "0.012", 3,
             "-1234.5678", "2.0e-03", "3.1e-03", long],
            ["npkl-spiral-hinge", "bcd", "fast", "0.5", 31, "1.5", "1.2e-02", "4.0e-02",
             "NOT OPTIMAL (solver status 'stalled'): gradient_psd 4.0e-02 > 1.0e-06"]]
    text = cli.certify_report(rows)
    assert max(len(line) for line in text.splitlines()) <= 100, text
    assert "FAIL [1]" in text and "NOT OPTIMAL [2]" in text
    assert " ".join(text.split()).count("stationarity 3.1e-03") == 6  # all kept, wrapped
    assert "model-transductive-huber-enet:" in text and "*: non-convex" in text


def test_argparse_errors_keep_exit_code_2(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["bench", "npkl", "--sizes", "x"])
    assert stop.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1].startswith("ssl-opt bench: error: ")


def test_the_installed_command_exits_2_without_a_traceback(tmp_path):
    exe = shutil.which("ssl-opt")
    if exe is None:
        pytest.skip("ssl-opt is not installed as a command")
    done = subprocess.run([exe, "bench", "nosuchfamily"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == [done.stderr.strip()]
    assert done.stderr.startswith("ssl-opt: error: argument family:")


def test_solvers_still_lists_the_builtins(capsys):
    assert cli.main(["solvers"]) == 0
    out = capsys.readouterr().out
    assert "laprls-direct" in out and "admm-split" in out
