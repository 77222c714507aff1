"""The CVXPY program of a :class:`~ssl_opt.modeling.Model`, assembled from its terms alone
(docs/design.md §6): ``minimize Σ_k term_k.cvxpy(A_k x)`` subject to every constraint's CVXPY
form. A new term or constraint gets the reference with no other code.

A sum of row norms ``Σ_i w_i ‖z_i‖₂`` (``GroupNorms`` of a matrix, ``GraphTV`` with
``norm="l2"``: a term whose ``norm_structure`` has rows of several entries) is written with its
epigraph, ``Σ_i w_i t_i`` with ``cp.SOC(t, z, axis=1)``, the program CVXPY would build for the
atom anyway; the cone's dual values give the term's multipliers ``u_i = −w_i Λ_i/λ_i``
(CVXPY's Lagrangian subtracts ``⟨(λ, Λ), (t, z)⟩``), which the solution carries in
``info["multipliers"]`` for the certificate to start from (never trusted as such: any start
only bounds its minimization from above). Without them the certificate's minimization from 0
needs more than its 2,000 iterations on graph-TV models whose kinked edges form large
components (robust ERE on 300 points: 1.5e-3 after 2,000 iterations, 4.6e-9 after 20,000).

Kernel variables are reparameterized: a variable α that enters only through ``K α`` (K a dense
symmetric matrix, the same everywhere) and through RKHS terms ``αᵀKα`` is replaced by
``h = Rᵀα`` with ``K = RRᵀ``, so that ``Kα = R h`` and ``αᵀKα = ‖h‖²`` — the same problem, well
conditioned even when K is nearly singular (an RBF Gram matrix), which Clarabel otherwise may
fail on.

Every kernel variable's product ``u = Kα`` (``R h`` when reparameterized) is a variable of its
own, tied by one dense equality, so that the terms on ``f = Kα + b`` — the loss on its labeled
rows, a graph quadratic's or graph TV's sparse incidence product ``D f`` — stay sparse instead
of each multiplying K again (``D·K`` is a dense E × n block): the program a careful user writes
by hand, against which ``benchmarks/bench_reference.py`` times it (docs/modeling.md).
"""

from __future__ import annotations

import numpy as np

from ssl_opt.modeling.kernel_range import (
    innermost,
    kernel_substitutions,
    rank_estimate,
    rkhs_variable,
    same_matrix,
    square_kernel,
)
from ssl_opt.modeling.maps import Compose, MatMul, matrices
from ssl_opt.modeling.model import Model
from ssl_opt.numerics.factor import psd_factor
from ssl_opt.optional import cvxpy as cp
from ssl_opt.reference.cvxpy_solver import MULTIPLIERS, Formulation

#: Eigenvalues of K below this fraction of the largest are dropped from its factor.
KERNEL_RTOL = 1e-13


