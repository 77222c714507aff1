"""The model as ADMM-split sees it (docs/modeling.md, `admm-split`): the quadratic terms in one
cached θ-system, every other term and constraint split off with its prox, per-column
(separable) structure and a kernel expansion reduced to K's range; the system's factor and
the cost model of one solve."""

from __future__ import annotations

import weakref

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ssl_opt.modeling.maps import (
    MatMul,
    chain_matrix,
    mixed_product,
    split_rows,
)
from ssl_opt.modeling.model import Model
from ssl_opt.modeling.terms.margin import MarginLossTerm
from ssl_opt.modeling.terms.smooth import Linear, QuadraticForm
from ssl_opt.plugins.model.common import (
    DENSE_ENTRY_SECONDS,
    ELEMENT_SECONDS,
    SPARSE_ENTRY_SECONDS,
    kernel_expansion,
)

#: Iterations assumed by ``predicted_time`` (measured, tol 1e-8: 20–25 on simplex-constrained
#: kernel scores, 35–70 on LASS + ℓ1 graph; ERE + ℓ2,1, whose F only the split terms see:
#: 390–760; LapRLS + ℓ1 on α, a kernel without the reduction: 6,000 at n = 120).
ITERATIONS, UNCOVERED_ITERATIONS, KERNEL_ITERATIONS = 60.0, 600.0, 5000.0
#: Passes over the split arguments per iteration (proxes, updates, Anderson), and the Python
#: overhead of one split term's prox, map and adjoint calls per iteration.
ELEMENT_PASSES, CALL_SECONDS = 2.0, 5e-5

_LAST_VIEW: list = []


# ------------------------------------------------------------------ structure
def is_quadratic(term) -> bool:
    """A smooth term with a constant, assembled Hessian."""
    if "hessian" not in term.capabilities:
        return False
    if "constant_hessian" in term.capabilities:  # Linear, SquaredError, Ridge, QuadraticForm
        return True
    return isinstance(term, MarginLossTerm) and "quadratic" in term.loss.capabilities


def column_hessian(term, z, columns: int):
    """The term's (constant) Hessian on one column (None: it is not ``H₀ ⊗ I_c``)."""
    if isinstance(term, QuadraticForm):
        if columns == 1 and len(term.shape) == 2:
            return term.hessian(z)
        M = term.M
        return (2.0 * term.weight) * (sp.csr_matrix(M) if sp.issparse(M) else np.asarray(M))
    H = term.hessian(z)
    if columns == 1:
        return sp.diags(np.asarray(H, dtype=np.float64), format="csr") if (
            not sp.issparse(H) and np.ndim(H) == 1) else H
    m = split_rows(term.shape, columns)
    if not sp.issparse(H) and np.ndim(H) == 1:
        d = np.broadcast_to(np.asarray(H, dtype=np.float64), (m * columns,)).reshape(m, columns)
        return sp.diags(d[:, 0], format="csr") if np.all(d == d[:, :1]) else None
    H0 = H[::columns, ::columns]
    expected = sp.kron(sp.csr_matrix(H0), sp.identity(columns), format="csr")
    diff = sp.csr_matrix(H) - expected
    return H0 if abs(diff).sum() <= 1e-14 * max(1.0, abs(sp.csr_matrix(H)).sum()) else None


class _Part:
    """One variable's share of a term's argument in the view: ``A = P`` (or ``P·K`` for the
    reduced kernel variable, ``core`` True)."""

    def __init__(self, var: int, P, core: bool):
        self.var, self.P, self.core = var, P, core
        self.PT = None if P is None else (P.T.tocsr() if sp.issparse(P) else P.T)


