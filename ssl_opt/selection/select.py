"""Backend selection: predicted time and memory of every applicable solver, and the choice.

Predictions come from cost models (:mod:`~ssl_opt.selection.cost_model`) fitted by
``ssl-opt calibrate``
on this machine, else from the models shipped with the package, else from a solver's own
analytic ``predicted_time``; every prediction says which.

A problem stored in a form its family's calibration instances did not have corrects the memory
through ``problem.memory_for(solver, modeled_bytes) -> (bytes, note)`` and the time through
``problem.time_for(solver, modeled_seconds, measure) -> (seconds, note)``: a LapSVM whose K
is a products-only operator adds the 8n² of a dense copy (and the time to form it) to the
solvers that read K dense, and predicts O(n) vectors and the operator's own product time for
those that need only products (PCG); with ``measure`` that product time is timed on a sample
of the operator's rows (``KernelOperator.timed_product_seconds``). The notes are shown in the
prediction and in the reason of the choice.

A solver that can predict itself from measurements on the instance (``Solver.instance_time``:
PCG from the conditioning of its preconditioned Hessian and its timed products) overrides the
cost model, which knows the size only; ``Selection.explain()`` says what was measured and what
choosing cost.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from ssl_opt import registry
from ssl_opt._validation import check_bool
from ssl_opt.exceptions import InsufficientMemoryError, InvalidInputError, UnsupportedProblemError
from ssl_opt.optional import missing_reasons
from ssl_opt.problems.base import Problem
from ssl_opt.selection import model_store
from ssl_opt.selection.generators import cost_size, problem_key
from ssl_opt.selection.measure import available_memory
from ssl_opt.selection.race import RacePlan, plan_race

BACKENDS = ("auto", "fast", "reference")

#: With no ``time_budget``, ``auto`` still prefers the exact reference when it is predicted to
#: take at most this factor times the fastest fast solver (exactness is worth a little time).
REFERENCE_PREFERENCE = 1.25
#: With no time budget and no prediction for any fast solver, the reference is used when it
#: is predicted to take at most this many seconds.
AUTO_REFERENCE_SECONDS = 10.0
#: Without a time budget, a solver that does not reach a certified optimum on the problem
#: (``Solver.inexact``) is chosen only when nothing exact is predicted within this many seconds.
INEXACT_FALLBACK_SECONDS = 60.0
#: A prediction this far beyond the largest calibrated size is flagged as extrapolated.
EXTRAPOLATION_FACTOR = 4.0


@dataclass(frozen=True)
class Prediction:
    """Predicted wall seconds and peak extra bytes of one solver on one problem."""

    seconds: float
    memory: float
    #: "instance" (measured on this problem: ``Solver.instance_time``), "calibrated",
    #: "shipped", "analytic" or "none"; a borrowed model adds its key.
    source: str
    size: float = math.nan
    extrapolated: bool = False
    #: Why the problem corrected the model's memory (``problem.memory_for``), else "".
    note: str = ""


@dataclass
class Selection:
    """The chosen solver, why, and what was predicted for every applicable candidate."""

    solver: str
    backend: str
    reason: str
    predictions: dict[str, Prediction] = field(default_factory=dict)
    unsupported: dict[str, list[str]] = field(default_factory=dict)
    memory_limit: float = math.inf
    #: Wall seconds the choice took: the capability checks and the predictions, with the
    #: measurements they made on the instance (``Solver.instance_time``: conditioning probes,
    #: timed products).
    seconds: float = 0.0
    #: When the two fastest candidates are too close to call and one can run in slices:
    #: the race :func:`~ssl_opt.solve` runs (:mod:`ssl_opt.selection.race`), else None.
    race: RacePlan | None = None

    @property
    def predicted_time(self) -> dict[str, float]:
        return {k: p.seconds for k, p in self.predictions.items()}

    @property
    def predicted_memory(self) -> dict[str, float]:
        return {k: p.memory for k, p in self.predictions.items()}

    def table(self) -> str:
        """One line per candidate: predicted time, memory and the model's source."""
        lines = []
        for name, p in sorted(self.predictions.items(), key=lambda kv: _finite(kv[1].seconds)):
            mark = "*" if name == self.solver else " "
            extra = (", extrapolated" if p.extrapolated else "") + (f"; {p.note}" if p.note
                                                                     else "")
            lines.append(f"{mark} {name:<16} {_seconds(p.seconds):>9}  {_bytes(p.memory):>9}  "
                         f"({p.source}{extra})")
        return "\n".join(lines)

    def explain(self) -> str:
        """The choice and its reason, every candidate's prediction with what was measured on
        the instance or which model it came from, what choosing cost, and why the other
        registered solvers do not apply."""
        lines = [f"chose {self.solver} ({self.backend}): {self.reason}",
                 f"choosing took {_seconds(self.seconds)} (predictions and measurements on "
                 "this instance)", "predicted time, peak memory and source, fastest first:",
                 self.table()]
        if self.race is not None:
            lines.append(f"race: {self.race.describe()}")
        if self.unsupported:
            lines.append("not applicable:")
            lines += [f"  {name}: {'; '.join(reasons)}"
                      for name, reasons in sorted(self.unsupported.items())]
        return "\n".join(lines)

    def __str__(self) -> str:
        times = ", ".join(f"{k} ~{_seconds(v)}" for k, v in sorted(self.predicted_time.items()))
        return f"{self.solver} ({self.backend}): {self.reason} [predicted: {times}]"


