"""Solutions and per-iteration histories."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ssl_opt.optional import require
from ssl_opt.progress import recorded

#: Status values a solver may report.
OPTIMAL = "optimal"
EARLY_STOPPED = "early_stopped"
MAX_ITERATIONS = "max_iterations"
TIME_LIMIT = "time_limit"  # a time limit the user set was reached first
STALLED = "stalled"
INACCURATE = "inaccurate"  # a reference solver finished short of its tolerances
FAILED = "failed"  # no usable point: an error, or a NaN/inf objective (info["reason"])
INFEASIBLE = "infeasible"  # no point satisfies the constraints (info["reason"] names them)
UNBOUNDED = "unbounded"  # the objective decreases without bound (info["reason"])


class History:
    """Per-iteration records (objective, residual norms, elapsed time, ...) of one solve."""

    def __init__(self) -> None:
        self.rows: list[dict[str, float]] = []

    def append(self, **row: float) -> None:
        """Record one row; it is also reported to the progress listener, if any
        (:mod:`ssl_opt.progress`)."""
        values = {k: float(v) for k, v in row.items()}
        self.rows.append(values)
        recorded(values)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, key: str) -> np.ndarray:
        return np.array([row.get(key, np.nan) for row in self.rows])

    @property
    def columns(self) -> list[str]:
        names: dict[str, None] = {}
        for row in self.rows:
            names.update(dict.fromkeys(row))
        return list(names)

    def plot(self, y: str = "objective", x: str = "time", ax=None, label: str | None = None):
        """Plot one recorded quantity against another (log scale for residuals)."""
        plt = require("matplotlib.pyplot", "History.plot")
        if ax is None:
            _, ax = plt.subplots()
        ax.plot(self[x], self[y], marker=".", label=label)
        ax.set_xlabel(x)
        ax.set_ylabel(y)
        if y != "objective":
            ax.set_yscale("log")
        return ax


@dataclass
class Solution:
    """The result of :func:`ssl_opt.solve`."""

    x: dict[str, np.ndarray]
    objective: float
    status: str
    iterations: int
    time: float
    backend: str
    solver: str
    history: History = field(default_factory=History)
    info: dict[str, Any] = field(default_factory=dict)
    #: What the solver needs to continue exactly where it stopped, on the same problem object
    #: (``warm_start=solution``; ``Solver.resumable``), or work the next solver may reuse (a
    #: factorization, e.g. ``laprls-direct``'s ``keep_factorization``); None otherwise.
    resume: Any = field(default=None, repr=False, compare=False)

    @property
    def optimal(self) -> bool:
        return self.status == OPTIMAL

    def __getstate__(self) -> dict:
        """Pickled without ``resume``: a solver's state to continue from is valid only in this
        process, on the problem object it ran on."""
        return {**self.__dict__, "resume": None}

    def __repr__(self) -> str:
        return (
            f"Solution(solver={self.solver!r}, status={self.status!r}, "
            f"objective={self.objective:.10g}, iterations={self.iterations}, "
            f"time={self.time:.3g}s)"
        )
