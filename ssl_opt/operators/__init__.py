"""Operators for problems beyond one dense matrix (docs/scaling.md): a kernel matrix applied
from the data in row blocks, never stored (:class:`KernelOperator`), its low-rank Nyström
approximation (:class:`NystromOperator`), and a linear design matrix row-partitioned across
the workers of a dask cluster (:class:`DaskDesign`, imported on first use so that
``import ssl_opt`` does not import dask)."""

from ssl_opt.operators.kernel import KernelOperator
from ssl_opt.operators.nystrom import NystromOperator

__all__ = ["DaskDesign", "KernelOperator", "NystromOperator"]


def __getattr__(name: str):
    if name in ("DaskDesign", "DaskTraffic"):
        from ssl_opt.operators import distributed

        return getattr(distributed, name)
    raise AttributeError(f"module 'ssl_opt.operators' has no attribute {name!r}")
