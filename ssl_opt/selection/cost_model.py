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
#: A law read from a file with an exponent outside these bounds is ignored (see
#: :meth:`CostModel.implausible`); wider than the fit bounds, so every fitted law passes.
PLAUSIBLE_EXPONENTS = (0.0, 6.0)
#: Predictions at size 1 above these (about a week; a petabyte) are not measurements.
MAX_SECONDS = 1e6
MAX_BYTES = 1e15


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
        """Read one model; ``TypeError``/``ValueError`` naming the field if it is malformed."""
        if not isinstance(data, dict):
            raise TypeError(f"a model must be a JSON object, got {type(data).__name__}")
        memory = data.get("memory")
        expected = data.get("expected_exponent")
        points = data.get("points", [])
        if not isinstance(points, list) or not all(
                isinstance(p, list) and len(p) == 3 for p in points):
            raise TypeError("'points' must be a list of [size, seconds, bytes] triples")
        return cls(
            solver=_string(data["solver"], "solver"),
            key=_string(data["key"], "key"),
            size_keys=tuple(_string(k, "size_keys") for k in _list(data["size_keys"],
                                                                   "size_keys")),
            time=_law(data["time"], "time"),
            memory=None if memory is None else _law(memory, "memory"),
            points=tuple(tuple(_number(v, "points") for v in p) for p in points),
            expected_exponent=None if expected is None else _number(expected,
                                                                    "expected_exponent"),
            complexity=_string(data.get("complexity", ""), "complexity", empty=True),
        )

    def implausible(self) -> list[str]:
        """Why the laws cannot be trusted to drive selection (empty if they can): negative or
        non-finite coefficients, an exponent outside :data:`PLAUSIBLE_EXPONENTS`, or a law that
        predicts more than :data:`MAX_SECONDS` / :data:`MAX_BYTES` at size 1."""
        reasons = []
        for what, law, cap in (("time", self.time, MAX_SECONDS),
                               ("memory", self.memory, MAX_BYTES)):
            if law is None:
                continue
            if not all(math.isfinite(v) for v in (law.c, law.a, law.b)):
                reasons.append(f"{what} law has a NaN or infinite coefficient")
            elif law.c < 0 or law.a < 0:
                reasons.append(f"{what} law is negative (c={law.c:g}, a={law.a:g})")
            elif not PLAUSIBLE_EXPONENTS[0] <= law.b <= PLAUSIBLE_EXPONENTS[1]:
                reasons.append(f"{what} exponent {law.b:g} is outside {PLAUSIBLE_EXPONENTS}")
            elif law.c + law.a > cap:
                reasons.append(f"{what} law predicts {law.c + law.a:g} at size 1 "
                               f"(more than {cap:g})")
        if any(not math.isfinite(v) or v < 0 for p in self.points for v in p):
            reasons.append("a measured point is negative or not finite")
        if self.expected_exponent is not None and not math.isfinite(self.expected_exponent):
            reasons.append("expected_exponent is not finite")
        return reasons


def _string(value, name: str, empty: bool = False) -> str:
    if not isinstance(value, str) or not (value or empty):
        raise TypeError(f"{name!r} must be a non-empty string, got {value!r}")
    return value


def _list(value, name: str) -> list:
    if not isinstance(value, list):
        raise TypeError(f"{name!r} must be a list, got {type(value).__name__}")
    return value


def _number(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name!r} must hold numbers, got {value!r}")
    return float(value)


def _law(value, name: str) -> PowerLaw:
    if not isinstance(value, dict):
        raise TypeError(f"{name!r} must be an object with c, a and b, got {value!r}")
    return PowerLaw(**{k: _number(value[k], f"{name}.{k}") for k in ("c", "a", "b")})
