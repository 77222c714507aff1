r"""Why a solve of a model ended without an optimum: the statuses ``failed``, ``infeasible`` and
``unbounded``, each with a reason naming the term or the constraints at fault
(docs/modeling.md, "Statuses").

* ``failed`` — the returned point or the objective there is not finite; the reason names the
  variables holding NaN/inf or the terms whose value is not finite.
* ``infeasible`` — no point satisfies the constraints. Proved by CVXPY (Clarabel) on the
  program of the constraints alone (a zero objective) — first with each distinct argument a
  free variable (a relaxation: infeasible there is infeasible), then as stated — which a
  deletion filter shrinks to a minimal conflicting subset, the constraints the reason names.
  Run only when a solve stops short at a point that violates a constraint, or when a
  splitting solver's constraint residual stops decreasing (``plugins/model/iterative.py``);
  never for a single constraint on a whole variable (its set is not empty). The program as
  stated is skipped for constraints on maps holding more than
  :data:`FEASIBILITY_DENSE_ENTRIES` dense entries (a kernel expansion's K: it alone would take
  longer than the solve); the relaxation still runs.
* ``unbounded`` — the objective decreases without bound along a direction the constraints
  allow. Read off the returned point ``x`` of a run that diverged: its objective is below
  ``−``:data:`DIVERGED` ``× max(1, |f(0)|)``, and along ``d = x/‖x‖`` (a diverging iterate
  points along a recession direction) ``φ(t) = f(x + t d)`` keeps falling from ``t = ‖x‖`` to
  ``10‖x‖`` at a slope at least :data:`RECESSION_SLOPE` of its average slope over the first
  ``‖x‖``, with every constraint met along the way. A convex φ has non-decreasing slopes, so a
  bounded objective flattens or turns up; longer steps are not taken because a quadratic
  term's value loses its null-space cancellation to rounding there.
"""

from __future__ import annotations

import weakref

import numpy as np

from ssl_opt.solution import FAILED, INFEASIBLE, MAX_ITERATIONS, STALLED, TIME_LIMIT, UNBOUNDED

#: Statuses after which a solve is diagnosed: the solver stopped short of its certificate.
SHORT_STOPS = (MAX_ITERATIONS, STALLED, TIME_LIMIT)
#: Largest constraint violation (relative, as ``Constraint.feasibility``) counted as feasible.
FEASIBLE_TOL = 1e-6
#: Seconds given to each CVXPY feasibility program (Clarabel's time limit).
FEASIBILITY_SECONDS = 10.0
#: Dense matrix entries in the constraints' maps above which no feasibility program is built
#: (the verdict is "cannot tell"): a kernel expansion at n ≈ 700.
FEASIBILITY_DENSE_ENTRIES = 500_000
#: Constraints up to which the deletion filter names a minimal conflicting subset.
FILTER_CONSTRAINTS = 8
#: The objective at a diverged point, relative to ``max(1, |f(0)|)`` (below its negative).
DIVERGED = 1e6
#: The slope the recession test must keep, relative to its first.
RECESSION_SLOPE = 0.5

_feasible_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def diagnose(model, solution) -> tuple[str, str] | None:
    """``(status, reason)`` that should replace ``solution``'s status, or None (module
    docstring). A status already ``infeasible`` (the reference's) gets the conflicting
    constraints added to its reason."""
    status, values = solution.status, solution.x
    if status == FAILED or status == UNBOUNDED:
        return None
    if status == INFEASIBLE:
        named = infeasibility(model) if model.constraints else None
        reason = solution.info.get("reason", "")
        if not named or named in reason:
            return None
        return INFEASIBLE, f"{reason}; {named}" if reason else named
    bad = [name for name, v in values.items() if not np.all(np.isfinite(v))]
    if bad:
        return FAILED, f"the returned point has NaN or inf entries in {', '.join(bad)}"
    if not np.isfinite(solution.objective):
        terms = nonfinite_terms(model, values)
        return FAILED, (f"the objective is {solution.objective} at the returned point"
                        + (f": {'; '.join(terms)}" if terms else ""))
    if status not in SHORT_STOPS:
        return None
    if solution.objective < -DIVERGED:
        reason = unboundedness(model, values)
        if reason:
            return UNBOUNDED, reason
    if violated(model, values):
        reason = infeasibility(model)
        if reason:
            return INFEASIBLE, reason
    return None


def nonfinite_terms(model, values: dict) -> list[str]:
    """One line per term whose value at ``values`` is NaN or inf."""
    out = []
    with np.errstate(all="ignore"):
        for t in model.terms:
            v = float(t.value(t.argument.value(values)))
            if not np.isfinite(v):
                out.append(f"term {t.describe()} has value {v}")
    return out


def violated(model, values: dict, tol: float = FEASIBLE_TOL) -> bool:
    """A constraint is violated at ``values`` by more than ``tol`` (relative)."""
    return any(c.feasibility(c.argument.value(values)) > tol for c in model.constraints)


