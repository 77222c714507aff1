"""Exceptions raised by ssl_opt, and :func:`warn` for its warnings."""

import os
import sys
import warnings
from pathlib import Path


class InvalidInputError(ValueError):
    """A public argument is malformed; the message names the argument and the fix."""


class UnsupportedProblemError(ValueError):
    """A solver cannot handle a problem; the message names what is missing."""


class SolverNotFoundError(LookupError, ValueError):
    """No registered solver has the requested name (a bad ``solver=`` value, hence also a
    ``ValueError``)."""


class InsufficientMemoryError(UnsupportedProblemError, MemoryError):
    """No applicable solver (or the operator asked for) is predicted to fit in the memory
    available; also a ``MemoryError``."""


class MissingDependencyError(ImportError):
    """An optional package is not installed; the message names the extra that installs it
    (:mod:`ssl_opt.optional`)."""


class BadScalingWarning(UserWarning):
    """A problem's data are so badly scaled that solvers and certificates cannot be trusted to
    agree (an objective of magnitude far from 1, a reference that reports an inaccurate solve);
    rescale the data (e.g. divide the kernel or the data matrix by its largest entry)."""


def warn(message: str, category: type[Warning]) -> None:
    """``warnings.warn`` pointed at the first caller outside this package (the user's ``fit``
    call, or the library that called it), as Python 3.12's ``skip_file_prefixes`` does: the
    location stays right however many of the package's frames lie in between."""
    frame, level = sys._getframe(1), 2
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIRS):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


#: The source folders of ssl_opt and of the folders it maps in (``plugins``, ``reference``),
#: as given and with links resolved.
_PACKAGE_DIRS = tuple({str(folder) + os.sep for p in (
    Path(__file__).parent, Path(__file__).parent.parent / "plugins",
    Path(__file__).parent.parent / "reference") for folder in (p, p.resolve())})
