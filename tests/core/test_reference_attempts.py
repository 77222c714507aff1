"""The reference's retry ladder (reference/attempts.py): a CVXPY solve that ends short of optimal
is retried along other paths, the solution says which attempt produced it, and nothing is
claimed that the attempts do not show.

An inaccurate first attempt is forced deterministically (SCS stopped after 5 iterations), so
these tests do not depend on where this CPU's rounding cuts an interior-point path short; the
optimum they compare with is Newton's on the same problem (exact up to round-off).
"""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np
import pytest

import ssl_opt
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.problems import NPKL
from ssl_opt.reference import attempts
from ssl_opt.reference.attempts import Attempt, ladder, solve_until_optimal
from ssl_opt.solution import INACCURATE, OPTIMAL

STOPPED_SCS = Attempt("SCS", "SCS stopped early", {"max_iters": 5, "eps_abs": 1e-9,
                                                    "eps_rel": 1e-9})
TIGHT_CLARABEL = Attempt("CLARABEL", "Clarabel", dict(attempts.TIGHT_OPTIONS["CLARABEL"]))


@pytest.fixture(scope="module")
def moons():
    from ssl_opt.builders import graph_laplacian_from_data, rbf_kernel
    from ssl_opt.datasets.synthetic import two_moons
    from ssl_opt.problems import LapSVM

    data = two_moons(n=50, n_labeled=6, noise=0.12, seed=1)
    return LapSVM(rbf_kernel(data.X, sigma=0.4), graph_laplacian_from_data(data.X, 6),
                  data.y, 1e-2, 1.0)


def _psd_program():
    Z = cp.Variable((3, 3), PSD=True)
    return cp.Problem(cp.Minimize(cp.trace(Z) - Z[0, 1]), [Z[0, 0] == 1])


def _box_program():
    x = cp.Variable(3)
    return cp.Problem(cp.Minimize(cp.sum_squares(x - 2)), [x <= 1])


def _labels(rungs):
    return [(a.solver, a.label) for a in rungs]


def test_ladder_default_pinned_and_capped():
    box, psd = _box_program(), _psd_program()
    default = ladder(box, None, None)
    assert [a.solver for a in default] == ["CLARABEL"] * 3 + ["SCS"]
    assert default[0].options == attempts.TIGHT_OPTIONS["CLARABEL"]
    # The chordal-decomposition rung only where there is a PSD cone to decompose.
    assert "no chordal decomposition" not in [a.label for a in default]
    assert "no chordal decomposition" in [a.label for a in ladder(psd, None, None)]
    # A pinned solver is never swapped for another.
    assert {a.solver for a in ladder(box, "CLARABEL", None)} == {"CLARABEL"}
    assert _labels(ladder(box, "OSQP", None)) == [("OSQP", "first solve")]
    assert len(ladder(box, None, None, retries=0)) == 1
    assert len(ladder(box, None, None, retries=1)) == 2
    # The user's options override every attempt of their solver, not the fallback's.
    rungs = ladder(box, None, {"max_iter": 7})
    assert all(a.options["max_iter"] == 7 for a in rungs if a.solver == "CLARABEL")
    assert "max_iter" not in rungs[-1].options
    # A rung that the user's options make identical to an earlier one is not run twice.
    same = ladder(box, "CLARABEL", {"max_step_fraction": 0.95})
    assert [a.label for a in same].count("shorter steps") == 0


def test_a_retry_that_reaches_optimal_is_the_solution(moons, monkeypatch):
    monkeypatch.setattr(attempts, "ladder", lambda *a, **k: [STOPPED_SCS, TIGHT_CLARABEL])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ref = ssl_opt.solve(moons, solver="cvxpy")
    exact = ssl_opt.solve(moons, solver="newton")
    assert ref.status == OPTIMAL and ref.info["attempt"] == "Clarabel"
    assert ref.info["cvxpy_solver"] == "CLARABEL"
    tried = ref.info["attempts"]
    assert [t["status"] for t in tried] == ["optimal_inaccurate", "optimal"]
    assert tried[0]["objective"] > tried[1]["objective"]  # the stopped SCS point is worse
    assert abs(ref.objective - exact.objective) <= 1e-8 * max(1.0, exact.objective)
    # CVXPY's "may be inaccurate" warning belongs to an attempt that was superseded.
    assert not [w for w in caught if "inaccurate" in str(w.message)]


