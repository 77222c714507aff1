r"""Matrix-free kernel matrices: ``K·V`` computed from the data in row blocks, never stored.

``KernelOperator(X, kind, **params)`` is the Gram matrix ``K_ij = k(x_i, x_j)`` of
:func:`ssl_opt.builders.kernel_matrix` as a ``scipy.sparse.linalg.LinearOperator``: every product
recomputes ``K`` tile by tile (``TILE_ROWS`` rows by a few thousand columns, small enough for
the elementwise passes to stay in cache, within ``memory_budget``) and multiplies it into
``V``, so memory is ``O(n·d + n·k)`` plus a few MiB instead of the ``8n²`` bytes of a dense K
(75 GiB at n = 100,000). The solvers that
need only products — PCG and its early stopping (docs/manifold.md), the certificates that are
computed from products — take it as ``K`` of :class:`~ssl_opt.problems.LapSVM` /
:class:`~ssl_opt.problems.LapRLS`.

Cost of one product ``K·V`` (V n×k): ``n²(d + k)`` multiply-adds and ``n²`` kernel evaluations
(an ``exp`` for RBF), spread over the machine's cores by threads (NumPy releases the GIL in
GEMM and in ufuncs on large blocks). ``dtype=np.float32`` computes the blocks in single
precision (about twice as fast, relative error ~1e-7 in each entry of K; the products are
accumulated and returned in float64).

Besides the products it gives what the solvers and certificates ask for without forming K:
``diagonal()`` (Jacobi preconditioning, RBF: ones), ``columns(idx)`` (``K[:, idx]``, e.g. the
labeled columns of a hinge-loss certificate), ``rows(idx)``, and ``to_dense()`` refused above
``max_bytes``.
"""

from __future__ import annotations

import math
import os
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from ssl_opt._validation import check_bool, check_int, check_positive
from ssl_opt.builders.kernels import KERNELS, check_kernel_inputs, kernel_diagonal
from ssl_opt.operators.symmetric import SymmetricOperator, check_kernel_arguments

#: Default cap on the memory of the kernel tiles in flight (all threads together).
DEFAULT_BUDGET = 256 * 2**20
#: The tiles a product computes at a time: TILE_ROWS rows and about TILE_BYTES of kernel.
TILE_ROWS, TILE_BYTES = 128, 2 * 2**20
#: Seconds per kernel entry and thread of a product (RBF, tiles in cache), by precision, and
#: per entry and dimension for the GEMM (benchmarks/bench_operator_product.py).
ENTRY_SECONDS = {"float64": 3.0e-9, "float32": 2.1e-9}
ENTRY_SECONDS_PER_DIMENSION = 3e-11
#: Seconds a product pays once: its worker threads' start and the BLAS thread limits.
PRODUCT_START_SECONDS = 2e-3


def entry_seconds(precision: str, d: int, columns: int = 1) -> float:
    """Predicted seconds of one kernel entry of a product on one thread: ``ENTRY_SECONDS`` by
    precision ("float32"/"float64"), ``ENTRY_SECONDS_PER_DIMENSION·d`` for the GEMM, and a
    multiply-add per extra column of V."""
    return (ENTRY_SECONDS[precision] + ENTRY_SECONDS_PER_DIMENSION * d
            + 5e-11 * (columns - 1))
#: A timed product (``timed_product_seconds``): tiles of rows per thread, and samples (the
#: fastest is kept).
SAMPLE_TILES, SAMPLE_REPEATS = 2, 3


