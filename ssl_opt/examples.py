"""Small built-in instances, one or more per family, registered by plugins."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Example:
    name: str
    family: str
    description: str
    build: Callable[[], object]
