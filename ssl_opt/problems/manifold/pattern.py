"""The LapSVM / LapRLS pattern: a model that is ``½(Σ_{i≤l} φ(y_i f_i) + γ_A αᵀKα + γ_I fᵀLf)``,
``f = Kα (+ b)``, is the family problem, so the manifold solvers apply (docs/design.md §6)."""

from __future__ import annotations

import numpy as np

from ssl_opt.components import Square
from ssl_opt.modeling.lowering import Lowering, register_lowering
from ssl_opt.modeling.model import Model
from ssl_opt.modeling.patterns import (
    NoMatch,
    bare,
    is_prefix,
    label,
    model_output,
    no_constraints,
    no_counterpart,
    no_offset,
    parts_of,
    peel_rows,
    reasoned,
    same_matrix,
    same_parts,
)
from ssl_opt.modeling.term import Term
from ssl_opt.modeling.terms import (
    MarginLossTerm,
    QuadraticForm,
)
from ssl_opt.problems.manifold.problem import LapRLS, LapSVM


def kernel_regularizers(model: Model, main: Term, alpha, K, f_parts, extra):
    """``(rkhs, graph)``: the RKHS norm ``αᵀKα`` (a quadratic form of the bare α with the K of
    f) and the graph term ``fᵀLf`` (a quadratic form of f) among the terms other than
    ``main``, None when absent; any other term raises ``extra(term)``."""
    rkhs = graph = None
    for t in model.terms:
        if t is main:
            continue
        if isinstance(t, QuadraticForm):
            if rkhs is None and bare(t.argument) is alpha and same_matrix(t.M, K):
                rkhs = t
                continue
            if graph is None and no_offset(t.argument) and same_parts(parts_of(t.argument),
                                                                        f_parts):
                graph = t
                continue
        raise extra(t)
    return rkhs, graph


@register_lowering("LapSVM")
@reasoned
def lower_lapsvm(model: Model):
    """LapSVM / LapRLS from ``MarginLossTerm(f[:l], y, φ, w) + QuadraticForm(α, K, w_A)
    + QuadraticForm(f, L, w_I)``, ``f = K @ α (+ b)``: ``γ_A = w_A/w``, ``γ_I = w_I/w``,
    scale ``2w`` (the RKHS and graph terms are recognized by argument: α itself with f's K, f
    itself). A square loss gives a :class:`LapRLS`."""

    family = "LapSVM"
    no_constraints(model, family)
    losses = [t for t in model.terms if isinstance(t, MarginLossTerm)]
    if not losses:
        raise NoMatch("LapSVM needs a margin loss on the labeled outputs "
                          "(MarginLossTerm(f[:l], y), f = K @ alpha + b); this model has none")
    loss = losses[0]
    parts = parts_of(loss.argument)
    if parts is None or not no_offset(loss.argument):
        raise NoMatch("the loss term's argument is not the outputs f = K @ alpha + b")
    rows, f_parts = peel_rows(parts)
    alpha, K, b = model_output(f_parts, "the loss term's argument",
                                "f[:l] with f = K @ alpha + b (alpha a vector, b a scalar)")
    n, l = K.shape[0], loss.shape[0] if loss.shape else 0
    if len(alpha.shape) != 1 or K.shape != (n, n) or len(loss.shape) != 1:
        raise NoMatch("LapSVM's outputs are one column f = K @ alpha + b with K square and "
                          "alpha a vector")
    if (rows is None and l != n) or (rows is not None and not is_prefix(rows, l)):
        raise NoMatch(f"the loss term is not on the first l = {l} outputs f[:{l}] (LapSVM "
                          "labels the first l points)")
    rkhs, graph = kernel_regularizers(model, loss, alpha, K, f_parts,
                                       lambda t: no_counterpart(t, family))
    if rkhs is None or rkhs.weight <= 0:
        raise NoMatch("LapSVM needs the RKHS norm γ_A/2 αᵀKα (RKHSNorm(alpha, K) with the K "
                          "of f, weight > 0); this model has none")
    if graph is None or graph.weight <= 0:
        raise NoMatch("LapSVM needs the graph term γ_I/2 fᵀLf (GraphQuadratic(f, L) on the "
                          "outputs f of the loss term, weight > 0); this model has none")
    if loss.weight <= 0:
        raise NoMatch("the loss term has weight 0; LapSVM needs a positive loss weight")
    if loss.sample_weight is not None:
        raise NoMatch(f"{label(loss)} weighs the labeled points differently; LapSVM has one "
                      "loss weight")
    w = float(loss.weight)
    gamma_A, gamma_I = rkhs.weight / w, graph.weight / w
    if loss.loss == Square():
        problem = LapRLS(K, graph.M, loss.y, gamma_A, gamma_I, bias=b is not None)
    else:
        problem = LapSVM(K, graph.M, loss.y, gamma_A, gamma_I, loss=loss.loss,
                         bias=b is not None)

    def to_model(x):
        out = {alpha.name: np.asarray(x["alpha"], dtype=np.float64)}
        if b is not None:
            out[b.name] = np.asarray(x["b"], dtype=np.float64).reshape(())
        return out

    def from_model(x):
        return {"alpha": np.asarray(x[alpha.name], dtype=np.float64),
                "b": np.asarray(x[b.name] if b is not None else 0.0, dtype=np.float64)}

    return Lowering(problem, to_model, from_model, scale=2.0 * w)
