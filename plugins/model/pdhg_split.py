"""The model as PDHG splits it (docs/modeling.md, `pdhg`): ``F(θ) + Σ_k h_k(A_kθ) + g(θ)`` with F
the smooth terms, h_k the terms and constraints reached through a map (by their conjugate's
prox), g those on whole variables (by their prox); the metric D of a kernel expansion
(``D = K`` on α, so that steps move in K's range), entrywise |A| products for the diagonal
preconditioner, and power iterations for the norms the step sizes need."""

from __future__ import annotations

import numpy as np

from ssl_opt.modeling.maps import (
    LinearMap,
    MatMul,
    NotExplicit,
)
from ssl_opt.modeling.model import Model
from ssl_opt.modeling.patterns import same_matrix
from ssl_opt.modeling.term import Term
from ssl_opt.modeling.terms.margin import MarginLossTerm
from ssl_opt.modeling.terms.smooth import QuadraticForm

#: Safety factor on power-iteration estimates (they approach the norm from below).
NORM_SAFETY = 1.02


# ------------------------------------------------------------------ kernel metric
def innermost_matmul(m: LinearMap) -> MatMul | None:
    """The first factor applied by ``m`` when it is a matrix product, else None."""
    first = m.factors()[-1]
    return first if isinstance(first, MatMul) else None


def reduced_adjoint(m: LinearMap, g: np.ndarray) -> np.ndarray:
    """``K⁻¹ Aᵀ g`` for ``A = outer ∘ K`` with K symmetric: the adjoint without its last
    factor ``Kᵀ = K`` (no inverse is formed)."""
    if isinstance(m, MatMul):
        return np.asarray(g, dtype=np.float64).reshape(m.in_shape)
    return reduced_adjoint(m.inner, m.outer.adjoint(g))


def kernel_metrics(model: Model, exclude) -> tuple[dict[str, object], set[int]]:
    """``({variable: K}, ids of the quadratic forms on them)``: the variables α (not in
    ``exclude``) with a quadratic form ``w tr(αᵀKα)`` whose every other map starts with the
    same K (module docstring); K is then symmetric PSD (the quadratic form checked it)."""
    metrics, forms = {}, set()
    for var in model.variable_objects:
        if var.name in exclude or not var.shape:
            continue
        mats, quad, ok = [], [], True
        for t in model.all_terms:
            for v, m in t.argument.parts:
                if v is not var:
                    continue
                if isinstance(t, QuadraticForm) and t.argument.is_variable():
                    quad.append(t)
                    continue
                inner = innermost_matmul(m)
                if inner is None or inner.M.shape != (var.shape[0], var.shape[0]):
                    ok = False
                    break
                mats.append(inner.M)
            if not ok:
                break
        if ok and quad and mats and all(same_matrix(M, mats[0]) for M in mats[1:]) and all(
                same_matrix(q.M, mats[0]) for q in quad):
            metrics[var.name] = mats[0]
            forms |= {id(q) for q in quad}
    return metrics, forms


def is_quadratic(term: Term) -> bool:
    """A smooth term with a constant Hessian (its L from power iteration is exact)."""
    if "constant_hessian" in term.capabilities:  # Linear, SquaredError, Ridge, QuadraticForm
        return True
    return isinstance(term, MarginLossTerm) and "quadratic" in term.loss.capabilities


