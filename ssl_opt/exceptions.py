"""Exceptions raised by ssl_opt."""


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
