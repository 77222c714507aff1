r"""``one-vs-rest``: the c classes of a :class:`~ssl_opt.problems.OneVsRest` one by one, each
with the solver of the binary problem that ``select`` picks (or the one named), sharing what
does not depend on the labels (docs/design.md §7).

Shared start: when the class solver declares ``starts_from_quadratic`` (Newton on the squared
hinge: its first step from 0 is the LapRLS solution) and a direct solver takes the classes'
square-loss surrogate (``laprls-direct``: one LU, c right-hand sides), every class starts from
its column of that one solve instead of factorizing its own first step (counted in the class's
iterations), and is handed that solve's factorization (``keep_factorization``), so Newton's
later steps are updates of it: the c classes share one LU. ``select`` weighs this solver
(the c classes as :func:`class_choice` predicts them) against a solver of the whole
one-vs-rest problem (``laprls-direct`` on LapRLS), so an estimator only builds the problem and
calls ``solve``.
"""

from __future__ import annotations

import math
import time

from ssl_opt import registry
from ssl_opt._validation import check_bool
from ssl_opt.exceptions import InvalidInputError, UnsupportedProblemError
from ssl_opt.hookspecs import hookimpl
from ssl_opt.problems.one_vs_rest import OneVsRest
from ssl_opt.solution import Solution
from ssl_opt.solvers import Option, Solver

#: Looser last: a one-vs-rest solution is judged by its loosest class solver's tolerances.
TOLERANCE_FAMILIES = ("direct", "iterative", "reference")


def _class_solver(value, name: str) -> str:
    from ssl_opt.selection.select import BACKENDS

    if not isinstance(value, str) or not (value in BACKENDS or value in registry.solvers()):
        raise InvalidInputError(f"{name} must be one of {BACKENDS} or a registered solver "
                                f"name, got {value!r}.")
    return value


def _class_options(value, name: str):
    if value is None or isinstance(value, dict):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, dict) for v in value):
        return list(value)
    raise InvalidInputError(f"{name} must be None, one dict of options for every class or a "
                            f"list of one dict per class, got {type(value).__name__}.")


def _class_defaults(value, name: str):
    if value is None or isinstance(value, dict):
        return value
    raise InvalidInputError(f"{name} must be None or a dict of options, got "
                            f"{type(value).__name__}.")


class OneVsRestSolver(Solver):
    name = "one-vs-rest"
    tolerance_family = "iterative"
    problem_types = (OneVsRest,)
    description = ("The classes of a one-vs-rest problem one by one with the binary problem's "
                   "solver; Newton starts every class from one shared LapRLS factorization.")
    options = {
        "class_solver": Option("auto", "the binary problem's solver: a backend ('auto', "
                               "'fast', 'reference': select picks) or a solver name",
                               _class_solver),
        "class_options": Option(None, "options of the class solver: one dict for every class "
                                "or a list of one dict per class", _class_options),
        "warm_start": Option(None, "a solution of this one-vs-rest problem (or a list of one "
                             "per class) to start the classes from, where the class solver "
                             "takes warm_start"),
        "class_defaults": Option(None, "options for every class solver that declares them "
                                 "(e.g. max_iter, tol); unlike class_options they do not steer "
                                 "select's choice of the class solver", _class_defaults),
        "shared_start": Option(True, "start a starts_from_quadratic class solver from one "
                               "shared solve of the square-loss surrogate", check_bool),
    }

    def missing(self, problem) -> list[str]:
        reasons = super().missing(problem)
        if not reasons and not any(s.supports(problem.first) for s in registry.solvers().values()
                                   if s is not self):
            reasons = [f"a solver of its {type(problem.first).__name__} classes (none applies)"]
        return reasons

    def predicted_time(self, problem) -> float:
        """The c classes with the class solver :func:`class_choice` picks."""
        chosen = _class_selection(problem)
        return math.nan if chosen is None else class_choice(problem, chosen, shared=True)[1]

    def predicted_memory(self, problem) -> float:
        """The class solver's: the classes run one after the other."""
        chosen = _class_selection(problem)
        if chosen is None:
            return math.nan
        return chosen.predicted_memory[class_choice(problem, chosen, shared=True)[0]]

    def _solve(self, problem: OneVsRest, class_solver, class_options, class_defaults,
               warm_start, shared_start) -> Solution:
        from ssl_opt.selection.select import BACKENDS, select

        options = (list(class_options) if isinstance(class_options, list)
                   else [dict(class_options or {})] * problem.c)
        if len(options) != problem.c:
            raise InvalidInputError(f"class_options must hold one dict per class ({problem.c}),"
                                    f" got {len(options)}.")
        if class_solver not in BACKENDS:
            names = [class_solver] * problem.c
        elif all(o == options[0] for o in options):
            # The classes differ in their labels only, which no prediction reads (sizes,
            # conditioning): one selection, one conditioning probe, serves them all.
            chosen = select(problem.first, class_solver, options=options[0])
            may_share = shared_start and warm_start is None
            names = [class_choice(problem, chosen, may_share, options)[0]] * problem.c
        else:
            names = [select(p, class_solver, options=o).solver
                     for p, o in zip(problem.columns, options, strict=True)]
        solvers = [registry.get_solver(n) for n in names]
        starts = _starts(problem, warm_start)
        shared = starts is None and shared_start and _shared_start_applies(problem, solvers,
                                                                         options)
        start = time.perf_counter()
        if shared:
            surrogate = problem.with_loss("square")
            starts = problem.split(registry.get_solver("laprls-direct").solve(
                surrogate, keep_factorization=True))
        columns = []
        for k, (p, s) in enumerate(zip(problem.columns, solvers, strict=True)):
            opts = {**{key: value for key, value in (class_defaults or {}).items()
                       if key in s.options}, **options[k]}
            if starts is not None and "warm_start" in s.options:
                opts.setdefault("warm_start", starts[k])
            if shared and "max_iter" in opts:  # the shared solve was the class's first step
                opts["max_iter"] = max(0, opts["max_iter"] - starts[k].iterations)
            column = s.solve(p, **opts)
            if shared:
                column.iterations += starts[k].iterations
            columns.append(column)
        status = OneVsRest.worst_status(c.status for c in columns)
        x = problem.stack(columns)  # a failed class holds NaN
        family = max((c.info.get("tolerance_family", "iterative") for c in columns),
                     key=lambda f: TOLERANCE_FAMILIES.index(f)
                     if f in TOLERANCE_FAMILIES else len(TOLERANCE_FAMILIES))
        return Solution(x, float(sum(c.objective for c in columns)), status,
                        int(sum(c.iterations for c in columns)), time.perf_counter() - start,
                        self.backend, self.name,
                        info={"columns": columns, "class_solvers": names,
                              "shared_start": bool(shared), "tolerance_family": family})