class KernelOperator(SymmetricOperator):
    """The n×n kernel matrix of the rows of ``X`` as a products-only operator.

    Parameters
    ----------
    X : (n, d) array or sparse matrix.
    kind : "rbf", "polynomial" or "linear" (as :func:`ssl_opt.builders.kernel_matrix`).
    dtype : np.float64 (default) or np.float32, the precision of the kernel blocks.
    memory_budget : bytes for the kernel tiles in flight (default 256 MiB; the tiles are at
        most ``TILE_BYTES`` each, so the default is never reached).
    threads : worker threads (default: the CPU count).
    **params : the kernel's parameters (``sigma``; ``degree``, ``coef0``, ``scale``).
    """

    def __init__(self, X, kind: str = "rbf", dtype=np.float64,
                 memory_budget: float = DEFAULT_BUDGET, threads: int | None = None,
                 **params):
        dtype = check_kernel_arguments(kind, params, dtype)
        Xm, _, _ = check_kernel_inputs(X, None)
        self.kind, self.params = kind, dict(params)
        if kind == "rbf":
            self.params["sigma"] = check_positive(self.params.get("sigma", 1.0), "sigma")
        if kind == "polynomial":
            KERNELS[kind](Xm[:1], Xm[:1], **self.params)  # validates degree, coef0, scale
        self.X = Xm.astype(dtype) if not sp.issparse(Xm) else Xm.astype(dtype).tocsr()
        self.block_dtype = dtype
        n = Xm.shape[0]
        self.memory_budget = check_positive(memory_budget, "memory_budget")
        self.threads = (max(1, os.cpu_count() or 1) if threads is None
                        else check_int(threads, "threads", 1))
        # Each worker computes tiles of TILE_ROWS rows and tile_columns columns (capped so that
        # the tiles in flight fit the budget), over its share of row blocks.
        self.tile_columns = int(max(64, min(TILE_BYTES, self.memory_budget / (2 * self.threads))
                                    // (dtype.itemsize * TILE_ROWS)))
        units = 4 * self.threads  # a few row blocks per worker balance the load
        self.block_rows = int(max(TILE_ROWS, -(-n // units)))
        self._norms = _row_norms(self.X)
        if kind == "rbf":
            var = self.params["sigma"] ** 2
            self._inv_var = dtype.type(1.0 / var)
            self._half = (self._norms / (2.0 * var)).astype(dtype)
        self.products = 0  # columns multiplied so far (instrumentation)
        self._timed: dict[int, float] = {}  # timed_product_seconds by columns
        super().__init__(dtype=np.float64, shape=(n, n))

    # ------------------------------------------------------------------ blocks
    def _block(self, rows: slice, cols=None) -> np.ndarray:
        """``K[rows, cols]`` (all columns by default; ``cols`` a slice or indices) in the block
        precision."""
        Xr = self.X[rows]
        Xc = self.X if cols is None else self.X[cols]
        G = Xr @ Xc.T
        G = np.asarray(G.toarray() if sp.issparse(G) else G, dtype=self.block_dtype)
        if self.kind == "linear":
            return G
        if self.kind == "polynomial":
            G *= self.params.get("scale", 1.0)
            G += self.params.get("coef0", 1.0)
            return G ** int(self.params.get("degree", 3))
        # exp(−‖x − z‖²/2σ²) = exp(min(0, x·z/σ² − ‖x‖²/2σ² − ‖z‖²/2σ²)): three passes
        # over the block after the GEMM (the scaled norms are precomputed).
        G *= self._inv_var
        G -= self._half[rows][:, None]
        G -= (self._half if cols is None else self._half[cols])[None, :]
        np.minimum(G, 0.0, out=G)
        return np.exp(G, out=G)

    def _blocks(self):
        n = self.shape[0]
        return [slice(i, min(i + self.block_rows, n)) for i in range(0, n, self.block_rows)]

    # ------------------------------------------------------------------ products
    def _matmat(self, V: np.ndarray) -> np.ndarray:
        out = self.rows_product(slice(0, self.shape[0]), V)
        self.products += np.shape(V)[1]
        return out

    def rows_product(self, rows: slice, V: np.ndarray) -> np.ndarray:
        """``K[rows, :] @ V`` (len(rows) × k, float64), K recomputed tile by tile over this
        operator's threads: the whole product is ``rows = slice(0, n)``; a distributed
        operator gives each worker its own range (:class:`~ssl_opt.operators.dask_kernel.
        DaskKernelOperator`)."""
        V = np.asarray(V, dtype=np.float64)
        n = self.shape[0]
        start, stop = rows.start or 0, n if rows.stop is None else rows.stop
        out = np.empty((stop - start, V.shape[1]))
        Vb = V.astype(self.block_dtype, copy=False)
        # Tiles of about TILE_BYTES: the elementwise passes and the exp stay in cache (a
        # whole row block of 10⁴-10⁵ columns would stream through memory four times).
        chunks = self._column_chunks()

        def work(block: slice) -> None:
            tiles = [slice(first, min(first + TILE_ROWS, block.stop))
                     for first in range(block.start, block.stop, TILE_ROWS)]
            out[block.start - start:block.stop - start] = self._tiles_product(tiles, Vb, chunks)

        blocks = [slice(i, min(i + self.block_rows, stop))
                  for i in range(start, stop, self.block_rows)]
        self._in_workers(work, blocks)
        return out

    def _column_chunks(self) -> list[slice]:
        """The column ranges of a product's tiles, ``tile_columns`` wide."""
        n, width = self.shape[0], self.tile_columns
        return [slice(j, min(j + width, n)) for j in range(0, n, width)]

    def _tiles_product(self, tiles, Vb: np.ndarray, chunks) -> np.ndarray:
        """``K[tile, :] @ V`` for each row selector in ``tiles`` (slices or index arrays of at
        most ``TILE_ROWS`` rows), stacked, float64; K recomputed over the column ``chunks``."""
        parts = []
        for tile in tiles:
            rows = tile.stop - tile.start if isinstance(tile, slice) else len(tile)
            local = np.zeros((rows, Vb.shape[1]), dtype=self.block_dtype)
            for cols in chunks:
                local += self._block(tile, cols) @ Vb[cols]
            parts.append(local.astype(np.float64))
        return np.vstack(parts) if parts else np.zeros((0, Vb.shape[1]))

    def _in_workers(self, work, items) -> None:
        """``work(item)`` for every item, over this operator's threads."""
        if self.threads == 1 or len(items) == 1:
            for item in items:
                work(item)
        else:  # one BLAS thread per worker: the workers are the parallelism
            with threadpool_limits(1, user_api="blas"), ThreadPoolExecutor(self.threads) as pool:
                list(pool.map(work, items))

    # ------------------------------------------------------------------ what solvers ask for
    def diagonal(self) -> np.ndarray:
        """``diag(K)`` in O(n·d): ones for RBF, ``‖x_i‖²`` (linear), ``(s‖x_i‖² + c₀)^p``."""
        return kernel_diagonal(self.kind, self.params, self.X)

    def columns(self, idx) -> np.ndarray:
        """``K[:, idx]`` (n × len(idx), float64)."""
        idx = np.atleast_1d(np.asarray(idx, dtype=np.int64))
        return np.vstack([self._block(rows, idx).astype(np.float64)
                          for rows in self._blocks()]) if idx.size else np.zeros(
            (self.shape[0], 0))

    def product_seconds(self, columns: int = 1, measure: bool = False) -> float:
        """Seconds of ``K @ V`` with ``columns`` columns.

        ``measure=True``: timed on this instance, on this machine under its current load
        (:meth:`timed_product_seconds`, cached). Otherwise predicted from the sizes: ``n²``
        kernel entries at ``ENTRY_SECONDS`` per entry and thread (by precision, measured on
        this 2-core machine at n = 5,000-20,000, d = 2-50) plus
        ``ENTRY_SECONDS_PER_DIMENSION·d`` for the GEMM, over the threads; each extra column
        adds a multiply-add per entry; ``PRODUCT_START_SECONDS`` once. The model cannot see
        what the data do to the kernel's cost: an RBF whose σ is small against the distances
        takes ``exp``'s slow path for large negative arguments (float64 up to 3.1× slower at
        σ = a thirtieth of the median distance; ``benchmarks/bench_operator_product.py``)."""
        if check_bool(measure, "measure"):
            return self.timed_product_seconds(columns)
        n, d = self.shape[0], self.X.shape[1]
        per_entry = entry_seconds(self.block_dtype.name, d, columns)
        return n * n * per_entry / self.threads + (PRODUCT_START_SECONDS if self.threads > 1
                                                    else 0.0)

    def timed_product_seconds(self, columns: int = 1) -> float:
        """Seconds of ``K @ V`` (``columns`` columns), timed: ``SAMPLE_TILES`` tiles of evenly
        spaced rows per thread, each row against all n columns through the product's own
        tiles and threads, scaled by n over the rows timed; the fastest of ``SAMPLE_REPEATS``
        samples; the thread pool's start counted once, as in a product. Within 1.5× of the
        product on 215 of 216 samples in two runs at n = 5,000-20,000, d = 2-50 (0.78-1.93×),
        at ~10 % of one product's cost at n = 20,000 and half a product at n = 5,000
        (``benchmarks/bench_operator_product.py``). Cached per ``columns``."""
        columns = check_int(columns, "columns", 1)
        if columns in self._timed:
            return self._timed[columns]
        n = self.shape[0]
        V = np.ones((n, columns), dtype=self.block_dtype)
        chunks = self._column_chunks()
        rows = min(n, SAMPLE_TILES * self.threads * TILE_ROWS)
        sample = np.unique(np.linspace(0, n - 1, rows).astype(np.int64))
        groups = [g for g in np.array_split(sample, self.threads) if g.size]
        spans: list[float] = []

        def work(rows: np.ndarray) -> None:
            begin = time.perf_counter()
            self._tiles_product([rows[i:i + TILE_ROWS] for i in range(0, rows.size, TILE_ROWS)],
                                V, chunks)
            spans.append(time.perf_counter() - begin)

        # Untimed: a few rows through the pool, the thread limits and the kernel's ufuncs
        # (their first call pays for loading and caches, as a product's does only once).
        self._in_workers(lambda g: self._tiles_product([g[:8]], V, chunks[:1]), groups)
        best = math.inf
        for _ in range(SAMPLE_REPEATS):
            spans.clear()
            begin = time.perf_counter()
            self._in_workers(work, groups)
            wall = time.perf_counter() - begin
            slowest = max(spans)
            if sample.size < n:  # the workers' time scales with the rows; the pool's does not
                wall = slowest * n / sample.size + (wall - slowest)
            best = min(best, wall)
        self._timed[columns] = best
        return best

    @property
    def bytes_in_flight(self) -> int:
        """Memory of the kernel tiles during one product (all threads, with a temporary)."""
        return int(self.threads * 2 * TILE_ROWS * self.tile_columns * self.block_dtype.itemsize)

    def __repr__(self) -> str:
        extra = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return (f"<KernelOperator {self.kind}({extra}) n={self.shape[0]}, d={self.X.shape[1]}, "
                f"{self.block_dtype.name} blocks of {self.block_rows} rows>")


def _row_norms(X) -> np.ndarray:
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1)).ravel().astype(X.dtype)
    return np.einsum("ij,ij->i", X, X)
