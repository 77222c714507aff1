r"""Which kernel operator for n points, before K exists: predicted memory and time of each kind.

A dense K costs ``8n²`` bytes before any solver runs (75 GiB at n = 100,000), so the choice of
operator has to be made from the sizes alone. :func:`kernel_plan` predicts, for a manifold
problem (LapSVM / LapRLS) of n points in d dimensions, each kind with the solver it would use:

* ``dense`` — K stored, solved by PCG: ``8n²`` bytes; forming K (``n²`` kernel entries) plus
  ``PCG_ITERATIONS`` products of ``DENSE_PRODUCT_SECONDS·n²``;
* ``matrix-free`` — :class:`~ssl_opt.operators.KernelOperator`, PCG: ``O(n·d)`` bytes; every
  product recomputes K (``KernelOperator.product_seconds``), the same iterations;
* ``nystrom`` — :class:`~ssl_opt.operators.NystromOperator` with m landmarks, lowrank-newton:
  ``8nm`` bytes for Φ; ``n·m`` kernel entries plus ``n·m²`` for ``ΦᵀΦ`` and ``Φ̃ᵀLΦ̃``. It
  solves the problem on the approximation K̃, never the exact one, so it is listed but never
  chosen by :attr:`KernelPlan.choice`.

The constants are this 2-core machine's (docs/scaling.md) and the iteration count is PCG's
typical one without early stopping; the predictions are for choosing, not promising.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ssl_opt._validation import check_int, check_positive
from ssl_opt.operators.kernel import ENTRY_SECONDS, TILE_BYTES, entry_seconds
from ssl_opt.problems.manifold.problem import DENSE_PRODUCT_SECONDS, PRODUCT_SOLVER_VECTORS

#: PCG iterations the plan assumes (PCG's own cost model; early stopping usually needs fewer).
PCG_ITERATIONS = 60
#: Seconds per multiply-add of the n×r×r Gram products of lowrank-newton here.
GEMM_SECONDS = 2e-11
#: The dense path is chosen while K and PCG's vectors take at most this share of the budget.
DENSE_SHARE = 0.5


@dataclass(frozen=True)
class OperatorOption:
    """One operator kind: what it holds, the solver it runs, and its predicted cost."""

    kind: str
    solver: str
    memory: float  # bytes
    seconds: float
    fits: bool
    exact: bool
    note: str


@dataclass(frozen=True)
class KernelPlan:
    """The options for one problem size, and the exact one to use (:attr:`choice`)."""

    n: int
    d: int
    memory_budget: float
    options: tuple[OperatorOption, ...]

    @property
    def choice(self) -> str:
        """``"dense"`` while K fits in ``DENSE_SHARE`` of the budget, else ``"matrix-free"``
        (exact, products only). Never ``"nystrom"``: an approximation is the user's call."""
        dense = self.option("dense")
        return "dense" if dense.memory <= DENSE_SHARE * self.memory_budget else "matrix-free"

    def option(self, kind: str) -> OperatorOption:
        return next(o for o in self.options if o.kind == kind)

    def table(self) -> str:
        lines = [f"n = {self.n:,}, d = {self.d}, memory budget {_gib(self.memory_budget)}:"]
        for o in self.options:
            mark = "*" if o.kind == self.choice else " "
            fits = "" if o.fits else ", does not fit"
            lines.append(f"{mark} {o.kind:<12} {o.solver:<15} ~{_duration(o.seconds):>9}  "
                         f"{_gib(o.memory):>10}{fits}  ({o.note})")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def kernel_plan(n: int, d: int, *, nnz_L: int | None = None, landmarks: int = 500,
                memory_budget: float | None = None, threads: int | None = None,
                float32: bool = False) -> KernelPlan:
    """Predicted memory and time of the dense, matrix-free and Nyström kernels for a manifold
    problem of ``n`` points in ``d`` dimensions (``nnz_L`` non-zeros in the Laplacian, default
    a 10-NN graph's ``~12n``; ``memory_budget`` default: the memory the OS reports
    available)."""
    from ssl_opt.selection.measure import available_memory

    n = check_int(n, "n", 1)
    d = check_int(d, "d", 1)
    m = min(check_int(landmarks, "landmarks", 1), n)
    nnz = 12 * n if nnz_L is None else check_int(nnz_L, "nnz_L", 0)
    budget = (available_memory() if memory_budget is None
              else check_positive(memory_budget, "memory_budget"))
    threads = max(1, os.cpu_count() or 1) if threads is None else check_int(threads, "threads",
                                                                            1)
    entry = entry_seconds("float32" if float32 else "float64", d) / threads
    vectors = 8.0 * PRODUCT_SOLVER_VECTORS * n + 12.0 * nnz + 8.0 * n * d
    dense_mem = 8.0 * n * n + vectors
    dense_s = n * n * entry + PCG_ITERATIONS * DENSE_PRODUCT_SECONDS * n * n
    free_mem = vectors + 2.0 * threads * TILE_BYTES
    free_s = PCG_ITERATIONS * n * n * entry
    nys_mem = 8.0 * n * m + 8.0 * n * (m + 1) + vectors
    nys_s = n * m * ENTRY_SECONDS["float64"] + 2 * GEMM_SECONDS * n * m * m + 3e-9 * nnz * m
    options = (
        OperatorOption("dense", "pcg", dense_mem, dense_s, dense_mem <= budget, True,
                       f"K stored: {_gib(8.0 * n * n)}"),
        OperatorOption("matrix-free", "pcg", free_mem, free_s, free_mem <= budget, True,
                       f"K recomputed on each of ~{PCG_ITERATIONS} products"),
        OperatorOption("nystrom", "lowrank-newton", nys_mem, nys_s, nys_mem <= budget, False,
                       f"rank ≤ {m} approximation: a different problem, its error reported"),
    )
    return KernelPlan(n, d, float(budget), options)


def _gib(b: float) -> str:
    return f"{b / 2**30:.3g} GiB" if b >= 2**30 else f"{b / 2**20:.3g} MiB"


def _duration(s: float) -> str:
    if s < 120:
        return f"{s:.3g} s"
    if s < 7200:
        return f"{s / 60:.3g} min"
    return f"{s / 3600:.3g} h"
