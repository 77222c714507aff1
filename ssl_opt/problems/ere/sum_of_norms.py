r"""Sums of Euclidean norms: the general problem of [004 eq. 10], docs/design.md §4.5.

Over ``x ∈ Rⁿ``::

    min_x  φ(x) = f(x) + Σ_i w_i ‖g_i(x)‖₂,     f(x) = ½ xᵀQx + cᵀx,   g(x) = Gx − h

``Q`` (n×n, sparse or dense) symmetric positive semidefinite, ``G`` (m·k × n) and ``h`` (m·k,)
stacked in ``m`` consecutive groups of ``k = group_size`` rows, weights ``w_i ≥ 0``. Any
problem of that shape is declared with :class:`SumOfNorms`, a named model
(``QuadraticForm(x, Q, ½) + Linear(x, c) + GroupNorms(row_blocks(G @ x − h, k), w)``): it gets
the model's certificate and CVXPY reference and the IRLS plugin [004 Alg. 1] with no new solver
code (a group lasso, a Weber point ``Σ_i ‖x − a_i‖``, graph total variation, robust ERE via
``ERE.as_sum_of_norms()``).

Smoothing [004 eq. 11]: ``φ_δ(x) = f(x) + Σ_i w_i √(‖g_i‖² + δ)`` (``φ ≤ φ_δ ≤ φ + √δ Σw``).
"""

from __future__ import annotations

import numbers
from dataclasses import replace
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from ssl_opt._validation import (
    as_float_matrix,
    check_psd,
    check_square,
    check_symmetric,
    reject_complex,
    warn_if_badly_scaled,
)
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.modeling.expressions import Variable, matmul, row_blocks
from ssl_opt.modeling.model import Model
from ssl_opt.modeling.terms import GroupNorms, Linear, QuadraticForm
from ssl_opt.problems.base import Structure
from ssl_opt.problems.ere.groups import MatrixGroups, smoothed_norms

#: The certificate's options for sums of norms (this problem and robust ERE): the model's, with
#: a kink tolerance of 1e-5 instead of 1e-6 — a norm within 1e-5·max(1, the largest norm of its
#: term) of zero may take any subgradient. The value these problems' certificate used before
#: they were named models; at 1e-6 IRLS needs 26 % more steps (247 against 196) and 42 % more
#: time at n = 20,000 (``python benchmarks/bench_ere.py --parts c``) to certify.
KKT_OPTIONS = {**Model.kkt_options,
               "kink_tol": replace(Model.kkt_options["kink_tol"], default=1e-5)}


