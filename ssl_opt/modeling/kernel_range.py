r"""A kernel expansion restated in the coordinates of a pivoted Cholesky factor of its kernel.

A variable α (n, or n×c) that enters a model only through products ``Kα`` with one dense
symmetric PSD K, and through RKHS terms ``w·tr(αᵀKα)``, is a *kernel variable*
(:func:`kernel_substitutions`). With the pivoted Cholesky factor of K's leading pivots,
``K_PP = L Lᵀ`` over r pivots P (LAPACK ``dpstrf``, stopped once every remaining pivot is at
most ``rtol·max diag K``), and ``R = K_{:,P} L^{-T}`` (n×r), the point

    ``α(h) = E_P L^{-T} h`` (zero off the pivots) gives exactly ``Kα = R h``, ``αᵀKα = ‖h‖²``.

So the model over h — each product ``Kα`` replaced by ``R h``, each RKHS term by a ridge
``w‖h‖²`` — has at h the objective the stated model has at α(h): a solver of the restated model
returns, through :meth:`KernelRange.expand`, a point of the stated model, which ``certify``
judges as it stands. The restriction to the pivots' span costs no more than what the factor
leaves out, ``S = K − RRᵀ`` (PSD, every entry at most ``rtol·max diag K``): at the restated
optimum the stated model's stationarity residual is ``S·g`` (g the gradient in the space of
``Kα``, multipliers included). The restated model is well conditioned where K is nearly
singular (an RBF Gram matrix), and its Newton systems have r + (other unknowns) rows instead
of n: O(n·r²) per assembled Hessian instead of the kernel-range system's O(n³). The CVXPY
reference restates kernel variables the same way with K's eigenvectors
(``reference/model.py``).
"""

from __future__ import annotations

import copy
import weakref
from dataclasses import dataclass

import numpy as np
import scipy.linalg as la

from ssl_opt.exceptions import InvalidInputError
from ssl_opt.modeling.expressions import Affine, Variable
from ssl_opt.modeling.maps import Compose, LinearMap, MatMul, Rows
from ssl_opt.modeling.model import Model
from ssl_opt.modeling.terms import QuadraticForm, Ridge

#: Pivots at most this fraction of K's largest diagonal entry end the factor.
FACTOR_RTOL = 1e-13
#: Random probes of ``‖(K − RRᵀ)v‖`` that check the factor left out no negative part of K.
PROBES = 2

_SUBSTITUTIONS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def innermost(m: LinearMap) -> LinearMap:
    """The map applied first in the chain ``m``."""
    return m.factors()[-1]


def square_kernel(m: LinearMap) -> np.ndarray | None:
    """The dense square matrix ``m`` applies first (the K of ``Kα`` and its rows), else None."""
    inner = innermost(m)
    if (isinstance(inner, MatMul) and isinstance(inner.M, np.ndarray) and inner.M.ndim == 2
            and inner.M.shape[0] == inner.M.shape[1]):
        return inner.M
    return None


def same_matrix(a, b) -> bool:
    return a is b or (a.shape == b.shape and np.array_equal(a, b))


def rkhs_variable(term, kernels: dict) -> str | None:
    """The kernel variable whose RKHS term ``w·αᵀKα`` ``term`` is, else None."""
    if isinstance(term, QuadraticForm) and term.argument.is_variable():
        name = term.argument.parts[0][0].name
        if name in kernels and same_matrix(term.M, kernels[name]):
            return name
    return None


def kernel_substitutions(model: Model) -> dict[str, np.ndarray]:
    """The kernel variables of ``model`` (module docstring) and their K: every argument part
    of the variable has a dense square K innermost (or is the variable under a quadratic form
    of K), the same K everywhere, symmetric to round-off. Found once per model (models are
    immutable)."""
    if model not in _SUBSTITUTIONS:
        _SUBSTITUTIONS[model] = _substitutions(model)
    return dict(_SUBSTITUTIONS[model])


