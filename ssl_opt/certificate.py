"""Certificates: check any solution against a reference optimum and against optimality
residuals computed from the problem data alone (docs/design.md §2).

Pass rule (CVXPY / qpsolvers / SCS practice)::

    |f − p*| ≤ eps_abs + eps_rel·max(1, |p*|) + gap_ref

(or f below p*: then the reference was the less accurate one, which the report says), and
every residual below its tolerance; NaN or inf fails. Tolerances depend on the solver
family: ``direct`` (Newton, direct solves), ``iterative`` (PCG, ADMM, ...), ``reference``;
each residual is judged by the tolerance class its problem declares for it
(``Problem.residual_tolerances``). The reference optimum a certificate compares with is
computed once per problem and cached here (:func:`reference_for`), when its predicted time is
within ``reference_budget``.

A reference is trusted only when it reports status ``optimal``: any other (``inaccurate``,
``max_iterations``, ...) is not used as the optimum, and the certificate falls back to the
residuals alone (``Certificate.residuals_only``, with a note saying why). A user loss's
derivatives are checked against finite differences of its value before anything else
(:func:`~ssl_opt.components.losses.check_loss_derivatives`).

Scaling: an objective of magnitude (``max(|f|, |p*|)``) above ``BAD_SCALE_HIGH``, or a data
array of the problem whose largest |entry| is outside ``[BAD_DATA_LOW, BAD_DATA_HIGH]`` —
limits narrowed to the ``*_INACCURATE`` ones when the reference reports a status short of
optimal, since its inaccuracy is then most likely the scaling's doing — marks the instance
badly scaled (a tiny objective alone does not: an optimum of 0 is legitimate, e.g. LASS with
no tag; data scaled down show in the data): ``certify`` warns
(:class:`~ssl_opt.exceptions.BadScalingWarning`), says so in the report and recommends
rescaling. The warning does not change the verdict.
"""

from __future__ import annotations

import math
import numbers
import warnings
import weakref
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ssl_opt import registry
from ssl_opt.components.losses import MarginLoss, check_loss_derivatives
from ssl_opt.exceptions import BadScalingWarning, InvalidInputError, UnsupportedProblemError
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
#: Default ``reference_budget`` of :func:`certify`: the reference is computed when its cost
#: model predicts at most this many seconds (an SDP on a few hundred points takes minutes).
CERTIFY_REFERENCE_BUDGET = 60.0
#: An objective magnitude above ``BAD_SCALE_HIGH`` marks a badly scaled instance: the solvers'
#: absolute tolerances then sit at round-off of the objective. When the reference itself reports
#: ``inaccurate``, the lower ``BAD_SCALE_HIGH_INACCURATE`` applies: its inaccuracy is then most
#: likely the scaling's doing.
BAD_SCALE_HIGH = 1e8
BAD_SCALE_HIGH_INACCURATE = 1e5
#: Bands for the largest |entry| of each data array the problem stores (a kernel, a
#: Laplacian, a data or tag matrix): data scaled far from 1 is what makes the objective or the
#: reference's accuracy drift, and is visible even when the objective is not (LapSVM's optimum
#: does not change when K is multiplied by a constant).
BAD_DATA_LOW = 1e-8
BAD_DATA_HIGH = 1e8
BAD_DATA_LOW_INACCURATE = 1e-4
BAD_DATA_HIGH_INACCURATE = 1e4


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
    #: No reference optimum was compared with (none available, skipped, or not trusted because
    #: its status is short of optimal): the certificate rests on the residuals alone.
    residuals_only: bool = False
    #: Status of the reference considered (trusted or not), ``None`` without one.
    reference_status: str | None = None
    #: The magnitude of the objective or of the data says the data should be rescaled (a
    #: BadScalingWarning was issued).
    badly_scaled: bool = False

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


