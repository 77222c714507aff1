"""Options shared by the linear-family solvers that call MFN (TSVM and DA)."""

from __future__ import annotations

from ssl_opt._validation import check_nonnegative, integer
from ssl_opt.solvers import Option

#: The MFN settings TSVM and DA pass to each of their MFN calls.
MFN_CALL_OPTIONS = {
    "tol": Option(1e-7, "MFN/CGLS relative tolerance", check_nonnegative),
    "forcing": Option(0.1, "MFN inexact-Newton forcing term (0: exact CGLS steps)",
                      check_nonnegative),
    "mfn_max_iter": Option(50, "Newton steps per MFN call", integer(0)),
}
