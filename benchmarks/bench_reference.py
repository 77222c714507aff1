"""The reference built from a model's terms against a hand-written CVXPY program of the same
problem, side by side in one run (docs/modeling.md, "The reference against hand-written
CVXPY").

For every variant of docs/modeling.md (``ssl_opt.modeling.variants``) at the sizes below, the
term-built reference (``solve(model, solver="cvxpy")``: Clarabel, the package's tolerances) and
the program a careful user writes from the formulas with CVXPY atoms — a kernel's RKHS norm as
``sum_squares(Rᵀα)`` with ``K = RRᵀ``, a Laplacian as ``quad_form(f, psd_wrap(L))``, sparse data
kept sparse — solved by Clarabel with the same tolerances, interleaved, best of ``--repeat``;
the data are read off the model's terms, so both programs state the same instance. Reported:
both times, their ratio (term-built / hand-written: below 1.5 is the target), both statuses and
the relative difference of the optimal values (the hand-written objective is CVXPY's value; the
term-built one the model's objective at the returned point).

Run from the repository root::

    python benchmarks/bench_reference.py                 # every variant (~5 min)
    python benchmarks/bench_reference.py --only lapsvm_tv laprls_l1 --repeat 3
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import _source_tree  # noqa: F401  (the tree's ssl_opt, not an installed copy)
import cvxpy as cp
import numpy as np

import ssl_opt
from ssl_opt.modeling.maps import matrices
from ssl_opt.modeling.variants import VARIANTS
from ssl_opt.numerics.factor import psd_factor
from ssl_opt.reference.attempts import TIGHT_OPTIONS

#: Sizes per variant: where the term-built reference took about 1–15 s before the kernel
#: products became variables of their own.
SIZES = {
    "lapsvm_tv": (500, 1000),
    "laprls_l1": (500, 1000),
    "linear_huber_enet": (4000,),
    "linear_logistic_enet": (4000,),
    "lass_entropy": (8000,),
    "lass_l1_graph": (8000,),
    "ere_group": (4000,),
    "ere_huber": (4000,),
    "multiclass_laprls": (1500,),
    "multiclass_simplex": (500,),
    "multiclass_l21": (500,),
    "lapsvm_balance": (1000,),
    "lapsvm_box": (1000,),
    "label_propagation": (8000,),
}


def _term(model, name):
    return next(t for t in model.terms if t.name == name)


def _matrix(expr, variable: str):
    """The explicit matrix applied to ``variable`` in ``expr`` (X in ``Xw + b``)."""
    linear = next(m for var, m in expr.parts if var.name == variable)
    return next(M for M in matrices(linear) if M.ndim == 2)


def _kernel_parts(model, f_variable: bool):
    """``(α, f, w_A‖Rᵀα‖² + w_I Σ_k f_kᵀLf_k, constraints)`` of a kernel model, f = Kα + b
    (an expression, or a variable tied to it when ``f_variable``)."""
    rkhs, graph = _term(model, "rkhs_norm"), _term(model, "graph_quadratic")
    K, L = rkhs.M, graph.M
    shape = model.variables["alpha"]
    alpha = cp.Variable(shape)
    b = cp.Variable(shape[1:])
    f = K @ alpha + (b if len(shape) == 1 else np.ones((shape[0], 1)) @ cp.reshape(
        b, (1, shape[1]), order="C"))
    constraints = []
    if f_variable:
        tied = cp.Variable(shape)
        constraints, f = [tied == f], tied
    R = psd_factor(K, 1e-13)[0]
    Lw = cp.psd_wrap(L)
    laplacian = (graph.weight * cp.quad_form(f, Lw) if len(shape) == 1 else graph.weight
                 * sum(cp.quad_form(f[:, k], Lw) for k in range(shape[1])))
    return alpha, f, rkhs.weight * cp.sum_squares(R.T @ alpha) + laplacian, constraints


def _margin(term, f):
    l = term.y.size
    return term.weight * cp.sum(term.loss.cvxpy(cp.multiply(term.y, f[:l])))


def hand_written(name: str, model, f_variable: bool = False) -> cp.Problem:
    """The hand-written program of variant ``name`` on the instance ``model`` (a kernel
    model's ``f = Kα + b`` a variable of its own when ``f_variable``)."""
    if name in ("lapsvm_balance", "lapsvm_box"):
        alpha, f, regularizers, ties = _kernel_parts(model, f_variable)
        margin = model.terms[0]
        c = model.constraints[0]
        if name == "lapsvm_balance":
            l = margin.y.size
            constraints = [cp.sum(f[l:]) / (f.shape[0] - l) == c.r]
        else:
            constraints = [f >= c.lo, f <= c.hi]
        return cp.Problem(cp.Minimize(_margin(margin, f) + regularizers), constraints + ties)
    if name == "label_propagation":
        graph, fit = model.terms
        F = cp.Variable(model.variables["F"])
        Lw = cp.psd_wrap(graph.M)
        objective = (graph.weight * sum(cp.quad_form(F[:, k], Lw) for k in range(F.shape[1]))
                     + fit.weight * cp.sum_squares(F - fit.target))
        return cp.Problem(cp.Minimize(objective), [F >= 0, cp.sum(F, axis=1) == 1])
    if name in ("lapsvm_tv", "laprls_l1"):
        alpha, f, regularizers, ties = _kernel_parts(model, f_variable)
        objective = _margin(model.terms[0], f) + regularizers
        if name == "lapsvm_tv":
            tv = _term(model, "graph_tv")
            objective += cp.sum(cp.multiply(tv.edge_weights, cp.abs(tv.D @ f)))
        else:
            objective += _term(model, "l1").weight * cp.norm1(alpha)
        return cp.Problem(cp.Minimize(objective), ties)
    if name.startswith("linear_"):
        loss, enet = model.terms
        X = _matrix(loss.argument, "w")
        w, b = cp.Variable(X.shape[1]), cp.Variable()
        objective = (_margin(loss, X @ w + b) + enet.l1 * cp.norm1(w)
                     + enet.l2 * cp.sum_squares(w))
        return cp.Problem(cp.Minimize(objective))
    if name.startswith("lass_"):
        score, graph, extra = model.terms
        Z = cp.Variable(model.variables["Z"])
        Lw = cp.psd_wrap(graph.M)
        objective = (-cp.sum(cp.multiply(score.G, Z))
                     + graph.weight * sum(cp.quad_form(Z[:, k], Lw) for k in range(Z.shape[1])))
        if name == "lass_entropy":
            objective += extra.weight * cp.sum(-cp.entr(Z))
        else:
            objective += cp.sum(cp.multiply(extra.edge_weights[:, None], cp.abs(extra.D @ Z)))
        return cp.Problem(cp.Minimize(objective), [Z >= 0, cp.sum(Z, axis=1) == 1])
    if name.startswith("ere_"):
        graph, fit, ridge = model.terms[:3]
        fixed = model.constraints[0]
        F = cp.Variable(model.variables["F"])
        W = cp.Variable(model.variables["W"])
        b = cp.Variable(model.variables["b"])
        X = _matrix(fit.argument, "W")
        residual = X @ W + np.ones((X.shape[0], 1)) @ cp.reshape(b, (1, b.shape[0]),
                                                                  order="C") - F
        objective = fit.weight * cp.sum(cp.norm(residual, 2, axis=1)) + ridge.weight * \
            cp.sum_squares(W)
        if name == "ere_group":
            edges = cp.norm(graph.D @ F, 2, axis=1)
            objective += cp.sum(cp.multiply(graph.edge_weights, edges))
            objective += model.terms[3].weight * cp.sum(cp.norm(W, 2, axis=1))
        else:
            D = _matrix(graph.argument, "F")
            edges = cp.norm(D @ F, 2, axis=1)
            objective += cp.sum(cp.multiply(graph.w, cp.huber(edges, graph.delta))) / (
                2 * graph.delta)
        return cp.Problem(cp.Minimize(objective), [F[fixed.rows] == fixed.values])
    if name.startswith("multiclass_"):
        alpha, f, regularizers, ties = _kernel_parts(model, f_variable)
        fit = model.terms[0]
        l = fit.target.shape[0]
        objective = fit.weight * cp.sum_squares(f[:l] - fit.target) + regularizers
        if name == "multiclass_l21":
            objective += _term(model, "group_norms").weight * cp.sum(cp.norm(alpha, 2, axis=1))
        constraints = [f >= 0, cp.sum(f, axis=1) == 1] if model.constraints else []
        return cp.Problem(cp.Minimize(objective), constraints + ties)
    raise ValueError(f"no hand-written program for {name!r}")


def _timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def compare(name: str, n: int, repeat: int) -> str:
    model = VARIANTS[name](n)
    built, hand = [], []
    for _ in range(repeat):  # interleaved
        built.append(_timed(lambda: ssl_opt.solve(model, solver="cvxpy")))
        hand.append(_timed(lambda: _solve_by_hand(name, model)))
    (sol, t_built), ((status, value), t_hand) = (min(built, key=lambda r: r[1]),
                                                 min(hand, key=lambda r: r[1]))
    diff = (sol.objective - value) / max(1.0, abs(value))
    return (f"| {name} | {n} | {model.size} | {t_built:.3g} ({sol.status}) | {t_hand:.3g} "
            f"({status}) | {t_built / t_hand:.2f}× | {diff:+.1e} |")


def _solve_by_hand(name: str, model) -> tuple[str, float]:
    """The hand-written program by Clarabel at the reference's tolerances; when Clarabel fails
    on a kernel model, a user's next tries: ``f`` a variable tied to ``Kα + b``, then Clarabel's
    default tolerances (said in the status; the failed attempts' time is counted). Each try
    builds its program, the factor ``K = RRᵀ`` of a kernel model included, inside the time, as
    the term-built reference's time includes its own factorization."""
    tries = [(False, TIGHT_OPTIONS["CLARABEL"], ""),
             (True, TIGHT_OPTIONS["CLARABEL"], "; failed with f = Kα + b, solved with f a "
              "variable"),
             (True, {}, "; failed at tight tolerances, solved at Clarabel's defaults")]
    for f_variable, options, note in tries:
        try:
            prog = hand_written(name, model, f_variable)
            prog.solve(solver="CLARABEL", **options)
            return prog.status + note, float(prog.value)
        except cp.error.SolverError:
            continue
    return "failed (Clarabel, every try)", float("nan")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="+", choices=sorted(SIZES), default=list(SIZES))
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)
    print(f"load average at the start {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"{os.cpu_count()} CPUs; best of {args.repeat}, interleaved")
    print("| variant | size | unknowns | term-built s (status) | hand-written s (status) | "
          "term-built / hand | objective difference |")
    print("|---|---|---|---|---|---|---|")
    start = time.perf_counter()
    for name in args.only:
        for n in SIZES[name]:
            print(compare(name, n, args.repeat), flush=True)
            print(f"[{time.perf_counter() - start:.0f} s] {name} {n}", file=sys.stderr)
    print(f"load average at the end {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"{time.perf_counter() - start:.0f} s in all")


if __name__ == "__main__":
    main()
