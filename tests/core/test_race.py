"""The race ``solve`` runs when selection is unsure (ssl_opt/selection/race.py): its plan, the
extrapolation of a partial run, and the answer it returns, checked against forced runs."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

import ssl_opt
from ssl_opt.builders import graph_laplacian_from_data, rbf_kernel
from ssl_opt.datasets import two_moons
from ssl_opt.problems import LapRLS
from ssl_opt.selection import race
from ssl_opt.selection.race import RacePlan, extrapolated_seconds, plan_race, run_race
from ssl_opt.solution import History


def _laprls(n, gamma_A):
    data = two_moons(n=n, n_labeled=10, noise=0.1, seed=5)
    K = rbf_kernel(data.X, sigma=0.35)
    L = graph_laplacian_from_data(data.X, n_neighbors=6)
    return lambda: LapRLS(K, L, data.y, gamma_A, 1.0)


def _history(grad_norms, seconds_per_iteration=0.01):
    history = History()
    for k, g in enumerate(grad_norms):
        history.append(iteration=k, grad_norm=g, time=k * seconds_per_iteration)
    return history


def test_extrapolation_is_exact_on_a_linear_rate_and_refuses_what_it_cannot_read():
    # The residual falls tenfold every 10 iterations: 1e-8 is 80 iterations from 1.
    history = _history([10 ** (-k / 10) for k in range(21)])
    assert extrapolated_seconds(history, 1e-8) == pytest.approx(0.80, rel=1e-9)
    # CG's residual is not monotone: the best so far sets the rate.
    bumpy = _history([10 ** (-k / 10) * (3.0 if k % 2 else 1.0) for k in range(21)])
    assert extrapolated_seconds(bumpy, 1e-8) == pytest.approx(0.80, rel=0.05)
    assert extrapolated_seconds(_history([1.0, 0.5, 0.25]), 1e-8) == math.inf  # too short
    assert extrapolated_seconds(_history([1.0] * 10), 1e-8) == math.inf  # not falling


def _solvers(**resumable):
    return {name: SimpleNamespace(resumable=flag) for name, flag in resumable.items()}


def _predicted(**seconds):
    return {name: SimpleNamespace(seconds=s) for name, s in seconds.items()}


def test_a_race_is_planned_only_when_the_choice_is_close_and_not_tiny():
    solvers = _solvers(pcg=True, direct=False, newton=False)
    plan = plan_race(["direct", "pcg", "newton"], _predicted(direct=0.2, pcg=0.5, newton=1.0),
                     solvers)
    assert plan == RacePlan("pcg", "direct", 0.5, 0.2)
    assert plan.slice_seconds == pytest.approx(race.RACE_SHARE * 0.2)
    assert "pcg" in plan.describe() and "direct" in plan.describe()
    # The resumable candidate first, its rival the next non-resumable one.
    assert plan_race(["pcg", "newton", "direct"], _predicted(pcg=0.2, newton=0.3, direct=0.4),
                     solvers) == RacePlan("pcg", "newton", 0.2, 0.3)
    far = race.RACE_WITHIN * 1.01
    assert plan_race(["direct", "pcg"], _predicted(direct=0.2, pcg=0.2 * far), solvers) is None
    tiny = race.RACE_ABOVE / 2
    assert plan_race(["direct", "pcg"], _predicted(direct=tiny, pcg=0.1), solvers) is None
    assert plan_race(["direct", "newton"], _predicted(direct=0.2, newton=0.3), solvers) is None
    assert plan_race([], {}, solvers) is None


def test_a_lost_race_runs_the_rival_and_counts_the_slice():
    build = _laprls(300, 1e-6)  # PCG needs hundreds of iterations here
    forced = ssl_opt.solve(build(), solver="laprls-direct")
    # A rival predicted at 1 ms: the slice (0.15 ms) ends PCG before its rate can be read.
    solution = run_race(build(), RacePlan("pcg", "laprls-direct", 1.0, 1e-3), {})
    assert solution.solver == "laprls-direct" and solution.status == "optimal"
    assert solution.objective == pytest.approx(forced.objective, rel=1e-9)
    assert "switched to laprls-direct" in solution.info["race"]
    assert solution.time > 0


def test_a_won_race_continues_from_the_slice_and_reaches_the_optimum(monkeypatch):
    build = _laprls(300, 1e-4)  # PCG: ~900 iterations, ~60 ms here
    forced = ssl_opt.solve(build(), solver="laprls-direct")
    # A slice of 10 ms (a tiny share of a rival predicted at 10,000 s) stops PCG after some
    # iterations, far from tol; any extrapolation is under the rival's time: PCG continues.
    monkeypatch.setattr(race, "RACE_SHARE", 1e-6)
    solution = run_race(build(), RacePlan("pcg", "laprls-direct", 1.0, 1e4), {})
    assert solution.solver == "pcg" and solution.status == "optimal"
    assert "continued pcg" in solution.info["race"]
    assert solution.objective == pytest.approx(forced.objective, rel=1e-7)
    assert solution.iterations == int(solution.history["iteration"][-1])
    assert np.all(np.diff(solution.history["time"]) >= 0)
    assert np.all(np.diff(solution.history["iteration"]) == 1)


def test_a_race_that_finishes_in_its_slice_is_the_answer():
    build = _laprls(300, 1.0)  # well conditioned: PCG converges in a few iterations
    solution = run_race(build(), RacePlan("pcg", "laprls-direct", 0.5, 100.0), {"tol": 1e-9})
    assert solution.solver == "pcg" and solution.status == "optimal"
    assert "finished in the slice" in solution.info["race"]


def test_solve_runs_the_planned_race_unless_told_not_to(monkeypatch):
    import ssl_opt.selection.select as select_module

    plan = RacePlan("pcg", "laprls-direct", 0.5, 100.0)
    monkeypatch.setattr(select_module, "plan_race", lambda *args: plan)
    build = _laprls(200, 1.0)
    selection = ssl_opt.select(build())
    assert selection.race == plan and "race: unsure between pcg" in selection.explain()
    raced = ssl_opt.solve(build())
    assert "race" in raced.info and raced.info["selection_seconds"] > 0
    assert "race" not in ssl_opt.solve(build(), race=False).info
    # An option that fixes the run (here the iteration cap) runs the choice alone.
    assert "race" not in ssl_opt.solve(build(), max_iter=10_000).info
    with pytest.raises(ValueError, match="race"):
        ssl_opt.solve(build(), race="yes")


def test_pcg_stopped_by_its_time_limit_resumes_exactly_on_the_same_problem():
    build = _laprls(300, 1e-3)
    problem = build()
    whole = ssl_opt.solve(problem, solver="pcg")
    # Stopped after each of its first five iterations (a limit no iteration meets), then run
    # to the end: the same iterates as one uninterrupted run.
    part = ssl_opt.solve(problem, solver="pcg", time_limit=1e-12)
    for k in range(2, 6):
        assert part.status == "time_limit" and part.iterations == k - 1
        part = ssl_opt.solve(problem, solver="pcg", time_limit=1e-12, warm_start=part)
    final = ssl_opt.solve(problem, solver="pcg", warm_start=part)
    assert final.status == "optimal" and final.iterations == whole.iterations
    np.testing.assert_allclose(final.x["alpha"], whole.x["alpha"], rtol=0, atol=1e-12 * np.max(
        np.abs(whole.x["alpha"])))
    # On another problem object (even with the same data) only α and b carry over.
    restarted = ssl_opt.solve(build(), solver="pcg", warm_start=part)
    assert restarted.status == "optimal" and restarted.history["iteration"][0] == 0


def test_a_stopped_solution_pickles_without_its_resume_state():
    import pickle

    problem = _laprls(200, 1e-3)()
    part = ssl_opt.solve(problem, solver="pcg", time_limit=1e-12)
    assert part.resume is not None
    copy = pickle.loads(pickle.dumps(part))
    assert copy.resume is None and copy.iterations == part.iterations
    np.testing.assert_array_equal(copy.x["alpha"], part.x["alpha"])
