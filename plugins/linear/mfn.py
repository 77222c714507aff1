"""L2-SVM-MFN: modified finite Newton for the L2-SVM [001 §2], Keerthi & DeCoste's method.

Minimizes ``λ/2‖w‖² + ½ Σ_t c_t max(0, 1 − y_t x̃_{ρ(t)}ᵀw)²`` over *terms* ``t``, each a
(row ``ρ(t)``, label, cost) triple. A plain L2-SVM has one term per row; DA's w-step has the
labeled rows once and every unlabeled row twice (labels ±1) — the row is stored once and its
active terms are merged into one weighted least-squares row: cost ``Σ c_t`` and target
``Σ c_t y_t / Σ c_t``. Each iteration:

1. active set ``j(w) = {t : y_t o_t < 1}`` from the current outputs ``o = X̃w``;
2. Newton point ``w̄`` of the quadratic on that piece by CGLS seeded from ``w`` [001 eq. 4];
3. if ``w̄`` has the same active set (and CGLS converged) it is the optimum — finite
   convergence; otherwise ``w ← w + δ(w̄ − w)`` with the exact line search [001 eq. 5]: the
   derivative is piecewise linear in δ, its root found by sorting the break points.

As in SVMlin, a cold start (``w = 0``) runs the first CGLS loosely (tolerance 0.01, at most 10
iterations) so that the line search lands on a point with a small active set.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ssl_opt._validation import check_nonnegative, integer, optional
from ssl_opt.hookspecs import hookimpl
from ssl_opt.numerics.cgls import cgls
from ssl_opt.numerics.design import LinearDesign
from ssl_opt.numerics.line_search import weighted_squared_hinge_step
from ssl_opt.plugins.linear.options import one_blas_thread_on_sparse_x
from ssl_opt.problems.linear.problem import LinearSVM
from ssl_opt.solution import MAX_ITERATIONS, OPTIMAL, STALLED, History, Solution
from ssl_opt.solvers import Option, Solver

#: SVMlin's crude first CGLS solve from w = 0.
CRUDE_TOL, CRUDE_MAX_ITER = 1e-2, 10
#: Active-row fraction above which CGLS runs on all of X instead of a copy of the active rows.
FULL_DESIGN_FRACTION = 0.8
#: Relative objective decrease below which MFN stops as stalled (SVMlin's RELATIVE_STOP_EPS).
STALL_REL = 1e-12


@dataclass
class MFNResult:
    w: np.ndarray
    outputs: np.ndarray  # X̃w on every (unique) row
    objective: float
    iterations: int
    cg_iterations: int
    status: str
    history: list[dict] = field(default_factory=list)


def mfn(design: LinearDesign, labels: np.ndarray, costs: np.ndarray, lam: float,
        w0: np.ndarray | None = None, outputs0: np.ndarray | None = None,
        rows: np.ndarray | None = None, tol: float = 1e-6, max_iter: int = 50,
        cg_max_iter: int | None = None, forcing: float = 0.0,
        stationarity_tol: float | None = None) -> MFNResult:
    """Run L2-SVM-MFN; ``rows`` maps terms to rows of ``design`` (``None``: term t is row t).

    ``tol`` is the relative CGLS tolerance and the slack allowed when comparing active sets.
    With ``stationarity_tol`` the exact CGLS solves also stop no later than ``‖r‖₂ ≤
    stationarity_tol·max(1, λ‖w‖∞)``: at the optimum ``r = −∇J``, and the model certificate's
    stationarity is ``‖∇J‖∞`` over ``max(1, ‖λw‖∞, ‖X̃ᵀ(c∘y∘slack)‖∞)`` (both terms ≈ λw there).
    """
    start = time.perf_counter()
    w = np.zeros(design.dim) if w0 is None else np.array(w0, dtype=np.float64)
    o = design.matvec(w) if outputs0 is None else np.array(outputs0, dtype=np.float64)
    y, c = labels, costs
    crude = not np.any(w)
    eps, cap = (CRUDE_TOL, CRUDE_MAX_ITER) if crude else (tol, cg_max_iter)
    objective = _objective(lam, w, y, c, o if rows is None else o[rows])
    history = [{"objective": objective, "active": np.nan, "cg_iterations": 0, "time": 0.0}]
    cg_total, status = 0, MAX_ITERATIONS
    iterations = 0
    while iterations < max_iter:
        iterations += 1
        atol = (np.inf if stationarity_tol is None or eps > tol else
                stationarity_tol * max(1.0, lam * float(np.max(np.abs(w), initial=0.0))))
        o_t = o if rows is None else o[rows]
        active = (y * o_t < 1.0) & (c > 0)
        act_rows, C, b = _merge_active(design.n, rows, active, y, c)
        if act_rows.size >= FULL_DESIGN_FRACTION * design.n:
            # Copying nearly all rows costs more than the products it saves (DA: every
            # unlabeled row has an active term): keep X, with zero cost on inactive rows.
            C_all, b_all = np.zeros(design.n), np.zeros(design.n)
            C_all[act_rows], b_all[act_rows] = C, b
            res = cgls(design, C_all, b_all, lam, w, o, eps, cap, forcing, atol)
        else:
            res = cgls(design.rows(act_rows), C, b, lam, w, o[act_rows], eps, cap, forcing,
                       atol)
        cg_total += res.iterations
        o_bar = design.matvec(res.beta)
        m_bar = y * (o_bar if rows is None else o_bar[rows])
        same_piece = bool(np.all(m_bar[active] <= 1.0 + eps)
                          and np.all(m_bar[~active & (c > 0)] >= 1.0 - eps))
        if res.converged and same_piece and eps <= tol:
            w, o = res.beta, o_bar
            objective = _objective(lam, w, y, c, o if rows is None else o[rows])
            history.append({"objective": objective, "active": int(active.sum()),
                            "cg_iterations": res.iterations,
                            "time": time.perf_counter() - start})
            status = OPTIMAL
            break
        d = res.beta - w
        t = y * (o_bar - o if rows is None else (o_bar - o)[rows])
        delta = weighted_squared_hinge_step(1.0 - y * o_t, t, c, lam * float(w @ d),
                                            lam * float(d @ d))
        w = w + delta * d
        o = o + delta * (o_bar - o)
        previous, objective = objective, _objective(lam, w, y, c, o if rows is None else o[rows])
        history.append({"objective": objective, "active": int(active.sum()),
                        "cg_iterations": res.iterations, "step": delta,
                        "time": time.perf_counter() - start})
        if eps > tol:
            eps, cap = tol, cg_max_iter  # after the crude first solve
        elif previous - objective <= STALL_REL * abs(previous):
            if forcing > 0:
                forcing = 0.0  # inexact steps no longer pay: solve the Newton systems to tol
                continue
            status = STALLED
            break
    o = design.matvec(w)  # drop the round-off accumulated by the outputs' updates
    objective = _objective(lam, w, y, c, o if rows is None else o[rows])
    return MFNResult(w, o, objective, iterations, cg_total, status, history)


def labeled_mfn(problem, **mfn_options) -> MFNResult:
    """MFN on the labeled rows alone (costs 1/l): the start of TSVM and DA [001 §3.1.1]."""
    sub = problem.design.rows(slice(0, problem.l))
    return mfn(sub, problem.y, np.full(problem.l, 1.0 / problem.l), problem.lam, **mfn_options)


def _objective(lam, w, y, c, o_t) -> float:
    slack = np.maximum(0.0, 1.0 - y * o_t)
    return float(0.5 * lam * (w @ w) + 0.5 * c @ (slack * slack))


def _merge_active(n_rows, rows, active, y, c):
    """Active rows with their merged cost and least-squares target."""
    if rows is None:
        idx = np.flatnonzero(active)
        return idx, c[idx], y[idx]
    r = rows[active]
    C = np.bincount(r, weights=c[active], minlength=n_rows)
    Cy = np.bincount(r, weights=(c * y)[active], minlength=n_rows)
    idx = np.flatnonzero(C > 0)
    return idx, C[idx], Cy[idx] / C[idx]


class MFN(Solver):
    name = "mfn"
    complexity = {"linear": (1.0, "O(nnz) per CGLS step, a few Newton steps")}
    tolerance_family = "iterative"
    problem_types = (LinearSVM,)
    description = ("L2-SVM-MFN [001 §2]: Newton on the active set by seeded CGLS, exact line "
                   "search on sorted break points; O(nnz) per CGLS step, X never densified.")
    options = {
        "tol": Option(1e-7, "CGLS tolerance (‖normal-equation residual‖ ≤ tol·min(‖X̃ᵀCy‖, "
                      "max(1, λ‖w‖∞)): the model certificate's stationarity scale) and "
                      "active-set slack", check_nonnegative),
        "max_iter": Option(300, "Newton steps at most (SVMlin's MFNITERMAX is 50, for its "
                           "exact CGLS steps; the inexact steps of forcing > 0 need more: 67 on "
                           "PCMAC with every row labeled, up to 145 at λ = 1e-4)", integer(0)),
        "cg_max_iter": Option(None, "CGLS iteration cap per step (default 10·dim + 1000)",
                              optional(integer(0))),
        "forcing": Option(0.1, "inexact Newton: CGLS stops at η‖r₀‖ with η = min(forcing, "
                          "√(relative ‖r₀‖)) until the final tolerance is needed (0: exact)",
                          check_nonnegative),
        "warm_start": Option(None, "a previous Solution or dict with 'w' to seed from"),
    }

    blas_threads = one_blas_thread_on_sparse_x

    def predicted_time(self, problem) -> float:
        # ~10 Newton steps × ~30 CGLS steps × 2 products of ~1.5 ns per non-zero.
        return 1e-3 + 1e-6 * problem.structure.sizes["nnz"]

    def _solve(self, problem: LinearSVM, tol, max_iter, cg_max_iter, forcing,
               warm_start) -> Solution:
        w0 = None if warm_start is None else problem.warm_start_values(warm_start)["w"]
        res = mfn(problem.design, problem.y, problem.cost, problem.lam, w0=w0, tol=tol,
                  max_iter=max_iter, cg_max_iter=cg_max_iter, forcing=forcing,
                  stationarity_tol=tol)
        history = History()
        for k, row in enumerate(res.history):
            history.append(iteration=k, **row)
        return Solution({"w": res.w}, res.objective, res.status, res.iterations, 0.0,
                        self.backend, self.name, history,
                        info={"cg_iterations": res.cg_iterations})


@hookimpl
def register_solvers():
    return [MFN()]
