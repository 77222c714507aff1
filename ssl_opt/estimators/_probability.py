"""Class probabilities from decision values: one temperature, fitted on the labeled points.

The classifiers' decision values are margins (LapSVM, the S3VMs), least-squares fits of ±1
targets (LapRLS, LRL) or embedding scores (ERE), none of them probabilities. ``predict_proba``
maps them through

    p(x) = softmax(A · s(x))                 (two classes: p₁(x) = σ(A f(x)))

with ``s(x)`` the decision values (``(−f/2, f/2)`` for two classes) and one scale ``A > 0``
per fit: temperature scaling [Guo et al. 2017]. ``A`` minimizes the cross-entropy on the
labeled training points against Platt's smoothed targets [Platt 1999]: a point of class k has
target ``(N_k + 1)/(N_k + 2)`` on k (``N_k`` labeled points of class k) and the rest spread
evenly over the other classes, so that a few labels give moderate probabilities, not 0 and 1
from decision values the fit itself pulled onto the margins. One scale keeps the order of the
classes at every point: ``argmax predict_proba = predict`` and, for two classes, the
probability is a strictly increasing function of ``decision_function``. In multi-label mode
each label is a separate ``σ(A (S_k − τ_k))`` with Platt's targets per label.

The cross-entropy is convex in ``A`` (the logits are linear in it); it is minimized by bounded
Brent search over ``log A`` (``scipy.optimize.minimize_scalar``).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import expit, log_expit, log_softmax

#: ``A · max|s|`` is searched in this range (a scale beyond it is 0/1 probabilities already).
SCALE_RANGE = (1e-4, 1e3)


def class_logits(decision: np.ndarray) -> np.ndarray:
    """(n, c) scores whose softmax order is the decision's: (n,) binary values become
    ``(−f/2, f/2)``."""
    decision = np.asarray(decision, dtype=np.float64)
    return np.column_stack([-decision / 2, decision / 2]) if decision.ndim == 1 else decision


def smoothed_targets(indicator: np.ndarray, multilabel: bool = False) -> np.ndarray:
    """Platt's targets from a 0/1 (n, c) indicator: ``(N_k + 1)/(N_k + 2)`` for a point's
    class (per label and per side in multi-label mode), the rest spread over the others."""
    Y = np.asarray(indicator, dtype=np.float64)
    positives = Y.sum(axis=0)
    if multilabel:
        negatives = Y.shape[0] - positives
        return np.where(Y > 0, (positives + 1) / (positives + 2), 1 / (negatives + 2))
    c = Y.shape[1]
    on = (positives + 1) / (positives + 2)
    t_true = Y @ on  # each row: its class's target
    return Y * t_true[:, None] + (1 - Y) * ((1 - t_true) / (c - 1))[:, None]


def log_probabilities(decision: np.ndarray, scale: float, multilabel: bool = False
                      ) -> np.ndarray:
    """``log p`` (module docstring): (n, c), or (n, 2) for binary decision values."""
    if multilabel:
        return log_expit(scale * np.asarray(decision, dtype=np.float64))
    return log_softmax(scale * class_logits(decision), axis=1)


def probabilities(decision: np.ndarray, scale: float, multilabel: bool = False) -> np.ndarray:
    if multilabel:
        return expit(scale * np.asarray(decision, dtype=np.float64))
    return np.exp(log_probabilities(decision, scale))


def fit_scale(decision: np.ndarray, indicator: np.ndarray, multilabel: bool = False) -> float:
    """The ``A`` of the module docstring from the labeled points' decision values and their
    0/1 class indicator (n_labeled, c); 1 over the largest |value| when they are all 0."""
    logits = (np.asarray(decision, dtype=np.float64) if multilabel
              else class_logits(decision))
    spread = float(np.max(np.abs(logits), initial=0.0))
    if not np.isfinite(spread) or spread == 0.0:
        return 1.0
    T = smoothed_targets(indicator, multilabel)

    def cross_entropy(log_a: float) -> float:
        a = np.exp(log_a) / spread
        if multilabel:
            z = a * logits
            return float(-np.sum(T * log_expit(z) + (1 - T) * log_expit(-z)))
        return float(-np.sum(T * log_softmax(a * logits, axis=1)))

    low, high = np.log(SCALE_RANGE)
    best = minimize_scalar(cross_entropy, bounds=(low, high), method="bounded",
                           options={"xatol": 1e-6})
    return float(np.exp(best.x) / spread)
