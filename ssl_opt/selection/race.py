r"""The safeguard when selection is unsure: a slice of the iterative candidate, extrapolated
on its own residual, against a rival's predicted time.

An iterative solver's time is its iteration count times its cost per iteration, and the
count is the uncertain part: PCG's iterations per √κ ranged 0.34–6.5 over the instances of
``benchmarks/bench_instance_selection.py``, where a factorization's time moves little. So when
the two fastest candidates are predicted within ``RACE_WITHIN`` of each other, one of them
``resumable`` (``Solver.resumable``: it takes ``time_limit`` and ``warm_start`` and records
``grad_norm`` in units of its ``tol``) and the other not, :func:`plan_race` plans a race and
:func:`run_race` runs it:

1. the resumable solver runs for ``RACE_SHARE`` of the rival's predicted time ``T``;
2. finished: that is the answer;
3. otherwise the rate at which its residual fell over the second half of the slice (the best
   residual so far, on a log scale: CG's is not monotone) gives the iterations left to
   ``tol``; at the slice's time per iteration, if the slice plus those fit within ``T`` it
   resumes exactly where it stopped (``warm_start`` with the stopped Solution: its
   conjugate directions and products kept, nothing lost), else the rival runs.

Losing the race costs the slice, ``RACE_SHARE·T``: a resumable solver that would have taken
10× the rival's time costs the rival's time and the slice instead (1.15× when the rival's
prediction is right). The constants were chosen by replaying the rule on
the PCG histories of that benchmark's 64 binary instances (the race keeps 61 within 1.25× of
the faster solver, the prediction alone 57); docs/selection.md reports the benchmark run with
the race on, and on instances that were not used to choose them.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from ssl_opt import registry
from ssl_opt.solution import OPTIMAL, TIME_LIMIT, History, Solution

#: Race when the resumable candidate and its rival are predicted within this factor.
RACE_WITHIN = 4.0
#: The resumable candidate runs for this share of the rival's predicted time.
RACE_SHARE = 0.15
#: ...and only when both are predicted to take at least this long (below, a wrong pick costs
#: milliseconds and the slice's restart costs as much).
RACE_ABOVE = 0.02
#: Iterations a slice needs before its residual's rate means anything.
MIN_SLICE_ITERATIONS = 4
#: Options a race cannot honor as given (it sets them, or they fix the solver's run).
RACE_EXCLUDES = frozenset({"time_limit", "warm_start", "max_iter", "callback",
                           "early_stopping"})


@dataclass(frozen=True)
class RacePlan:
    """Race ``resumable`` for ``slice_seconds`` against ``rival`` (predicted ``rival_seconds``;
    ``resumable`` predicted ``resumable_seconds``)."""

    resumable: str
    rival: str
    resumable_seconds: float
    rival_seconds: float

    @property
    def slice_seconds(self) -> float:
        return RACE_SHARE * self.rival_seconds

    def describe(self) -> str:
        return (f"unsure between {self.resumable} (~{self.resumable_seconds:.3g} s) and "
                f"{self.rival} (~{self.rival_seconds:.3g} s), predicted within "
                f"{RACE_WITHIN:g}x: solve runs {self.resumable} for {self.slice_seconds:.3g} s "
                f"({RACE_SHARE:g} of {self.rival}'s), continues it if its residual "
                f"extrapolates to tol within {self.rival}'s time, else runs {self.rival}")


def plan_race(ranked: list[str], predictions: dict, solvers: dict) -> RacePlan | None:
    """The race among ``ranked`` (exact fast candidates, fastest predicted first; the first is
    the choice), or None when the choice is clear: the first resumable and the first other
    candidate, both predicted within ``RACE_WITHIN`` of the choice and above
    ``RACE_ABOVE``."""
    if not ranked:
        return None
    top = predictions[ranked[0]].seconds
    close = [n for n in ranked if predictions[n].seconds <= RACE_WITHIN * top]
    resumable = next((n for n in close if getattr(solvers[n], "resumable", False)), None)
    rival = next((n for n in close if not getattr(solvers[n], "resumable", False)), None)
    if resumable is None or rival is None:
        return None
    t_resumable, t_rival = predictions[resumable].seconds, predictions[rival].seconds
    if not (min(t_resumable, t_rival) >= RACE_ABOVE and math.isfinite(max(t_resumable,
                                                                           t_rival))):
        return None
    return RacePlan(resumable, rival, float(t_resumable), float(t_rival))


def extrapolated_seconds(history: History, tol: float) -> float:
    """Seconds to reach ``grad_norm ≤ tol`` predicted from a partial run's ``history``: its
    elapsed time plus the iterations left at the rate the best residual fell over the second
    half of the run, each at the run's mean time per iteration; inf when the run is too short
    or the residual did not fall."""
    g = history["grad_norm"]
    elapsed = history["time"]
    k = len(g) - 1
    if k < MIN_SLICE_ITERATIONS or not np.all(np.isfinite(g)) or np.any(g <= 0):
        return math.inf
    best = np.log(np.minimum.accumulate(g))
    half = k // 2
    rate = (best[half] - best[k]) / (k - half)
    if not rate > 0:
        return math.inf
    left = max(best[k] - math.log(tol), 0.0) / rate
    return float(elapsed[k] + left * elapsed[k] / k)


def run_race(problem, plan: RacePlan, options: dict) -> Solution:
    """Run ``plan`` on ``problem`` with the user's ``options`` (none of ``RACE_EXCLUDES``);
    the solution's ``time`` counts the whole race and ``info["race"]`` says what happened."""
    began = time.perf_counter()
    resumable = registry.get_solver(plan.resumable)
    first = resumable.solve(problem, **options, time_limit=plan.slice_seconds)
    head = (f"raced {plan.resumable} for {plan.slice_seconds:.3g} s against {plan.rival} "
            f"(predicted {plan.rival_seconds:.3g} s): ")
    if first.status == OPTIMAL:
        first.info["race"] = head + f"finished in the slice ({first.iterations} iterations)"
        return first
    if first.status == TIME_LIMIT:
        tol = options.get("tol", resumable.options["tol"].default)
        estimate = extrapolated_seconds(first.history, tol)
        seen = (f"{first.iterations} iterations, residual {first.history['grad_norm'][-1]:.2g}"
                f" (tol {tol:g}), extrapolated to {estimate:.3g} s")
        if estimate <= plan.rival_seconds:
            second = resumable.solve(problem, **options, warm_start=first)
            solution = _joined(first, second)
            solution.info["race"] = head + seen + f"; continued {plan.resumable}"
            solution.time = time.perf_counter() - began
            return solution
        why = seen + f"; switched to {plan.rival}"
    else:
        why = f"it ended {first.status!r} after {first.iterations} iterations; switched"
    solution = registry.get_solver(plan.rival).solve(problem, **options)
    solution.info["race"] = head + why
    solution.info["race_lost_seconds"] = first.time  # the slice, spent on nothing
    solution.time = time.perf_counter() - began
    return solution


def _joined(first: Solution, second: Solution) -> Solution:
    """``second`` (``first`` resumed: its iterations counted on) with both runs' history, the
    second's times offset by the first's."""
    history = History()
    history.rows = list(first.history.rows) + [
        {**row, "time": row.get("time", 0.0) + first.time} for row in second.history.rows[1:]]
    second.history = history
    return second
