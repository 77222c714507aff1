"""LASS, the Laplacian assignment QP [Carreira-Perpiñán & Wang].

``problem`` declares the problems, ``examples`` registers the small built-in instances and
the scalable generators (a plugin).
"""

from ssl_opt.problems.lass.problem import LASS

__all__ = ["LASS"]
