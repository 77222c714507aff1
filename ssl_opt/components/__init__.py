"""Objective components: small objects with a value, derivatives, and a CVXPY expression."""

from ssl_opt.components.margin_losses import (
    MARGIN_LOSSES,
    Hinge,
    HuberHinge,
    Logistic,
    MarginLoss,
    Square,
    SquaredHinge,
    get_margin_loss,
)
from ssl_opt.components.simplex import project_rows_to_simplex

__all__ = [
    "MARGIN_LOSSES",
    "Hinge",
    "HuberHinge",
    "Logistic",
    "MarginLoss",
    "Square",
    "SquaredHinge",
    "get_margin_loss",
    "project_rows_to_simplex",
]