def test_no_optimal_attempt_returns_the_best_and_says_inaccurate(moons, monkeypatch):
    longer = Attempt("SCS", "SCS stopped later", {**STOPPED_SCS.options, "max_iters": 8})
    monkeypatch.setattr(attempts, "ladder", lambda *a, **k: [STOPPED_SCS, longer])
    with pytest.warns(UserWarning, match="inaccurate"):
        ref = ssl_opt.solve(moons, solver="cvxpy")
    tried = ref.info["attempts"]
    assert ref.status == INACCURATE and len(tried) == 2
    assert {t["status"] for t in tried} == {"optimal_inaccurate"}
    # The program's one constraint is the kernel tie u = Rh (reference/model.py); the ladder
    # ranks the stopped points by its violation, then objective: here the lower objective.
    best = min(tried, key=lambda t: t["objective"])
    assert ref.info["attempt"] == best["attempt"]
    assert ref.info["cvxpy_value"] == pytest.approx(best["objective"], rel=1e-12)
    # The model's objective at the recovered α (Kα = Rh exactly) differs from the program's
    # value only by the tie's violation at a stopped point.
    assert ref.objective == pytest.approx(best["objective"], rel=1e-5)
    exact = ssl_opt.solve(moons, solver="newton")
    assert ref.objective > exact.objective + 1e-9  # really short of the optimum


def test_certificates_and_used_up_time_end_the_ladder():
    x = cp.Variable(2)
    infeasible = cp.Problem(cp.Minimize(cp.sum(x)), [x >= 1, x <= 0])
    out = solve_until_optimal(infeasible)
    # A certificate of infeasibility or unboundedness is the outcome's status, not "failed".
    assert out.status == "infeasible" and out.attempt is None and len(out.attempts) == 1
    assert "infeasible" in out.reason
    unbounded = cp.Problem(cp.Minimize(cp.sum(x)))
    out = solve_until_optimal(unbounded)
    assert out.status == "unbounded" and len(out.attempts) == 1 and "unbounded" in out.reason


def test_time_limit_bounds_the_whole_ladder(monkeypatch):
    """The first attempt has the whole limit; a retry only what remains, and at most a few
    times the first attempt."""
    seen = []
    real = cp.Problem.solve

    def slow(self, *args, **kwargs):
        seen.append(kwargs.get("time_limit"))
        out = real(self, *args, **kwargs)
        self._status = cp.OPTIMAL_INACCURATE  # every attempt short of optimal
        return out

    monkeypatch.setattr(cp.Problem, "solve", slow)
    out = solve_until_optimal(_box_program(), "CLARABEL", time_limit=30.0)
    assert len(seen) == len(out.attempts) == 3 and seen[0] == 30.0
    first = out.attempts[0]["seconds"]
    cap = attempts.RETRY_TIME_FACTOR * first + attempts.RETRY_TIME_SLACK
    assert all(0 < later <= min(cap, 30.0 - first) for later in seen[1:])
    assert out.status == cp.OPTIMAL_INACCURATE
    # Without a limit, a retry still gets at most the cap.
    seen.clear()
    solve_until_optimal(_box_program(), "CLARABEL")
    assert seen[0] is None and all(0 < later <= cap + 1.0 for later in seen[1:])


def test_the_reference_through_a_pinned_solver_and_bad_options(moons):
    sol = ssl_opt.solve(moons, solver="cvxpy", cvxpy_solver="clarabel")
    assert sol.status == OPTIMAL and sol.info["cvxpy_solver"] == "CLARABEL"
    for bad in (-1, 1.5, "2", True):
        with pytest.raises(InvalidInputError, match="retries"):
            ssl_opt.solve(moons, solver="cvxpy", retries=bad)
    with pytest.raises(InvalidInputError, match="cvxpy_solver"):
        ssl_opt.solve(moons, solver="cvxpy", cvxpy_solver="NOSUCHSOLVER")


def test_boundary_sdp_reports_its_attempts():
    """The boundary SDP runs the same ladder on its reduced program."""
    from ssl_opt.builders import knn_graph
    from ssl_opt.datasets.clusters import double_spiral, pairwise_constraints

    d = double_spiral(n=18, seed=4)
    pairs, labels = pairwise_constraints(d.y, 10, seed=4)
    p = NPKL(knn_graph(d.X, n_neighbors=3), pairs, labels, C=1.0, loss="squared_hinge",
             delta=0.02)
    full = ssl_opt.solve(p, solver="cvxpy")
    bnd = ssl_opt.solve(p, solver="cvxpy-boundary")
    for sol in (full, bnd):
        assert sol.status == OPTIMAL, sol.info["attempts"]
        assert sol.info["attempts"][-1]["status"] == "optimal"
    assert abs(full.objective - bnd.objective) <= 1e-7 * max(1.0, abs(full.objective))
    assert np.linalg.eigvalsh(bnd.x["Z"])[0] > -1e-8
