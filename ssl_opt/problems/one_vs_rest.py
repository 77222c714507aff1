r"""One-vs-rest: c binary problems that differ only in their labels, as one named problem
(docs/design.md §7).

Given a binary problem ``P(y)`` (e.g. :class:`~ssl_opt.problems.LapSVM`) and the ``l × c``
matrix ``Y`` of ±1 targets, one column per class::

    min_{x_1..x_c}  Σ_k J(x_k; Y[:, k])

The c problems share everything that does not depend on the labels (K, L and any factorization
of them), so a solver may solve them together: ``laprls-direct`` solves c LapRLS columns with
one LU and c right-hand sides; ``one-vs-rest`` solves the columns one by one with any solver
of the binary problem (``plugins/model/one_vs_rest.py``). ``select`` compares the two on the
instance, so an estimator builds this problem and calls ``solve``.

Variables: those of the binary problem with a trailing class axis (``alpha`` n×c, ``b`` of
length c for LapSVM). The residuals are the binary problem's, each the largest over the
classes: a view of the c certificates, not a second computation.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ssl_opt._validation import as_float_array
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.problems.base import Problem, Structure
from ssl_opt.solution import FAILED, Solution

#: Statuses from the best to the worst: a one-vs-rest solution reports its worst column's.
STATUS_ORDER = ("optimal", "early_stopped", "inaccurate", "stalled", "max_iterations",
                "time_limit", "infeasible", "unbounded", FAILED)


class OneVsRest(Problem):
    """``Σ_k J(x_k; Y[:, k])`` over the c columns of ``Y``; see the module docstring.

    Parameters
    ----------
    problem : a binary problem with ``with_labels(y)`` (LapSVM, LapRLS); its labels are
        replaced by each column of ``Y``.
    Y : (l, c) array of ±1, c ≥ 2
        One column of ±1 targets per class for the problem's l labeled points.
    """

    family = "one-vs-rest"

    def __init__(self, problem: Problem, Y):
        if not isinstance(problem, Problem) or not hasattr(problem, "with_labels"):
            raise InvalidInputError(
                "problem must be a binary ssl_opt problem with with_labels(y) (e.g. LapSVM, "
                f"LapRLS), got {type(problem).__name__}.")
        Y = as_float_array(Y, "Y")
        if Y.ndim != 2 or Y.shape[1] < 2:
            raise InvalidInputError(f"Y must be an (l, c) array of ±1 targets with c >= 2 "
                                    f"classes, got shape {Y.shape}.")
        if Y.shape[0] != getattr(problem, "l", Y.shape[0]):
            raise InvalidInputError(f"Y must have one row per labeled point of problem "
                                    f"({problem.l}), got {Y.shape[0]} rows.")
        if not np.all(np.isin(Y, (-1.0, 1.0))):
            raise InvalidInputError("Y must hold -1 or +1 only (one ±1 column per class), with "
                                    "no NaN or inf.")
        self.columns: tuple[Problem, ...] = tuple(problem.with_labels(Y[:, k])
                                                  for k in range(Y.shape[1]))
        self.Y = np.array(Y)
        self.c = int(Y.shape[1])
        self.kkt_options = problem.kkt_options
        self.residual_tolerances = problem.residual_tolerances
        self._freeze()

    @property
    def first(self) -> Problem:
        return self.columns[0]

    @property
    def loss(self):
        """The columns' margin loss (the same for every class), for solvers' ``requires``."""
        return getattr(self.first, "loss", None)

    @property
    def approximation_note(self) -> str:
        """The classes' approximation (a Nyström kernel), "" when exact."""
        return getattr(self.first, "approximation_note", "")

    def with_loss(self, loss) -> OneVsRest:
        """The same classes with another margin ``loss`` (LapSVM columns)."""
        return OneVsRest(self.first.with_labels(self.first.y, loss=loss), self.Y)

    # ------------------------------------------------------------------ declaration
    @property
    def variables(self) -> dict[str, tuple[int, ...]]:
        return {name: (*shape, self.c) for name, shape in self.first.variables.items()}

    @property
    def structure(self) -> Structure:
        s = self.first.structure
        return Structure(self.family, f"{s.family}/{s.variant}", s.convex, s.smooth,
                         s.program_class, {**s.sizes, "c": self.c}, s.sparse)

    @property
    def unique_prediction(self) -> bool:
        return self.first.unique_prediction

    # ------------------------------------------------------------------ columns
    def column(self, x, k: int) -> dict[str, np.ndarray]:
        """Class ``k``'s variables of ``x`` (a dict or a Solution of this problem)."""
        values = self.unpack(x)
        return {name: np.array(v[..., k]) for name, v in values.items()}

    def stack(self, points: list[Mapping]) -> dict[str, np.ndarray]:
        """The variables of this problem from one point per class."""
        return {name: np.stack([np.asarray(getattr(p, "x", p)[name], dtype=np.float64)
                                for p in points], axis=-1)
                for name in self.first.variables}

    def split(self, solution: Solution) -> list[Solution]:
        """One Solution per class: the solver's own (``info["columns"]``) when it solved the
        classes one by one, else the columns of ``solution.x`` with its status."""
        own = solution.info.get("columns")
        if own is not None:
            for column in own:
                for key in ("approximation", "selection"):
                    if key in solution.info:
                        column.info.setdefault(key, solution.info[key])
            return list(own)
        out = []
        for k, p in enumerate(self.columns):
            x = self.column(solution, k) if solution.status != FAILED else {
                name: np.full(shape, np.nan) for name, shape in p.variables.items()}
            objective = float(p.objective(x)) if solution.status != FAILED else float("nan")
            info = {key: v for key, v in solution.info.items() if key != "columns"}
            out.append(Solution(x, objective, solution.status, solution.iterations,
                                solution.time / self.c, solution.backend, solution.solver,
                                info=info))
        return out

    @staticmethod
    def worst_status(statuses) -> str:
        known = [s for s in statuses if s in STATUS_ORDER]
        return max(known, key=STATUS_ORDER.index) if known else FAILED

    # ------------------------------------------------------------------ evaluation
    def objective(self, x) -> float:
        """``Σ_k J_k``; for kernel columns (``objective_parts``) with one product ``K·α`` and
        one ``L·F`` for all classes, not one per class."""
        first = self.first
        if not hasattr(first, "objective_parts"):
            return float(sum(p.objective(self.column(x, k)) for k, p in enumerate(self.columns)))
        v = self.unpack(x)
        alpha, b = v["alpha"], v.get("b", np.zeros(self.c))  # no variable b without a bias
        K_alpha = first.K_dot(alpha)
        F = K_alpha + (b[None, :] if first.bias else 0.0)
        LF = first.L_dot(F)
        return float(sum(p.objective_parts(alpha[:, k], float(b[k]), K_alpha[:, k], LF[:, k])
                         for k, p in enumerate(self.columns)))

    def gradient(self, x) -> dict[str, np.ndarray]:
        return self.stack([p.gradient(self.column(x, k)) for k, p in enumerate(self.columns)])

    def prediction(self, x) -> np.ndarray:
        return np.column_stack([p.prediction(self.column(x, k))
                                for k, p in enumerate(self.columns)])

    def _kkt(self, x, **options) -> dict[str, float]:
        """Each binary residual, the largest over the classes."""
        out: dict[str, float] = {}
        for k, p in enumerate(self.columns):
            for name, value in p.kkt(self.column(x, k), **options).items():
                out[name] = float(np.maximum(out.get(name, -np.inf), value))  # NaN propagates
        return out
