"""Problem declarations (public API)."""

from .base import Problem, Structure
from .manifold import LapRLS, LapSVM

__all__ = ["LapRLS", "LapSVM", "Problem", "Structure"]