class View:
    """The model's variables as one matrix ``x`` (rows × c) and every term's argument map as
    matrices on it (see the module docstring); ``reason`` says why it cannot be built."""

    def __init__(self, model: Model):
        self.model = model
        self.reason = ""
        self.names = list(model.variables)
        self.shapes = [model.variables[n] for n in self.names]
        self.terms = model.all_terms
        self.columns = self._columns()
        self._build(self.columns)
        if self.reason and self.columns > 1:  # a map mixes the columns: the flat view
            self.reason = ""
            self.columns = 1
            self._build(1)

    def _columns(self) -> int:
        cols = {s[1] for s in self.shapes if len(s) == 2}
        if len(cols) != 1:
            return 1
        c = cols.pop()
        ok = all(len(s) == 2 or s == (c,) for s in self.shapes) and all(
            len(t.shape) == 2 and t.shape[1] == c or t.shape == (c,) for t in self.terms)
        return c if ok else 1

    def _build(self, c: int) -> None:
        self.rows = [split_rows(s, c) for s in self.shapes]
        self.starts = np.concatenate([[0], np.cumsum(self.rows)]).astype(int)
        self.size = int(self.starts[-1])
        index = {n: i for i, n in enumerate(self.names)}
        self.kernel, self.kernel_var, self.rho_kernel = None, -1, 0.0
        self.kernel_forms: set[int] = set()
        if c > 1 or all(len(s) <= 1 for s in self.shapes):
            self._detect_kernel(index)
        self.parts: list[list[_Part]] = []
        for k, t in enumerate(self.terms):
            parts = []
            for var, linear in t.argument.parts:
                i = index[var.name]
                if k in self.kernel_forms:
                    parts.append(_Part(i, None, False))
                    continue
                factors = linear.factors()
                core = i == self.kernel_var
                if core:
                    factors = factors[:-1]
                try:
                    P = (chain_matrix(factors, c) if factors else
                         sp.identity(self.rows[i], format="csr"))
                except NotImplementedError as exc:
                    self.reason = f"{t.describe()} to have matrices in its maps ({exc})"
                    return
                if P is None:
                    self.reason = f"{t.describe()} maps every column alike"
                    return
                parts.append(_Part(i, P, core))
            self.parts.append(parts)

    def _detect_kernel(self, index) -> None:
        """The variable α entering only through one dense square K and RKHS norms on K."""
        for i, shape in enumerate(self.shapes):
            if not shape or shape[0] < 2:
                continue
            n, K, forms, ok = shape[0], None, set(), True
            for k, t in enumerate(self.terms):
                for var, linear in t.argument.parts:
                    if self.names.index(var.name) != i:
                        continue
                    if (isinstance(t, QuadraticForm) and t.argument.is_variable()
                            and not sp.issparse(t.M)
                            and not isinstance(t.M, spla.LinearOperator)):
                        forms.add(k)
                        continue
                    inner = linear.factors()[-1]
                    M = getattr(inner, "M", None)
                    if (not isinstance(inner, MatMul) or not isinstance(M, np.ndarray)
                            or M.shape != (n, n)):
                        ok = False
                    elif K is None:
                        K = M
                    elif M is not K and not np.array_equal(M, K):
                        ok = False
            forms_ok = K is not None and all(
                self.terms[k].M is K or np.array_equal(self.terms[k].M, K) for k in forms)
            if ok and forms and forms_ok:
                self.kernel, self.kernel_var, self.kernel_forms = K, i, forms
                self.rho_kernel = sum(2.0 * self.terms[k].weight for k in forms)
                return

    # -- conversions
    def to_x(self, values: dict) -> np.ndarray:
        x = np.zeros((self.size, self.columns))
        for i, name in enumerate(self.names):
            x[self.starts[i]:self.starts[i + 1]] = np.reshape(values[name], (self.rows[i],
                                                                             self.columns))
        return x

    def to_values(self, x: np.ndarray) -> dict[str, np.ndarray]:
        return {name: x[self.starts[i]:self.starts[i + 1]].reshape(self.shapes[i])
                for i, name in enumerate(self.names)}

    def term_array(self, k: int, z) -> np.ndarray:
        t = self.terms[k]
        return np.reshape(np.asarray(z, dtype=np.float64),
                          (split_rows(t.shape, self.columns), self.columns))

    def block(self, x: np.ndarray, i: int) -> np.ndarray:
        return x[self.starts[i]:self.starts[i + 1]]

    # -- maps
    def apply(self, k: int, x: np.ndarray, Kx: np.ndarray | None) -> np.ndarray:
        """``A_k x`` (no offset), rows × c of the term; ``Kx`` = K·(kernel block of x)."""
        out = None
        for p in self.parts[k]:
            v = Kx if p.core else self.block(x, p.var)
            val = mixed_product(p.P, v)
            out = val if out is None else out + val
        return out

    def adjoint(self, k: int, q: np.ndarray, out: np.ndarray) -> None:
        """``out += A_kᵀ q`` with the kernel variable's rows before K (the reduced space)."""
        for p in self.parts[k]:
            out[self.starts[p.var]:self.starts[p.var + 1]] += mixed_product(p.PT, q)

    def system(self, hessians) -> tuple[object, object]:
        """``(R_smooth, R_split)``: the system matrix is ``R_smooth + ρ R_split``; hessians[k]
        is the term's column Hessian (None for a non-smooth term, counted with weight 1 in
        ``R_split``). In the reduced kernel form the kernel rows are ``Σ P_αᵀ S P·(K on the α
        columns) + ρ_K I``."""
        mats, self.traces = [], []
        for split in (False, True):
            blocks: dict = {}
            for k in range(len(self.terms)):
                if k in self.kernel_forms:
                    continue
                S = hessians[k]
                if (S is None) != split:
                    continue
                if S is None:
                    S = sp.identity(self.parts[k][0].P.shape[0], format="csr")
                for a in self.parts[k]:
                    SPa = mixed_product(S, a.P)
                    for b in self.parts[k]:
                        key = (b.var, a.var, a.core)
                        blk = mixed_product(b.P.T, SPa)
                        blocks[key] = blk if key not in blocks else blocks[key] + blk
            mats.append(self._assemble(blocks, add_kernel=not split))
            self.traces.append(self._trace(blocks, add_kernel=not split))
        return mats[0], mats[1]

    def _trace(self, blocks: dict, add_kernel: bool) -> float:
        """The trace of the unreduced matrix (``tr(K B K) = Σ K ∘ (B K)ᵀ`` on the kernel
        block): the scale of the smooth part and of the split part, for the default ρ."""
        total = 0.0
        for (bi, ai, core), blk in blocks.items():
            if bi != ai:
                continue
            if core:
                BK = np.asarray(mixed_product(blk, self.kernel))
                total += float(np.sum(self.kernel * BK.T))
            else:
                total += float(blk.diagonal().sum() if sp.issparse(blk) else np.trace(blk))
        if add_kernel and self.kernel is not None:
            total += self.rho_kernel * float(np.trace(self.kernel))
        return total

    def _assemble(self, blocks: dict, add_kernel: bool):
        dense = self.kernel is not None or any(not sp.issparse(b) for b in blocks.values())
        R = np.zeros((self.size, self.size)) if dense else None
        coo = []
        for (bi, ai, core), blk in blocks.items():
            if core:
                blk = mixed_product(blk, self.kernel)
            rs, cs = self.starts[bi], self.starts[ai]
            if dense:
                R[rs:rs + blk.shape[0], cs:cs + blk.shape[1]] += (
                    blk.toarray() if sp.issparse(blk) else blk)
            else:
                b = sp.coo_matrix(blk)
                coo.append((b.row + rs, b.col + cs, b.data))
        if add_kernel and self.kernel is not None:
            s = self.starts[self.kernel_var]
            idx = np.arange(s, s + self.rows[self.kernel_var])
            R[idx, idx] += self.rho_kernel
        if dense:
            return R
        if not coo:
            return sp.csr_matrix((self.size, self.size))
        r, c, v = (np.concatenate(a) for a in zip(*coo, strict=True))
        return sp.csr_matrix((v, (r, c)), shape=(self.size, self.size))


