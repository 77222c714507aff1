"""Kernel manifold regularization: LapSVM, LapRLS and other margin losses [Melacci & Belkin].

``problem`` declares the problems, ``examples`` registers the small built-in instances and
the scalable generators (a plugin).
"""

from ssl_opt.problems.manifold.problem import LapRLS, LapSVM

__all__ = ["LapRLS", "LapSVM"]
