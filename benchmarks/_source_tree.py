"""Benchmarks measure the source tree they sit in.

``python benchmarks/<script>.py`` puts only ``benchmarks/`` on ``sys.path``, so ``import
ssl_opt`` would find an installed copy first, possibly older than the tree. Every script
imports this module before ``ssl_opt``: it puts the repository root first on ``sys.path``
when the root holds the package.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

if (ROOT / "ssl_opt" / "__init__.py").exists() and sys.path[:1] != [str(ROOT)]:
    sys.path.insert(0, str(ROOT))
