"""Plugin discovery and solver selection."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points

import numpy as np
import pytest

import ssl_opt
from ssl_opt import registry
from ssl_opt.hookspecs import hookimpl
from ssl_opt.problems import LapSVM
from ssl_opt.selection.select import REFERENCE_PREFERENCE
from ssl_opt.solution import OPTIMAL, Solution
from ssl_opt.solvers import Option, Solver

BUILTIN = {"cvxpy", "cvxpy-dual", "newton", "pcg", "laprls-direct"}


def test_builtins_are_registered_in_process_and_entry_points_are_third_party_only():
    names = {ep.value for ep in entry_points(group="ssl_opt")}
    assert not {n for n in names if n.startswith("ssl_opt.")}, names
    registered = {name for name, _ in registry.plugin_manager().list_name_plugin()}
    assert set(registry.BUILTIN_PLUGINS) <= registered
    assert BUILTIN <= {s["name"] for s in ssl_opt.list_solvers()}
    # the generic layout names are not installed as top-level packages
    for generic in ("plugins", "reference"):
        assert subprocess.run([sys.executable, "-c", f"import {generic}"], cwd="/",
                              capture_output=True).returncode != 0


class GradientDescent(Solver):
    """A third-party style solver: plain preconditioned gradient descent on smooth losses."""

    name = "test-gd"
    problem_types = (LapSVM,)
    requires = {"loss": ("derivative",)}
    options = {"max_iter": Option(20000, "iterations")}

    def _solve(self, problem, max_iter):
        from ssl_opt.numerics.line_search import step_along

        alpha, b = np.zeros(problem.n), 0.0
        for _ in range(max_iter):
            Ka = problem.K_dot(alpha)
            f = Ka + b
            Lf = problem.L_dot(f)
            v, g_b = problem.preconditioned_gradient(alpha, f, Lf)
            Kd = problem.K_dot(-v)
            f_d = Kd - (g_b if problem.bias else 0.0)
            s = step_along(problem, f, Ka, Lf, -v, Kd, f_d, problem.L_dot(f_d))
            alpha, b = alpha - s * v, b - s * g_b
        return Solution({"alpha": alpha, "b": np.array(b)}, 0.0, OPTIMAL, max_iter, 0.0,
                        "fast", self.name)


class GDPlugin:
    @hookimpl
    def register_solvers(self):
        return [GradientDescent()]


@pytest.fixture
def gd_plugin():
    plugin = GDPlugin()
    ssl_opt.register_plugin(plugin, name="test-gd-plugin")
    yield plugin
    registry.unregister_plugin(plugin)


def test_runtime_plugin_is_listed_solved_and_certified(gd_plugin, problem_factory):
    assert "test-gd" in {s["name"] for s in ssl_opt.list_solvers()}
    p = problem_factory("blobs", n=30, loss="squared")
    sol = ssl_opt.solve(p, solver="test-gd", max_iter=3000)
    assert sol.backend == "fast" and sol.solver == "test-gd"
    # plain gradient descent is slow: 3000 steps reach ~1e-6 relative stationarity
    assert ssl_opt.certify(p, sol, stationarity=1e-5).passed
    with pytest.raises(ssl_opt.UnsupportedProblemError,
                       match=r"a loss with derivative \(this problem's loss Hinge\(\)"):
        ssl_opt.solve(problem_factory(loss="hinge"), solver="test-gd")


def test_duplicate_solver_names_keep_the_first_and_warn(gd_plugin):
    other = GDPlugin()
    ssl_opt.register_plugin(other, name="duplicate")
    try:
        with pytest.warns(registry.PluginWarning,
                          match="'test-gd' is registered by .*'test-gd-plugin'.*'duplicate'"):
            solvers = registry.solvers()
        assert isinstance(solvers["test-gd"], GradientDescent)
        assert {"newton", "pcg", "cvxpy"} <= set(solvers)  # the rest of the registry is intact
    finally:
        registry.unregister_plugin(other)


def test_unknown_solver_and_option(problem_factory):
    p = problem_factory()
    with pytest.raises(ssl_opt.SolverNotFoundError, match="registered solvers"):
        ssl_opt.solve(p, solver="nope")
    with pytest.raises(ValueError, match="unknown option"):
        ssl_opt.solve(p, solver="pcg", tolerance=1e-3)
    with pytest.raises(ValueError, match="backend"):
        ssl_opt.solve(p, backend="fastest")
    with pytest.raises(ValueError, match="fast solver, not .reference"):
        ssl_opt.solve(p, backend="reference", solver="pcg")


def test_auto_selection_keeps_the_solvers_that_take_the_options_given(problem_factory):
    p = problem_factory(n=60)
    assert ssl_opt.select(p).solver != "pcg"  # newton or the reference, by the cost models
    sel = ssl_opt.select(p, options=["early_stopping"])
    assert sel.solver == "pcg"
    assert "early_stopping" in " ".join(sel.unsupported["newton"])
    sol = ssl_opt.solve(p, early_stopping="stability")  # newton would refuse the option
    assert sol.solver == "pcg" and sol.status == "early_stopped"
    with pytest.raises(ssl_opt.UnsupportedProblemError, match="no solver can solve.*no_solver"):
        ssl_opt.select(p, options=["no_solver_takes_this"])
    for bad in ("tol", 5, [1]):
        with pytest.raises(ssl_opt.InvalidInputError, match="options must be an iterable"):
            ssl_opt.select(p, options=bad)


def test_auto_selection_follows_the_cost_models(problem_factory):
    small = problem_factory(n=60)
    sel = ssl_opt.select(small)
    fast = min(t for name, t in sel.predicted_time.items() if name in {"pcg", "newton"})
    # measured here: CVXPY's set-up alone costs more than a Newton solve at n = 60
    assert sel.predicted_time["cvxpy"] > REFERENCE_PREFERENCE * fast
    assert sel.backend == "fast" and "beyond" in sel.reason
    budget = ssl_opt.select(small, time_budget=10.0)
    assert budget.solver == "cvxpy" and "time budget" in budget.reason
    big = problem_factory("blobs", n=400, n_labeled=20)
    sel = ssl_opt.select(big)
    assert sel.backend == "fast" and sel.solver in {"pcg", "newton"}
    assert set(sel.predicted_time) >= {"pcg", "newton", "cvxpy"}
    # PCG's time is measured on the instance (its conditioning and products), the others'
    # come from the models
    assert sel.predictions["pcg"].source == "instance"
    assert all(p.source == "shipped" or p.source == "calibrated"
               for name, p in sel.predictions.items() if name != "pcg")
    sol = ssl_opt.solve(big)
    assert sol.solver == sel.solver and sel.solver in sol.info["selection"]
    hinge_big = problem_factory("blobs", n=400, n_labeled=20, loss="hinge")
    assert ssl_opt.select(hinge_big).backend == "reference"


def test_cli_solvers_and_certify():
    out = subprocess.run(["ssl-opt", "solvers"], capture_output=True, text=True, check=True)
    for name in BUILTIN:
        assert name in out.stdout
    out = subprocess.run(["ssl-opt", "certify", "--all"], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 failed" in out.stdout
    for example in ("lapsvm-moons", "laprls-moons", "lapsvm-hinge-moons"):
        assert example in out.stdout


def _blas_threads() -> int:
    from threadpoolctl import threadpool_info

    return max((p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"),
               default=1)


class ThreadProbe(Solver):
    """Records the BLAS threads it runs under; asks for one."""

    name = "test-thread-probe"
    problem_types = (LapSVM,)

    def blas_threads(self, problem):
        return 1

    def _solve(self, problem):
        self.seen = _blas_threads()
        return Solution({"alpha": np.zeros(problem.n), "b": np.array(0.0)}, 0.0, OPTIMAL, 0,
                        0.0, "fast", self.name)


def test_a_solver_runs_under_the_blas_threads_it_asks_for_and_restores_them():
    from threadpoolctl import threadpool_limits

    problem = LapSVM(np.eye(4), np.eye(4), np.array([1.0, -1.0]), 1.0, 1.0)
    probe = ThreadProbe()
    with threadpool_limits(2, user_api="blas"):
        before = _blas_threads()
        probe.solve(problem)
        assert probe.seen == 1 and _blas_threads() == before


def test_linear_solvers_take_one_blas_thread_on_sparse_x_only():
    import scipy.sparse as sp

    from ssl_opt.problems import TSVM, LinearSVM

    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 5))
    y = np.sign(X[:, 0] + 0.1)
    solvers = registry.solvers()
    for problem, name in ((LinearSVM(X, y, 1e-2), "mfn"), (TSVM(X, y[:10], 1e-2, 1.0), "tsvm")):
        assert solvers[name].blas_threads(problem) is None
    for problem, name in ((LinearSVM(sp.csr_matrix(X), y, 1e-2), "mfn"),
                          (TSVM(sp.csr_matrix(X), y[:10], 1e-2, 1.0), "tsvm")):
        assert solvers[name].blas_threads(problem) == 1



@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_a_bad_blas_threads_declaration_is_a_clear_error(bad):
    from ssl_opt.exceptions import InvalidInputError

    class BadThreads(ThreadProbe):
        name = "test-bad-threads"

        def blas_threads(self, problem):
            return bad

    problem = LapSVM(np.eye(4), np.eye(4), np.array([1.0, -1.0]), 1.0, 1.0)
    with pytest.raises(InvalidInputError, match="blas_threads"):
        BadThreads().solve(problem)