def _substitutions(model: Model) -> dict[str, np.ndarray]:
    found: dict[str, np.ndarray] = {}
    blocked: set[str] = set()
    for term in model.all_terms:
        rkhs = (isinstance(term, QuadraticForm) and term.argument.is_variable()
                and isinstance(term.M, np.ndarray))
        for var, m in term.argument.parts:
            if rkhs:
                K = term.M
            else:
                K = square_kernel(m)
            if K is None or (var.name in found and not same_matrix(found[var.name], K)):
                blocked.add(var.name)
            else:
                found.setdefault(var.name, K)
    return {name: K for name, K in found.items()
            if name not in blocked and symmetric(K, 1e-12 * max(1.0, float(np.max(np.abs(K)))))}


def symmetric(K: np.ndarray, atol: float, rows: int = 256) -> bool:
    """``|K − Kᵀ| ≤ atol`` entrywise, compared ``rows`` rows against as many columns at a
    time (a third of ``np.allclose(K, K.T)``'s time at n = 5,000: no n×n temporaries)."""
    n = K.shape[0]
    return all(np.max(np.abs(K[i:i + rows] - K[:, i:i + rows].T), initial=0.0) <= atol
               for i in range(0, n, rows))


#: Principal submatrix whose numerical rank estimates a kernel's.
RANK_SAMPLE = 300


def rank_estimate(K: np.ndarray, rtol: float = FACTOR_RTOL) -> float:
    """The numerical rank of K at ``rtol``, estimated from a random ``RANK_SAMPLE`` principal
    submatrix (×1.3: the sample's rank was 1.1–1.5× below K's on RBF kernels of 500–3,500
    points); K's size when the sample is nearly full rank, or K has at most RANK_SAMPLE rows."""
    n = K.shape[0]
    if n <= RANK_SAMPLE:
        return float(n)
    idx = np.sort(np.random.default_rng(0).choice(n, RANK_SAMPLE, replace=False))
    lam = np.linalg.eigvalsh(K[np.ix_(idx, idx)])
    rank = int(np.sum(lam > rtol * lam[-1]))
    return float(n) if rank >= 0.9 * RANK_SAMPLE else min(float(n), 1.3 * rank)


@dataclass(frozen=True)
class PivotedFactor:
    """``K_PP = L Lᵀ`` over the pivots P and ``R = K_{:,P} L^{-T}``, so ``K ≈ RRᵀ``."""

    R: np.ndarray
    pivots: np.ndarray
    L: np.ndarray

    @property
    def rank(self) -> int:
        return int(self.pivots.size)

    def expansion(self, h: np.ndarray, n: int) -> np.ndarray:
        """``α = E_P L^{-T} h`` (zero off the pivots): ``Kα = R h``, ``αᵀKα = ‖h‖²``."""
        alpha = np.zeros((n,) + h.shape[1:])
        alpha[self.pivots] = la.solve_triangular(self.L, h, lower=True, trans="T",
                                                 check_finite=False)
        return alpha


def pivoted_factor(K: np.ndarray, rtol: float = FACTOR_RTOL) -> PivotedFactor:
    """The pivoted Cholesky factor of a symmetric PSD ``K`` (module docstring); raises
    :class:`InvalidInputError` when K has no positive pivot or is not PSD (random probes of
    ``K − RRᵀ`` larger than the tolerance allows)."""
    n = K.shape[0]
    top = float(np.max(np.diag(K))) if n else 0.0
    if not top > 0:
        raise InvalidInputError("K has no positive diagonal entry: the kernel expansion is "
                                "identically zero.")
    work = np.array(K.T, dtype=np.float64, order="F")  # = K; a plain copy when K is C-ordered
    c, piv, rank, info = la.lapack.dpstrf(work, lower=1, tol=rtol * top)
    if info < 0 or rank < 1:
        raise InvalidInputError(f"the pivoted Cholesky factorization of K failed (info {info}).")
    pivots = np.asarray(piv[:rank], dtype=np.intp) - 1
    L = np.tril(c[:rank, :rank])
    R = la.solve_triangular(L, K[:, pivots].T, lower=True, check_finite=False).T
    probes = np.random.default_rng(0).standard_normal((n, PROBES))
    left = K @ probes - R @ (R.T @ probes)
    if np.max(np.abs(left)) > 10.0 * n * rtol * top * np.max(np.abs(probes)):
        raise InvalidInputError("K is not positive semidefinite: its pivoted Cholesky factor "
                                "leaves out more than its tolerance allows.")
    return PivotedFactor(np.ascontiguousarray(R), pivots, L)


