"""Scalable instance generators: what ``ssl-opt calibrate`` and ``ssl-opt bench`` run.

A plugin registers a :class:`Generator` per problem family and variant through the
``register_generators`` hook. ``build(scale, seed)`` returns a problem whose
``structure.family/structure.variant`` equals ``key``; its cost-model *size* is the product of
the structure sizes named in ``size_keys`` (e.g. ``("N", "K")`` for LASS), which is also how a
user's own problem of that family is sized when a backend is selected for it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from ssl_opt.exceptions import InvalidInputError


@dataclass(frozen=True)
class Generator:
    """Instances of one family/variant at a chosen scale (usually the number of points)."""

    key: str
    size_keys: tuple[str, ...]
    build: Callable[[int, int], object]
    description: str
    #: Ascending scales tried by calibration (each solver stops once a run is slow enough).
    calibration_scales: tuple[int, ...]
    #: Default grid of ``ssl-opt bench``; kept off the calibration scales (held-out sizes).
    bench_scales: tuple[int, ...]
    #: Operator kinds ``build`` can hold the data in (docs/scaling.md): "dense" (arrays as
    #: given) and e.g. "matrix-free", "nystrom" (a kernel family) or "dask" (a design
    #: matrix on a cluster). ``build(scale, seed, operator=kind)`` is called for the others.
    operators: tuple[str, ...] = ("dense",)

    @property
    def family(self) -> str:
        return self.key.split("/", 1)[0]

    def instance(self, scale: int, seed: int = 0, operator: str = "dense"):
        """``build(scale, seed)`` (with ``operator=`` unless "dense"), checked to be the
        family/variant this generator claims."""
        if operator not in self.operators:
            raise InvalidInputError(
                f"generator {self.key!r} has no operator kind {operator!r}; it has "
                f"{list(self.operators)}.")
        problem = (self.build(int(scale), int(seed)) if operator == "dense"
                   else self.build(int(scale), int(seed), operator=operator))
        got = problem_key(problem)
        if got != self.key:
            raise InvalidInputError(
                f"generator {self.key!r} built a {got!r} problem; its key must be "
                "'<structure.family>/<structure.variant>' of what it builds."
            )
        return problem


def problem_key(problem) -> str:
    """``"family/variant"``: the key cost models and generators are indexed by."""
    return f"{problem.structure.family}/{problem.structure.variant}"


def cost_size(problem, size_keys: tuple[str, ...]) -> float:
    """The product of ``problem.structure.sizes[k]`` over ``size_keys``."""
    sizes = problem.structure.sizes
    missing = [k for k in size_keys if k not in sizes]
    if missing:
        raise InvalidInputError(
            f"{type(problem).__name__} has no structure size(s) {missing}; "
            f"it has {sorted(sizes)}."
        )
    return float(math.prod(sizes[k] for k in size_keys))


def geometric_scales(start: int, stop: int, factor: float = 1.5) -> tuple[int, ...]:
    """Integers ``start, start·factor, …`` up to ``stop`` (rounded, strictly increasing)."""
    out: list[int] = []
    x = float(start)
    while x <= stop * (1 + 1e-12):
        value = int(round(x))
        if not out or value > out[-1]:
            out.append(value)
        x *= factor
    return tuple(out)
