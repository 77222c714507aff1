"""Options shared by the linear-family solvers, and checks whose message states the bound
as ``name > 1`` / ``name >= 1``."""

from __future__ import annotations

import numbers

from ssl_opt._validation import check_nonnegative, check_positive, integer
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.solvers import Option


def above_one(value, name: str) -> float:
    """A real number > 1 (a growth or cooling factor)."""
    value = check_positive(value, name)
    if value <= 1.0:
        raise InvalidInputError(f"{name} must be a real number with {name} > 1, got {value!r}.")
    return value


def at_least_one(value, name: str) -> int:
    """An integer >= 1 (a count)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise InvalidInputError(f"{name} must be an integer with {name} >= 1, got {value!r}.")
    return int(value)


#: The MFN settings TSVM and DA pass to each of their MFN calls.
MFN_CALL_OPTIONS = {
    "tol": Option(1e-7, "MFN/CGLS relative tolerance", check_nonnegative),
    "forcing": Option(0.1, "MFN inexact-Newton forcing term (0: exact CGLS steps)",
                      check_nonnegative),
    "mfn_max_iter": Option(50, "Newton steps per MFN call", integer(0)),
}
