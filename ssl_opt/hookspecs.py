"""Plugin hook specifications (pluggy project name ``"ssl_opt"``).

A plugin is any module or object with ``@hookimpl``-decorated functions named like the specs
below, advertised under the ``ssl_opt`` entry-point group::

    [project.entry-points.ssl_opt]
    my_solver = "my_package.my_module"

The package's own solvers, references and examples implement the same hooks; they are registered
in process (:data:`ssl_opt.registry.BUILTIN_PLUGINS`) before the entry points are loaded.
"""

from __future__ import annotations

import pluggy

hookspec = pluggy.HookspecMarker("ssl_opt")
hookimpl = pluggy.HookimplMarker("ssl_opt")


@hookspec
def register_solvers() -> list:
    """Return a list of :class:`ssl_opt.solvers.Solver` instances."""


@hookspec
def register_examples() -> list:
    """Return a list of :class:`ssl_opt.examples.Example` (small built-in instances)."""


@hookspec
def register_generators() -> list:
    """Return a list of :class:`ssl_opt.selection.generators.Generator` (scalable instances for
    ``ssl-opt calibrate`` and ``ssl-opt bench``)."""
