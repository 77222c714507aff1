"""Objective components: small objects with a value, derivatives, and a CVXPY expression."""

from .margin_losses import (
    MARGIN_LOSSES,
    Hinge,
    HuberHinge,
    Logistic,
    MarginLoss,
    Square,
    SquaredHinge,
    get_margin_loss,
)

__all__ = [
    "MARGIN_LOSSES",
    "Hinge",
    "HuberHinge",
    "Logistic",
    "MarginLoss",
    "Square",
    "SquaredHinge",
    "get_margin_loss",
]
