"""The Solver base class every backend plugin implements.

A solver declares, as data, what it can solve and what it needs:

* ``problem_types`` — the problem classes it accepts;
* ``requires`` — capabilities it needs from the problem's components, e.g.
  ``{"loss": ("derivative", "second_derivative")}``; a component lists what it offers in its
  ``capabilities`` (the way skglm's solvers list the datafit and penalty methods they need);
* ``needs_packages`` — optional packages it imports (e.g. ``("cvxpy",)``), each installed by an
  extra (:mod:`ssl_opt.optional`);
* ``options`` — each :class:`Option` with its default, doc and check;
* ``tolerance_family`` for certification (``"direct"``, ``"iterative"`` or ``"reference"``),
  and a cost model used by ``backend="auto"``.

:meth:`Solver.missing` turns the declaration into readable reasons (a solver adds reasons
that are not capabilities, e.g. a size limit, by extending it); :meth:`Solver.solve` checks
the problem and validates every option once, for every solver, before running.
"""

from __future__ import annotations

import contextlib
import functools
import numbers
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from threadpoolctl import ThreadpoolController

from ssl_opt import progress
from ssl_opt._validation import check_positive, optional
from ssl_opt.exceptions import InvalidInputError, UnsupportedProblemError
from ssl_opt.optional import missing_reasons
from ssl_opt.solution import FAILED, INFEASIBLE, UNBOUNDED, Solution


@dataclass(frozen=True)
class Option:
    """A solver (or certificate) option: default, documentation and the check a value must
    pass, ``check(value, name) -> value`` (see the checks in :mod:`ssl_opt._validation`); a
    check raises :class:`~ssl_opt.exceptions.InvalidInputError` naming the option."""

    default: Any
    doc: str
    check: Callable[[Any, str], Any] | None = None

    def validate(self, value: Any, name: str) -> Any:
        return value if self.check is None else self.check(value, name)


#: The ``time_limit`` option of the solvers that take one.
TIME_LIMIT_OPTION = Option(None, "seconds at most (None: no limit); beyond, the best iterate "
                           "is returned with status 'time_limit' unless it certifies",
                           optional(check_positive))


def validate_options(declared: Mapping[str, Option], given: Mapping[str, Any],
                     owner: str) -> dict[str, Any]:
    """Defaults updated with ``given``, each value checked; unknown names are an error."""
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise InvalidInputError(
            f"unknown option(s) {unknown} for {owner}; it accepts {sorted(declared)}."
        )
    values = {k: o.default for k, o in declared.items()}
    values.update(given)
    return {k: declared[k].validate(v, k) for k, v in values.items()}


def capabilities_of(component) -> frozenset[str]:
    """What a problem component (a loss, a regularizer, ...) declares it offers."""
    return frozenset(getattr(component, "capabilities", ()))


def lacking_capabilities(problem, requires: Mapping[str, tuple[str, ...]]) -> list[str]:
    """One readable reason per component of ``problem`` that lacks a capability ``requires``
    names (``{attribute: (capability, ...)}``)."""
    reasons = []
    for attribute, needed in requires.items():
        component = getattr(problem, attribute, None)
        lacking = [c for c in needed if c not in capabilities_of(component)]
        if lacking:
            reasons.append(f"a {attribute} with {', '.join(lacking)} (this problem's "
                           f"{attribute} {component!r} does not offer "
                           f"{'it' if len(lacking) == 1 else 'them'})")
    return reasons


