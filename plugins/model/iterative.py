"""One run of a generic iterative solver: what every method writes once.

In the spirit of JAXopt's ``init_state/update/run``, a generic solver keeps its method (the
step and the residuals it reads off the step) and a :class:`Run` keeps the rest:

* the clock and the stop for the budget: ``max_iter`` iterations (status ``max_iterations``)
  and the ``time_limit`` option every generic solver takes (status ``time_limit``), each
  returning the best iterate, never a crash;
* the history, one row per check with its elapsed time, and the ``verbose`` line printed
  from the same row;
* the best iterate with the multipliers the certificate starts from;
* the status at the end: when the method did not stop on its certificate, the model's full
  certificate (:func:`~ssl_opt.plugins.model.common.certificate_check` with a long
  minimization over the subgradients) decides, so a point that is optimal is reported
  ``optimal`` and one that is not keeps the method's honest reason (``max_iterations``,
  ``time_limit``, ``stalled``);
* infeasible constraints caught early: when the constraint residual a row records
  (``feasibility``, or ADMM's ``primal``) has not halved from the first half of the run to
  the second, at iterations :data:`FEASIBILITY_CHECK_AFTER` × 4^k, CVXPY is asked whether the
  constraints alone are feasible (:func:`~ssl_opt.modeling.diagnosis.infeasibility`); when
  they are not the run stops ``infeasible`` (:meth:`Run.interruption`) instead of spending
  its iteration cap;
* divergence caught early: a solver that reports its objective to
  :meth:`Run.watch_divergence` stops ``unbounded`` once the model's diagnosis proves a
  recession direction, instead of running to its cap (and past the magnitudes where the
  proof still holds).
"""

from __future__ import annotations

import time

import numpy as np

from ssl_opt._validation import check_bool, check_positive
from ssl_opt.modeling.diagnosis import DIVERGED, infeasibility, unboundedness
from ssl_opt.modeling.model import Model
from ssl_opt.plugins.model.common import certificate_check, kink_tolerance
from ssl_opt.solution import (
    INFEASIBLE,
    MAX_ITERATIONS,
    OPTIMAL,
    TIME_LIMIT,
    UNBOUNDED,
    History,
)
from ssl_opt.solvers import Option

#: The options every generic iterative solver takes with the same meaning.
VERBOSE_OPTION = Option(False, "print a progress line at every check", check_bool)
#: The ``tol`` of the Newton-type solvers that stop on the whole certificate.
CERTIFICATE_TOL_OPTION = Option(1e-8, "stop when the model's certificate (stationarity, "
                                "feasibility) is at most tol", check_positive)

#: The full certificate at the end: iterations and relative accuracy of its minimization.
FINAL_CHECK_ITERS, FINAL_CHECK_TOL = 2000, 1e-10

#: First iteration at which a stagnant constraint residual is tested for infeasibility.
FEASIBILITY_CHECK_AFTER = 200
#: Past the divergence mark, calls to ``watch_divergence`` between tests on a plateau (an
#: objective that stalls at round-off short of the next mark).
RETEST = 50


