r"""Sums of Euclidean norms: the general problem of [004 eq. 10] and its certificate,
docs/design.md §4.5.

Over ``x ∈ Rⁿ``::

    min_x  φ(x) = f(x) + Σ_i w_i ‖g_i(x)‖₂,     f(x) = ½ xᵀQx + cᵀx,   g(x) = Gx − h

``Q`` (n×n, sparse or dense) symmetric positive semidefinite, ``G`` (m·k × n) and ``h`` (m·k,)
stacked in ``m`` consecutive groups of ``k = group_size`` rows, weights ``w_i ≥ 0``. Any
problem of that shape is declared with :class:`SumOfNorms` and gets the exact SOCP reference
and the IRLS plugin [004 Alg. 1] with no new solver code (a group lasso, a Weber point
``Σ_i ‖x − a_i‖``, graph total variation, robust ERE via ``ERE.as_sum_of_norms()``).

Smoothing [004 eq. 11]: ``φ_δ(x) = f(x) + Σ_i w_i √(‖g_i‖² + δ)`` (``φ ≤ φ_δ ≤ φ + √δ Σw``).

Certificate (:func:`sum_of_norms_residuals`), written once for every problem of the shape
``f(z) + Σ_i w_i ‖g_i(z)‖`` that describes itself as a
:class:`~ssl_opt.problems.ere.groups.SumOfNormsForm` (SumOfNorms with its explicit G; robust
ERE with its structured groups). ``z`` is optimal iff
``0 ∈ ∇f(z) + Σ_i w_i J_iᵀ ∂‖g_i(z)‖``, where ``∂‖g‖ = {g/‖g‖}`` for ``g ≠ 0`` and the unit
ball at ``g = 0`` (``J_i`` the rows of the linear part of g of group i). The residual is::

    subgradient = min_u ‖(∇f(z) + Σ_i w_i J_iᵀ u_i) / s‖_∞        (per coordinate j)

with ``u_i = g_i/‖g_i‖`` fixed for the groups with ``‖g_i‖ > τ`` and ``u_i`` free in the unit
ball for the (near-)zero groups ``‖g_i‖ ≤ τ``; the minimum over the free ``u_i`` (a
ball-constrained least-squares problem in the 2-norm) is approximated by FISTA with
projection onto the balls, restarted when the value increases, started from the solver's
multipliers when the point carries them (projected onto the balls) and otherwise from
``g_i/τ`` projected. Any feasible ``u`` gives an upper bound, so the residual is never
understated by an early stop of FISTA. Per coordinate j the residual is divided by
``s_j = max(1, |∇f-terms|_j + Σ_i w_i ‖J_i e_j‖₂)`` (for SumOfNorms ``(|Q||x| + |c|)_j``),
the largest magnitude the terms of coordinate j of the optimality condition can take.
Treating a group with ``0 < ‖g_i‖ ≤ τ`` as zero makes ``w_i u_i`` an ε-subgradient with
``ε_i = w_i(‖g_i‖ − ⟨u_i, g_i⟩) ≤ 2 w_i τ``; the sum over the groups, relative to
``max(1, |φ(z)|)``, is reported as ``kink_slack``. When the point carries its smoothing δ
(``x["delta"]``) the residual of the smoothed problem, with ``u_i = g_i/√(‖g_i‖² + δ)``, is
reported as ``smoothed_stationarity``.
"""

from __future__ import annotations

import numbers
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from ssl_opt._validation import (
    as_float_matrix,
    check_nonnegative,
    check_psd,
    check_square,
    check_symmetric,
    choice,
    integer,
    reject_complex,
    warn_if_badly_scaled,
)
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.problems.base import Problem, Structure
from ssl_opt.problems.ere.groups import (
    GroupOperator,
    MatrixGroups,
    SumOfNormsForm,
    residual_scale,
    smoothed_multipliers,
    smoothed_norms,
    stationarity,
)
from ssl_opt.solvers import Option

#: Default τ of the certificate, relative to the scale σ of the group values: a group with
#: ``‖g_i‖ ≤ KINK_TOL·σ`` is treated as sitting at the kink of its norm.
KINK_TOL = 1e-5
#: FISTA iterations of the certificate's minimization over the free multipliers.
CERTIFICATE_ITERS = 400


# ---------------------------------------------------------------------------- certificate


def project_to_balls(U: np.ndarray) -> np.ndarray:
    """Each row of ``U`` projected onto the Euclidean unit ball."""
    norms = np.linalg.norm(U, axis=1)
    return U / np.maximum(norms, 1.0)[:, None]


def subgradient_certificate(grad: np.ndarray, g: np.ndarray, groups: GroupOperator, scale,
                            tau: float, U0: np.ndarray | None = None,
                            max_iter: int = CERTIFICATE_ITERS,
                            target: float = 0.0) -> dict[str, float]:
    """Subgradient optimality residual of ``f + Σ w_i‖g_i‖`` (see the module docstring).

    ``grad`` ∇f(x) (flat), ``g`` (m, k) the group values, ``groups`` their operator (weights,
    ``adjoint``, ``forward``); ``scale`` a positive number or one per coordinate of ``grad``.
    Returns ``subgradient`` (the ∞-norm of the scaled residual; FISTA minimizes its 2-norm),
    ``kink_slack`` (unscaled: the caller divides by max(1, |φ|)) and the multipliers ``U``
    used. FISTA stops early once the residual is below ``target`` (a caller that only needs
    "below target" saves the iterations).
    """
    scale = np.broadcast_to(np.asarray(scale, dtype=np.float64), grad.shape)
    weights = groups.weights

    def adj(U):
        return groups.adjoint(U) / scale

    def fwd(v):
        return groups.forward(v / scale)

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
    if 0.5 * float(r0 @ r0) < val:  # the free multipliers at zero are a better start
        V, v, val = np.zeros_like(V), r0, 0.5 * float(r0 @ r0)
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