class Solver:
    """Base class of solver plugins."""

    name: ClassVar[str] = "abstract"
    backend: ClassVar[str] = "fast"  # "fast" or "reference"
    tolerance_family: ClassVar[str] = "iterative"  # "direct", "iterative" or "reference"
    problem_types: ClassVar[tuple[type, ...]] = ()
    #: Capabilities needed from the problem's components: ``{attribute: (capability, ...)}``.
    requires: ClassVar[dict[str, tuple[str, ...]]] = {}
    #: Optional packages the solver imports; where one is missing the solver does not apply
    #: and :meth:`missing` gives the command that installs it.
    needs_packages: ClassVar[tuple[str, ...]] = ()
    #: Where to go instead, added to the reasons when a problem of a supported type lacks a
    #: required capability (e.g. which solvers take the hinge loss).
    hint: ClassVar[str] = ""
    #: Among solvers predicted equally fast, the lower rank is chosen (``backend="auto"``).
    preference: ClassVar[int] = 1
    #: Starting from the problem's quadratic (square-loss) surrogate is one step of this
    #: solver from 0, so a shared factorization of the surrogate saves that step on every
    #: class of a one-vs-rest problem (``plugins/model/one_vs_rest.py``). Needs ``warm_start``.
    starts_from_quadratic: ClassVar[bool] = False
    #: Takes ``time_limit`` and ``warm_start`` options, ends ``time_limit`` with its iterate,
    #: continues exactly from that Solution given back as ``warm_start`` on the same problem
    #: (iterations and history counted on), and records ``grad_norm`` in units of its ``tol``:
    #: ``solve`` may run it for a slice of a rival's predicted time, extrapolate, and go on
    #: without losing the slice (:mod:`ssl_opt.selection.race`).
    resumable: ClassVar[bool] = False
    description: ClassVar[str] = ""
    options: ClassVar[dict[str, Option]] = {}
    #: Known growth per ``family/variant`` key (or bare family): ``(exponent, why)``, the
    #: exponent in the size of that family's generator; calibration reports the fitted exponent
    #: beside it.
    complexity: ClassVar[dict[str, tuple[float, str]]] = {}
    #: Cost-model size of this solver where it differs from the family generator's, per
    #: ``family/variant`` key or family (e.g. the full NPKL SDP grows with n, not l).
    size_keys: ClassVar[dict[str, tuple[str, ...]]] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in _STRUCTURAL:
            if name in cls.__dict__:
                setattr(cls, name, _on_lowered(cls.__dict__[name]))

    def lowering_for(self, problem):
        """The :class:`~ssl_opt.modeling.lowering.Lowering` of a model ``problem`` to one of
        this solver's problem types, or None (not a model, a model it takes as is, or none
        applies)."""
        lowerings = getattr(problem, "lowerings", None)
        if lowerings is None or isinstance(problem, self.problem_types):
            return None
        for lowering in lowerings.values():
            if isinstance(lowering.problem, self.problem_types):
                return lowering
        return None

    def missing(self, problem) -> list[str]:
        """Reasons this solver cannot solve ``problem`` (empty when it can), read from
        ``problem_types``, ``requires`` and ``needs_packages``."""
        absent = missing_reasons(self.needs_packages)
        if absent:
            return absent
        if not isinstance(problem, self.problem_types):
            kinds = ", ".join(t.__name__ for t in self.problem_types)
            failures = getattr(problem, "lowering_failures", None)
            if failures is not None:
                why = [failures[t.__name__] for t in self.problem_types
                       if t.__name__ in failures]
                return [f"a model of the structure of {kinds}"
                        + (f" ({'; '.join(why)})" if why else " (no lowering to it is known)")]
            return [f"problem type {type(problem).__name__} (supports {kinds})"]
        reasons = lacking_capabilities(problem, self.requires)
        if reasons and self.hint:
            reasons.append(self.hint)
        return reasons

    def supports(self, problem) -> bool:
        return not self.missing(problem)

    def inexact(self, problem) -> str:
        """Why this solver does not reach a certified optimum on ``problem`` ("" when it does);
        ``backend="auto"`` then uses it only when nothing exact is predicted in time."""
        return ""

    def blas_threads(self, problem) -> int | None:
        """BLAS threads for the solve (None: the process's setting). A solver whose loop is
        many small or memory-bound BLAS calls returns 1, decided by measurement: a second
        thread gains little there and, when another process loads the machine, costs a
        wait at every call."""
        return None

    def predicted_time(self, problem) -> float:
        """An analytic estimate of seconds, used only where no calibrated cost model exists
        (:mod:`ssl_opt.selection.cost_model`); NaN when the solver offers none."""
        return float("nan")

    def instance_time(self, problem) -> tuple[float, str] | None:
        """Seconds predicted from measurements on this very instance (a conditioning probe, a
        timed product), with a note saying what was measured; None leaves the prediction to
        the cost model. Selection prefers it to the cost model (its source is "instance"):
        an iterative solver's iterations follow the instance's conditioning, which its size
        does not tell."""
        return None

    def predicted_memory(self, problem) -> float:
        """An analytic estimate of peak extra bytes, used where no calibrated model exists."""
        return float("nan")

    def cost_size_keys(self, key: str, default: tuple[str, ...]) -> tuple[str, ...]:
        """The structure sizes whose product is this solver's cost-model size on ``key``."""
        found = self.size_keys.get(key, self.size_keys.get(key.split("/", 1)[0]))
        return tuple(default) if found is None else tuple(found)

    def expected_growth(self, key: str) -> tuple[float, str] | None:
        """``complexity`` for ``family/variant`` ``key``, else for its family, else None."""
        if key in self.complexity:
            return self.complexity[key]
        return self.complexity.get(key.split("/", 1)[0])

    def solve(self, problem, **options) -> Solution:
        lowering = self.lowering_for(problem)
        if lowering is not None:
            return self._solve_lowered(problem, lowering, options)
        missing = self.missing(problem)
        if missing:
            raise UnsupportedProblemError(
                f"solver {self.name!r} cannot solve this {type(problem).__name__}: "
                + "; ".join(missing)
                + ". See ssl_opt.list_solvers() for solvers that can."
            )
        opts = validate_options(self.options, options, f"solver {self.name!r}")
        threads = self.blas_threads(problem)
        valid = threads is None or (isinstance(threads, numbers.Integral)
                                    and not isinstance(threads, bool) and threads >= 1)
        if not valid:
            raise InvalidInputError(
                f"solver {self.name!r}: blas_threads(problem) must return None or an int >= 1, "
                f"got {threads!r}.")
        listener = progress.active()
        if listener is None:
            return self._timed_solve(problem, opts, threads)
        listener.solve_started(self.name)
        solution = None
        try:
            solution = self._timed_solve(problem, opts, threads)
        finally:
            listener.solve_finished(self.name, solution)
        return solution

    def _timed_solve(self, problem, opts: dict, threads: int | None) -> Solution:
        """``_solve`` with the BLAS threads of :meth:`blas_threads`, timed, its objective
        evaluated from the problem data and its provenance recorded."""
        start = time.perf_counter()
        with (_thread_pools().limit(limits=threads, user_api="blas") if threads
              else contextlib.nullcontext()):
            solution = self._solve(problem, **opts)
        if solution.status != FAILED:
            # Every backend reports the objective evaluated the same way, from problem data.
            solution.info.setdefault("solver_objective", solution.objective)
            with np.errstate(all="ignore"):
                solution.objective = float(problem.objective(solution.x))
        _honest_status(problem, solution)
        solution.time = time.perf_counter() - start
        solution.backend = self.backend
        solution.solver = self.name
        solution.info.setdefault("tolerance_family", self.tolerance_family)
        approximation = getattr(problem, "approximation_note", "")
        if approximation:
            solution.info.setdefault("approximation", approximation)
        solution.info.setdefault("options", opts)
        return solution

    def _solve(self, problem, **options) -> Solution:
        raise NotImplementedError

    def _solve_lowered(self, model, lowering, options) -> Solution:
        """Solve the family problem a model lowers to and map the solution back."""
        warm = options.get("warm_start")
        if warm is not None and lowering.from_model is not None and _is_model_point(
                warm, model):
            options = {**options,
                       "warm_start": lowering.from_model(model.warm_start_values(warm))}
        solution = self.solve(lowering.problem, **options)
        if solution.status != FAILED:
            solution.x = {k: np.asarray(v, dtype=np.float64)
                          for k, v in lowering.to_model(solution.x).items()}
            solution.info["lowered_objective"] = solution.objective
            solution.objective = float(model.objective(solution.x))
        solution.info["lowered_to"] = type(lowering.problem).__name__
        return solution

    def describe(self) -> dict:
        return {
            "name": self.name,
            "backend": self.backend,
            "problems": [t.__name__ for t in self.problem_types],
            "description": self.description,
            "options": {k: o.default for k, o in self.options.items()},
            "requires": {k: list(v) for k, v in self.requires.items()},
        }

    def __repr__(self) -> str:
        return f"<{self.backend} solver {self.name!r}>"