def infeasibility(model) -> str | None:
    """A reason naming a minimal set of conflicting constraints when CVXPY proves the
    constraints of ``model`` infeasible; None when they are feasible, or when it cannot tell
    (no CVXPY, a products-only operator, a time limit). Cached per model."""
    try:
        return _feasible_cache[model]
    except (KeyError, TypeError):
        pass
    reason = _infeasibility(model)
    try:
        _feasible_cache[model] = reason
    except TypeError:
        pass
    return reason


def _infeasibility(model) -> str | None:
    from ssl_opt.optional import installed

    constraints = list(model.constraints)
    if (not constraints or not installed("cvxpy")
            or not all(c.argument.explicit for c in constraints)
            or (len(constraints) == 1 and constraints[0].argument.is_variable())):
        return None
    if _feasible(model, constraints) is not False:
        return None
    conflict = constraints
    if len(constraints) <= FILTER_CONSTRAINTS:
        for c in constraints:
            rest = [k for k in conflict if k is not c]
            if rest and _feasible(model, rest) is False:
                conflict = rest
    names = " and ".join(repr(c) for c in conflict)
    return f"the constraints {names} conflict (CVXPY proves them infeasible on their own)"


def _dense_entries(constraints) -> int:
    """Entries of the dense matrices in the constraints' argument maps (a kernel expansion's
    K: CVXPY's canonicalization and Clarabel's factorization of it take seconds at n = 1,000
    and over a minute at 2,000, whatever the time limit)."""
    from ssl_opt.modeling.maps import dense_entries

    return sum(dense_entries(linear) for c in constraints for _, linear in c.argument.parts)


def _feasible(model, constraints) -> bool | None:
    """CVXPY's verdict on the constraints alone: True, False, or None (undecided). First on
    the relaxation where each distinct argument is a free variable of its own (no map to
    canonicalize; infeasible there is infeasible for the model: conflicting boxes on the same
    ``f = Kα + b``, whose full program Clarabel calls only ``infeasible_inaccurate``), then,
    unless the maps hold more than :data:`FEASIBILITY_DENSE_ENTRIES` dense entries, on the
    constraints as stated."""
    from ssl_opt.optional import cvxpy as cp

    arguments: dict[int, object] = {}
    for c in constraints:
        arguments.setdefault(id(c.argument), cp.Variable(c.shape) if c.shape else cp.Variable())
    if _verdict(cp, [f for c in constraints for f in c.cvxpy(arguments[id(c.argument)])]
                ) is False:
        return False
    if _dense_entries(constraints) > FEASIBILITY_DENSE_ENTRIES:
        return None
    handles = {name: cp.Variable(shape, name=name) for name, shape in model.variables.items()}
    return _verdict(cp, [f for c in constraints for f in c.cvxpy(c.argument.cvxpy(handles))])


def _verdict(cp, forms) -> bool | None:
    prog = cp.Problem(cp.Minimize(0), forms)
    try:
        prog.solve(solver=cp.CLARABEL, time_limit=FEASIBILITY_SECONDS)
    except cp.error.SolverError:
        return None
    if prog.status == cp.INFEASIBLE:
        return False
    return True if prog.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) else None


def unboundedness(model, values: dict, direction: np.ndarray | None = None) -> str | None:
    """A reason when the objective decreases linearly without bound along the direction of
    ``values`` within the constraints (module docstring), else None. A flat ``direction``
    (a run's step between two diverging iterates, whose bounded parts cancel) replaces the
    point's own, scaled to its norm."""
    x = model.pack(values)
    norm = float(np.linalg.norm(x))
    d = x
    if direction is not None and np.linalg.norm(direction) > 0:
        d = np.asarray(direction, dtype=np.float64) * (norm / np.linalg.norm(direction))
    with np.errstate(all="ignore"):
        origin = model.objective(model.unpack_flat(np.zeros_like(x)))
        scale = max(1.0, abs(origin)) if np.isfinite(origin) else 1.0
        points = [model.unpack_flat(x + t * d) for t in (0.0, 1.0, 10.0)]
        phi = [model.objective(point) for point in points]
        allowed = not any(violated(model, point) for point in points[1:])
    if not (norm > 0 and phi[0] < -DIVERGED * scale and allowed
            and np.all(np.isfinite(phi))):
        return None
    first, second = (phi[1] - phi[0]) / norm, (phi[2] - phi[1]) / (9 * norm)
    if not (first < 0 and second <= RECESSION_SLOPE * first):
        return None
    along = "the returned point" if d is x else "the run's last steps"
    return (f"the objective decreases without bound along the direction of {along} "
            f"(norm {norm:.3g}, objective {phi[0]:.3g}): {10 * norm:.3g} further it "
            f"still falls by {-second:.3g} per unit, every constraint met")
