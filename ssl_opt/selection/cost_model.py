"""Cost models: predicted time and memory of a solver on a problem family, from measurements.

Each (solver, ``family/variant``) pair gets two laws of the form

    y(s) = c + a · s^b,

time in seconds and peak memory in bytes, where the size ``s`` is the product of the structure
sizes the family's generator names (``n`` for kernel LapSVM, ``nnz`` for linear S3VMs, ``N·K``
for LASS, the boundary size ``l`` for NPKL, ``n·c`` for ERE). ``c`` absorbs fixed overheads
(CVXPY compilation, Python set-up) that dominate small instances; ``b`` is the growth exponent,
reported next to the exponent the solver's complexity predicts
(:attr:`ssl_opt.solvers.Solver.complexity`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy.optimize import least_squares

#: The exponent is kept within these bounds when fitted (a wider range is not physical here).
EXPONENT_BOUNDS = (0.0, 5.0)


@dataclass(frozen=True)
class PowerLaw:
    """``y(s) = c + a·s^b`` with ``c, a ≥ 0``."""

    c: float
    a: float
    b: float

    def __call__(self, size: float) -> float:
        return float(self.c + self.a * float(size) ** self.b)

    @classmethod
    def fit(cls, sizes, values, exponent: float | None = None) -> PowerLaw:
        """Least squares on ``log y`` (relative errors weigh alike at every size).

        Four or more points fit ``c``, ``a`` and ``b``; two or three fit ``a`` and ``b`` with
        ``c = 0``; a single point keeps ``b = exponent`` (default 1) and fits ``a``.
        """
        s = np.asarray(sizes, dtype=float)
        y = np.asarray(values, dtype=float)
        keep = np.isfinite(s) & np.isfinite(y) & (s > 0) & (y > 0)
        s, y = s[keep], y[keep]
        if s.size == 0:
            raise ValueError("no positive finite (size, value) pair to fit")
        ls, ly = np.log(s), np.log(y)
        if s.size == 1 or np.ptp(ls) < 1e-9:
            b = 1.0 if exponent is None else float(exponent)
            return cls(0.0, float(np.exp(np.mean(ly - b * ls))), b)
        b0, la0 = np.polyfit(ls, ly, 1)
        b0 = float(np.clip(b0, *EXPONENT_BOUNDS))
        if s.size < 4:
            return cls(0.0, float(np.exp(np.mean(ly - b0 * ls))), b0)
        # Start from the largest points (the asymptotic regime) and a small overhead.
        top = ls >= np.median(ls)
        if top.sum() >= 2 and np.ptp(ls[top]) > 0:
            b0 = float(np.clip(np.polyfit(ls[top], ly[top], 1)[0], *EXPONENT_BOUNDS))
        la0 = float(np.max(ly - b0 * ls))
        lc0 = float(np.log(0.5 * y.min()))

        def residual(p):
            lc, la, b = p
            return np.logaddexp(lc, la + b * ls) - ly

        lo = [-60.0, -200.0, EXPONENT_BOUNDS[0]]
        hi = [np.log(y.max()) + 1.0, 200.0, EXPONENT_BOUNDS[1]]
        x0 = np.clip([lc0, la0, b0], np.add(lo, 1e-9), np.subtract(hi, 1e-9))
        sol = least_squares(residual, x0, bounds=(lo, hi), method="trf")
        lc, la, b = sol.x
        return cls(float(np.exp(lc)), float(np.exp(la)), float(b))


@dataclass(frozen=True)
class CostModel:
    """Fitted time and memory laws of one solver on one ``family/variant``."""

    solver: str
    key: str
    size_keys: tuple[str, ...]
    time: PowerLaw
    memory: PowerLaw | None
    #: Measured points ``(size, seconds, peak bytes)`` the laws were fitted to.
    points: tuple[tuple[float, float, float], ...] = field(default=())
    #: The exponent the solver's complexity predicts in this size (None if not declared).
    expected_exponent: float | None = None
    complexity: str = ""

    @property
    def size_range(self) -> tuple[float, float]:
        sizes = [p[0] for p in self.points]
        return (min(sizes), max(sizes)) if sizes else (math.nan, math.nan)

    def predict_time(self, size: float) -> float:
        return self.time(size)

    def predict_memory(self, size: float) -> float:
        return math.nan if self.memory is None else self.memory(size)

    @classmethod
    def fit(cls, solver: str, key: str, size_keys, points, expected_exponent=None,
            complexity: str = "") -> CostModel:
        pts = tuple((float(s), float(t), float(m)) for s, t, m in points)
        sizes = [p[0] for p in pts]
        time_law = PowerLaw.fit(sizes, [p[1] for p in pts], expected_exponent)
        mems = [p[2] for p in pts]
        memory_law = (PowerLaw.fit(sizes, mems, expected_exponent)
                      if any(m > 0 for m in mems) else None)
        return cls(solver, key, tuple(size_keys), time_law, memory_law, pts, expected_exponent,
                   complexity)

    def to_json(self) -> dict:
        out = asdict(self)
        out["size_keys"] = list(self.size_keys)
        out["points"] = [list(p) for p in self.points]
        return out

    @classmethod
    def from_json(cls, data: dict) -> CostModel:
        memory = data.get("memory")
        return cls(
            solver=str(data["solver"]),
            key=str(data["key"]),
            size_keys=tuple(str(k) for k in data["size_keys"]),
            time=PowerLaw(**{k: float(data["time"][k]) for k in ("c", "a", "b")}),
            memory=None if memory is None else PowerLaw(
                **{k: float(memory[k]) for k in ("c", "a", "b")}),
            points=tuple(tuple(float(v) for v in p) for p in data.get("points", ())),
            expected_exponent=(None if data.get("expected_exponent") is None
                               else float(data["expected_exponent"])),
            complexity=str(data.get("complexity", "")),
        )