def _honest_status(problem, solution: Solution) -> None:
    """Replace a status the solution's point contradicts: ``failed`` on a NaN/inf objective,
    and what the problem's own ``diagnose`` finds (a model: ``infeasible``, ``unbounded``,
    the term at fault; :mod:`ssl_opt.modeling.diagnosis`), the reason in ``info["reason"]``."""
    diagnose = getattr(problem, "diagnose", None)
    found = diagnose(solution) if callable(diagnose) else None
    if (found is None and solution.status not in (FAILED, INFEASIBLE, UNBOUNDED)
            and not np.isfinite(solution.objective)):
        found = (FAILED, f"the objective is {solution.objective} at the returned point")
    if found is not None:
        solution.info.setdefault("solver_status", solution.status)
        solution.status, solution.info["reason"] = found


@functools.cache
def _thread_pools() -> ThreadpoolController:
    """The process's BLAS/OpenMP pools, inspected once (a fresh ``threadpool_limits`` scans the
    loaded libraries each time, ~0.1 ms)."""
    return ThreadpoolController()


#: Methods that look at a problem's structure: on a model that lowers to one of the solver's
#: problem types they see the lowered problem.
_STRUCTURAL = ("missing", "inexact", "predicted_time", "predicted_memory")


def _on_lowered(method):
    @functools.wraps(method)
    def wrapper(self, problem, *args, **kwargs):
        lowering = self.lowering_for(problem)
        return method(self, problem if lowering is None else lowering.problem, *args, **kwargs)
    return wrapper


def _is_model_point(value, model) -> bool:
    values = getattr(value, "x", value)
    return isinstance(values, Mapping) and set(model.variables) <= set(values)


for _name in _STRUCTURAL:
    setattr(Solver, _name, _on_lowered(getattr(Solver, _name)))
