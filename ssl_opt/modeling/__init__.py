"""The modelling layer: a problem as a sum of terms over declared variables, plus
constraints (docs/design.md §6, docs/modeling.md)."""

from ssl_opt.modeling.expressions import Affine, Variable, entries, matmul
from ssl_opt.modeling.lowering import Lowering, register_lowering
from ssl_opt.modeling.model import Model
from ssl_opt.modeling.term import Constraint, Term, check_term
from ssl_opt.modeling.terms import *  # noqa: F403 (the built-in terms and constraints)
from ssl_opt.modeling.terms import __all__ as _TERM_NAMES
from ssl_opt.modeling.transductive import TransductiveModel

__all__ = [*_TERM_NAMES, "Affine", "Constraint", "Lowering", "Model", "Term",
           "TransductiveModel", "Variable", "check_term", "entries", "matmul",
           "register_lowering"]
