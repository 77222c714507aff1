r"""A matrix-free kernel whose products run on the workers of a ``dask.distributed`` cluster.

:class:`DaskKernelOperator` is :class:`~ssl_opt.operators.KernelOperator` with its rows spread
over a cluster: every worker holds X (``n·d`` floats, broadcast once; a kernel row needs all of
X) and recomputes its own range of rows of K, ``K[r_w, :] @ V``, in cache-sized tiles over its
threads. A product ``K V`` sends V to every worker (``8nk`` bytes each), runs one task per
worker, and concatenates the ``n × k`` pieces: one synchronization. The ``n²`` kernel
evaluations, the whole cost, divide over the cluster's threads.

Everything else — ``diagonal()``, ``columns(idx)`` for the certificates, ``features`` of new
points — is O(n·|idx|) and computed in this process from its copy of X, so PCG, its early
stopping, the certificate and ``select`` work on it unchanged (docs/scaling.md).

Time per product on W workers of t threads: ``n²·c/(W·t) + sync + 8nk·W/bandwidth``, with
``c`` the per-entry cost of :func:`~ssl_opt.operators.kernel.entry_seconds` and ``sync``
measured once (:attr:`DaskKernelOperator.sync_seconds`).
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from ssl_opt.exceptions import InvalidInputError
from ssl_opt.operators._cluster import resolve_client, sync_seconds
from ssl_opt.operators.kernel import DEFAULT_BUDGET, KernelOperator, entry_seconds


def _worker_operator(X, kind, dtype, threads, memory_budget, params) -> KernelOperator:
    """The operator a worker keeps for its rows (runs on the worker)."""
    return KernelOperator(X, kind, dtype=dtype, threads=threads, memory_budget=memory_budget,
                          **params)


def _rows_product(op: KernelOperator, start: int, stop: int, V: np.ndarray) -> np.ndarray:
    return op.rows_product(slice(start, stop), V)


class DaskKernelOperator(KernelOperator):
    """The kernel matrix of the rows of ``X``, its products computed on a dask cluster.

    Parameters
    ----------
    X, kind, dtype, memory_budget, **params : as :class:`KernelOperator` (the memory budget
        applies per worker).
    client : distributed.Client (default: ``distributed.default_client()``).
    """

    def __init__(self, X, kind: str = "rbf", client=None, dtype=np.float64,
                 memory_budget: float = DEFAULT_BUDGET, **params):
        super().__init__(X, kind, dtype=dtype, memory_budget=memory_budget, threads=1,
                         **params)
        self._client = resolve_client(client, "DaskKernelOperator")
        workers = sorted(self._client.nthreads().items())
        if not workers:
            raise InvalidInputError("the dask cluster has no workers; start some or pass "
                                    "another client.")
        total = sum(t for _, t in workers)
        n = self.shape[0]
        # Rows in proportion to each worker's threads, contiguous.
        bounds = np.round(np.cumsum([0] + [t for _, t in workers]) * n / total).astype(int)
        self.ranges = [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        X_everywhere = self._client.scatter(self.X, broadcast=True)
        self._ops = [
            self._client.submit(_worker_operator, X_everywhere, kind, dtype, t, memory_budget,
                                self.params, workers=[address], allow_other_workers=False,
                                pure=False)
            for address, t in workers]
        self._client.gather(self._ops)  # fail here, not at the first product
        self.worker_threads = total
        self.syncs = 0

    @property
    def client(self):
        return self._client

    def _matmat(self, V: np.ndarray) -> np.ndarray:
        V = np.asarray(V, dtype=np.float64)
        pieces = [self._client.submit(_rows_product, op, a, b, V, pure=False)
                  for op, (a, b) in zip(self._ops, self.ranges, strict=True) if b > a]
        out = np.vstack(self._client.gather(pieces))
        self.products += V.shape[1]
        self.syncs += 1
        return out

    @cached_property
    def sync_seconds(self) -> float:
        """Seconds of one synchronization with the cluster (measured once)."""
        return sync_seconds(self._client)

    def product_seconds(self, columns: int = 1, measure: bool = False) -> float:
        """Predicted seconds of ``K @ V``: the n² kernel entries over the cluster's threads
        plus one synchronization. Always the model (``measure`` is accepted and ignored: a
        sample timed here would time this process's threads, not the workers')."""
        n, d = self.shape[0], self.X.shape[1]
        per_entry = entry_seconds(self.block_dtype.name, d, columns)
        return n * n * per_entry / self.worker_threads + self.sync_seconds

    @property
    def bytes_in_flight(self) -> int:
        """Memory a product allocates in this process: the pieces it concatenates."""
        return int(8 * self.shape[0])

    def __repr__(self) -> str:
        return (f"<DaskKernelOperator {self.kind} n={self.shape[0]}, d={self.X.shape[1]}, "
                f"{len(self.ranges)} workers / {self.worker_threads} threads>")

    def __reduce__(self):
        raise TypeError("a DaskKernelOperator holds a live dask client and cannot be pickled; "
                        "build it where it is used.")
