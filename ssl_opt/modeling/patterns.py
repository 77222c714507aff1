r"""Reading a model's terms against a named problem's pattern (docs/design.md §6).

A family's *pattern* (``ssl_opt/problems/<family>/pattern.py``) looks at a
:class:`~ssl_opt.modeling.Model` and returns either a :class:`~ssl_opt.modeling.lowering.Lowering`
(the family problem equal to the model) or a one-line reason naming the term or constraint that
breaks the structure. This module holds what every pattern reads with: an affine argument
split into its parts by variable (``coef · ops(var)``), comparisons of matrices and linear maps,
the output ``M @ v + b`` of a linear model, squared norms and fits, and a graph Laplacian read
back as its graph ``W = −offdiag(L)`` (only when L is one: rows summing to 0 within
:data:`LAPLACIAN_RTOL` · max|L|, off-diagonal entries ≤ 0).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ssl_opt.modeling.expressions import Affine, Variable
from ssl_opt.modeling.maps import Broadcast, Identity, LinearMap, MatMul, RowBlocks, Rows, Scale
from ssl_opt.modeling.model import Model
from ssl_opt.modeling.term import Term
from ssl_opt.modeling.terms import Ridge, SquaredError

#: A matrix is read as a graph Laplacian when its rows sum to 0 within this, relative to
#: max|L| (the rule of ``LapSVM.laplacian_annihilates_ones``).
LAPLACIAN_RTOL = 1e-10


class NoMatch(Exception):
    """Why a model is not the family problem (the pattern returns it as its reason)."""


def reasoned(fn):
    """A pattern that raises :class:`NoMatch` as one returning the reason."""
    @functools.wraps(fn)
    def lowerer(model):
        try:
            return fn(model)
        except NoMatch as exc:
            return str(exc)
    return lowerer


def label(t: Term) -> str:
    """``GraphTV(weight=0.1, ...)``: the class name and the term's own description."""
    text, cls = t.describe(), type(t).__name__
    return cls + text[len(t.name):] if text.startswith(t.name) else f"{cls} {text}"


@dataclass(frozen=True)
class Part:
    """``coef · ops(var)``: ``ops`` the primitive maps, outer first, without identities and
    scalar scalings (folded into ``coef``)."""

    var: Variable
    coef: float
    ops: tuple


def parts_of(expr: Affine) -> dict[int, Part] | None:
    """The expression's parts by variable (None when a variable appears twice)."""
    out: dict[int, Part] = {}
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
        out[id(var)] = Part(var, coef, tuple(ops))
    return out


def no_offset(expr: Affine) -> bool:
    return expr.offset is None or not np.any(expr.offset)


def offset_of(expr: Affine) -> np.ndarray:
    return np.zeros(expr.shape) if expr.offset is None else np.asarray(expr.offset)


def same_matrix(A, B) -> bool:
    if A is B:
        return True
    if isinstance(A, spla.LinearOperator) or isinstance(B, spla.LinearOperator):
        return False
    if getattr(A, "shape", None) != getattr(B, "shape", None):
        return False
    if sp.issparse(A) or sp.issparse(B):
        return (sp.csr_matrix(A) != sp.csr_matrix(B)).nnz == 0
    return bool(np.array_equal(A, B))


def same_op(a: LinearMap, b: LinearMap) -> bool:
    if type(a) is not type(b) or a.in_shape != b.in_shape:
        return False
    if isinstance(a, MatMul):
        return same_matrix(a.M, b.M)
    if isinstance(a, Rows):
        return bool(np.array_equal(a.index, b.index))
    if isinstance(a, Broadcast):
        return a.n == b.n
    if isinstance(a, RowBlocks):
        return a.k == b.k
    if isinstance(a, Scale):
        return bool(np.array_equal(a.s, b.s))
    return a is b


def same_parts(p: dict[int, Part] | None, q: dict[int, Part] | None) -> bool:
    if p is None or q is None or p.keys() != q.keys():
        return False
    return all(p[k].coef == q[k].coef and len(p[k].ops) == len(q[k].ops)
               and all(same_op(a, b) for a, b in zip(p[k].ops, q[k].ops, strict=True))
               for k in p)


def peel_rows(parts: dict[int, Part]) -> tuple[np.ndarray | None, dict[int, Part]]:
    """``(index, inner)`` when every part starts with the same row selection, else
    ``(None, parts)``."""
    first = [p.ops[0] if p.ops else None for p in parts.values()]
    if not first or not all(isinstance(op, Rows) for op in first):
        return None, parts
    index = first[0].index
    if not all(np.array_equal(op.index, index) for op in first[1:]):
        return None, parts
    return np.asarray(index), {k: Part(p.var, p.coef, p.ops[1:]) for k, p in parts.items()}


