"""The Problem contract shared by every method family (docs/design.md §2).

A Problem is an immutable declaration: data, hyper-parameters, named variables with shapes,
objective components and a :class:`Structure` record. It evaluates its own objective and KKT
residuals at any candidate point with numpy/scipy only, so certificates never depend on a
solver's own report. The contract every family follows:

* ``objective(x)``, ``prediction(x)`` and ``kkt(x, **options)`` take ``x`` as a dict of the
  :attr:`~Problem.variables` or a :class:`~ssl_opt.solution.Solution`;
* ``gradient(x)`` (smooth problems only) returns a dict with one array per variable, shaped as
  the variable;
* ``kkt`` options are declared in :attr:`~Problem.kkt_options` and checked before the family's
  ``_kkt`` runs; every residual name it returns is declared in
  :attr:`~Problem.residual_tolerances` with the tolerance that judges it;
* a non-convex problem derives from :class:`NonConvexProblem` and names its convex
  ``inner_problem`` (the problem left when its discrete or block variables are fixed).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ssl_opt._validation import reject_complex
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.solvers import Option, validate_options

#: The tolerance classes a residual can be judged by (keys of the certificate's tolerances).
RESIDUAL_KINDS = ("stationarity", "feasibility")


@dataclass(frozen=True)
class Structure:
    """What a solver or the selector needs to know about a problem without reading its data."""

    family: str
    variant: str
    convex: bool
    smooth: bool
    program_class: str  # "unconstrained", "QP", "SOCP", "SDP", "exponential-cone", ...
    sizes: Mapping[str, int] = field(default_factory=dict)
    sparse: bool = False

    def describe(self) -> str:
        sizes = ", ".join(f"{k}={v}" for k, v in self.sizes.items())
        return (
            f"{self.family}/{self.variant}: {'convex' if self.convex else 'non-convex'}, "
            f"{'smooth' if self.smooth else 'non-smooth'}, {self.program_class}, {sizes}, "
            f"{'sparse' if self.sparse else 'dense'}"
        )


class Problem(ABC):
    """Base class of every declared optimization problem."""

    #: Family name shared by all variants of one method (e.g. ``"manifold"``).
    family: str = "abstract"
    #: Options of :meth:`kkt`, each with its default and check.
    kkt_options: ClassVar[dict[str, Option]] = {}
    #: Every residual name :meth:`kkt` may return, with the tolerance class that judges it
    #: (one of :data:`RESIDUAL_KINDS`).
    residual_tolerances: ClassVar[dict[str, str]] = {}

    def __setattr__(self, name: str, value: Any) -> None:
        if getattr(self, "_frozen", False):
            raise AttributeError(f"{type(self).__name__} is immutable; build a new problem.")
        object.__setattr__(self, name, value)

    def _freeze(self) -> None:
        for value in vars(self).values():
            if isinstance(value, np.ndarray):
                value.setflags(write=False)
        object.__setattr__(self, "_frozen", True)

    @property
    @abstractmethod
    def variables(self) -> dict[str, tuple[int, ...]]:
        """Names and shapes of the optimization variables."""

    @property
    @abstractmethod
    def structure(self) -> Structure: ...

    @abstractmethod
    def objective(self, x) -> float:
        """Objective value at a candidate point (dict of variables or a Solution)."""

    def kkt(self, x, **options) -> dict[str, float]:
        """Named optimality residuals at ``x``, each scaled so that 0 means optimal; the
        ``options`` are those of :attr:`kkt_options`."""
        opts = validate_options(self.kkt_options, options, f"{type(self).__name__}.kkt")
        residuals = self._kkt(x, **opts)
        undeclared = sorted(set(residuals) - set(self.residual_tolerances))
        if undeclared:
            raise InvalidInputError(
                f"{type(self).__name__}.kkt returned residual(s) {undeclared} that its "
                "residual_tolerances do not declare; declare each with the tolerance that "
                f"judges it (one of {RESIDUAL_KINDS})."
            )
        return residuals

    @abstractmethod
    def _kkt(self, x, **options) -> dict[str, float]:
        """The family's residuals (``options`` already checked)."""

    def gradient(self, x) -> dict[str, np.ndarray]:
        """The objective's gradient, one array per variable (smooth problems only)."""
        raise NotImplementedError(f"{type(self).__name__} is not smooth: it has no gradient.")

    @abstractmethod
    def prediction(self, x) -> np.ndarray:
        """The quantity a user reads off a solution (decision values, assignments, ...)."""

    @property
    def unique_prediction(self) -> bool:
        """Whether :meth:`prediction` is unique at the optimum (so it can be compared)."""
        return True

    def unpack(self, x, argument: str = "x") -> dict[str, np.ndarray]:
        """The variables of ``x`` (a dict or a Solution) as float arrays of the right shape;
        errors name ``argument``."""
        values = getattr(x, "x", x)
        if not isinstance(values, Mapping):
            raise InvalidInputError(
                f"{argument} must be a dict of variables {list(self.variables)} or a Solution, "
                f"got {type(x).__name__}."
            )
        out = {}
        for name, shape in self.variables.items():
            if name not in values:
                raise InvalidInputError(
                    f"{argument} is missing variable {name!r}; expected {shape}.")
            reject_complex(values[name], f"{argument}[{name!r}]")
            try:
                arr = np.asarray(values[name], dtype=np.float64)
            except (TypeError, ValueError) as exc:
                raise InvalidInputError(f"{argument}[{name!r}] must be numeric: {exc}") from exc
            if arr.shape != shape:
                raise InvalidInputError(
                    f"{argument}[{name!r}] must have shape {shape}, got {arr.shape}."
                )
            out[name] = arr
        return out

    def warm_start_values(self, warm_start) -> dict[str, np.ndarray]:
        """The variables of a solver's ``warm_start`` (a Solution or dict), each real, finite
        and of its variable's shape; every error names ``warm_start``."""
        values = self.unpack(warm_start, "warm_start")
        for name, value in values.items():
            if not np.all(np.isfinite(value)):
                raise InvalidInputError(
                    f"warm_start[{name!r}] contains NaN or inf; start from a finite point or "
                    "pass warm_start=None."
                )
        return values

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.structure.describe()}>"


class NonConvexProblem(Problem):
    """A problem that is convex once some of its variables are fixed (TSVM's labels, DA's
    probabilities). Its certificate checks :meth:`inner_problem` against a reference optimum
    and the problem's own block-optimality residuals."""

    @abstractmethod
    def inner_problem(self, x) -> Problem:
        """The convex problem left when the non-convex block of ``x`` is fixed."""
