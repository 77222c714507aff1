r"""A model: a sum of terms over declared variables, plus constraints (docs/design.md §6).

::

    min_x  Σ_k h_k(A_k x + c_k)     subject to  B_j x + d_j ∈ C_j

Each ``h_k`` is a :class:`~ssl_opt.modeling.term.Term` of an affine expression of the
variables, each ``C_j`` a :class:`~ssl_opt.modeling.term.Constraint`. The model evaluates its
objective, its smooth gradient and its certificate from the terms alone; the CVXPY reference is
assembled from the terms' CVXPY expressions (``reference/model.py``); the generic solvers
(``plugins/model/``) are chosen from the capabilities the terms declare; a model that matches
a paper's structure lowers to that family's problem (:mod:`ssl_opt.modeling.lowering`), whose
solvers then solve it.

Certificate (:func:`~ssl_opt.modeling.stationarity.stationarity`): ``x`` is optimal iff
``0 ∈ Σ_k A_kᵀ ∂h_k(z_k) + Σ_j B_jᵀ N_{C_j}(w_j)``; the residual is the distance of 0 from
that set (sup norm, relative), with the smooth terms' gradients fixed and the non-smooth
terms' subgradients and the normal-cone elements chosen to minimize it; ``feasibility`` is the
largest constraint violation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cached_property
from typing import ClassVar

import numpy as np

from ssl_opt._validation import check_bool, check_nonnegative, check_positive, choice, integer
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.modeling.expressions import Affine, Variable, as_expression
from ssl_opt.modeling.term import PROGRAM_CLASSES, Constraint, Term
from ssl_opt.problems.base import Problem, Structure
from ssl_opt.solvers import Option


class Model(Problem):
    """``Σ_k h_k(A_k x) s.t. constraints``; see the module docstring.

    Parameters
    ----------
    terms : the objective's terms.
    constraints : the constraints (each a :class:`Constraint`).
    prediction : an expression to read off a solution (e.g. the decision values ``K @ alpha +
        b``); defaults to the first variable.
    name : the variant's name, shown by ``structure`` and ``select``.
    unique_prediction : the prediction is unique at the optimum (a strictly convex part),
        so certificates compare it with the reference's.
    """

    family = "model"
    #: ``kkt`` takes a Solution and starts from its ``info["multipliers"]`` (certificate.py).
    reads_multipliers: ClassVar[bool] = True
    kkt_options: ClassVar[dict[str, Option]] = {
        "kink_tol": Option(1e-6, "argument entries within kink_tol·max(1, scale) of a kink of "
                                 "a non-smooth term count as at the kink", check_nonnegative),
        "max_iter": Option(2000, "iterations of the certificate's minimization over the "
                                 "subgradients (0: the residual at the solution's multipliers, "
                                 "an upper bound)", integer(0)),
        "tol": Option(1e-10, "relative accuracy of that minimization", check_positive),
        "verbose": Option(False, "print the certificate's iterations", check_bool),
        "complementarity": Option(
            "measured", "'measured': a constraint that measures complementarity (NonNegative, "
            "SimplexRows) lets entries near their bound carry multipliers within a budget when "
            "the residual with complementarity imposed exceeds kink_tol; 'imposed': never "
            "(the stricter test the generic solvers stop on)", choice("measured", "imposed")),
        "cone": Option(
            "conic", "'conic': a PSD constraint on a whole variable is also read as G ⪰ 0, "
            "⟨G, Z⟩ = 0 at the other terms' multipliers and the smaller residual is reported "
            "(ssl_opt/modeling/conic.py); 'normal_cone': the minimization over its normal cone "
            "alone", choice("conic", "normal_cone")),
    }
    residual_tolerances: ClassVar[dict[str, str]] = {
        "stationarity": "stationarity",
        "feasibility": "feasibility",
    }

    def __init__(self, terms: Iterable[Term], constraints: Iterable[Constraint] = (),
                 prediction: Affine | None = None, name: str = "model",
                 unique_prediction: bool = False):
        terms = list(terms) if not isinstance(terms, Term) else [terms]
        constraints = list(constraints) if not isinstance(constraints, Term) else [constraints]
        if not terms:
            raise InvalidInputError("terms must hold at least one Term.")
        for i, t in enumerate(terms):
            if not isinstance(t, Term) or isinstance(t, Constraint):
                raise InvalidInputError(
                    f"terms[{i}] must be a Term (not a Constraint; pass those as "
                    f"constraints=), got {type(t).__name__}.")
        for i, c in enumerate(constraints):
            if not isinstance(c, Constraint):
                raise InvalidInputError(f"constraints[{i}] must be a Constraint, got "
                                        f"{type(c).__name__}.")
        if not isinstance(name, str) or not name:
            raise InvalidInputError(f"name must be a non-empty string, got {name!r}.")
        self.terms: tuple[Term, ...] = tuple(terms)
        self.constraints: tuple[Constraint, ...] = tuple(constraints)
        self.name = name
        self._variables = _collect_variables([*terms, *constraints], prediction)
        self.prediction_expression = (
            self._variables[0] if prediction is None
            else as_expression(prediction, "prediction"))
        self._unique = check_bool(unique_prediction, "unique_prediction")
        self._freeze()

    # -------------------------------------------------------------------------- declaration
    @property
    def variables(self) -> dict[str, tuple[int, ...]]:
        return {v.name: v.shape for v in self._variables}

    @property
    def variable_objects(self) -> tuple[Variable, ...]:
        return tuple(self._variables)

    @property
    def all_terms(self) -> tuple[Term, ...]:
        """The terms, then the constraints."""
        return self.terms + self.constraints

    @property
    def smooth_terms(self) -> tuple[Term, ...]:
        return tuple(t for t in self.terms if t.smooth)

    @property
    def nonsmooth_terms(self) -> tuple[Term, ...]:
        return tuple(t for t in self.terms if not t.smooth)

    @cached_property
    def size(self) -> int:
        """The number of scalar unknowns."""
        return int(sum(np.prod(s, dtype=int) for s in self.variables.values()))

    @property
    def structure(self) -> Structure:
        classes = [t.program_class for t in self.all_terms]
        program = max(classes, key=lambda c: PROGRAM_CLASSES.index(c)
                      if c in PROGRAM_CLASSES else len(PROGRAM_CLASSES))
        if program == "LP" and any(t.program_class == "QP" for t in self.all_terms):
            program = "QP"
        rows = self.prediction_expression.shape
        sizes = {"N": self.size, "n": int(rows[0]) if rows else 1,
                 "m": int(sum(np.prod(t.shape, dtype=int) for t in self.nonsmooth_terms
                              + self.constraints))}
        smooth = all(t.smooth for t in self.terms) and not self.constraints
        convex = all(t.convex for t in self.all_terms)
        sparse = any(_has_sparse(t.argument) for t in self.all_terms)
        return Structure(self.family, self.name, convex, smooth, program, sizes, sparse)

    @property
    def unique_prediction(self) -> bool:
        return self._unique

    def __getitem__(self, name: str) -> Variable:
        """The model's variable called ``name`` (to state new terms on it)."""
        found = {v.name: v for v in self._variables}.get(name)
        if found is not None:
            return found
        raise InvalidInputError(f"this model has no variable {name!r}; its variables are "
                                f"{list(self.variables)}.")

    @property
    def f(self) -> Affine:
        """The prediction expression (e.g. ``K @ alpha + b``), to state new terms on it."""
        return self.prediction_expression

    def add(self, *items: Term, name: str | None = None) -> Model:
        """A new model with more terms and constraints (a variant of this one)::

            lapsvm = LapSVM(K, L, y, 1e-2, 1e-1)
            variant = lapsvm.add(GraphTV(lapsvm.f, W, 0.05))
        """
        terms = [t for t in items if not isinstance(t, Constraint)]
        constraints = [c for c in items if isinstance(c, Constraint)]
        return Model(self.terms + tuple(terms), self.constraints + tuple(constraints),
                     prediction=self.prediction_expression,
                     name=name or f"{self.name}+" + "+".join(t.name for t in items),
                     unique_prediction=self._unique)

    def without(self, *names: str, name: str | None = None) -> Model:
        """A new model without the terms and constraints whose ``name`` is listed."""
        keep = [t for t in self.all_terms if t.name not in names]
        if len(keep) == len(self.all_terms):
            raise InvalidInputError(f"no term or constraint is named {names}; this model has "
                                    f"{[t.name for t in self.all_terms]}.")
        return Model([t for t in keep if not isinstance(t, Constraint)],
                     [c for c in keep if isinstance(c, Constraint)],
                     prediction=self.prediction_expression,
                     name=name or f"{self.name}-" + "-".join(names),
                     unique_prediction=self._unique)

    def describe_terms(self) -> str:
        lines = [f"{self.name}: minimize"]
        for t in self.terms:
            lines.append(f"  + {t.describe()} [{', '.join(sorted(t.capabilities))}]")
        for c in self.constraints:
            lines.append(f"  s.t. {c.describe()} [{', '.join(sorted(c.capabilities))}]")
        return "\n".join(lines)

    # ---------------------------------------------------------------------- flat vectors
    @cached_property
    def _slices(self) -> dict[str, slice]:
        out, start = {}, 0
        for v in self._variables:
            size = int(np.prod(v.shape, dtype=int))
            out[v.name] = slice(start, start + size)
            start += size
        return out

    @property
    def slices(self) -> dict[str, slice]:
        """Each variable's entries in the flat vector of :meth:`pack`."""
        return dict(self._slices)

    def pack(self, x: Mapping[str, np.ndarray]) -> np.ndarray:
        """The variables as one flat vector (in declaration order)."""
        flat = np.empty(self.size)
        for name, sl in self._slices.items():
            flat[sl] = np.ravel(x[name]) if name in x else 0.0
        return flat

    def unpack_flat(self, flat: np.ndarray) -> dict[str, np.ndarray]:
        return {v.name: np.asarray(flat[self._slices[v.name]]).reshape(v.shape)
                for v in self._variables}

    # ----------------------------------------------------------------------- evaluation
    def arguments(self, x, terms: Iterable[Term] | None = None) -> list[np.ndarray]:
        """The argument value ``z_k = A_k x`` of each term (all terms and constraints by
        default)."""
        values = x if isinstance(x, dict) and _all_arrays(x, self.variables) else self.unpack(x)
        return [t.argument.value(values) for t in (self.all_terms if terms is None else terms)]

    def objective(self, x) -> float:
        values = self.unpack(x)
        return float(sum(t.value(t.argument.value(values)) for t in self.terms))

    def smooth_gradient(self, x) -> dict[str, np.ndarray]:
        """``Σ_{smooth k} A_kᵀ ∇h_k(A_k x)``, one array per variable."""
        values = self.unpack(x)
        grad = {name: np.zeros(shape) for name, shape in self.variables.items()}
        for t in self.smooth_terms:
            for name, g in t.argument.adjoint(t.gradient(t.argument.value(values))).items():
                grad[name] = grad[name] + g
        return {name: np.asarray(g, dtype=np.float64).reshape(self.variables[name])
                for name, g in grad.items()}

    def gradient(self, x) -> dict[str, np.ndarray]:
        if not self.structure.smooth:
            raise NotImplementedError(
                f"model {self.name!r} is not smooth (non-smooth terms: "
                f"{[t.describe() for t in self.nonsmooth_terms]}, constraints: "
                f"{[c.describe() for c in self.constraints]}); it has no gradient.")
        return self.smooth_gradient(x)

    def prediction(self, x) -> np.ndarray:
        return self.prediction_expression.value(self.unpack(x))

    def oracle_errors(self, x) -> list[str]:
        """One message per user term whose oracles (gradient, Hessian, prox, …) disagree with
        its value at ``x`` (:func:`~ssl_opt.modeling.term.user_oracle_errors`): the
        certificate's stationarity rests on them."""
        from ssl_opt.modeling.term import user_oracle_errors

        return user_oracle_errors(self.all_terms, self.unpack(x))

    def diagnose(self, solution) -> tuple[str, str] | None:
        """``(status, reason)`` replacing a solve's status when it ended without an optimum
        for a reason of the model's (``failed``, ``infeasible``, ``unbounded``; see
        :mod:`ssl_opt.modeling.diagnosis`), else None."""
        from ssl_opt.modeling.diagnosis import diagnose
        from ssl_opt.solution import Solution

        if not isinstance(solution, Solution):
            raise InvalidInputError(f"solution must be a Solution (what ssl_opt.solve returns), "
                                    f"got {type(solution).__name__}.")
        return diagnose(self, solution)

    def _kkt(self, x, kink_tol, max_iter, tol, verbose, complementarity,
             cone) -> dict[str, float]:
        from ssl_opt.modeling.stationarity import stationarity

        return stationarity(self, x, kink_tol=kink_tol, max_iter=max_iter, tol=tol,
                            verbose=verbose, complementarity=complementarity, cone=cone)

    # ----------------------------------------------------------------------- lowering
    @cached_property
    def lowerings(self) -> dict:
        """The named problems this model is exactly (see :mod:`ssl_opt.modeling.lowering`):
        ``{problem class: Lowering}``, and the reason each other known structure does not
        apply in :attr:`lowering_failures`. A named model (a paper's problem, ``family`` set)
        is its own structure: it lowers to nothing else."""
        from ssl_opt.modeling.lowering import find_lowerings

        if self.family != Model.family:
            object.__setattr__(self, "_lowering_failures", {})
            return {}
        found, failures = find_lowerings(self)
        object.__setattr__(self, "_lowering_failures", failures)
        return found

    @property
    def lowering_failures(self) -> dict[str, str]:
        self.lowerings  # noqa: B018 (computes the failures)
        return self._lowering_failures


def _collect_variables(terms, prediction) -> list[Variable]:
    seen: dict[int, Variable] = {}
    names: dict[str, Variable] = {}
    exprs = [t.argument for t in terms] + ([prediction] if prediction is not None else [])
    for expr in exprs:
        for v in expr.variables:
            if id(v) in seen:
                continue
            if v.name in names:
                raise InvalidInputError(
                    f"two different variables are named {v.name!r}; give each its own name.")
            seen[id(v)] = v
            names[v.name] = v
    if prediction is not None:
        extra = [v.name for v in prediction.variables
                 if not any(v in t.argument.variables for t in terms)]
        if extra:
            raise InvalidInputError(f"prediction uses variable(s) {extra} that no term or "
                                    "constraint involves.")
    return list(seen.values())


def _all_arrays(x: dict, variables: dict) -> bool:
    return all(isinstance(x.get(k), np.ndarray) and x[k].shape == s for k, s in
               variables.items())


def _has_sparse(expr: Affine) -> bool:
    import scipy.sparse as sp

    from ssl_opt.modeling.maps import matrices

    return any(sp.issparse(M) for _, m in expr.parts for M in matrices(m))
