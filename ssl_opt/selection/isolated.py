"""Benchmark runs with a hard time limit: each solve runs in a worker process that is killed
when the limit passes.

A solver's own ``time_limit`` option stops it cooperatively, at its next check; a solver
without one (a Newton step, a factorization, a CVXPY call) cannot be stopped from inside the
process. :class:`Worker` is one fresh interpreter (``python -c``, with this process's
``sys.path``): forking this one would copy thread pools that a library such as Clarabel has
already started, and its solves in the fork would then wait forever on threads that do not
exist there; multiprocessing's spawn would re-run the caller's main script. The worker builds
the instance itself from its generator (key, scale, seed, operator: the generators are
deterministic), runs :func:`~ssl_opt.selection.measure.measure_fastest` as the parent would,
and sends back the measurement with a picklable copy of the solution (pickles over its stdin
and stdout; anything the solvers print goes to stderr). When a run passes the hard limit the
parent kills the worker and starts another for the next run.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import pickle
import subprocess
import sys
import threading

from ssl_opt.selection.measure import Measurement, measure_fastest
from ssl_opt.solution import Solution

#: Seconds a new worker may take to import the package and its preloads.
START_LIMIT = 300.0
_BOOT = ("import pickle, sys; sys.path[:] = pickle.load(sys.stdin.buffer); "
         "from ssl_opt.selection.isolated import serve; serve()")


class KilledRun(Exception):
    """The run did not finish within the hard limit (``seconds``); its worker was killed."""

    def __init__(self, message: str, seconds: float):
        super().__init__(message)
        self.seconds = float(seconds)


class ChildError(Exception):
    """The run raised in the worker; the message is the worker's ``Type: message``."""


class Worker:
    """A process that runs benchmark solves (module docstring), started at its first run; use
    as a context manager, or call :meth:`close`."""

    def __init__(self, preload: tuple[str, ...] = ()):
        self.preload = tuple(preload)
        self._process: subprocess.Popen | None = None
        self._instance = None
        self.solvers: frozenset[str] = frozenset()
        self.generators: frozenset[str] = frozenset()

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _ensure_running(self) -> None:
        if self._process is not None and self._process.poll() is None:
            return
        self._process = subprocess.Popen([sys.executable, "-c", _BOOT], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE)
        self._instance = None
        self._send(list(sys.path))
        self._send(self.preload)
        self.solvers, self.generators = self._receive(START_LIMIT, "starting")

    def knows(self, solver: str, generator: str) -> bool:
        """Whether the worker has ``solver`` and ``generator``: registered through installed
        plugins (entry points), not only in this process."""
        self._ensure_running()
        return solver in self.solvers and generator in self.generators

    def run(self, instance: tuple, solver: str, options: dict, repeat_below: float,
            hard_limit: float, build_limit: float = 600.0) -> Measurement:
        """``measure_fastest`` of ``solver.solve(problem, **options)`` in the worker, on the
        problem ``registry.generators()[key].instance(scale, seed, operator)`` for ``instance
        = (key, scale, seed, operator)`` (built once per instance, within ``build_limit``
        seconds). Raises :class:`KilledRun` after ``hard_limit`` seconds of solving and
        :class:`ChildError` when the solve raised."""
        self._ensure_running()
        if instance != self._instance:
            self._ask(("instance", instance), build_limit, "building the instance")
            self._instance = instance
        return self._ask(("solve", solver, options, repeat_below), hard_limit, "")

    def _send(self, message) -> None:
        pickle.dump(message, self._process.stdin)
        self._process.stdin.flush()

    def _ask(self, message, limit: float, what: str):
        self._send(message)
        return self._receive(limit, what)

    def _receive(self, limit: float, what: str):
        answer: list = []
        reader = threading.Thread(target=_read_into, args=(self._process.stdout, answer),
                                  daemon=True)
        reader.start()
        reader.join(limit)
        if reader.is_alive():
            self.close(kill=True)
            raise KilledRun(f"killed after {limit:.3g} s{' ' + what if what else ''} "
                            "(hard limit)", limit)
        if not answer or isinstance(answer[0], BaseException):
            code = self._process.poll()
            self.close(kill=True)
            raise ChildError(f"the worker process ended (exit code {code})")
        kind, payload = answer[0]
        if kind == "error":
            raise ChildError(payload)
        return payload

    def close(self, kill: bool = False) -> None:
        """Stop the worker (at once with ``kill``)."""
        process, self._process, self._instance = self._process, None, None
        if process is None:
            return
        if not kill and process.poll() is None:
            try:
                pickle.dump(None, process.stdin)
                process.stdin.close()
                process.wait(5.0)
            except (OSError, subprocess.TimeoutExpired):
                pass
        if process.poll() is None:
            process.kill()
        process.wait()
        for stream in (process.stdin, process.stdout):
            try:
                stream.close()
            except OSError:
                pass


def _read_into(stream, answer: list) -> None:
    try:
        answer.append(pickle.load(stream))
    except BaseException as exc:  # noqa: BLE001 - EOF or a broken pipe: the worker ended
        answer.append(exc)


def serve() -> None:
    """The worker's loop (module docstring): messages from stdin, answers on the original
    stdout, which is then pointed at stderr so that nothing a solver prints can mix in."""
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    requests = sys.stdin.buffer
    from ssl_opt import registry

    for package in pickle.load(requests):  # imported before any timed solve
        importlib.import_module(package)
    pickle.dump(("ok", (frozenset(registry.solvers()), frozenset(registry.generators()))),
                answers)
    answers.flush()
    problem = None
    while True:
        message = pickle.load(requests)
        if message is None:
            return
        try:
            if message[0] == "instance":
                key, scale, seed, operator = message[1]
                problem = None
                problem = registry.generators()[key].instance(scale, seed, operator)
                answer = ("ok", None)
            else:
                _, name, options, repeat_below = message
                solver = registry.get_solver(name)
                best, _ = measure_fastest(
                    lambda s=solver, p=problem, o=options: s.solve(p, **o), repeat_below)
                answer = ("ok", dataclasses.replace(best, result=portable(best.result)))
        except Exception as exc:  # noqa: BLE001 - every failure goes back to the parent
            answer = ("error", f"{type(exc).__name__}: {exc}")
        pickle.dump(answer, answers)
        answers.flush()


def portable(solution: Solution) -> Solution:
    """``solution`` without the ``info`` entries that cannot be pickled (factorizations, open
    handles): the benchmark needs x, the status, the counts, the history and the rest."""
    info = {}
    for key, value in solution.info.items():
        try:
            pickle.dumps(value)
        except Exception:  # noqa: BLE001 - any object that does not pickle stays behind
            continue
        info[key] = value
    return dataclasses.replace(solution, info=info)
