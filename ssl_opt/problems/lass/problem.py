r"""LASS: the Laplacian assignment model [002], docs/design.md §4.3.

``Z ∈ R^{N×K}`` (N items, K categories)::

    min_Z  λ tr(ZᵀLZ) − tr(GᵀZ)   s.t.   Z 1_K = 1_N,  Z ≥ 0            [002 eq. 1]

``L = D − W`` from the item–item similarity ``W`` (sparse, symmetric, non-negative), ``G`` the
item–category similarities (negative entries allowed). KKT [002 eq. 4]::

    2λLZ − G − ν1ᵀ − Ψ = 0,   Z1 = 1,   Z ≥ 0,   Ψ ≥ 0,   Ψ ∘ Z = 0.

Given ``Z`` alone the multipliers are recovered per row as in [002 §2.4, eqs. 5–6]: with
``r = (2λLZ − G)_i`` and ``z = Z_i``, ``(ν_i, ψ_i)`` minimize ``‖r − ν1 − ψ‖² + ‖z∘ψ‖²``, in
closed form ``ν = Σ_k w_k r_k / Σ_k w_k`` with ``w_k = z_k²/(1 + z_k²)`` and
``ψ_k = (r_k − ν)/(1 + z_k²)``. At a solution this is exact (``ψ_k = 0`` where ``z_k > 0``).

LASS is a named model (docs/design.md §2a) and its certificate is the model's, from its terms
(:mod:`ssl_opt.modeling.stationarity`): ``stationarity`` is the distance of ``−(2λLZ − G)`` from
the rows ``ν1 + w`` of the simplex's normal cone with the complementarity ``|w_k z_k|``
measured (at most the kink tolerance times the gradient's scale), as the KKT conditions above
ask with ``w = −ψ``; ``feasibility`` the constraint's violation, whose two parts are the
readable ``row_sums`` and ``nonnegativity``.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from ssl_opt._validation import (
    as_float_array,
    as_float_matrix,
    check_positive,
    check_square,
    warn_if_badly_scaled,
)
from ssl_opt.builders.laplacian import laplacian
from ssl_opt.components.simplex import project_rows_to_simplex
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.modeling.expressions import Variable
from ssl_opt.modeling.model import Model
from ssl_opt.modeling.terms import GraphQuadratic, LinearScore, SimplexRows
from ssl_opt.problems.base import Structure


def lp_assignment(G: np.ndarray) -> np.ndarray:
    """``argmax_{z ∈ simplex} gᵀz`` per row: uniform over the row's most similar categories
    (LASS for an item without neighbours, [002 §2.1] with λ = 0)."""
    top = np.isclose(G, G.max(axis=1, keepdims=True), rtol=0, atol=1e-12)
    return top / top.sum(axis=1, keepdims=True)


class LASS(Model):
    """Laplacian assignment: ``min λ tr(ZᵀLZ) − tr(GᵀZ)`` over row-stochastic ``Z ≥ 0``.

    A named model (docs/design.md §2a): the model ``GraphQuadratic(Z, L, λ) + LinearScore(Z,
    G)`` subject to ``SimplexRows(Z)``: every solver of models applies to it (``solve`` picks
    one, e.g. ``fista`` or ``admm-split``); its structure tag is ``lass/qp``, its certificate
    the model's with the constraint's violation split into ``row_sums`` and
    ``nonnegativity`` (module docstring).

    Parameters
    ----------
    W : (N, N) sparse or dense array
        Symmetric non-negative item–item similarities with zero diagonal.
    G : (N, K) array or sparse matrix
        Item–category similarities (any sign; 0 means no information).
    lam : float > 0
        Weight λ of the Laplacian term.

    Variables: ``Z`` (N, K).
    """

    family = "lass"
    residual_tolerances = {**Model.residual_tolerances, "row_sums": "feasibility",
                           "nonnegativity": "feasibility"}

    def __init__(self, W, G, lam):
        L = laplacian(W)  # validates W: square, symmetric, non-negative, zero diagonal
        N = check_square(L, "W")
        if N == 0:
            raise InvalidInputError("W is empty (0x0): LASS needs at least one item.")
        G = as_float_matrix(G, "G")
        if G.ndim != 2 or G.shape[0] != N:
            raise InvalidInputError(
                f"G must have one row per item: shape ({N}, K) to match W, got {G.shape}."
            )
        if G.shape[1] < 1:
            raise InvalidInputError("G must have at least one category column (K >= 1).")
        self.L = sp.csr_matrix(L)
        self.W = sp.csr_matrix(sp.diags(L.diagonal()) - L)
        self.G = G.toarray() if sp.issparse(G) else np.array(G)
        self.lam = check_positive(lam, "lam")
        self.N, self.K = self.G.shape
        # The certificate's residuals are relative to max(1, max|G|, max|2λLZ|).
        warn_if_badly_scaled(
            "LASS", {"max|G|": float(np.abs(self.G).max(initial=0.0)),
                     "2·lam·max(degree)": 2.0 * self.lam
                     * float(self.L.diagonal().max(initial=0.0))},
            "Rescale G and lam by the same factor (Z is unchanged) so that both are of order 1.")
        Z = Variable("Z", (self.N, self.K))
        super().__init__([GraphQuadratic(Z, self.L, self.lam), LinearScore(Z, self.G)],
                         [SimplexRows(Z)], prediction=Z, name="lass")

    # ------------------------------------------------------------------ declaration
    @property
    def structure(self) -> Structure:
        sizes = {"n": self.N, "N": self.N, "K": self.K, "nnz_W": int(self.W.nnz),
                 "variables": self.N * self.K}
        return Structure(self.family, "qp", True, True, "QP", sizes, True)

    @property
    def unique_prediction(self) -> bool:
        # Unique when every category has an item with a zero assignment [002 Cor. 2.2];
        # not guaranteed in general (Th. 2.1).
        return False

    def _assignments(self, Z) -> np.ndarray:
        """``Z`` as a real, finite (N, K) array; an error naming ``Z`` otherwise."""
        Z = as_float_array(Z, "Z")
        if Z.shape != (self.N, self.K):
            raise InvalidInputError(f"Z must have shape {(self.N, self.K)}, got {Z.shape}.")
        if not np.all(np.isfinite(Z)):
            raise InvalidInputError("Z contains NaN or inf; pass the finite assignments of a "
                                    "solution (solution.x['Z']).")
        return Z

    def multipliers(self, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(ν, Ψ)`` recovered from ``Z`` alone [002 §2.4] (closed form, module docstring)."""
        Z = self._assignments(Z)
        R = 2.0 * self.lam * (self.L @ Z) - self.G
        z2 = Z * Z
        w = z2 / (1.0 + z2)
        wsum = w.sum(axis=1)
        nu = np.where(wsum > 0, (w * R).sum(axis=1) / np.where(wsum > 0, wsum, 1.0),
                      R.min(axis=1))
        return nu, (R - nu[:, None]) / (1.0 + z2)

    def _kkt(self, x, **options) -> dict[str, float]:
        """The model's certificate (``stationarity``, ``feasibility``) and the two parts of
        the feasibility, ``row_sums`` ``max|Z1 − 1|`` and ``nonnegativity``
        ``max(0, −min Z)`` (:meth:`SimplexRows.violations
        <ssl_opt.modeling.terms.SimplexRows.violations>`)."""
        out = super()._kkt(x, **options)
        out.update(self.constraints[0].violations(self.unpack(x)["Z"]))
        return out

    # ------------------------------------------------------------------ structure
    @cached_property
    def components(self) -> tuple[int, np.ndarray]:
        """``(count, labels)`` of the connected components of the item graph."""
        return connected_components(self.W, directed=False)

    def split(self) -> list[tuple[np.ndarray, LASS]]:
        """Independent subproblems, one per connected component [002 Remark 2.3]."""
        count, labels = self.components
        if count == 1:
            return [(np.arange(self.N), self)]
        parts = []
        for c in range(count):
            idx = np.flatnonzero(labels == c)
            parts.append((idx, LASS(self.W[idx][:, idx], self.G[idx], self.lam)))
        return parts

    def out_of_sample(self, Z: np.ndarray, W_new, G_new) -> np.ndarray:
        """Assignments of M new items [002 §4]: ``z = Π_simplex(z̄ + g/(2λd))`` with ``d`` the
        sum of the new item's similarities to training items and ``z̄ = W_new Z / d``.

        ``W_new`` (M, N) non-negative, ``G_new`` (M, K). An item with no training neighbour
        (``d = 0``) gets the linear program's solution: uniform over its most similar
        categories.
        """
        Z = self._assignments(Z)
        W_new = as_float_matrix(W_new, "W_new")
        G_new = as_float_matrix(G_new, "G_new")
        G_new = G_new.toarray() if sp.issparse(G_new) else G_new
        M = W_new.shape[0]
        if W_new.shape != (M, self.N) or G_new.shape != (M, self.K):
            raise InvalidInputError(
                f"W_new must be (M, {self.N}) and G_new (M, {self.K}); got {W_new.shape} and "
                f"{G_new.shape}."
            )
        if (W_new.data if sp.issparse(W_new) else W_new).min(initial=0.0) < 0:
            raise InvalidInputError("W_new must be non-negative (similarities to training items).")
        d = np.asarray(W_new.sum(axis=1)).ravel()
        WZ = np.asarray(W_new @ Z)
        has = d > 0
        out = np.empty((M, self.K))
        safe = np.where(has, d, 1.0)[:, None]
        out[has] = project_rows_to_simplex(
            (WZ / safe + G_new / (2.0 * self.lam * safe))[has])
        if np.any(~has):
            out[~has] = lp_assignment(G_new[~has])
        return out
