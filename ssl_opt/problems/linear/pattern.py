"""The LinearSVM pattern: squared-hinge losses on rows of ``f = Xw (+ b)`` plus ridges is the
L2-SVM of MFN (docs/design.md §4.2, §6)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ssl_opt.components import SquaredHinge
from ssl_opt.modeling.expressions import Variable
from ssl_opt.modeling.lowering import Lowering, register_lowering
from ssl_opt.modeling.maps import Identity, MatMul, Rows
from ssl_opt.modeling.model import Model
from ssl_opt.modeling.patterns import (
    NoMatch,
    identity_map,
    label,
    model_output,
    no_constraints,
    no_counterpart,
    no_offset,
    parts_of,
    peel_rows,
    reasoned,
    same_parts,
    squared_norm_of,
)
from ssl_opt.modeling.terms import (
    MarginLossTerm,
)
from ssl_opt.problems.linear.problem import LinearSVM


def augmented_output(expr) -> tuple[np.ndarray | None, Variable, object] | None:
    """``(rows, w, X)`` when ``expr`` is (rows of) ``X̃ @ w = X @ w[:d] + 1 w[d]``, the outputs
    of the named :class:`LinearSVM` with a bias; None otherwise."""
    if len(expr.parts) != 2 or expr.parts[0][0] is not expr.parts[1][0] or not no_offset(expr):
        return None
    w = expr.parts[0][0]
    if len(w.shape) != 1:
        return None
    d = w.shape[0] - 1
    ops = [[f for f in m.factors() if not isinstance(f, Identity)] for _, m in expr.parts]
    rows = None
    if all(len(o) == 3 and isinstance(o[0], Rows) for o in ops):
        rows = ops[0][0].index
        if not np.array_equal(rows, ops[1][0].index):
            return None
        ops = [o[1:] for o in ops]
    if not all(len(o) == 2 and isinstance(o[0], MatMul) and isinstance(o[1], Rows)
               for o in ops):
        return None
    # The bias part reads w[d:], the data part w[:d] (told apart by their rows of w, whatever
    # the order the expression was written in).
    (one_mat, one_rows), (x_mat, x_rows) = sorted(ops, key=lambda o: o[1].index[0] != d)
    ones = one_mat.M
    if (not np.array_equal(x_rows.index, np.arange(d)) or not np.array_equal(one_rows.index, [d])
            or isinstance(ones, spla.LinearOperator) or ones.shape != (x_mat.M.shape[0], 1)
            or np.any(np.asarray(ones.todense() if sp.issparse(ones) else ones) != 1.0)):
        return None
    return rows, w, x_mat.M


def _outputs_of(t: MarginLossTerm):
    """``(rows, w, X, b, bias_in_w, key)`` of a loss term on rows of ``X @ w + b`` or of the
    named model's ``X̃ @ w``; ``key`` compares the outputs of two terms."""
    augmented = augmented_output(t.argument)
    if augmented is not None:
        rows, w, X = augmented
        return rows, w, X, None, True, ("augmented", id(w), id(X))
    parts = parts_of(t.argument)
    if parts is None or not no_offset(t.argument) or len(t.shape) != 1:
        raise NoMatch(f"the argument of {label(t)} is not rows of f = X @ w + b")
    rows, f_parts = peel_rows(parts)
    w, X, b = model_output(f_parts, f"the argument of {label(t)}",
                           "rows of f = X @ w + b (w a vector, b a scalar)")
    return rows, w, X, b, False, f_parts


@register_lowering("LinearSVM")
@reasoned
def lower_linear_svm(model: Model):
    """LinearSVM from squared-hinge ``MarginLossTerm``s on rows of ``f = X @ w (+ b)`` and
    ``Ridge(w, ρ) (+ Ridge(b, ρ))`` — or on ``X @ w[:d] + 1 w[d]`` (the named model's form,
    the bias in w) and ``Ridge(w, ρ)``: ``λ = 2ρ``, ``c_i = 2 Σ`` (weights of the loss terms on
    row i, times their sample weights); rows no loss term covers get cost 0."""

    family = "LinearSVM"
    no_constraints(model, family)
    losses = [t for t in model.terms if isinstance(t, MarginLossTerm)]
    if not losses:
        raise NoMatch("LinearSVM needs a squared-hinge loss on the outputs X @ w + b "
                          "(MarginLossTerm); this model has none")
    base = None
    covered = []
    for t in losses:
        if not isinstance(t.loss, SquaredHinge):
            raise NoMatch(f"{label(t)} uses the {t.loss.name} loss; LinearSVM (MFN) has "
                              "the squared hinge max(0, 1 − m)² only")
        rows, w_t, X_t, b_t, in_w, key = _outputs_of(t)
        if base is None:
            base, (w, X, b, bias_in_w) = key, (w_t, X_t, b_t, in_w)
        elif not (key == base if in_w else not bias_in_w and same_parts(key, base)):
            raise NoMatch(f"{label(t)} is not on the outputs X @ w + b of the first loss "
                              "term")
        covered.append((t, np.arange(X.shape[0]) if rows is None else rows))
    if len(w.shape) != 1:
        raise NoMatch("LinearSVM's weights w are a vector (one output column)")
    reg_w = reg_b = None
    for t in model.terms:
        if isinstance(t, MarginLossTerm):
            continue
        rho = squared_norm_of(t, w)
        if rho is not None and reg_w is None:
            reg_w = rho
            continue
        rho = None if b is None else squared_norm_of(t, b)
        if rho is not None and reg_b is None:
            reg_b = rho
            continue
        raise no_counterpart(t, family)
    if reg_w is None or reg_w <= 0:
        raise NoMatch("LinearSVM needs the ridge λ/2‖w‖² (Ridge(w, λ/2), weight > 0); "
                          "this model has none")
    if b is not None and reg_b != reg_w:
        raise NoMatch(
            "LinearSVM regularizes the bias like w (λ/2 b², as SVMlin's constant feature): "
            + ("b has no Ridge term" if reg_b is None else
               f"Ridge(b) has weight {reg_b:g}, Ridge(w) {reg_w:g}"))
    m = 1 + max(int(rows.max(initial=-1)) for _, rows in covered)
    y = np.zeros(m)
    cost = np.zeros(m)
    for t, rows in covered:
        clash = (y[rows] != 0) & (y[rows] != t.y)
        if np.any(clash):
            raise NoMatch(f"{label(t)} labels row {int(rows[clash][0])} differently from "
                              "another loss term; LinearSVM has one label per row")
        y[rows] = t.y
        cost[rows] += 2.0 * t.scale
    y[y == 0] = 1.0  # rows without a loss term: cost 0, any label
    problem = LinearSVM(X, y, 2.0 * reg_w, cost=cost, bias=bias_in_w or b is not None)
    if bias_in_w:
        return Lowering(problem, *identity_map({"w": w.name}))
    d = X.shape[1]

    def to_model(x):
        wt = np.asarray(x["w"], dtype=np.float64)
        out = {w.name: wt[:d]}
        if b is not None:
            out[b.name] = wt[d].reshape(())
        return out

    def from_model(x):
        wt = np.asarray(x[w.name], dtype=np.float64)
        if b is not None:
            wt = np.concatenate([wt, np.asarray(x[b.name], dtype=np.float64).reshape(1)])
        return {"w": wt}

    return Lowering(problem, to_model, from_model)

