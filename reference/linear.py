"""Exact programs for the linear semi-supervised SVM family (docs/design.md §4.2, [001]).

* :data:`PRIMAL` — the L2-SVM QP ``min λ/2‖w̃‖² + ½ Σ c_i max(0, 1 − y_i x̃_iᵀw̃)²``: the named
  model's program from its terms (``reference/model.py``), a sparse X kept sparse. The convex
  inner problems of TSVM (labels fixed) and DA (``p`` fixed) are L2-SVMs
  (:meth:`TSVM.inner_problem`, :meth:`DAS3VM.inner_problem`), so this covers them.
* :class:`ExhaustiveTSVM` — the *global* optimum of any transductive model (TSVM, a
  :class:`~ssl_opt.modeling.TransductiveModel` variant: its penalties, loss and bias) for tiny
  ``u``: every balanced labeling (``C(u, round(r·u))`` of them) solved exactly with one
  parameterized (DPP) CVXPY program built from the model's terms, the labels ``ŷ`` its
  parameter. It also gives the global optimum of DA's annealing target when ``r·u`` is an
  integer (the target is linear in ``p`` for fixed ``w``, so a balanced binary ``p`` attains
  it).
"""

from __future__ import annotations

import math
from itertools import combinations
from math import comb

import numpy as np

from ssl_opt.modeling.transductive import Transductive, TransductiveModel
from ssl_opt.optional import cvxpy as cp
from ssl_opt.problems.linear.problem import DAS3VM, LinearSVM
from ssl_opt.reference import model as model_reference
from ssl_opt.reference.attempts import solve_until_optimal
from ssl_opt.reference.cvxpy_solver import CvxpyReference, Formulation, failed_solution
from ssl_opt.solution import INACCURATE, OPTIMAL, Solution
from ssl_opt.solvers import Option, Solver

#: Largest ``u`` the exhaustive reference accepts (924 labelings at u = 12).
EXHAUSTIVE_MAX_U = 12


def in_memory(problem) -> list[str]:
    """The programs here hold X as a CVXPY constant: a distributed design is refused."""
    design = problem.design
    if design.in_memory:
        return []
    return [f"X is distributed ({design.n} x {design.d} on the workers of a dask Client); the "
            "reference needs it in memory"]


def transductive_program(problem: Transductive):
    """``(program, ŷ, handles)``: ``P(w, b) + 1/(2l) Σ_{i≤l} φ(y_i o_i) + λ'/(2u) Σ_j φ(ŷ_j o_j)``
    subject to the penalties' constraints [001 eq. 4], from the model's penalty terms, loss
    and outputs ``o``, with the unlabeled labels ``ŷ`` a CVXPY parameter (DPP: compiled once
    for every labeling)."""
    weights = [v for v in (problem.w, problem.b) if v is not None]
    handles = {v.name: cp.Variable(v.shape, name=v.name) for v in weights}
    o = problem.outputs_expression.cvxpy(handles)
    l, u = problem.l, problem.u
    y_u = cp.Parameter(u, name="y_u")
    penalty = sum(t.cvxpy(t.argument.cvxpy(handles)) for t in problem.penalty_terms)
    objective = (penalty + cp.sum(problem.loss.cvxpy(cp.multiply(problem.y, o[:l]))) / (2 * l)
                 + problem.lam_u * cp.sum(problem.loss.cvxpy(cp.multiply(y_u, o[l:])))
                 / (2 * u))
    constraints = [c for t in problem.penalty_constraints
                   for c in t.cvxpy(t.argument.cvxpy(handles))]
    return cp.Problem(cp.Minimize(objective), constraints), y_u, handles


PRIMAL = Formulation(LinearSVM, model_reference.build, model_reference.recover, in_memory)


class ExhaustiveTSVM(Solver):
    """Global optimum of a transductive model (and of DA's target) by enumerating balanced
    labelings (tiny u)."""

    name = "tsvm-exhaustive"
    backend = "reference"
    needs_packages = ("cvxpy",)
    tolerance_family = "reference"
    problem_types = (TransductiveModel, DAS3VM)
    description = ("Global optimum of TSVM or any transductive model (and of DA's T = 0 "
                   "target) for u <= 12: every balanced labeling solved exactly by CVXPY (one "
                   "DPP program from the model's terms).")
    options = {
        "cvxpy_solver": Option(None, "CVXPY solver for each labeling's L2-SVM (None: "
                               "Clarabel, then SCS if no Clarabel path ends optimal)",
                               CvxpyReference.options["cvxpy_solver"].check),
        "solver_options": CvxpyReference.options["solver_options"],
        "retries": CvxpyReference.options["retries"],
    }

    def missing(self, problem) -> list[str]:
        missing = super().missing(problem) or in_memory(problem)
        if missing:
            return missing
        if problem.u > EXHAUSTIVE_MAX_U:
            missing.append(f"u = {problem.u} > {EXHAUSTIVE_MAX_U} unlabeled rows "
                           f"({_count(problem.u, problem.n_pos)} labelings to enumerate)")
        if isinstance(problem, DAS3VM) and abs(problem.r * problem.u - problem.n_pos) > 1e-9:
            missing.append(f"an integral r·u for DA (r·u = {problem.r * problem.u:.4g}; the "
                           "optimal p is then fractional, not a labeling)")
        if "cvxpy" not in problem.loss.capabilities:
            missing.append(f"a CVXPY expression for the loss {problem.loss.name!r} (it has none)")
        return missing + model_reference.terms_missing(problem.penalty_terms
                                                       + problem.penalty_constraints)

    def predicted_time(self, problem) -> float:
        return 0.01 * comb(problem.u, problem.n_pos)


    def _solve(self, problem, cvxpy_solver, solver_options, retries) -> Solution:
        prog, y_u, handles = transductive_program(problem)

        def recover() -> dict[str, np.ndarray]:
            return {k: np.asarray(h.value, dtype=np.float64) for k, h in handles.items()}

        best, values, inaccurate, retried = None, [], 0, 0
        for positives in combinations(range(problem.u), problem.n_pos):
            labels = -np.ones(problem.u)
            labels[list(positives)] = 1.0
            y_u.value = labels
            outcome = solve_until_optimal(prog, cvxpy_solver, solver_options, recover=recover,
                                          retries=retries)
            if outcome.attempt is None:
                return failed_solution(problem, outcome.reason, outcome)
            inaccurate += not outcome.optimal
            retried += len(outcome.attempts) > 1
            values.append(outcome.objective)
            if best is None or values[-1] < best[0]:
                best = (values[-1], labels, outcome.value, outcome.attempt.solver)
        _, labels, weights, best_solver = best
        x = dict(weights)
        if isinstance(problem, DAS3VM):
            x.update(p=(labels > 0).astype(float), T=np.array(0.0))
        else:
            x["y_u"] = labels
        ordered = np.sort(values)
        return Solution(x, float(ordered[0]), INACCURATE if inaccurate else OPTIMAL,
                        len(values), 0.0, self.backend, self.name,
                        info={"labelings": len(values),
                              "second_best": float(ordered[1]) if len(values) > 1 else None,
                              "cvxpy_solver": best_solver,
                              "labelings_retried": retried,
                              "labelings_inaccurate": inaccurate})


def _count(u: int, k: int) -> str:
    """``comb(u, k)`` written out, or as a power of ten when it has more than 15 digits."""
    log10 = (math.lgamma(u + 1) - math.lgamma(k + 1) - math.lgamma(u - k + 1)) / math.log(10)
    return str(comb(u, k)) if log10 < 15 else f"~1e{int(log10)}"
