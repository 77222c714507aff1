"""Problem declarations (public API)."""

from .base import Problem, Structure
from .ere import ERE, LRL
from .lass import LASS
from .linear_s3vm import DAS3VM, TSVM, LinearSVM
from .manifold import LapRLS, LapSVM
from .npkl import NPKL
from .npkl_boundary import BoundaryReduction
from .sum_of_norms import SumOfNorms

__all__ = [
    "BoundaryReduction", "DAS3VM", "ERE", "LASS", "LRL", "NPKL", "LapRLS", "LapSVM", "LinearSVM",
    "Problem", "Structure", "SumOfNorms", "TSVM",
]
