r"""Sums of Euclidean norms: the general problem of [004 eq. 10], DESIGN.md §4.5.

Over ``x ∈ Rⁿ``::

    min_x  φ(x) = f(x) + Σ_i w_i ‖g_i(x)‖₂,     f(x) = ½ xᵀQx + cᵀx,   g(x) = Gx − h

``Q`` (n×n, sparse or dense) symmetric positive semidefinite, ``G`` (m·k × n) and ``h`` (m·k,)
stacked in ``m`` consecutive groups of ``k = group_size`` rows, weights ``w_i ≥ 0``. Any
problem of that shape is declared with :class:`SumOfNorms` and gets the exact SOCP reference
and the IRLS plugin [004 Alg. 1] with no new solver code (a group lasso, a Weber point
``Σ_i ‖x − a_i‖``, graph total variation, robust ERE via ``ERE.as_sum_of_norms()``).

Smoothing [004 eq. 11]: ``φ_δ(x) = f(x) + Σ_i w_i √(‖g_i‖² + δ)`` (``φ ≤ φ_δ ≤ φ + √δ Σw``).

Certificate (:func:`subgradient_certificate`, used by every problem of this shape). ``x`` is
optimal iff ``0 ∈ ∇f(x) + Σ_i w_i J_iᵀ ∂‖g_i(x)‖``, where ``∂‖g‖ = {g/‖g‖}`` for ``g ≠ 0`` and
the unit ball at ``g = 0`` (``J_i`` the rows of ``G`` of group i). The residual is::

    subgradient = min_u ‖(∇f(x) + Σ_i w_i J_iᵀ u_i) / s‖_∞        (per coordinate j)

with ``u_i = g_i/‖g_i‖`` fixed for the groups with ``‖g_i‖ > τ`` and ``u_i`` free in the unit
ball for the (near-)zero groups ``‖g_i‖ ≤ τ``; the minimum over the free ``u_i`` (a
ball-constrained least-squares problem in the 2-norm) is approximated by FISTA with
projection onto the balls, restarted when the value increases, started from the solver's
multipliers when the point carries them (projected onto the balls) and otherwise from
``g_i/τ`` projected. Any feasible ``u`` gives an upper bound, so the residual is never
understated by an early stop of FISTA. Per coordinate j the residual is divided by
``s_j = max(1, (|Q||x| + |c|)_j + Σ_i w_i ‖J_i e_j‖₂)``, the largest magnitude the terms of
coordinate j of the optimality condition can take. Treating a group with ``0 < ‖g_i‖ ≤ τ``
as zero makes ``w_i u_i`` an ε-subgradient with ``ε_i = w_i(‖g_i‖ − ⟨u_i, g_i⟩) ≤ 2 w_i τ``;
the sum over the groups, relative to
``max(1, |φ(x)|)``, is reported as ``kink_slack``. When the point carries its smoothing δ
(``x["delta"]``) the residual of the smoothed problem, with ``u_i = g_i/√(‖g_i‖² + δ)``, is
reported as ``smoothed_stationarity``.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from ssl_opt._validation import (
    as_float_matrix,
    check_nonnegative,
    check_square,
    check_symmetric,
    choice,
    integer,
)
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.problems.base import Problem, Structure
from ssl_opt.solvers import Option

#: Default τ of the certificate, relative to the scale σ of the group values: a group with
#: ``‖g_i‖ ≤ KINK_TOL·σ`` is treated as sitting at the kink of its norm.
KINK_TOL = 1e-5
#: FISTA iterations of the certificate's minimization over the free multipliers.
CERTIFICATE_ITERS = 400
#: Dense eigenvalue check of Q up to this size (larger: diagonal check only).
PSD_CHECK_MAX_N = 2000


# ---------------------------------------------------------------------------- certificate


def project_to_balls(U: np.ndarray) -> np.ndarray:
    """Each row of ``U`` projected onto the Euclidean unit ball."""
    norms = np.linalg.norm(U, axis=1)
    return U / np.maximum(norms, 1.0)[:, None]


def subgradient_certificate(grad: np.ndarray, g: np.ndarray, weights: np.ndarray,
                            adjoint: Callable[[np.ndarray], np.ndarray],
                            forward: Callable[[np.ndarray], np.ndarray],
                            scale, tau: float, U0: np.ndarray | None = None,
                            max_iter: int = CERTIFICATE_ITERS,
                            target: float = 0.0) -> dict[str, float]:
    """Subgradient optimality residual of ``f + Σ w_i‖g_i‖`` (see the module docstring).

    ``grad`` ∇f(x) (flat), ``g`` (m, k) the group values, ``adjoint(U) = Σ_i w_i J_iᵀ U_i``
    (flat, like ``grad``) and ``forward(v) = (w_i J_i v)_i`` (m, k); ``scale`` a positive
    number or one per coordinate of ``grad``. Returns ``subgradient`` (the ∞-norm of the scaled
    residual; FISTA minimizes its 2-norm), ``kink_slack`` (unscaled: the caller divides by
    max(1, |φ|)) and the multipliers ``U`` used. FISTA stops early once the residual is
    below ``target`` (a caller that only needs "below target" saves the iterations).
    """
    scale = np.broadcast_to(np.asarray(scale, dtype=np.float64), grad.shape)

    def adj(U):
        return adjoint(U) / scale

    def fwd(v):
        return forward(v / scale)

    norms = np.linalg.norm(g, axis=1)
    free = norms <= tau
    U = np.zeros_like(g)
    fixed = ~free
    U[fixed] = g[fixed] / norms[fixed, None]
    r0 = grad / scale + adj(U)
    if not np.any(free):
        return {"subgradient": float(np.abs(r0).max(initial=0.0)), "kink_slack": 0.0,
                "U": U}
    mask = free[:, None].astype(np.float64)

    def value(V):
        v = r0 + adj(V * mask)
        return v, 0.5 * float(v @ v)

    if U0 is not None:
        V = project_to_balls(np.where(mask > 0, U0, 0.0))
    else:
        V = project_to_balls(g / tau) * mask
    v, val = value(V)
    best_inf = float(np.abs(v).max(initial=0.0))
    if best_inf <= target:
        max_iter = 0
    # Lipschitz constant of the gradient: power iteration on forward∘adjoint (free groups).
    rng = np.random.default_rng(0)
    P = rng.standard_normal(g.shape) * mask
    lip = 0.0
    for _ in range(30 if max_iter else 0):
        nrm = float(np.linalg.norm(P))
        if nrm == 0.0:
            break
        P = fwd(adj(P / nrm)) * mask
        lip = float(np.linalg.norm(P))
    lip = max(1.05 * lip, 1e-300)
    U_best = V
    Yv, t = V, 1.0
    for _ in range(max_iter):
        vy, _ = value(Yv)
        Vn = project_to_balls(Yv - fwd(vy) * mask / lip) * mask
        vn, valn = value(Vn)
        if valn > val:  # restart the momentum; a plain projected step from V
            vv, _ = value(V)
            Vn = project_to_balls(V - fwd(vv) * mask / lip) * mask
            vn, valn = value(Vn)
            if valn > val:
                lip *= 2.0
                Yv, t = V, 1.0
                continue
            t = 1.0
        t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        Yv = Vn + ((t - 1.0) / t_next) * (Vn - V)
        V, val, t = Vn, valn, t_next
        inf = float(np.abs(vn).max(initial=0.0))
        if inf < best_inf:
            best_inf, U_best = inf, V
        if best_inf <= max(1e-14, target):
            break
    U[free] = U_best[free]
    slack = float(np.sum(weights[free] * (norms[free] - np.einsum("ij,ij->i", U[free],
                                                                      g[free]))))
    return {"subgradient": best_inf, "kink_slack": slack, "U": U}


def smoothed_stationarity(grad: np.ndarray, g: np.ndarray, delta: float,
                          adjoint: Callable[[np.ndarray], np.ndarray], scale) -> float:
    """``‖(∇f + Σ w_i J_iᵀ g_i/√(‖g_i‖² + δ)) / scale‖_∞``: the gradient of φ_δ
    [004 eq. 12], relative per coordinate."""
    U = g / np.sqrt(np.einsum("ij,ij->i", g, g) + delta)[:, None]
    return float(np.max(np.abs(grad + adjoint(U)) / scale, initial=0.0))


def check_delta(values, name: str = "delta") -> float | None:
    """The smoothing δ a point carries (``x["delta"]``), or None."""
    if not hasattr(values, "get") or values.get(name) is None:
        return None
    delta = float(np.asarray(values[name], dtype=np.float64).reshape(()))
    if not np.isfinite(delta) or delta < 0:
        raise InvalidInputError(f"x[{name!r}] must be a finite number >= 0, got {delta!r}.")
    return delta


# ---------------------------------------------------------------------------- the problem


#: The options of the sum-of-norms certificates (``kkt`` of SumOfNorms and robust ERE).
CERTIFICATE_OPTIONS = {
    "kink_tol": Option(KINK_TOL, "τ relative to the group values' scale: a group with "
                       "‖g_i‖ ≤ τ sits at its kink", check_nonnegative),
    "multipliers": Option("auto", "'auto': warm-start from the solution's multipliers; "
                          "'recover': from the point alone", choice("auto", "recover")),
    "target": Option(0.0, "stop minimizing over the free multipliers once below this",
                     check_nonnegative),
    "iterations": Option(CERTIFICATE_ITERS, "FISTA iterations over the free multipliers",
                         integer(1)),
}
#: The residuals of the sum-of-norms certificates.
CERTIFICATE_RESIDUALS = {"subgradient": "stationarity", "kink_slack": "stationarity",
                         "smoothed_stationarity": "stationarity"}


def multiplier_block(value, rows: int, cols: int, name: str) -> np.ndarray:
    """A solver's multipliers as a finite (rows, cols) array, or a clear error."""
    arr = np.asarray(value, dtype=np.float64)
    if arr.size != rows * cols or not np.all(np.isfinite(arr)):
        raise InvalidInputError(
            f"x[{name!r}] must be a finite ({rows}, {cols}) array of multipliers, got shape "
            f"{arr.shape}.")
    return arr.reshape(rows, cols)