def view_of(model: Model) -> View:
    """The model's :class:`View`, cached for the last model (structure_reasons,
    predicted_time and the solve ask for it in turn)."""
    if _LAST_VIEW and _LAST_VIEW[0]() is model:
        return _LAST_VIEW[1]
    view = View(model)
    _LAST_VIEW[:] = [weakref.ref(model), view]
    return view


def _entries(P) -> float:
    return float(P.nnz) if sp.issparse(P) else float(np.size(P))


def iterations_expected(view: View) -> float:
    """ADMM iterations to the certificate: ITERATIONS when the smooth part has curvature on
    every row of the system, plus UNCOVERED_ITERATIONS × the fraction of rows without (a
    variable only the split terms see: the iteration then creeps); KERNEL_ITERATIONS when a
    dense square matrix enters the maps without the reduction (K·K conditioning)."""
    if view.kernel is None and kernel_expansion(view.model, view.terms):
        return KERNEL_ITERATIONS
    covered = np.zeros(len(view.names), dtype=bool)
    for t in view.terms:
        if t.smooth and not isinstance(t, Linear):
            for var, _ in t.argument.parts:
                covered[view.names.index(var.name)] = True
    rows = np.asarray(view.rows, dtype=float)
    uncovered = float(rows[~covered].sum() / rows.sum())
    return ITERATIONS + UNCOVERED_ITERATIONS * uncovered


