"""``ssl-opt calibrate``: measure every installed solver on generated instances, fit cost models.

For each registered generator (``family/variant``) and each solver that applies to its
instances, the generator's calibration scales are run in increasing order until one run takes
longer than ``target_seconds`` and ``min_points`` sizes are measured (or the solver's share of
the time, ``max_seconds``, is spent):
every solver is measured from small sizes up to where its asymptotic growth shows, at a cost
of about twice its last run. Runs shorter than ``repeat_below`` seconds are repeated and the
fastest kept (timer and cache noise). Instances are shared between solvers. A machine already
loaded when calibration starts gets a ``CostModelWarning`` (:func:`check_machine_load`): its
times would include waiting for the other processes.
"""

from __future__ import annotations

import os
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

from ssl_opt import registry
from ssl_opt._validation import check_int, check_positive, check_writable_directory
from ssl_opt.exceptions import InvalidInputError, warn
from ssl_opt.selection import model_store
from ssl_opt.selection.cost_model import CostModel
from ssl_opt.selection.generators import cost_size
from ssl_opt.selection.measure import measure_fastest
from ssl_opt.selection.model_store import CostModelWarning
from ssl_opt.solution import FAILED
from ssl_opt.text_table import text_table


@dataclass(frozen=True)
class CalibrationRun:
    key: str
    solver: str
    scale: int
    size: float
    seconds: float
    memory: float
    status: str


def _pairs(generators, solvers):
    table = registry.solvers()
    gens = registry.generators()
    if generators is not None:
        unknown = sorted(set(generators) - set(gens))
        if unknown:
            raise InvalidInputError(f"no generator {unknown}; registered: {sorted(gens)}.")
        gens = {k: gens[k] for k in generators}
    if solvers is not None:
        unknown = sorted(set(solvers) - set(table))
        if unknown:
            raise InvalidInputError(f"no solver {unknown}; registered: {sorted(table)}.")
        table = {k: table[k] for k in solvers}
    pairs = []
    for key, gen in gens.items():
        probe = gen.instance(gen.calibration_scales[0], 0)
        pairs += [(key, gen, name, s) for name, s in table.items() if s.supports(probe)]
    return pairs


#: Calibration warns when the 1-minute load average exceeds this share of the CPUs.
LOAD_SHARE = 0.5


