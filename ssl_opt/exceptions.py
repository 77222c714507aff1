"""Exceptions raised by ssl_opt."""


class InvalidInputError(ValueError):
    """A public argument is malformed; the message names the argument and the fix."""


class UnsupportedProblemError(ValueError):
    """A solver cannot handle a problem; the message names what is missing."""


class SolverNotFoundError(LookupError):
    """No registered solver has the requested name."""


class InsufficientMemoryError(UnsupportedProblemError):
    """No applicable solver is predicted to fit in the memory available."""