def predicted_seconds(view: View) -> float:
    r"""``setup + iterations × per_iteration`` with, per column system of S rows (c columns):

    * dense (a kernel or a dense map): ``S³/3e10`` (LU or Cholesky) and ``S²c`` dense entries
      per solve, plus one product with K per iteration;
    * sparse: ``2.5e-9·E^1.3`` for the factorization and ``E·c`` sparse entries per solve,
      ``E = Σ_k Σ_rows (row entries of A_k)² + nnz(M)`` of the quadratic forms (an upper
      estimate of the matrix's entries);
    * per iteration, the split maps forward and back (entries × c) and ``ELEMENT_PASSES``
      passes over the split arguments (proxes, the relaxed update, the Anderson step), and
      ``CALL_SECONDS`` of Python overhead per split term (and twice for the step itself).

    Measured against this prediction (admm-split time / predicted, tol 1e-8, best of 2):
    LASS + ℓ1 graph 0.6–1.4 (N = 150..20,000), simplex-constrained kernel scores 0.5–2.4
    (n = 90..1,000), ERE + ℓ2,1 0.4–1.3 (n = 200..1,500), LapRLS + ℓ1 ≈ 1.1 (n = 120).
    """
    c, S = view.columns, float(view.size)
    dense = view.kernel is not None
    E = S
    maps = 0.0
    split_entries = 0.0
    for k, t in enumerate(view.terms):
        if k in view.kernel_forms:
            continue
        for p in view.parts[k]:
            dense = dense or not sp.issparse(p.P)
            if sp.issparse(p.P):
                per_row = np.diff(sp.csr_matrix(p.P).indptr).astype(float)
                E += float(per_row @ per_row)
        M = getattr(t, "M", None)
        if M is not None and sp.issparse(M):
            E += float(M.nnz)
        if not t.smooth:
            split_entries += float(np.prod(t.shape, dtype=float))
            maps += sum(2.0 * _entries(p.P) * c * (SPARSE_ENTRY_SECONDS if sp.issparse(p.P)
                                                     else DENSE_ENTRY_SECONDS)
                        for p in view.parts[k])
    if view.kernel is not None:
        maps += DENSE_ENTRY_SECONDS * float(view.kernel.size) * c
    if dense:
        setup, solve = S**3 / 3e10, DENSE_ENTRY_SECONDS * S * S * c
    else:
        setup, solve = 2.5e-9 * E**1.3, SPARSE_ENTRY_SECONDS * E * c
    calls = CALL_SECONDS * (2.0 + sum(1 for t in view.terms if not t.smooth))
    per_iteration = solve + maps + ELEMENT_PASSES * ELEMENT_SECONDS * split_entries + calls
    return 0.01 + setup + iterations_expected(view) * per_iteration


class SystemFactor:
    """A factorization of ``R`` reused for every right-hand side."""

    def __init__(self, R, symmetric: bool):
        self.dense = not sp.issparse(R)
        if self.dense:
            if symmetric:
                try:
                    self.cho = la.cho_factor(R, check_finite=False)
                    self.kind = "cholesky"
                    return
                except la.LinAlgError:
                    pass
            self.lu = la.lu_factor(R, check_finite=False)
            self.kind = "lu"
        else:
            self.kind = "splu"
            self.lu = spla.splu(sp.csc_matrix(R), permc_spec="MMD_AT_PLUS_A",
                                diag_pivot_thresh=0.0 if symmetric else 1.0,
                                options={"SymmetricMode": symmetric})

    def regular(self) -> bool:
        """No zero or non-finite pivot (SuperLU raises on an exactly singular matrix)."""
        if self.kind != "lu":
            return True
        pivots = np.diag(self.lu[0])
        return bool(np.all(np.isfinite(pivots)) and np.all(pivots != 0))

    def solve(self, b: np.ndarray) -> np.ndarray:
        if self.kind == "cholesky":
            return la.cho_solve(self.cho, b, check_finite=False)
        if self.kind == "lu":
            return la.lu_solve(self.lu, b, check_finite=False)
        return self.lu.solve(b)