def certify(problem, solution, reference=None, reference_budget: float = CERTIFY_REFERENCE_BUDGET,
            **tolerances) -> Certificate:
    """Certify ``solution`` for ``problem``.

    ``reference``: a reference :class:`Solution`; ``None`` computes one with the reference
    backend when its predicted time is at most ``reference_budget`` seconds (else certifies on
    residuals alone and says so); ``False`` skips it. A reference whose status is not
    ``optimal`` is never used as the optimum: the certificate falls back to the residuals
    alone and says so (``residuals_only``). For a non-convex problem (TSVM, DA) the convex
    inner problem at ``x`` is checked against its own reference (``inner_objective_gap``), and
    the gap to a global reference (exhaustive enumeration on tiny instances) is reported as
    information only. A user loss whose derivatives disagree with its value raises
    InvalidInputError; a user term's (a model's) fails the check ``oracles``, naming it, since
    the stationarity residual rests on them; a badly scaled instance gets a
    BadScalingWarning.
    ``tolerances`` override the family defaults (``eps_abs``, ``eps_rel``,
    ``stationarity``, ``agreement``, and any residual name of ``problem.kkt``).
    """
    reference_budget = check_reference_budget(reference_budget)
    loss = getattr(problem, "loss", None)
    if isinstance(loss, MarginLoss):
        check_loss_derivatives(loss)
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
    if finite and not np.isfinite(objective) and hasattr(problem, "diagnose"):
        from ssl_opt.modeling.diagnosis import nonfinite_terms

        checks[-1].note = "; ".join(nonfinite_terms(problem, values))
    # The stationarity below rests on the terms' own oracles: a user term's are checked here,
    # whatever the solver was told (check_terms=False), or the certificate could pass a point
    # that is stationary only for a wrong gradient.
    oracle_errors = problem.oracle_errors(values) if finite and hasattr(
        problem, "oracle_errors") else []
    checks += [Check("oracles", 1.0, 0.0, False, error) for error in oracle_errors]
    approximation = getattr(problem, "approximation_note", "")
    if approximation:
        notes.append(approximation)
    if isinstance(solution, Solution) and solution.status != OPTIMAL:
        reason = solution.info.get("reason")
        notes.append(f"the solver reported status {solution.status!r} (not optimal)"
                     + (f": {reason}" if reason else ""))

    # The raw point goes to kkt: a solution may carry context beyond the variables (DA's T);
    # a model starts its minimization over subgradients at the solver's multipliers (any
    # feasible start only bounds the residual from above, so this never understates it).
    point = solution if getattr(problem, "reads_multipliers", False) else x
    residuals = problem.kkt(point) if finite else {}
    for name, value in residuals.items():
        limit, passed = _residual_check(problem, tol, name, value)
        checks.append(Check(name, value, limit, passed))
    if finite and not residuals:
        notes.append("no KKT residual is available for this problem; certified on the gap only")

    convex = problem.structure.convex
    if finite and isinstance(problem, NonConvexProblem):
        _check_inner_problem(problem, x, values, tol, checks, notes, reference_budget)

    ref = candidate = None
    if reference is None:
        candidate, why = reference_for(problem, reference_budget)
        if candidate is None:
            notes.append(f"no reference optimum: {why.rstrip('.')}; certified on residuals "
                         "alone")
    elif reference is not False:
        candidate = reference
    ref_status = None if candidate is None else getattr(candidate, "status", OPTIMAL)
    if candidate is not None:
        distrust = untrusted_reference(candidate)
        if distrust:
            notes.append(f"certified on residuals alone: {distrust}, so it is not used as "
                         "the optimum")
            if not residuals:
                checks.append(Check("trusted_reference", 1.0, 0.0, False,
                                    f"{distrust} and the problem has no residual to fall "
                                    "back on"))
            if finite and convex:
                _excess_check(problem, objective, candidate, tol, checks)
        else:
            ref = candidate
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
    badly_scaled = _scaling_notes(problem, objective, candidate, ref_status, notes)
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
        reference_solver=getattr(candidate, "solver", None),
        residuals_only=ref is None,
        reference_status=ref_status,
        badly_scaled=badly_scaled,
    )


def check_reference_budget(value) -> float:
    """``reference_budget`` is a number of seconds > 0 (``inf``: no limit)."""
    if (isinstance(value, bool) or not isinstance(value, numbers.Real) or np.isnan(value)
            or value <= 0):
        raise InvalidInputError(
            f"reference_budget must be a number of seconds > 0 (inf for no limit), got "
            f"{value!r}.")
    return float(value)


