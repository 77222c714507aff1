"""Deterministic-annealing semi-supervised SVM [001 §3.2].

For a decreasing temperature ``T`` (geometric: ``T₀ = T0_factor·λ'``, divided by
``anneal_rate`` per stage), alternate until the mean KL divergence between successive ``p``
falls below ``kl_tol``:

* **w-step** — MFN on the labeled rows plus each unlabeled row as +1 (cost ``λ'p_j/u``) and
  as −1 (cost ``λ'(1−p_j)/u``) [001 eq. 8]. The unlabeled rows are stored once: MFN merges a
  row's active terms (see :mod:`.mfn`), so products touch each row once.
* **p-step** — ``p_j = 1/(1 + exp((g_j − 2ν)/T))``, ``g_j = λ'[l2(o_j) − l2(−o_j)]`` [001 eq. 9],
  ν from ``mean(p) = r`` by safeguarded Newton on ``s = 2ν`` inside a bisection bracket.

Annealing stops when the mean entropy of ``p`` is within ``entropy_tol`` of its floor (p is
nearly binary; when ``r·u`` is fractional the balance keeps one ``p_j`` fractional, so the floor
is ``h(frac(r·u))/u``) or after ``max_outer`` stages. The stage with the lowest
annealing-target objective (``T = 0``) is returned, after polishing its ``(w, p)`` at its
temperature so that ``w`` is optimal for ``p`` and ``p`` is in closed form for ``w`` (what
:meth:`DAS3VM.kkt` checks).
"""

from __future__ import annotations

import time

import numpy as np
from scipy.special import expit, rel_entr, xlogy

from ssl_opt._validation import check_bool, check_nonnegative, check_positive, greater_than, integer
from ssl_opt.hookspecs import hookimpl
from ssl_opt.plugins.linear.mfn import labeled_mfn, mfn
from ssl_opt.plugins.linear.options import MFN_CALL_OPTIONS, one_blas_thread_on_sparse_x
from ssl_opt.problems.linear.problem import DAS3VM
from ssl_opt.solution import MAX_ITERATIONS, OPTIMAL, History, Solution
from ssl_opt.solvers import Option, Solver


def balance_root(g: np.ndarray, T: float, r: float, s0: float | None = None,
                 max_iter: int = 200) -> tuple[np.ndarray, float]:
    """``p = expit((s − g)/T)`` with ``mean(p) = r``: safeguarded Newton on ``s`` (= 2ν).

    ``h(s) = mean(p) − r`` is increasing; the bracket ``[min g, max g] + T·logit(r)`` contains
    its root. Newton steps leaving the bracket are replaced by bisection.
    """
    shift = T * np.log(r / (1.0 - r))
    lo, hi = float(g.min() + shift), float(g.max() + shift)
    s = 0.5 * (lo + hi) if s0 is None or not lo < s0 < hi else float(s0)
    p = expit((s - g) / T)
    for _ in range(max_iter):
        h = float(p.mean()) - r
        if abs(h) <= 1e-13 or hi - lo <= 4e-16 * max(1.0, abs(s)):
            break
        if h > 0:
            hi = s
        else:
            lo = s
        slope = float(np.mean(p * (1.0 - p))) / T
        s_new = s - h / slope if slope > 0 else np.nan
        s = s_new if lo < s_new < hi else 0.5 * (lo + hi)
        p = expit((s - g) / T)
    return p, s


def mean_kl(p: np.ndarray, q: np.ndarray) -> float:
    """Mean KL divergence between Bernoulli(p_j) and Bernoulli(q_j) [001 §3.2.3]."""
    return float(np.mean(rel_entr(p, q) + rel_entr(1.0 - p, 1.0 - q)))


def mean_entropy(p: np.ndarray) -> float:
    return float(-np.mean(xlogy(p, p) + xlogy(1.0 - p, 1.0 - p)))


