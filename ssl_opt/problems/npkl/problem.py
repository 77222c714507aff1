r"""NPKL: non-parametric kernel learning from pairwise constraints [003], docs/design.md §4.4.

Over symmetric ``Z`` (n×n)::

    min_{Z ⪰ 0}  Ω(Z) = tr(ΔZ) + C Σ_{{i,j}∈T} ℓ(T_ij Z_ij)                     [003 eq. 1]

with ``Δ = (1+δ)I − D^{-1/2} S D^{-1/2}`` (``⪰ δI`` for a non-negative similarity S), each
unordered pair listed once, ``T_ij = +1`` (must-link) or ``−1`` (cannot-link), and ℓ a
:class:`~ssl_opt.components.MarginLoss` with a conjugate: the paper's hinge ``max(0, 1−t)``,
squared hinge ``max(0, 1−t)²`` and square ``(1−t)²`` [003 §3.2.2], the Huber hinge, or the
logistic loss ``log(1 + e^{−t})`` (its conjugate is an entropy, so its reference is an
exponential-cone SDP; smooth, so its certificate is the one of the smooth losses).

Optimality (a convex program over the PSD cone). With pair multipliers ``y_p = −C ℓ'(t_p)``
(``t_p = T_p Z_ij``; for a non-smooth ℓ any ``y_p`` in ``−C ∂ℓ(t_p)``) the gradient matrix
is::

    G = Δ − Σ_p y_p T_p (E_ij + E_ji)/2

and ``Z`` is optimal iff ``G ⪰ 0``, ``Z ⪰ 0`` and ``⟨G, Z⟩ = 0``. For any feasible ``Z`` these
give a bound on the suboptimality, from convexity and ``tr Z* ≤ Ω(Z)/λ_min(Δ)``::

    Ω(Z) − Ω* ≤ ⟨G, Z⟩ + max(0, −λ_min(G)) · Ω(Z) / λ_min(Δ).

The Lagrange dual (the form the reference solves) is ``max Σ_p −C ℓ*(−y_p/C)`` subject to
``G(y) ⪰ 0``, with ℓ* the loss's conjugate; its PSD multiplier is ``Z``.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property

import numpy as np
import scipy.sparse as sp
from scipy.optimize import lsq_linear
from scipy.sparse.linalg import LinearOperator

from ssl_opt._validation import (
    as_float_matrix,
    check_positive,
    check_square,
    check_symmetric,
    choice,
    reject_complex,
)
from ssl_opt.builders.laplacian import laplacian, validated_adjacency
from ssl_opt.components import MarginLoss, get_margin_loss
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.modeling.conic import conic_residuals
from ssl_opt.modeling.expressions import Variable, entries
from ssl_opt.modeling.model import Model
from ssl_opt.modeling.terms import PSD, MarginLossTerm, TraceProduct
from ssl_opt.numerics import eigen
from ssl_opt.numerics.eigen import extreme_eigenvalues, lanczos
from ssl_opt.numerics.psd import PSDPoint
from ssl_opt.problems.base import Structure
from ssl_opt.solvers import Option

#: What NPKL needs from its loss: the conjugate (the reference solves the Lagrange dual; any
#: conjugate, quadratic or not, e.g. the logistic's entropy) and subgradients (the pair
#: multipliers of the certificate; a smooth loss has them from φ').
LOSS_NEEDS = ("conjugate", "subgradient")
#: A margin within this distance of a kink of a non-smooth loss is at the kink (its
#: multiplier is free in −C ∂ℓ, [0, C] for the hinge).
HINGE_KINK_TOL = 1e-6
#: Largest least-squares system (nonzeros) fitted for hinge kink multipliers from Z alone.
KINK_FIT_MAX_NNZ = 5_000_000


def npkl_regularizer(S, delta: float) -> sp.csr_matrix:
    """``Δ = (1+δ)I − D^{-1/2} S D^{-1/2} = L_sym + δI`` (isolated points: ``Δ_ii = 1+δ``)."""
    S = validated_adjacency(S, "S")
    if S.shape[0] == 0:
        raise InvalidInputError("S is empty (0x0): NPKL needs at least two points.")
    return sp.csr_matrix(laplacian(S, normalized=True) + delta * sp.identity(S.shape[0]))


def check_pairs(pairs, labels, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Validated ``(pairs, labels)``: an (m, 2) int array with ``i < j`` per row, and ±1 floats."""
    reject_complex(pairs, "pairs")
    reject_complex(labels, "labels")
    try:
        P = np.asarray(pairs)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"pairs must be an (m, 2) integer array: {exc}") from exc
    if P.ndim != 2 or P.shape[1] != 2 or P.shape[0] == 0:
        raise InvalidInputError(
            f"pairs must be a non-empty (m, 2) array of point indices, got shape {P.shape}.")
    if not np.issubdtype(P.dtype, np.integer):
        if not (np.issubdtype(P.dtype, np.floating) and np.all(np.isfinite(P))
                and np.all(P == np.round(P))):
            raise InvalidInputError("pairs must hold integer point indices.")
    P = P.astype(np.int64)
    if P.min() < 0 or P.max() >= n:
        raise InvalidInputError(
            f"pairs must index points 0..{n - 1}; found indices {P.min()}..{P.max()}.")
    if np.any(P[:, 0] == P[:, 1]):
        raise InvalidInputError("pairs must join two distinct points; found a pair (i, i).")
    P = np.sort(P, axis=1)
    if np.unique(P[:, 0] * n + P[:, 1]).size != P.shape[0]:
        raise InvalidInputError(
            "pairs must list each unordered pair {i, j} once; remove the duplicates.")
    try:
        T = np.array(labels, dtype=np.float64)  # a copy: the problem freezes it
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"labels must be ±1 (must-link / cannot-link): {exc}") from exc
    if T.shape != (P.shape[0],):
        raise InvalidInputError(
            f"labels must have one ±1 entry per pair: shape ({P.shape[0]},), got {T.shape}.")
    if not np.all(np.isin(T, (-1.0, 1.0))):
        raise InvalidInputError("labels must be +1 (must-link) or -1 (cannot-link).")
    return P, T


