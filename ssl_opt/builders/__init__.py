"""Builders for kernel matrices, kNN graphs and graph Laplacians."""

from ssl_opt.builders.graphs import knn_graph
from ssl_opt.builders.kernels import kernel_matrix, linear_kernel, polynomial_kernel, rbf_kernel
from ssl_opt.builders.laplacian import graph_laplacian_from_data, laplacian

__all__ = [
    "graph_laplacian_from_data",
    "kernel_matrix",
    "knn_graph",
    "laplacian",
    "linear_kernel",
    "polynomial_kernel",
    "rbf_kernel",
]
