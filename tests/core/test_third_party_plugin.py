"""A third-party solver installed through the ``ssl_opt`` entry-point group takes part in
calibration, selection and benchmarking with no change to the package."""

from __future__ import annotations

import dataclasses
import importlib
import re
import sys
import textwrap
import warnings

import pytest

import ssl_opt
from ssl_opt import registry
from ssl_opt.selection import model_store
from ssl_opt.selection.bench import run_bench
from ssl_opt.selection.calibrate import calibrate_and_save

PLUGIN = '''
"""A third-party LapRLS solver: the objective is quadratic, so its Hessian is assembled from
n + 1 gradient differences and the stationarity system is solved by least squares."""

import numpy as np

from ssl_opt.hookspecs import hookimpl
from ssl_opt.problems import LapRLS
from ssl_opt.solution import OPTIMAL, Solution
from ssl_opt.solvers import Solver


class DenseQuadratic(Solver):
    name = "thirdparty-dense"
    problem_types = (LapRLS,)
    description = "Hessian from gradient differences, then lstsq (a test plugin)"
    options = {}

    def _solve(self, problem):
        n = problem.n

        def grad(z):
            g = problem.gradient({"alpha": z[:n], "b": np.array(z[n])})
            return np.append(g["alpha"], g["b"])

        g0 = grad(np.zeros(n + 1))
        H = np.column_stack([grad(e) - g0 for e in np.eye(n + 1)])
        z = np.linalg.lstsq(0.5 * (H + H.T), -g0, rcond=1e-14)[0]
        return Solution({"alpha": z[:n], "b": np.array(z[n])}, float("nan"), OPTIMAL, 1, 0.0,
                        "fast", self.name)


@hookimpl
def register_solvers():
    return [DenseQuadratic()]
'''


@pytest.fixture
def installed_plugin(tmp_path, monkeypatch):
    """Install ``thirdparty_ssl`` the way pip would: a module and a dist-info folder whose
    entry_points.txt advertises it under the ``ssl_opt`` group, on ``sys.path``."""
    (tmp_path / "thirdparty_ssl.py").write_text(textwrap.dedent(PLUGIN))
    dist = tmp_path / "thirdparty_ssl-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: thirdparty-ssl\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[ssl_opt]\nthirdparty = thirdparty_ssl\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(model_store.CACHE_ENV, str(tmp_path / "cache"))
    importlib.invalidate_caches()
    registry.reset()
    model_store.clear_cache()
    yield tmp_path
    registry.reset()
    model_store.clear_cache()
    sys.modules.pop("thirdparty_ssl", None)


def test_third_party_solver_is_calibrated_selected_and_benchmarked(installed_plugin):
    assert "thirdparty-dense" in registry.solvers()
    gen = registry.generators()["manifold/squared"]
    problem = gen.instance(150, 3)

    # Before calibration it has no model: predicted "none", sorted last, never chosen blindly.
    sel = ssl_opt.select(problem, backend="fast")
    assert sel.predictions["thirdparty-dense"].source == "none"
    assert sel.solver != "thirdparty-dense"

    models, runs, _ = calibrate_and_save(generators=["manifold/squared"],
                                         solvers=["thirdparty-dense"], target_seconds=0.05,
                                         max_seconds=3, progress=False)
    assert [m.solver for m in models] == ["thirdparty-dense"]
    assert {r.solver for r in runs} == {"thirdparty-dense"}
    sel = ssl_opt.select(problem)
    p = sel.predictions["thirdparty-dense"]
    assert p.source == "calibrated"
    assert p.seconds == pytest.approx(models[0].predict_time(problem.structure.sizes["n"]))

    # Its solution is certified like any other, against the reference.
    sol = ssl_opt.solve(problem, solver="thirdparty-dense")
    assert ssl_opt.certify(problem, sol).objective_gap < 1e-6

    rep = run_bench("manifold", sizes=[80], variants=["squared"],
                    solvers=["thirdparty-dense", "laprls-direct", "cvxpy"], progress=False)
    rows = {r.solver: r for r in rep.runs}
    assert set(rows) == {"thirdparty-dense", "laprls-direct", "cvxpy"}
    assert rows["thirdparty-dense"].prediction_source == "calibrated"
    assert abs(rows["thirdparty-dense"].rel_gap) < 1e-6
    assert rows["thirdparty-dense"].note == ""  # an installed plugin runs in the worker too
    assert "thirdparty-dense" in rep.summaries[0].shgeom