def _class_selection(problem: OneVsRest):
    from ssl_opt.selection.select import select

    try:
        return select(problem.first, "auto")
    except UnsupportedProblemError:
        return None


def class_choice(problem: OneVsRest, chosen, shared: bool,
                 options: list | None = None) -> tuple[str, float]:
    """The class solver for all c classes and their predicted seconds, from ``chosen`` (the
    :class:`~ssl_opt.selection.select.Selection` of one class): c times a class's prediction,
    except for a fast exact solver the shared start serves (``shared``), which factorizes once
    for every class and then costs ``predicted_shared_time`` per class (Newton's later steps
    update that factorization; ``options``, one dict per class, as :func:`_shared_start_applies`
    reads them). The shared one replaces ``chosen.solver`` (a fast solver) when it is
    predicted faster for the c classes."""
    times = chosen.predicted_time
    pick, best = chosen.solver, problem.c * times[chosen.solver]
    if not shared or chosen.backend != "fast":
        return pick, best
    for name, seconds in times.items():
        solver = registry.get_solver(name)
        if (solver.backend != "fast" or solver.inexact(problem.first) or not math.isfinite(seconds)
                or not hasattr(solver, "predicted_shared_time")
                or not _shared_start_applies(problem, [solver], options or [{}])):
            continue
        total = seconds + (problem.c - 1) * solver.predicted_shared_time(problem.first)
        if name == pick:
            best = min(best, total)
        elif total < best:
            pick, best = name, total
    return pick, best


def _starts(problem: OneVsRest, warm_start) -> list | None:
    if warm_start is None:
        return None
    if isinstance(warm_start, (list, tuple)):
        if len(warm_start) != problem.c:
            raise InvalidInputError(f"warm_start must hold one start per class ({problem.c}), "
                                    f"got {len(warm_start)}.")
        return list(warm_start)
    values = problem.warm_start_values(warm_start)
    return [problem.column(values, k) for k in range(problem.c)]


def _shared_start_applies(problem: OneVsRest, solvers: list, options: list) -> bool:
    """A class solver that starts from the square-loss surrogate, the user's options silent
    about warm starts, a loss that is not already quadratic, and a direct solver of the
    surrogate that applies (dense K)."""
    if not all(s.starts_from_quadratic and "warm_start" in s.options for s in solvers):
        return False
    if any("warm_start" in o for o in options) or not hasattr(problem.first, "loss"):
        return False
    if "quadratic" in problem.loss.capabilities or getattr(problem.first, "kernel_is_operator",
                                                           True):
        return False
    return registry.get_solver("laprls-direct").supports(problem.with_loss("square"))


@hookimpl
def register_solvers():
    return [OneVsRestSolver()]
