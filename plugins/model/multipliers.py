"""Multipliers of a model's non-smooth terms and fixed rows, as the generic solvers hand them
to the certificate (docs/design.md §6): smoothed-gradient multipliers of a smoothing stage, the
normal-cone elements of ``FixedRows`` constraints, and the kink slack the stationarity residual
does not see."""

from __future__ import annotations

import numpy as np

from ssl_opt.modeling.model import Model


def kink_slack(model: Model, theta: np.ndarray, multipliers) -> float:
    """``Σ_j max(0, g_j(z_j) − ⟨u_j, z_j⟩) / max(1, |F|)`` over the non-smooth terms, with
    ``u_j`` their multipliers (inside the norm's dual ball): the part of the duality gap the
    near-kink groups leave (``≈ w√δ`` per fused group of a smoothed minimizer), which the
    stationarity residual does not see."""
    values = model.unpack_flat(theta)
    total = 0.0
    for t, u in zip(model.nonsmooth_terms, multipliers, strict=False):
        z = t.argument.value(values)
        total += max(0.0, t.value(z) - float(np.sum(u * z)))
    return total / max(1.0, abs(model.objective(values)))


def smoothed_multipliers(model: Model, terms, zs, rough_ids, delta: float,
                         grad: np.ndarray) -> list:
    """The certificate's starting multipliers: ``∇g_{j,δ}(z_j)`` for each non-smooth term
    (a subgradient up to O(√δ)) and the fixed-rows multipliers (:func:`fixed_multipliers`;
    ``grad``: the flat gradient of Φ_δ)."""
    out = [t.smoothed(z, delta, hessian=False)[1] for t, z in zip(terms, zs, strict=True)
           if id(t) in rough_ids]
    return out + fixed_multipliers(model, grad)


def fixed_multipliers(model: Model, grad: np.ndarray) -> list:
    """For each fixed-rows constraint, minus the objective's flat gradient ``grad`` on its
    rows: the normal-cone element that cancels it there."""
    return [fixed_rows_multiplier(model, c, grad) for c in model.constraints]


def fixed_rows_multiplier(model: Model, constraint, grad: np.ndarray) -> np.ndarray:
    """Minus the flat gradient ``grad`` on the rows a ``FixedRows`` constraint fixes of its
    bare variable, zero elsewhere: the normal-cone element that cancels it there."""
    var = constraint.argument.variables[0]
    u = np.zeros(constraint.shape)
    u[constraint.rows] = -grad[model.slices[var.name]].reshape(var.shape)[constraint.rows]
    return u


def with_fixed_multipliers(model: Model, theta: np.ndarray, rough: list) -> list:
    """The non-smooth terms' multipliers ``rough`` followed by the fixed-rows multipliers
    that cancel the gradient they leave on the fixed rows."""
    values = model.unpack_flat(theta)
    grad = model.pack(model.smooth_gradient(values))
    for t, u in zip(model.nonsmooth_terms, rough, strict=True):
        grad += model.pack(t.argument.adjoint(u))
    return list(rough) + fixed_multipliers(model, grad)


def fixed_entries(model: Model) -> tuple[np.ndarray, np.ndarray]:
    """Flat indices and values of the entries fixed by ``FixedRows`` on bare variables."""
    idx, vals = [], []
    slices = model.slices
    for c in model.constraints:
        var = c.argument.variables[0]
        block = np.arange(slices[var.name].start, slices[var.name].stop).reshape(var.shape)
        idx.append(np.ravel(block[c.rows]))
        vals.append(np.ravel(c.values))
    if not idx:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    return np.concatenate(idx), np.concatenate(vals)
