"""Solve a CVXPY program until it is optimal: a first solve, then retries along a fixed ladder.

An interior-point solve of a small, well-posed program can still end ``optimal_inaccurate``
(Clarabel's *AlmostSolved*): near the optimum a step is cut short by round-off, and where that
happens depends on the CPU's floating-point paths (OpenBLAS picks its kernels by CPU; the
``OPENBLAS_CORETYPE`` environment variable forces another) and even on array alignment. The
same program then solves to ``optimal`` along a slightly different path. The ladder:

1. the solver asked for, at the reference's tight tolerances (:data:`TIGHT_OPTIONS`);
2. the same solver and tolerances along another path (:data:`RETRY_SETTINGS`): Clarabel with
   shorter steps, without equilibration, without chordal decomposition of PSD cones;
3. when no solver was pinned (``cvxpy_solver=None``), SCS at ``eps = 1e-9``, a first-order
   method whose accuracy does not hinge on the last interior-point steps.

The first attempt that ends ``optimal`` wins. When none does, the best non-optimal one (the
smallest constraint violation, then the better objective) is returned, with every attempt's
outcome recorded. Statuses that are certificates (``infeasible``, ``unbounded``) end the ladder
at once: another path would not change them; so does a time limit once it is used up.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache

import numpy as np

from ssl_opt.optional import cvxpy as cp

#: Tighter than Clarabel's 1e-8 defaults: the reference is the ground truth of certificates.
TIGHT_OPTIONS = {
    "CLARABEL": {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10},
    "SCS": {"eps_abs": 1e-9, "eps_rel": 1e-9, "max_iters": 200_000},
    "OSQP": {"eps_abs": 1e-10, "eps_rel": 1e-10, "max_iter": 1_000_000, "polishing": True},
}

#: Other paths of the same solver at the same tolerances, tried in order after a first solve
#: that ends short of optimal. ``psd_only`` settings change nothing without a PSD cone.
RETRY_SETTINGS: dict[str, tuple[tuple[str, dict, bool], ...]] = {
    "CLARABEL": (
        ("shorter steps", {"max_step_fraction": 0.95}, False),
        ("no equilibration", {"equilibrate_enable": False}, False),
        ("no chordal decomposition", {"chordal_decomposition_enable": False}, True),
    ),
}

#: The solver of the first attempt when none is pinned, then the other solver to fall back on.
DEFAULT_SOLVER = "CLARABEL"
FALLBACK_SOLVER = "SCS"

#: How each CVXPY solver names its wall-clock limit in seconds.
TIME_LIMIT_KEYS = {"CLARABEL": "time_limit", "SCS": "time_limit_secs", "OSQP": "time_limit"}

#: A retry may take at most this many times the first attempt's seconds, plus the slack.
RETRY_TIME_FACTOR = 5.0
RETRY_TIME_SLACK = 2.0

#: Statuses with a point to read.
SOLVED = ("optimal", "optimal_inaccurate")  # cvxpy.OPTIMAL, cvxpy.OPTIMAL_INACCURATE

#: Certificates that no other path changes: they stop the ladder. (``user_limit`` does not:
#: it is also an iteration cap; a reached time limit leaves no time for a retry anyway.)
FINAL_STATUSES = ("infeasible", "unbounded")  # cvxpy.INFEASIBLE, cvxpy.UNBOUNDED


@dataclass(frozen=True)
class Attempt:
    """One rung of the ladder: a CVXPY solver and the options passed to it."""

    solver: str
    label: str
    options: dict


@dataclass
class Outcome:
    """What the ladder ended with. ``value`` is what ``recover`` returned for the chosen
    attempt (None when no attempt produced a point); ``attempts`` lists every attempt made as
    ``{"attempt", "solver", "status", "seconds", "objective"}`` (the program's value; NaN when
    the attempt produced no point)."""

    status: str
    attempt: Attempt | None
    value: object = None
    objective: float = float("nan")
    reason: str = ""
    attempts: list[dict] = field(default_factory=list)
    #: The chosen attempt's solver statistics: iterations, solve_time, duality_gap.
    stats: dict = field(default_factory=lambda: {"iterations": 0, "solve_time": None,
                                                 "duality_gap": None})

    @property
    def optimal(self) -> bool:
        return self.status == cp.OPTIMAL


def ladder(prog: cp.Problem, cvxpy_solver: str | None, solver_options: dict | None,
           retries: int | None = None) -> list[Attempt]:
    """The attempts for ``prog``: ``cvxpy_solver`` (None: Clarabel, then SCS as a fallback) at
    tight tolerances, then its other paths. ``solver_options`` override every attempt of the
    pinned (or default) solver, never the fallback's. ``retries`` caps the attempts after the
    first (None: all of them)."""
    first = cvxpy_solver or DEFAULT_SOLVER
    user = dict(solver_options or {})
    base = {**TIGHT_OPTIONS.get(first, {}), **user}
    attempts = [Attempt(first, "first solve", base)]
    psd = _has_psd_cone(prog)
    for label, delta, psd_only in RETRY_SETTINGS.get(first, ()):
        options = {**TIGHT_OPTIONS.get(first, {}), **delta, **user}
        if (psd or not psd_only) and all(options != a.options for a in attempts):
            attempts.append(Attempt(first, label, options))
    if cvxpy_solver is None and FALLBACK_SOLVER in _installed_solvers():
        attempts.append(Attempt(FALLBACK_SOLVER, f"fallback to {FALLBACK_SOLVER}",
                                dict(TIGHT_OPTIONS.get(FALLBACK_SOLVER, {}))))
    return attempts if retries is None else attempts[: 1 + retries]


def solve_until_optimal(prog: cp.Problem, cvxpy_solver: str | None = None,
                        solver_options: dict | None = None, *, recover: Callable | None = None,
                        time_limit: float | None = None, retries: int | None = None,
                        verbose: bool = False) -> Outcome:
    """Solve ``prog`` along :func:`ladder` until an attempt ends ``optimal``.

    ``recover()`` reads the solution out of the program's variables after each attempt that
    produced a point (default: the objective value); the chosen attempt's result is the
    outcome's ``value``. ``time_limit`` (seconds) bounds the whole ladder: the first attempt
    has all of it, a retry what remains (and at most :data:`RETRY_TIME_FACTOR` times the first
    attempt plus :data:`RETRY_TIME_SLACK`). CVXPY's warnings
    (*Solution may be inaccurate*) are passed on only when the outcome is short of optimal.
    """
    recover = recover or (lambda: prog.value)
    start = time.perf_counter()
    best: tuple[tuple, Outcome, list] | None = None
    tried: list[dict] = []
    reason, caught = "", []  # the last attempt's warnings
    for attempt in ladder(prog, cvxpy_solver, solver_options, retries):
        options = dict(attempt.options)
        limit = _attempt_limit(time_limit, time.perf_counter() - start, tried)
        if limit is not None:
            if limit <= 0:
                break
            if attempt.solver in TIME_LIMIT_KEYS:
                options[TIME_LIMIT_KEYS[attempt.solver]] = limit
        began = time.perf_counter()
        with warnings.catch_warnings(record=True) as records:
            warnings.simplefilter("always")
            try:
                prog.solve(solver=attempt.solver, verbose=verbose, **options)
                status = prog.status
            except cp.error.SolverError as exc:
                status, reason = "solver_error", f"{attempt.solver} failed: {exc}"
        caught = records
        tried.append({"attempt": attempt.label, "solver": attempt.solver, "status": status,
                      "seconds": time.perf_counter() - began,
                      "objective": float(prog.value) if status in SOLVED else float("nan")})
        if status in SOLVED:
            # An optimal attempt ends the ladder; only inaccurate ones are ranked.
            merit = ((0, 0.0, 0.0) if status == cp.OPTIMAL else
                     (1, _violation(prog), _sense(prog) * float(prog.value)))
            if best is None or merit < best[0]:
                found = Outcome(status, attempt, recover(), float(prog.value), "", tried,
                                _stats(prog))
                best = (merit, found, caught)
            if status == cp.OPTIMAL:
                break
            continue
        if status != "solver_error":
            reason = f"{attempt.solver} returned status {status!r}"
        if status in FINAL_STATUSES:
            break
    if best is None:
        final = tried[-1]["status"] if tried and tried[-1]["status"] in FINAL_STATUSES else ""
        if final:
            reason = (f"{tried[-1]['solver']} proves the program {final}"
                      + (" (no point satisfies its constraints)" if final == "infeasible"
                         else " (its objective decreases without bound)"))
        outcome = Outcome(final or "failed", None, reason=reason, attempts=tried)
    else:
        _, outcome, caught = best
    if not outcome.optimal:
        for w in caught:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return outcome


@cache
def _installed_solvers() -> tuple[str, ...]:
    return tuple(cp.installed_solvers())  # ~1 ms a call: once per process


def _attempt_limit(time_limit: float | None, elapsed: float, tried: list[dict]
                   ) -> float | None:
    """Seconds the next attempt may take: the first has all of ``time_limit``; a retry what
    remains of it, and at most ``RETRY_TIME_FACTOR`` times the first attempt plus
    ``RETRY_TIME_SLACK``, so that a large program that ends inaccurate does not run for hours."""
    if not tried:
        return time_limit
    cap = RETRY_TIME_FACTOR * tried[0]["seconds"] + RETRY_TIME_SLACK
    return cap if time_limit is None else min(cap, time_limit - elapsed)


def _has_psd_cone(prog: cp.Problem) -> bool:
    if any(isinstance(c, cp.constraints.PSD) for c in prog.constraints):
        return True
    return any(v.attributes.get("PSD") or v.attributes.get("NSD") for v in prog.variables())


def _violation(prog: cp.Problem) -> float:
    """The largest violation of any constraint at the current point (0 without constraints)."""
    worst = 0.0
    for c in prog.constraints:
        try:
            v = np.max(np.abs(c.violation()))
        except (ValueError, TypeError):  # no value recovered for this constraint
            return float("inf")
        worst = max(worst, float(v))
    return worst


def _sense(prog: cp.Problem) -> float:
    return -1.0 if isinstance(prog.objective, cp.Maximize) else 1.0


def _stats(prog: cp.Problem) -> dict:
    stats = prog.solver_stats
    return {"iterations": int(getattr(stats, "num_iters", 0) or 0),
            "solve_time": getattr(stats, "solve_time", None),
            "duality_gap": _duality_gap(stats)}


def _duality_gap(stats) -> float | None:
    """|primal − dual| objective where the solver reports both (Clarabel through CVXPY
    versions that pass its solution on as ``extra_stats``); None otherwise."""
    extra = getattr(stats, "extra_stats", None)
    p, d = getattr(extra, "obj_val", None), getattr(extra, "obj_val_dual", None)
    if p is None or d is None:
        return None
    return abs(float(p) - float(d))