class NPKL(Model):
    """Non-parametric kernel learning [003 eq. 1] (see the module docstring for the maths).

    A named model (docs/design.md §2a): ``TraceProduct(Z, Δ) + MarginLossTerm(entries(Z, i, j),
    T, ℓ, C)`` subject to ``PSD(Z)``, structure tag ``npkl/<loss>``. Its certificate is the
    conic form of the model's optimality conditions (module docstring: ``G ⪰ 0``, ``Z ⪰ 0``,
    ``⟨G, Z⟩ = 0`` and the bound they give), computed without forming what a factor of ``Z``
    makes unnecessary; ``npkl.add(term)`` is a variant with the model's own certificate.

    Parameters
    ----------
    S : (n, n) array or sparse matrix
        Symmetric non-negative similarities with zero diagonal (a kNN graph typically).
    pairs : (m, 2) int array
        Unordered pairs of distinct points, each listed once.
    labels : (m,) array of ±1
        ``+1`` must-link, ``−1`` cannot-link.
    C : float > 0
    loss : str or MarginLoss
        ``"square"`` (or ``"squared"``), ``"squared_hinge"``, ``"hinge"``, ``"huber"``,
        ``"logistic"``, or any :class:`~ssl_opt.components.MarginLoss` offering ``conjugate``
        and ``subgradient``; stored as the object.
    delta : float > 0, optional
        Regularization of Δ; ``C/2`` by default as in [003 §4.2].

    Variables: ``Z`` (n, n). Solvers may also return the pair multipliers ``y`` (m,), and BCD
    the factor ``V``, the boundary kernel ``Z_BD`` and the embedding ``Phi`` (``Z = ΦΦᵀ``).
    """

    family = "npkl"
    reads_multipliers = False  # the pair multipliers are read from x["y"], not info
    kkt_options = {"multipliers": Option(
        "auto", "'auto': the solution's pair multipliers y when it has them; 'recover': from "
        "Z alone", choice("auto", "recover"))}
    residual_tolerances = {"gradient_psd": "stationarity", "kernel_psd": "feasibility",
                           "complementarity": "stationarity",
                           "suboptimality_bound": "stationarity", "symmetry": "feasibility",
                           "pair_multipliers": "stationarity"}

    def __init__(self, S, pairs, labels, C, loss: str | MarginLoss = "square", delta=None):
        C = check_positive(C, "C")
        delta = C / 2.0 if delta is None else check_positive(delta, "delta")
        Delta = npkl_regularizer(S, delta)  # validates S
        self._setup(Delta, pairs, labels, C, loss, delta, lambda_min_bound=delta)

    @classmethod
    def from_regularizer(cls, Delta, pairs, labels, C, loss: str | MarginLoss = "square",
                         lambda_min_bound: float | None = None) -> NPKL:
        """The problem with a given symmetric positive definite ``Δ`` (dense or sparse), e.g.
        the boundary kernel problem of :class:`~ssl_opt.problems.npkl.boundary.BoundaryReduction`.
        ``lambda_min_bound``: a positive lower bound on ``λ_min(Δ)`` (computed when omitted)."""
        Delta = as_float_matrix(Delta, "Delta")
        if check_square(Delta, "Delta") == 0:
            raise InvalidInputError("Delta is empty (0x0): NPKL needs at least two points.")
        check_symmetric(Delta, "Delta")
        if lambda_min_bound is None:
            lambda_min_bound = extreme_eigenvalues(Delta, eigen.DENSE_EIG_MAX)[0]
            if not lambda_min_bound > 0:
                raise InvalidInputError(
                    f"Delta must be positive definite; its smallest eigenvalue is "
                    f"{lambda_min_bound:.3g}.")
        problem = cls.__new__(cls)
        problem._setup(Delta, pairs, labels, check_positive(C, "C"), loss, None,
                       check_positive(lambda_min_bound, "lambda_min_bound"))
        return problem

    def _setup(self, Delta, pairs, labels, C, loss, delta, lambda_min_bound) -> None:
        loss = get_margin_loss(loss)
        lacking = [c for c in LOSS_NEEDS if c not in loss.capabilities]
        if lacking:
            raise InvalidInputError(
                f"loss must offer {' and '.join(LOSS_NEEDS)} for NPKL (its reference solves "
                f"the dual); {loss!r} lacks {', '.join(lacking)}.")
        n = Delta.shape[0]
        self.pairs, self.labels = check_pairs(pairs, labels, n)
        self.Delta = Delta if sp.issparse(Delta) else np.array(Delta)
        if sp.issparse(self.Delta):
            self.Delta = sp.csr_matrix(self.Delta)
            self.Delta.sum_duplicates()
        self.C = C
        self.loss: MarginLoss = loss
        self.delta = delta
        self.lambda_min_bound = float(lambda_min_bound)
        self.n = n
        self.m = self.pairs.shape[0]
        Z = Variable("Z", (n, n))
        pair_entries = entries(Z, self.pairs[:, 0], self.pairs[:, 1])
        super().__init__([TraceProduct(Z, self.Delta), MarginLossTerm(
            pair_entries, self.labels, loss, weight=C)], [PSD(Z)], prediction=Z, name="npkl")

    # ------------------------------------------------------------------ declaration
    @property
    def structure(self) -> Structure:
        sparse = sp.issparse(self.Delta)
        nnz = int(self.Delta.nnz) if sparse else self.n * self.n
        sizes = {"n": self.n, "l": int(self.constrained_points.size), "m": self.m,
                 "nnz_Delta": nnz, "variables": self.n * (self.n + 1) // 2}
        return Structure(self.family, self.loss.name, True, self.loss.smooth, "SDP", sizes,
                         sparse)

    @property
    def unique_prediction(self) -> bool:
        return False  # tr(ΔZ) is linear and ℓ touches m entries: Ω is not strictly convex

    @cached_property
    def constrained_points(self) -> np.ndarray:
        """Sorted indices of the points in at least one pair (the boundary set L of [003 §3])."""
        return np.unique(self.pairs)

    def boundary_reduction(self):
        """The reduction of [003 Prop. 1] to the constrained points (computed once)."""
        from ssl_opt.problems.npkl.boundary import BoundaryReduction

        cached = getattr(self, "_reduction", None)
        if cached is None:
            cached = BoundaryReduction(self)
            object.__setattr__(self, "_reduction", cached)
        return cached

    # ------------------------------------------------------------------ evaluation
    def margins(self, Z: np.ndarray) -> np.ndarray:
        """``t_p = T_p Z_ij`` for every pair."""
        return self.labels * Z[self.pairs[:, 0], self.pairs[:, 1]]

    def gradient_matrix(self, y: np.ndarray):
        """``G = Δ − Σ_p y_p T_p (E_ij + E_ji)/2`` (sparse when Δ is)."""
        w = -0.5 * y * self.labels
        i, j = self.pairs[:, 0], self.pairs[:, 1]
        return self._delta_plus_entries(np.concatenate([w, w]), np.concatenate([i, j]),
                                        np.concatenate([j, i]))

    def _delta_plus_entries(self, values: np.ndarray, rows: np.ndarray, cols: np.ndarray):
        """``Δ + Σ_k values_k E_{rows_k, cols_k}`` (sparse when Δ is)."""
        E = sp.csr_matrix((values, (rows, cols)), shape=(self.n, self.n))
        if sp.issparse(self.Delta):
            return sp.csr_matrix(self.Delta + E)
        return self.Delta + E.toarray()

    def gradient(self, x) -> dict[str, np.ndarray]:
        """``∂Ω/∂Z = Δ + C Σ_p ℓ'(t_p) T_p E_ij`` (dense), with ``y_p = −C ℓ'(t_p)`` of
        :meth:`pair_multipliers`: ``Ω`` reads each pair at its entry ``Z_ij`` (``i < j``) only,
        so this is the gradient along any direction, symmetric or not; along symmetric ones it
        acts as :meth:`gradient_matrix` (its symmetric part). Smooth losses only."""
        if not self.loss.smooth:
            raise NotImplementedError(
                f"NPKL with the {self.loss.name!r} loss is not smooth: it has no gradient (its "
                "certificate uses gradient_matrix with subgradient multipliers).")
        Z = self.unpack(x)["Z"]
        y = self.pair_multipliers(Z)
        G = self._delta_plus_entries(-y * self.labels, self.pairs[:, 0], self.pairs[:, 1])
        return {"Z": G.toarray() if sp.issparse(G) else G}

    def pair_multipliers(self, Z: np.ndarray) -> np.ndarray:
        """``y_p = −C ℓ'(t_p)`` from ``Z`` alone. For a non-smooth ℓ, ``y = −C ∂ℓ(t)``; margins
        at a kink (within ``HINGE_KINK_TOL``, e.g. ``|t − 1|`` for the hinge) get the ``y`` in
        that interval (``[0, C]`` for the hinge) that best satisfies ``GZ = 0`` in least squares
        (exact at an optimum, where ``G ⪰ 0, Z ⪰ 0, ⟨G, Z⟩ = 0`` give ``GZ = 0``)."""
        return self._multipliers(PSDPoint(self.n, Z=np.asarray(Z)))

    def _multipliers(self, kernel: PSDPoint) -> np.ndarray:
        """:meth:`pair_multipliers` for a kernel given densely or as a factor."""
        t = self.labels * kernel.entries(self.pairs[:, 0], self.pairs[:, 1])
        if self.loss.smooth:
            return -self.C * self.loss.derivative(t)
        lo, hi = self.loss.subgradient_interval(t, kink_tol=HINGE_KINK_TOL)
        lower, upper = 0.0 - self.C * hi, 0.0 - self.C * lo  # 0.0 −: no −0.0 multipliers
        y = upper.copy()
        kink = np.flatnonzero(upper > lower)
        if kink.size:
            y[kink] = self._fit_kink_multipliers(kernel, y, kink, lower[kink], upper[kink])
        return y

    def _fit_kink_multipliers(self, kernel: PSDPoint, y, kink, lower, upper) -> np.ndarray:
        i, j = self.pairs[kink, 0], self.pairs[kink, 1]
        rows = np.unique(np.concatenate([i, j]))
        k, n = kink.size, self.n
        if 2 * k * n > KINK_FIT_MAX_NNZ:
            return 0.5 * (lower + upper)
        y0 = y.copy()
        y0[kink] = 0.0
        G0 = self.gradient_matrix(y0)
        R0 = kernel.left_product(G0[rows])  # residual rows of G(y) Z before the kink terms
        pos = np.searchsorted(rows, np.concatenate([i, j]))
        # y_p enters row i as −T_p/2 · Z[j, :] and row j as −T_p/2 · Z[i, :].
        src = np.concatenate([j, i])
        coef = np.concatenate([-0.5 * self.labels[kink]] * 2)
        entries = (pos[:, None] * n + np.arange(n)[None, :]).ravel()
        vals = (coef[:, None] * kernel.rows(src)).ravel()
        cols = np.repeat(np.concatenate([np.arange(k)] * 2), n)
        A = sp.csr_matrix((vals, (entries, cols)), shape=(rows.size * n, k))
        if A.shape[0] * k <= KINK_FIT_MAX_NNZ:  # small: dense BVLS, exact active set
            fit = lsq_linear(A.toarray(), -R0.ravel(), bounds=(lower, upper), method="bvls",
                             tol=1e-14)
        else:
            fit = lsq_linear(A, -R0.ravel(), bounds=(lower, upper), method="trf", tol=1e-12,
                             lsmr_tol="auto", max_iter=2000)
        return fit.x

    def _kernel_of(self, x) -> PSDPoint:
        """The point's kernel: ``x["Z"]`` (with ``x["Phi"]`` when it carries ``Z = ΦΦᵀ``'s
        factor, checked against Z before use), or ``x["Phi"]`` alone (Z never formed)."""
        values = getattr(x, "x", x)
        Phi = None
        if isinstance(values, Mapping) and values.get("Phi") is not None:
            Phi = np.asarray(values["Phi"], dtype=np.float64)
            if Phi.ndim != 2 or Phi.shape[0] != self.n:
                raise InvalidInputError(
                    f"x['Phi'] must be the factor of Z = ΦΦᵀ, an ({self.n}, r) array; got "
                    f"shape {Phi.shape}.")
            if "Z" not in values:
                return PSDPoint(self.n, Phi=Phi)
        return PSDPoint(self.n, Z=self.unpack(x)["Z"], Phi=Phi)

    def _gradient_extremes(self, G, y: np.ndarray) -> tuple[float, float]:
        """``(λ_min(G), λ_max(G))``: :func:`extreme_eigenvalues` of ``G`` (sparse Lanczos when
        Δ is sparse); Lanczos on ``x ↦ Δx + Wx`` when Δ is dense but has a cheaper product
        (the boundary problem's ``Δ̃x`` from the sparse blocks and the factor of ``Δ_UU``,
        :meth:`~ssl_opt.problems.npkl.boundary.BoundaryReduction.schur_times`)."""
        delta_times = getattr(self, "_delta_times", None)
        if self.n <= eigen.DENSE_EIG_MAX or sp.issparse(G) or delta_times is None:
            return extreme_eigenvalues(G, eigen.DENSE_EIG_MAX)
        i, j = self.pairs[:, 0], self.pairs[:, 1]
        w = -0.5 * y * self.labels
        W = sp.csr_matrix((np.concatenate([w, w]), (np.concatenate([i, j]),
                                                     np.concatenate([j, i]))),
                          shape=(self.n, self.n))
        op = LinearOperator((self.n, self.n), dtype=np.float64,
                            matvec=lambda v: delta_times(v.ravel()) + W @ v.ravel())
        return lanczos(op, "SA"), lanczos(op, "LA")

    def _kkt(self, x, multipliers: str) -> dict[str, float]:
        """The conic certificate of the core (:mod:`ssl_opt.modeling.conic`: ``gradient_psd``,
        ``kernel_psd``, ``complementarity``, ``symmetry`` and ``suboptimality_bound`` with
        ``tr Z* ≤ Ω(Z)/λ_min(Δ)``) at ``G`` of the pair multipliers ``y``, and

        * non-smooth ℓ only, ``pair_multipliers``: ``max_p`` of the loss's
          :meth:`~ssl_opt.components.MarginLoss.subgradient_residual` of ``−y_p/C ∈ ∂ℓ(t_p)``;
          for the hinge (``y ∈ [0, C]``, ``y_p = C`` when ``t_p < 1`` and ``0`` when
          ``t_p > 1``) that is ``max_p (y_p (t_p−1)₊ + (C−y_p)(1−t_p)₊) / C`` plus any
          distance of y outside [0, C].

        ``y`` is the solver's (``x["y"]``) when given and ``multipliers="auto"``, otherwise
        recovered from ``Z`` alone (:meth:`pair_multipliers`). ``Z`` may also be given as a
        factor, ``x = {"Phi": Φ}`` with ``Z = ΦΦᵀ`` (n×r), and is then never formed. Above
        :data:`~ssl_opt.numerics.eigen.DENSE_EIG_MAX` points no eigenvalue needs a product
        with a dense n×n matrix when Δ is sparse and ``x`` carries ``Φ``
        (:class:`~ssl_opt.numerics.psd.PSDPoint`).
        """
        kernel = self._kernel_of(x)
        if not kernel.finite():
            return {"gradient_psd": float("inf")}
        values = getattr(x, "x", x)
        if multipliers == "auto" and "y" in values:
            y = np.asarray(values["y"], dtype=np.float64).reshape(self.m)
        else:
            y = self._multipliers(kernel)
        kernel, symmetry = kernel.symmetric_part()
        G = self.gradient_matrix(y)
        t = self.labels * kernel.entries(self.pairs[:, 0], self.pairs[:, 1])
        omega = kernel.inner(self.Delta) + self.C * float(np.sum(self.loss.value(t)))
        out = conic_residuals(kernel, G, self._gradient_extremes(G, y), omega,
                              trace_bound=max(omega, 0.0) / self.lambda_min_bound)
        out["symmetry"] = symmetry
        if not self.loss.smooth:
            residual = self.loss.subgradient_residual(t, -y / self.C)
            out["pair_multipliers"] = float(np.max(residual))
        return out
