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
a label pair improves the objective (what :meth:`TSVM.kkt` checks). The schedule is
:func:`switching_loop`, written once for this solver (MFN called directly, its outputs seeding
the next call) and for ``tsvm-model`` (any :class:`~ssl_opt.modeling.TransductiveModel`, the
inner model solved by a model solver).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ssl_opt._validation import check_bool, integer
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.hookspecs import hookimpl
from ssl_opt.modeling.transductive import TransductiveModel
from ssl_opt.plugins.linear.mfn import labeled_mfn, mfn
from ssl_opt.plugins.linear.options import (
    MFN_CALL_OPTIONS,
    SWITCHING_OPTIONS,
    one_blas_thread_on_sparse_x,
)
from ssl_opt.problems.linear.problem import TSVM
from ssl_opt.solution import (
    FAILED,
    MAX_ITERATIONS,
    OPTIMAL,
    STALLED,
    TIME_LIMIT,
    History,
    Solution,
)
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


class InnerSolveFailed(Exception):
    """An inner solve returned ``failed``: the switching loop stops with that status."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass
class SwitchingResult:
    weights: dict
    y_u: np.ndarray
    status: str
    history: History
    retrains: int
    switches: int
    stages: int
    #: Why the run failed (an inner solve did; ``weights`` and ``y_u`` are the last ones).
    reason: str | None = None


def switching_loop(problem: TransductiveModel, fit: Callable, start: Callable, S: int,
                   lam_u_start: float, lam_u_factor: float, time_limit: float | None,
                   max_retrain: int, warm_start, verbose: bool, label: str) -> SwitchingResult:
    """The multiple-switching schedule of [001 §3.1] around any inner fit (written once for
    ``tsvm`` and ``tsvm-model``; see the module docstring).

    ``start() -> (weights, retrains)`` is the labeled fit; ``fit(y_u, lam_u, weights) ->
    (weights, outputs, objective, status)`` solves the inner model for the labels and the
    unlabeled weight, warm-started from ``weights`` (and whatever else it kept of its last
    solve), and raises :class:`InnerSolveFailed` when that solve fails.
    A labeling seen twice in a stage (only an inaccurate inner solve allows it) stops the run
    as ``stalled`` with the labels ``w`` was fitted to; ``time_limit`` stops it (status
    ``time_limit``) after the first retraining or stage that ends past it, with the labels
    ``w`` was fitted to; a failed inner solve stops it as ``failed`` with the last weights and
    labels.
    """
    clock = time.perf_counter()
    l = problem.l

    def out_of_time() -> bool:
        return time_limit is not None and time.perf_counter() - clock >= time_limit

    if warm_start is None:
        try:
            w, retrains = start()
        except InnerSolveFailed as exc:
            zeros = {k: np.zeros(shape) for k, shape in problem.variables.items()}
            return SwitchingResult({k: v for k, v in zeros.items() if k != "y_u"},
                                   zeros["y_u"], FAILED, History(), 1, 0, 0, exc.reason)
        y_u = problem.balanced_labels(problem.outputs(w)[l:])
        lam0 = min(lam_u_start, problem.lam_u)
    else:
        v = problem.warm_start_values(warm_start)
        w, y_u, retrains = {k: v[k].copy() for k in v if k != "y_u"}, v["y_u"].copy(), 0
        if not np.all(np.isin(y_u, (-1.0, 1.0))) or int((y_u > 0).sum()) != problem.n_pos:
            raise InvalidInputError(
                f"warm_start['y_u'] must hold ±1 labels with exactly round(r·u) = "
                f"{problem.n_pos} positives (switching keeps the count); got "
                f"{int((y_u > 0).sum())} positives. Use problem.balanced_labels(outputs).")
        lam0 = problem.lam_u
    history = History()
    switches = stage = 0
    status = inner_status = OPTIMAL
    while True:
        stage += 1
        objective = np.nan
        seen = {_key(y_u)}  # labelings of this stage, u/8 bytes each
        while retrains < max_retrain:
            try:
                w, o, objective, inner_status = fit(y_u, lam0, w)
            except InnerSolveFailed as exc:
                return SwitchingResult(w, y_u, FAILED, history, retrains + 1, switches, stage,
                                       exc.reason)
            retrains += 1
            fitted = y_u.copy()
            count = switch_labels(y_u, o[l:], S, problem.switch_gain) if lam0 > 0 else 0
            switches += count
            history.append(stage=stage, lam_u=lam0, objective=objective, switches=switches,
                           retrains=retrains, time=time.perf_counter() - clock)
            if count == 0:
                break
            if out_of_time():
                y_u, status = fitted, TIME_LIMIT
                break
            key = _key(y_u)
            if key in seen:
                y_u, status = fitted, STALLED
                break
            seen.add(key)
        else:
            status = MAX_ITERATIONS
        if verbose:
            print(f"[{label}] stage {stage:3d}  λ'={lam0:.3g}  objective={objective:.8g}  "
                  f"switches={switches}  retrains={retrains}  "
                  f"t={time.perf_counter() - clock:.2f}s", flush=True)
        if status != OPTIMAL or lam0 >= problem.lam_u:
            break
        if out_of_time():
            status = TIME_LIMIT
            break
        lam0 = min(lam0 * lam_u_factor, problem.lam_u)
    if status == OPTIMAL and inner_status != OPTIMAL:
        status = inner_status  # the final inner solve fell short: say so
    return SwitchingResult(w, y_u.copy(), status, history, retrains, switches, stage)


def _key(y_u: np.ndarray) -> bytes:
    return np.packbits(y_u > 0).tobytes()


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

    def _solve(self, problem: TSVM, S, lam_u_start, lam_u_factor, time_limit, tol, forcing,
               mfn_max_iter, max_retrain, warm_start, verbose) -> Solution:
        l, u, design = problem.l, problem.u, problem.design
        opts = {"tol": tol, "forcing": forcing, "max_iter": mfn_max_iter}
        costs = np.concatenate([np.full(l, 1.0 / l), np.zeros(u)])
        state = {"o": None, "cg": 0}  # MFN's last outputs (its next seed) and CG steps

        def fit(y_u, lam_u, weights):
            costs[l:] = lam_u / u
            res = mfn(design, np.concatenate([problem.y, y_u]), costs, problem.lam,
                      w0=weights["w"], outputs0=state["o"], **opts)
            state.update(o=res.outputs, cg=state["cg"] + res.cg_iterations)
            return {"w": res.w}, res.outputs, res.objective, res.status

        def start():
            return {"w": labeled_mfn(problem, **opts).w}, 0

        run = switching_loop(problem, fit, start, S, lam_u_start, lam_u_factor, time_limit,
                             max_retrain, warm_start, verbose, self.name)
        x = {"w": run.weights["w"], "y_u": run.y_u}
        return Solution(x, problem.objective(x), run.status, run.retrains, 0.0, self.backend,
                        self.name, run.history,
                        info={"switches": run.switches, "retrains": run.retrains,
                              "stages": run.stages, "cg_iterations": state["cg"]})


@hookimpl
def register_solvers():
    return [TSVMSolver()]
