r"""Exact SDP references for NPKL [003 eq. 1, eq. 4], docs/design.md §4.4.

The program is solved through its Lagrange dual, one variable per pair::

    max_y  Σ_p −C ℓ*(−y_p/C)   s.t.   Δ − Σ_p y_p T_p (E_ij + E_ji)/2 ⪰ 0

with ``−C ℓ*(−y/C) = y`` on ``0 ≤ y ≤ C`` (hinge), ``y − y²/(4C)`` on ``y ≥ 0`` (squared
hinge) and ``y − y²/(4C)`` for any ``y`` (square): the loss's
:meth:`~ssl_opt.components.MarginLoss.dual_cvxpy`. The kernel ``Z`` is the multiplier of the
PSD constraint. Written this way the PSD constraint's sparsity pattern is the graph plus the
pairs, which Clarabel decomposes (chordal decomposition); the primal form with ``Z`` as an n×n
PSD variable took minutes where this takes seconds (docs/design.md §4.4).

* ``cvxpy`` (this module's :data:`PRIMAL` formulation, registered with the other families):
  the full n×n program.
* ``cvxpy-boundary`` (:class:`BoundarySDP`): the same program on the constrained points with
  the Schur complement Δ̃ [003 Prop. 1], lifted back with ``Z = Q Z_BD Qᵀ``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ssl_opt.optional import cvxpy as cp
from ssl_opt.problems.npkl.problem import NPKL
from ssl_opt.reference.cvxpy_solver import CvxpyReference, Formulation
from ssl_opt.solution import FAILED, Solution
from ssl_opt.solvers import Solver


def pair_operator(problem: NPKL) -> sp.csc_matrix:
    """``A`` (n²×m) with ``A y = vec(Σ_p y_p T_p (E_ij + E_ji)/2)`` (row-major vec)."""
    n, m = problem.n, problem.m
    i, j = problem.pairs[:, 0], problem.pairs[:, 1]
    rows = np.concatenate([i * n + j, j * n + i])
    cols = np.concatenate([np.arange(m), np.arange(m)])
    vals = 0.5 * np.concatenate([problem.labels, problem.labels])
    return sp.csc_matrix((vals, (rows, cols)), shape=(n * n, m))


def build(problem: NPKL):
    n, C = problem.n, problem.C
    y = cp.Variable(problem.m, name="y")
    Delta = sp.csc_matrix(problem.Delta) if sp.issparse(problem.Delta) else problem.Delta
    G = Delta - cp.reshape(pair_operator(problem) @ y, (n, n), order="C")
    psd = G >> 0
    value, domain = problem.loss.dual_cvxpy(y, C)
    return cp.Problem(cp.Maximize(value), [psd, *domain]), (y, psd)


def recover(problem: NPKL, handles) -> dict:
    y, psd = handles
    Z = np.asarray(psd.dual_value, dtype=np.float64)
    return {"Z": 0.5 * (Z + Z.T), "y": np.asarray(y.value, dtype=np.float64)}


def sdp_seconds(size: int) -> float:
    """Clarabel on the dual SDP, cubic in the size; the constant is of the order of the times
    of ``benchmarks/bench_npkl.py`` parts (a) and (c) (docs/npkl.md). Used only where no
    calibrated cost model exists."""
    return 0.2 + 1.5e-6 * size**3


PRIMAL = Formulation(NPKL, build, recover, cost=lambda p: sdp_seconds(p.n))


class BoundarySDP(Solver):
    """The reduced SDP on the constrained points [003 Prop. 1 eq. 4], lifted to the full Z."""

    name = "cvxpy-boundary"
    backend = "reference"
    needs_packages = ("cvxpy",)
    tolerance_family = "reference"
    problem_types = (NPKL,)
    description = ("NPKL's boundary-kernel SDP [003 Prop. 1] in CVXPY (dual form, Clarabel), "
                   "lifted with Z = Q Z_BD Qᵀ.")
    options = CvxpyReference.options
    complexity = {"npkl": (3.0, "an l×l PSD cone: O(l³) per interior-point iteration")}

    def __init__(self):
        self._inner = CvxpyReference("cvxpy", [PRIMAL], "boundary SDP")

    def predicted_time(self, problem) -> float:
        return sdp_seconds(problem.structure.sizes["l"])

    def _solve(self, problem: NPKL, **options) -> Solution:
        reduction = problem.boundary_reduction()
        inner = self._inner.solve(reduction.reduced, **options)
        if inner.status == FAILED:
            inner.x = {k: np.full(s, np.nan) for k, s in problem.variables.items()}
            return inner
        Z_BD = inner.x["Z"]
        inner.x = {"Z": reduction.lift(Z_BD), "Z_BD": Z_BD, "y": inner.x["y"]}
        inner.info["reduced_objective"] = inner.objective
        return inner
