"""The LASS pattern: ``λ tr(ZᵀLZ) − tr(GᵀZ)`` over row-stochastic Z (docs/design.md §4.3, §6)."""

from __future__ import annotations

import numpy as np

from ssl_opt.modeling.lowering import Lowering, register_lowering
from ssl_opt.modeling.model import Model
from ssl_opt.modeling.patterns import (
    NoMatch,
    bare,
    identity_map,
    label,
    laplacian_graph,
    no_counterpart,
    reasoned,
)
from ssl_opt.modeling.terms import (
    Linear,
    QuadraticForm,
    SimplexRows,
)
from ssl_opt.problems.lass.problem import LASS


@register_lowering("LASS")
@reasoned
def lower_lass(model: Model):
    """LASS from ``QuadraticForm(Z, L, λ)`` (L a graph Laplacian) + ``Linear`` terms on Z
    (``G = −Σ weight·c``) subject to ``SimplexRows(Z)``."""

    family = "LASS"
    simplex = [c for c in model.constraints if isinstance(c, SimplexRows)]
    Z = bare(simplex[0].argument) if simplex else None
    if Z is None or len(Z.shape) != 2:
        raise NoMatch("LASS needs SimplexRows(Z) on an N×K variable Z (rows of Z on the "
                          "simplex); this model has none")
    for c in model.constraints:
        if c is not simplex[0]:
            raise no_counterpart(c, family)
    quad, G = None, np.zeros(Z.shape)
    for t in model.terms:
        if bare(t.argument) is Z:
            if isinstance(t, QuadraticForm) and quad is None:
                quad = t
                continue
            if isinstance(t, Linear):  # LinearScore too (c = −G)
                G -= t.weight * t.c
                continue
        raise no_counterpart(t, family)
    if quad is None or quad.weight <= 0:
        raise NoMatch("LASS needs the graph term λ tr(ZᵀLZ) (GraphQuadratic(Z, L), weight "
                          "> 0); this model has none")
    W = laplacian_graph(quad.M, f"the matrix of {label(quad)}", family)
    problem = LASS(W, G, quad.weight)
    to_model, from_model = identity_map({"Z": Z.name})
    return Lowering(problem, to_model, from_model)
