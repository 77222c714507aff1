"""Elastic and robust embedding, LRL and general sums of norms [Liu et al., 004].

``problem`` declares the problems, ``examples`` registers the small built-in instances and
the scalable generators (a plugin).
"""

from ssl_opt.problems.ere.lrl import LRL
from ssl_opt.problems.ere.problem import ERE
from ssl_opt.problems.ere.sum_of_norms import SumOfNorms

__all__ = ["ERE", "LRL", "SumOfNorms"]
