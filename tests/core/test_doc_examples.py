"""Every ```python block of README.md, docs/estimators.md, docs/selection.md, docs/scaling.md
and docs/parameters.md runs as written, from a directory that is not the checkout and without
the benchmark data folder (a fresh install's view)."""

from __future__ import annotations

import contextlib
import io
import re
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FILES = ("README.md", "docs/estimators.md", "docs/selection.md", "docs/scaling.md",
         "docs/parameters.md")


def _blocks():
    for name in FILES:
        path = ROOT / name
        if not path.exists():
            continue
        text = path.read_text()
        for match in re.finditer(r"```python\n(.*?)```", text, re.S):
            line = text[: match.start()].count("\n") + 1
            yield pytest.param(match.group(1), id=f"{name}:{line}")


@pytest.mark.parametrize("code", list(_blocks()))
def test_example_runs_anywhere(code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SSL_OPT_DATA", raising=False)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), warnings.catch_warnings():
        warnings.simplefilter("error")  # an example that warns is a broken example
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        warnings.filterwarnings("ignore", category=PendingDeprecationWarning)
        exec(compile(code, "example", "exec"), {"__name__": "__example__"})
    assert out.getvalue().strip(), "an example should show its result"