def kernel_factor(K: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``K ≈ R Rᵀ`` with ``R = V √λ`` over eigenvalues ``λ > KERNEL_RTOL·λ_max``, and ``V/√λ``.

    The program depends on α only through ``Kα = R h`` and ``αᵀKα = ‖h‖²`` with ``h = Rᵀα``,
    so the program over ``h`` is the same problem, well conditioned even when K is nearly
    singular (an RBF Gram matrix). Dropped directions change ``Kα`` by at most
    ``KERNEL_RTOL·‖K‖``.
    """
    R, lam = psd_factor(K, KERNEL_RTOL)
    if not lam.size:
        raise ValueError("K has no positive eigenvalue: the RKHS term is identically zero.")
    return R, R / lam


def build(model: Model):
    handles = {name: cp.Variable(shape, name=name) for name, shape in model.variables.items()}
    factors = {}
    for name, K in kernel_substitutions(model).items():
        R, to_alpha = kernel_factor(K)
        shape = (R.shape[1],) + model.variables[name][1:]
        factors[name] = (K, R, to_alpha, cp.Variable(shape, name=f"{name}_h"))
    kernels = {name: factor[0] for name, factor in factors.items()}
    products, ties = {}, []
    for name, K in _kernel_products(model).items():
        u = cp.Variable(model.variables[name], name=f"{name}_K")
        products[name] = (K, u)
        ties.append(u == (factors[name][1] @ factors[name][3] if name in factors
                          else K @ handles[name]))
    objective = 0
    cones = {}
    for k, term in enumerate(model.terms):
        name = rkhs_variable(term, kernels)
        rows = _row_norm_weights(term)
        if rows is not None:
            t = cp.Variable(rows.size, name=f"t_{k}")
            cones[k] = cp.SOC(t, _argument(term.argument, handles, products), axis=1)
            objective = objective + rows @ t
        elif name is not None:
            objective = objective + term.weight * cp.sum_squares(factors[name][3])
        else:
            objective = objective + term.cvxpy(_argument(term.argument, handles, products))
    constraints = list(cones.values()) + ties
    for c in model.constraints:
        constraints.extend(c.cvxpy(_argument(c.argument, handles, products)))
    return cp.Problem(cp.Minimize(objective), constraints), (handles, factors, cones)


def recover(model: Model, state) -> dict[str, np.ndarray]:
    handles, factors, cones = state
    out = {}
    for name, h in handles.items():
        if name in factors:
            value = factors[name][2] @ np.asarray(factors[name][3].value, dtype=np.float64)
        else:
            value = np.asarray(h.value, dtype=np.float64)
        out[name] = value.reshape(model.variables[name])
    if cones:
        out[MULTIPLIERS] = _multipliers(model, cones)
    return out


def _row_norm_weights(term) -> np.ndarray | None:
    """The row weights ``w`` of a term that is ``Σ_i w_i ‖z_i‖₂`` over the rows of a matrix
    argument (rows of several entries), else None."""
    if "norm_structure" not in term.capabilities or term.program_class != "SOCP":
        return None
    w, size, rho = term.norm_structure()
    if size < 2 or rho != 0.0 or len(term.shape) != 2 or term.shape[1] != size:
        return None
    return np.asarray(w, dtype=np.float64)


def _multipliers(model: Model, cones: dict) -> list[np.ndarray]:
    """One array per non-smooth term and constraint (the certificate's order): ``−w_i Λ_i/λ_i``
    for the rows of an epigraph cone, zeros elsewhere."""
    out = []
    for k, term in enumerate(model.terms):
        if term.smooth:
            continue
        u = np.zeros(term.shape)
        cone = cones.get(k)
        if cone is not None and cone.dual_value is not None:
            lam, Lam = cone.dual_value
            lam = np.asarray(lam, dtype=np.float64).reshape(-1)
            Lam = np.asarray(Lam, dtype=np.float64).reshape(term.shape)
            w = _row_norm_weights(term)
            positive = lam > 0
            u[positive] = -(w[positive] / lam[positive])[:, None] * Lam[positive]
        out.append(u)
    return out + [np.zeros(c.shape) for c in model.constraints]


def _argument(expr, handles, products):
    """``expr`` in CVXPY, with every ``Kα`` of a kernel variable read off its product
    variable."""
    total = None
    for var, m in expr.parts:
        if var.name in products and _is_product(m, products[var.name][0]):
            part = _apply(m, products[var.name][1])
        else:
            part = m.cvxpy(handles[var.name])
        total = part if total is None else total + part
    return total if expr.offset is None else total + expr.offset


def _apply(m, leaf):
    """The map ``m`` with ``leaf`` (the variable ``Kα``) in place of its innermost ``K``
    product."""
    if isinstance(m, Compose):
        return m.outer.cvxpy(_apply(m.inner, leaf))
    return leaf


def _is_product(m, K) -> bool:
    inner = innermost(m)
    return isinstance(inner, MatMul) and same_matrix(inner.M, K)


def _kernel_products(model: Model) -> dict[str, np.ndarray]:
    """Variables entering some argument through a dense square ``K`` (the first one met):
    each gets its product ``Kα`` as a variable (module docstring)."""
    found: dict[str, np.ndarray] = {}
    for term in model.all_terms:
        for var, m in term.argument.parts:
            K = square_kernel(m)
            if K is not None:
                found.setdefault(var.name, K)
    return found


def missing(model: Model) -> list[str]:
    return terms_missing(model.all_terms)


def terms_missing(terms) -> list[str]:
    """Why ``terms`` cannot enter a CVXPY program (no CVXPY form, a products-only operator in
    the argument, non-convex), one reason each."""
    reasons = []
    for term in terms:
        if "cvxpy" not in term.capabilities:
            reasons.append(f"a CVXPY expression for {term.describe()} (it has none)")
        if not term.argument.explicit:
            reasons.append(f"explicit matrices in the argument of {term.describe()} (a "
                           "products-only operator cannot enter a CVXPY program)")
        if not term.convex:
            reasons.append(f"{term.describe()} to be convex")
    return reasons


def cost(model: Model) -> float:
    """Interior point on the assembled program, about 25 iterations: a kernel variable's tie
    ``u = Kα`` is one dense n × n block and the maps of ``u`` are sparse; another map with a
    dense factor enters as its dense product, costing O(rows·cols·min(rows, cols)) per
    factorization; sparse maps grow like (nnz + N)^1.5;
    exponential cones (entropy, logistic) take several times the iterations and work of a QP
    (measured: LASS with an entropy at N = 3000, 3–9 s)."""
    products, substituted = _kernel_products(model), kernel_substitutions(model)
    dense = once = 0.0
    for name, K in products.items():  # the ties u = Kα (u = R h when reparameterized)
        n, columns = float(K.shape[0]), float(np.prod(model.variables[name][1:]))
        if name in substituted:
            once += n**3  # the eigendecomposition of K
            dense += columns * n * rank_estimate(K, KERNEL_RTOL) ** 2
        else:
            dense += columns * n**3
    nnz = model.size
    for term in model.all_terms:
        for var, m in term.argument.parts:
            if var.name in products and _is_product(m, products[var.name]):
                nnz += sum(getattr(M, "nnz", 0) for M in matrices(m))  # maps of u: sparse
            elif any(isinstance(M, np.ndarray) for M in matrices(m)):
                rows = float(m.out_shape[0]) if m.out_shape else 1.0
                cols = float(m.in_shape[0]) if m.in_shape else 1.0
                dense += rows * cols * min(rows, cols)
            else:
                nnz += sum(getattr(M, "nnz", 0) for M in matrices(m))
        own = getattr(term, "M", None)
        if isinstance(own, np.ndarray) and rkhs_variable(term, substituted) is None:
            dense += float(own.shape[0]) ** 3
    seconds = 0.05 + EIGH_SECONDS * once + 25 * (1.5e-10 * dense + 5e-9 * nnz**1.5)
    if model.structure.program_class == "exponential-cone":
        seconds *= 8.0
    elif dense and (model.nonsmooth_terms or model.constraints):
        seconds *= NONSMOOTH_DENSE_FACTOR
    return seconds


#: Seconds per n³ of a dense symmetric eigendecomposition (numpy, 2 cores, n = 1,000–3,500).
EIGH_SECONDS = 1.1e-10
#: Clarabel on a program with dense blocks and a non-smooth term or a constraint (a kernel
#: expansion plus ℓ1, simplex rows on kernel scores) took 1.5–4× the QP model above
#: (LapRLS + ℓ1 at n = 1,000, simplex scores at 500–1,000: benchmarks/bench_modeling.py).
NONSMOOTH_DENSE_FACTOR = 3.0


FORMULATION = Formulation(Model, build, recover, missing, cost)
