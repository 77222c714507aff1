"""Early stopping rules for PCG on LapSVM [000 §4.1, Algorithms 2–3].

Every θ = round(√n / 2) iterations (as the authors' code rounds it):

* stability (Alg. 2): the percentage of unlabeled points whose predicted sign changed since the
  previous check, τ = 100·#{j : d_j ≠ d_old,j} / u  (d = sign f on U), is below η = 1.5 %.
  This is what the authors' code computes. Algorithm 2 as printed writes
  τ = 100·‖d − d_old‖₁ / u, which counts each flip twice (|±1 − ∓1| = 2) and so stops at
  half the changes; ``stability_count="paper"`` selects it;
* validation (Alg. 3): the validation error did not improve by at least one example
  (η = 100/|V| %) since the previous check;
* mixed: both of the above hold at the same check (stable on U *and* no gain on V).

Only f (stability) and the products ``K_val @ α`` (validation) are read: ``K_val`` may be a
dense array or a products-only ``LinearOperator`` (|V| × n), so no rule forms a kernel matrix.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.sparse.linalg import LinearOperator

from ssl_opt._validation import as_float_array, as_float_matrix
from ssl_opt.exceptions import InvalidInputError

#: ``None`` (no early stopping) or a rule; PCG's ``early_stopping`` option checks the value.
RULES = (None, "stability", "validation", "mixed")
#: How the stability rule counts sign changes: the authors' code ("changed") or Algorithm 2
#: as printed ("paper", each flip counted twice).
STABILITY_COUNTS = ("changed", "paper")


def check_interval(n: int) -> int:
    """θ = round(√n / 2), at least 1, rounding halves up as Matlab's ``round`` does."""
    return max(1, math.floor(math.sqrt(n) / 2 + 0.5))


class EarlyStopping:
    def __init__(self, rule, problem, validation=None, check_every=None, eta=1.5,
                 stability_count="changed"):
        self.rule = rule
        self.l = problem.l
        self.u = problem.n - problem.l
        self.every = int(check_every or check_interval(problem.n))
        self.count_changed = stability_count == "changed"
        self.eta = float(eta)
        self.d_old = np.zeros(self.u)
        self.err_old = 100.0
        self.K_val = self.y_val = None
        if rule in ("validation", "mixed"):
            self.K_val, self.y_val = _check_validation(validation, problem.n)
            self.eta_val = 100.0 / self.y_val.size
        if rule in ("stability", "mixed") and self.u == 0:
            raise InvalidInputError("early_stopping='stability' needs unlabeled points (u > 0).")
        self.last_value: float | None = None

    @property
    def active(self) -> bool:
        return self.rule is not None

    def __call__(self, iteration: int, f: np.ndarray, alpha: np.ndarray, b: float) -> bool:
        if self.rule is None or iteration % self.every:
            return False
        stable = improving = True
        if self.rule in ("stability", "mixed"):
            d = np.sign(f[self.l :])
            if self.count_changed:  # the authors' code
                tau = 100.0 * np.count_nonzero(d != self.d_old) / self.u
            else:  # Algorithm 2 as printed
                tau = 100.0 * np.abs(d - self.d_old).sum() / self.u
            self.d_old = d
            stable = tau < self.eta
            self.last_value = tau
        if self.rule in ("validation", "mixed"):
            err = 100.0 * np.mean(np.sign(self.K_val @ alpha + b) != self.y_val)
            improving = not err > self.err_old - self.eta_val
            self.err_old = err
            self.last_value = err
        if self.rule == "stability":
            return stable
        if self.rule == "validation":
            return not improving
        return stable and not improving


def _check_validation(validation, n):
    if validation is None:
        raise InvalidInputError(
            "early_stopping='validation'/'mixed' needs validation=(K_val, y_val): K_val the "
            "(|V|, n) kernel between validation and training points (an array or a "
            "products-only LinearOperator), y_val their ±1 labels."
        )
    try:
        K_val, y_val = validation
    except (TypeError, ValueError) as exc:
        raise InvalidInputError("validation must be a pair (K_val, y_val).") from exc
    operator = isinstance(K_val, LinearOperator)
    if not operator:
        K_val = as_float_matrix(K_val, "validation K_val", allow_sparse=False)
    y_val = as_float_array(y_val, "validation y_val")
    if len(K_val.shape) != 2 or K_val.shape[1] != n or y_val.shape != (K_val.shape[0],):
        raise InvalidInputError(
            f"validation=(K_val, y_val) needs K_val of shape (|V|, {n}) and y_val of shape "
            f"(|V|,), got {K_val.shape} and {y_val.shape}."
        )
    finite = operator or bool(np.all(np.isfinite(K_val)))  # an operator: products only
    if not (finite and np.all(np.isin(y_val, (-1.0, 1.0)))):
        raise InvalidInputError("validation K_val must be finite and y_val must hold ±1 labels.")
    return K_val, y_val
