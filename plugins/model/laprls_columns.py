r"""Multi-output LapRLS models by one factorization with c right-hand sides (docs/modeling.md).

A model of exactly the structure (any term order and variable names)

    w ‖(K @ α + b)[:l] − T‖²_F  +  w_A tr(αᵀKα)  +  w_I tr(fᵀLf),   f = K @ α + 1bᵀ,

with α an n×c variable, b a length-c variable (or no bias) and T the l×c targets, is c
independent LapRLS problems [000 §5] sharing K, L and ``γ_A = w_A/w``, ``γ_I = w_I/w``: the
model objective is ``2w Σ_k J_k`` with ``J_k = ½(Σ_{i≤l}(f_ik − T_ik)² + γ_A α_kᵀKα_k +
γ_I f_kᵀLf_k)``. Their normal equations [000 eq. 14] have one matrix, which depends on K, L,
the γs, the bias and l but not on T (docs/design.md §7): one dense LU serves the c columns
(:func:`~ssl_opt.plugins.manifold.laprls_direct.solve_targets`), O(n³ + n²c), exact up to
round-off. The one-vs-rest targets ``2·onehot − 1`` are the usual ones, but T may be any real
matrix (e.g. the one-hot matrix itself).

:meth:`LapRLSColumns.structure_reasons` names the term, constraint or shape that breaks the
structure; a single-output model (α a vector) is left to the LapRLS lowering
(``laprls-direct``) or the generic solvers, unchanged.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ssl_opt.hookspecs import hookimpl
from ssl_opt.modeling.expressions import Variable
from ssl_opt.modeling.model import Model
from ssl_opt.modeling.patterns import (
    NoMatch,
    bare,
    is_prefix,
    label,
    model_output,
    peel_rows,
    squared_fit,
)
from ssl_opt.modeling.terms import Ridge, SquaredError
from ssl_opt.plugins.manifold.laprls_direct import solve_targets
from ssl_opt.plugins.model.common import ModelSolver
from ssl_opt.problems.manifold.pattern import kernel_regularizers
from ssl_opt.solution import OPTIMAL, History, Solution

FAMILY = "multi-output LapRLS"
FORM = "(K @ alpha + b)[:l] with alpha an n×c variable and b of length c (or no b)"


@dataclass(frozen=True, eq=False)
class ColumnsStructure:
    """The data of a multi-output LapRLS model: ``w‖(Kα + 1bᵀ)[:l] − T‖² + w_A tr(αᵀKα) +
    w_I tr(fᵀLf)``."""

    alpha: Variable
    b: Variable | None
    K: object
    L: object
    T: np.ndarray
    w: float
    w_A: float
    w_I: float

    @property
    def gamma_A(self) -> float:
        return self.w_A / self.w

    @property
    def gamma_I(self) -> float:
        return self.w_I / self.w


def read_structure(model: Model) -> ColumnsStructure | str:
    """The model as a multi-output LapRLS, or the reason it is not one (naming the term,
    constraint or shape that breaks the structure)."""
    try:
        return _read(model)
    except NoMatch as exc:
        return str(exc)


def _fit_of(t) -> tuple[Variable, object, Variable | None, np.ndarray, dict]:
    """``(α, K, b, T, parts of f)`` when ``t`` is ``w‖(K @ α + b)[:l] − T‖²``."""
    fit = squared_fit(t)
    what = f"the argument of {label(t)}"
    if fit is None or fit[0] is None:
        raise NoMatch(f"{what} is not of the form {FORM}")
    parts, T, _ = fit
    rows, f_parts = peel_rows(parts)
    alpha, K, b = model_output(f_parts, what, FORM)
    if len(alpha.shape) != 2:
        raise NoMatch(f"alpha of {label(t)} is a vector: a single-output LapRLS lowers to "
                          "LapRLS ('laprls-direct'); laprls-columns takes an n×c alpha")
    n, c = alpha.shape
    l = t.shape[0]
    if K.shape != (n, n):
        raise NoMatch(f"the K of {label(t)} is {K.shape}, not square n×n (n = {n})")
    if (rows is None and l != n) or (rows is not None and not is_prefix(rows, l)):
        raise NoMatch(f"{label(t)} is not on the first l = {l} outputs f[:{l}] (the "
                          "labeled points are the first l)")
    return alpha, K, b, np.array(T, dtype=np.float64).reshape(l, c), f_parts


def _read(model: Model) -> ColumnsStructure:
    if model.constraints:
        raise NoMatch(f"{label(model.constraints[0])} has no counterpart in {FAMILY}")
    candidates = [t for t in model.terms if type(t) in (SquaredError, Ridge)
                  and bare(t.argument) is None]
    if not candidates:
        raise NoMatch(f"{FAMILY} needs the fit w‖f[:l] − T‖² (SquaredError(f[:l], T, w), "
                          "f = K @ alpha + b); this model has none")
    first_reason, parsed = None, None
    for t in candidates:
        try:
            parsed = (t, *_fit_of(t))
            break
        except NoMatch as exc:
            first_reason = first_reason or str(exc)
    if parsed is None:
        raise NoMatch(first_reason)
    fit, alpha, K, b, T, f_parts = parsed
    rkhs, graph = kernel_regularizers(model, fit, alpha, K, f_parts, lambda t: NoMatch(
        f"{label(t)} has no counterpart in {FAMILY} (its terms are the fit, RKHSNorm(alpha, "
        "K) and GraphQuadratic(f, L), one weight each for all c columns)"))
    if fit.weight <= 0:
        raise NoMatch(f"{label(fit)} has weight 0; {FAMILY} needs a positive fit weight")
    if rkhs is None or rkhs.weight <= 0:
        raise NoMatch(f"{FAMILY} needs the RKHS norm w_A tr(αᵀKα) (RKHSNorm(alpha, K) with "
                          "the K of f, weight > 0); this model has none")
    if graph is None or graph.weight <= 0:
        raise NoMatch(f"{FAMILY} needs the graph term w_I tr(fᵀLf) (GraphQuadratic(f, L) "
                          "on the outputs f of the fit, weight > 0); this model has none")
    return ColumnsStructure(alpha, b, K, graph.M, T, float(fit.weight), float(rkhs.weight),
                            float(graph.weight))


def dense(K) -> np.ndarray:
    """K as a dense array (an operator materialized by ``K @ I``)."""
    if isinstance(K, np.ndarray):
        return K
    if sp.issparse(K):
        return K.toarray()
    return np.asarray(K @ np.eye(K.shape[0]), dtype=np.float64)


class LapRLSColumns(ModelSolver):
    name = "laprls-columns"
    description = ("Multi-output LapRLS models (n×c alpha, one-vs-rest or any l×c targets): "
                   "the c LapRLS normal equations [000 eq. 14] by one dense LU with c "
                   "right-hand sides, O(n^3).")
    complexity = {"model": (3.0, "O(n³): one dense (n+1)×(n+1) LU for all c columns")}
    tolerance_family = "direct"
    preference = 1  # a paper's solve: preferred over the generic solvers on ties
    options = {}

    def structure_reasons(self, model: Model) -> list[str]:
        found = read_structure(model)
        return [f"a {FAMILY} model ({found})"] if isinstance(found, str) else []

    def predicted_time(self, problem) -> float:
        """One LU of the (n+1)×(n+1) matrix, forming ``LK`` and the c right-hand sides
        (measured on 2 cores, n = 20..1500: 0.4 ms at n ≤ 90, 47 ms at 1000, 140 ms at 1500;
        the LU's 3e-11·n³ from ``bench_modeling.py --only multiclass_laprls``, 2026-11-29:
        0.033 s at n = 1,000, 0.38 s at 2,500, 3.2 s at 5,000, 2.4–3.3e-11·n³)."""
        found = read_structure(problem) if isinstance(problem, Model) else None
        if not isinstance(found, ColumnsStructure):
            return float("nan")
        n, c = found.alpha.shape
        L = found.L
        # LK: sparse L times dense K, or a dense GEMM (~3x the LU's flops at the same rate)
        LK = 1.5e-10 * L.nnz * n if sp.issparse(L) else 1.3e-10 * n**3
        return 5e-4 + 3e-11 * (n + 1) ** 3 + LK + 1.5e-10 * n * n * c

    def blas_threads(self, problem) -> int:
        """One BLAS thread: measured on 2 cores at n = 250..1500, the LU is as fast on one
        (n = 1000: 40 ms) and a second thread, when another process loads the machine, made
        single solves up to 4x slower (50–170 ms)."""
        return 1

    def _solve(self, model: Model, **options) -> Solution:
        # Solver.solve already limits BLAS to blas_threads(); not ModelSolver's wrapper.
        return self._run(model, **options)

    def _run(self, model: Model) -> Solution:
        start = time.perf_counter()
        s = read_structure(model)
        alpha, b = solve_targets(dense(s.K), s.L, s.T, s.gamma_A, s.gamma_I, s.b is not None)
        x = {s.alpha.name: alpha}
        if s.b is not None:
            x[s.b.name] = b
        objective = float(model.objective(x))
        history = History()
        history.append(iteration=1, objective=objective, time=time.perf_counter() - start)
        return Solution(x=x, objective=objective, status=OPTIMAL, iterations=1, time=0.0,
                        backend="", solver="", history=history,
                        info={"shared_factorization": alpha.shape[1]})


@hookimpl
def register_solvers():
    return [LapRLSColumns()]
