"""The plugin manager: the built-in plugins, then the ``ssl_opt`` entry-point group.

Built-in solvers, references, examples and generators are plugin modules like any other; they
are registered in process from :data:`BUILTIN_PLUGINS` (as tox and datasette register their
internal plugins) before the entry points of third-party packages are loaded, so a broken or
missing installation of metadata cannot hide them.
"""

from __future__ import annotations

import importlib

import pluggy

from ssl_opt import hookspecs
from ssl_opt.exceptions import SolverNotFoundError

ENTRY_POINT_GROUP = "ssl_opt"

#: The package's own plugin modules, one per solver or family example set.
BUILTIN_PLUGINS: tuple[str, ...] = (
    "ssl_opt.reference",
    "ssl_opt.plugins.manifold.newton",
    "ssl_opt.plugins.manifold.pcg",
    "ssl_opt.plugins.manifold.laprls_direct",
    "ssl_opt.plugins.linear.mfn",
    "ssl_opt.plugins.linear.tsvm",
    "ssl_opt.plugins.linear.da",
    "ssl_opt.plugins.lass.admm",
    "ssl_opt.plugins.npkl.bcd",
    "ssl_opt.plugins.ere.irls",
    "ssl_opt.problems.manifold.examples",
    "ssl_opt.problems.linear.examples",
    "ssl_opt.problems.lass.examples",
    "ssl_opt.problems.npkl.examples",
    "ssl_opt.problems.ere.examples",
)

_manager: pluggy.PluginManager | None = None


def plugin_manager() -> pluggy.PluginManager:
    """The process-wide plugin manager: built-ins, then every installed plugin, checked."""
    global _manager
    if _manager is None:
        pm = pluggy.PluginManager("ssl_opt")
        pm.add_hookspecs(hookspecs)
        for name in BUILTIN_PLUGINS:
            pm.register(importlib.import_module(name), name=name)
        pm.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
        pm.check_pending()
        _manager = pm
    return _manager


def register_plugin(plugin, name: str | None = None) -> None:
    """Register a plugin object or module at run time (e.g. from a notebook or a test)."""
    pm = plugin_manager()
    pm.register(plugin, name=name)
    pm.check_pending()


def unregister_plugin(plugin) -> None:
    plugin_manager().unregister(plugin)


def _unique(batches, key, what: str) -> dict:
    """Merge the plugins' lists into one dict by ``key``; a key claimed twice is an error."""
    found: dict = {}
    for batch in batches:
        for item in batch or ():
            k = key(item)
            if k in found:
                raise RuntimeError(f"two plugins register {what} {k!r}; keep only one of them.")
            found[k] = item
    return found


def solvers() -> dict:
    """Every registered solver by name; two plugins may not claim the same name."""
    return _unique(plugin_manager().hook.register_solvers(), lambda s: s.name,
                   "a solver named")


def get_solver(name: str):
    table = solvers()
    if name not in table:
        raise SolverNotFoundError(
            f"no solver named {name!r}; registered solvers: {sorted(table) or 'none'}."
            + ("" if table else " Is ssl-opt installed (pip install .)?")
        )
    return table[name]


def examples() -> list:
    found = []
    for batch in plugin_manager().hook.register_examples():
        found.extend(batch or ())
    return sorted(found, key=lambda e: e.name)


def generators() -> dict:
    """Every registered instance generator by ``family/variant`` key."""
    found = _unique(plugin_manager().hook.register_generators(), lambda g: g.key,
                    "a generator for")
    return dict(sorted(found.items()))


def reset() -> None:
    """Forget the loaded plugins; the next call re-reads the entry-point group (tests, or after
    installing a plugin in a running session)."""
    global _manager
    _manager = None
