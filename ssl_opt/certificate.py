"""Certificates: check any solution against a reference optimum and against optimality
residuals computed from the problem data alone (docs/design.md §2).

Pass rule (CVXPY / qpsolvers / SCS practice)::

    |f − p*| ≤ eps_abs + eps_rel·max(1, |p*|) + gap_ref

(or f below p*: then the reference was the less accurate one, which the report says), and
every residual below its tolerance; NaN or inf fails. Tolerances depend on the solver
family: ``direct`` (Newton, direct solves), ``iterative`` (PCG, ADMM, ...), ``reference``;
each residual is judged by the tolerance class its problem declares for it
(``Problem.residual_tolerances``). The reference optimum a certificate compares with is
computed once per problem and cached here (:func:`reference_for`).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import numpy as np

from ssl_opt import registry
from ssl_opt.exceptions import UnsupportedProblemError
from ssl_opt.problems.base import NonConvexProblem
from ssl_opt.selection.select import select
from ssl_opt.solution import FAILED, OPTIMAL, Solution

#: Default tolerances per solver family. ``stationarity`` and ``feasibility`` are the two
#: classes a problem's residuals are declared in; ``agreement`` bounds the relative sup-norm
#: difference of the predictions (only checked when the problem says they are unique).
TOLERANCES: dict[str, dict[str, float]] = {
    "direct": {"eps_abs": 1e-8, "eps_rel": 1e-7, "stationarity": 1e-7, "feasibility": 1e-7,
               "agreement": 1e-4},
    "iterative": {"eps_abs": 1e-7, "eps_rel": 1e-6, "stationarity": 1e-6, "feasibility": 1e-6,
                  "agreement": 1e-3},
    "reference": {"eps_abs": 1e-7, "eps_rel": 1e-6, "stationarity": 1e-5, "feasibility": 1e-5,
                  "agreement": 1e-3},
}
#: Relative uncertainty assumed for a reference optimum when its solver reports no gap.
REFERENCE_GAP_REL = 1e-8


@dataclass
class Check:
    name: str
    value: float
    tolerance: float
    passed: bool
    note: str = ""


@dataclass
class Certificate:
    passed: bool
    objective: float
    reference_objective: float | None
    objective_gap: float | None
    residuals: dict[str, float]
    tolerances: dict[str, float]
    checks: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    solver: str = ""
    reference_solver: str | None = None

    @property
    def reasons(self) -> list[str]:
        return [f"{c.name} = {c.value:.3g} > {c.tolerance:.3g}" + (f" ({c.note})" if c.note else "")
                for c in self.checks if not c.passed]

    def report(self) -> str:
        lines = [f"Certificate for solver {self.solver!r}: {'PASSED' if self.passed else 'FAILED'}",
                 f"  objective            {self.objective:.12g}"]
        if self.reference_objective is not None:
            lines.append(f"  reference objective  {self.reference_objective:.12g}"
                         f"  ({self.reference_solver})")
        for c in self.checks:
            mark = "ok  " if c.passed else "FAIL"
            lines.append(f"  [{mark}] {c.name:<22} {c.value:10.3e}  tol {c.tolerance:.1e}"
                         + (f"  {c.note}" if c.note else ""))
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)

    def __repr__(self) -> str:
        gap = "n/a" if self.objective_gap is None else f"{self.objective_gap:.2e}"
        return f"Certificate(passed={self.passed}, objective_gap={gap}, residuals={self.residuals})"


def certify(problem, solution, reference=None, **tolerances) -> Certificate:
    """Certify ``solution`` for ``problem``.

    ``reference``: a reference :class:`Solution`; ``None`` computes one with the reference
    backend when the instance is small enough (else certifies on residuals alone and says so);
    ``False`` skips it. For a non-convex problem (TSVM, DA) the convex inner problem at ``x``
    is checked against its own reference (``inner_objective_gap``), and the gap to a global
    reference (exhaustive enumeration on tiny instances) is reported as information only.
    ``tolerances`` override the family defaults (``eps_abs``, ``eps_rel``,
    ``stationarity``, ``agreement``, and any residual name of ``problem.kkt``).
    """
    family = _tolerance_family(solution)
    tol = dict(TOLERANCES[family])
    tol.update(tolerances)
    notes: list[str] = []
    checks: list[Check] = []
    x = solution.x if isinstance(solution, Solution) else solution
    solver_name = getattr(solution, "solver", "") or "user point"
    values = problem.unpack(x)
    finite = all(np.all(np.isfinite(v)) for v in values.values())
    objective = float(problem.objective(values)) if finite else float("nan")
    checks.append(Check("finite", 0.0 if finite and np.isfinite(objective) else 1.0, 0.0,
                        finite and np.isfinite(objective),
                        "" if finite else "the solution contains NaN or inf"))
    if isinstance(solution, Solution) and solution.status != OPTIMAL:
        notes.append(f"the solver reported status {solution.status!r} (not optimal)")

    # The raw point goes to kkt: a solution may carry context beyond the variables (DA's T).
    residuals = problem.kkt(x) if finite else {}
    for name, value in residuals.items():
        limit = tol.get(name, tol[problem.residual_tolerances[name]])
        checks.append(Check(name, value, limit, bool(np.isfinite(value) and value <= limit)))
    if finite and not residuals:
        notes.append("no KKT residual is available for this problem; certified on the gap only")

    convex = problem.structure.convex
    if finite and isinstance(problem, NonConvexProblem):
        _check_inner_problem(problem, x, values, tol, checks, notes)

    ref = None
    if reference is None:
        ref, why = reference_for(problem)
        if ref is None:
            notes.append(f"no reference optimum: {why}; certified on residuals alone")
    elif reference is not False:
        ref = reference
    gap = ref_obj = None
    if ref is not None and not convex:
        ref_obj = float(ref.objective)
        gap = (objective - ref_obj) / max(1.0, abs(ref_obj))
        notes.append(f"global optimum ({getattr(ref, 'solver', 'reference')}) = {ref_obj:.10g}; "
                     f"this solution is {gap:.2e} (relative) above it — information only, the "
                     "problem is non-convex")
    elif ref is not None:
        ref_obj = float(ref.objective)
        check, gap = _gap_check("objective_gap", objective, ref, tol)
        checks.append(check)
        if check.note:
            notes.append(f"the solution improves on the reference ({ref.solver}, status "
                         f"{getattr(ref, 'status', '?')!r}) by {gap:.2e} (relative)")
        if finite:
            pred, ref_pred = problem.prediction(values), problem.prediction(ref)
            diff = float(np.max(np.abs(pred - ref_pred)) / max(1.0, np.max(np.abs(ref_pred))))
            if problem.unique_prediction:
                checks.append(Check("agreement", diff, tol["agreement"],
                                    diff <= tol["agreement"]))
            else:
                notes.append(f"predictions differ by {diff:.2e} (relative); the optimum's "
                             "predictions are not unique for this problem, so not checked")
    return Certificate(
        passed=all(c.passed for c in checks),
        objective=objective,
        reference_objective=ref_obj,
        objective_gap=gap,
        residuals=residuals,
        tolerances=tol,
        checks=checks,
        notes=notes,
        solver=solver_name,
        reference_solver=getattr(ref, "solver", None),
    )


def _gap_check(name, objective, ref, tol) -> tuple[Check, float]:
    """The pass rule of docs/design.md §2, ``|f − p*| ≤ eps_abs + eps_rel·max(1, |p*|) +
    gap_ref`` (relative)."""
    ref_obj = float(ref.objective)
    gap_ref = ref.info.get("duality_gap") if isinstance(ref, Solution) else None
    if gap_ref is None:
        gap_ref = REFERENCE_GAP_REL * max(1.0, abs(ref_obj))
    scale = max(1.0, abs(ref_obj))
    gap = abs(objective - ref_obj) / scale
    allowed = (tol["eps_abs"] + tol["eps_rel"] * scale + gap_ref) / scale
    # Below the reference is no fault of the solution (feasibility is checked by the
    # residuals): the reference optimum is only as accurate as its interior-point solve.
    below = bool(objective < ref_obj)
    ok = bool(np.isfinite(gap) and (gap <= allowed or below))
    note = "below the reference optimum" if below and gap > allowed else ""
    return Check(name, gap, allowed, ok, note), gap


def _check_inner_problem(problem, x, values, tol, checks, notes) -> None:
    """Non-convex problems: the convex inner problem (discrete / block variables fixed at
    ``x``) must be solved to optimality — checked against its own reference optimum."""
    inner = problem.inner_problem(x)
    point = {k: values[k] for k in inner.variables}
    ref, why = reference_for(inner)
    if ref is None:
        notes.append(f"inner convex problem not checked against a reference: {why}")
        return
    check, _ = _gap_check("inner_objective_gap", float(inner.objective(point)), ref, tol)
    checks.append(check)


def _tolerance_family(solution) -> str:
    if isinstance(solution, Solution):
        return solution.info.get("tolerance_family", "iterative")
    return "iterative"


#: ``certify`` computes a reference on its own up to this size, and when the reference's cost
#: model predicts at most this many seconds (an SDP on a few hundred points takes minutes).
CERTIFY_REFERENCE_MAX_N = 600
CERTIFY_REFERENCE_MAX_SECONDS = 60.0

_reference_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def reference_for(problem) -> tuple[Solution | None, str]:
    """The reference optimum of ``problem`` (cached per problem), or ``(None, reason)``."""
    if problem in _reference_cache:
        return _reference_cache[problem], ""
    n = problem.structure.sizes.get("n", 0)
    if n > CERTIFY_REFERENCE_MAX_N:
        return None, f"n = {n} > {CERTIFY_REFERENCE_MAX_N} is too large for the reference"
    try:
        selection = select(problem, "reference")
    except UnsupportedProblemError as exc:
        return None, str(exc)
    solver = registry.get_solver(selection.solver)
    predicted = selection.predicted_time[solver.name]
    if predicted > CERTIFY_REFERENCE_MAX_SECONDS:
        return None, (f"the reference ({solver.name}) is predicted to take {predicted:.0f} s > "
                      f"{CERTIFY_REFERENCE_MAX_SECONDS:.0f} s; pass reference= to certify "
                      "against one you computed")
    ref = solver.solve(problem)
    if ref.status == FAILED:
        return None, f"the reference solver failed: {ref.info.get('reason')}"
    _reference_cache[problem] = ref
    return ref, ""
