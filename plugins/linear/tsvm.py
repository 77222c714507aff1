"""Transductive L2-SVM with multiple switching [001 §3.1], on top of L2-SVM-MFN.

1. MFN on the labeled rows; the ``round(r·u)`` unlabeled rows with the largest outputs get
   the temporary label +1, the rest −1.
2. λ' is raised from ``lam_u_start`` by ``lam_u_factor`` up to its target; at each value MFN is
   retrained (seeded from the last ``w``), then labels are switched and MFN retrained while an
   improving pair exists.
3. Switching [001 §3.1.2]: positives sorted by ascending output, negatives by descending
   output; the leading pairs with ``o_i < o_j`` (up to ``S`` of them) switch. For the L2 loss
   switching a pair changes the loss by ``g(o_i) − g(o_j)`` with ``g(o) = l2(−o) − l2(o)``
   strictly increasing (:meth:`~ssl_opt.problems.linear.problem.TSVM.switch_gain`), so each switch
   strictly lowers the objective and the loop ends in finitely many steps. ``S = 1`` is
   Joachims' classic single switch.

The result is block-optimal: ``w`` is the L2-SVM optimum for the final labels and no switch of
a label pair improves the objective (what :meth:`TSVM.kkt` checks).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from ssl_opt._validation import check_bool, integer
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.hookspecs import hookimpl
from ssl_opt.plugins.linear.mfn import labeled_mfn, mfn
from ssl_opt.plugins.linear.options import (
    MFN_CALL_OPTIONS,
    SWITCHING_OPTIONS,
    one_blas_thread_on_sparse_x,
)
from ssl_opt.problems.linear.problem import TSVM
from ssl_opt.solution import MAX_ITERATIONS, OPTIMAL, History, Solution
from ssl_opt.solvers import Option, Solver

#: Smallest loss decrease counted as an improving switch (guards against round-off cycling).
SWITCH_EPS = 1e-10


def switch_labels(y_u: np.ndarray, o_u: np.ndarray, max_pairs: int,
                  switch_gain: Callable[[np.ndarray], np.ndarray]) -> int:
    """Switch up to ``max_pairs`` improving (positive, negative) pairs in place; return how many.

    Pairs are taken from the heads of both sorted lists while ``g(o_j) − g(o_i) > SWITCH_EPS``
    with ``g`` the increasing ``switch_gain`` (:meth:`TSVM.switch_gain`), so the switched pairs
    are a prefix.
    """
    pos, neg = np.flatnonzero(y_u > 0), np.flatnonzero(y_u < 0)
    k = min(max_pairs, pos.size, neg.size)
    if k == 0:
        return 0
    if k < pos.size:
        pos = pos[np.argpartition(o_u[pos], k - 1)[:k]]
    if k < neg.size:
        neg = neg[np.argpartition(-o_u[neg], k - 1)[:k]]
    pos = pos[np.argsort(o_u[pos], kind="stable")]
    neg = neg[np.argsort(-o_u[neg], kind="stable")]
    improves = switch_gain(o_u[neg]) - switch_gain(o_u[pos]) > SWITCH_EPS
    count = k if improves.all() else int(np.argmin(improves))
    y_u[pos[:count]] = -1.0
    y_u[neg[:count]] = 1.0
    return count


class TSVMSolver(Solver):
    name = "tsvm"
    complexity = {"linear": (1.0, "O(nnz) per MFN retraining; retrainings grow with u")}
    tolerance_family = "iterative"
    problem_types = (TSVM,)
    description = ("Transductive L2-SVM-MFN with gradual λ' and switching of up to S label pairs "
                   "per retraining [001 §3.1]; every retraining seeded.")
    options = {
        **SWITCHING_OPTIONS,
        **MFN_CALL_OPTIONS,
        "max_retrain": Option(100_000, "cap on MFN retrainings (then stops with max_iterations)",
                              integer(0)),
        "warm_start": Option(None, "a TSVM Solution or dict with 'w' and 'y_u': start at the "
                             "target λ' from it, skipping the labeled start and annealing"),
        "verbose": Option(False, "print one progress line per λ' stage", check_bool),
    }

    def predicted_time(self, problem) -> float:
        return 1e-2 + 2e-5 * problem.structure.sizes["nnz"]

    blas_threads = one_blas_thread_on_sparse_x

    def _solve(self, problem: TSVM, S, lam_u_start, lam_u_factor, tol, forcing, mfn_max_iter,
               max_retrain, warm_start, verbose) -> Solution:
        start = time.perf_counter()
        l, u, design = problem.l, problem.u, problem.design
        opts = {"tol": tol, "forcing": forcing, "max_iter": mfn_max_iter}
        if warm_start is None:
            w = labeled_mfn(problem, **opts).w
            o = design.matvec(w)
            y_u = problem.balanced_labels(o[l:])
            lam0 = min(lam_u_start, problem.lam_u)
        else:
            v = problem.warm_start_values(warm_start)
            w, y_u = v["w"].copy(), v["y_u"].copy()
            if not np.all(np.isin(y_u, (-1.0, 1.0))) or int((y_u > 0).sum()) != problem.n_pos:
                raise InvalidInputError(
                    f"warm_start['y_u'] must hold ±1 labels with exactly round(r·u) = "
                    f"{problem.n_pos} positives (switching keeps the count); got "
                    f"{int((y_u > 0).sum())} positives. Use problem.balanced_labels(outputs).")
            o = design.matvec(w)
            lam0 = problem.lam_u
        labels = np.concatenate([problem.y, y_u])
        costs = np.concatenate([np.full(l, 1.0 / l), np.full(u, lam0 / u)])
        history = History()
        retrains = switches = cg_total = stage = 0
        status = OPTIMAL
        while True:
            stage += 1
            costs[l:] = lam0 / u
            res = None
            while retrains < max_retrain:
                res = mfn(design, labels, costs, problem.lam, w0=w, outputs0=o, **opts)
                w, o = res.w, res.outputs
                retrains += 1
                cg_total += res.cg_iterations
                count = (switch_labels(labels[l:], o[l:], S, problem.switch_gain)
                         if lam0 > 0 else 0)
                switches += count
                history.append(stage=stage, lam_u=lam0, objective=res.objective,
                               switches=switches, retrains=retrains,
                               time=time.perf_counter() - start)
                if count == 0:
                    break
            else:
                status = MAX_ITERATIONS
            if verbose:
                print(f"[tsvm] stage {stage:3d}  λ'={lam0:.3g}  objective={res.objective:.8g}  "
                      f"switches={switches}  retrains={retrains}  "
                      f"t={time.perf_counter() - start:.2f}s", flush=True)
            if status != OPTIMAL or lam0 >= problem.lam_u:
                break
            lam0 = min(lam0 * lam_u_factor, problem.lam_u)
        if res is not None and res.status != OPTIMAL and status == OPTIMAL:
            status = res.status
        x = {"w": w, "y_u": labels[l:].copy()}
        return Solution(x, problem.objective(x), status, retrains, 0.0, self.backend, self.name,
                        history, info={"switches": switches, "retrains": retrains,
                                       "stages": stage, "cg_iterations": cg_total})


@hookimpl
def register_solvers():
    return [TSVMSolver()]
