r"""The groups of a sum of norms and the problems built on them [004 eq. 10], docs/design.md §4.5.

A problem of the form ::

    φ(z) = f(z) + Σ_i w_i ‖g_i(z)‖₂,     g(z) = Jz − h   (m groups of k values, w_i ≥ 0)

over a flat variable ``z ∈ Rⁿ`` is described to the IRLS plugin (its steps and its stopping
test, ``plugins/ere/stopping.py``) by

* a :class:`GroupOperator` — the affine map ``g``, its weighted linear part and adjoint, the
  per-coordinate magnitude ``Σ_i w_i ‖J_i e_j‖`` the norms' subgradients can reach, and how the
  multipliers ``U`` (m, k) are stored in a point. :class:`MatrixGroups` holds J as a sparse
  matrix (:class:`~ssl_opt.problems.SumOfNorms`); robust ERE applies J in structured form
  (graph incidence and X, :class:`~ssl_opt.problems.ere.problem.EREGroups`);
* a problem that satisfies :class:`SumOfNormsForm` — the smooth part f, the groups, and the
  map between z and the problem's named variables.

The formulas shared by every such problem are written once here: the relative residual scale,
the smoothed norms ``√(‖g_i‖² + δ)`` [004 eq. 11] and their multipliers ``g_i/√(‖g_i‖² + δ)``,
and the stationarity residual of the smoothed problem [004 eq. 12].
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from functools import cached_property
from typing import Protocol

import numpy as np
import scipy.sparse as sp

from ssl_opt.exceptions import InvalidInputError


class GroupOperator(ABC):
    r"""``g(z) = Jz − h`` in ``m`` groups of ``k = group_size`` values over ``z ∈ Rⁿ``
    (``n = size``), with weights ``w_i ≥ 0``; ``J_i`` are the k rows of J of group i.

    ``multiplier_blocks`` names how a point stores the multipliers ``U`` (m, k): consecutive
    blocks of groups, ``(name, number of groups)`` in group order (``(("U", m),)`` for a plain
    sum of norms; robust ERE stores its edge and point groups apart).
    """

    weights: np.ndarray
    group_size: int
    size: int
    multiplier_blocks: tuple[tuple[str, int], ...]

    @property
    def n_groups(self) -> int:
        return int(self.weights.size)

    @abstractmethod
    def values(self, z: np.ndarray) -> np.ndarray:
        """``g(z)`` as an (m, k) array: row i is ``g_i(z) = J_i z − h_i``."""

    @abstractmethod
    def forward(self, v: np.ndarray) -> np.ndarray:
        """``(w_i J_i v)_i`` as an (m, k) array (the weighted linear part)."""

    @abstractmethod
    def adjoint(self, U: np.ndarray) -> np.ndarray:
        """``Σ_i w_i J_iᵀ U_i`` (n,) for multipliers ``U`` (m, k): the transpose of
        :meth:`forward`."""

    @property
    @abstractmethod
    def norm_scale(self) -> np.ndarray:
        """``Σ_i w_i ‖J_i e_j‖₂`` per coordinate j: the largest magnitude coordinate j of
        ``Σ_i w_i J_iᵀ u_i`` reaches over the unit balls ``‖u_i‖ ≤ 1``."""

    @property
    def value_scale(self) -> float:
        """σ, the scale of the group values (the floor of the kink tolerance's scale and the
        IRLS start's); 1 unless an implementation knows better."""
        return 1.0

    def multipliers(self, U: np.ndarray) -> dict[str, np.ndarray]:
        """``U`` (m, k) split into the named blocks a point stores."""
        out, start = {}, 0
        for name, rows in self.multiplier_blocks:
            out[name] = U[start:start + rows]
            start += rows
        return out

    def read_multipliers(self, values) -> np.ndarray | None:
        """The multipliers a point carries (every block of ``multiplier_blocks``) as one
        (m, k) array, or None when it carries none; malformed blocks are a clear error."""
        if not hasattr(values, "get") or any(values.get(name) is None
                                             for name, _ in self.multiplier_blocks):
            return None
        return np.vstack([multiplier_block(values[name], rows, self.group_size, name)
                          for name, rows in self.multiplier_blocks])


class MatrixGroups(GroupOperator):
    """J = G as a sparse (m·k × n) matrix, h (m·k,), weights w (m,): the groups of
    :class:`~ssl_opt.problems.SumOfNorms` (arguments already validated there)."""

    def __init__(self, G: sp.csr_matrix, h: np.ndarray, group_size: int, weights: np.ndarray):
        self.G, self.h, self.weights = G, h, weights
        self.group_size = int(group_size)
        self.size = int(G.shape[1])
        self.multiplier_blocks = (("U", int(weights.size)),)

    def values(self, z: np.ndarray) -> np.ndarray:
        return (self.G @ z - self.h).reshape(self.n_groups, self.group_size)

    def forward(self, v: np.ndarray) -> np.ndarray:
        return self.weights[:, None] * (self.G @ v).reshape(self.n_groups, self.group_size)

    def adjoint(self, U: np.ndarray) -> np.ndarray:
        """``Gᵀ vec(w ∘ U)``."""
        return self.G.T @ (self.weights[:, None] * U).ravel()

    @cached_property
    def norm_scale(self) -> np.ndarray:
        m, k = self.n_groups, self.group_size
        G2 = self.G.multiply(self.G).tocsc()
        group = np.repeat(np.arange(m), k)
        agg = sp.csr_matrix((np.ones(m * k), (group, np.arange(m * k))), shape=(m, m * k))
        col_norms = (agg @ G2).sqrt()  # (m, n): ‖J_i e_j‖
        return np.asarray(col_norms.T @ self.weights).ravel()

    @cached_property
    def value_scale(self) -> float:
        """``‖h‖_∞`` (1 when h = 0)."""
        hmax = float(np.abs(self.h).max(initial=0.0))
        return hmax if hmax > 0 else 1.0


class SumOfNormsForm(Protocol):
    """A problem ``φ(z) = f(z) + Σ_i w_i ‖g_i(z)‖₂`` in a flat variable z: everything the
    IRLS plugin uses of it (the problem's certificate is its model's, from the terms)."""

    groups: GroupOperator

    def smooth_value(self, z: np.ndarray) -> float:
        """``f(z)``."""

    def smooth_gradient_vector(self, z: np.ndarray) -> np.ndarray:
        """``∇f(z)``."""

    def smooth_magnitude(self, z: np.ndarray) -> np.ndarray:
        """Per coordinate, the sum of the magnitudes of the terms of ``∇f(z)``."""

    def pack_vector(self, x) -> np.ndarray:
        """The flat z of a point given as the problem's named variables."""

    def unpack_vector(self, z: np.ndarray) -> dict[str, np.ndarray]:
        """The problem's named variables (own arrays) of a flat z."""


def residual_scale(form: SumOfNormsForm, z: np.ndarray) -> np.ndarray:
    """``s_j = max(1, |∇f|-terms_j + Σ_i w_i ‖J_i e_j‖)``: the largest magnitude the terms of
    coordinate j of the optimality condition can take (floor 1)."""
    return np.maximum(1.0, form.smooth_magnitude(z) + form.groups.norm_scale)


def smoothed_norms(weights: np.ndarray, sq: np.ndarray, delta: float) -> float:
    """``Σ_i w_i √(‖g_i‖² + δ)`` from ``sq_i = ‖g_i‖²`` [004 eq. 11] (δ = 0: the norms)."""
    return float(weights @ np.sqrt(sq + delta))


def smoothed_multipliers(g: np.ndarray, delta: float,
                         sq: np.ndarray | None = None) -> np.ndarray:
    """``U_i = g_i/√(‖g_i‖² + δ)``: the gradient of ``√(‖g_i‖² + δ)`` in g_i [004 eq. 12]
    (``sq``: the ``‖g_i‖²`` when already known)."""
    if sq is None:
        sq = np.einsum("ij,ij->i", g, g)
    return g / np.sqrt(sq + delta)[:, None]


def stationarity(form: SumOfNormsForm, z: np.ndarray, U: np.ndarray,
                 scale: np.ndarray | None = None) -> float:
    """``‖(∇f(z) + Σ_i w_i J_iᵀ U_i) / s‖_∞`` (``s``: :func:`residual_scale` unless given).
    With the smoothed multipliers it is the relative gradient of φ_δ [004 eq. 12]."""
    if scale is None:
        scale = residual_scale(form, z)
    v = form.smooth_gradient_vector(z) + form.groups.adjoint(U)
    return float(np.max(np.abs(v) / scale, initial=0.0))


def multiplier_block(value, rows: int, cols: int, name: str) -> np.ndarray:
    """A point's multipliers ``x[name]`` as a finite (rows, cols) array, or a clear error."""
    arr = np.asarray(value, dtype=np.float64)
    if arr.size != rows * cols or not np.all(np.isfinite(arr)):
        raise InvalidInputError(
            f"x[{name!r}] must be a finite ({rows}, {cols}) array of multipliers, got shape "
            f"{arr.shape}.")
    return arr.reshape(rows, cols)
