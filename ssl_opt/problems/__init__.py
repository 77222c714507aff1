"""Problem declarations (public API)."""

from .base import Problem, Structure
from .lass import LASS
from .linear_s3vm import DAS3VM, TSVM, LinearSVM
from .manifold import LapRLS, LapSVM

__all__ = ["DAS3VM", "LASS", "LapRLS", "LapSVM", "LinearSVM", "Problem", "Structure", "TSVM"]