def test_a_name_claimed_twice_keeps_the_builtin_and_warns():
    from ssl_opt.hookspecs import hookimpl

    builtin = registry.get_solver("pcg")
    generator = registry.generators()["lass/qp"]

    class Impostor(type(builtin)):
        description = "an impostor"

    class Clash:
        @hookimpl
        def register_solvers(self):
            return [Impostor()]

        @hookimpl
        def register_generators(self):
            return [dataclasses.replace(generator, description="an impostor")]

    plugin = Clash()
    registry.register_plugin(plugin, name="clash")
    try:
        with pytest.warns(registry.PluginWarning,
                          match="solver named 'pcg'.*'ssl_opt.plugins.manifold.pcg'.*'clash'"):
            table = registry.solvers()
        assert type(table["pcg"]) is type(builtin)
        with pytest.warns(registry.PluginWarning, match="generator for 'lass/qp'.*'clash'"):
            assert registry.generators()["lass/qp"].description == generator.description
    finally:
        registry.unregister_plugin(plugin)
    assert registry.get_solver("pcg") is not None


def test_a_solver_that_raises_does_not_end_calibration_or_bench(tmp_path, monkeypatch):
    from ssl_opt.hookspecs import hookimpl
    from ssl_opt.problems import LapRLS
    from ssl_opt.selection.calibrate import calibrate
    from ssl_opt.solvers import Solver

    class Broken(Solver):
        name = "test-broken"
        problem_types = (LapRLS,)

        def _solve(self, problem):
            raise ZeroDivisionError("plugin bug")

    class Plugin:
        @hookimpl
        def register_solvers(self):
            return [Broken()]

    monkeypatch.setenv(model_store.CACHE_ENV, str(tmp_path))
    model_store.clear_cache()
    plugin = Plugin()
    registry.register_plugin(plugin)
    try:
        with pytest.warns(RuntimeWarning, match="test-broken .* ZeroDivisionError"):
            models, runs = calibrate(generators=["manifold/squared"],
                                     solvers=["test-broken", "laprls-direct"],
                                     target_seconds=0.01, max_seconds=1, progress=False)
        assert [m.solver for m in models] == ["laprls-direct"]
        rep = run_bench("manifold", sizes=[60, 80], variants=["squared"],
                        solvers=["test-broken", "laprls-direct"], progress=False)
        status = {(r.scale, r.solver): (r.status, r.note) for r in rep.runs}
        assert status[(60, "test-broken")][0] == "error"
        assert "ZeroDivisionError" in status[(60, "test-broken")][1]
        assert status[(80, "test-broken")][0] == "skipped"
        assert status[(80, "laprls-direct")] == ("optimal", "")
        # registered in this process only: the worker cannot see it, so it ran here
        assert status[(60, "test-broken")][1].startswith("raised ZeroDivisionError")
    finally:
        registry.unregister_plugin(plugin)
        model_store.clear_cache()


# A broken third-party plugin is skipped with a warning naming it; the built-ins keep working.

GOOD_SOLVER = PLUGIN.split("@hookimpl")[0]

