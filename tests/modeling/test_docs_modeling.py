"""Every python block of docs/modeling.md runs, in order, in one namespace (the page is a
tutorial: each variant builds on the data of the first block)."""

from __future__ import annotations

import contextlib
import io
import re
import warnings
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "modeling.md"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


def test_the_modeling_page_has_a_block_per_variant():
    if not DOC.exists():
        pytest.skip("docs/modeling.md not found beside tests/")
    text = DOC.read_text()
    for heading in ("## 1.", "## 2.", "## 3.", "## 4.", "## 5.", "## 6.", "## 7.", "## 8."):
        assert heading in text
    assert len(_blocks()) >= 10


def test_every_python_block_of_the_modeling_page_runs_in_order():
    if not DOC.exists():
        pytest.skip("docs/modeling.md not found beside tests/")
    namespace: dict = {"__name__": "docs_modeling"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for number, block in enumerate(_blocks(), 1):
            exec(compile(block, f"docs/modeling.md block {number}", "exec"), namespace)
    printed = out.getvalue()
    # Every certificate the page prints passed: no "False" after a solver's status.
    assert "False" not in printed, printed
    assert printed.count("True") >= 12, printed
