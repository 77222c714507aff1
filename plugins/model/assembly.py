r"""Assembled Hessians of a model: ``H = Σ_k A_kᵀ ∇²h_k(z_k) A_k`` as one matrix.

Every term's argument is an affine map of the model's flat variable vector θ; each of its
parts (one per variable) is a chain of elementary maps (:mod:`ssl_opt.modeling.expressions`).
A part is split as ``A = P·C``: ``C`` the *core*, the chain from its outermost dense matrix
inward (a kernel expansion's ``K``), and ``P`` the sparse rest (row selections, incidence
matrices, scales, broadcasts). The terms' Hessians are first summed in the cores' output
spaces, ``Σ Pᵀ ∇²h P`` (sparse work), and every core is applied once per pair of blocks:
LapSVM + TV assembles ``Kᵀ(S_loss + L + DᵀWD)K`` with one GEMM, not one per term.

The result is a dense ``N×N`` array when its blocks store more than ``DENSE_FRACTION·N²``
entries (a kernel expansion), else a CSR matrix (ERE's F–W blocks through a thin dense X stay
sparse). Maps without a matrix (a products-only ``LinearOperator``) are refused by
:func:`unassemblable`, which names the term.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ssl_opt.modeling.maps import (
    Broadcast,
    Identity,
    LinearMap,
    MatMul,
    Rows,
    Scale,
    chain_matrix,
    mixed_product,
)
from ssl_opt.modeling.model import Model
from ssl_opt.modeling.term import LowRank

#: Largest number of unknowns for which a dense Hessian (8N² bytes) is assembled.
DENSE_MAX_UNKNOWNS = 8000
#: A Hessian with more stored entries than this fraction of N² is assembled dense.
DENSE_FRACTION = 0.1


def _size(shape) -> int:
    return int(np.prod(shape, dtype=int))


def _columns(shape) -> int:
    return _size(shape[1:]) if len(shape) > 1 else 1


def _dense(f) -> bool:
    return (isinstance(f, MatMul) and not sp.issparse(f.M)
            and not isinstance(f.M, spla.LinearOperator))


@dataclass
class Part:
    """One variable's share of a term's argument map, ``A = P·C``."""

    block: slice      # the variable's entries in θ
    P: object         # sparse, argument entries × core outputs
    core: tuple       # ids of the core's maps (() for none): parts with equal keys share C
    C: object         # dense core matrix, or None (the identity)

    @property
    def key(self) -> tuple:
        return (self.block.start, self.core)


def split_part(block: slice, linear: LinearMap, cores: dict) -> Part:
    """``A = P·C`` for one part (``cores`` caches each core's matrix by its key)."""
    factors = linear.factors()
    first = next((i for i, f in enumerate(factors) if _dense(f)), None)
    if first is None:
        return Part(block, sp.csr_matrix(chain_matrix(factors)), (), None)
    key = tuple(id(f) for f in factors[first:])
    if key not in cores:
        cores[key] = np.asarray(chain_matrix(factors[first:]))
    C = cores[key]
    P = (sp.identity(C.shape[0], format="csr") if first == 0
         else sp.csr_matrix(chain_matrix(factors[:first])))
    return Part(block, P, key, C)


def unassemblable(model: Model, terms) -> list[str]:
    """One reason per term whose argument map has no matrix."""
    reasons = []
    for t in terms:
        for _, linear in t.argument.parts:
            try:
                for f in linear.factors():
                    if isinstance(f, MatMul) and isinstance(f.M, spla.LinearOperator):
                        raise NotImplementedError("a products-only operator")
                    if not isinstance(f, (Identity, MatMul, Rows, Broadcast, Scale)) and \
                            getattr(f, "matrix", None) is None:
                        raise NotImplementedError(f"a {type(f).__name__} map without matrix()")
            except NotImplementedError as exc:
                reasons.append(f"{t.describe()} to have an argument with a matrix (it has {exc}; "
                               "irls-newton assembles the Hessian)")
                break
    return reasons


def as_matrix(S, size: int):
    """A term Hessian (1-D diagonal, sparse, dense or low rank) as a sparse or dense
    ``size×size``."""
    if isinstance(S, LowRank):
        return S.toarray()
    if sp.issparse(S):
        return S.tocsr()
    S = np.asarray(S, dtype=np.float64)
    if S.ndim == 1:
        return sp.diags(S, format="csr") if S.size == size else sp.diags(
            np.broadcast_to(S, (size,)), format="csr")
    return S


class HessianAssembler:
    """``H = Σ_k A_kᵀ S_k A_k`` for the argument maps of ``terms`` (fixed), given the terms'
    argument-space Hessians ``S_k`` at each call."""

    def __init__(self, model: Model, terms):
        self.model = model
        self.terms = tuple(terms)
        self.N = model.size
        slices = model.slices
        self._cores: dict = {}
        self.parts = [[split_part(slices[var.name], linear, self._cores)
                       for var, linear in t.argument.parts] for t in self.terms]

    @property
    def has_dense_core(self) -> bool:
        return bool(self._cores)

    def mids(self, hessians, skip=()) -> dict:
        """``{(row key, column key): (row part, column part, Σ Pᵀ S P)}`` over the terms whose
        ``S_k`` is not None (and whose index is not in ``skip``), blocks in the cores' output
        spaces, one per unordered pair of keys."""
        mids: dict = {}
        for index, (parts, t, S) in enumerate(zip(self.parts, self.terms, hessians,
                                                  strict=True)):
            if S is None or index in skip:
                continue
            S = as_matrix(S, _size(t.shape))
            for a in parts:
                SPa = mixed_product(S, a.P)
                for b in parts:
                    if b.key > a.key:
                        continue  # its transpose, (a, b), is the block assembled
                    block = mixed_product(b.P.T, SPa)
                    k = (b.key, a.key)
                    mids[k] = (b, a, block if k not in mids else mids[k][2] + block)
        return mids

    def assemble(self, hessians, dense: bool | None = None):
        """The assembled Hessian of the terms whose ``S_k`` is not None (dense when
        ``dense``, or when it stores more than ``DENSE_FRACTION·N²`` entries; else CSR)."""
        low_rank = {i for i, S in enumerate(hessians) if isinstance(S, LowRank)}
        mids = self.mids(hessians, skip=low_rank)
        blocks = [block for i in sorted(low_rank)
                  for block in self._low_rank_blocks(self.parts[i], hessians[i])]
        for k, (b, a, mid) in mids.items():
            block = mid
            if a.C is not None:
                block = mixed_product(block, a.C)
            if b.C is not None:
                block = mixed_product(b.C.T, block)
            blocks.append((b.block, a.block, block))
            if k[0] != k[1]:
                blocks.append((a.block, b.block, block.T))
        stored = sum(M.nnz if sp.issparse(M) else M.size for _, _, M in blocks)
        want_dense = dense if dense is not None else (
            stored > DENSE_FRACTION * self.N**2 and self.N <= DENSE_MAX_UNKNOWNS)
        if want_dense:
            H = np.zeros((self.N, self.N))
            for rows, cols, M in blocks:
                H[rows, cols] += M.toarray() if sp.issparse(M) else M
            return H
        if not blocks:
            return sp.csr_matrix((self.N, self.N))
        pieces = []
        for rows, cols, M in blocks:
            coo = sp.coo_matrix(M)
            pieces.append((coo.row + rows.start, coo.col + cols.start, coo.data))
        r, c, v = (np.concatenate(x) for x in zip(*pieces, strict=True))
        return sp.csr_matrix((v, (r, c)), shape=(self.N, self.N))


    @staticmethod
    def _low_rank_blocks(parts, H: LowRank) -> list:
        """The blocks ``C_bᵀP_bᵀ U diag(s) UᵀP_a C_a`` of a factored term Hessian, formed
        as ``G_b diag(s) G_aᵀ`` with ``G = CᵀPᵀU`` (k columns): O(N k) per block where
        the dense ``PᵀUsUᵀP`` pushed through the cores would cost a GEMM."""
        G = []
        for part in parts:
            g = np.asarray(part.P.T @ H.U)
            G.append(g if part.C is None else part.C.T @ g)
        return [(b.block, a.block, (gb * H.s) @ ga.T)
                for b, gb in zip(parts, G, strict=True) for a, ga in zip(parts, G, strict=True)]


class KernelReduction:
    r"""The Newton system of a kernel expansion solved in the kernel's range (the reduced
    system of the manifold family's Newton [000 §3.1], for any terms).

    Applies when one variable α enters only through a single dense square core ``C`` (``K``,
    or ``K ⊗ I_c`` for n×c outputs) — ``f = Kα + b`` and rows or sparse maps of it — and
    through quadratic forms ``ρ/2·αᵀCα`` of that same matrix (the RKHS norm). Then
    ``∇_α Φ = C(u + ρα)`` with ``u = Σ_k P_kᵀ∇h_k`` (the gradient in f-space) and
    ``∇²_{αα}Φ = C(M C + ρI)``, ``∇²_{αo}Φ = C M_{fo}``, so the Newton equations are
    ``C·[(M C + ρI) dα + M_{fo} do + u + ρα] = 0`` and the bracket set to 0 is the
    non-symmetric system

        [M C + ρI   M_fo] [dα]     [u + ρα]
        [M_of C     M_oo] [do] = − [g_o   ]

    (one LU: ``⅔n³`` instead of a GEMM ``2n³`` plus a Cholesky of ``C(MC + ρI)``, whose
    condition number is that of K squared — on LapSVM + TV that Cholesky stalls Newton at a
    stationarity of 1e-6, the reduced system converges to round-off).
    """

    def __init__(self, assembler: HessianAssembler, model: Model):
        self.assembler = assembler
        self.reason = ""
        self.alpha: slice | None = None
        self.key: tuple | None = None
        self.quadratic: dict[int, float] = {}  # term index → ρ (its Hessian is ρ·C)
        self._constant: tuple[np.ndarray, np.ndarray] | None = None  # (free others, A_const)
        self._constant_terms = {i for i, t in enumerate(assembler.terms)
                                if "constant_hessian" in t.capabilities}
        self._detect(model)

    @property
    def applies(self) -> bool:
        return not self.reason

    def _detect(self, model: Model) -> None:
        keys = {(p.block.start, p.core) for parts in self.assembler.parts for p in parts
                if p.core}
        if len(keys) != 1:
            self.reason = ("one kernel expansion" if not keys
                           else "a single dense matrix (several enter the maps)")
            return
        (start, key), = keys
        alpha = next(sl for sl in model.slices.values() if sl.start == start)
        C = self.assembler._cores[key]
        if C.shape != (alpha.stop - alpha.start,) * 2:
            self.reason = "a square kernel matrix applied to a whole variable"
            return
        for index, (t, parts) in enumerate(zip(self.assembler.terms, self.assembler.parts,
                                               strict=True)):
            bare = [p for p in parts if p.block == alpha and not p.core]
            if not bare:
                continue
            rho = _kernel_quadratic(t, C)
            if rho is None or len(parts) != 1:
                self.reason = (f"α to enter only through K (it enters {t.describe()} "
                               "directly)")
                return
            self.quadratic[index] = rho
        self.alpha, self.key = alpha, key

    def direction(self, hessians, pulled_core: np.ndarray, grad: np.ndarray, theta: np.ndarray,
                  free: np.ndarray) -> np.ndarray:
        """The Newton direction; ``pulled_core`` is ``u`` (the gradient before the core, in
        α's flat shape), ``grad`` the full gradient (for the other variables). The part of the
        reduced matrix from terms with a constant Hessian (``M_const C + ρI``: the graph
        quadratic's ``LK``, squared errors) is built once per free set and reused."""
        a = self.alpha
        n, N = a.stop - a.start, self.assembler.N
        others = np.setdiff1d(free, np.arange(a.start, a.stop))
        position = np.full(N, -1)  # row/column of each entry of θ in the reduced system
        position[a] = np.arange(n)
        position[others] = n + np.arange(others.size)
        terms = self.assembler.terms
        low_rank = {i for i, H in enumerate(hessians) if isinstance(H, LowRank)}
        constant = self._constant_terms - low_rank
        if self._constant is None or not np.array_equal(self._constant[0], others):
            A = np.zeros((n + others.size,) * 2)
            skip = set(self.quadratic) | (set(range(len(terms))) - constant)
            self._add(A, self.assembler.mids(hessians, skip=skip), position, n)
            A[np.arange(n), np.arange(n)] += sum(self.quadratic.values())
            self._constant = (others, A)
        A = self._constant[1].copy()
        skip = set(self.quadratic) | constant | low_rank
        self._add(A, self.assembler.mids(hessians, skip=skip), position, n)
        for index in low_rank:
            self._add_low_rank(A, index, hessians[index], position, n)
        rhs = np.concatenate([pulled_core + sum(self.quadratic.values()) * theta[a],
                              grad[others]])
        step = la.lu_solve(la.lu_factor(A, check_finite=False), -rhs, check_finite=False)
        d = np.zeros(N)
        d[a] = step[:n]
        d[others] = step[n:]
        return d

    def _add(self, A: np.ndarray, mids: dict, position: np.ndarray, n: int) -> None:
        """Add the blocks ``mids`` (:meth:`HessianAssembler.mids`) to the reduced matrix A,
        with the core C applied on α's columns."""
        C = self.assembler._cores[self.key]
        a = self.alpha
        for (kb, ka), (b, p, mid) in mids.items():
            for rows, cols, M in [(b, p, mid)] + ([(p, b, mid.T)] if kb != ka else []):
                block = mixed_product(M, C) if cols.block == a else M
                block = block.toarray() if sp.issparse(block) else np.asarray(block)
                if rows.block == a and cols.block == a:
                    A[:n, :n] += block
                    continue
                r, c = position[rows.block], position[cols.block]
                keep_r, keep_c = r >= 0, c >= 0
                A[np.ix_(r[keep_r], c[keep_c])] += block[np.ix_(keep_r, keep_c)]

    def _add_low_rank(self, A: np.ndarray, index: int, H: LowRank, position: np.ndarray,
                      n: int) -> None:
        """Add term ``index``'s blocks ``P_qᵀ U diag(s) Uᵀ P_p`` (C applied on α's columns)
        to A in the order that keeps them rank r: ``(P_qᵀU)·(s ∘ (UᵀP_p)C)``, ``O(r n²)``
        where forming ``Pᵀ U s Uᵀ P`` first and multiplying by C would cost a GEMM."""
        C = self.assembler._cores[self.key]
        a = self.alpha
        parts = self.assembler.parts[index]
        for q in parts:
            left = np.asarray(q.P.T @ H.U)
            r = position[q.block]
            keep_r = r >= 0
            for p in parts:
                right = H.s[:, None] * np.asarray((p.P.T @ H.U).T)
                if p.block == a:
                    right = right @ C
                block = left @ right
                if q.block == a and p.block == a:
                    A[:n, :n] += block
                    continue
                c = position[p.block]
                keep_c = c >= 0
                A[np.ix_(r[keep_r], c[keep_c])] += block[np.ix_(keep_r, keep_c)]

    def pulled_core(self, gradients) -> np.ndarray:
        """``u = Σ_k P_kᵀ∇h_k`` over the α parts through the core (``gradients``: each
        term's argument gradient; the quadratic forms of α are left out)."""
        u = np.zeros(self.alpha.stop - self.alpha.start)
        for index, (parts, g) in enumerate(zip(self.assembler.parts, gradients, strict=True)):
            if index in self.quadratic:
                continue
            for p in parts:
                if p.block == self.alpha and p.core:
                    u += p.P.T @ np.ravel(g)
        return u


def _kernel_quadratic(term, C: np.ndarray) -> float | None:
    """ρ when ``term`` is a quadratic form ``ρ/2·xᵀCx`` of the bare variable (its Hessian
    ``ρC``), else None."""
    M = getattr(term, "M", None)
    if "constant_hessian" not in term.capabilities or M is None or sp.issparse(M):
        return None
    if not term.argument.is_variable():
        return None
    columns = _columns(term.shape)
    base = C if columns == 1 else C[::columns, ::columns]
    if M.shape != base.shape or not (M is base or np.array_equal(M, base)):
        return None
    return 2.0 * term.weight


def predicted_entries(model: Model, terms) -> float:
    """An upper estimate of the stored entries of the assembled Hessian,
    ``Σ_k Σ_rows (entries of A_k's row)²`` capped at N² (a dense core counts as a dense row),
    from the maps' sparsity alone (no matrix is formed beyond the sparse factors)."""
    total = 0.0
    for t in terms:
        row = np.zeros(_size(t.shape))
        for _, linear in t.argument.parts:
            factors = linear.factors()
            first = next((i for i, f in enumerate(factors) if _dense(f)), None)
            if first is not None:
                row += float(_size(factors[first].in_shape))
                continue
            try:
                J = sp.csr_matrix(chain_matrix(factors))
            except NotImplementedError:
                return float(model.size) ** 2
            row += np.diff(J.indptr)
        total += float(np.sum(row * row))
    return min(total, float(model.size) ** 2)
