"""The README's example runs as written."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_example_runs():
    if not README.exists():
        pytest.skip("README.md not found beside tests/")
    text = README.read_text()
    block = re.search(r"<!-- example:start -->\s*```python\n(.*?)```", text, re.S).group(1)
    assert len(block.strip().splitlines()) <= 12
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README example", "exec"), {})
    printed = out.getvalue()
    assert "early_stopped" in printed and "PASSED" in printed


def test_readme_composable_models_example_runs_and_certifies():
    if not README.exists():
        pytest.skip("README.md not found beside tests/")
    text = README.read_text()
    block = re.search(r"## Composable models.*?```python\n(.*?)```", text, re.S).group(1)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README composable models", "exec"), {})
    solver, status, passed = out.getvalue().split()
    assert solver != "newton" and status == "optimal" and passed == "True"
