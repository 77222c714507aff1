"""Problem declarations (public API)."""

from ssl_opt.problems.base import Problem, Structure
from ssl_opt.problems.ere.lrl import LRL
from ssl_opt.problems.ere.problem import ERE
from ssl_opt.problems.ere.sum_of_norms import SumOfNorms
from ssl_opt.problems.lass.problem import LASS
from ssl_opt.problems.linear.problem import DAS3VM, TSVM, LinearSVM
from ssl_opt.problems.manifold.problem import LapRLS, LapSVM
from ssl_opt.problems.npkl.boundary import BoundaryReduction
from ssl_opt.problems.npkl.problem import NPKL
from ssl_opt.problems.one_vs_rest import OneVsRest

__all__ = [
    "BoundaryReduction", "DAS3VM", "ERE", "LASS", "LRL", "NPKL", "LapRLS", "LapSVM", "LinearSVM",
    "OneVsRest", "Problem", "Structure", "SumOfNorms", "TSVM",
]