def predict(solver, problem: Problem, measure: bool = True) -> Prediction:
    """The prediction of ``solver`` on ``problem`` (see the module docstring): measured on the
    instance where the solver can (``measure``) and the cost model elsewhere; a model that
    lowers to one of the solver's problem types is predicted as that problem."""
    lowering = solver.lowering_for(problem)
    if lowering is not None:
        problem = lowering.problem
    prediction = _model_prediction(solver, problem)
    notes = []
    memory_for = getattr(problem, "memory_for", None)
    if memory_for is not None:
        memory, note = memory_for(solver, prediction.memory)
        if note:
            prediction, notes = replace(prediction, memory=float(memory)), [note]
    time_for = getattr(problem, "time_for", None)
    if time_for is not None:
        seconds, note = time_for(solver, prediction.seconds, measure=measure)
        if note:
            prediction, notes = replace(prediction, seconds=float(seconds)), notes + [note]
    measured = solver.instance_time(problem) if measure else None
    if measured is not None:
        seconds, note = measured
        prediction = replace(prediction, seconds=float(seconds), source="instance",
                             extrapolated=False)
        notes.append(note)
    return replace(prediction, note="; ".join(notes)) if notes else prediction


def _model_prediction(solver, problem: Problem) -> Prediction:
    """The cost model's (or the solver's analytic) prediction, before ``memory_for``."""
    key = problem_key(problem)
    models = model_store.load_models()
    found = models.get((solver.name, key))
    source = None
    if found is None:  # borrow a model of another variant of the same family
        family = key.split("/", 1)[0]
        borrowed = sorted(((entry[1] != "calibrated", other), entry)
                          for (name, other), entry in models.items()
                          if name == solver.name and other.split("/", 1)[0] == family)
        if borrowed:
            (_, other), found = borrowed[0]
            source = f"{found[1]}, from {other}"
    if found is not None:
        model, origin = found
        generator = registry.generators().get(model.key)
        current = (model.size_keys if generator is None
                   else solver.cost_size_keys(model.key, generator.size_keys))
        if current == model.size_keys and set(current) <= set(problem.structure.sizes):
            size = cost_size(problem, model.size_keys)
            hi = model.size_range[1]
            return Prediction(model.predict_time(size), model.predict_memory(size),
                              source or origin, size,
                              bool(hi == hi and size > EXTRAPOLATION_FACTOR * hi))
    seconds = float(solver.predicted_time(problem))
    memory = float(solver.predicted_memory(problem))
    return Prediction(seconds, memory, "analytic" if seconds == seconds else "none")


