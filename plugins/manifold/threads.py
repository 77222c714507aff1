"""BLAS threading of the manifold solvers (``Solver.blas_threads``)."""

from __future__ import annotations

#: Kernels with at most this many rows (32 MiB in float64) run with one BLAS thread.
ONE_THREAD_MAX_N = 2000


def one_blas_thread_on_small_kernels(solver, problem) -> int | None:
    """One BLAS thread when K has at most :data:`ONE_THREAD_MAX_N` rows, the process's setting
    above. Measured on this 2-core machine (two moons, PCG to tolerance, early-stopped PCG
    and Newton): one thread was 1.6–4× faster at n = 1,000–2,000, idle or with another
    process on the other core (a K·v call waits for the second thread to wake up); at
    n = 4,000, where K·v is bound by memory bandwidth, two threads were 1.3–2.4× faster on an
    idle machine and equal under load."""
    return 1 if problem.n <= ONE_THREAD_MAX_N else None
