"""Warm starts of the ERE IRLS solver (:mod:`ssl_opt.plugins.ere.irls`): the point and the δ
a previous IRLS solution ended with, checked against the problem's shapes, and the shortcut
of a warm start that already passes the solver's stopping certificate."""

from __future__ import annotations

import numpy as np

from ssl_opt._validation import reject_complex
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.plugins.ere.stopping import stop_check
from ssl_opt.problems.ere.lrl import LRL
from ssl_opt.problems.ere.problem import ERE
from ssl_opt.solution import OPTIMAL, History, Solution


def warm_start_point(problem, warm_start) -> tuple[np.ndarray | None, float | None]:
    """The packed start and the δ a previous IRLS solution ended with (None, None without a
    warm start); checked against the problem's shapes and for finiteness."""
    if warm_start is None:
        return None, None
    try:
        if isinstance(problem, LRL):  # no flat form: checked, then unused
            x0 = np.concatenate([v.ravel() for v in problem.unpack(warm_start).values()])
        else:
            x0 = problem.pack_vector(warm_start)
        # A previous IRLS solution says at which δ it ended: continue from there.
        info = getattr(warm_start, "info", {})
        values = getattr(warm_start, "x", warm_start)
        warm_delta = None
        if info.get("delta") is not None:
            warm_delta = warm_delta_of(info["delta"])
        elif hasattr(values, "get") and values.get("delta") is not None:
            warm_delta = warm_delta_of(values["delta"])
    except InvalidInputError as exc:
        raise InvalidInputError(f"warm_start: {exc}") from exc
    if not np.all(np.isfinite(x0)):
        raise InvalidInputError("warm_start contains NaN or inf; pass a finite point.")
    if warm_delta is not None and not (np.isfinite(warm_delta) and warm_delta > 0):
        raise InvalidInputError(
            f"warm_start's delta must be a finite number > 0, got {warm_delta!r}.")
    return x0, warm_delta


def warm_delta_of(value) -> float:
    """The δ a warm start carries, as a real scalar (range checked by the caller)."""
    reject_complex(value, "delta")
    try:
        return float(np.asarray(value, dtype=np.float64))
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"delta must be a real number > 0, got {value!r}.") from exc


def certified_warm_start(solver, problem, warm_start, kkt_tol: float, gap_tol: float,
                         check_iters: int, warm_delta):
    """The warm start itself, as an optimal Solution, when it already passes the solver's
    stopping certificate (its own multipliers, if it carries them, start the check)."""
    values = dict(getattr(warm_start, "x", warm_start))
    values.pop("delta", None)  # certified as a point of the non-smooth problem
    if isinstance(problem, ERE):
        values = {**values, **with_labels(problem, values)}
    z = problem.pack_vector(values)
    cert, ok, U, multipliers = stop_check(problem, z, values, kkt_tol, gap_tol, check_iters)
    if not ok:
        return None
    x = {k: np.array(v, dtype=np.float64) for k, v in values.items()}
    x.update(problem.groups.multipliers(U))
    info = {"warm_start_certified": True, "delta": warm_delta, "last_certificate": dict(cert),
            "multipliers": multipliers}
    return Solution(x, problem.objective(x), OPTIMAL, 0, 0.0, solver.backend, solver.name,
                    History(), info=info)


def with_labels(problem: ERE, warm_start) -> dict:
    """The point with ERE's labeled rows of F set to Y (its fixed rows)."""
    v = dict(problem.unpack(warm_start))
    F = v["F"].copy()
    F[: problem.l] = problem.Y
    v["F"] = F
    return v