def select(problem: Problem, backend: str = "auto", time_budget: float | None = None,
           memory_budget: float | None = None, options: Iterable[str] = (),
           measure: bool = True) -> Selection:
    """Choose a solver for ``problem`` and say why.

    * ``"reference"`` / ``"fast"``: the applicable solver of that backend with the smallest
      predicted time among those predicted to fit in memory.
    * ``"auto"``: the exact reference when it is predicted to finish within ``time_budget``
      seconds (default: within ``REFERENCE_PREFERENCE`` times the fastest fast solver), else
      the fastest fast solver; the reference again when no fast solver applies. A fast solver
      that says it does not reach a certified optimum on this problem (``Solver.inexact``,
      e.g. BCD on the hinge loss) is chosen only when nothing else is predicted within the
      time budget (default ``INEXACT_FALLBACK_SECONDS``); with ``"fast"`` likewise, among the
      fast solvers (an exact generic solver predicted for hours does not displace it).

    ``memory_budget`` (bytes, default: the memory the OS reports available) excludes solvers
    predicted to need more; when none is left, :class:`InsufficientMemoryError` explains.
    ``options`` (names, e.g. the keywords given to :func:`~ssl_opt.solve`) excludes solvers
    that do not take every one of them (``early_stopping`` leaves PCG). ``measure=False``
    skips the measurements on the instance (``Solver.instance_time``, e.g. PCG's conditioning
    probe, about ten products): the cost models alone decide, from the sizes.
    """
    began = time.perf_counter()
    if backend not in BACKENDS:
        raise InvalidInputError(f"backend must be one of {BACKENDS}, got {backend!r}.")
    if not isinstance(problem, Problem):
        raise InvalidInputError(
            f"problem must be an ssl_opt Problem (e.g. ssl_opt.problems.LapSVM), "
            f"got {type(problem).__name__}."
        )
    for value, name in ((time_budget, "time_budget"), (memory_budget, "memory_budget")):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not value > 0):
            raise InvalidInputError(f"{name} must be a positive number or None, got {value!r}.")
    check_bool(measure, "measure")
    table = registry.solvers()
    if not table:
        raise UnsupportedProblemError(
            "no solver is registered (were the built-in plugins unregistered?); register one "
            "with ssl_opt.register_plugin, or reinstall ssl-opt."
        )
    names = [] if options is None else (
        list(options) if isinstance(options, Iterable) and not isinstance(options, str) else None)
    if names is None or not all(isinstance(o, str) for o in names):
        raise InvalidInputError(f"options must be an iterable of option names (e.g. ['tol']), "
                                f"got {options!r}.")
    wanted_options = sorted(set(names))
    unsupported = {name: s.missing(problem) or _options_missing(s, wanted_options)
                   for name, s in table.items()}
    ok = {name: table[name] for name, reasons in unsupported.items() if not reasons}
    unsupported = {name: reasons for name, reasons in unsupported.items() if reasons}
    predictions = {name: predict(s, problem, measure) for name, s in ok.items()}
    limit = float(memory_budget) if memory_budget is not None else available_memory()
    fits = {n for n, p in predictions.items() if not p.memory > limit}

    def ranked(kind):
        return sorted((n for n in ok if ok[n].backend == kind and n in fits),
                      key=lambda n: (_finite(predictions[n].seconds), ok[n].preference, n))

    refs, fast = ranked("reference"), ranked("fast")
    inexact = {n: ok[n].inexact(problem) for n in fast}
    exact_fast = [n for n in fast if not inexact[n]]

    def pick(name, reason):
        if inexact.get(name):
            reason += f"; note: {inexact[name]}"
        lowering = table[name].lowering_for(problem)
        if lowering is not None:
            reason += (f"; this model is exactly a {type(lowering.problem).__name__}, solved "
                       f"by that family's solver {name!r}")
        reason += _memory_reasons(name, predictions, fits, limit)
        race = (plan_race(exact_fast, predictions, ok)
                if exact_fast and name == exact_fast[0] else None)
        return Selection(name, table[name].backend, reason, predictions, unsupported, limit,
                         time.perf_counter() - began, race)

    wanted = {"auto": ("reference", "fast"), "reference": ("reference",), "fast": ("fast",)}
    if not any(ok[n].backend in wanted[backend] for n in ok):
        absent = [missing_reasons(s.needs_packages) for s in table.values()
                  if s.backend in wanted[backend]]
        if absent and all(absent):
            needs = sorted({r for reasons in absent for r in reasons})
            raise UnsupportedProblemError(f"no {backend} solver is available here: each needs "
                                          f"{' and '.join(needs)}.")
        raise _nothing_applies(problem, "any" if backend == "auto" else backend, unsupported)
    if not (refs if backend == "reference" else fast if backend == "fast" else refs + fast):
        raise _out_of_memory(problem, predictions, limit)
    if backend == "reference":
        return pick(refs[0], "reference backend requested; smallest predicted time")
    approximate = [n for n in fast if inexact[n]]
    deadline = time_budget if time_budget is not None else INEXACT_FALLBACK_SECONDS
    if backend == "fast":
        if exact_fast and not (approximate and predictions[exact_fast[0]].seconds > deadline):
            return pick(exact_fast[0], "fastest applicable fast solver by the cost model")
        if not exact_fast:
            return pick(fast[0], "the only kind of fast solver that applies is approximate here")
        return pick(approximate[0], f"no fast solver that reaches a certified optimum is "
                                    f"predicted within {_seconds(deadline)} (fastest: "
                                    f"{exact_fast[0]} at "
                                    f"{_seconds(predictions[exact_fast[0]].seconds)})")
    choice = _auto(refs, exact_fast, predictions, time_budget)
    if choice is not None and not (approximate and predictions[choice[0]].seconds > deadline):
        return pick(*choice)
    if choice is None:
        return pick(approximate[0], "no solver that reaches a certified optimum applies")
    return pick(approximate[0], f"no solver that reaches a certified optimum is predicted "
                                f"within {_seconds(deadline)} (fastest: {choice[0]} at "
                                f"{_seconds(predictions[choice[0]].seconds)})")


