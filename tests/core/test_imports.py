"""The import graph of the library (ssl_opt/, plugins/, reference/ as installed under
``ssl_opt``): no cycle between modules, and no private name imported from another module.

Imports inside functions count (a cycle hidden in a function still ties the modules together);
imports under ``if TYPE_CHECKING`` do not, nor do the re-exports of package ``__init__`` files.
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = {"ssl_opt": "ssl_opt", "plugins": "ssl_opt.plugins", "reference": "ssl_opt.reference"}


def _modules() -> dict[str, Path]:
    found = {}
    for folder, package in FOLDERS.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            found[".".join((package, *parts))] = path
    return found


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped = set()
    for node in ast.walk(tree):
        test = getattr(node, "test", None)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(test):
            skipped |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return skipped


def _imports(name: str, path: Path) -> list[tuple[str, list[str]]]:
    """``(module, names)`` of every import of the file (relative imports resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = _type_checking_nodes(tree)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            out += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            out.append((module, [alias.name for alias in node.names]))
    return out


def _graph() -> tuple[dict[str, set[str]], list[str]]:
    modules = _modules()
    graph, private = {}, []
    for name, path in modules.items():
        if path.name == "__init__.py":
            continue
        deps = set()
        for module, names in _imports(name, path):
            targets = [module] + [f"{module}.{n}" for n in names]
            deps |= {t for t in targets if t in modules and t != name
                     and modules[t].name != "__init__.py"}
            if module in modules and module != name:
                private += [f"{name} imports {n} from {module}" for n in names
                            if n.startswith("_") and not n.startswith("__")]
        graph[name] = deps
    return graph, private


def test_the_library_has_no_import_cycle():
    graph, _ = _graph()
    assert len(graph) > 100  # the walk found the library
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as exc:
        raise AssertionError(f"import cycle: {' -> '.join(exc.args[1])}") from None


def test_no_module_imports_a_private_name_of_another():
    _, private = _graph()
    assert not private, "\n".join(private)


def test_the_walk_sees_a_cycle_and_a_private_import(tmp_path, monkeypatch):
    """The checks can fail: two modules importing each other, one through a private name."""
    package = tmp_path / "ssl_opt"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from ssl_opt.b import _helper\n")
    (package / "b.py").write_text("def f():\n    from ssl_opt import a\n")
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    monkeypatch.setitem(globals(), "FOLDERS", {"ssl_opt": "ssl_opt"})
    graph, private = _graph()
    assert graph == {"ssl_opt.a": {"ssl_opt.b"}, "ssl_opt.b": {"ssl_opt.a"}}
    assert private == ["ssl_opt.a imports _helper from ssl_opt.b"]
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError:
        return
    raise AssertionError("the cycle a <-> b was not found")
