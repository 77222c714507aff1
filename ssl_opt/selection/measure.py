"""Wall time and peak memory of one call, as calibration and benchmarks record them.

Peak memory is the rise of the process's resident set during the call: on Linux the
high-water mark ``VmHWM`` is reset through ``/proc/self/clear_refs`` before the call and read
after it, after glibc has returned freed heap pages (``malloc_trim``), so native allocations
(Clarabel, SuperLU, BLAS workspaces) count too. Elsewhere ``tracemalloc``'s peak is used, which
sees Python and NumPy allocations only.
"""

from __future__ import annotations

import ctypes
import gc
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


@dataclass(frozen=True)
class Measurement:
    result: Any
    seconds: float
    peak_bytes: float
    method: str  # "rss" or "tracemalloc"


def _status_kib(field: str) -> int:
    for line in _STATUS.read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def _trim_heap() -> None:
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _can_reset_peak() -> bool:
    try:
        _CLEAR_REFS.write_text("5")
        _status_kib("VmHWM")
        return True
    except (OSError, KeyError, ValueError):
        return False


_RSS = None


def measure(fn: Callable[[], Any]) -> Measurement:
    """Run ``fn()`` once; return its result, wall seconds and peak extra bytes."""
    global _RSS
    if _RSS is None:
        _RSS = _can_reset_peak()
    gc.collect()
    _trim_heap()
    if _RSS:
        base = _status_kib("VmRSS")
        _CLEAR_REFS.write_text("5")
        start = time.perf_counter()
        result = fn()
        seconds = time.perf_counter() - start
        peak = max(0, _status_kib("VmHWM") - base) * 1024.0
        return Measurement(result, seconds, peak, "rss")
    tracemalloc.start()
    try:
        start = time.perf_counter()
        result = fn()
        seconds = time.perf_counter() - start
        peak = float(tracemalloc.get_traced_memory()[1])
    finally:
        tracemalloc.stop()
    return Measurement(result, seconds, peak, "tracemalloc")


def measure_fastest(fn: Callable[[], Any], repeat_below: float,
                    tries: int = 3) -> tuple[Measurement, float]:
    """:func:`measure` once, and again (up to ``tries`` runs) while runs take less than
    ``repeat_below`` seconds; returns the fastest run and the wall seconds of all of them."""
    best = measure(fn)
    spent = best.seconds
    for _ in range(tries - 1):
        if best.seconds >= repeat_below:
            break
        again = measure(fn)
        spent += again.seconds
        if again.seconds < best.seconds:
            best = again
    return best, spent


def available_memory() -> float:
    """Bytes the OS reports as available (``MemAvailable``), else physical memory."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024.0
    except OSError:
        pass
    import os

    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return float("inf")
