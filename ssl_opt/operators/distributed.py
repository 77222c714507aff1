r"""A design matrix row-partitioned across the workers of a ``dask.distributed`` cluster.

:class:`DaskDesign` is ``X̃ = [X, 1]`` of the linear family [001 §2] (a
:class:`~ssl_opt.numerics.design.LinearDesign`) whose rows live on the workers of a
``distributed.Client``: MFN and its CGLS [001 §2.1], TSVM [001 §3.1] and DA [001 §3.2] run on it
unchanged, since they touch ``X`` only through ``matvec``, ``rmatvec`` and ``rows``, and CGLS
dispatches to the design's fused iteration (:attr:`DaskDesign.cgls`).

What lives where
----------------
* **Workers**: the row blocks ``X_1, …, X_B`` of ``X`` (CSR, or a dense float64 array), built
  there from the dask array's chunks (by default merged into one contiguous block per worker
  thread, so ``B`` is the number of worker threads), and the transient row subsets MFN's CGLS
  runs on (its active rows, computed on the workers from local indices).
* **Client**: the small vectors: weights ``w`` and the CGLS vectors ``β, p, r`` (``d + 1``
  floats each); the outputs ``o = X̃w`` over the rows (``n`` floats); the labels, TSVM's
  switched labels ``ŷ`` and DA's ``p`` with its ν root (``u`` floats). ``X`` is never gathered:
  :attr:`X` raises.
* **Workers, for one CGLS solve** (the fused CGLS, :meth:`DaskDesign.fused_cgls`): its weights
  ``C_b`` and targets ``b_b`` next to each block, sent once per solve.

Products (a map over the blocks and a reduction)
------------------------------------------------
* ``X̃ w``: each block's task receives ``w[:d]`` and returns ``X_b w[:d]`` (``n_b`` floats);
  the client concatenates the pieces in block order and adds the bias ``w[d]``.
* ``X̃ᵀ v``: ``v`` is split by the block offsets, each piece sent with its block's task, which
  returns ``X_bᵀ v_b`` (``d`` floats, ``d × k`` for ``k`` columns); the ``B`` partial sums are
  added pairwise on the workers (a tree of ``B − 1`` tasks) and one ``d``-vector reaches the
  client, which appends the bias row ``Σ v``.
* A fused CGLS iteration [001 §2.1]: ``p`` goes to every block, whose one task computes
  ``q_b = X̃_b p`` and returns ``[X̃_bᵀC_b q_b, q_bᵀC_b q_b]``; the client adds the ``B`` pieces
  (pairwise on the workers instead when they exceed :data:`CLIENT_SUM_BYTES`) and updates
  ``β`` and the residual ``r`` by the recurrence; ``z = C(b − X̃β)`` is never formed.

Bytes per CGLS iteration (``n_a`` active rows, ``B`` blocks, ``dim = d + 1``):

* fused (default): ``8·B·dim`` to the workers and ``8·B·(dim + 1)`` back — no ``n``-vector —
  **one synchronization** and ``B`` tasks; once per solve ``8·3·n_a`` to the workers (``C``,
  ``b``, the seed's outputs), the start ``X̃ᵀ[z, Cb]`` and, for a converged solve, the true
  residual that certifies it (two more synchronizations).
* ``fused=False`` (one of each product): ``8·B·d`` to the workers with ``p`` and ``8·n_a``
  back; ``8·n_a`` to the workers with ``z`` and ``8·d`` back, plus at most ``8·(B − 1)·d``
  between workers in the tree — ``8·((B + 1)·d + 2·n_a)`` bytes through the client, two
  synchronizations (one per product) and ``3B − 1`` tasks.

:attr:`DaskDesign.traffic` counts them (shared with the designs :meth:`rows` derives).

Compared with :class:`LinearDesign`, ``X̃ w`` is computed row by row exactly as in memory;
``X̃ᵀ v`` adds the blocks' partial sums in a different order, and the fused CGLS updates ``r``
by a recurrence instead of from ``z`` (round-off only: the converged result is certified by the
true residual).
"""

