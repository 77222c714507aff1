"""The ERE, LRL and SumOfNorms patterns (docs/design.md §4.5, §6): a model of that structure is
the family problem, so IRLS applies."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ssl_opt.modeling.expressions import Variable
from ssl_opt.modeling.lowering import Lowering, register_lowering
from ssl_opt.modeling.maps import MatMul, RowBlocks
from ssl_opt.modeling.model import Model
from ssl_opt.modeling.patterns import (
    NoMatch,
    bare,
    identity_map,
    is_prefix,
    label,
    laplacian_graph,
    model_output,
    no_constraints,
    no_counterpart,
    no_offset,
    offset_of,
    parts_of,
    peel_rows,
    reasoned,
    same_matrix,
    squared_fit,
    squared_norm_of,
)
from ssl_opt.modeling.term import Term
from ssl_opt.modeling.terms import (
    L1,
    FixedRows,
    GraphTV,
    GroupNorms,
    Linear,
    QuadraticForm,
    Ridge,
    SquaredError,
)
from ssl_opt.problems.ere.lrl import LRL
from ssl_opt.problems.ere.problem import ERE
from ssl_opt.problems.ere.sum_of_norms import SumOfNorms


def ere_fit(parts, what: str) -> tuple[Variable, object, Variable, Variable]:
    """``(W, X, b, F)`` for ``±(X @ W + b − F)``."""
    form = "X @ W + b − F (W a d×c variable, b of length c, F the n×c labels)"
    if parts is None:
        raise NoMatch(f"{what} is not of the form {form}")
    F_parts = [p for p in parts.values() if not p.ops and abs(p.coef) == 1.0]
    if len(F_parts) != 1:
        raise NoMatch(f"{what} is not of the form {form}")
    F = F_parts[0]
    sign = -F.coef
    rest = {k: p for k, p in parts.items() if p is not F}
    W, X, b = model_output(rest, what, form, coef=sign)
    if b is None or len(W.shape) != 2 or F.var.shape != (X.shape[0], W.shape[1]):
        raise NoMatch(f"{what} is not of the form {form}")
    return W, X, b, F.var


def ere_fit_term(t: Term, F: Variable):
    """``(W, X, b, α, robust)`` when ``t`` is ERE's fit on F: ``GroupNorms(±(X @ W + b − F),
    α)`` (robust) or ``α‖X @ W + b − F‖²`` (squared); None when it is not of that form."""
    if type(t) is GroupNorms and len(t.shape) == 2 and no_offset(t.argument):
        parts, alpha, robust = parts_of(t.argument), None, True
    else:
        fit = squared_fit(t)
        if fit is None or np.any(fit[1]):
            return None
        parts, alpha, robust = fit[0], fit[2], False
    try:
        W, X, b, F_fit = ere_fit(parts, f"the argument of {label(t)}")
    except NoMatch:
        return None
    if F_fit is not F:
        return None
    if robust:
        w = np.atleast_1d(t.w)
        if np.any(w != w[0]):
            raise NoMatch(f"{label(t)} weighs the points differently; ERE has one α")
        alpha = float(w[0])
    return W, X, b, alpha, robust


@register_lowering("ERE")
@reasoned
def lower_ere(model: Model):
    """Robust ERE from ``GraphTV(F, A, w, "l2") + GroupNorms(X @ W + b − F, α) + Ridge(W, β)``,
    squared ERE from ``QuadraticForm(F, L, w) + SquaredError(X @ W + b − F, 0, α) + Ridge(W,
    β)`` (L a graph Laplacian), both with ``FixedRows(F, range(l), Y)``; the graph weight w is
    folded into A. F is the variable FixedRows fixes; the fit is the term on ``X @ W + b − F``."""

    family = "ERE"
    fixed = next((c for c in model.constraints if isinstance(c, FixedRows)
                  and bare(c.argument) is not None and len(c.shape) == 2), None)
    if fixed is None:
        raise NoMatch("ERE fixes the labeled rows F_l = Y of its n×c variable F "
                          "(FixedRows(F, range(l), Y)); this model has no such constraint")
    F = bare(fixed.argument)
    for c in model.constraints:
        if c is not fixed:
            raise no_counterpart(c, family)
    l = len(fixed.rows)
    if not is_prefix(fixed.rows, l):
        raise NoMatch(f"{label(fixed)} does not fix the first l rows of F; ERE's "
                          "labeled points are the first l")
    fit = parsed = None
    for t in model.terms:
        parsed = ere_fit_term(t, F)
        if parsed is not None:
            fit = t
            break
    if fit is None:
        raise NoMatch("ERE needs the elastic fit α Σ_i ‖Wᵀx_i + b − f_i‖ (GroupNorms(X @ W + "
                          "b − F, α); squared: SquaredError(X @ W + b − F, 0, α)); this model "
                          "has none")
    W, X, b, alpha, robust = parsed
    graph = ridge = None
    for t in model.terms:
        if t is fit:
            continue
        on_F = (bare(t.base) is F if isinstance(t, GraphTV)
                else isinstance(t, QuadraticForm) and bare(t.argument) is F)
        if graph is None and on_F:
            if isinstance(t, GraphTV) != robust:
                raise NoMatch(f"{label(t)} and {label(fit)} mix squared and unsquared "
                                  "norms; ERE has both squared (eq. 8) or neither (eq. 9)")
            if robust and t.norm != "l2" and F.shape[1] > 1:
                raise NoMatch(f"{label(t)} sums |f_ik − f_jk| over the columns; ERE's "
                                  "graph term is ‖f_i − f_j‖₂ (norm='l2')")
            graph = t
            continue
        if ridge is None and squared_norm_of(t, W) is not None:
            ridge = t
            continue
        raise no_counterpart(t, family)
    if graph is None:
        raise NoMatch("ERE needs the graph term on F (GraphTV(F, A, norm='l2') for robust "
                          "ERE, GraphQuadratic(F, D − A) for squared ERE); this model has none")
    if ridge is None:
        raise NoMatch("ERE needs β‖W‖² (Ridge(W, β)) on the W of the fit; this model has "
                          "none")
    if robust:
        A = sp.csr_matrix(graph.W, dtype=np.float64)
        A = sp.csr_matrix(A - sp.diags(A.diagonal()))  # self-loops add nothing to the TV
        A.eliminate_zeros()
        A = graph.weight * A
    else:
        A = graph.weight * laplacian_graph(graph.M, f"the matrix of {label(graph)}", family)
    problem = ERE(X, A, fixed.values, alpha, squared_norm_of(ridge, W), robust=robust)
    to_model, from_model = identity_map({"F": F.name, "W": W.name, "b": b.name})
    return Lowering(problem, to_model, from_model)


@register_lowering("LRL")
@reasoned
def lower_lrl(model: Model):
    """LRL from ``QuadraticForm(X @ W, L, w)`` (L a graph Laplacian; ``X @ W + b`` too, as
    L1 = 0) + ``SquaredError((X @ W + b)[:l], Y, α)`` (or ``X[:l] @ W + b``) + ``Ridge(W,
    β)``; w is folded into A."""

    family = "LRL"
    no_constraints(model, family)
    graph = fit = ridge = None
    for t in model.terms:
        if graph is None and isinstance(t, QuadraticForm) and bare(t.argument) is None:
            graph = t
            continue
        if fit is None and squared_fit(t) is not None and bare(t.argument) is None:
            fit = t
            continue
        if ridge is None and type(t) in (Ridge, SquaredError) and bare(t.argument) is not None:
            ridge = t
            continue
        raise no_counterpart(t, family)
    if graph is None or fit is None or ridge is None:
        need = ("the graph term tr(WᵀXᵀLXW) (GraphQuadratic(X @ W, L))" if graph is None else
                "the fit α‖X_l W + 1bᵀ − Y‖² (SquaredError((X @ W + b)[:l], Y, α))"
                if fit is None else "β‖W‖² (Ridge(W, β))")
        raise NoMatch(f"LRL needs {need}; this model has none")
    form = "X @ W (+ b) with W a d×c variable"
    gparts = parts_of(graph.argument)
    if gparts is None or not no_offset(graph.argument):
        raise NoMatch(f"the argument of {label(graph)} is not of the form {form}")
    W, X, gb = model_output(gparts, f"the argument of {label(graph)}", form)
    if len(W.shape) != 2:
        raise NoMatch(f"the argument of {label(graph)} is not of the form {form}")
    A = graph.weight * laplacian_graph(graph.M, f"the matrix of {label(graph)}", family)
    parts, Y, alpha = squared_fit(fit)
    if parts is None:
        raise NoMatch(f"the argument of {label(fit)} is not X_l @ W + b")
    rows, inner = peel_rows(parts)
    fW, fX, b = model_output(inner, f"the argument of {label(fit)}",
                              "(X @ W + b)[:l] or X[:l] @ W + b")
    if fW is not W or b is None or (gb is not None and gb is not b):
        raise NoMatch(f"{label(fit)} and {label(graph)} are not on the same W (and b)")
    l = Y.shape[0]
    if rows is not None:
        same_X = is_prefix(rows, l) and same_matrix(fX, X)
    else:
        same_X = fX.shape[0] == l and l <= X.shape[0] and same_matrix(fX, X[:l])
    if not same_X:
        raise NoMatch(f"{label(fit)} is not on the first l = {l} rows of the X of "
                          f"{label(graph)}")
    beta = squared_norm_of(ridge, W)
    if beta is None:
        raise NoMatch(f"{label(ridge)} is not β‖W‖² on the W of the fit")
    problem = LRL(X, A, Y, alpha, beta)
    to_model, from_model = identity_map({"W": W.name, "b": b.name})
    return Lowering(problem, to_model, from_model)


def groups_of(t: Term, x: Variable):
    """``(G, h, k, weights)`` when ``t`` is ``Σ_i w_i ‖(Gx − h)_i‖`` on x: ``GroupNorms`` of
    ``row_blocks(G @ x − h, k)``, or ``GroupNorms``/``L1`` of the vector ``G @ x − h`` (k = 1);
    None otherwise."""
    if type(t) not in (GroupNorms, L1):
        return None
    parts = parts_of(t.argument)
    if parts is None or len(parts) != 1:
        return None
    p = next(iter(parts.values()))
    if p.var is not x:
        return None
    ops = list(p.ops)
    k = ops.pop(0).k if ops and isinstance(ops[0], RowBlocks) else 1
    if (k == 1 and len(t.shape) != 1) or (k > 1 and type(t) is not GroupNorms):
        return None
    if not ops:
        G = sp.identity(x.shape[0], format="csr")
    elif (len(ops) == 1 and isinstance(ops[0], MatMul)
          and not isinstance(ops[0].M, spla.LinearOperator)):
        G = sp.csr_matrix(ops[0].M, dtype=np.float64)
    else:
        return None
    m = G.shape[0] // k
    return p.coef * G, -offset_of(t.argument).ravel(), k, np.array(np.broadcast_to(t.w, (m,)))


@register_lowering("SumOfNorms")
@reasoned
def lower_sum_of_norms(model: Model):
    """SumOfNorms from quadratic forms, ridges and linear terms on one vector x (``Q = 2 Σ
    weight·M``, ``c = Σ weight·c``) plus ``GroupNorms`` (or ``L1``) of ``G @ x − h`` (groups
    of 1) or of ``row_blocks(G @ x − h, k)``; several group terms with one k are stacked."""

    family = "SumOfNorms"
    no_constraints(model, family)
    vars_ = model.variable_objects
    if len(vars_) != 1 or len(vars_[0].shape) != 1:
        raise NoMatch(f"SumOfNorms has one vector variable x; this model has "
                          f"{dict(model.variables)}")
    x = vars_[0]
    n = x.shape[0]
    Q = sp.csr_matrix((n, n))
    c = np.zeros(n)
    groups = []
    for t in model.terms:
        if bare(t.argument) is x:
            if isinstance(t, QuadraticForm) and not isinstance(t.M, spla.LinearOperator):
                Q = Q + 2.0 * t.weight * sp.csr_matrix(t.M)
                continue
            rho = squared_norm_of(t, x)
            if rho is not None:
                Q = Q + 2.0 * rho * sp.identity(n, format="csr")
                continue
            if isinstance(t, Linear):
                c = c + t.weight * t.c
                continue
        found = groups_of(t, x)
        if found is not None:
            groups.append(found)
            continue
        raise no_counterpart(t, family)
    if not groups:
        raise NoMatch("SumOfNorms needs a sum of norms Σ_i w_i ‖(Gx − h)_i‖ (GroupNorms of "
                          "G @ x − h); this model has none")
    k = groups[0][2]
    if any(g[2] != k for g in groups):
        raise NoMatch("the group terms have different group sizes; SumOfNorms has one k")
    G = sp.vstack([g[0] for g in groups], format="csr")
    h = np.concatenate([g[1] for g in groups])
    weights = np.concatenate([g[3] for g in groups])
    problem = SumOfNorms(Q, c, G, h, k, weights)
    to_model, from_model = identity_map({"x": x.name})
    return Lowering(problem, to_model, from_model)
