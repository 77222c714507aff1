r"""Graph total variation ``Σ_{i<j} w W_ij ‖f_i − f_j‖`` (docs/design.md §6).

The term's own argument is ``D f`` with ``D`` (m×n, CSR) the signed incidence of the edges
``i < j`` with ``W_ij > 0`` (row e is ``e_i − e_j``, from the upper triangle of W); on those
m rows ``h`` is the weighted ℓ1 norm with weights ``w W_ij`` (``norm="l1"``: ``Σ_k |f_ik −
f_jk|`` per edge) or :class:`~ssl_opt.modeling.terms.norms.GroupNorms` with row weights
``w W_ij`` (``norm="l2"``: ``‖f_i − f_j‖₂`` per edge). A kNN graph gives at most kn rows
(docs/design.md §6), and the prox, subdifferential and CVXPY form are those of ``h`` on
``D f``; a solver that needs the prox of ``h ∘ D`` itself (not of h) works with the
argument's linear map, as PDHG does.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ssl_opt.builders.laplacian import incidence_matrix
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.modeling.expressions import as_expression
from ssl_opt.modeling.term import Term
from ssl_opt.modeling.terms._common import adjacency, scalar
from ssl_opt.modeling.terms.norms import L1, GroupNorms

NORMS = ("l1", "l2")


class GraphTV(Term):
    """``Σ_{i<j} w W_ij ‖f_i − f_j‖`` (``norm`` "l1" or "l2") on ``f = base``; see the module
    docstring. Attributes ``.W`` (CSR), ``.norm``, ``.base`` (f), ``.D`` (the incidence),
    ``.edges`` ((i, j) index arrays) and ``.edge_weights`` (``w W_ij``)."""

    name = "graph_tv"

    def __init__(self, argument, W, weight=1.0, norm: str = "l1"):
        base = as_expression(argument, "the argument of GraphTV")
        if len(base.shape) not in (1, 2):
            raise InvalidInputError(f"the argument of GraphTV must be a vector or an n×c "
                                    f"matrix of node values, got shape {base.shape}.")
        if norm not in NORMS:
            raise InvalidInputError(f"norm of GraphTV must be one of {NORMS}, got {norm!r}.")
        weight = scalar(weight, "weight", "GraphTV", low=0.0)
        n = base.shape[0]
        self.W = adjacency(W, n, "GraphTV")
        upper = sp.triu(self.W, k=1).tocoo()
        keep = upper.data > 0
        i, j = upper.row[keep].astype(np.int64), upper.col[keep].astype(np.int64)
        if len(i) == 0:
            raise InvalidInputError("W of GraphTV has no edge (no positive off-diagonal "
                                    "weight); pass the graph's weight matrix.")
        self.D = incidence_matrix(i, j, n)
        super().__init__(base.__rmatmul__(self.D), weight)
        self.base = base
        self.norm = norm
        self.edges = (i, j)
        self.edge_weights = weight * upper.data[keep]
        if norm == "l1":
            w = self.edge_weights.reshape((-1,) + (1,) * (len(self.shape) - 1))
            self._h: Term = L1(self.argument, np.broadcast_to(w, self.shape))
        else:
            self._h = GroupNorms(self.argument, self.edge_weights)
        self.program_class = self._h.program_class
        self.elementwise_prox = self._h.elementwise_prox

    def value(self, z):
        return self._h.value(z)

    def cvxpy(self, z):
        return self._h.cvxpy(z)

    def prox(self, v, t):
        return self._h.prox(v, t)

    def project_subgradient(self, z, u, tol):
        return self._h.project_subgradient(z, u, tol)

    def kink_scale(self, z):
        return self._h.kink_scale(z)

    def smoothed(self, z, delta, hessian=True):
        return self._h.smoothed(z, delta, hessian)

    def norm_structure(self):
        return self._h.norm_structure()

    def describe(self) -> str:
        return f"{self.name}(weight={self.weight:g}, norm={self.norm}, edges={len(self.edges[0])})"