def check_machine_load() -> float | None:
    """The 1-minute load average, with a ``CostModelWarning`` when it is above ``LOAD_SHARE``
    of the CPUs (other processes then share the cores, and models fitted now predict a loaded
    machine); None where the OS does not report it."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return None
    cpus = os.cpu_count() or 1
    if load > LOAD_SHARE * cpus:
        warn(f"the machine is loaded (load average {load:.2f} on {cpus} CPUs) as calibration "
             "starts: the times measured now include waiting for other processes, and the "
             "models fitted from them will over-predict on an idle machine. Calibrate when "
             "the machine is otherwise idle (`uptime` shows the load).", CostModelWarning)
    return load


def calibrate(generators: list[str] | None = None, solvers: list[str] | None = None,
              target_seconds: float = 1.0, max_seconds: float = 15.0, repeat_below: float = 0.2,
              min_points: int = 3,
              seed: int = 0, progress: bool = True) -> tuple[list[CostModel], list[CalibrationRun]]:
    """Measure and fit; returns the models and every run (nothing is written; see
    :func:`calibrate_and_save`)."""
    from tqdm.auto import tqdm

    check_positive(target_seconds, "target_seconds")
    check_positive(max_seconds, "max_seconds")
    check_positive(repeat_below, "repeat_below")
    min_points = check_int(min_points, "min_points", 2)
    seed = check_int(seed, "seed", 0)
    pairs = _pairs(generators, solvers)
    check_machine_load()
    instances: dict[tuple[str, int], object] = {}
    runs: list[CalibrationRun] = []
    models: list[CostModel] = []
    bar = tqdm(pairs, desc="calibrating", unit="pair", disable=not progress)
    for i, (key, gen, name, solver) in enumerate(bar):
        bar.set_postfix_str(f"{name} on {key}")
        spent, points = 0.0, []
        size_keys = solver.cost_size_keys(key, gen.size_keys)
        warm = True
        for scale in gen.calibration_scales:
            if (key, scale) not in instances:
                instances[(key, scale)] = gen.instance(scale, seed)
            problem = instances[(key, scale)]
            if not solver.supports(problem):
                break
            try:
                if warm:  # first call pays imports and caches: not a measurement
                    solver.solve(problem)
                    warm = False
                best, seconds = measure_fastest(lambda p=problem, s=solver: s.solve(p),
                                                repeat_below)
                spent += seconds
            except Exception as exc:  # a plugin's bug must not end everyone's calibration
                warnings.warn(f"calibration: {name} on {key} at scale {scale} raised "
                              f"{type(exc).__name__}: {exc}; its larger sizes are skipped.",
                              RuntimeWarning, stacklevel=2)
                break
            status = best.result.status
            size = cost_size(problem, size_keys)
            runs.append(CalibrationRun(key, name, scale, size, best.seconds, best.peak_bytes,
                                       status))
            if status != FAILED:
                points.append((size, best.seconds, best.peak_bytes))
            if spent > max_seconds or (best.seconds > target_seconds
                                       and len(points) >= min_points):
                break
        # A model needs the size to vary.
        if len(points) >= 2:
            growth = solver.expected_growth(key)
            models.append(CostModel.fit(
                name, key, size_keys, points,
                None if growth is None else growth[0], "" if growth is None else growth[1]))
        # Drop instances no later solver of this generator will reach.
        if all(p[0] != key for p in pairs[i + 1:]):
            for k in [k for k in instances if k[0] == key]:
                del instances[k]
    return models, runs


def check_output_file(path, name: str) -> Path:
    """``path`` as a file that can be written: not a directory, and no parent is a file.
    Checked before calibrating, so a bad path fails at once, not after the measurements."""
    out = Path(path)
    if out.is_dir():
        raise InvalidInputError(f"{name} {str(path)!r} is a directory; give a file name, "
                                f"e.g. {str(out / model_store.FILENAME)!r}.")
    for parent in out.parents:
        if parent.exists():
            if not parent.is_dir():
                raise InvalidInputError(f"{name} {str(path)!r} cannot be written: "
                                        f"{str(parent)!r} is a file, not a directory.")
            break
    check_writable_directory(out.parent, name)
    return out


def calibrate_and_save(path=None, **kwargs) -> tuple[list[CostModel], list[CalibrationRun], str]:
    """:func:`calibrate`, then write the models atomically (the user cache by default),
    keeping previously calibrated models of pairs not measured this time."""
    target = check_output_file(model_store.user_models_path() if path is None else path,
                               "path" if path is not None else f"${model_store.CACHE_ENV}")
    start = time.perf_counter()
    models, runs = calibrate(**kwargs)
    previous = model_store.read_models(target) or {}
    merged = {**previous, **{(m.solver, m.key): m for m in models}}
    written = model_store.save_models(merged.values(), target, time.perf_counter() - start)
    model_store.clear_cache()
    return models, runs, str(written)


def report(models: list[CostModel]) -> str:
    """Fitted exponents beside the expected ones, as a plain-text table."""
    rows = []
    for m in sorted(models, key=lambda m: (m.key, m.solver)):
        lo, hi = m.size_range
        mem = "-" if m.memory is None else f"{m.memory.c / 2**20:.3g} MiB + " \
                                           f"{m.memory.a:.2g}·s^{m.memory.b:.2f} B"
        rows.append([m.key, m.solver, f"{lo:.4g}–{hi:.4g}", str(len(m.points)),
                     f"{m.time.c:.2g} s + {m.time.a:.2g}·s^{m.time.b:.2f}",
                     f"{m.time.b:.2f}",
                     "-" if m.expected_exponent is None else f"{m.expected_exponent:g}", mem])
    return text_table(rows, ["family/variant", "solver", "sizes", "points", "time law",
                             "fitted b", "expected b", "memory law"])
