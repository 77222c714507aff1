"""The plugin manager: the built-in plugins, then the ``ssl_opt`` entry-point group.

Built-in solvers, references, examples and generators are plugin modules like any other; they
are registered in process from :data:`BUILTIN_PLUGINS` (as tox and datasette register their
internal plugins) before the entry points of third-party packages are loaded, so a broken or
missing installation of metadata cannot hide them.

A third-party plugin cannot break the built-ins either: entry points are loaded one by one,
hooks are called plugin by plugin and what each returns is checked, and a plugin that fails to
import, raises in a hook, returns something other than a list of solvers/examples/generators,
or claims a name already registered is skipped (or that part of it is) with a
:class:`PluginWarning` naming the entry point and its distribution.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import warnings

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
    "ssl_opt.plugins.manifold.lowrank_newton",
    "ssl_opt.plugins.linear.mfn",
    "ssl_opt.plugins.linear.tsvm",
    "ssl_opt.plugins.linear.da",
    "ssl_opt.plugins.npkl.bcd",
    "ssl_opt.plugins.ere.irls",
    "ssl_opt.plugins.model.newton_cg",
    "ssl_opt.plugins.model.irls_newton",
    "ssl_opt.plugins.model.lbfgs",
    "ssl_opt.plugins.model.fista",
    "ssl_opt.plugins.model.pdhg",
    "ssl_opt.plugins.model.mirror",
    "ssl_opt.plugins.model.transductive",
    "ssl_opt.plugins.model.laprls_columns",
    "ssl_opt.plugins.model.one_vs_rest",
    "ssl_opt.plugins.model.admm_split",
    "ssl_opt.plugins.model.irls_mm",
    "ssl_opt.plugins.model.alm_newton",
    "ssl_opt.plugins.model.kernel_factor",
    "ssl_opt.problems.manifold.examples",
    "ssl_opt.problems.linear.examples",
    "ssl_opt.problems.lass.examples",
    "ssl_opt.problems.npkl.examples",
    "ssl_opt.problems.ere.examples",
    "ssl_opt.modeling.examples",
)

_manager: pluggy.PluginManager | None = None
#: Plugin name -> how a warning names it (entry point and distribution, or the object).
_labels: dict[str, str] = {}


class PluginWarning(UserWarning):
    """A third-party plugin was skipped (or part of what it registers): it failed to import,
    raised in a hook, returned something that is not a solver/example/generator, or claimed a
    name another plugin already registered. The built-ins and every other plugin still work."""


def _warn(message: str) -> None:
    warnings.warn(message, PluginWarning, stacklevel=3)


def _entry_point_label(ep) -> str:
    dist = getattr(ep, "dist", None)
    where = (f"distribution {dist.name} {dist.version}" if dist is not None
             else "unknown distribution")
    return f"plugin {ep.name!r} ({ep.value}, {where})"


def _load_entry_points(pm: pluggy.PluginManager) -> None:
    """Load the ``ssl_opt`` entry points one by one; a plugin that fails to import or to
    register is skipped with a :class:`PluginWarning` naming it."""
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if pm.get_plugin(ep.name) is not None or pm.is_blocked(ep.name):
            continue
        label = _entry_point_label(ep)
        try:
            plugin = ep.load()
        except (Exception, SystemExit) as exc:
            _warn(f"ignoring ssl_opt {label}: importing it raised {type(exc).__name__}: {exc}")
            continue
        _register_checked(pm, plugin, ep.name, label)


def _register_checked(pm: pluggy.PluginManager, plugin, name: str | None, label: str) -> bool:
    try:
        registered = pm.register(plugin, name=name)
        if registered is None:
            return False  # blocked
        _labels[registered] = label
        pm.check_pending()
    except Exception as exc:
        if pm.is_registered(plugin):
            pm.unregister(plugin)
        _warn(f"ignoring ssl_opt {label}: registering it failed; check that it implements "
              f"only the ssl_opt hooks, with their arguments ({type(exc).__name__}: {exc})")
        return False
    return True


def plugin_manager() -> pluggy.PluginManager:
    """The process-wide plugin manager: built-ins, then every installed plugin, checked."""
    global _manager
    if _manager is None:
        pm = pluggy.PluginManager("ssl_opt")
        pm.add_hookspecs(hookspecs)
        for name in BUILTIN_PLUGINS:
            pm.register(importlib.import_module(name), name=name)
            _labels[name] = f"built-in plugin {name!r}"
        pm.check_pending()
        _load_entry_points(pm)
        _manager = pm
    return _manager


def register_plugin(plugin, name: str | None = None) -> None:
    """Register a plugin object or module at run time (e.g. from a notebook or a test)."""
    label = f"plugin {name or getattr(plugin, '__name__', type(plugin).__qualname__)!r}"
    pm = plugin_manager()
    pm.register(plugin, name=name)
    _labels[pm.get_name(plugin)] = label
    pm.check_pending()


def unregister_plugin(plugin) -> None:
    plugin_manager().unregister(plugin)


def _label(plugin_name: str) -> str:
    return _labels.get(plugin_name, f"plugin {plugin_name!r}")


def _collect(hook_name: str, kind: type, what: str, name_of) -> list[tuple[str, list]]:
    """Call one hook plugin by plugin, in registration order; keep only what each returns
    that is a ``kind`` instance with a non-empty string ``name_of(item)``. A plugin that
    raises, or returns something other than a list, is skipped with a warning; so are the
    objects it returns that are not well formed."""
    batches = []
    hook = getattr(plugin_manager().hook, hook_name)
    for impl in hook.get_hookimpls():
        if impl.hookwrapper or getattr(impl, "wrapper", False):
            continue
        label = _label(impl.plugin_name)
        try:
            result = impl.function()
        except Exception as exc:
            _warn(f"ignoring {hook_name}() of ssl_opt {label}: it raised "
                  f"{type(exc).__name__}: {exc}")
            continue
        if result is None:
            continue
        if not isinstance(result, (list, tuple)):
            _warn(f"ignoring {hook_name}() of ssl_opt {label}: it must return a list of "
                  f"{what}, got {type(result).__name__}")
            continue
        good = [item for item in result if _well_formed(item, kind, name_of)]
        if len(good) < len(result):
            bad = sorted({type(item).__name__ for item in result
                          if not _well_formed(item, kind, name_of)})
            _warn(f"ignoring {len(result) - len(good)} object(s) of type {', '.join(bad)} "
                  f"returned by {hook_name}() of ssl_opt {label}: expected {what} with a "
                  "non-empty string name")
        batches.append((impl.plugin_name, good))
    return batches


def _well_formed(item, kind: type, name_of) -> bool:
    if not isinstance(item, kind):
        return False
    try:
        name = name_of(item)
    except Exception:
        return False
    return isinstance(name, str) and bool(name)


def _unique(batches: list[tuple[str, list]], key, what: str) -> dict:
    """Merge the plugins' lists into one dict by ``key``. A key claimed twice keeps the first
    plugin registered (the built-ins come first), with a warning naming both plugins.

    Batches arrive in registration order; the dict lists them in pluggy's call order (last
    registered first), as the hook call did.
    """
    owner: dict = {}
    for plugin_name, batch in batches:
        for item in batch:
            k = key(item)
            if k in owner:
                _warn(f"{what} {k!r} is registered by ssl_opt {_label(owner[k][0])} and by "
                      f"ssl_opt {_label(plugin_name)}; keeping the first, ignoring the "
                      "second (uninstall or rename one of them).")
                continue
            owner[k] = (plugin_name, item)
    found: dict = {}
    for plugin_name, batch in reversed(batches):
        for item in batch:
            k = key(item)
            if owner[k][0] == plugin_name and owner[k][1] is item:
                found[k] = item
    return found


def _solver_name(solver) -> str:
    return solver.name


def _generator_key(generator) -> str:
    return generator.key


def solvers() -> dict:
    """Every registered solver by name; a name claimed twice keeps the first registered."""
    from ssl_opt.solvers import Solver

    return _unique(_collect("register_solvers", Solver, "Solver instances", _solver_name),
                   _solver_name, "the solver named")


def get_solver(name: str):
    table = solvers()
    if name not in table:
        raise SolverNotFoundError(
            f"no solver named {name!r}; registered solvers: {sorted(table) or 'none'}."
            + ("" if table else " Is ssl-opt installed (pip install .)?")
        )
    return table[name]


def examples() -> list:
    from ssl_opt.examples import Example

    found = []
    batches = _collect("register_examples", Example, "Example instances", lambda e: e.name)
    for _, batch in reversed(batches):
        found.extend(batch)
    return sorted(found, key=lambda e: e.name)


def generators() -> dict:
    """Every registered instance generator by ``family/variant`` key."""
    from ssl_opt.selection.generators import Generator

    found = _unique(_collect("register_generators", Generator, "Generator instances",
                             _generator_key),
                    _generator_key, "the generator for")
    return dict(sorted(found.items()))


def reset() -> None:
    """Forget the loaded plugins; the next call re-reads the entry-point group (tests, or after
    installing a plugin in a running session)."""
    global _manager
    _manager = None