class DASolver(Solver):
    name = "da"
    complexity = {"linear": (1.0, "O(nnz) per MFN solve, a fixed number of temperatures")}
    tolerance_family = "iterative"
    problem_types = (DAS3VM,)
    description = ("Deterministic annealing S3VM [001 §3.2]: alternating MFN w-steps and "
                   "closed-form p-steps per temperature, geometric cooling, best stage returned.")
    options = {
        "T0_factor": Option(10.0, "starting temperature T₀ = T0_factor·λ' (SVMlin: 10)",
                            check_positive),
        "anneal_rate": Option(1.5, "T is divided by this per stage", greater_than(1)),
        "kl_tol": Option(1e-6, "stop a stage when the mean KL(p_new ‖ p_old) is below this",
                         check_nonnegative),
        "entropy_tol": Option(1e-6, "stop annealing when the mean entropy of p is within this "
                             "of its floor h(frac(r·u))/u", check_nonnegative),
        "max_outer": Option(30, "temperature stages at most", integer(1)),
        "max_inner": Option(100, "w/p alternations per stage at most", integer(1)),
        "polish_tol": Option(1e-10, "polish the returned stage until max|Δp| is below this",
                             check_nonnegative),
        **MFN_CALL_OPTIONS,
        "verbose": Option(False, "print one progress line per temperature", check_bool),
    }

    def predicted_time(self, problem) -> float:
        return 2e-2 + 4e-5 * problem.structure.sizes["nnz"]

    blas_threads = one_blas_thread_on_sparse_x

    def _solve(self, problem: DAS3VM, T0_factor, anneal_rate, kl_tol, entropy_tol, max_outer,
               max_inner, polish_tol, tol, forcing, mfn_max_iter, verbose) -> Solution:
        start = time.perf_counter()
        l, u, n, lam_u = problem.l, problem.u, problem.n, problem.lam_u
        opts = {"tol": tol, "forcing": forcing, "max_iter": mfn_max_iter}
        rows = np.concatenate([np.arange(l), np.arange(l, n), np.arange(l, n)])
        labels = np.concatenate([problem.y, np.ones(u), -np.ones(u)])
        costs = np.concatenate([np.full(l, 1.0 / l), np.zeros(2 * u)])
        w = labeled_mfn(problem, **opts).w
        o = problem.design.matvec(w)
        p = np.full(u, problem.r)
        s = None
        history = History()
        best = None
        mfn_calls = 0
        status = OPTIMAL

        def w_step(w, o, p):
            costs[l:l + u], costs[l + u:] = problem.unlabeled_costs(p)
            res = mfn(problem.design, labels, costs, problem.lam, w0=w, outputs0=o, rows=rows,
                      **opts)
            return res.w, res.outputs, res.status

        def p_step(o, T, s):
            g = lam_u * (problem.loss.value(o[l:]) - problem.loss.value(-o[l:]))
            return balance_root(g, T, problem.r, s)

        # With r·u fractional, mean(p) = r keeps one p_j fractional at any temperature: the
        # mean entropy cannot fall below h(frac(r·u))/u, so the stop rule is relative to that.
        frac = problem.r * u - np.floor(problem.r * u)
        entropy_floor = mean_entropy(np.array([frac])) / u
        T = T0_factor * lam_u if lam_u > 0 else 1.0
        for outer in range(1, max_outer + 1):
            kl = np.inf
            for inner in range(1, max_inner + 1):  # noqa: B007 - inner is reported below
                w, o, _ = w_step(w, o, p)
                mfn_calls += 1
                q = p
                p, s = p_step(o, T, s)
                kl = mean_kl(p, q)
                if kl < kl_tol:
                    break
            objective = problem.labeled_cost({"w": w}, o) + problem.unlabeled_loss(p, o[l:])
            entropy = mean_entropy(p)
            history.append(stage=outer, T=T, objective=objective, kl=kl, entropy=entropy,
                           inner=inner, mfn_calls=mfn_calls, time=time.perf_counter() - start)
            if verbose:
                print(f"[da] stage {outer:3d}  T={T:.3g}  objective={objective:.8g}  "
                      f"entropy={entropy:.2e}  alternations={inner}  "
                      f"t={time.perf_counter() - start:.2f}s", flush=True)
            if best is None or objective < best[0]:
                best = (objective, w, o, p, T, s)
            if entropy < entropy_floor + entropy_tol or lam_u == 0:
                break
            T /= anneal_rate
        else:
            status = MAX_ITERATIONS if entropy >= entropy_floor + entropy_tol else OPTIMAL
        _, w, o, p, T, s = best
        for _ in range(100):  # polish the returned stage: w optimal for p, p closed form
            w, o, mfn_status = w_step(w, o, p)
            mfn_calls += 1
            p_new, s = p_step(o, T, s)
            change, p = float(np.max(np.abs(p_new - p))), p_new
            if change <= polish_tol:
                break
        x = {"w": w, "p": p, "T": np.array(T)}
        return Solution(x, problem.objective(x), status, mfn_calls, 0.0, self.backend,
                        self.name, history,
                        info={"mfn_calls": mfn_calls, "stages": outer, "T": T,
                              "y_u": problem.balanced_labels(o[l:]),
                              "tsvm_objective": problem.best_labeling_objective(x)})


@hookimpl
def register_solvers():
    return [DASolver()]
