"""Helpers shared by ``bench_linear_s3vm.py`` and ``pcmac_table.py`` (not part of the package).

Both scripts are run from the repository root (``python benchmarks/<script>.py``), which puts
this folder on ``sys.path``, so ``import _linear_common`` works without installing anything.
"""

from __future__ import annotations

import math
import platform
import sys
import time
import warnings

import _source_tree  # noqa: F401  (the tree's ssl_opt, not an installed copy)
import numpy as np

import ssl_opt

TARGET_TIME_RATIO = 1.5  # our time / reference time


def log(msg: str) -> None:
    """Progress messages go to stderr so that stdout holds only the report."""
    print(msg, file=sys.stderr, flush=True)


def header_lines(title: str) -> list[str]:
    import scipy

    return [
        f"# {title}",
        f"# python {platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}, "
        f"{platform.machine()}, ssl_opt {ssl_opt.__version__}",
    ]


def fmt(x, spec: str = ".4g") -> str:
    """``format(x, spec)``; ``-`` for None / NaN / inf; strings pass through."""
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    if isinstance(x, float) and not math.isfinite(x):
        return "-"
    return format(x, spec)


def print_table(headers: list[str], rows: list[list], align: str | None = None,
                indent: str = "") -> None:
    """Aligned fixed-width table: ``align`` has one ``<`` or ``>`` per column (default: the
    first column left, the rest right); cells are strings already."""
    cells = [[str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h)
              for i, h in enumerate(headers)]
    align = align or "<" + ">" * (len(headers) - 1)
    line = indent + "  ".join(f"{h:{a}{w}}" for h, a, w in zip(headers, align, widths, strict=True))
    print(line)
    print(indent + "-" * (len(line) - len(indent)))
    for r in cells:
        print(indent + "  ".join(f"{c:{a}{w}}" for c, a, w in zip(r, align, widths, strict=True)))


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("PASS" if ok else "MISS")


def best_of(run, repeat: int, budget: float = math.inf):
    """Call ``run()`` (returns a Solution) up to ``repeat`` times, stopping early once the runs
    took ``budget`` seconds in total; return (first solution, best time, number of runs)."""
    first, times = None, []
    for _ in range(max(1, repeat)):
        sol = run()
        times.append(sol.time)
        first = first or sol
        if sum(times) > budget:
            break
    return first, min(times), len(times)


def transductive_error(outputs: np.ndarray, y_all: np.ndarray, l: int) -> float:  # noqa: E741
    """Error rate in percent of ``sign(outputs)`` on the unlabeled rows ``l:``."""
    return 100.0 * float(np.mean(np.sign(outputs[l:]) != y_all[l:]))


def warm_up() -> None:
    """Load the plugins (importing cvxpy) and touch every solver once on a tiny instance."""
    from ssl_opt.datasets.text_generator import synthetic_text
    from ssl_opt.problems import DAS3VM, TSVM, LinearSVM

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = synthetic_text(300, 200, nnz_per_row=10, n_labeled=20, seed=123)
        ssl_opt.solve(LinearSVM(data.X[:20], data.y, 1e-3), solver="mfn")
        ssl_opt.solve(TSVM(data.X, data.y, 1e-3, 1.0), solver="tsvm")
        ssl_opt.solve(DAS3VM(data.X, data.y, 1e-3, 1.0), solver="da")
    log(f"warm-up done in {time.perf_counter() - t0:.2f} s")


def csr_bytes(X) -> int:
    """Bytes of a CSR matrix's three arrays (data + indices + indptr)."""
    return int(X.data.nbytes + X.indices.nbytes + X.indptr.nbytes)


def mib(nbytes: float) -> str:
    return f"{nbytes / 2**20:.1f} MiB"