class SumOfNorms(Model):
    r"""``min_x ½xᵀQx + cᵀx + Σ_i w_i ‖(Gx − h)_i‖₂`` [004 eq. 10] (module docstring).

    Parameters
    ----------
    Q : (n, n) array or sparse matrix
        Symmetric positive semidefinite (checked densely up to n = 2,000).
    c : (n,) array
    G : (m·k, n) array or sparse matrix
        Rows grouped in ``m`` consecutive blocks of ``k = group_size`` rows.
    h : (m·k,) array
    group_size : int >= 1
    weights : (m,) array of w_i >= 0, optional (default 1)

    Variables: ``x`` (n,). The IRLS solver also returns its smoothing ``delta`` and its
    multipliers ``U`` (m, k), ``U_i = g_i/√(‖g_i‖² + δ)`` (its warm start), and the same
    multipliers in the model's convention (``info["multipliers"]``), where the certificate's
    minimization over the subgradients starts.
    """

    family = "sum_of_norms"
    kkt_options = KKT_OPTIONS

    def __init__(self, Q, c, G, h, group_size, weights=None):
        Qm = as_float_matrix(Q, "Q")
        n = check_square(Qm, "Q")
        if n == 0:
            raise InvalidInputError("Q is empty (0x0): at least one variable is needed.")
        check_symmetric(Qm, "Q")
        self.Q = sp.csr_matrix(Qm, copy=True)
        self.c = _vector(c, "c", n)
        Gm = as_float_matrix(G, "G")
        if Gm.shape[1] != n:
            raise InvalidInputError(
                f"G must have n = {n} columns (one per variable, like Q), got shape {Gm.shape}.")
        self.G = sp.csr_matrix(Gm, copy=True)
        rows = self.G.shape[0]
        if (isinstance(group_size, bool) or not isinstance(group_size, numbers.Integral)
                or group_size < 1):
            raise InvalidInputError(f"group_size must be an integer >= 1, got {group_size!r}.")
        k = int(group_size)
        if rows == 0 or rows % k:
            raise InvalidInputError(
                f"G must have a positive multiple of group_size = {k} rows (m groups of {k}), "
                f"got {rows} rows.")
        self.h = _vector(h, "h", rows)
        self.k = k
        self.m = rows // k
        if weights is None:
            self.w = np.ones(self.m)
        else:
            self.w = _vector(weights, "weights", self.m)
            if np.any(self.w < 0):
                raise InvalidInputError("weights must be >= 0 (one per group of G's rows).")
        self.n = n
        _check_psd(self.Q)
        self.groups = MatrixGroups(self.G, self.h, k, self.w)
        warn_if_badly_scaled(
            "SumOfNorms", {"max|Q|": float(np.abs(self.Q.data).max(initial=0.0)),
                           "max|c|": float(np.abs(self.c).max()),
                           "max_j Σ_i w_i‖G_i e_j‖": float(self.groups.norm_scale.max())},
            "Multiply Q, c and weights by one factor (the minimizer is unchanged) so that they "
            "are of order 1.")
        x = Variable("x", (n,))
        g = matmul(self.G, x) - self.h
        Model.__init__(self, [QuadraticForm(x, self.Q, 0.5, validated=True), Linear(x, self.c),
                              GroupNorms(g if k == 1 else row_blocks(g, k), self.w)],
                       prediction=x, name="sum-of-norms", unique_prediction=False)

    # ------------------------------------------------------------------ declaration
    @property
    def structure(self) -> Structure:
        sizes = {"n": self.n, "groups": self.m, "group_size": self.k, "nnz_G": int(self.G.nnz),
                 "nnz_Q": int(self.Q.nnz), "variables": self.n}
        return Structure(self.family, "socp", True, False, "SOCP", sizes, True)

    def model_multipliers(self, U: np.ndarray) -> list[np.ndarray]:
        """The model's multiplier of its group term from the unit-ball multipliers ``U`` (m, k):
        ``w_i U_i`` in the term's shape."""
        return [(self.w[:, None] * U).reshape(self.terms[2].shape)]

    # ------------------------------------------------------------------ the form f + Σ w‖g‖
    def smooth_value(self, x: np.ndarray) -> float:
        """``f(x) = ½xᵀQx + cᵀx``."""
        return float(0.5 * x @ (self.Q @ x) + self.c @ x)

    def smooth_gradient_vector(self, x: np.ndarray) -> np.ndarray:
        return self.Q @ x + self.c

    def smooth_magnitude(self, x: np.ndarray) -> np.ndarray:
        """``|Q||x| + |c|``: the magnitudes of the terms of ∇f, per coordinate."""
        return self._abs_Q @ np.abs(x) + np.abs(self.c)

    @cached_property
    def _abs_Q(self) -> sp.csr_matrix:
        return abs(self.Q)

    def pack_vector(self, x) -> np.ndarray:
        return self.unpack(x)["x"].copy()

    def unpack_vector(self, z: np.ndarray) -> dict[str, np.ndarray]:
        return {"x": np.array(z, dtype=np.float64)}

    # ------------------------------------------------------------------ evaluation
    def smoothed_objective(self, x, delta: float) -> float:
        """``φ_δ(x) = f(x) + Σ w_i √(‖g_i‖² + δ)`` [004 eq. 11]."""
        xv = self.unpack(x)["x"]
        g = self.groups.values(xv)
        return self.smooth_value(xv) + smoothed_norms(self.w, np.einsum("ij,ij->i", g, g),
                                                      delta)


def _vector(value, name: str, size: int) -> np.ndarray:
    reject_complex(value, name)
    if sp.issparse(value):
        value = value.toarray()
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name} must be a numeric vector: {exc}") from exc
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.ravel()
    if arr.shape != (size,):
        raise InvalidInputError(f"{name} must have shape ({size},), got {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise InvalidInputError(f"{name} contains NaN or inf; remove or impute those entries.")
    return np.array(arr)


def _check_psd(Q: sp.csr_matrix) -> None:
    diag = Q.diagonal()
    scale = float(np.abs(Q.data).max(initial=0.0))
    if np.any(diag < -1e-12 * max(scale, 1.0)):
        raise InvalidInputError("Q must be positive semidefinite: it has a negative diagonal "
                                "entry.")
    if Q.nnz:
        check_psd(Q, "Q", rtol=1e-10)
