"""``max_iter``, ``tol`` and ``verbose`` on every estimator, the ConvergenceWarning, and the
progress reports of :mod:`ssl_opt.progress`."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_blobs, make_moons
from sklearn.exceptions import ConvergenceWarning

import ssl_opt
from ssl_opt import progress
from ssl_opt.estimators import (
    EREClassifier,
    LaplacianAssignment,
    LapRLSC,
    LapSVC,
    LinearL2SVC,
    LRLClassifier,
    NPKLKernel,
    TransductiveSVC,
)

ESTIMATORS = [LapSVC, LapRLSC, LinearL2SVC, TransductiveSVC, LaplacianAssignment,
              EREClassifier, LRLClassifier, NPKLKernel]


def _moons(n=160, labeled=10, seed=0):
    X, t = make_moons(n, noise=0.1, random_state=seed)
    y = np.full(n, -1)
    y[:labeled] = t[:labeled]
    return X, y


def _blobs(n=150, labeled=15, seed=0):
    X, t = make_blobs(n, centers=3, random_state=seed)
    y = np.full(n, -1)
    y[:labeled] = t[:labeled]
    return X, y


def _quiet_fit(estimator, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return estimator.fit(X, y)


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_every_estimator_takes_the_iteration_parameters(cls):
    params = cls().get_params()
    assert (params["max_iter"], params["tol"], params["verbose"]) == (None, None, 0)
    assert "max_iter :" in cls.__doc__ and "verbose :" in cls.__doc__


@pytest.mark.parametrize("make", [
    lambda: LapSVC(), lambda: LapRLSC(), lambda: LinearL2SVC(), lambda: LaplacianAssignment(),
    lambda: LRLClassifier(), lambda: EREClassifier(alpha=5.0)])
def test_max_iter_and_tol_do_not_change_the_solver_auto_picks(make):
    """The choice is made on the problem; a cap the chosen solver lacks is not a reason to
    pick another one (a direct solve has none)."""
    X, y = _moons()
    plain = _quiet_fit(make(), X, y)
    capped = _quiet_fit(make().set_params(max_iter=1000, tol=1e-6), X, y)
    assert capped.solution_.solver == plain.solution_.solver
    assert capped.solution_.solver == ssl_opt.select(plain.problem_).solver
    used = capped.solution_.info["options"]
    for name in ("max_iter", "tol"):
        declared = name in ssl_opt.registry.get_solver(capped.solution_.solver).options
        assert (used.get(name) == capped.get_params()[name]) is declared


@pytest.mark.parametrize("make, data", [
    (lambda: LapSVC(max_iter=1), _moons), (lambda: LinearL2SVC(max_iter=1), _moons),
    (lambda: LaplacianAssignment(max_iter=3), _moons), (lambda: NPKLKernel(max_iter=1), _blobs)])
def test_a_cap_that_stops_the_solver_warns_and_bounds_n_iter(make, data):
    X, y = data()
    uncapped = _quiet_fit(make().set_params(max_iter=None), X, y)
    estimator = make()
    cap = estimator.max_iter
    assert np.max(uncapped.n_iter_) > cap  # the cap binds on this instance
    with pytest.warns(ConvergenceWarning, match="ended 'max_iterations'") as record:
        estimator.fit(X, y)
    assert np.max(estimator.n_iter_) <= cap
    assert estimator.solution_.status == "max_iterations"
    hits = [w for w in record if issubclass(w.category, ConvergenceWarning)]
    assert hits[0].filename == __file__  # points at this fit call, not at the package


def test_one_vs_rest_classes_each_get_the_cap():
    X, y = _blobs()
    free = _quiet_fit(LapSVC(), X, y)
    with pytest.warns(ConvergenceWarning, match=r"newton solve \(class \d\) ended"):
        capped = LapSVC(max_iter=1).fit(X, y)
    assert len(capped.n_iter_) == 3 and np.all(capped.n_iter_ <= 1)
    assert np.max(free.n_iter_) > 1
    assert [s.solver for s in capped.solution_] == [s.solver for s in free.solution_]


def test_a_looser_tol_stops_sooner():
    X, y = _moons()
    tight = _quiet_fit(LaplacianAssignment(tol=1e-10), X, y)
    loose = _quiet_fit(LaplacianAssignment(tol=1e-3), X, y)
    assert loose.solution_.solver == tight.solution_.solver
    assert loose.n_iter_ < tight.n_iter_
    assert loose.solution_.info["options"]["tol"] == 1e-3


@pytest.mark.parametrize("estimator, match", [
    (LapRLSC(max_iter=5, solver="laprls-direct"), "'laprls-direct' has no max_iter"),
    (TransductiveSVC(max_iter=5, solver="tsvm"), "'tsvm' has no max_iter"),
    (LapSVC(max_iter=5, solver_options={"max_iter": 6}), "disagree"),
    (LapSVC(max_iter=0), "max_iter must be >= 1"),
    (LapSVC(tol=-1.0), "tol must be > 0"),
    (LapSVC(verbose=-1), "verbose must be >= 0"),
    (LapSVC(max_iter=2.5), "max_iter must be an integer"),
])
def test_bad_iteration_parameters_are_named(estimator, match):
    X, y = _moons()
    with pytest.raises(ValueError, match=match):
        estimator.fit(X, y)


def test_verbose_reports_each_solve_and_zero_is_silent(capfd):
    X, y = _moons()
    LapSVC().fit(X, y)
    assert capfd.readouterr().err == ""
    est = LapSVC(verbose=1).fit(X, y)
    err = capfd.readouterr().err
    assert (f"[LapSVC] newton: optimal after {est.n_iter_} iterations" in err)
    LapSVC(verbose=2).fit(X, y)
    rows = [line for line in capfd.readouterr().err.splitlines()
            if line.startswith("[LapSVC] newton  iteration")]
    assert len(rows) == len(est.solution_.history)


def test_verbose_true_is_one_and_false_is_silent(capfd):
    X, y = _moons()
    LapSVC(verbose=False).fit(X, y)
    assert capfd.readouterr().err == ""
    est = LapSVC(verbose=True).fit(X, y)
    err = capfd.readouterr().err
    assert f"[LapSVC] {est.solution_.solver}: optimal after {est.n_iter_} iterations" in err
    assert not [line for line in err.splitlines()  # no per-iteration rows: that is verbose=2
                if line.startswith(f"[LapSVC] {est.solution_.solver}  iteration")]


def test_verbose_two_shows_the_classes_of_a_one_vs_rest_solve(capfd):
    X, y = _blobs()
    est = LapSVC(verbose=2).fit(X, y)
    err = capfd.readouterr().err
    solver = est.solution_[0].solver
    assert err.count(f"{solver}: optimal after") >= 3


class _Recorder:
    def __init__(self):
        self.events = []

    def solve_started(self, solver):
        self.events.append(("start", solver))

    def row_recorded(self, row):
        self.events.append(("row", dict(row)))

    def solve_finished(self, solver, solution):
        self.events.append(("end", solver, solution))


def test_a_listener_sees_every_row_the_solver_records():
    X, y = _moons()
    problem = LapSVC().fit(X, y).problem_
    recorder = _Recorder()
    with progress.listening(recorder):
        solution = ssl_opt.solve(problem, solver="newton")
    assert recorder.events[0] == ("start", "newton")
    assert recorder.events[-1] == ("end", "newton", solution)
    rows = [e[1] for e in recorder.events if e[0] == "row"]
    assert rows == solution.history.rows
    assert progress.active() is None  # the listener is gone after the block


def test_a_listener_hears_of_a_solve_that_raised():
    class Failing(ssl_opt.solvers.Solver):
        name = "failing-for-test"
        problem_types = (ssl_opt.problems.LapSVM,)

        def _solve(self, problem):
            raise RuntimeError("boom")

    X, y = _moons()
    problem = LapSVC().fit(X, y).problem_
    recorder = _Recorder()
    with progress.listening(recorder), pytest.raises(RuntimeError, match="boom"):
        Failing().solve(problem)
    assert recorder.events == [("start", "failing-for-test"),
                               ("end", "failing-for-test", None)]
