"""The two readings of a PSD constraint in the terms' certificate (docs/npkl.md), side by side:
at the CVXPY reference's (interior-point) optimum of NPKL variants, the normal-cone
minimization alone (``cone="normal_cone"``) against the reported stationarity (``"conic"``:
the smaller of it and ``max(gradient_psd, complementarity)``), and at a PSD point moved off the
optimum, where both must fail.

Run from the repository root::

    python benchmarks/bench_psd_certificate.py
"""

from __future__ import annotations

import _source_tree  # noqa: F401  (measure this checkout)
import numpy as np

import ssl_opt
from ssl_opt.builders import knn_graph
from ssl_opt.datasets.clusters import double_spiral, pairwise_constraints
from ssl_opt.modeling import Ridge
from ssl_opt.problems import NPKL


def main() -> None:
    print(f"{'loss':14s} {'n':>4s} {'status':8s} {'normal cone':>12s} {'reported':>10s} "
          f"{'moved: normal cone':>19s} {'moved: reported':>16s}")
    for loss in ("square", "squared_hinge", "hinge"):
        for n in (30, 60, 120):
            data = double_spiral(n=n, seed=0)
            pairs, labels = pairwise_constraints(data.y, 14, seed=0)
            p = NPKL(knn_graph(data.X, n_neighbors=5), pairs, labels, C=1.0, loss=loss)
            variant = p.add(Ridge(p["Z"], 0.2))
            ref = ssl_opt.solve(variant, solver="cvxpy")
            F = np.random.default_rng(7).standard_normal((n, 3))
            moved = {"Z": ref.x["Z"] + 0.05 * (F @ F.T) / n}
            row = [variant.kkt(x, cone=c)["stationarity"] for x in (ref, moved)
                   for c in ("normal_cone", "conic")]
            print(f"{loss:14s} {n:4d} {ref.status:8s} {row[0]:12.1e} {row[1]:10.1e} "
                  f"{row[2]:19.1e} {row[3]:16.1e}")


if __name__ == "__main__":
    main()