def check_delta(values, name: str = "delta") -> float | None:
    """The smoothing δ a point carries (``x["delta"]``), or None."""
    if not hasattr(values, "get") or values.get(name) is None:
        return None
    delta = float(np.asarray(values[name], dtype=np.float64).reshape(()))
    if not np.isfinite(delta) or delta < 0:
        raise InvalidInputError(f"x[{name!r}] must be a finite number >= 0, got {delta!r}.")
    return delta


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


def sum_of_norms_residuals(form: SumOfNormsForm, z: np.ndarray, values, kink_tol: float,
                           multipliers: str, target: float,
                           iterations: int) -> dict[str, float]:
    """The certificate of ``φ(z) = f(z) + Σ_i w_i‖g_i(z)‖`` at a finite flat ``z`` (module
    docstring): ``subgradient``, ``kink_slack`` and, when the point ``values`` carries its
    smoothing δ, ``smoothed_stationarity``. τ = ``kink_tol``·max(σ, max_i ‖g_i(z)‖); the
    multipliers the point carries start the minimization (``multipliers="auto"``), which
    stops once below ``target`` or after ``iterations`` FISTA steps."""
    groups = form.groups
    g = groups.values(z)
    grad = form.smooth_gradient(z)
    scale = residual_scale(form, z)
    norms = np.linalg.norm(g, axis=1)
    sigma = max(groups.value_scale, float(norms.max(initial=0.0)))
    U0 = groups.read_multipliers(values) if multipliers == "auto" else None
    cert = subgradient_certificate(grad, g, groups, scale, kink_tol * sigma, U0,
                                   max_iter=iterations, target=target)
    phi = form.smooth_value(z) + float(groups.weights @ norms)
    out = {"subgradient": cert["subgradient"],
           "kink_slack": cert["kink_slack"] / max(1.0, abs(phi))}
    delta = check_delta(values)
    if delta is not None:
        out["smoothed_stationarity"] = stationarity(form, z, smoothed_multipliers(g, delta),
                                                    scale)
    return out


# ---------------------------------------------------------------------------- the problem


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

    def as_model(self):
        """This problem as a :class:`~ssl_opt.modeling.Model` in ``x`` (docs/design.md §6):
        ``QuadraticForm(x, Q, ½) + Linear(x, c) + GroupNorms(row_blocks(G @ x − h, k), w)``
        (k = 1: ``GroupNorms`` of the vector ``G @ x − h`` itself)."""
        from ssl_opt.modeling import GroupNorms, Linear, Model, QuadraticForm, Variable, matmul
        from ssl_opt.modeling.expressions import row_blocks

        x = Variable("x", (self.n,))
        g = matmul(self.G, x) - self.h
        terms = [QuadraticForm(x, self.Q, 0.5), Linear(x, self.c),
                 GroupNorms(g if self.k == 1 else row_blocks(g, self.k), self.w)]
        return Model(terms, prediction=x, name="sum-of-norms", unique_prediction=False)

    # ------------------------------------------------------------------ the form f + Σ w‖g‖
    def smooth_value(self, x: np.ndarray) -> float:
        """``f(x) = ½xᵀQx + cᵀx``."""
        return float(0.5 * x @ (self.Q @ x) + self.c @ x)

    def smooth_gradient(self, x: np.ndarray) -> np.ndarray:
        return self.Q @ x + self.c

    def smooth_magnitude(self, x: np.ndarray) -> np.ndarray:
        """``|Q||x| + |c|``: the magnitudes of the terms of ∇f, per coordinate."""
        return self._abs_Q @ np.abs(x) + np.abs(self.c)

    @cached_property
    def _abs_Q(self) -> sp.csr_matrix:
        return abs(self.Q)

    def pack(self, x) -> np.ndarray:
        return self.unpack(x)["x"].copy()

    def unpack_vector(self, z: np.ndarray) -> dict[str, np.ndarray]:
        return {"x": np.array(z, dtype=np.float64)}

    # ------------------------------------------------------------------ evaluation
    def objective(self, x) -> float:
        xv = self.unpack(x)["x"]
        g = self.groups.values(xv)
        return self.smooth_value(xv) + float(self.w @ np.linalg.norm(g, axis=1))

    def smoothed_objective(self, x, delta: float) -> float:
        """``φ_δ(x) = f(x) + Σ w_i √(‖g_i‖² + δ)`` [004 eq. 11]."""
        xv = self.unpack(x)["x"]
        g = self.groups.values(xv)
        return self.smooth_value(xv) + smoothed_norms(self.w, np.einsum("ij,ij->i", g, g),
                                                      delta)

    def prediction(self, x) -> np.ndarray:
        return self.unpack(x)["x"]

    def _kkt(self, x, kink_tol: float, multipliers: str, target: float,
             iterations: int) -> dict[str, float]:
        """``subgradient``, ``kink_slack`` and (with ``x["delta"]``) ``smoothed_stationarity``
        (module docstring, :func:`sum_of_norms_residuals`); τ = ``kink_tol`` ·
        max(σ, max_i ‖g_i(x)‖), σ = ‖h‖_∞ (1 when h = 0); the multipliers ``x["U"]`` start the
        minimization over the free ones."""
        xv = self.unpack(x)["x"]
        if not np.all(np.isfinite(xv)):
            return {"subgradient": float("inf")}
        return sum_of_norms_residuals(self, xv, getattr(x, "x", x), kink_tol, multipliers,
                                      target, iterations)


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
