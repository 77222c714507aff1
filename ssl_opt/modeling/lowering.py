"""Models that are exactly a named problem, so the paper's solvers apply (docs/design.md §6).

A *lowerer* looks at a :class:`~ssl_opt.modeling.Model` and returns either a
:class:`Lowering` — the family problem equal to the model and the maps between their
variables — or a one-line reason it does not apply, naming the term or constraint that breaks
the structure (e.g. ``"GraphTV(weight=0.1, norm=l1, edges=119) has no counterpart in
LapSVM"``). The built-in lowerers are the families' patterns
(``ssl_opt/problems/<family>/pattern.py``, read with :mod:`ssl_opt.modeling.patterns`): they
rebuild LapSVM/LapRLS, LinearSVM, ERE, LRL and SumOfNorms. Lowerers are registered per
problem class with :func:`register_lowering`; every registered solver whose ``problem_types``
holds that class then accepts the model (:class:`~ssl_opt.solvers.Solver` solves the lowered
problem and maps the solution back), and ``select``/``missing`` report the reason when it does not.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Lowering:
    """``problem`` equals the model: at corresponding points the model's objective is
    ``scale`` times the problem's (``scale = 1`` unless the family fixes a factor the model
    does not have, e.g. the ½ of LapSVM's loss; a positive constant: the same minimizers)."""

    problem: object
    #: Family variables (a dict) → model variables (a dict).
    to_model: Callable[[dict], dict]
    #: Model variables → family variables (warm starts); None when not invertible.
    from_model: Callable[[dict], dict] | None = None
    #: model objective = ``scale`` · problem objective (exact, > 0).
    scale: float = 1.0


#: Problem class name → lowerer ``model -> Lowering | str``.
LOWERERS: dict[str, Callable] = {}


def register_lowering(problem_class_name: str):
    """Decorator registering a lowerer for the named problem class."""
    def decorate(fn):
        LOWERERS[problem_class_name] = fn
        return fn
    return decorate


def find_lowerings(model) -> tuple[dict[type, Lowering], dict[str, str]]:
    """Every lowering that applies to ``model`` (by problem class), and the reasons of those
    that do not (by problem class name)."""
    _load_builtin_lowerers()
    found: dict[type, Lowering] = {}
    failures: dict[str, str] = {}
    for name, lowerer in LOWERERS.items():
        try:
            result = lowerer(model)
        except (ValueError, TypeError, np.linalg.LinAlgError) as exc:
            failures[name] = f"lowering to {name} failed: {exc}"
            continue
        if isinstance(result, Lowering):
            found[type(result.problem)] = result
        else:
            failures[name] = str(result)
    return found, failures


def _load_builtin_lowerers() -> None:
    import importlib

    for module in BUILTIN_LOWERERS:
        importlib.import_module(module)


#: Modules that register the built-in lowerers when imported.
BUILTIN_LOWERERS: tuple[str, ...] = tuple(
    f"ssl_opt.problems.{family}.pattern" for family in ("manifold", "linear", "ere"))