def untrusted_reference(ref) -> str:
    """Why ``ref`` may not serve as the optimum ("" when it may): its status is short of
    optimal, or its objective is not finite."""
    status = getattr(ref, "status", OPTIMAL)
    name = getattr(ref, "solver", None) or "reference"
    if status != OPTIMAL:
        return f"the reference ({name}) reported status {status!r}"
    if not np.isfinite(float(ref.objective)):
        return f"the reference ({name}) has objective {float(ref.objective)!r}"
    return ""


def _scaling_notes(problem, objective, candidate, ref_status, notes) -> bool:
    """Warn (BadScalingWarning and a note) when the magnitude of the objective or of the
    problem's data shows the instance is badly scaled; the rule is in the module docstring."""
    inaccurate = ref_status is not None and ref_status != OPTIMAL
    magnitudes = {"the objective": max(
        (abs(v) for v in (objective, getattr(candidate, "objective", np.nan)) if np.isfinite(v)),
        default=np.nan)}
    bands = {"the objective": (0.0, BAD_SCALE_HIGH_INACCURATE if inaccurate else BAD_SCALE_HIGH)}
    for name, size in data_magnitudes(problem).items():
        magnitudes[f"{name} (largest |entry|)"] = size
        bands[f"{name} (largest |entry|)"] = ((BAD_DATA_LOW_INACCURATE, BAD_DATA_HIGH_INACCURATE)
                                             if inaccurate else (BAD_DATA_LOW, BAD_DATA_HIGH))
    outside = [f"{what} is {size:.1e}, outside [{bands[what][0]:.0e}, {bands[what][1]:.0e}]"
               if bands[what][0] else f"{what} is {size:.1e} > {bands[what][1]:.0e}"
               for what, size in magnitudes.items()
               if np.isfinite(size) and (size > bands[what][1] or 0.0 < size < bands[what][0])]
    if not outside:
        return False
    message = ("the instance looks badly scaled: " + "; ".join(outside)
               + (f"; the reference reported status {ref_status!r}" if inaccurate else "")
               + ". Solvers and certificates may disagree at such scales: rescale the data "
               "(e.g. divide each matrix by its largest entry) so that they and the objective "
               "are of order 1")
    notes.append(message)
    warnings.warn(message, BadScalingWarning, stacklevel=3)
    return True


def data_magnitudes(problem) -> dict[str, float]:
    """Largest |entry| of each public float array (dense or sparse) the problem stores."""
    sizes = {}
    for name, value in vars(problem).items():
        if name.startswith("_"):
            continue
        data = value.data if sp.issparse(value) else value
        if (isinstance(data, np.ndarray) and data.size
                and np.issubdtype(data.dtype, np.floating)):
            finite = np.abs(data[np.isfinite(data)])
            if finite.size:
                sizes[name] = float(finite.max())
    return sizes


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


def _excess_check(problem, objective, ref, tol, checks) -> None:
    """One-sided check against an untrusted reference: the objective *recomputed* at its point
    is an upper bound on p* when that point is feasible, so a solution above it by more than the
    pass rule allows is shown not optimal. It can fail a solution, never prove it optimal."""
    point = problem.unpack(ref.x)
    if not all(np.all(np.isfinite(v)) for v in point.values()):
        return
    upper = float(problem.objective(point))
    feasibility = {name: value for name, value in problem.kkt(ref.x).items()
                   if problem.residual_tolerances[name] == "feasibility"}
    if not np.isfinite(upper) or any(not value <= tol.get(name, tol["feasibility"])
                                     for name, value in feasibility.items()):
        return
    scale = max(1.0, abs(upper))
    excess = (objective - upper) / scale
    allowed = (tol["eps_abs"] + tol["eps_rel"] * scale) / scale
    if excess > allowed:
        checks.append(Check("objective_gap", excess, allowed, False,
                            "above the objective at the untrusted reference's point"))


