"""The Problem contract shared by every method family (DESIGN.md §2).

A Problem is an immutable declaration: data, hyper-parameters, named variables with shapes,
objective components and a :class:`Structure` record. It evaluates its own objective and KKT
residuals at any candidate point with numpy/scipy only, so certificates never depend on a
solver's own report.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ssl_opt.exceptions import InvalidInputError


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

    @abstractmethod
    def kkt(self, x, **tolerances) -> dict[str, float]:
        """Named optimality residuals at ``x``, each scaled so that 0 means optimal."""

    @abstractmethod
    def prediction(self, x) -> np.ndarray:
        """The quantity a user reads off a solution (decision values, assignments, ...)."""

    @property
    def unique_prediction(self) -> bool:
        """Whether :meth:`prediction` is unique at the optimum (so it can be compared)."""
        return True

    def unpack(self, x) -> dict[str, np.ndarray]:
        """The variables of ``x`` (a dict or a Solution) as float arrays of the right shape."""
        values = getattr(x, "x", x)
        if not isinstance(values, Mapping):
            raise InvalidInputError(
                f"x must be a dict of variables {list(self.variables)} or a Solution, "
                f"got {type(x).__name__}."
            )
        out = {}
        for name, shape in self.variables.items():
            if name not in values:
                raise InvalidInputError(f"x is missing variable {name!r}; expected {shape}.")
            arr = np.asarray(values[name], dtype=np.float64)
            if arr.shape != shape:
                raise InvalidInputError(
                    f"x[{name!r}] must have shape {shape}, got {arr.shape}."
                )
            out[name] = arr
        return out

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.structure.describe()}>"
