"""Progress of long solves: what a solve reports while it runs, and the display an estimator's
``verbose`` shows.

Every :meth:`Solver.solve <ssl_opt.solvers.Solver.solve>` reports when it starts and ends, and
every :class:`~ssl_opt.solution.History` row as the solver records it (an iteration: Newton
step, PCG iteration, BCD sweep, ADMM check, ...), to the listener active in the current context
(:func:`listening`). With none active, the default, a report is one context-variable read.

:class:`FitDisplay` is the listener of ``verbose`` on the estimators (scikit-learn's
convention): ``verbose=1`` shows a tqdm counter of the fit's iterations with the running solver
and its last recorded row, and one line per solve the estimator asked for (solver, status,
iterations, seconds, objective); ``verbose=2`` adds the solves those started (one-vs-rest's
classes, a transductive solver's inner solves) and one line per recorded row.
"""

from __future__ import annotations

import contextlib
import math
import sys
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from typing import Protocol


class Listener(Protocol):
    """What a progress listener receives."""

    def solve_started(self, solver: str) -> None: ...

    def row_recorded(self, row: Mapping[str, float]) -> None: ...

    def solve_finished(self, solver: str, solution) -> None:
        """``solution`` is None when the solve raised."""


_ACTIVE: ContextVar[Listener | None] = ContextVar("ssl_opt_progress", default=None)


def active() -> Listener | None:
    """The listener of the current context, or None."""
    return _ACTIVE.get()


@contextlib.contextmanager
def listening(listener: Listener) -> Iterator[Listener]:
    """Report every solve and history row in this block to ``listener``."""
    token = _ACTIVE.set(listener)
    try:
        yield listener
    finally:
        _ACTIVE.reset(token)


def recorded(row: Mapping[str, float]) -> None:
    """Report a history row to the active listener, if any."""
    listener = _ACTIVE.get()
    if listener is not None:
        listener.row_recorded(row)


#: Row entries shown beside the counter, in this order where present (then the others).
_FIRST = ("iteration", "objective")
_SHOWN = 4


class FitDisplay:
    """The progress of one estimator fit on stderr (module docstring): a tqdm counter whose
    unit is one recorded iteration of any solve, and lines written above it."""

    def __init__(self, owner: str, verbose: int, stream=None):
        from tqdm.auto import tqdm

        self.owner, self.verbose = owner, int(verbose)
        self.stack: list[str] = []
        self.bar = tqdm(desc=owner, unit="it", file=stream or sys.stderr, leave=False,
                        dynamic_ncols=True)

    def solve_started(self, solver: str) -> None:
        self.stack.append(solver)
        self._describe()

    def row_recorded(self, row: Mapping[str, float]) -> None:
        self.bar.update(1)
        shown = [k for k in _FIRST if k in row] + [k for k in row
                                                  if k not in _FIRST and k != "time"]
        text = "  ".join(f"{k} {_number(row[k])}" for k in shown[:_SHOWN])
        self.bar.set_postfix_str(text, refresh=False)
        if self.verbose >= 2:
            self.bar.write(f"[{self.owner}] {self.stack[-1] if self.stack else ''}  {text}",
                           file=self.bar.fp)

    def solve_finished(self, solver: str, solution) -> None:
        depth = len(self.stack)
        if self.stack:
            self.stack.pop()
        if depth <= 1 or self.verbose >= 2:
            self.bar.write(f"[{self.owner}] {'  ' * max(depth - 1, 0)}{_summary(solver, solution)}",
                           file=self.bar.fp)
        self._describe()

    def _describe(self) -> None:
        """The counter's label: the estimator and the solves running, outermost first."""
        self.bar.set_description_str(
            f"{self.owner} [{' > '.join(self.stack)}]" if self.stack else self.owner,
            refresh=False)

    def close(self) -> None:
        self.bar.close()


@contextlib.contextmanager
def fit_display(owner: str, verbose: int, stream=None) -> Iterator[FitDisplay | None]:
    """A :class:`FitDisplay` active in this block when ``verbose`` > 0, else nothing."""
    if not verbose:
        yield None
        return
    display = FitDisplay(owner, verbose, stream)
    try:
        with listening(display):
            yield display
    finally:
        display.close()


def _summary(solver: str, solution) -> str:
    if solution is None:
        return f"{solver}: raised an error"
    return (f"{solver}: {solution.status} after {solution.iterations} iterations in "
            f"{solution.time:.3g} s, objective {_number(solution.objective)}")


def _number(value) -> str:
    value = float(value)
    if not math.isfinite(value):
        return str(value)
    if value == int(value) and abs(value) < 1e9:
        return str(int(value))
    return f"{value:.4g}" if 1e-3 <= abs(value) < 1e6 else f"{value:.3e}"
