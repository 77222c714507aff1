"""Problem declarations (public API)."""

from .base import Problem, Structure
from .lass import LASS
from .linear_s3vm import DAS3VM, TSVM, LinearSVM
from .manifold import LapRLS, LapSVM
from .npkl import NPKL
from .npkl_boundary import BoundaryReduction

__all__ = [
    "BoundaryReduction", "DAS3VM", "LASS", "NPKL", "LapRLS", "LapSVM", "LinearSVM", "Problem",
    "Structure", "TSVM",
]
