"""``client=`` on the linear estimators: the fit runs on row blocks held by a 2-worker local
cluster (a dask array X is never gathered) and equals the in-memory fit, whose solutions are
certified against the CVXPY reference elsewhere (tests/estimators/test_linear.py)."""

from __future__ import annotations

import dask.array as da
import distributed
import numpy as np
import pytest

from ssl_opt.datasets.text_generator import synthetic_text
from ssl_opt.estimators import LinearL2SVC, TransductiveSVC
from ssl_opt.operators import DaskDesign


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=":0", memory_limit=0) as cluster, \
            distributed.Client(cluster) as c:  # the default client while the module runs
        yield c


@pytest.fixture(scope="module")
def text():
    data = synthetic_text(80, 40, nnz_per_row=6, n_labeled=80, seed=3)
    y = np.where(data.y > 0, 1, 0)
    y[np.random.default_rng(0).permutation(80)[:60]] = -1  # 20 labeled rows, scattered
    return data.X.tocsr(), y


#: Few λ' stages / temperatures: each product costs ~10 ms of dask messaging here.
TSVM_FAST = {"lam_u_start": 0.3, "lam_u_factor": 4.0}
DA_FAST = {"anneal_rate": 8.0, "kl_tol": 1e-2, "T0_factor": 0.2, "max_outer": 2}


@pytest.mark.parametrize("make", [
    lambda c: LinearL2SVC(lam=1e-2, client=c),
    lambda c: TransductiveSVC(lam=1e-2, lam_u=0.5, solver="tsvm", solver_options=TSVM_FAST,
                              client=c),
    lambda c: TransductiveSVC(method="da", lam=1e-2, lam_u=0.5, solver="da",
                              solver_options=DA_FAST, client=c),
])
@pytest.mark.parametrize("as_dask", [False, True])
def test_cluster_fit_equals_the_in_memory_fit(client, text, make, as_dask):
    X, y = text
    local = make(None).fit(X, y)
    X_fit = da.from_array(X, chunks=(25, -1), asarray=False) if as_dask else X
    remote = make("default").fit(X_fit, y)
    problems = remote.problem_ if isinstance(remote.problem_, list) else [remote.problem_]
    assert all(isinstance(p.design, DaskDesign) for p in problems)
    np.testing.assert_allclose(remote.coef_, local.coef_, rtol=1e-8, atol=1e-10)
    np.testing.assert_array_equal(remote.transduction_, local.transduction_)
    # The fused CGLS updates its residual by a recurrence, the in-memory one from z: the last
    # iterations round differently, the two certified points (stationarity ~3e-8) agree to
    # 7e-10 in the decisions (2026-11-28).
    np.testing.assert_allclose(remote.decision_function(X_fit), local.decision_function(X),
                               rtol=1e-8, atol=1e-8)
    assert remote.certificate().passed  # on residuals: the reference needs X in memory


def test_client_misuse_is_a_clear_error(client, text):
    X, y = text
    with pytest.raises(ValueError, match="client="):
        LinearL2SVC().fit(da.from_array(X, chunks=(40, -1), asarray=False), y)
    with pytest.raises(ValueError, match="client must be"):
        LinearL2SVC(client=3).fit(X, y)
