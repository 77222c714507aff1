"""The references reach ``optimal`` whatever the CPU's floating-point paths.

OpenBLAS picks its kernels by CPU, and ``OPENBLAS_CORETYPE`` forces another: the same program
then rounds differently, which once left Clarabel one step short of optimal (``AlmostSolved``)
on 20-point instances on one CPU and not on another. Here the small instances that did so are
solved in subprocesses under several core types this CPU can run; each must end ``optimal``
(reference/attempts.py retries until one path does) at the same optimum.

The full suite under each core type is run by hand once per change of the references:
``OPENBLAS_CORETYPE=Haswell pytest`` (docs/design.md, "References across CPUs").
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

#: Core types any recent x86-64 runs (SkylakeX would need AVX-512), with the CPU flag each
#: needs, and the name OpenBLAS then reports (Prescott's kernels report "Katmai").
CORE_TYPES = {"Prescott": ("sse3", {"Prescott", "Katmai"}),
              "Sandybridge": ("avx", {"Sandybridge"}),
              "Haswell": ("avx2", {"Haswell"})}

SCRIPT = r"""
import json, warnings
import numpy as np
from threadpoolctl import threadpool_info
import ssl_opt
from ssl_opt import registry
from ssl_opt.builders import graph_laplacian_from_data, knn_graph, rbf_kernel
from ssl_opt.datasets.clusters import double_spiral, pairwise_constraints
from ssl_opt.datasets.synthetic import two_moons
from ssl_opt.problems import NPKL, LapSVM

warnings.simplefilter("ignore")
runs = []
data = two_moons(n=60, n_labeled=6, noise=0.12, seed=3)
K = rbf_kernel(data.X, sigma=0.4)
for normalized in (False, True):
    L = graph_laplacian_from_data(data.X, n_neighbors=6, normalized=normalized)
    for bias in (True, False):
        p = LapSVM(K, L, data.y, 1e-2, 1.0, loss="logistic", bias=bias)
        runs.append((f"lapsvm-logistic-{normalized}-{bias}", p, "cvxpy"))
d = double_spiral(n=18, seed=4)
pairs, labels = pairwise_constraints(d.y, 10, seed=4)
S = knn_graph(d.X, n_neighbors=3)
for loss in ("squared_hinge", "square", "hinge"):
    p = NPKL(S, pairs, labels.astype(float), C=1.0, loss=loss, delta=0.02)
    runs += [(f"npkl-{loss}", p, "cvxpy"), (f"npkl-{loss}-boundary", p, "cvxpy-boundary")]
gen = registry.generators()["npkl/square"]
for scale in (30, 45):
    p = gen.instance(scale, 0)
    runs += [(f"npkl/square-{scale}", p, "cvxpy"), (f"npkl/square-{scale}-boundary", p,
                                                      "cvxpy-boundary")]
out = {"architecture": sorted({i.get("architecture") for i in threadpool_info()
                               if i["internal_api"] == "openblas"}), "runs": {}}
for name, problem, solver in runs:
    sol = ssl_opt.solve(problem, solver=solver)
    out["runs"][name] = [sol.status, sol.objective, sol.info.get("attempt")]
print(json.dumps(out))
"""


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _openblas_dynamic() -> bool:
    from threadpoolctl import threadpool_info

    return any(i["internal_api"] == "openblas" and i.get("architecture")
               for i in threadpool_info())


def _run(core_type: str | None) -> dict:
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    if core_type:
        env["OPENBLAS_CORETYPE"] = core_type
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86-64 core types")
def test_references_are_optimal_under_several_openblas_core_types():
    if not _openblas_dynamic():
        pytest.skip("numpy's BLAS is not an OpenBLAS that picks its kernels at run time")
    flags = _cpu_flags()
    chosen = [c for c, (flag, _) in CORE_TYPES.items() if flag in flags]
    if len(chosen) < 2:
        pytest.skip(f"this CPU runs fewer than two of {list(CORE_TYPES)}")
    results = {"default": _run(None)}
    for core_type in chosen:
        results[core_type] = _run(core_type)
        assert set(results[core_type]["architecture"]) <= CORE_TYPES[core_type][1], (
            core_type, results[core_type]["architecture"])  # the core type took effect
    default_runs = results["default"]["runs"]
    for core_type, result in results.items():
        for name, (status, objective, attempt) in result["runs"].items():
            assert status == "optimal", (core_type, name, attempt)
            expected = default_runs[name][1]
            # Both are optimal to Clarabel's 1e-10 tolerances (SCS's 1e-9 on a fallback).
            assert abs(objective - expected) <= 1e-8 * max(1.0, abs(expected)), (
                core_type, name, objective, expected)