from __future__ import annotations

import functools
import operator
import time
from dataclasses import asdict, dataclass

import numpy as np
import scipy.sparse as sp

from ssl_opt.exceptions import InvalidInputError
from ssl_opt.numerics.cgls import CGLSResult, cgls_start, iteration_cap
from ssl_opt.numerics.design import PAIR_SECONDS_PER_ENTRY, LinearDesign
from ssl_opt.operators._cluster import resolve_client, sync_seconds
from ssl_opt.operators.dask_blocks import (
    as_block,
    block_cgls_rows,
    block_cgls_start,
    block_cgls_step,
    block_cgls_true_residual,
    block_info,
    block_matvec,
    block_nnz,
    block_rmatvec,
    take_rows,
    vstack_blocks,
)

_F8 = 8  # bytes per float64
#: The fused CGLS sums the blocks' ``dim + 1`` partial sums on the client while they total at
#: most this many bytes (one synchronization); above it, pairwise on the workers (a tree:
#: ``⌈log₂B⌉`` more dependent hops, one vector to the client).
CLIENT_SUM_BYTES = 32 * 2**20


@dataclass
class DaskTraffic:
    """What the products moved, counted on the client (shared by a design and its row
    subsets). ``bytes_between_workers`` is an upper bound: a tree sum whose two operands sit on
    the same worker moves nothing."""

    matvecs: int = 0
    rmatvecs: int = 0
    round_trips: int = 0
    tasks: int = 0
    bytes_to_workers: int = 0
    bytes_from_workers: int = 0
    bytes_between_workers: int = 0
    #: Fused CGLS: solves, iterations (one synchronization each: ``X̃p``, ``pᵀX̃ᵀCX̃p`` and
    #: ``X̃ᵀCX̃p`` in one task per block) and true-residual evaluations.
    cgls_solves: int = 0
    cgls_steps: int = 0
    residual_checks: int = 0
    #: Rows the products ran over (their compute is proportional to these rows' non-zeros).
    rows: int = 0
    #: Wall-clock seconds the client spent in products (waiting included).
    seconds: float = 0.0

    def snapshot(self) -> dict[str, float]:
        return asdict(self)

    def reset(self) -> None:
        for name, value in asdict(self).items():
            setattr(self, name, type(value)())


# ------------------------------------------------------------------------------- the design
def _resolve_client(client):
    return resolve_client(client, "DaskDesign")


