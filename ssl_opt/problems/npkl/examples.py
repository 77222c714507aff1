"""Built-in small NPKL instances, for ``ssl-opt certify`` (a plugin)."""

from __future__ import annotations

from ssl_opt.builders import knn_graph
from ssl_opt.datasets.clusters import double_spiral, pairwise_constraints, paper_constraint_count
from ssl_opt.examples import Example
from ssl_opt.hookspecs import hookimpl
from ssl_opt.problems.npkl.problem import NPKL
from ssl_opt.selection.generators import Generator, geometric_scales


def _spiral(loss: str, n: int = 60):
    def build():
        data = double_spiral(n=n, seed=0)
        pairs, labels = pairwise_constraints(data.y, paper_constraint_count(n) // 2, seed=0)
        return NPKL(knn_graph(data.X, n_neighbors=5), pairs, labels, C=1.0, loss=loss)

    return build


@hookimpl
def register_examples():
    return [
        Example(f"npkl-spiral-{loss.replace('_', '-')}", "npkl",
                f"NPKL ({loss} loss), double spiral n=60, 36 pairs, 5-NN graph", _spiral(loss))
        # The logistic loss is not in [003]: its reference is an exponential-cone SDP and BCD
        # updates its columns by Newton (plugins/npkl/bcd.py).
        for loss in ("square", "squared_hinge", "hinge", "logistic")
    ]


def _spiral_at(loss: str):
    """Double spiral with n points, half the paper's constraint count, the 5-NN graph, C = 1."""
    def build(n: int, seed: int):
        data = double_spiral(n=n, seed=seed)
        pairs, labels = pairwise_constraints(data.y, paper_constraint_count(n) // 2, seed=seed)
        return NPKL(knn_graph(data.X, n_neighbors=5), pairs, labels, C=1.0, loss=loss)

    return build


@hookimpl
def register_generators():
    grid = geometric_scales(40, 6000)
    bench = (50, 100, 200, 400, 800, 1600)
    return [
        Generator(f"npkl/{loss}", ("l",), _spiral_at(loss),
                  f"NPKL ({loss}), double spiral with n points", grid, bench)
        for loss in ("square", "squared_hinge", "hinge")
    ]
