"""The dask cluster the distributed operators run on: which client, and what one
synchronization with it costs (imported only by the dask operators)."""

from __future__ import annotations

import time

import numpy as np

from ssl_opt.exceptions import InvalidInputError
from ssl_opt.optional import require


def resolve_client(client, who: str):
    """``client`` itself (checked), or ``distributed.default_client()`` when None."""
    distributed = require("distributed", who)

    if client is None:
        try:
            return distributed.default_client()
        except ValueError as exc:
            raise InvalidInputError(
                f"{who} needs a dask.distributed Client: pass client=Client(...) (a "
                "LocalCluster, or Client('tcp://scheduler:8786') on a cluster), or create one "
                "first so that it is the default client.") from exc
    if not isinstance(client, distributed.Client):
        raise InvalidInputError(
            f"client must be a distributed.Client, got {type(client).__name__}.")
    if client.status in ("closing", "closed"):
        raise InvalidInputError(
            f"client is {client.status}: pass an open distributed.Client (create a new one, "
            "e.g. Client(LocalCluster()), after closing the old one).")
    return client


def _noop() -> None:
    return None


def sync_seconds(client) -> float:
    """Seconds of one synchronization: the median of three round trips of a no-op task (~11
    ms on a local cluster here, most of it dask's message batching)."""
    times = []
    for _ in range(3):
        start = time.perf_counter()
        client.submit(_noop, pure=False).result()
        times.append(time.perf_counter() - start)
    return float(np.median(times))
