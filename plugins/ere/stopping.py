r"""IRLS's stopping test for sums of norms ``φ(z) = f(z) + Σ_i w_i ‖g_i(z)‖₂`` [004 eq. 10]
(robust ERE, :class:`~ssl_opt.problems.SumOfNorms`), docs/design.md §4.5.

The problems' certificate is their model's (stationarity from the terms, relative to one
scale; ``ssl_opt/modeling/stationarity.py``). IRLS stops on a test of its own, read off
its sum-of-norms form (:class:`~ssl_opt.problems.ere.groups.SumOfNormsForm`): ``z`` is optimal
iff ``0 ∈ ∇f(z) + Σ_i w_i J_iᵀ ∂‖g_i(z)‖``, where ``∂‖g‖ = {g/‖g‖}`` for ``g ≠ 0`` and the unit
ball at ``g = 0`` (``J_i`` the rows of the linear part of g of group i). The residual is::

    subgradient = min_u ‖(∇f(z) + Σ_i w_i J_iᵀ u_i) / s‖_∞        (per coordinate j)

with ``u_i = g_i/‖g_i‖`` fixed for the groups with ``‖g_i‖ > τ_i`` and ``u_i`` free in the
unit ball for the (near-)zero groups ``‖g_i‖ ≤ τ_i``, ``τ_i = kink_tol·max(1, the largest
norm of group i's term)`` as in the model certificate (robust ERE's terms: the edges, the
points); the minimum over the free ``u_i`` (a
ball-constrained least-squares problem in the 2-norm) is approximated by FISTA with
projection onto the balls, restarted when the value increases, started from the solver's
multipliers when the point carries them (projected onto the balls) and otherwise from
``g_i/τ`` projected. Any feasible ``u`` gives an upper bound, so the residual is never
understated by an early stop of FISTA. Per coordinate j the residual is divided by
``s_j = max(1, |∇f-terms|_j + Σ_i w_i ‖J_i e_j‖₂)`` (for SumOfNorms ``(|Q||x| + |c|)_j``),
the largest magnitude the terms of coordinate j of the optimality condition can take. Neither
residual bounds the other: ``s_j`` sums the magnitudes of coordinate j's terms where the
certificate divides by the largest term, so a coordinate with many large terms (a W entry:
``α Σ_i |x_ij|``) is judged more loosely here (at n = 1,000 the test's multipliers leave the
certificate at 1e-5 on the W block), one with small terms more strictly. So IRLS also
requires the model certificate (:func:`model_certified`) before it stops. Treating a group with
``0 < ‖g_i‖ ≤ τ`` as zero makes ``w_i u_i`` an ε-subgradient with
``ε_i = w_i(‖g_i‖ − ⟨u_i, g_i⟩) ≤ 2 w_i τ``; the sum over the groups, relative to
``max(1, |φ(z)|)``, is reported as ``kink_slack``. When the point carries its smoothing δ
(``x["delta"]``) the residual of the smoothed problem, with ``u_i = g_i/√(‖g_i‖² + δ)``, is
reported as ``smoothed_stationarity``.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ssl_opt.certificate import TOLERANCES
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.modeling.stationarity import stationarity as stationarity_of_model
from ssl_opt.plugins.model.multipliers import with_fixed_multipliers
from ssl_opt.problems.ere.groups import (
    GroupOperator,
    SumOfNormsForm,
    residual_scale,
    smoothed_multipliers,
    stationarity,
)
from ssl_opt.problems.ere.sum_of_norms import KKT_OPTIONS

#: Default kink tolerance of the stopping test: a group with ``‖g_i‖ ≤ KINK_TOL·max(1, the
#: largest norm of its term)`` is treated as sitting at the kink of its norm — the certificate's
#: rule and value (``KKT_OPTIONS``), so both count the same groups at their kinks.
KINK_TOL = KKT_OPTIONS["kink_tol"].default
#: The certificate's stationarity tolerance for iterative solvers, which IRLS's answer must
#: meet too (``ssl_opt.certificate.TOLERANCES``).
MODEL_TOL = TOLERANCES["iterative"]["stationarity"]
#: FISTA iterations of the model certificate's minimization when the residual at the test's
#: multipliers alone is above half :data:`MODEL_TOL` (then the LSQR refinement).
MODEL_CHECK_ITERS = 30
#: FISTA iterations of the test's minimization over the free multipliers.
CERTIFICATE_ITERS = 400


# ---------------------------------------------------------------------------- certificate


def project_to_balls(U: np.ndarray) -> np.ndarray:
    """Each row of ``U`` projected onto the Euclidean unit ball."""
    norms = np.linalg.norm(U, axis=1)
    return U / np.maximum(norms, 1.0)[:, None]


def subgradient_certificate(grad: np.ndarray, g: np.ndarray, groups: GroupOperator, scale,
                            tau, U0: np.ndarray | None = None,
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
    tau = np.broadcast_to(np.asarray(tau, dtype=np.float64), norms.shape)
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
        V = project_to_balls(g / tau[:, None]) * mask
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


def kink_scales(groups, norms: np.ndarray) -> np.ndarray:
    """Per group, ``max(1, the largest norm of its block)``: the blocks of
    ``groups.multiplier_blocks`` are the model's terms (robust ERE's edges and points), so a
    group sits at its kink for the test exactly when it does for the model certificate."""
    out = np.empty_like(norms)
    start = 0
    for _, rows in groups.multiplier_blocks:
        block = norms[start:start + rows]
        out[start:start + rows] = max(1.0, float(block.max(initial=0.0)))
        start += rows
    return out


def stopping_residuals(form: SumOfNormsForm, z: np.ndarray, values=None,
                       kink_tol: float = KINK_TOL, target: float = 0.0,
                       iterations: int = CERTIFICATE_ITERS) -> dict[str, float]:
    """The stopping test's residuals at a flat ``z`` (:func:`stopping_test`)."""
    return stopping_test(form, z, values, kink_tol, target, iterations)[0]


