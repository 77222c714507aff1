"""ssl_opt: semi-supervised learning optimization with exact references and certificates.

    >>> import ssl_opt
    >>> sol = ssl_opt.solve(problem, backend="fast")
    >>> ssl_opt.certify(problem, sol).passed
"""

from .api import list_solvers, select, solve
from .certificate import Certificate, certify
from .exceptions import InvalidInputError, SolverNotFoundError, UnsupportedProblemError
from .registry import register_plugin
from .solution import History, Solution

__version__ = "0.1.0"

__all__ = [
    "Certificate",
    "History",
    "InvalidInputError",
    "Solution",
    "SolverNotFoundError",
    "UnsupportedProblemError",
    "certify",
    "list_solvers",
    "register_plugin",
    "select",
    "solve",
]
