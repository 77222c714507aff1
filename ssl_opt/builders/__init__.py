"""Builders for kernel matrices, kNN graphs and graph Laplacians."""

from .graphs import knn_graph
from .kernels import kernel_matrix, linear_kernel, polynomial_kernel, rbf_kernel
from .laplacian import graph_laplacian_from_data, laplacian

__all__ = [
    "graph_laplacian_from_data",
    "kernel_matrix",
    "knn_graph",
    "laplacian",
    "linear_kernel",
    "polynomial_kernel",
    "rbf_kernel",
]