# ------------------------------------------------------------------ the split of a model
class Split:
    """The model as ``F + Σ g_v + Σ h_k`` in the metric D: which term plays which part, the
    maps (and their D⁻¹-adjoints), the flat layout and the multipliers' order."""

    def __init__(self, model: Model, kernel_metric: bool = True):
        self.model = model
        self.smooth_terms = model.smooth_terms
        self.has_smooth = bool(self.smooth_terms)
        self.shapes = dict(model.variables)
        self.slices: dict[str, slice] = {}
        start = 0
        for name, shape in self.shapes.items():
            size = int(np.prod(shape, dtype=int))
            self.slices[name] = slice(start, start + size)
            start += size
        self.size = start
        #: The certificate's order: non-smooth terms, then constraints.
        self.free: tuple[Term, ...] = model.nonsmooth_terms + model.constraints
        self.g: dict[str, Term] = {}
        for t in (*model.constraints, *model.nonsmooth_terms):
            if t.argument.is_variable() and "prox" in t.capabilities:
                self.g.setdefault(t.argument.parts[0][0].name, t)
        g_ids = {id(t) for t in self.g.values()}
        self.h: tuple[Term, ...] = tuple(t for t in self.free if id(t) not in g_ids)
        self.offsets = [0.0 if t.argument.offset is None else np.asarray(t.argument.offset)
                        for t in self.h]
        h_index = {id(t): k for k, t in enumerate(self.h)}
        g_var = {id(t): v for v, t in self.g.items()}
        self.roles = [("h", h_index[id(t)]) if id(t) in h_index else ("g", g_var[id(t)])
                      for t in self.free]
        self.metric, self._forms = kernel_metrics(model, set(self.g)) if kernel_metric else (
            {}, set())
        self.quadratic = all(is_quadratic(t) for t in self.smooth_terms)
        self.elementwise = {name: "elementwise_prox" in t.capabilities
                            for name, t in self.g.items()}

    # -- flat vectors
    def unpack(self, theta: np.ndarray) -> dict[str, np.ndarray]:
        return {n: theta[sl].reshape(self.shapes[n]) for n, sl in self.slices.items()}

    def _pull(self, term: Term, g: np.ndarray, out: np.ndarray, reduced: bool) -> None:
        """``out += A_tᵀg`` (``D⁻¹A_tᵀg`` when ``reduced``)."""
        for var, m in term.argument.parts:
            if reduced and var.name in self.metric:
                val = reduced_adjoint(m, g)
            else:
                val = m.adjoint(g)
            out[self.slices[var.name]] += np.ravel(val)

    def D(self, v: np.ndarray) -> np.ndarray:
        """The metric's product ``Dv`` (K on a kernel variable, identity elsewhere)."""
        if not self.metric:
            return v
        out = v.copy()
        for name, K in self.metric.items():
            sl = self.slices[name]
            shape = self.shapes[name]
            out[sl] = np.ravel(np.asarray(K @ v[sl].reshape(shape), dtype=np.float64))
        return out

    # -- the stacked map A and its adjoint (linear parts: no offsets)
    def A(self, theta: np.ndarray) -> list[np.ndarray]:
        x = self.unpack(theta)
        out = []
        for t in self.h:
            z = np.zeros(t.shape)
            for var, m in t.argument.parts:
                z = z + m.apply(x[var.name])
            out.append(z)
        return out

    def AT(self, ys: list[np.ndarray], reduced: bool = True) -> np.ndarray:
        out = np.zeros(self.size)
        for t, y in zip(self.h, ys, strict=True):
            self._pull(t, y, out, reduced)
        return out

    # -- the smooth part
    def smooth(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """``(F(θ), D⁻¹∇F(θ))``."""
        out = np.zeros(self.size)
        if not self.has_smooth:
            return 0.0, out
        x = self.unpack(theta)
        value = 0.0
        for t in self.smooth_terms:
            z = t.argument.value(x)
            value += t.value(z)
            if id(t) in self._forms:  # K⁻¹ ∇(w tr(αᵀKα)) = 2wα
                out[self.slices[t.argument.parts[0][0].name]] += 2.0 * t.weight * np.ravel(z)
            else:
                self._pull(t, t.gradient(z), out, True)
        return float(value), out

    def smooth_value(self, theta: np.ndarray) -> float:
        x = self.unpack(theta)
        return float(sum(t.value(t.argument.value(x)) for t in self.smooth_terms))

    def hessp(self, theta: np.ndarray, v: np.ndarray) -> np.ndarray:
        """``D⁻¹∇²F(θ)v`` (similar to the symmetric ``D^{-½}∇²F D^{-½}``)."""
        x, dv = self.unpack(theta), self.unpack(v)
        out = np.zeros(self.size)
        for t in self.smooth_terms:
            offset = 0.0 if t.argument.offset is None else t.argument.offset
            dz = t.argument.value(dv) - offset
            if id(t) in self._forms:
                out[self.slices[t.argument.parts[0][0].name]] += 2.0 * t.weight * np.ravel(dz)
            else:
                self._pull(t, t.hessp(t.argument.value(x), dz), out, True)
        return out

    # -- proxes
    def prox_g(self, v: np.ndarray, tau: np.ndarray) -> np.ndarray:
        """``prox_{Tg}(v)`` variable by variable (identity where a variable has no g)."""
        out = v.copy()
        for name, term in self.g.items():
            sl = self.slices[name]
            shape = self.shapes[name]
            t = tau[sl].reshape(shape) if self.elementwise[name] else float(tau[sl][0])
            out[sl] = np.ravel(term.prox(v[sl].reshape(shape), t))
        return out

    def prox_conjugate(self, k: int, v: np.ndarray, sigma) -> np.ndarray:
        """``prox_{σ h_k*}(v) = v − σ·prox_{h_k/σ}(v/σ)`` (Moreau)."""
        return v - sigma * self.h[k].prox(v / sigma, 1.0 / sigma)

    def multipliers(self, u_g: np.ndarray, ys: list[np.ndarray]) -> list[np.ndarray]:
        """One array per non-smooth term then constraint, in model order."""
        out = []
        for role, key in self.roles:
            if role == "h":
                out.append(np.array(ys[key]))
            else:
                out.append(u_g[self.slices[key]].reshape(self.shapes[key]).copy())
        return out


def power_iteration(op, v: np.ndarray, iters: int = 100, rtol: float = 1e-5) -> float:
    """The dominant eigenvalue of ``op`` (symmetric PSD, or similar to one) from the ratios
    ``‖op(v)‖/‖v‖``, times :data:`NORM_SAFETY`."""
    est = 0.0
    for _ in range(iters):
        nv = float(np.linalg.norm(v))
        if nv == 0.0:
            return 0.0
        w = op(v / nv)
        new = float(np.linalg.norm(w))
        if new == 0.0:
            return 0.0
        if abs(new - est) <= rtol * new:
            est = new
            break
        est, v = new, w
    return NORM_SAFETY * est


def lipschitz(split: Split, theta: np.ndarray, rng: np.random.Generator) -> float:
    """L of ∇F in the metric D: power iteration on ``D⁻¹∇²F`` when every smooth term offers
    ``hessp``, else a gradient-difference estimate (refined by backtracking)."""
    if not split.has_smooth:
        return 0.0
    v = rng.standard_normal(split.size)
    if all("hessp" in t.capabilities for t in split.smooth_terms):
        return power_iteration(lambda u: split.hessp(theta, u), v, iters=60, rtol=1e-4)
    v /= np.linalg.norm(v)
    eps = 1e-4 * max(1.0, float(np.linalg.norm(theta)))
    dg = split.smooth(theta + eps * v)[1] - split.smooth(theta)[1]
    return float(np.linalg.norm(dg)) / eps


# ------------------------------------------------------------------ the preconditioner
def preconditioner(split: Split, mode: str, rng: np.random.Generator):
    """``(Σ₀ per block, T₀⁻¹ flat, the measured norm)``, normalized so that
    ``‖Σ₀^{½} A (T₀D⁻¹)^{½}‖ = 1`` (module docstring). ``mode``: "elementwise" (row and
    column sums of |A|), "blocks" (Pock–Chambolle on the matrix of block norms
    ``‖A_kv D_v^{-½}‖``: one σ per term, one τ per variable) or "none" (one σ, one τ)."""
    if mode == "elementwise":
        rows, cols = _abs_sums(split, rng)
    else:
        rows, cols = [], np.zeros(split.size)
        for t in split.h:
            total = 0.0
            for var in t.argument.variables:
                a = _block_norm(split, t, var, rng) if mode == "blocks" else 1.0
                total += a
                cols[split.slices[var.name]] += a
            rows.append(np.full(t.shape, total))
    sigma0 = []
    for r, t in zip(rows, split.h, strict=True):
        r = np.asarray(r, dtype=np.float64)
        top = float(np.max(r, initial=0.0))
        if mode == "elementwise" and "elementwise_prox" in t.capabilities:
            sigma0.append(1.0 / np.where(r > 0, r, max(top, 1.0)))
        else:
            sigma0.append(1.0 / max(top, 1e-300))
    tinv0 = np.asarray(cols, dtype=np.float64).copy()
    for name, sl in split.slices.items():
        whole = name in split.metric or (name in split.g and not split.elementwise[name])
        if whole or mode != "elementwise":
            tinv0[sl] = float(np.max(tinv0[sl], initial=0.0))
    if mode != "elementwise":
        for name in split.g:
            split.elementwise[name] = False
    norm = _scaled_norm(split, sigma0, tinv0, rng)
    if norm > 0:
        sigma0 = [s / norm for s in sigma0]
        tinv0 = tinv0 * norm
    return sigma0, tinv0, norm

def _abs_sums(split: Split, rng: np.random.Generator) -> tuple[list, np.ndarray]:
    """``|A|1`` per block and ``|A|ᵀ1`` flat; a products-only part, or a part on a kernel
    variable, contributes its block norm to every row and column it couples."""
    cache: dict = {}
    rows, cols = [], np.zeros(split.size)
    for t in split.h:
        r = np.zeros(t.shape)
        for var in t.argument.variables:
            parts = [m for v, m in t.argument.parts if v is var]
            try:
                if var.name in split.metric:
                    raise NotExplicit
                r = r + sum(m.abs_apply(np.ones(var.shape), cache) for m in parts)
                col = sum(m.abs_adjoint(np.ones(t.shape), cache) for m in parts)
            except NotExplicit:
                nrm = _block_norm(split, t, var, rng)
                r = r + nrm
                col = np.full(var.shape, nrm)
            cols[split.slices[var.name]] += np.ravel(col)
        rows.append(r)
    return rows, cols

def _block_norm(split: Split, t: Term, var, rng: np.random.Generator) -> float:
    """``‖A_tv D_v^{-½}‖`` (the part of term t's map on variable ``var``) by power
    iteration on ``D⁻¹A_tvᵀA_tv``."""
    parts = [m for v, m in t.argument.parts if v is var]
    metric = var.name in split.metric

    def op(u):
        z = sum(m.apply(u) for m in parts)
        return sum(reduced_adjoint(m, z) if metric else m.adjoint(z) for m in parts)

    return float(np.sqrt(power_iteration(op, rng.standard_normal(var.shape),
                                         iters=50, rtol=1e-3)))

def _scaled_norm(split: Split, sigma0, tinv0, rng: np.random.Generator) -> float:
    """``‖Σ₀^{½} A (T₀D⁻¹)^{½}‖`` by power iteration on the stacked maps."""
    coupled = tinv0 > 0
    t0 = np.where(coupled, 1.0 / np.where(coupled, tinv0, 1.0), 0.0)

    def op(v):
        ys = [s * a for s, a in zip(sigma0, split.A(np.sqrt(t0) * v), strict=True)]
        return np.sqrt(t0) * split.AT(ys)

    v = rng.standard_normal(split.size) * coupled
    return float(np.sqrt(power_iteration(op, v)))
