"""Operators for problems beyond one dense matrix (docs/scaling.md): a kernel matrix applied
from the data in row blocks, never stored (:class:`KernelOperator`), its low-rank Nyström
approximation (:class:`NystromOperator`), the same kernel with its products computed on a dask
cluster (:class:`DaskKernelOperator`), and a linear design matrix row-partitioned across the
workers of a dask cluster (:class:`DaskDesign`); the dask ones are imported on first use, so
``import ssl_opt`` does not import dask."""

from ssl_opt.operators.kernel import KernelOperator
from ssl_opt.operators.nystrom import NystromOperator

__all__ = ["DaskDesign", "DaskKernelOperator", "KernelOperator", "NystromOperator"]


def __getattr__(name: str):
    if name in ("DaskDesign", "DaskTraffic"):
        from ssl_opt.operators import distributed

        return getattr(distributed, name)
    if name == "DaskKernelOperator":
        from ssl_opt.operators.dask_kernel import DaskKernelOperator

        return DaskKernelOperator
    raise AttributeError(f"module 'ssl_opt.operators' has no attribute {name!r}")
