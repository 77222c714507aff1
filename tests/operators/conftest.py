"""A 2-worker dask LocalCluster for the distributed operators' tests."""

from __future__ import annotations

import distributed
import pytest


@pytest.fixture(scope="module")
def client():
    """In-process workers start in milliseconds; memory_limit=0: no pausing on the test
    process's own memory. Not the default client: tests that need one say so."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=":0", memory_limit=0) as cluster, \
            distributed.Client(cluster, set_as_default=False) as c:
        yield c
