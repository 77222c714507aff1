r"""Exact CVXPY programs for ERE and sums of norms [004 eqs. 8, 9, 10], docs/design.md §4.5 (LRL,
a named model, has the model's program from its terms: ``reference/model.py``).

Built vectorized, with no Python loop over edges or points:

* robust ERE [004 eq. 9] — an SOCP: epigraph variables ``t_e`` (one per edge i < j) and
  ``t_i`` (one per point) with two stacked cone constraints
  ``cp.SOC(t_e, B F, axis=1)`` and ``cp.SOC(t_p, XW + 1bᵀ − F, axis=1)`` (one cone per row),
  ``B`` the edge–node incidence matrix and ``F = [Y; F_u]``; objective
  ``Aₑ·t_e + α Σ t_p + β‖W‖²``. The cones' dual values give the multipliers
  ``u = −Λ/λ`` of each norm (CVXPY's Lagrangian subtracts ``⟨(λ, Λ), (t, g)⟩``), returned as
  ``U_edges`` / ``U_points``: the certificate's warm start, never trusted as such.
* squared ERE [004 eq. 8] — a QP: ``tr(FᵀLF) = ‖diag(√A_e) B F‖²`` (no PSD check of L, no loop
  over classes).
* :class:`~ssl_opt.problems.SumOfNorms` [004 eq. 10] — ``SOC(t, reshape(Gx − h, (m, k)),
  axis=1)`` and ``½ xᵀQx`` through ``psd_wrap`` (Q was checked PSD by the problem).

Clarabel with the reference tolerances (1e-10) is exact for the certificates (δ = 0: no
smoothing anywhere).
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import scipy.sparse as sp

from ssl_opt.problems.ere.problem import ERE
from ssl_opt.problems.ere.sum_of_norms import SumOfNorms
from ssl_opt.reference.cvxpy_solver import Formulation


def _weighted_incidence(problem, sqrt: bool) -> sp.csr_matrix:
    w = np.sqrt(problem.edge_w) if sqrt else problem.edge_w
    return sp.csr_matrix(sp.diags(w) @ problem.incidence)


def _label_matrix(problem: ERE):
    """``F = [Y; F_u]`` as a CVXPY expression, and the variable ``F_u`` (None when u = 0)."""
    if problem.u == 0:
        return cp.Constant(problem.Y), None
    Fu = cp.Variable((problem.u, problem.c), name="F_u")
    return cp.vstack([cp.Constant(problem.Y), Fu]), Fu


def build_ere(problem: ERE):
    n, c = problem.n, problem.c
    F, Fu = _label_matrix(problem)
    W = cp.Variable((problem.d, c), name="W")
    b = cp.Variable(c, name="b")
    X = sp.csr_matrix(problem.X) if sp.issparse(problem.X) else problem.X
    R = X @ W + np.ones((n, 1)) @ cp.reshape(b, (1, c), order="C") - F
    reg = problem.beta * cp.sum_squares(W)
    if not problem.robust:
        graph = cp.sum_squares(_weighted_incidence(problem, True) @ F) if problem.n_edges else 0
        prog = cp.Problem(cp.Minimize(graph + problem.alpha * cp.sum_squares(R) + reg))
        return prog, (Fu, W, b, None, None)
    t_p = cp.Variable(n, name="t_points")
    constraints = [cp.SOC(t_p, R, axis=1)]
    objective = problem.alpha * cp.sum(t_p) + reg
    cone_e = None
    if problem.n_edges:
        t_e = cp.Variable(problem.n_edges, name="t_edges")
        cone_e = cp.SOC(t_e, problem.incidence @ F, axis=1)
        constraints.append(cone_e)
        objective = objective + problem.edge_w @ t_e
    return cp.Problem(cp.Minimize(objective), constraints), (Fu, W, b, cone_e, constraints[0])


def _multipliers(cone, rows: int, c: int) -> np.ndarray:
    """``u = −Λ/λ`` per cone row (0 where λ = 0, i.e. a zero weight)."""
    if cone is None or cone.dual_value is None:
        return np.zeros((rows, c))
    lam, Lam = cone.dual_value
    Lam = np.asarray(Lam, dtype=np.float64).reshape(rows, c)
    lam = np.asarray(lam, dtype=np.float64).reshape(rows)
    return -Lam / np.where(lam > 0, lam, 1.0)[:, None] * (lam > 0)[:, None]


def recover_ere(problem: ERE, handles) -> dict:
    Fu, W, b, cone_e, cone_p = handles
    F = problem.Y if Fu is None else np.vstack([problem.Y, np.asarray(Fu.value)])
    out = {"F": np.asarray(F, dtype=np.float64), "W": np.asarray(W.value, dtype=np.float64),
           "b": np.asarray(b.value, dtype=np.float64).reshape(problem.c)}
    if problem.robust:
        out["U_edges"] = _multipliers(cone_e, problem.n_edges, problem.c)
        out["U_points"] = _multipliers(cone_p, problem.n, problem.c)
    return out


def build_sum_of_norms(problem: SumOfNorms):
    x = cp.Variable(problem.n, name="x")
    t = cp.Variable(problem.m, name="t")
    g = cp.reshape(problem.G @ x - problem.h, (problem.m, problem.k), order="C")
    cone = cp.SOC(t, g, axis=1)
    objective = problem.c @ x + problem.w @ t
    if problem.Q.nnz:
        objective = objective + 0.5 * cp.quad_form(x, cp.psd_wrap(problem.Q))
    return cp.Problem(cp.Minimize(objective), [cone]), (x, cone)


def recover_sum_of_norms(problem: SumOfNorms, handles) -> dict:
    x, cone = handles
    return {"x": np.asarray(x.value, dtype=np.float64).reshape(problem.n),
            "U": _multipliers(cone, problem.m, problem.k)}


def _cost_ere(problem) -> float:
    """Clarabel seconds from the number of cone entries, growth exponent assumed 1.2; the
    constant is of the order of Clarabel's times in ``benchmarks/bench_ere.py`` part (b)
    (docs/ere.md). Used only where no calibrated cost model exists."""
    s = problem.structure.sizes
    entries = (s["edges"] + s["n"]) * s["c"] + s["variables"]
    return 0.05 + 15.0 * (entries / 100_000) ** 1.2


def _cost_sum_of_norms(problem) -> float:
    s = problem.structure.sizes
    return 0.05 + 3.0 * ((s["groups"] * s["group_size"] + s["n"]) / 100_000) ** 1.2


ERE_FORMULATION = Formulation(ERE, build_ere, recover_ere, cost=_cost_ere)
SUM_OF_NORMS_FORMULATION = Formulation(SumOfNorms, build_sum_of_norms, recover_sum_of_norms,
                                       cost=_cost_sum_of_norms)
FORMULATIONS = [ERE_FORMULATION, SUM_OF_NORMS_FORMULATION]