def _restated_map(m: LinearMap, R: np.ndarray, shape: tuple[int, ...]) -> LinearMap:
    """``m`` with ``R`` in place of its innermost K; a row selection applied right after K
    becomes part of the product, ``R[rows]`` (a loss on the labeled rows then costs l·r, not
    n·r)."""
    factors = m.factors()[:-1]
    if factors and isinstance(factors[-1], Rows):
        R = R[factors.pop().index]
    out: LinearMap = MatMul(R, shape)
    for f in reversed(factors):
        out = Compose(f, out)
    return out


def with_argument(item, argument: Affine):
    """A copy of the term or constraint ``item`` on ``argument`` (of the same shape)."""
    if argument.shape != item.argument.shape:
        raise InvalidInputError(f"the new argument of {item.describe()} has shape "
                                f"{argument.shape}, not {item.argument.shape}.")
    out = copy.copy(item)
    out.argument = argument
    return out


class KernelRange:
    """``model`` restated over ``h`` for each kernel variable (module docstring).

    ``factors`` maps each kernel variable to its :class:`PivotedFactor`, ``model`` is the
    restated model (each kernel variable keeps its name, with r rows), :meth:`expand` maps its
    points to the stated model's and :meth:`restrict` the other way (a warm start)."""

    def __init__(self, stated: Model, factors: dict[str, PivotedFactor]):
        self.stated = stated
        self.factors = factors
        kernels = kernel_substitutions(stated)
        self.variables = {name: Variable(name, (f.rank,) + stated.variables[name][1:])
                          for name, f in factors.items()}
        terms = []
        for term in stated.terms:
            name = rkhs_variable(term, {k: kernels[k] for k in factors})
            terms.append(Ridge(self.variables[name], term.weight) if name is not None
                         else with_argument(term, self._restate(term.argument)))
        constraints = [with_argument(c, self._restate(c.argument)) for c in stated.constraints]
        self.model = Model(terms, constraints,
                           prediction=self._restate(stated.prediction_expression),
                           name=f"{stated.name} (pivoted kernel factor)",
                           unique_prediction=stated.unique_prediction)

    @classmethod
    def of(cls, model: Model, rtol: float = FACTOR_RTOL) -> KernelRange:
        """Factor every kernel variable's K; raises :class:`InvalidInputError` when the model
        has none."""
        kernels = kernel_substitutions(model)
        if not kernels:
            raise InvalidInputError("the model has no kernel variable (one entering only "
                                    "through K @ alpha and RKHS terms of the same K).")
        return cls(model, {name: pivoted_factor(K, rtol) for name, K in kernels.items()})

    def _restate(self, expr: Affine) -> Affine:
        parts = []
        for var, m in expr.parts:
            if var.name in self.factors:
                h = self.variables[var.name]
                m = _restated_map(m, self.factors[var.name].R, h.shape)
                var = h
            parts.append((var, m))
        return Affine(parts, expr.shape, expr.offset)

    def expand(self, x: dict) -> dict[str, np.ndarray]:
        """The stated model's point of the restated model's point ``x``."""
        out = dict(x)
        for name, f in self.factors.items():
            out[name] = f.expansion(np.asarray(x[name], dtype=np.float64),
                                    self.stated.variables[name][0])
        return out

    def restrict(self, x: dict) -> dict[str, np.ndarray]:
        """``h = Rᵀα``, so that ``R h = RRᵀα`` is ``Kα`` up to the factor's tolerance."""
        out = dict(x)
        for name, f in self.factors.items():
            out[name] = f.R.T @ np.asarray(x[name], dtype=np.float64)
        return out