def stopping_test(form: SumOfNormsForm, z: np.ndarray, values=None,
                  kink_tol: float = KINK_TOL, target: float = 0.0,
                  iterations: int = CERTIFICATE_ITERS) -> tuple[dict[str, float], np.ndarray]:
    """The stopping test of ``φ(z) = f(z) + Σ_i w_i‖g_i(z)‖`` at a flat ``z`` (module
    docstring): ``subgradient``, ``kink_slack`` and, when the point ``values`` carries its
    smoothing δ, ``smoothed_stationarity``; and the unit-ball multipliers ``U`` (m, k) that
    attain the subgradient residual. τ = ``kink_tol``·:func:`kink_scales`; the multipliers
    ``values`` carries start the minimization, which stops once below ``target`` or after
    ``iterations`` FISTA steps."""
    groups = form.groups
    if not np.all(np.isfinite(z)):
        return ({"subgradient": float("inf"), "kink_slack": float("inf")},
                np.zeros((groups.n_groups, groups.group_size)))
    g = groups.values(z)
    grad = form.smooth_gradient_vector(z)
    scale = residual_scale(form, z)
    norms = np.linalg.norm(g, axis=1)
    U0 = groups.read_multipliers(values)
    cert = subgradient_certificate(grad, g, groups, scale, kink_tol * kink_scales(groups, norms),
                                   U0, max_iter=iterations, target=target)
    phi = form.smooth_value(z) + float(groups.weights @ norms)
    out = {"subgradient": cert["subgradient"],
           "kink_slack": cert["kink_slack"] / max(1.0, abs(phi))}
    delta = check_delta(values)
    if delta is not None:
        out["smoothed_stationarity"] = stationarity(form, z, smoothed_multipliers(g, delta),
                                                    scale)
    return out, cert["U"]


def model_certified(problem, values: dict, multipliers: list | None) -> dict[str, float]:
    """The model certificate (``problem.kkt``'s stationarity) at ``values``, started from the
    model's ``multipliers`` and stopped as soon as it is below half :data:`MODEL_TOL` (at those
    multipliers alone when they suffice), else after :data:`MODEL_CHECK_ITERS` iterations of
    its minimization over the subgradients."""
    point = SimpleNamespace(x=values, info={"multipliers": multipliers})
    return stationarity_of_model(problem, point, kink_tol=KINK_TOL, max_iter=MODEL_CHECK_ITERS,
                                 target=0.5 * MODEL_TOL)


def stop_check(problem, z: np.ndarray, values, kkt_tol: float, gap_tol: float,
               iterations: int):
    """``(residuals, passed, U, model multipliers)``: IRLS stops at ``z`` when its stopping
    test passes (``subgradient ≤ kkt_tol``, ``kink_slack ≤ gap_tol``) and so does the model
    certificate from the test's multipliers (``model_stationarity ≤ MODEL_TOL``)."""
    cert, U = stopping_test(problem, z, values, target=0.5 * kkt_tol, iterations=iterations)
    if not (cert["subgradient"] <= kkt_tol and cert["kink_slack"] <= gap_tol):
        return cert, False, U, None
    multipliers = certificate_multipliers(problem, z, U)
    model = model_certified(problem, problem.unpack_vector(z), multipliers)
    cert["model_stationarity"] = model.get("stationarity", 0.0)
    return cert, cert["model_stationarity"] <= MODEL_TOL, U, multipliers


def certificate_multipliers(problem, z: np.ndarray, U: np.ndarray) -> list | None:
    """The multipliers of the point ``z`` in the model's convention (one per non-smooth term,
    then the fixed rows'), where the certificate's minimization starts (never trusted)."""
    rough = problem.model_multipliers(U)
    if rough is None:
        return None
    return with_fixed_multipliers(problem, problem.pack(problem.unpack_vector(z)), rough)
