"""The layout contract: built-ins registered in process, one folder per family, and a source
checkout that imports like the installed package."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from ssl_opt import registry

ROOT = Path(__file__).resolve().parents[2]
FAMILIES = ("manifold", "linear", "lass", "npkl", "ere", "model")
#: Where each family declares its problems (the modelling layer is a package of its own).
PROBLEM_MODULES = {family: f"ssl_opt.problems.{family}.problem" for family in FAMILIES}
PROBLEM_MODULES["model"] = "ssl_opt.modeling.model"
TEST_DIRS = {family: family for family in FAMILIES} | {"model": "modeling"}


@pytest.mark.parametrize("name", registry.BUILTIN_PLUGINS)
def test_each_builtin_plugin_registers_something(name):
    module = importlib.import_module(name)
    hooks = [h for h in ("register_solvers", "register_examples", "register_generators")
             if hasattr(module, h)]
    assert hooks, f"{name} implements no hook"
    assert registry.plugin_manager().is_registered(module)
    for hook in hooks:
        assert getattr(module, hook)(), f"{name}.{hook} registers nothing"


#: Families that are named models on the core alone: no paper solver of their own (the
#: generic solvers beat it, docs/lass.md) and the reference built from their terms.
ON_THE_CORE = ("lass",)


def test_every_family_has_a_problem_a_reference_fast_solvers_and_examples():
    from ssl_opt.modeling import Model

    solvers = registry.solvers()
    examples = {e.family for e in registry.examples()}
    for family in FAMILIES:
        assert family in examples
        importlib.import_module(PROBLEM_MODULES[family])
        if family in ON_THE_CORE:
            problems = [e.build() for e in registry.examples() if e.family == family]
            assert all(isinstance(p, Model) for p in problems)
            fast = {type(s).__module__ for s in solvers.values()
                    if s.backend == "fast" and all(s.supports(p) for p in problems)}
            assert fast and all(m.startswith("ssl_opt.plugins.model.") for m in fast), fast
            assert not (ROOT / "plugins" / family).exists()
            assert not (ROOT / "reference" / f"{family}.py").exists()
            continue
        if (ROOT / "reference" / f"{family}.py").exists():
            importlib.import_module(f"ssl_opt.reference.{family}")
        else:  # a family of named models has the model's reference, from the terms
            problems = [e.build() for e in registry.examples() if e.family == family]
            assert problems and all(isinstance(p, Model) for p in problems), family
            assert "cvxpy" in {s.name for s in solvers.values()
                               if all(s.supports(p) for p in problems)}
        fast = [s for s in solvers.values()
                if s.backend == "fast" and type(s).__module__.startswith(
                    f"ssl_opt.plugins.{family}.")]
        assert fast, f"no fast solver in ssl_opt.plugins.{family}"


def test_a_source_checkout_imports_plugins_and_reference_from_the_checkout():
    if not (ROOT / "plugins" / "__init__.py").is_file():
        pytest.skip("not run from a source checkout")
    code = ("import ssl_opt, ssl_opt.plugins.manifold.newton as m, ssl_opt.reference as r; "
            "print(m.__file__); print(r.__file__); print(len(ssl_opt.list_solvers()))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout.split()
    assert Path(out[0]) == ROOT / "plugins" / "manifold" / "newton.py"
    assert Path(out[1]) == ROOT / "reference" / "__init__.py"
    assert int(out[2]) == len(registry.solvers())


def _family_map_rows(path: Path) -> dict[str, str]:
    """The rows of the family map table in ``path``, by family (first column)."""
    rows = {}
    for line in path.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and cells[0] in FAMILIES:
            rows[cells[0]] = line
    return rows


@pytest.mark.parametrize("doc", ["README.md", "docs/architecture.md"])
def test_the_family_map_names_every_solver_and_residual(doc):
    import re

    rows = _family_map_rows(ROOT / doc)
    assert set(rows) == set(FAMILIES), f"{doc}: the map has rows {sorted(rows)}"
    examples = {}
    for example in registry.examples():
        examples.setdefault(example.family, []).append(example.build())
    for family, row in rows.items():
        named = set(re.findall(r"`([^`]+)`", row))
        problems = examples[family]
        for name, solver in registry.solvers().items():
            if any(solver.supports(p) for p in problems):
                assert name in named, f"{doc}: {family} row does not name solver {name!r}"
        for problem in problems:
            assert type(problem).__name__ in named
            for residual in type(problem).residual_tolerances:
                assert residual in named, f"{doc}: {family} row lacks residual {residual!r}"
        docs_cell = [c.strip() for c in row.strip().strip("|").split("|")][5]
        pages = re.findall(r"([\w]+\.md)", docs_cell)
        assert pages and all((ROOT / "docs" / page).is_file() for page in pages), docs_cell
        tests = TEST_DIRS[family]
        assert f"tests/{tests}/" in row and (ROOT / "tests" / tests).is_dir()


def test_pyproject_installs_every_package_of_the_source_tree():
    """An installed copy must hold every sub-package (a forgotten one imports from a checkout
    but not from site-packages)."""
    pyproject = ROOT / "pyproject.toml"
    if not pyproject.exists():
        pytest.skip("pyproject.toml not found beside tests/")
    tomllib = pytest.importorskip("tomllib")
    listed = set(tomllib.loads(pyproject.read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "ssl_opt").rglob(
        "__init__.py")}
    found |= {"ssl_opt." + ".".join(p.parent.relative_to(ROOT).parts)
              for top in ("plugins", "reference") for p in (ROOT / top).rglob("__init__.py")}
    assert found - listed == set(), "add these to [tool.setuptools] packages"


@pytest.mark.parametrize("script", sorted(p.name for p in (ROOT / "benchmarks").glob("*.py")
                                          if p.name != "_source_tree.py"))
def test_every_benchmark_imports_the_source_tree_before_ssl_opt(script):
    """Run from the checkout, a benchmark measures the checkout's code, not an older installed
    copy: ``import _source_tree`` comes before the first import of ``ssl_opt``."""
    tree = ast.parse((ROOT / "benchmarks" / script).read_text(encoding="utf-8"))
    order = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            order += [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            order.append(node.module.split(".")[0])
    assert "_source_tree" in order, f"{script} does not import _source_tree"
    if "ssl_opt" in order:
        assert order.index("_source_tree") < order.index("ssl_opt")


def test_the_source_tree_module_puts_the_checkout_first(tmp_path):
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import _source_tree, ssl_opt; "
            "print(ssl_opt.__file__)")
    out = subprocess.run([sys.executable, "-c", code, str(ROOT / "benchmarks")], cwd=tmp_path,
                         capture_output=True, text=True, check=True).stdout.strip()
    assert Path(out).resolve() == (ROOT / "ssl_opt" / "__init__.py").resolve()