def _auto(refs, fast, predictions, time_budget) -> tuple[str, str] | None:
    """The auto rule among solvers that reach a certified optimum: (name, reason) or None."""
    t_fast = predictions[fast[0]].seconds if fast else math.nan
    if refs:
        t_ref = predictions[refs[0]].seconds
        if time_budget is not None:
            budget, why = float(time_budget), f"the time budget {_seconds(time_budget)}"
        elif t_fast == t_fast:
            budget = REFERENCE_PREFERENCE * t_fast
            why = f"{REFERENCE_PREFERENCE:g}x the fastest fast solver ({fast[0]})"
        else:
            budget = AUTO_REFERENCE_SECONDS
            why = f"{_seconds(AUTO_REFERENCE_SECONDS)} (no fast solver has a prediction)"
        if t_ref <= budget:
            return refs[0], (f"the exact reference is predicted at {_seconds(t_ref)}, within "
                             f"{why}")
        if not fast:
            return refs[0], "no fast solver applies to this problem; using the reference"
        return fast[0], (f"the reference is predicted at {_seconds(t_ref)}, beyond {why}; "
                         f"{fast[0]} is the fastest fast solver ({_seconds(t_fast)})")
    if not fast:
        return None
    reason = "fastest applicable fast solver by the cost model"
    if time_budget is not None and t_fast > time_budget:
        reason += f" (predicted {_seconds(t_fast)}, over the time budget; nothing is faster)"
    return fast[0], reason


def _memory_reasons(name, predictions, fits, limit) -> str:
    """What memory decided: the chosen solver's memory note, and the applicable solvers left
    out for being predicted over ``limit`` (each with its note)."""
    out = ""
    if predictions[name].note:
        chosen = predictions[name]
        out += f"; {name} (~{_seconds(chosen.seconds)}, ~{_bytes(chosen.memory)}): {chosen.note}"
    over = [n for n in sorted(predictions) if n not in fits]
    if over:
        out += f"; predicted over the memory limit {_bytes(limit)}: " + ", ".join(
            f"{n} ~{_bytes(predictions[n].memory)}"
            + (f" ({predictions[n].note})" if predictions[n].note else "") for n in over)
    return out


def _options_missing(solver, options: list[str]) -> list[str]:
    lacking = [o for o in options if o not in solver.options]
    if not lacking:
        return []
    return [f"the option(s) {lacking} (it takes {sorted(solver.options) or 'none'})"]


def _finite(seconds: float) -> float:
    return seconds if seconds == seconds else math.inf  # NaN (no model) sorts last


def _seconds(x: float) -> str:
    return "?" if x != x else f"{x:.3g} s"


def _bytes(x: float) -> str:
    if x != x:
        return "?"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(x) < 1024 or unit == "GiB":
            return f"{x:.3g} {unit}"
        x /= 1024.0
    return f"{x:.3g} TiB"


def _nothing_applies(problem, kind, unsupported) -> UnsupportedProblemError:
    why = "; ".join(f"{name}: {', '.join(r)}" for name, r in unsupported.items())
    which = "" if kind == "any" else f"{kind} "
    return UnsupportedProblemError(
        f"no {which}solver can solve this {type(problem).__name__} ({problem.structure.variant})."
        f" Why each registered solver refuses: {why}"
    )


def _out_of_memory(problem, predictions, limit) -> InsufficientMemoryError:
    need = "; ".join(f"{n} ~{_bytes(p.memory)}" for n, p in sorted(predictions.items()))
    return InsufficientMemoryError(
        f"no applicable solver is predicted to fit this {type(problem).__name__} "
        f"({problem.structure.describe()}) in {_bytes(limit)}: {need}. Free memory, pass a "
        "larger memory_budget=, or solve a smaller instance (e.g. fewer points or a sparser "
        "graph)."
    )
