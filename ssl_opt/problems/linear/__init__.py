"""Linear semi-supervised SVMs: L2-SVM, TSVM, DA S3VM [Sindhwani & Keerthi].

``problem`` declares the problems, ``examples`` registers the small built-in instances and
the scalable generators (a plugin).
"""

from ssl_opt.problems.linear.problem import DAS3VM, TSVM, LinearSVM

__all__ = ["DAS3VM", "LinearSVM", "TSVM"]