def is_prefix(index: np.ndarray, l: int) -> bool:
    return len(index) == l and bool(np.array_equal(index, np.arange(l)))


def bare(expr: Affine) -> Variable | None:
    """The variable when ``expr`` is one whole variable."""
    return expr.parts[0][0] if expr.is_variable() else None


def matrix_of(part: Part) -> object | None:
    """M when the part is ``1 · M @ var``."""
    if part.coef == 1.0 and len(part.ops) == 1 and isinstance(part.ops[0], MatMul):
        return part.ops[0].M
    return None


def is_bias(part: Part, n: int) -> bool:
    """The part is ``1 · broadcast(var)`` to n rows."""
    return (part.coef == 1.0 and len(part.ops) == 1 and isinstance(part.ops[0], Broadcast)
            and part.ops[0].n == n)


def model_output(parts: dict[int, Part], what: str, form: str,
                  coef: float = 1.0) -> tuple[Variable, object, Variable | None]:
    """``(v, M, b)`` for ``coef·(M @ v + b)`` (b optional, broadcast over M's rows)."""
    main = [p for p in parts.values() if p.ops and isinstance(p.ops[-1], MatMul)]
    if len(main) != 1:
        raise NoMatch(f"{what} is not of the form {form}")
    v = main[0]
    M = matrix_of(Part(v.var, v.coef / coef, v.ops))
    if M is None:
        raise NoMatch(f"{what} is not of the form {form}")
    rest = [p for p in parts.values() if p is not v]
    n = M.shape[0]
    if len(rest) > 1 or (rest and not is_bias(Part(rest[0].var, rest[0].coef / coef,
                                                 rest[0].ops), n)):
        raise NoMatch(f"{what} is not of the form {form}")
    b = rest[0].var if rest else None
    if b is not None and b.shape != v.var.shape[1:]:
        raise NoMatch(f"{what} is not of the form {form}")
    return v.var, M, b


def no_constraints(model: Model, family: str) -> None:
    if model.constraints:
        raise NoMatch(f"{label(model.constraints[0])} has no counterpart in {family}")


def no_counterpart(t: Term, family: str) -> NoMatch:
    return NoMatch(f"{label(t)} has no counterpart in {family}")


def squared_norm_of(t: Term, var: Variable) -> float | None:
    """The weight ρ when ``t`` is ``ρ‖var‖²`` (Ridge, or SquaredError with target 0)."""
    if bare(t.argument) is not var:
        return None
    if type(t) is Ridge or (type(t) is SquaredError and not np.any(t.target)):
        return float(t.weight)
    return None


def squared_fit(t: Term) -> tuple[dict[int, Part] | None, np.ndarray, float] | None:
    """``(linear parts, T, ρ)`` when ``t`` is ``ρ‖A(x) − T‖²`` (SquaredError or Ridge; the
    argument's offset moved into T)."""
    if type(t) is SquaredError:
        target = t.target - offset_of(t.argument)
    elif type(t) is Ridge:
        target = -offset_of(t.argument)
    else:
        return None
    return parts_of(t.argument), np.broadcast_to(target, t.shape), float(t.weight)


def laplacian_graph(M, what: str, family: str) -> sp.csr_matrix:
    """``W = −offdiag(M)`` when M is a graph Laplacian ``D − W`` (module docstring)."""
    if isinstance(M, spla.LinearOperator):
        raise NoMatch(f"{what} is a products-only operator; {family} needs the graph "
                          "Laplacian D − W as a matrix")
    S = sp.csr_matrix(M, dtype=np.float64)
    scale = max(1.0, float(abs(S).max()) if S.nnz else 0.0)
    sums = np.asarray(S.sum(axis=1)).ravel()
    off = S - sp.diags(S.diagonal())
    off.eliminate_zeros()
    if (off.nnz and off.data.max() > 0) or np.abs(sums).max(initial=0.0) > LAPLACIAN_RTOL * scale:
        raise NoMatch(f"{what} is not a graph Laplacian D − W (rows summing to 0, "
                          f"off-diagonal entries ≤ 0), which {family} needs (a normalized "
                          "Laplacian or a power has no counterpart)")
    W = sp.csr_matrix(-off)
    W.eliminate_zeros()
    return W


def identity_map(names: dict[str, str]):
    """``{family name: array} → {model name: array}`` and back, by renaming."""
    def forward(x):
        return {names[k]: np.asarray(x[k], dtype=np.float64) for k in names}

    def backward(x):
        return {k: np.asarray(x[v], dtype=np.float64) for k, v in names.items()}
    return forward, backward
