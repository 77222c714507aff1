"""Non-parametric kernel learning from pairwise constraints [Hu, Wang & Chen].

``problem`` declares the problems, ``examples`` registers the small built-in instances and
the scalable generators (a plugin).
"""

from ssl_opt.problems.npkl.boundary import BoundaryReduction
from ssl_opt.problems.npkl.problem import NPKL

__all__ = ["NPKL", "BoundaryReduction"]
