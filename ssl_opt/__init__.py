"""ssl_opt: semi-supervised learning optimization with exact references and certificates.

    >>> import ssl_opt
    >>> sol = ssl_opt.solve(problem, backend="fast")
    >>> ssl_opt.certify(problem, sol).passed
"""

from pathlib import Path as _Path

# Installed, ``plugins/`` and ``reference/`` are ``ssl_opt.plugins`` and ``ssl_opt.reference``
# (pyproject's package-dir). Imported from a source checkout they sit beside this folder, so
# the checkout's root is searched for those two sub-packages as well.
_checkout = _Path(__file__).resolve().parent.parent
if (_checkout / "plugins" / "__init__.py").is_file() and not (
        _Path(__file__).parent / "plugins").exists():
    __path__.append(str(_checkout))

from ssl_opt.api import list_solvers, select, solve
from ssl_opt.certificate import Certificate, certify
from ssl_opt.exceptions import InvalidInputError, SolverNotFoundError, UnsupportedProblemError
from ssl_opt.registry import register_plugin
from ssl_opt.solution import History, Solution

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
