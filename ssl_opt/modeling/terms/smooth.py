r"""Smooth terms: linear, squared error, ridge and quadratic forms (docs/design.md §6).

==================  ==============================  ==============  ========================
term                h(z)                            ∇h(z)           prox(v, t)
==================  ==============================  ==============  ========================
``Linear``          ``w⟨c, z⟩``                     ``w c``         ``v − t w c``
``LinearScore``     ``−w⟨G, z⟩`` (LASS's −tr(GᵀZ))  ``−w G``        ``v + t w G``
``SquaredError``    ``w‖z − T‖²_F``                 ``2w(z − T)``   ``(v + 2twT)/(1 + 2tw)``
``Ridge``           ``w‖z‖²_F``                     ``2w z``        ``v/(1 + 2tw)``
``QuadraticForm``   ``w tr(zᵀMz)``                  ``2w M z``      —
==================  ==============================  ==============  ========================

Hessian products: ``2w v`` (squared error, ridge), ``2w M v`` (quadratic form), 0 (linear).
``RKHSNorm`` (``w αᵀKα``, the squared RKHS norm of ``f = Kα`` [000 eq. 7]) and ``GraphQuadratic``
(``w fᵀLf``, the manifold regularizer [000 eq. 7]) are quadratic forms under the names the
lowerings recognize.

The CVXPY form of ``tr(zᵀMz)`` never forms a dense n×n matrix from a sparse M: a symmetric M
with non-positive off-diagonal entries and non-negative row sums (a graph Laplacian ``D − W``,
possibly plus a non-negative diagonal) is the sum of squares ``‖Bz‖²`` with ``B`` the weighted
edge incidence ``√(−M_ij)(e_i − e_j)`` stacked on ``diag(√(Σ_j M_ij))``; any other M, and any M
on a dense map of the variables (``f = Rh`` of a factored kernel in the reference, where ``BR``
would be a dense E × r block), enters as ``quad_form(z_k, psd_wrap(M))`` per column (a
quadratic objective Clarabel takes as is).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ssl_opt.builders.laplacian import incidence_matrix
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.modeling.term import Term
from ssl_opt.modeling.terms._common import data_array, square_matrix
from ssl_opt.numerics.psd import matrix_inner
from ssl_opt.optional import cvxpy as cp


class Linear(Term):
    """``w⟨c, z⟩`` (``c`` of the argument's shape, or a scalar)."""

    name = "linear"
    program_class = "LP"
    elementwise_prox = True
    constant_hessian = True

    def __init__(self, argument, c, weight=1.0):
        super().__init__(argument, weight)
        self.c = data_array(c, "c", self.shape, type(self).__name__)

    @property
    def _coef(self) -> np.ndarray:
        return self.weight * self.c

    def value(self, z):
        return float(np.sum(self._coef * z))

    def cvxpy(self, z):
        return cp.sum(cp.multiply(self._coef, z)) if self.shape else float(self._coef) * z

    def gradient(self, z):
        return np.array(self._coef, dtype=np.float64)

    def hessp(self, z, v):
        return np.zeros(np.shape(v))

    def hessian(self, z):
        return np.zeros(np.size(z))

    def prox(self, v, t):
        return v - t * self._coef


class LinearScore(Linear):
    """``−w⟨G, z⟩ = −w tr(GᵀZ)``: the score term of LASS [002 §2] (``G`` of the argument's
    shape); a :class:`Linear` term with ``c = −G``."""

    name = "linear_score"

    def __init__(self, argument, G, weight=1.0):
        Term.__init__(self, argument, weight)
        self.G = data_array(G, "G", self.shape, "LinearScore")
        self.c = -self.G


class TraceProduct(Term):
    """``w⟨C, Z⟩ = w tr(CᵀZ)`` on a matrix argument, ``C`` dense or sparse and kept so (NPKL's
    ``tr(ΔZ)`` [003 eq. 1] with a sparse Δ): a :class:`Linear` term that never densifies its
    coefficient except in the (dense) gradient."""

    name = "trace_product"
    program_class = "LP"
    constant_hessian = True

    def __init__(self, argument, C, weight=1.0):
        super().__init__(argument, weight)
        if len(self.shape) != 2 or getattr(C, "shape", None) != self.shape:
            raise InvalidInputError(f"C of TraceProduct must be a matrix of the argument's "
                                    f"shape {self.shape}, got {getattr(C, 'shape', None)}.")
        values = C.data if sp.issparse(C) else np.asarray(C)
        if np.iscomplexobj(values) or not np.all(np.isfinite(values)):
            raise InvalidInputError("C of TraceProduct must hold finite real numbers (no NaN, "
                                    "inf or complex entries).")
        self.C = sp.csr_matrix(C, dtype=np.float64) if sp.issparse(C) else np.asarray(
            C, dtype=np.float64)

    def value(self, z):
        return self.weight * matrix_inner(self.C, z)

    def cvxpy(self, z):
        return self.weight * cp.sum(cp.multiply(self.C, z))

    def gradient(self, z):
        return self.weight * (self.C.toarray() if sp.issparse(self.C) else self.C)

    def hessp(self, z, v):
        return np.zeros(np.shape(v))

    def hessian(self, z):
        return np.zeros(np.size(z))


class SquaredError(Term):
    """``w‖z − T‖²_F`` (``T = target``, of the argument's shape or a scalar)."""

    name = "squared_error"
    program_class = "QP"
    elementwise_prox = True
    constant_hessian = True

    def __init__(self, argument, target, weight=1.0):
        super().__init__(argument, weight)
        self.target = data_array(target, "target", self.shape, "SquaredError")

    def value(self, z):
        return float(self.weight * np.sum(np.square(z - self.target)))

    def cvxpy(self, z):
        return self.weight * cp.sum_squares(z - self.target)

    def gradient(self, z):
        return 2.0 * self.weight * (z - self.target)

    def hessp(self, z, v):
        return 2.0 * self.weight * np.asarray(v, dtype=np.float64)

    def hessian(self, z):
        return np.full(np.size(z), 2.0 * self.weight)

    def prox(self, v, t):
        tw = 2.0 * t * self.weight
        return (v + tw * self.target) / (1.0 + tw)


class Ridge(Term):
    """``w‖z‖²_F``."""

    name = "ridge"
    program_class = "QP"
    elementwise_prox = True
    constant_hessian = True

    def value(self, z):
        return float(self.weight * np.sum(np.square(z)))

    def cvxpy(self, z):
        return self.weight * cp.sum_squares(z)

    def gradient(self, z):
        return 2.0 * self.weight * np.asarray(z, dtype=np.float64)

    def hessp(self, z, v):
        return 2.0 * self.weight * np.asarray(v, dtype=np.float64)

    def hessian(self, z):
        return np.full(np.size(z), 2.0 * self.weight)

    def prox(self, v, t):
        return v / (1.0 + 2.0 * t * self.weight)


class QuadraticForm(Term):
    """``w tr(zᵀMz)`` (``w zᵀMz`` for a vector argument), M symmetric PSD n×n: a dense array,
    a sparse matrix, or a ``LinearOperator`` (products only: no CVXPY form, so the reference
    backend reports it as missing). ``∇ = 2wMz``, ``∇²·v = 2wMv``."""

    name = "quadratic_form"
    program_class = "QP"
    constant_hessian = True
    _matrix_name = "M"

    def __init__(self, argument, M, weight=1.0, *, validated: bool = False):
        super().__init__(argument, weight)
        owner = type(self).__name__
        if len(self.shape) not in (1, 2):
            raise InvalidInputError(f"the argument of {owner} must be a vector or an n×c "
                                    f"matrix, got shape {self.shape}.")
        # validated=True: a named model's constructor has checked M (square, symmetric, PSD,
        # float64) and the term shares it instead of a copy checked again.
        self.M = M if validated else square_matrix(M, self._matrix_name, self.shape[0], owner)
        self._factor = None

    @property
    def capabilities(self) -> frozenset[str]:
        caps = super().capabilities
        return caps - {"cvxpy", "hessian"} if isinstance(self.M, spla.LinearOperator) else caps

    def _product(self, v: np.ndarray) -> np.ndarray:
        return np.asarray(self.M @ v, dtype=np.float64).reshape(np.shape(v))

    def value(self, z):
        z = np.asarray(z, dtype=np.float64)
        return float(self.weight * np.sum(z * self._product(z)))

    def gradient(self, z):
        return 2.0 * self.weight * self._product(np.asarray(z, dtype=np.float64))

    def hessp(self, z, v):
        return 2.0 * self.weight * self._product(np.asarray(v, dtype=np.float64))

    def hessian(self, z):
        """``2w M`` (``2w M ⊗ I_c`` for an n×c argument, C order)."""
        if isinstance(self.M, spla.LinearOperator):
            raise NotImplementedError(f"{self!r} has a products-only matrix: no assembled "
                                      "Hessian")
        columns = self.shape[1] if len(self.shape) == 2 else 1
        if sp.issparse(self.M):
            M = self.M if columns == 1 else sp.kron(self.M, sp.identity(columns), format="csr")
            return (2.0 * self.weight) * M
        M = self.M if columns == 1 else np.kron(self.M, np.eye(columns))
        return (2.0 * self.weight) * M

    def cvxpy(self, z):
        """``w Σ_k z_kᵀ M z_k``: ``w‖Bz‖²`` for a Laplacian-like M (module docstring), else
        the quadratic form of ``psd_wrap(M)``."""
        if isinstance(self.M, spla.LinearOperator):
            raise InvalidInputError(
                f"{type(self).__name__} with a products-only {self._matrix_name} has no CVXPY "
                "form; pass the matrix as an array or a sparse matrix to use the reference "
                "backend.")
        B = self.sum_of_squares_factor()
        if B is not None:
            return self.weight * cp.sum_squares(B @ z) if B.shape[0] else cp.Constant(0.0)
        M = cp.psd_wrap(self.M)
        if len(self.shape) == 1:
            return self.weight * cp.quad_form(z, M)
        return self.weight * sum(cp.quad_form(z[:, k], M) for k in range(self.shape[1]))

    def sum_of_squares_factor(self) -> sp.csr_matrix | None:
        """A sparse ``B`` with ``BᵀB = M`` when M is Laplacian-like (off-diagonal entries ≤ 0,
        row sums ≥ 0), else None."""
        if self._factor is None:
            self._factor = _laplacian_factor(self.M) if not isinstance(
                self.M, spla.LinearOperator) else False
        return self._factor if self._factor is not False else None


class RKHSNorm(QuadraticForm):
    """``w αᵀKα`` (``w tr(αᵀKα)``): the squared RKHS norm of ``f = Kα`` [000 eq. 7]; a
    :class:`QuadraticForm` with ``M = K`` (also ``.K``)."""

    name = "rkhs_norm"
    _matrix_name = "K"

    def __init__(self, argument, K, weight=1.0, *, validated: bool = False):
        super().__init__(argument, K, weight, validated=validated)

    @property
    def K(self):
        return self.M


class GraphQuadratic(QuadraticForm):
    """``w fᵀLf`` (``w tr(FᵀLF)``): the graph (manifold) regularizer [000 eq. 7]; a
    :class:`QuadraticForm` with ``M = L`` (also ``.L``)."""

    name = "graph_quadratic"
    _matrix_name = "L"

    def __init__(self, argument, L, weight=1.0, *, validated: bool = False):
        super().__init__(argument, L, weight, validated=validated)

    @property
    def L(self):
        return self.M


def _laplacian_factor(M, rtol: float = 1e-10):
    """``B`` (sparse) with ``BᵀB = M`` for M symmetric with ``M_ij ≤ 0`` (i ≠ j) and row sums
    ``≥ 0``: ``zᵀMz = Σ_{i<j} (−M_ij)(z_i − z_j)² + Σ_i (Σ_j M_ij) z_i²``; False otherwise."""
    if not sp.issparse(M):
        off = M - np.diag(np.diag(M))
        if off.size and off.max() > rtol * max(1.0, float(np.abs(M).max())):
            return False  # a positive off-diagonal entry (e.g. a kernel): not Laplacian-like
    S = sp.csr_matrix(M)
    n = S.shape[0]
    scale = max(1.0, float(abs(S).max()) if S.nnz else 0.0)
    upper = sp.triu(S, k=1).tocoo()
    if upper.nnz and upper.data.max() > rtol * scale:
        return False
    row_sums = np.asarray(S.sum(axis=1)).ravel()
    if row_sums.size and row_sums.min() < -rtol * scale:
        return False
    keep = upper.data < 0
    edges = incidence_matrix(upper.row[keep], upper.col[keep], n, np.sqrt(-upper.data[keep]))
    # Round-off leaves row sums of ±1e-16 on a Laplacian: those are zero, not ground edges.
    diag = np.sqrt(np.where(row_sums > 1e-12 * scale, row_sums, 0.0))
    nz = np.flatnonzero(diag > 0)
    ground = sp.csr_matrix((diag[nz], (np.arange(len(nz)), nz)), shape=(len(nz), n))
    return sp.vstack([edges, ground]).tocsr()