class Run:
    """The bookkeeping of one solve of ``model`` by the solver named ``name`` (module
    docstring). ``best`` is ``(score, point, multipliers)``: the lowest score so far, a
    certified point scoring −1."""

    def __init__(self, name: str, model: Model, tol: float, max_iter: int,
                 time_limit: float | None = None, verbose: bool = False):
        self.name, self.model, self.tol, self.max_iter = name, model, tol, max_iter
        self.time_limit, self.verbose = time_limit, verbose
        self.start = time.perf_counter()
        self.history = History()
        self.best: tuple | None = None
        self.certificates = 0
        #: ``(status, reason)`` found during the run that ends it (``infeasible``).
        self.verdict: tuple[str, str] | None = None
        self._constraint_residuals: list[tuple[int, float]] = []
        self._next_feasibility_check = FEASIBILITY_CHECK_AFTER
        self._mark: float | None = None  # objective below which divergence is tested
        self._last_tested: np.ndarray | None = None
        self._since_tested = 0

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def out_of_time(self) -> bool:
        return self.time_limit is not None and self.elapsed >= self.time_limit

    def interruption(self) -> str | None:
        """The status to stop with before the iteration cap: the run's verdict
        (``infeasible``), or ``time_limit``; else None."""
        if self.verdict is not None:
            return self.verdict[0]
        return TIME_LIMIT if self.out_of_time() else None

    def budget_status(self, iterations: int) -> str | None:
        """``max_iterations``, ``time_limit`` or the run's verdict when the run must stop,
        else None."""
        if iterations >= self.max_iter:
            return MAX_ITERATIONS
        return self.interruption()

    def record(self, **row) -> dict:
        """Append a history row (its ``time`` added) and print it when ``verbose``."""
        row["time"] = self.elapsed
        self.history.append(**row)
        self._watch_constraints(row)
        if self.verbose:
            it = int(row.get("iteration", len(self.history) - 1))
            print(f"[{self.name}] it {it:6d}  " + "  ".join(
                f"{k} {_fmt(v)}" for k, v in row.items() if k not in ("iteration", "time")),
                flush=True)
        return row

    def _watch_constraints(self, row: dict) -> None:
        """Test the constraints for infeasibility when their residual stagnates (module
        docstring)."""
        residual = row.get("feasibility", row.get("primal"))
        if residual is None or not self.model.constraints or self.verdict is not None:
            return
        it = int(row.get("iteration", len(self.history)))
        self._constraint_residuals.append((it, float(residual)))
        if it < self._next_feasibility_check:
            return
        self._next_feasibility_check *= 4
        early = min((r for i, r in self._constraint_residuals if 2 * i <= it), default=None)
        late = min(r for i, r in self._constraint_residuals if 2 * i > it)
        if early is not None and late > 10 * self.tol and late > 0.5 * early:
            reason = infeasibility(self.model)
            if reason:
                self.verdict = (INFEASIBLE, reason)

    def watch_divergence(self, value: float, theta: np.ndarray) -> None:
        """Stop the run ``unbounded`` (its :attr:`verdict`) once the objective ``value`` at the
        flat point ``theta`` is below ``−DIVERGED·max(1, |f(0)|)`` and keeps falling linearly
        along the point's direction, or along the step from the last point tested, with the
        constraints met (:func:`~ssl_opt.modeling.diagnosis.unboundedness`): tested again
        each time the objective has fallen 1.5× further (and every :data:`RETEST` calls once
        past the mark, when it stalls short of the next), while the values are still exact (a
        run left to its cap reaches 1e30 and beyond, where a quadratic term's null-space
        cancellation is lost to rounding)."""
        if self.verdict is not None:
            return
        mark = self._divergence_mark()
        self._since_tested += 1
        # Past the first mark, a plateau short of the next one is tested every RETEST calls.
        plateau = self._last_tested is not None and self._since_tested >= RETEST
        if not (value < mark or plateau):
            return
        self._since_tested = 0
        values = self.model.unpack_flat(theta)
        reason = unboundedness(self.model, values)
        if not reason and self._last_tested is not None:
            reason = unboundedness(self.model, values, theta - self._last_tested)
        if reason:
            self.verdict = (UNBOUNDED, reason)
        else:
            self._mark = min(mark, 1.5 * value)
            self._last_tested = np.array(theta, copy=True)

    def verdict_status(self, status: str, info: dict) -> str:
        """The run's verdict when it has one (its reason into ``info``), else ``status``."""
        if self.verdict is None:
            return status
        info["reason"] = self.verdict[1]
        return self.verdict[0]

    def _divergence_mark(self) -> float:
        if self._mark is None:
            zero = self.model.unpack_flat(np.zeros(self.model.size))
            with np.errstate(all="ignore"):
                origin = float(self.model.objective(zero))
            self._mark = -DIVERGED * (max(1.0, abs(origin)) if np.isfinite(origin) else 1.0)
        return self._mark

    def keep(self, score: float, point: np.ndarray, multipliers) -> None:
        """Keep ``point`` as the best iterate when its score is not above the best's (a
        certified best, score −1, stays)."""
        if self.best is None or (self.best[0] >= 0 and score <= self.best[0]):
            self.best = (score, np.array(point, copy=True), multipliers)

    def certified(self, point: np.ndarray, multipliers) -> None:
        self.best = (-1.0, np.array(point, copy=True), multipliers)

    def certify(self, values: dict, multipliers, max_iter: int, tol: float) -> dict:
        """The model's certificate at ``values`` from ``multipliers`` (counted in
        ``certificates``), with the kink tolerance of this run's ``tol``."""
        self.certificates += 1
        return certificate_check(self.model, values, multipliers, max_iter, tol,
                                 kink_tolerance(self.tol))

    def final_status(self, status: str, values: dict, multipliers, info: dict) -> str:
        """``status``, or ``optimal`` when the full certificate passes at ``values`` (its
        residuals go to ``info["certificate"]``)."""
        if status == OPTIMAL:
            return status
        if self.verdict is not None and status == self.verdict[0]:
            info["reason"] = self.verdict[1]
            return status
        cert = certificate_check(self.model, values, multipliers, FINAL_CHECK_ITERS,
                                 FINAL_CHECK_TOL, kink_tolerance(self.tol))
        info["certificate"] = cert
        return OPTIMAL if max(cert.values(), default=0.0) <= self.tol else status


def _fmt(value) -> str:
    value = float(value)
    return f"{value:.10g}" if abs(value) >= 1e-3 or value == 0 else f"{value:.2e}"
