r"""The named problems of docs/design.md §4 as compositions of terms, and the lowerings back.

Each family is a fixed composition (docs/design.md §6). ``problem.as_model()`` builds it with
the functions below; a lowerer (:func:`~ssl_opt.modeling.lowering.register_lowering`) reads a
model's terms by class and the structure of their arguments and rebuilds the family problem,
so that the paper's solvers apply to any model of that structure — written by ``as_model`` or
by hand — and name the first term without a counterpart otherwise.

==============  ==========================================================================
family          composition (variables; prediction)
==============  ==========================================================================
LapSVM, LapRLS  ``MarginLossTerm(f[:l], y, φ, ½) + RKHSNorm(α, K, γ_A/2)
                + GraphQuadratic(f, L, γ_I/2)``, ``f = K @ α + b`` (α, b; f) §4.1
LinearSVM       ``MarginLossTerm(f[rows], y, "squared_hinge", c/2)`` per distinct cost c
                ``+ Ridge(w, λ/2) + Ridge(b, λ/2)``, ``f = X @ w + b`` (w, b; f) §4.2
LASS            ``GraphQuadratic(Z, L, λ) + LinearScore(Z, G)``, ``SimplexRows(Z)`` (Z) §4.3
ERE (robust)    ``GraphTV(F, A, 1, "l2") + GroupNorms(X @ W + b − F, α) + Ridge(W, β)``,
                ``FixedRows(F, range(l), Y)`` (F, W, b; F) §4.5
ERE (squared)   ``GraphQuadratic(F, D − A) + SquaredError(X @ W + b − F, 0, α) + Ridge(W, β)``,
                ``FixedRows(F, range(l), Y)``
LRL             ``GraphQuadratic(X @ W, D − A) + SquaredError((X @ W + b)[:l], Y, α)
                + Ridge(W, β)`` (W, b; X @ W + b)
SumOfNorms      ``QuadraticForm(x, Q, ½) + Linear(x, c)
                + GroupNorms(row_blocks(G @ x − h, k), w)`` (x)
==============  ==========================================================================

A lowering is exact: the family problem's objective equals the model's at corresponding
points, up to the positive constant :attr:`Lowering.scale` (only LapSVM has one: its loss
carries the factor ½, so a loss weighted ``w`` gives ``γ = weight / w`` and scale ``2w``).
Weights a family cannot hold as parameters are folded into its data where that is exact
(ERE/LRL's graph weight into A, LASS's score weight into G, LinearSVM's loss weights into the
costs). Graph Laplacians are read back as graphs ``W = −offdiag(L)`` only when L is one (rows
summing to 0 within 1e-10·max|L|, off-diagonal entries ≤ 0): LASS, ERE and LRL rebuild
``D − W`` from W; LapSVM takes any PSD L (normalized, a power) as is.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import cvxpy as cp
import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ssl_opt.components import Square, SquaredHinge
from ssl_opt.modeling.expressions import (
    Affine,
    Broadcast,
    Identity,
    LinearMap,
    MatMul,
    Rows,
    Scale,
    Variable,
)
from ssl_opt.modeling.lowering import Lowering, register_lowering
from ssl_opt.modeling.model import Model
from ssl_opt.modeling.term import Term
from ssl_opt.modeling.terms import (
    L1,
    FixedRows,
    GraphQuadratic,
    GraphTV,
    GroupNorms,
    Linear,
    LinearScore,
    MarginLossTerm,
    QuadraticForm,
    Ridge,
    RKHSNorm,
    SimplexRows,
    SquaredError,
)

#: A matrix is read as a graph Laplacian when its rows sum to 0 within this, relative to
#: max|L| (the rule of ``LapSVM.laplacian_annihilates_ones``).
LAPLACIAN_RTOL = 1e-10


# ------------------------------------------------------------------------ a grouping map
@dataclass(frozen=True, eq=False)
class RowBlocks(LinearMap):
    """``v ↦ v`` reshaped ``(m, k)`` row-major: consecutive groups of ``k`` entries of a
    length-``m·k`` vector become the rows (the groups of :class:`SumOfNorms`)."""

    k: int
    in_shape: tuple[int, ...]

    @property
    def out_shape(self) -> tuple[int, ...]:
        return (self.in_shape[0] // self.k, self.k)

    def apply(self, v):
        return np.asarray(v).reshape(self.out_shape)

    def adjoint(self, g):
        return np.asarray(g).reshape(self.in_shape)

    def cvxpy(self, v):
        return cp.reshape(v, self.out_shape, order="C")


def row_blocks(expr: Affine, k: int) -> Affine:
    """A length-``m·k`` expression as the ``(m, k)`` expression whose rows are its consecutive
    groups of ``k`` entries (``SumOfRowNorms``' argument ``G x − h`` reshaped)."""
    if len(expr.shape) != 1 or k < 1 or expr.shape[0] % k:
        raise ValueError(f"row_blocks needs a vector whose length is a multiple of k = {k}, "
                         f"got shape {expr.shape}.")
    return expr._map(RowBlocks(int(k), expr.shape))


def _mm(M, expr: Affine) -> Affine:
    """``M @ expr`` for a dense, sparse or products-only M (never through M's own ``@``)."""
    return expr.__rmatmul__(M)


# --------------------------------------------------------------------------- as_model
def lapsvm_model(problem) -> Model:
    """LapSVM / LapRLS (docs/design.md §4.1): ``½(Σ_{i≤l} φ(y_i f_i) + γ_A αᵀKα + γ_I fᵀLf)``,
    ``f = Kα + b`` (``f = Kα`` without bias); L as the problem holds it (normalized, a power)."""
    alpha = Variable("alpha", (problem.n,))
    f = _mm(problem.K, alpha)
    if problem.bias:
        f = f + Variable("b")
    terms = [MarginLossTerm(f[: problem.l], problem.y, problem.loss, 0.5),
             RKHSNorm(alpha, problem.K, 0.5 * problem.gamma_A),
             GraphQuadratic(f, problem.L, 0.5 * problem.gamma_I)]
    return Model(terms, prediction=f, name=f"{type(problem).__name__.lower()}[{problem.variant}]",
                 unique_prediction=problem.unique_prediction)


def linear_svm_model(problem) -> Model:
    """L2-SVM (docs/design.md §4.2): ``λ/2(‖w‖² + b²) + ½ Σ_i c_i max(0, 1 − y_i f_i)²``,
    ``f = Xw + b`` — the bias regularized like w, as in SVMlin; one loss term per distinct
    cost."""
    X = problem.design.X
    w = Variable("w", (problem.design.d,))
    f = _mm(X, w)
    terms: list[Term] = []
    b = None
    if problem.bias:
        b = Variable("b")
        f = f + b
    costs = np.unique(problem.cost)
    if costs.size == 1:
        terms.append(MarginLossTerm(f, problem.y, SquaredHinge(), 0.5 * costs[0]))
    else:
        for c in costs:
            rows = np.flatnonzero(problem.cost == c)
            terms.append(MarginLossTerm(f[rows], problem.y[rows], SquaredHinge(), 0.5 * c))
    terms.append(Ridge(w, 0.5 * problem.lam))
    if b is not None:
        terms.append(Ridge(b, 0.5 * problem.lam))
    return Model(terms, prediction=f, name="linear-svm", unique_prediction=True)


def lass_model(problem) -> Model:
    """LASS (docs/design.md §4.3): ``λ tr(ZᵀLZ) − tr(GᵀZ)`` over row-stochastic ``Z ≥ 0``."""
    Z = Variable("Z", (problem.N, problem.K))
    return Model([GraphQuadratic(Z, problem.L, problem.lam), LinearScore(Z, problem.G)],
                 [SimplexRows(Z)], prediction=Z, name="lass",
                 unique_prediction=problem.unique_prediction)


def ere_model(problem) -> Model:
    """Robust ERE [004 eq. 9] or squared ERE [004 eq. 8] (docs/design.md §4.5), ``F_l = Y``
    as a :class:`FixedRows` constraint (the objective reads F_l, as ``ERE.objective`` does)."""
    n, d, c, l = problem.n, problem.d, problem.c, problem.l
    F, W, b = Variable("F", (n, c)), Variable("W", (d, c)), Variable("b", (c,))
    residual = _mm(problem.X, W) + b - F
    if problem.robust:
        terms = [GraphTV(F, problem.A, 1.0, norm="l2"), GroupNorms(residual, problem.alpha)]
    else:
        terms = [GraphQuadratic(F, problem.laplacian, 1.0),
                 SquaredError(residual, 0.0, problem.alpha)]
    terms.append(Ridge(W, problem.beta))
    return Model(terms, [FixedRows(F, np.arange(l), problem.Y)], prediction=F,
                 name="ere-robust" if problem.robust else "ere-squared",
                 unique_prediction=problem.unique_prediction)


def lrl_model(problem) -> Model:
    """LRL [004 eq. 5]: ``tr(WᵀXᵀLXW) + α‖X_l W + 1bᵀ − Y‖² + β‖W‖²``; prediction XW + 1bᵀ."""
    W, b = Variable("W", (problem.d, problem.c)), Variable("b", (problem.c,))
    XW = _mm(problem.X, W)
    scores = XW + b
    terms = [GraphQuadratic(XW, problem.laplacian, 1.0),
             SquaredError(scores[: problem.l], problem.Y, problem.alpha),
             Ridge(W, problem.beta)]
    return Model(terms, prediction=scores, name="lrl", unique_prediction=True)


def sum_of_norms_model(problem) -> Model:
    """SumOfNorms [004 eq. 10]: ``½xᵀQx + cᵀx + Σ_i w_i ‖(Gx − h)_i‖₂`` (groups of k rows;
    k = 1: ``Σ_i w_i |(Gx − h)_i|`` on the vector itself)."""
    x = Variable("x", (problem.n,))
    g = _mm(problem.G, x) - problem.h
    terms: list[Term] = [QuadraticForm(x, problem.Q, 0.5), Linear(x, problem.c)]
    terms.append(GroupNorms(g if problem.k == 1 else row_blocks(g, problem.k), problem.w))
    return Model(terms, prediction=x, name="sum-of-norms", unique_prediction=False)


# ------------------------------------------------------------------ reading expressions
class _NoLowering(Exception):
    """Why a model is not the family problem (returned as the lowerer's reason)."""


def _reasoned(fn):
    @functools.wraps(fn)
    def lowerer(model):
        try:
            return fn(model)
        except _NoLowering as exc:
            return str(exc)
    return lowerer


def _label(t: Term) -> str:
    """``GraphTV(weight=0.1, ...)``: the class name and the term's own description."""
    text, cls = t.describe(), type(t).__name__
    return cls + text[len(t.name):] if text.startswith(t.name) else f"{cls} {text}"


@dataclass(frozen=True)
class _Part:
    """``coef · ops(var)``: ``ops`` the primitive maps, outer first, without identities and
    scalar scalings (folded into ``coef``)."""

    var: Variable
    coef: float
    ops: tuple


def _parts(expr: Affine) -> dict[int, _Part] | None:
    """The expression's parts by variable (None when a variable appears twice)."""
    out: dict[int, _Part] = {}
    for var, m in expr.parts:
        if id(var) in out:
            return None
        coef, ops = 1.0, []
        for op in m.factors():
            if isinstance(op, Identity):
                continue
            if isinstance(op, Scale) and np.ndim(op.s) == 0:
                coef *= float(op.s)
                continue
            ops.append(op)
        out[id(var)] = _Part(var, coef, tuple(ops))
    return out


def _no_offset(expr: Affine) -> bool:
    return expr.offset is None or not np.any(expr.offset)


def _offset(expr: Affine) -> np.ndarray:
    return np.zeros(expr.shape) if expr.offset is None else np.asarray(expr.offset)


def _same_matrix(A, B) -> bool:
    if A is B:
        return True
    if isinstance(A, spla.LinearOperator) or isinstance(B, spla.LinearOperator):
        return False
    if A.shape != B.shape:
        return False
    if sp.issparse(A) or sp.issparse(B):
        return (sp.csr_matrix(A) != sp.csr_matrix(B)).nnz == 0
    return bool(np.array_equal(A, B))


def _same_op(a: LinearMap, b: LinearMap) -> bool:
    if type(a) is not type(b) or a.in_shape != b.in_shape:
        return False
    if isinstance(a, MatMul):
        return _same_matrix(a.M, b.M)
    if isinstance(a, Rows):
        return bool(np.array_equal(a.index, b.index))
    if isinstance(a, Broadcast):
        return a.n == b.n
    if isinstance(a, RowBlocks):
        return a.k == b.k
    if isinstance(a, Scale):
        return bool(np.array_equal(a.s, b.s))
    return a is b


def _same_parts(p: dict[int, _Part] | None, q: dict[int, _Part] | None) -> bool:
    if p is None or q is None or p.keys() != q.keys():
        return False
    return all(p[k].coef == q[k].coef and len(p[k].ops) == len(q[k].ops)
               and all(_same_op(a, b) for a, b in zip(p[k].ops, q[k].ops, strict=True))
               for k in p)


def _peel_rows(parts: dict[int, _Part]) -> tuple[np.ndarray | None, dict[int, _Part]]:
    """``(index, inner)`` when every part starts with the same row selection, else
    ``(None, parts)``."""
    first = [p.ops[0] if p.ops else None for p in parts.values()]
    if not first or not all(isinstance(op, Rows) for op in first):
        return None, parts
    index = first[0].index
    if not all(np.array_equal(op.index, index) for op in first[1:]):
        return None, parts
    return np.asarray(index), {k: _Part(p.var, p.coef, p.ops[1:]) for k, p in parts.items()}


def _is_prefix(index: np.ndarray, l: int) -> bool:
    return len(index) == l and bool(np.array_equal(index, np.arange(l)))


def _bare(expr: Affine) -> Variable | None:
    """The variable when ``expr`` is one whole variable."""
    return expr.parts[0][0] if expr.is_variable() else None


def _matmul(part: _Part) -> object | None:
    """M when the part is ``1 · M @ var``."""
    if part.coef == 1.0 and len(part.ops) == 1 and isinstance(part.ops[0], MatMul):
        return part.ops[0].M
    return None


def _bias(part: _Part, n: int) -> bool:
    """The part is ``1 · broadcast(var)`` to n rows."""
    return (part.coef == 1.0 and len(part.ops) == 1 and isinstance(part.ops[0], Broadcast)
            and part.ops[0].n == n)


def _model_output(parts: dict[int, _Part], what: str, form: str,
                  coef: float = 1.0) -> tuple[Variable, object, Variable | None]:
    """``(v, M, b)`` for ``coef·(M @ v + b)`` (b optional, broadcast over M's rows)."""
    main = [p for p in parts.values() if p.ops and isinstance(p.ops[-1], MatMul)]
    if len(main) != 1:
        raise _NoLowering(f"{what} is not of the form {form}")
    v = main[0]
    M = _matmul(_Part(v.var, v.coef / coef, v.ops))
    if M is None:
        raise _NoLowering(f"{what} is not of the form {form}")
    rest = [p for p in parts.values() if p is not v]
    n = M.shape[0]
    if len(rest) > 1 or (rest and not _bias(_Part(rest[0].var, rest[0].coef / coef,
                                                 rest[0].ops), n)):
        raise _NoLowering(f"{what} is not of the form {form}")
    b = rest[0].var if rest else None
    if b is not None and b.shape != v.var.shape[1:]:
        raise _NoLowering(f"{what} is not of the form {form}")
    return v.var, M, b


def _no_constraints(model: Model, family: str) -> None:
    if model.constraints:
        raise _NoLowering(f"{_label(model.constraints[0])} has no counterpart in {family}")


def _extra(t: Term, family: str) -> _NoLowering:
    return _NoLowering(f"{_label(t)} has no counterpart in {family}")


def _squared_norm_of(t: Term, var: Variable) -> float | None:
    """The weight ρ when ``t`` is ``ρ‖var‖²`` (Ridge, or SquaredError with target 0)."""
    if _bare(t.argument) is not var:
        return None
    if type(t) is Ridge or (type(t) is SquaredError and not np.any(t.target)):
        return float(t.weight)
    return None


def _squared_fit(t: Term) -> tuple[dict[int, _Part] | None, np.ndarray, float] | None:
    """``(linear parts, T, ρ)`` when ``t`` is ``ρ‖A(x) − T‖²`` (SquaredError or Ridge; the
    argument's offset moved into T)."""
    if type(t) is SquaredError:
        target = t.target - _offset(t.argument)
    elif type(t) is Ridge:
        target = -_offset(t.argument)
    else:
        return None
    return _parts(t.argument), np.broadcast_to(target, t.shape), float(t.weight)


def _laplacian_graph(M, what: str, family: str) -> sp.csr_matrix:
    """``W = −offdiag(M)`` when M is a graph Laplacian ``D − W`` (module docstring)."""
    if isinstance(M, spla.LinearOperator):
        raise _NoLowering(f"{what} is a products-only operator; {family} needs the graph "
                          "Laplacian D − W as a matrix")
    S = sp.csr_matrix(M, dtype=np.float64)
    scale = max(1.0, float(abs(S).max()) if S.nnz else 0.0)
    sums = np.asarray(S.sum(axis=1)).ravel()
    off = S - sp.diags(S.diagonal())
    off.eliminate_zeros()
    if (off.nnz and off.data.max() > 0) or np.abs(sums).max(initial=0.0) > LAPLACIAN_RTOL * scale:
        raise _NoLowering(f"{what} is not a graph Laplacian D − W (rows summing to 0, "
                          f"off-diagonal entries ≤ 0), which {family} needs (a normalized "
                          "Laplacian or a power has no counterpart)")
    W = sp.csr_matrix(-off)
    W.eliminate_zeros()
    return W


def _identity_map(names: dict[str, str]):
    """``{family name: array} → {model name: array}`` and back, by renaming."""
    def forward(x):
        return {names[k]: np.asarray(x[k], dtype=np.float64) for k in names}

    def backward(x):
        return {k: np.asarray(x[v], dtype=np.float64) for k, v in names.items()}
    return forward, backward


# ----------------------------------------------------------------------------- LapSVM
def _kernel_regularizers(model: Model, main: Term, alpha, K, f_parts, extra):
    """``(rkhs, graph)``: the RKHS norm ``αᵀKα`` (a quadratic form of the bare α with the K of
    f) and the graph term ``fᵀLf`` (a quadratic form of f) among the terms other than
    ``main``, None when absent; any other term raises ``extra(term)``."""
    rkhs = graph = None
    for t in model.terms:
        if t is main:
            continue
        if isinstance(t, QuadraticForm):
            if rkhs is None and _bare(t.argument) is alpha and _same_matrix(t.M, K):
                rkhs = t
                continue
            if graph is None and _no_offset(t.argument) and _same_parts(_parts(t.argument),
                                                                        f_parts):
                graph = t
                continue
        raise extra(t)
    return rkhs, graph


@register_lowering("LapSVM")
@_reasoned
def lower_lapsvm(model: Model):
    """LapSVM / LapRLS from ``MarginLossTerm(f[:l], y, φ, w) + QuadraticForm(α, K, w_A)
    + QuadraticForm(f, L, w_I)``, ``f = K @ α (+ b)``: ``γ_A = w_A/w``, ``γ_I = w_I/w``,
    scale ``2w`` (the RKHS and graph terms are recognized by argument: α itself with f's K, f
    itself). A square loss gives a :class:`LapRLS`."""
    from ssl_opt.problems.manifold.problem import LapRLS, LapSVM

    family = "LapSVM"
    _no_constraints(model, family)
    losses = [t for t in model.terms if isinstance(t, MarginLossTerm)]
    if not losses:
        raise _NoLowering("LapSVM needs a margin loss on the labeled outputs "
                          "(MarginLossTerm(f[:l], y), f = K @ alpha + b); this model has none")
    loss = losses[0]
    parts = _parts(loss.argument)
    if parts is None or not _no_offset(loss.argument):
        raise _NoLowering("the loss term's argument is not the outputs f = K @ alpha + b")
    rows, f_parts = _peel_rows(parts)
    alpha, K, b = _model_output(f_parts, "the loss term's argument",
                                "f[:l] with f = K @ alpha + b (alpha a vector, b a scalar)")
    n, l = K.shape[0], loss.shape[0] if loss.shape else 0
    if len(alpha.shape) != 1 or K.shape != (n, n) or len(loss.shape) != 1:
        raise _NoLowering("LapSVM's outputs are one column f = K @ alpha + b with K square and "
                          "alpha a vector")
    if (rows is None and l != n) or (rows is not None and not _is_prefix(rows, l)):
        raise _NoLowering(f"the loss term is not on the first l = {l} outputs f[:{l}] (LapSVM "
                          "labels the first l points)")
    rkhs, graph = _kernel_regularizers(model, loss, alpha, K, f_parts,
                                       lambda t: _extra(t, family))
    if rkhs is None or rkhs.weight <= 0:
        raise _NoLowering("LapSVM needs the RKHS norm γ_A/2 αᵀKα (RKHSNorm(alpha, K) with the K "
                          "of f, weight > 0); this model has none")
    if graph is None or graph.weight <= 0:
        raise _NoLowering("LapSVM needs the graph term γ_I/2 fᵀLf (GraphQuadratic(f, L) on the "
                          "outputs f of the loss term, weight > 0); this model has none")
    if loss.weight <= 0:
        raise _NoLowering("the loss term has weight 0; LapSVM needs a positive loss weight")
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


# -------------------------------------------------------------------------- LinearSVM
@register_lowering("LinearSVM")
@_reasoned
def lower_linear_svm(model: Model):
    """LinearSVM from squared-hinge ``MarginLossTerm``s on rows of ``f = X @ w (+ b)`` and
    ``Ridge(w, ρ) (+ Ridge(b, ρ))``: ``λ = 2ρ``, ``c_i = 2 Σ`` (weights of the loss terms on
    row i); rows no loss term covers get cost 0."""
    from ssl_opt.problems.linear.problem import LinearSVM

    family = "LinearSVM"
    _no_constraints(model, family)
    losses = [t for t in model.terms if isinstance(t, MarginLossTerm)]
    if not losses:
        raise _NoLowering("LinearSVM needs a squared-hinge loss on the outputs X @ w + b "
                          "(MarginLossTerm); this model has none")
    base = None
    covered = []
    for t in losses:
        if not isinstance(t.loss, SquaredHinge):
            raise _NoLowering(f"{_label(t)} uses the {t.loss.name} loss; LinearSVM (MFN) has "
                              "the squared hinge max(0, 1 − m)² only")
        parts = _parts(t.argument)
        if parts is None or not _no_offset(t.argument) or len(t.shape) != 1:
            raise _NoLowering(f"the argument of {_label(t)} is not rows of f = X @ w + b")
        rows, f_parts = _peel_rows(parts)
        if base is None:
            base = f_parts
            w, X, b = _model_output(f_parts, f"the argument of {_label(t)}",
                                    "rows of f = X @ w + b (w a vector, b a scalar)")
        elif not _same_parts(f_parts, base):
            raise _NoLowering(f"{_label(t)} is not on the outputs X @ w + b of the first loss "
                              "term")
        covered.append((t, np.arange(X.shape[0]) if rows is None else rows))
    if len(w.shape) != 1:
        raise _NoLowering("LinearSVM's weights w are a vector (one output column)")
    reg_w = reg_b = None
    for t in model.terms:
        if isinstance(t, MarginLossTerm):
            continue
        rho = _squared_norm_of(t, w)
        if rho is not None and reg_w is None:
            reg_w = rho
            continue
        rho = None if b is None else _squared_norm_of(t, b)
        if rho is not None and reg_b is None:
            reg_b = rho
            continue
        raise _extra(t, family)
    if reg_w is None or reg_w <= 0:
        raise _NoLowering("LinearSVM needs the ridge λ/2‖w‖² (Ridge(w, λ/2), weight > 0); "
                          "this model has none")
    if b is not None and reg_b != reg_w:
        raise _NoLowering(
            "LinearSVM regularizes the bias like w (λ/2 b², as SVMlin's constant feature): "
            + ("b has no Ridge term" if reg_b is None else
               f"Ridge(b) has weight {reg_b:g}, Ridge(w) {reg_w:g}"))
    m = 1 + max(int(rows.max(initial=-1)) for _, rows in covered)
    y = np.zeros(m)
    cost = np.zeros(m)
    for t, rows in covered:
        clash = (y[rows] != 0) & (y[rows] != t.y)
        if np.any(clash):
            raise _NoLowering(f"{_label(t)} labels row {int(rows[clash][0])} differently from "
                              "another loss term; LinearSVM has one label per row")
        y[rows] = t.y
        cost[rows] += 2.0 * t.weight
    y[y == 0] = 1.0  # rows without a loss term: cost 0, any label
    problem = LinearSVM(X, y, 2.0 * reg_w, cost=cost, bias=b is not None)
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


# ------------------------------------------------------------------------------- LASS
@register_lowering("LASS")
@_reasoned
def lower_lass(model: Model):
    """LASS from ``QuadraticForm(Z, L, λ)`` (L a graph Laplacian) + ``Linear`` terms on Z
    (``G = −Σ weight·c``) subject to ``SimplexRows(Z)``."""
    from ssl_opt.problems.lass.problem import LASS

    family = "LASS"
    simplex = [c for c in model.constraints if isinstance(c, SimplexRows)]
    Z = _bare(simplex[0].argument) if simplex else None
    if Z is None or len(Z.shape) != 2:
        raise _NoLowering("LASS needs SimplexRows(Z) on an N×K variable Z (rows of Z on the "
                          "simplex); this model has none")
    for c in model.constraints:
        if c is not simplex[0]:
            raise _extra(c, family)
    quad, G = None, np.zeros(Z.shape)
    for t in model.terms:
        if _bare(t.argument) is Z:
            if isinstance(t, QuadraticForm) and quad is None:
                quad = t
                continue
            if isinstance(t, Linear):  # LinearScore too (c = −G)
                G -= t.weight * t.c
                continue
        raise _extra(t, family)
    if quad is None or quad.weight <= 0:
        raise _NoLowering("LASS needs the graph term λ tr(ZᵀLZ) (GraphQuadratic(Z, L), weight "
                          "> 0); this model has none")
    W = _laplacian_graph(quad.M, f"the matrix of {_label(quad)}", family)
    problem = LASS(W, G, quad.weight)
    to_model, from_model = _identity_map({"Z": Z.name})
    return Lowering(problem, to_model, from_model)


# -------------------------------------------------------------------------------- ERE
def _ere_fit(parts, what: str) -> tuple[Variable, object, Variable, Variable]:
    """``(W, X, b, F)`` for ``±(X @ W + b − F)``."""
    form = "X @ W + b − F (W a d×c variable, b of length c, F the n×c labels)"
    if parts is None:
        raise _NoLowering(f"{what} is not of the form {form}")
    F_parts = [p for p in parts.values() if not p.ops and abs(p.coef) == 1.0]
    if len(F_parts) != 1:
        raise _NoLowering(f"{what} is not of the form {form}")
    F = F_parts[0]
    sign = -F.coef
    rest = {k: p for k, p in parts.items() if p is not F}
    W, X, b = _model_output(rest, what, form, coef=sign)
    if b is None or len(W.shape) != 2 or F.var.shape != (X.shape[0], W.shape[1]):
        raise _NoLowering(f"{what} is not of the form {form}")
    return W, X, b, F.var


def _ere_fit_term(t: Term, F: Variable):
    """``(W, X, b, α, robust)`` when ``t`` is ERE's fit on F: ``GroupNorms(±(X @ W + b − F),
    α)`` (robust) or ``α‖X @ W + b − F‖²`` (squared); None when it is not of that form."""
    if type(t) is GroupNorms and len(t.shape) == 2 and _no_offset(t.argument):
        parts, alpha, robust = _parts(t.argument), None, True
    else:
        fit = _squared_fit(t)
        if fit is None or np.any(fit[1]):
            return None
        parts, alpha, robust = fit[0], fit[2], False
    try:
        W, X, b, F_fit = _ere_fit(parts, f"the argument of {_label(t)}")
    except _NoLowering:
        return None
    if F_fit is not F:
        return None
    if robust:
        w = np.atleast_1d(t.w)
        if np.any(w != w[0]):
            raise _NoLowering(f"{_label(t)} weighs the points differently; ERE has one α")
        alpha = float(w[0])
    return W, X, b, alpha, robust


@register_lowering("ERE")
@_reasoned
def lower_ere(model: Model):
    """Robust ERE from ``GraphTV(F, A, w, "l2") + GroupNorms(X @ W + b − F, α) + Ridge(W, β)``,
    squared ERE from ``QuadraticForm(F, L, w) + SquaredError(X @ W + b − F, 0, α) + Ridge(W,
    β)`` (L a graph Laplacian), both with ``FixedRows(F, range(l), Y)``; the graph weight w is
    folded into A. F is the variable FixedRows fixes; the fit is the term on ``X @ W + b − F``."""
    from ssl_opt.problems.ere.problem import ERE

    family = "ERE"
    fixed = next((c for c in model.constraints if isinstance(c, FixedRows)
                  and _bare(c.argument) is not None and len(c.shape) == 2), None)
    if fixed is None:
        raise _NoLowering("ERE fixes the labeled rows F_l = Y of its n×c variable F "
                          "(FixedRows(F, range(l), Y)); this model has no such constraint")
    F = _bare(fixed.argument)
    for c in model.constraints:
        if c is not fixed:
            raise _extra(c, family)
    l = len(fixed.rows)
    if not _is_prefix(fixed.rows, l):
        raise _NoLowering(f"{_label(fixed)} does not fix the first l rows of F; ERE's "
                          "labeled points are the first l")
    fit = parsed = None
    for t in model.terms:
        parsed = _ere_fit_term(t, F)
        if parsed is not None:
            fit = t
            break
    if fit is None:
        raise _NoLowering("ERE needs the elastic fit α Σ_i ‖Wᵀx_i + b − f_i‖ (GroupNorms(X @ W + "
                          "b − F, α); squared: SquaredError(X @ W + b − F, 0, α)); this model "
                          "has none")
    W, X, b, alpha, robust = parsed
    graph = ridge = None
    for t in model.terms:
        if t is fit:
            continue
        on_F = (_bare(t.base) is F if isinstance(t, GraphTV)
                else isinstance(t, QuadraticForm) and _bare(t.argument) is F)
        if graph is None and on_F:
            if isinstance(t, GraphTV) != robust:
                raise _NoLowering(f"{_label(t)} and {_label(fit)} mix squared and unsquared "
                                  "norms; ERE has both squared (eq. 8) or neither (eq. 9)")
            if robust and t.norm != "l2" and F.shape[1] > 1:
                raise _NoLowering(f"{_label(t)} sums |f_ik − f_jk| over the columns; ERE's "
                                  "graph term is ‖f_i − f_j‖₂ (norm='l2')")
            graph = t
            continue
        if ridge is None and _squared_norm_of(t, W) is not None:
            ridge = t
            continue
        raise _extra(t, family)
    if graph is None:
        raise _NoLowering("ERE needs the graph term on F (GraphTV(F, A, norm='l2') for robust "
                          "ERE, GraphQuadratic(F, D − A) for squared ERE); this model has none")
    if ridge is None:
        raise _NoLowering("ERE needs β‖W‖² (Ridge(W, β)) on the W of the fit; this model has "
                          "none")
    if robust:
        A = sp.csr_matrix(graph.W, dtype=np.float64)
        A = sp.csr_matrix(A - sp.diags(A.diagonal()))  # self-loops add nothing to the TV
        A.eliminate_zeros()
        A = graph.weight * A
    else:
        A = graph.weight * _laplacian_graph(graph.M, f"the matrix of {_label(graph)}", family)
    problem = ERE(X, A, fixed.values, alpha, _squared_norm_of(ridge, W), robust=robust)
    to_model, from_model = _identity_map({"F": F.name, "W": W.name, "b": b.name})
    return Lowering(problem, to_model, from_model)


@register_lowering("LRL")
@_reasoned
def lower_lrl(model: Model):
    """LRL from ``QuadraticForm(X @ W, L, w)`` (L a graph Laplacian; ``X @ W + b`` too, as
    L1 = 0) + ``SquaredError((X @ W + b)[:l], Y, α)`` (or ``X[:l] @ W + b``) + ``Ridge(W,
    β)``; w is folded into A."""
    from ssl_opt.problems.ere.problem import LRL

    family = "LRL"
    _no_constraints(model, family)
    graph = fit = ridge = None
    for t in model.terms:
        if graph is None and isinstance(t, QuadraticForm) and _bare(t.argument) is None:
            graph = t
            continue
        if fit is None and _squared_fit(t) is not None and _bare(t.argument) is None:
            fit = t
            continue
        if ridge is None and type(t) in (Ridge, SquaredError) and _bare(t.argument) is not None:
            ridge = t
            continue
        raise _extra(t, family)
    if graph is None or fit is None or ridge is None:
        need = ("the graph term tr(WᵀXᵀLXW) (GraphQuadratic(X @ W, L))" if graph is None else
                "the fit α‖X_l W + 1bᵀ − Y‖² (SquaredError((X @ W + b)[:l], Y, α))"
                if fit is None else "β‖W‖² (Ridge(W, β))")
        raise _NoLowering(f"LRL needs {need}; this model has none")
    form = "X @ W (+ b) with W a d×c variable"
    gparts = _parts(graph.argument)
    if gparts is None or not _no_offset(graph.argument):
        raise _NoLowering(f"the argument of {_label(graph)} is not of the form {form}")
    W, X, gb = _model_output(gparts, f"the argument of {_label(graph)}", form)
    if len(W.shape) != 2:
        raise _NoLowering(f"the argument of {_label(graph)} is not of the form {form}")
    A = graph.weight * _laplacian_graph(graph.M, f"the matrix of {_label(graph)}", family)
    parts, Y, alpha = _squared_fit(fit)
    if parts is None:
        raise _NoLowering(f"the argument of {_label(fit)} is not X_l @ W + b")
    rows, inner = _peel_rows(parts)
    fW, fX, b = _model_output(inner, f"the argument of {_label(fit)}",
                              "(X @ W + b)[:l] or X[:l] @ W + b")
    if fW is not W or b is None or (gb is not None and gb is not b):
        raise _NoLowering(f"{_label(fit)} and {_label(graph)} are not on the same W (and b)")
    l = Y.shape[0]
    if rows is not None:
        same_X = _is_prefix(rows, l) and _same_matrix(fX, X)
    else:
        same_X = fX.shape[0] == l and l <= X.shape[0] and _same_matrix(fX, X[:l])
    if not same_X:
        raise _NoLowering(f"{_label(fit)} is not on the first l = {l} rows of the X of "
                          f"{_label(graph)}")
    beta = _squared_norm_of(ridge, W)
    if beta is None:
        raise _NoLowering(f"{_label(ridge)} is not β‖W‖² on the W of the fit")
    problem = LRL(X, A, Y, alpha, beta)
    to_model, from_model = _identity_map({"W": W.name, "b": b.name})
    return Lowering(problem, to_model, from_model)


# ------------------------------------------------------------------------- SumOfNorms
def _groups_of(t: Term, x: Variable):
    """``(G, h, k, weights)`` when ``t`` is ``Σ_i w_i ‖(Gx − h)_i‖`` on x: ``GroupNorms`` of
    ``row_blocks(G @ x − h, k)``, or ``GroupNorms``/``L1`` of the vector ``G @ x − h`` (k = 1);
    None otherwise."""
    if type(t) not in (GroupNorms, L1):
        return None
    parts = _parts(t.argument)
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
    return p.coef * G, -_offset(t.argument).ravel(), k, np.array(np.broadcast_to(t.w, (m,)))


@register_lowering("SumOfNorms")
@_reasoned
def lower_sum_of_norms(model: Model):
    """SumOfNorms from quadratic forms, ridges and linear terms on one vector x (``Q = 2 Σ
    weight·M``, ``c = Σ weight·c``) plus ``GroupNorms`` (or ``L1``) of ``G @ x − h`` (groups
    of 1) or of ``row_blocks(G @ x − h, k)``; several group terms with one k are stacked."""
    from ssl_opt.problems.ere.sum_of_norms import SumOfNorms

    family = "SumOfNorms"
    _no_constraints(model, family)
    vars_ = model.variable_objects
    if len(vars_) != 1 or len(vars_[0].shape) != 1:
        raise _NoLowering(f"SumOfNorms has one vector variable x; this model has "
                          f"{dict(model.variables)}")
    x = vars_[0]
    n = x.shape[0]
    Q = sp.csr_matrix((n, n))
    c = np.zeros(n)
    groups = []
    for t in model.terms:
        if _bare(t.argument) is x:
            if isinstance(t, QuadraticForm) and not isinstance(t.M, spla.LinearOperator):
                Q = Q + 2.0 * t.weight * sp.csr_matrix(t.M)
                continue
            rho = _squared_norm_of(t, x)
            if rho is not None:
                Q = Q + 2.0 * rho * sp.identity(n, format="csr")
                continue
            if isinstance(t, Linear):
                c = c + t.weight * t.c
                continue
        found = _groups_of(t, x)
        if found is not None:
            groups.append(found)
            continue
        raise _extra(t, family)
    if not groups:
        raise _NoLowering("SumOfNorms needs a sum of norms Σ_i w_i ‖(Gx − h)_i‖ (GroupNorms of "
                          "G @ x − h); this model has none")
    k = groups[0][2]
    if any(g[2] != k for g in groups):
        raise _NoLowering("the group terms have different group sizes; SumOfNorms has one k")
    G = sp.vstack([g[0] for g in groups], format="csr")
    h = np.concatenate([g[1] for g in groups])
    weights = np.concatenate([g[3] for g in groups])
    problem = SumOfNorms(Q, c, G, h, k, weights)
    to_model, from_model = _identity_map({"x": x.name})
    return Lowering(problem, to_model, from_model)


__all__ = ["RowBlocks", "ere_model", "lapsvm_model", "lass_model", "linear_svm_model",
           "lower_ere", "lower_lapsvm", "lower_lass", "lower_linear_svm", "lower_lrl",
           "lower_sum_of_norms", "lrl_model", "row_blocks", "sum_of_norms_model"]