BROKEN_PLUGINS = {
    "import_raises": ("broken_ssl", 'raise RuntimeError("import-time bug")\n',
                      "importing it raised RuntimeError: import-time bug"),
    "import_exits": ("broken_ssl", "import sys\nsys.exit(3)\n",
                     "importing it raised SystemExit: 3"),
    "missing_module": ("no_such_module_for_ssl_opt", None,
                       "importing it raised ModuleNotFoundError"),
    "solvers_hook_raises": ("broken_ssl", GOOD_SOLVER + """
@hookimpl
def register_solvers():
    raise KeyError("hook bug")
""", r"register_solvers\(\) .* raised KeyError"),
    "examples_hook_raises": ("broken_ssl", GOOD_SOLVER + """
@hookimpl
def register_examples():
    raise ZeroDivisionError("hook bug")
""", r"register_examples\(\) .* raised ZeroDivisionError"),
    "generators_hook_raises": ("broken_ssl", GOOD_SOLVER + """
@hookimpl
def register_generators():
    return 1 / 0
""", r"register_generators\(\) .* raised ZeroDivisionError"),
    "returns_not_solvers": ("broken_ssl", GOOD_SOLVER + """
@hookimpl
def register_solvers():
    return ["newton", object(), DenseQuadratic]
""", r"3 object\(s\) of type object, str, type .*register_solvers"),
    "returns_not_a_list": ("broken_ssl", GOOD_SOLVER + """
@hookimpl
def register_solvers():
    return DenseQuadratic()
""", "register_solvers.*must return a list of Solver instances, got DenseQuadratic"),
    "returns_not_examples": ("broken_ssl", GOOD_SOLVER + """
@hookimpl
def register_examples():
    return [DenseQuadratic()]
""", r"register_examples\(\).*expected Example"),
    "returns_not_generators": ("broken_ssl", GOOD_SOLVER + """
@hookimpl
def register_generators():
    return "manifold/squared"
""", "register_generators.*must return a list"),
    "solver_without_a_name": ("broken_ssl", GOOD_SOLVER + """
class Nameless(DenseQuadratic):
    name = None


@hookimpl
def register_solvers():
    return [Nameless()]
""", r"1 object\(s\) of type Nameless"),
    "unknown_hook": ("broken_ssl", GOOD_SOLVER + """
@hookimpl
def register_solverz():
    return [DenseQuadratic()]
""", "registering it failed; check that it implements only the ssl_opt hooks"),
    "hook_with_arguments": ("broken_ssl", GOOD_SOLVER + """
@hookimpl
def register_solvers(problem):
    return [DenseQuadratic()]
""", "registering it failed; check that it implements only the ssl_opt hooks"),
}


@pytest.fixture
def install_plugin(tmp_path, monkeypatch):
    """Install a module ``broken_ssl`` with ``source`` and an entry point ``broken`` pointing
    at ``target``, as pip would (see :func:`installed_plugin`)."""
    def install(target: str, source: str | None):
        if source is not None:
            (tmp_path / "broken_ssl.py").write_text(source)
        dist = tmp_path / "broken_ssl-0.3.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-ssl\nVersion: 0.3\n")
        (dist / "entry_points.txt").write_text(f"[ssl_opt]\nbroken = {target}\n")
        monkeypatch.syspath_prepend(str(tmp_path))
        importlib.invalidate_caches()
        registry.reset()

    yield install
    registry.reset()
    sys.modules.pop("broken_ssl", None)


@pytest.mark.parametrize("kind", sorted(BROKEN_PLUGINS))
def test_a_broken_plugin_is_skipped_with_a_warning(install_plugin, kind, capsys):
    from ssl_opt.cli import main

    target, source, match = BROKEN_PLUGINS[kind]
    install_plugin(target, source)
    builtins = ["admm-split", "bcd", "cvxpy", "irls", "laprls-direct", "newton", "pcg"]
    with pytest.warns(registry.PluginWarning) as caught:
        names = [s["name"] for s in ssl_opt.list_solvers()]
        examples = registry.examples()
        generators = registry.generators()
    messages = " | ".join(str(w.message) for w in caught)
    assert "'broken'" in messages and "broken-ssl 0.3" in messages
    assert re.search(match, messages), messages
    assert set(builtins) <= set(names)
    assert "manifold/squared" in generators
    assert len(examples) == len({e.name for e in examples}) >= 5

    # The command line and a solve-and-certify of a built-in example still work.
    registry.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", registry.PluginWarning)
        assert main(["solvers"]) == 0
        assert "laprls-direct" in capsys.readouterr().out
        problem = next(e for e in examples if e.family == "manifold").build()
        solution = ssl_opt.solve(problem, solver="pcg")
        assert ssl_opt.certify(problem, solution).passed


def test_the_good_hooks_of_a_plugin_survive_its_broken_one(install_plugin):
    install_plugin("broken_ssl", GOOD_SOLVER + """
@hookimpl
def register_solvers():
    return [DenseQuadratic()]


@hookimpl
def register_examples():
    raise RuntimeError("examples are broken")
""")
    with pytest.warns(registry.PluginWarning, match="register_examples"):
        assert len(registry.examples()) >= 5
    assert "thirdparty-dense" in registry.solvers()
