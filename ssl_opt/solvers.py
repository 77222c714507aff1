"""The Solver base class every backend plugin implements.

A solver declares what it can solve (problem classes, and :meth:`Solver.missing` for finer
capabilities, e.g. "the loss must be smooth"), the options it takes with their defaults, its
tolerance family for certification (``"direct"``, ``"iterative"`` or ``"reference"``), and a
cost model used by ``backend="auto"``. :meth:`Solver.solve` checks all of that before running.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, ClassVar

from ssl_opt.exceptions import InvalidInputError, UnsupportedProblemError
from ssl_opt.solution import FAILED, Solution


@dataclass(frozen=True)
class Option:
    default: Any
    doc: str


class Solver:
    """Base class of solver plugins."""

    name: ClassVar[str] = "abstract"
    backend: ClassVar[str] = "fast"  # "fast" or "reference"
    tolerance_family: ClassVar[str] = "iterative"  # "direct", "iterative" or "reference"
    problem_types: ClassVar[tuple[type, ...]] = ()
    description: ClassVar[str] = ""
    options: ClassVar[dict[str, Option]] = {}
    #: Known growth per ``family/variant`` key (or bare family): ``(exponent, why)``, the
    #: exponent in the size of that family's generator; calibration reports the fitted exponent
    #: beside it.
    complexity: ClassVar[dict[str, tuple[float, str]]] = {}
    #: Cost-model size of this solver where it differs from the family generator's, per
    #: ``family/variant`` key or family (e.g. the full NPKL SDP grows with n, not l).
    size_keys: ClassVar[dict[str, tuple[str, ...]]] = {}

    def missing(self, problem) -> list[str]:
        """Reasons this solver cannot solve ``problem`` (empty when it can)."""
        if not isinstance(problem, self.problem_types):
            kinds = ", ".join(t.__name__ for t in self.problem_types)
            return [f"problem type {type(problem).__name__} (supports {kinds})"]
        return []

    def supports(self, problem) -> bool:
        return not self.missing(problem)

    def inexact(self, problem) -> str:
        """Why this solver does not reach a certified optimum on ``problem`` ("" when it does);
        ``backend="auto"`` then uses it only when nothing exact is predicted in time."""
        return ""

    def predicted_time(self, problem) -> float:
        """An analytic estimate of seconds, used only where no calibrated cost model exists
        (:mod:`ssl_opt.selection.cost_model`); NaN when the solver offers none."""
        return float("nan")

    def predicted_memory(self, problem) -> float:
        """An analytic estimate of peak extra bytes, used where no calibrated model exists."""
        return float("nan")

    def cost_size_keys(self, key: str, default: tuple[str, ...]) -> tuple[str, ...]:
        """The structure sizes whose product is this solver's cost-model size on ``key``."""
        found = self.size_keys.get(key, self.size_keys.get(key.split("/", 1)[0]))
        return tuple(default) if found is None else tuple(found)

    def expected_growth(self, key: str) -> tuple[float, str] | None:
        """``complexity`` for ``family/variant`` ``key``, else for its family, else None."""
        if key in self.complexity:
            return self.complexity[key]
        return self.complexity.get(key.split("/", 1)[0])

    def solve(self, problem, **options) -> Solution:
        missing = self.missing(problem)
        if missing:
            raise UnsupportedProblemError(
                f"solver {self.name!r} cannot solve this {type(problem).__name__}: "
                + "; ".join(missing)
                + ". See ssl_opt.list_solvers() for solvers that can."
            )
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            raise InvalidInputError(
                f"unknown option(s) {unknown} for solver {self.name!r}; "
                f"it accepts {sorted(self.options)}."
            )
        opts = {k: o.default for k, o in self.options.items()}
        opts.update(options)
        start = time.perf_counter()
        solution = self._solve(problem, **opts)
        solution.time = time.perf_counter() - start
        if solution.status != FAILED:
            # Every backend reports the objective evaluated the same way, from problem data.
            solution.info.setdefault("solver_objective", solution.objective)
            solution.objective = float(problem.objective(solution.x))
        solution.backend = self.backend
        solution.solver = self.name
        solution.info.setdefault("tolerance_family", self.tolerance_family)
        solution.info.setdefault("options", opts)
        return solution

    def _solve(self, problem, **options) -> Solution:
        raise NotImplementedError

    def describe(self) -> dict:
        return {
            "name": self.name,
            "backend": self.backend,
            "problems": [t.__name__ for t in self.problem_types],
            "description": self.description,
            "options": {k: o.default for k, o in self.options.items()},
        }

    def __repr__(self) -> str:
        return f"<{self.backend} solver {self.name!r}>"
