"""``max_iter``, ``tol`` and ``verbose`` on every estimator, and the warning when a fit stops
short of the optimum.

* ``max_iter`` / ``tol`` go to the solver's options of the same names wherever it declares them
  (``ssl_opt.list_solvers()``), and to each class's solver of a one-vs-rest fit. They never
  change which solver ``solver="auto"`` picks: the choice is made first, on the problem, then
  the values are passed to the chosen solver. A direct solve (``laprls-direct``) has no
  iteration cap, and the CVXPY references have their own tolerances, so they do without them,
  as scikit-learn's ``Ridge`` ignores ``tol`` for its Cholesky solver; a solver *named* in
  ``solver=`` that lacks the option is an error. ``solution_.info["options"]`` holds what the
  solve used.
* ``verbose`` shows the fit's progress on stderr (:class:`ssl_opt.progress.FitDisplay`).
* A solve that ends ``max_iterations``, ``time_limit``, ``stalled`` or ``inaccurate`` raises
  scikit-learn's ``ConvergenceWarning`` naming the solver, the status and what to change.
"""

from __future__ import annotations

import functools

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ssl_opt._validation import check_int, check_positive
from ssl_opt.exceptions import warn
from ssl_opt.progress import fit_display
from ssl_opt.solution import INACCURATE, MAX_ITERATIONS, STALLED, TIME_LIMIT, Solution

#: Statuses that mean the returned point may be short of the optimum.
UNCONVERGED = (MAX_ITERATIONS, TIME_LIMIT, STALLED, INACCURATE)

#: The numpydoc entries every estimator's docstring shares.
ITERATION_DOC = """    max_iter : int >= 1 or None
        Iteration cap of the solver's ``max_iter`` option (None: the solver's default). It goes
        to the solver ``solver`` resolves to wherever that solver takes it (every class's solver
        in a one-vs-rest fit) and never changes which solver ``"auto"`` picks; a direct solve
        has none. ``n_iter_`` reports the iterations used.
    tol : float > 0 or None
        Stopping tolerance of the solver's ``tol`` option (None: the solver's default), passed
        on as ``max_iter`` is.
    verbose : int >= 0 or bool
        0 (or False): silent. 1 (or True, as scikit-learn's estimators take it): a progress
        counter of the solver's iterations on stderr and one line per solve (status,
        iterations, seconds). 2: also each inner solve and each iteration's
        recorded row.
"""


def check_iteration_params(estimator) -> None:
    """Check ``max_iter``, ``tol`` and ``verbose`` and their agreement with
    ``solver_options``."""
    if estimator.max_iter is not None:
        check_int(estimator.max_iter, "max_iter", 1)
    if estimator.tol is not None:
        check_positive(estimator.tol, "tol")
    if not isinstance(estimator.verbose, (bool, np.bool_)):  # True is 1, False 0
        check_int(estimator.verbose, "verbose", 0)
    given = getattr(estimator, "solver_options", None) or {}
    for name, value in iteration_settings(estimator).items():
        if name in given and given[name] != value:
            raise ValueError(f"{name}={value!r} and solver_options[{name!r}]="
                             f"{given[name]!r} disagree: set one of them.")


def iteration_settings(estimator) -> dict:
    """``{"max_iter": ..., "tol": ...}`` for the ones the user set (not None)."""
    return {name: getattr(estimator, name) for name in ("max_iter", "tol")
            if getattr(estimator, name) is not None}


def settings_for(solver, settings: dict, *, strict: bool) -> dict:
    """The part of ``settings`` that ``solver`` (a registered Solver) takes; with ``strict``
    (the user named this solver) a setting it lacks is a ``ValueError``."""
    lacking = sorted(set(settings) - set(solver.options))
    if lacking and strict:
        raise ValueError(f"solver {solver.name!r} has no {' or '.join(lacking)} option (it "
                         f"takes {sorted(solver.options) or 'none'}): leave "
                         f"{' and '.join(lacking)} at None or pick a solver that has it "
                         "(ssl_opt.list_solvers()).")
    return {name: value for name, value in settings.items() if name in solver.options}


def fitting(fit):
    """Decorate an estimator's ``fit``: check the iteration parameters, show progress when
    ``verbose``, and warn when a solve of the fit did not converge (module docstring)."""
    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        check_iteration_params(self)
        with fit_display(type(self).__name__, self.verbose):
            result = fit(self, *args, **kwargs)
        warn_if_not_converged(self)
        return result
    return wrapper


def warn_if_not_converged(estimator) -> None:
    """A ``ConvergenceWarning`` for each fitted solution (one per class where one-vs-rest)
    whose status is in :data:`UNCONVERGED`."""
    solutions = getattr(estimator, "solution_", None)
    if solutions is None:
        return
    owner = type(estimator).__name__
    hint = getattr(estimator, "_convergence_hint", "")
    parts = solutions if isinstance(solutions, list) else [solutions]
    columns = parts[0].info.get("columns") if len(parts) == 1 else None
    if isinstance(columns, list) and all(isinstance(c, Solution) for c in columns):
        parts = columns  # a one-vs-rest solve kept whole
    classes = getattr(estimator, "classes_", ())
    for k, part in enumerate(parts):
        if part.status not in UNCONVERGED:
            continue
        label = classes[k] if len(classes) == len(parts) else k
        label = label.item() if hasattr(label, "item") else label  # 2, not np.int64(2)
        which = f" (class {label!r})" if len(parts) > 1 else ""
        warn(f"{owner}: the {part.solver} solve{which} ended {part.status!r} after "
             f"{part.iterations} iterations, so the fit may be short of the optimum; "
             f"certificate() says how far. Raise max_iter or loosen tol"
             f"{', ' + hint if hint else ''}, or pick another solver.", ConvergenceWarning)
