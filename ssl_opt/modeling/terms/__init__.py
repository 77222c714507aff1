"""The built-in terms and constraints of the modelling layer (docs/design.md §6)."""

from ssl_opt.modeling.terms.constraints import (
    Balance,
    Box,
    FixedRows,
    LinearEquality,
    NonNegative,
    SimplexRows,
)
from ssl_opt.modeling.terms.entropy import Entropy
from ssl_opt.modeling.terms.graph import GraphTV
from ssl_opt.modeling.terms.margin import MarginLossTerm
from ssl_opt.modeling.terms.norms import (
    L1,
    ElasticNet,
    GroupL21,
    GroupNorms,
    HuberNorms,
    SumOfRowNorms,
)
from ssl_opt.modeling.terms.psd import PSD
from ssl_opt.modeling.terms.smooth import (
    GraphQuadratic,
    Linear,
    LinearScore,
    QuadraticForm,
    Ridge,
    RKHSNorm,
    SquaredError,
    TraceProduct,
)

#: The built-in terms (objective parts) and constraints.
TERMS = (MarginLossTerm, SquaredError, Linear, LinearScore, QuadraticForm, RKHSNorm,
         GraphQuadratic, Ridge, L1, ElasticNet, GroupNorms, HuberNorms, GraphTV, Entropy,
         TraceProduct)
CONSTRAINTS = (SimplexRows, NonNegative, Box, FixedRows, LinearEquality, Balance, PSD)

__all__ = [
    "CONSTRAINTS",
    "L1",
    "TERMS",
    "Balance",
    "Box",
    "ElasticNet",
    "Entropy",
    "FixedRows",
    "GraphQuadratic",
    "GraphTV",
    "GroupL21",
    "GroupNorms",
    "HuberNorms",
    "Linear",
    "LinearEquality",
    "LinearScore",
    "MarginLossTerm",
    "NonNegative",
    "PSD",
    "QuadraticForm",
    "RKHSNorm",
    "Ridge",
    "SimplexRows",
    "SquaredError",
    "SumOfRowNorms",
    "TraceProduct",
]
