"""The plugin manager: loads the ``ssl_opt`` entry-point group and indexes what it registers."""

from __future__ import annotations

import pluggy

from . import hookspecs
from .exceptions import SolverNotFoundError

ENTRY_POINT_GROUP = "ssl_opt"

_manager: pluggy.PluginManager | None = None


def plugin_manager() -> pluggy.PluginManager:
    """The process-wide plugin manager, with every installed plugin loaded and checked."""
    global _manager
    if _manager is None:
        pm = pluggy.PluginManager("ssl_opt")
        pm.add_hookspecs(hookspecs)
        try:
            pm.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.startswith(("ssl_opt.plugins", "ssl_opt.reference")):
                raise ImportError(
                    f"{exc.name} is not importable: ssl_opt was imported from the source tree "
                    f"({__file__}), where plugins/ and reference/ are not mapped into the "
                    "package. Run from another directory (the tests: pytest from the repository "
                    "root), or install in editable mode: pip install -e ."
                ) from exc
            raise
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
