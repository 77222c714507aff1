"""Reference backend (installed as ``ssl_opt.reference``): exact CVXPY programs."""

from ssl_opt.hookspecs import hookimpl

from . import ere, lass, linear_s3vm, manifold, npkl
from .cvxpy_solver import CvxpyReference, Formulation

PRIMAL_FORMULATIONS = [manifold.PRIMAL, linear_s3vm.PRIMAL, lass.PRIMAL, npkl.PRIMAL,
                       *ere.FORMULATIONS]
DUAL_FORMULATIONS = [manifold.DUAL]


@hookimpl
def register_solvers():
    return [
        CvxpyReference(
            "cvxpy",
            PRIMAL_FORMULATIONS,
            "Exact primal program in CVXPY, solved by Clarabel (or any CVXPY solver).",
        ),
        CvxpyReference(
            "cvxpy-dual",
            DUAL_FORMULATIONS,
            "Exact dual program in CVXPY (hinge LapSVM [000 §2.1]), with primal recovery.",
        ),
        linear_s3vm.ExhaustiveTSVM(),
        npkl.BoundarySDP(),
    ]


__all__ = ["CvxpyReference", "Formulation", "register_solvers"]
