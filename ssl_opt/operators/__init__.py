"""Operators for problems beyond one dense matrix (docs/scaling.md): a kernel matrix applied
from the data in row blocks, never stored (:class:`KernelOperator`)."""

from ssl_opt.operators.kernel import KernelOperator

__all__ = ["KernelOperator"]
