"""A refusal that says where to go instead.

:meth:`Solver.missing` builds the reasons a solver cannot solve a problem from its
``problem_types`` and ``requires``; a :class:`HintedSolver` adds its ``hint`` after them when
the problem is of the right type but lacks a capability (e.g. which solver takes the hinge).
"""

from __future__ import annotations

from typing import ClassVar

from ssl_opt.solvers import Solver


class HintedSolver(Solver):
    #: Appended to the reasons when a problem of a supported type lacks a required capability.
    hint: ClassVar[str] = ""

    def missing(self, problem) -> list[str]:
        reasons = super().missing(problem)
        if reasons and self.hint and isinstance(problem, self.problem_types):
            reasons.append(self.hint)
        return reasons