def _check_inner_problem(problem, x, values, tol, checks, notes, budget) -> None:
    """Non-convex problems: the convex inner problem (discrete / block variables fixed at
    ``x``) must be solved to optimality — checked against its own reference optimum."""
    inner = problem.inner_problem(x)
    point = {k: values[k] for k in inner.variables}
    ref, why = reference_for(inner, budget)
    if ref is not None:
        why = untrusted_reference(ref)
        ref = None if why else ref
    if ref is None:
        notes.append(f"inner convex problem not checked against a reference: {why}")
        return
    check, _ = _gap_check("inner_objective_gap", float(inner.objective(point)), ref, tol)
    checks.append(check)


def residuals_above_tolerance(problem, point, family: str = "iterative") -> dict[str, float]:
    """The residuals of ``problem.kkt(point)`` that :func:`certify` would fail with the
    tolerances of ``family`` (name → value): empty when the residual checks pass. For a
    solver's stopping test, so that it never reports ``optimal`` at a point its certificate
    rejects."""
    if family not in TOLERANCES:
        raise InvalidInputError(f"family must be one of {sorted(TOLERANCES)}, got {family!r}.")
    tol = TOLERANCES[family]
    return {name: value for name, value in problem.kkt(point).items()
            if not _residual_check(problem, tol, name, value)[1]}


def _residual_check(problem, tol: dict, name: str, value: float) -> tuple[float, bool]:
    """``(limit, passed)`` of the residual ``name``: its own tolerance in ``tol`` if given,
    else that of its kind (``problem.residual_tolerances``); NaN never passes."""
    limit = tol.get(name, tol[problem.residual_tolerances[name]])
    return limit, bool(np.isfinite(value) and value <= limit)


def _tolerance_family(solution) -> str:
    if isinstance(solution, Solution):
        return solution.info.get("tolerance_family", "iterative")
    return "iterative"


_reference_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

#: A reference predicted within ``reference_budget`` is stopped when it runs past
#: ``REFERENCE_TIME_FACTOR × reference_budget + REFERENCE_TIME_SLACK`` seconds: a cost model can
#: be far off on an ill-conditioned instance (an interior point needing many more iterations
#: than on the calibration instances), and a certificate must not hang on it.
REFERENCE_TIME_FACTOR, REFERENCE_TIME_SLACK = 2.0, 5.0


def reference_time_limit(budget: float) -> float | None:
    """Wall-clock limit of a reference computed for a certificate (None for no budget)."""
    return None if math.isinf(budget) else REFERENCE_TIME_FACTOR * budget + REFERENCE_TIME_SLACK


def reference_for(problem, budget: float = CERTIFY_REFERENCE_BUDGET
                  ) -> tuple[Solution | None, str]:
    """The reference solution of ``problem`` (cached per problem, whatever its status: the
    caller judges it with :func:`untrusted_reference`), or ``(None, reason)`` when none is
    available or its predicted time exceeds ``budget`` seconds."""
    if problem in _reference_cache:
        return _reference_cache[problem], ""
    try:
        selection = select(problem, "reference")
    except UnsupportedProblemError as exc:
        return None, str(exc)
    solver = registry.get_solver(selection.solver)
    predicted = selection.predicted_time[solver.name]
    if predicted > budget:
        return None, (f"the reference ({solver.name}) is predicted to take {predicted:.3g} s > "
                      f"reference_budget = {budget:.3g} s; raise reference_budget or pass "
                      "reference= to certify against one you computed")
    limit = reference_time_limit(budget)
    options = {"time_limit": limit} if limit is not None and "time_limit" in solver.options else {}
    ref = solver.solve(problem, **options)
    if ref.status == FAILED:
        if "user_limit" in str(ref.info.get("reason", "")):
            return None, (f"the reference ({solver.name}) was stopped at its time limit of "
                          f"{limit:.3g} s, though predicted to take {predicted:.3g} s (the "
                          "limit is twice reference_budget plus 5 s); raise reference_budget "
                          "or pass reference= to certify against one you computed")
        return None, f"the reference solver failed: {ref.info.get('reason')}"
    _reference_cache[problem] = ref
    return ref, ""