def _as_dask_array(X, n_slots: int, name: str):
    import dask.array as da

    if not isinstance(X, da.Array):
        if not (sp.issparse(X) or isinstance(X, np.ndarray)):
            raise InvalidInputError(
                f"{name} must be a dask.array.Array (or a NumPy / SciPy sparse matrix to split "
                f"across the workers), got {type(X).__name__}.")
        rows = max(1, -(-X.shape[0] // n_slots)) if X.ndim == 2 else 1
        X = da.from_array(sp.csr_matrix(X) if sp.issparse(X) else X,
                          chunks=(rows, -1), asarray=False)
    if X.ndim != 2:
        raise InvalidInputError(f"{name} must be 2-D, got a dask array with shape {X.shape}.")
    if X.dtype.kind not in "biuf":
        raise InvalidInputError(
            f"{name} must hold real numbers, got dtype {X.dtype}"
            + (" (complex values have no order for the margins)" if X.dtype.kind == "c" else "")
            + ".")
    if X.numblocks[1] > 1:  # row blocks must hold whole rows: one chunk along the columns
        X = X.rechunk({1: -1})
    return X


class DaskDesign(LinearDesign):
    """``X̃ = [X, 1]`` (or ``X``) over row blocks held by the workers of a dask cluster.

    Parameters
    ----------
    X : dask.array.Array (n, d), dense or with scipy.sparse chunks, chunked along the rows
        (column chunks are merged: each block holds whole rows); a NumPy array or SciPy sparse
        matrix is split into one block per worker thread (sent through the scheduler: generate
        large data on the workers instead, e.g. ``dask.array.map_blocks`` / ``from_delayed``).
    bias : bool
        Append the constant feature 1 (implicitly, as :class:`LinearDesign`).
    client : distributed.Client (default: ``distributed.default_client()``).
    merge : bool
        Merge the chunks into one contiguous block per worker thread (default): a product then
        costs one task per thread. ``False`` keeps one block per row chunk (small chunks can
        spill to disk one by one when the workers run out of memory).
    fused : bool
        Offer the fused CGLS (:attr:`cgls`, default): one synchronization and only
        ``dim``-vectors through the client per iteration. ``False``: CGLS runs on
        :meth:`matvec` and :meth:`rmatvec` (two synchronizations and two n-vectors).
    """

    in_memory = False

    def __init__(self, X, bias: bool = True, client=None, *, merge: bool = True,
                 fused: bool = True, name: str = "X"):
        self._client = _resolve_client(client)
        # One slot per worker thread, a worker's slots side by side.
        slots = [a for a, k in sorted(self._client.nthreads().items()) for _ in range(k)]
        X = _as_dask_array(X, max(1, len(slots)), name)
        import dask

        chunks = [dask.delayed(as_block)(part) for part in X.to_delayed().ravel()]
        futures = self._client.compute(chunks)
        info = self._client.gather(self._client.map(block_info, futures, pure=False))
        self._check(info, name)
        if merge and len(futures) > 1 and slots:
            futures, info = self._merge(futures, info, slots)
        self._setup([f for f, i in zip(futures, info, strict=True) if i[0] > 0],
                    np.array([i[0] for i in info if i[0] > 0], dtype=np.int64),
                    info[0][1], bool(bias), info[0][3], DaskTraffic(), bool(fused))
        self._nnz = sum(i[2] for i in info)

    @staticmethod
    def _check(info, name: str) -> None:
        d = {i[1] for i in info}
        if len(d) != 1:
            raise InvalidInputError(f"the row blocks of {name} have different column counts "
                                    f"{sorted(d)}.")
        n = sum(i[0] for i in info)
        if n == 0 or info[0][1] == 0:
            raise InvalidInputError(f"{name} is empty (shape ({n}, {info[0][1]})); pass an n x d "
                                    "matrix with n, d >= 1.")
        if len({i[3] for i in info}) != 1:
            raise InvalidInputError(f"the row blocks of {name} mix dense and sparse chunks.")
        bad = [k for k, i in enumerate(info) if not i[4]]
        if bad:
            raise InvalidInputError(f"{name} contains NaN or inf (row blocks {bad[:5]}); remove "
                                    "or impute those entries.")

    def _merge(self, futures, info, slots: list[str]):
        """Contiguous groups of chunks with about ``n / len(slots)`` rows each, each stacked on
        its slot's worker (the chunks move between workers once, never to the client)."""
        rows = np.array([i[0] for i in info])
        ends = np.cumsum(rows)
        k = len(slots)
        cuts = np.searchsorted(ends, ends[-1] * np.arange(1, k) / k, "left") + 1
        groups = [g for g in np.split(np.arange(len(futures)), np.unique(cuts)) if g.size]
        merged = [self._client.submit(vstack_blocks, *[futures[i] for i in g], pure=False,
                                      workers=[slots[j]], allow_other_workers=True)
                  if g.size > 1 else futures[g[0]] for j, g in enumerate(groups)]
        merged_info = [(int(rows[g].sum()), info[0][1], sum(info[k][2] for k in g), info[0][3],
                        True) for g in groups]
        self._client.gather(self._client.map(block_nnz, merged, pure=False))  # wait: chunks freed
        return merged, merged_info

    def _setup(self, blocks, sizes, d, bias, sparse, traffic, fused) -> None:
        self._blocks = list(blocks)
        self._sizes = np.asarray(sizes, dtype=np.int64)
        self._offsets = np.concatenate([[0], np.cumsum(self._sizes)])
        self.n, self.d = int(self._offsets[-1]), int(d)
        self.bias = bool(bias)
        self.dim = self.d + int(self.bias)
        self._sparse = bool(sparse)
        self._nnz = None
        self.traffic = traffic
        self.fused = fused

    def _derived(self, blocks, sizes) -> DaskDesign:
        sub = object.__new__(DaskDesign)
        sub._client = self._client
        sub._setup(blocks, sizes, self.d, self.bias, self._sparse, self.traffic, self.fused)
        return sub

    # ----------------------------------------------------------------------- the interface
    @property
    def X(self):
        raise InvalidInputError(
            f"X is distributed ({self.n} x {self.d} in {self.n_blocks} row blocks on the "
            "workers of a dask Client); this step needs it in memory. The solvers mfn, tsvm and "
            "da and the certificates' residuals work on the distributed design; the CVXPY "
            "reference and the modelling layer do not.")

    @property
    def client(self):
        return self._client

    @functools.cached_property
    def sync_seconds(self) -> float:
        """Seconds of one synchronization with the cluster (measured once:
        :func:`~ssl_opt.operators._cluster.sync_seconds`)."""
        return sync_seconds(self._client)

    def product_seconds(self) -> float:
        """Predicted seconds of one product pair ``X̃p``, ``X̃ᵀq`` (a CGLS iteration) and the
        in-memory compute divided over the blocks (the model of docs/scaling.md, without the
        bandwidth term). Fused: one synchronization (plus a tree level per doubling of the
        blocks when the partial sums exceed :data:`CLIENT_SUM_BYTES`); unfused: two, and the
        tree of :meth:`rmatvec`."""
        levels = int(np.ceil(np.log2(max(1, self.n_blocks))))
        compute = PAIR_SECONDS_PER_ENTRY * self.nnz / max(1, self.n_blocks)
        if self.fused:
            tree = _F8 * self.n_blocks * (self.dim + 1) > CLIENT_SUM_BYTES
            return (1 + levels * tree) * self.sync_seconds + compute
        return (2 + levels) * self.sync_seconds + compute

    @property
    def n_blocks(self) -> int:
        return len(self._blocks)

    @property
    def block_rows(self) -> np.ndarray:
        return self._sizes.copy()

    @property
    def sparse(self) -> bool:
        return self._sparse

    @property
    def nnz(self) -> int:
        """Stored entries of ``X`` (counted on the workers once)."""
        if self._nnz is None:
            futures = self._client.map(block_nnz, self._blocks, pure=False)
            self._nnz = int(sum(self._client.gather(futures)))
        return self._nnz

    def matvec(self, w: np.ndarray) -> np.ndarray:
        """``X̃ w`` (n,): ``X_b w[:d]`` on each block's worker, concatenated on the client."""
        w = np.asarray(w, dtype=np.float64)
        if not self._blocks:
            return np.zeros(0)
        start = time.perf_counter()
        head = w[: self.d]
        pieces = [self._client.submit(block_matvec, b, head, pure=False) for b in self._blocks]
        out = np.concatenate(self._client.gather(pieces))
        if self.bias:
            out += w[self.d]
        t = self.traffic
        t.matvecs += 1
        t.round_trips += 1
        t.tasks += len(pieces)
        t.bytes_to_workers += _F8 * self.d * len(pieces)
        t.bytes_from_workers += _F8 * self.n
        t.rows += self.n
        t.seconds += time.perf_counter() - start
        return out

    def rmatvec(self, v: np.ndarray) -> np.ndarray:
        """``X̃ᵀ v``: (dim,) for a vector, (dim, k) for k columns; ``X_bᵀ v_b`` on each
        block's worker, summed by a tree of pairwise additions on the workers."""
        v = np.asarray(v, dtype=np.float64)
        out = np.zeros((self.dim,) + v.shape[1:])
        if not self._blocks:
            return out
        start = time.perf_counter()
        o = self._offsets
        parts = [self._client.submit(block_rmatvec, b, v[o[k]:o[k + 1]], pure=False)
                 for k, b in enumerate(self._blocks)]
        tasks, between = len(parts), 0
        while len(parts) > 1:
            pairs = [self._client.submit(operator.add, parts[k], parts[k + 1], pure=False)
                     for k in range(0, len(parts) - 1, 2)]
            tasks, between = tasks + len(pairs), between + len(pairs)
            parts = pairs + parts[len(parts) - len(parts) % 2:]
        out[: self.d] = parts[0].result()
        if self.bias:
            out[self.d] = v.sum(axis=0)
        k = int(np.prod(v.shape[1:], dtype=np.int64))
        t = self.traffic
        t.rmatvecs += 1
        t.round_trips += 1
        t.tasks += tasks
        t.bytes_to_workers += _F8 * v.size
        t.bytes_from_workers += _F8 * self.d * k
        t.bytes_between_workers += _F8 * self.d * k * between
        t.rows += self.n
        t.seconds += time.perf_counter() - start
        return out

    # ----------------------------------------------------------------------- fused CGLS
    @property
    def cgls(self):
        """The fused CGLS (:meth:`fused_cgls`) that :func:`ssl_opt.numerics.cgls.cgls`
        dispatches to, or None with ``fused=False``."""
        return self.fused_cgls if self.fused else None

    def fused_cgls(self, C: np.ndarray, b: np.ndarray, lam: float, beta0: np.ndarray,
                   outputs0: np.ndarray | None = None, tol: float = 1e-6,
                   max_iter: int | None = None, forcing: float = 0.0,
                   atol: float = np.inf) -> CGLSResult:
        r"""CGLS [001 §2.1, eq. 4] with one synchronization per iteration.

        The same iteration, stopping rules and result as :func:`ssl_opt.numerics.cgls.cgls`,
        with the residual updated by a recurrence instead of a product with ``z``: with
        ``q = X̃p`` and ``γ = ω / (λ‖p‖² + qᵀCq)``,

            ``β ← β + γp``,   ``r ← r − γ(X̃ᵀCq + λp)``

        (``X̃ᵀz`` changes by ``−γX̃ᵀCq`` when ``z`` does by ``−γCq``). Per iteration ``p``
        (``dim`` floats) goes to every block, whose single task returns
        ``[X̃_bᵀC_b q_b, q_bᵀC_b q_b]`` (``dim + 1`` floats); ``z`` is never formed. ``C`` and
        ``b`` go to the workers once per solve (split by block) with the start
        ``X̃ᵀ[C(b − o₀), Cb]``. When the recurrence meets the ``tol`` test, the true residual
        ``X̃ᵀC(b − X̃β) − λβ`` is computed (one more synchronization) and decides: a result
        with ``converged`` is certified by the true residual (if it misses the test, it
        replaces the recurrence and CGLS restarts from ``β`` with ``p = r``). An inexact step
        (the forcing test met, not ``tol``) and the ``max_iter`` cap return unconverged with
        the recurrence's residual, as the in-memory CGLS returns its own. The recurrence
        stays within ~5e-14·‖X̃ᵀCb‖ of the true residual over 2,000 iterations at 20,000 ×
        5,000 (the in-memory ``r`` from the recurrence ``z``: the same order), far below any
        tolerance MFN uses, so no periodic replacement is needed.
        """
        beta = np.array(beta0, dtype=np.float64)
        if not self._blocks:
            return CGLSResult(np.zeros_like(beta), 0, True, 0.0)
        t = self.traffic
        t.cgls_solves += 1
        rows = self._send_rows(np.asarray(C, dtype=np.float64), np.asarray(b, dtype=np.float64))
        start = cgls_start(beta, self._start(rows, beta, outputs0), lam, tol, forcing, atol)
        if start.result is not None:
            return start.result
        r, omega, rhs_norm, tight, target = (start.r, start.omega, start.rhs_norm, start.tight,
                                             start.target)
        p = r.copy()
        cap = iteration_cap(self.dim, max_iter)
        k = 0
        while k < cap:
            k += 1
            u, s = self._step(rows, p)
            gamma = omega / (lam * float(p @ p) + s)
            beta += gamma * p
            r -= gamma * (u + lam * p)
            omega_new = float(r @ r)
            if tight < omega_new <= target:  # an inexact (forcing) step: not converged
                return CGLSResult(beta, k, False, np.sqrt(omega_new) / rhs_norm)
            if omega_new <= tight:  # certified by the true residual, or a restart from it
                r = self._true_residual(rows, beta) - lam * beta
                omega_new = float(r @ r)
                if omega_new <= target:
                    return CGLSResult(beta, k, omega_new <= tight, np.sqrt(omega_new) / rhs_norm)
                p[:] = r
            else:
                p *= omega_new / omega
                p += r
            omega = omega_new
        return CGLSResult(beta, k, False, np.sqrt(omega) / rhs_norm)

    def _map(self, fn, rows, *args) -> list:
        """One task ``fn(X_b, rows_b, *args)`` per block (all submitted before any waits)."""
        return [self._client.submit(fn, block, rb, *args, pure=False)
                for block, rb in zip(self._blocks, rows, strict=True)]

    def _send_rows(self, C: np.ndarray, b: np.ndarray) -> list:
        """``(C_b, b_b)`` on each block's worker for the solve (futures, not waited for)."""
        o = self._offsets
        rows = [self._client.submit(block_cgls_rows, block, C[o[k]:o[k + 1]], b[o[k]:o[k + 1]],
                                    pure=False) for k, block in enumerate(self._blocks)]
        t = self.traffic
        t.tasks += len(rows)
        t.bytes_to_workers += _F8 * 2 * self.n
        return rows

    def _start(self, rows, beta: np.ndarray, outputs0) -> np.ndarray:
        """``X̃ᵀ[C(b − o₀), Cb]`` (dim, 2), ``o₀ = X̃β`` on the workers if not given."""
        start = time.perf_counter()
        o = self._offsets
        if outputs0 is None:
            parts = self._map(block_cgls_start, rows, None, beta, self.bias)
            sent = _F8 * self.dim * len(parts)
        else:
            outputs0 = np.asarray(outputs0, dtype=np.float64)
            parts = [self._client.submit(block_cgls_start, block, rb, outputs0[o[k]:o[k + 1]], None,
                                         self.bias, pure=False)
                     for k, (block, rb) in enumerate(zip(self._blocks, rows, strict=True))]
            sent = _F8 * self.n
        total = self._sum(parts, 2 * self.dim)
        self._count(parts, sent, self.n * (1 + (outputs0 is None)), start)
        return total

    def _step(self, rows, p: np.ndarray) -> tuple[np.ndarray, float]:
        """``(X̃ᵀCX̃p, pᵀX̃ᵀCX̃p)``: one synchronization."""
        start = time.perf_counter()
        parts = self._map(block_cgls_step, rows, p, self.bias)
        total = self._sum(parts, self.dim + 1)
        self.traffic.cgls_steps += 1
        self._count(parts, _F8 * self.dim * len(parts), 2 * self.n, start)
        return total[:-1], float(total[-1])

    def _true_residual(self, rows, beta: np.ndarray) -> np.ndarray:
        """``X̃ᵀC(b − X̃β)`` from ``β``: one synchronization."""
        start = time.perf_counter()
        parts = self._map(block_cgls_true_residual, rows, beta, self.bias)
        total = self._sum(parts, self.dim)
        self.traffic.residual_checks += 1
        self._count(parts, _F8 * self.dim * len(parts), 2 * self.n, start)
        return total

    def _sum(self, parts: list, size: int) -> np.ndarray:
        """The blocks' partial sums (``size`` floats each) added: on the client when they total
        at most :data:`CLIENT_SUM_BYTES`, else pairwise on the workers. Counts the bytes back
        and the tree's tasks."""
        t = self.traffic
        if _F8 * size * len(parts) <= CLIENT_SUM_BYTES or len(parts) == 1:
            total = functools.reduce(operator.add, self._client.gather(parts))  # new array
            t.bytes_from_workers += _F8 * size * len(parts)
            return total
        while len(parts) > 1:
            pairs = [self._client.submit(operator.add, parts[k], parts[k + 1], pure=False)
                     for k in range(0, len(parts) - 1, 2)]
            t.tasks += len(pairs)
            t.bytes_between_workers += _F8 * size * len(pairs)
            parts = pairs + parts[len(parts) - len(parts) % 2:]
        t.bytes_from_workers += _F8 * size
        return parts[0].result()

    def _count(self, parts: list, sent: int, rows: int, start: float) -> None:
        t = self.traffic
        t.round_trips += 1
        t.tasks += len(parts)
        t.bytes_to_workers += sent
        t.rows += rows
        t.seconds += time.perf_counter() - start

    def rows(self, index) -> DaskDesign:
        """The design restricted to ``index`` (a slice, a boolean mask or integer indices, in
        that order), computed on the workers: a block wholly inside a slice is shared, the
        others are cut from local indices (the indices go to the workers, no rows come back)."""
        if isinstance(index, slice):
            start, stop, step = index.indices(self.n)
            if step == 1:
                return self._row_range(start, max(start, stop))
        idx = np.arange(self.n)[index]
        if idx.ndim != 1:
            raise InvalidInputError("rows() takes a slice, a boolean mask or a 1-D array of "
                                    f"row indices, got an index of shape {idx.shape}.")
        if idx.size == 0:
            return self._derived([], [])
        owner = np.searchsorted(self._offsets, idx, side="right") - 1
        starts = np.concatenate([[0], np.flatnonzero(np.diff(owner)) + 1])
        ends = np.append(starts[1:], idx.size)
        blocks = [self._client.submit(take_rows, self._blocks[owner[a]],
                                      idx[a:e] - self._offsets[owner[a]], pure=False)
                  for a, e in zip(starts, ends, strict=True)]
        self.traffic.tasks += len(blocks)
        self.traffic.bytes_to_workers += _F8 * idx.size
        return self._derived(blocks, ends - starts)

    def _row_range(self, start: int, stop: int) -> DaskDesign:
        o = self._offsets
        blocks, sizes = [], []
        for k, block in enumerate(self._blocks):
            a, e = max(start, o[k]), min(stop, o[k + 1])
            if a >= e:
                continue
            if a == o[k] and e == o[k + 1]:
                blocks.append(block)  # shared: no copy
            else:
                blocks.append(self._client.submit(take_rows, block, slice(a - o[k], e - o[k]),
                                                  pure=False))
                self.traffic.tasks += 1
            sizes.append(e - a)
        return self._derived(blocks, sizes)

    def stacked(self, blocks) -> DaskDesign:
        """Rows ``blocks`` (a list of index arrays) stacked, on the workers: the row subsets'
        blocks one after the other (an index array repeated shares its subset)."""
        subsets: dict[bytes, DaskDesign] = {}
        parts, sizes = [], []
        for b in blocks:
            idx = np.asarray(b, dtype=np.int64)
            key = idx.tobytes()
            if key not in subsets:
                subsets[key] = self.rows(idx)
            parts += subsets[key]._blocks
            sizes += list(subsets[key]._sizes)
        return self._derived(parts, sizes)

    def __repr__(self) -> str:
        kind = "sparse" if self._sparse else "dense"
        return (f"DaskDesign({self.n} x {self.d} {kind}, bias={self.bias}, "
                f"{self.n_blocks} row blocks)")