class SumOfNorms(Problem):
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
    multipliers ``U`` (m, k), ``U_i = g_i/√(‖g_i‖² + δ)``; the certificate uses them as a warm
    start only.
    """

    family = "sum_of_norms"
    kkt_options = CERTIFICATE_OPTIONS
    residual_tolerances = CERTIFICATE_RESIDUALS

    def __init__(self, Q, c, G, h, group_size, weights=None):
        Qm = as_float_matrix(Q, "Q")
        n = check_square(Qm, "Q")
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
        self._freeze()

    # ------------------------------------------------------------------ declaration
    @property
    def variables(self) -> dict[str, tuple[int, ...]]:
        return {"x": (self.n,)}

    @property
    def structure(self) -> Structure:
        sizes = {"n": self.n, "groups": self.m, "group_size": self.k, "nnz_G": int(self.G.nnz),
                 "nnz_Q": int(self.Q.nnz), "variables": self.n}
        return Structure(self.family, "socp", True, False, "SOCP", sizes, True)

    @property
    def unique_prediction(self) -> bool:
        return False  # strictly convex only when Q ≻ 0 (not checked)

    # ------------------------------------------------------------------ evaluation
    def group_values(self, x: np.ndarray) -> np.ndarray:
        """``g`` (m, k): row i is ``g_i(x) = (Gx − h)_i``."""
        return (self.G @ x - self.h).reshape(self.m, self.k)

    def smooth_value(self, x: np.ndarray) -> float:
        return float(0.5 * x @ (self.Q @ x) + self.c @ x)

    def smooth_gradient(self, x: np.ndarray) -> np.ndarray:
        return self.Q @ x + self.c

    def objective(self, x) -> float:
        xv = self.unpack(x)["x"]
        g = self.group_values(xv)
        return self.smooth_value(xv) + float(self.w @ np.linalg.norm(g, axis=1))

    def smoothed_objective(self, x, delta: float) -> float:
        """``φ_δ(x) = f(x) + Σ w_i √(‖g_i‖² + δ)`` [004 eq. 11]."""
        xv = self.unpack(x)["x"]
        g = self.group_values(xv)
        return self.smooth_value(xv) + float(
            self.w @ np.sqrt(np.einsum("ij,ij->i", g, g) + delta))

    def prediction(self, x) -> np.ndarray:
        return self.unpack(x)["x"]

    def adjoint(self, U: np.ndarray) -> np.ndarray:
        """``Σ_i w_i J_iᵀ U_i = Gᵀ vec(w ∘ U)``."""
        return self.G.T @ (self.w[:, None] * U).ravel()

    def forward(self, v: np.ndarray) -> np.ndarray:
        """``(w_i J_i v)_i`` as an (m, k) array."""
        return self.w[:, None] * (self.G @ v).reshape(self.m, self.k)

    @cached_property
    def norm_scale(self) -> np.ndarray:
        """``Σ_i w_i ‖J_i e_j‖₂`` per coordinate j: the largest value coordinate j of
        ``Σ w_i J_iᵀ u_i`` can take over the unit balls."""
        G2 = self.G.multiply(self.G).tocsc()
        group = np.repeat(np.arange(self.m), self.k)
        agg = sp.csr_matrix((np.ones(self.m * self.k), (group, np.arange(self.m * self.k))),
                            shape=(self.m, self.m * self.k))
        col_norms = (agg @ G2).sqrt()  # (m, n): ‖J_i e_j‖
        return np.asarray(col_norms.T @ self.w).ravel()

    @cached_property
    def value_scale(self) -> float:
        """σ: the scale of the group values, ``‖h‖_∞`` (1 when h = 0)."""
        hmax = float(np.abs(self.h).max(initial=0.0))
        return hmax if hmax > 0 else 1.0

    def _kkt(self, x, kink_tol: float, multipliers: str, target: float,
             iterations: int) -> dict[str, float]:
        """``subgradient``, ``kink_slack`` and (with ``x["delta"]``) ``smoothed_stationarity``
        (module docstring); τ = ``kink_tol`` · max(σ, max_i ‖g_i(x)‖). ``target``: stop
        minimizing over the free multipliers once the residual is below it."""
        xv = self.unpack(x)["x"]
        if not np.all(np.isfinite(xv)):
            return {"subgradient": float("inf")}
        values = getattr(x, "x", x)
        g = self.group_values(xv)
        grad = self.smooth_gradient(xv)
        scale = np.maximum(1.0, np.abs(self.Q) @ np.abs(xv) + np.abs(self.c) + self.norm_scale)
        sigma = max(self.value_scale, float(np.linalg.norm(g, axis=1).max(initial=0.0)))
        U0 = None
        if multipliers == "auto" and hasattr(values, "get") and values.get("U") is not None:
            U0 = multiplier_block(values["U"], self.m, self.k, "U")
        cert = subgradient_certificate(grad, g, self.w, self.adjoint, self.forward, scale,
                                       kink_tol * sigma, U0, max_iter=iterations,
                                       target=target)
        phi = self.objective({"x": xv})
        out = {"subgradient": cert["subgradient"],
               "kink_slack": cert["kink_slack"] / max(1.0, abs(phi))}
        delta = check_delta(values)
        if delta is not None:
            out["smoothed_stationarity"] = smoothed_stationarity(grad, g, delta, self.adjoint,
                                                                 scale)
        return out


def _vector(value, name: str, size: int) -> np.ndarray:
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
    if Q.shape[0] <= PSD_CHECK_MAX_N and Q.nnz:
        lam_min = float(np.linalg.eigvalsh(Q.toarray())[0])
        if lam_min < -1e-10 * max(scale, 1.0):
            raise InvalidInputError(
                f"Q must be positive semidefinite (smallest eigenvalue {lam_min:.3g}); f must be "
                "convex.")
