r"""The certificate over the PSD cone, in its conic form (docs/design.md §6, "Certificates").

For a model with the constraint ``Z ⪰ 0`` (:class:`~ssl_opt.modeling.terms.PSD`) on a whole
variable, let ``G = sym(∇_Z F + Σ_k A_kᵀ u_k)`` be the gradient of the Lagrangian in ``Z``
without the cone's multiplier (``u_k ∈ ∂h_k`` for the non-smooth terms). ``Z`` is optimal iff
the other variables are stationary and [Boyd & Vandenberghe, *Convex Optimization*, §5.9.2]::

    G ⪰ 0,    Z = Zᵀ ⪰ 0,    ⟨G, Z⟩ = 0,

and for any feasible ``Z``, by convexity, ``Ω(Z) − Ω* ≤ ⟨G, Z⟩ + max(0, −λ_min(G))·tr Z*``.
The residuals, each 0 at an optimum:

* ``gradient_psd`` ``max(0, −λ_min(G)) / max(1, λ_max(G))`` (dual feasibility);
* ``kernel_psd`` ``max(0, −λ_min(Z)) / max(1, λ_max(Z))`` (primal feasibility);
* ``complementarity`` ``|⟨G, Z⟩| / max(1, |Ω(Z)|)`` (the duality gap);
* ``symmetry`` ``max|Z − Zᵀ| / max(1, max|Z|)``;
* given a bound ``τ ≥ tr Z*``, ``suboptimality_bound``
  ``(max(0, ⟨G, Z⟩) + max(0, −λ_min(G))·τ) / max(1, |Ω(Z)|)``.

The terms' certificate (:mod:`~ssl_opt.modeling.stationarity`) reads the same conditions
through the normal cone ``{−W : W ⪰ 0, WZ = 0}`` on the eigenvectors of ``Z`` whose
eigenvalues are below a tolerance; at an interior-point optimum the small eigenvalues are
~1e-8, not 0, and that reading is ~1e-6 where the conic one is ~1e-9. It reports the smaller
of the two (:func:`psd_stationarity`). NPKL [003] reports these residuals under their own
names (:class:`~ssl_opt.problems.npkl.problem.NPKL`), with ``Z`` possibly given as a factor
(:class:`~ssl_opt.numerics.psd.PSDPoint`).
"""

from __future__ import annotations

import numpy as np

from ssl_opt.numerics import eigen
from ssl_opt.numerics.psd import PSDPoint, matrix_inner


def dual_residuals(gradient_extremes: tuple[float, float], inner: float, objective: float,
                   trace_bound: float | None = None) -> dict[str, float]:
    """``gradient_psd``, ``complementarity`` and, with ``trace_bound`` (a bound on ``tr Z*``),
    ``suboptimality_bound`` (module docstring) from ``(λ_min(G), λ_max(G))`` and
    ``inner = ⟨G, Z⟩``: the conditions on the multiplier side, which need no eigenvalue of
    ``Z``."""
    g_min, g_max = gradient_extremes
    scale = max(1.0, abs(objective))
    out = {"gradient_psd": max(0.0, -g_min) / max(1.0, g_max),
           "complementarity": abs(inner) / scale}
    if trace_bound is not None:
        out["suboptimality_bound"] = (max(0.0, inner) + max(0.0, -g_min) * trace_bound) / scale
    return out


def conic_residuals(point: PSDPoint, G, gradient_extremes: tuple[float, float],
                    objective: float, trace_bound: float | None = None) -> dict[str, float]:
    """:func:`dual_residuals` and ``kernel_psd`` at a symmetric ``point`` (its
    :meth:`~ssl_opt.numerics.psd.PSDPoint.symmetric_part`), with ``G`` and
    ``(λ_min(G), λ_max(G))`` given (whoever builds G knows the cheapest way to its
    eigenvalues)."""
    z_min, z_max = point.extremes()
    dual = dual_residuals(gradient_extremes, point.inner(G), objective, trace_bound)
    return {"gradient_psd": dual.pop("gradient_psd"),
            "kernel_psd": max(0.0, -z_min) / max(1.0, z_max), **dual}


def psd_stationarity(model, cone, r_without_cone: dict[str, np.ndarray], values: dict,
                     scale: float) -> float | None:
    """The conic reading of stationarity for a model whose constraint ``cone`` is ``Z ⪰ 0`` on
    a whole variable ``Z``: the largest of ``gradient_psd``, ``complementarity`` and the other
    variables' residual ``max|r| / scale``, with ``r_without_cone`` the gradient of the
    Lagrangian per variable without the cone's multiplier (so ``G = sym(r[Z])``). Z's own
    eigenvalues are the constraint's feasibility, reported beside it. None when the cone is on
    anything else than a whole variable."""
    if not cone.argument.is_variable() or cone.argument.offset is not None:
        return None
    name = cone.argument.parts[0][0].name
    Z = np.asarray(values[name], dtype=np.float64)
    if not np.all(np.isfinite(Z)):
        return None
    R = r_without_cone[name]
    G = 0.5 * (R + R.T)
    dual = dual_residuals(eigen.extreme_eigenvalues(G, eigen.DENSE_EIG_MAX),
                          matrix_inner(G, Z),  # ⟨G, Z⟩ = ⟨G, sym Z⟩: G is symmetric
                          model.objective(values))
    rest = max((float(np.max(np.abs(r), initial=0.0)) for k, r in r_without_cone.items()
                if k != name), default=0.0)
    return max(dual["gradient_psd"], dual["complementarity"], rest / scale)
