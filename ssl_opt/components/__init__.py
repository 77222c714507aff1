"""Objective components: small objects with a value, derivatives, and a CVXPY expression."""

from ssl_opt.components.losses import (
    LOSS_NAMES,
    MARGIN_LOSSES,
    Hinge,
    HuberHinge,
    Logistic,
    MarginLoss,
    Square,
    SquaredHinge,
    check_loss_derivatives,
    get_margin_loss,
    implemented_capabilities,
)
from ssl_opt.components.simplex import project_rows_to_simplex

__all__ = [
    "LOSS_NAMES",
    "MARGIN_LOSSES",
    "Hinge",
    "HuberHinge",
    "Logistic",
    "MarginLoss",
    "Square",
    "SquaredHinge",
    "check_loss_derivatives",
    "get_margin_loss",
    "implemented_capabilities",
    "project_rows_to_simplex",
]
