"""Options shared by the linear-family solvers: those that call MFN (TSVM and DA) and those that
switch labels (TSVM and the modelling layer's tsvm-model), and their BLAS threading."""

from __future__ import annotations

from ssl_opt._validation import (
    check_nonnegative,
    check_positive,
    greater_than,
    integer,
    optional,
)
from ssl_opt.solvers import Option

#: The MFN settings TSVM and DA pass to each of their MFN calls.
MFN_CALL_OPTIONS = {
    "tol": Option(1e-7, "MFN/CGLS relative tolerance", check_nonnegative),
    "forcing": Option(0.1, "MFN inexact-Newton forcing term (0: exact CGLS steps)",
                      check_nonnegative),
    "mfn_max_iter": Option(50, "Newton steps per MFN call", integer(0)),
}

#: The label-switching schedule of TSVM [001 §3.1], shared by ``tsvm`` and ``tsvm-model``.
SWITCHING_OPTIONS = {
    "S": Option(10_000, "label pairs switched per retraining at most (1: classic TSVM)",
                integer(1)),
    "lam_u_start": Option(1e-5, "first λ' value (SVMlin's TSVM_LAMBDA_SMALL)", check_positive),
    "lam_u_factor": Option(1.5, "λ' growth factor per stage (SVMlin's annealing rate)",
                           greater_than(1)),
    "time_limit": Option(None, "seconds at most (None: no limit): the switching stops after "
                         "the retraining that passes it, with status 'time_limit'",
                         optional(check_positive)),
}


def one_blas_thread_on_sparse_x(solver, problem) -> int | None:
    """``Solver.blas_threads`` of MFN, TSVM and DA: one BLAS thread on a sparse X. The products
    are scipy's (single-threaded) and BLAS only sees vector operations, where a second thread
    gained nothing idle and slowed the solves under load (``benchmarks/bench_ratios.py`` (c);
    docs/linear_s3vm.md). A dense X keeps the process setting (its products are BLAS-2). Asks
    the design, which also answers for a distributed X (``DaskDesign``) without gathering it."""
    return 1 if problem.design.sparse else None
