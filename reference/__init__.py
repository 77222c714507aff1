"""Reference backend (installed as ``ssl_opt.reference``): exact CVXPY programs."""

from ssl_opt.hookspecs import hookimpl
from ssl_opt.reference import linear, manifold, model, npkl, one_vs_rest
from ssl_opt.reference.cvxpy_solver import CvxpyReference, Formulation

PRIMAL_FORMULATIONS = [manifold.PRIMAL, linear.PRIMAL, npkl.PRIMAL, model.FORMULATION]
PRIMAL_FORMULATIONS.append(one_vs_rest.formulation(PRIMAL_FORMULATIONS))
DUAL_FORMULATIONS = [manifold.DUAL]

#: Interior-point growth in each family's cost size (see ``ssl_opt.selection.generators``).
PRIMAL_COMPLEXITY = {
    "manifold": (3.0, "dense n×n kernel in the KKT system: O(n³) per iteration"),
    "linear": (1.5, "sparse KKT factor of the text matrix; fill grows faster than nnz"),
    "lass": (1.5, "sparse KKT factor, nested-dissection fill on a 2-D kNN graph: O(N^1.5)"),
    "npkl": (3.0, "an n×n PSD cone: O(n³) per iteration"),
    "ere": (1.5, "sparse SOCP KKT factor on a kNN graph: fill faster than nnz"),
    "model": (1.5, "the assembled program's KKT factor: sparse maps fill like nnz^1.5"),
}
#: The full NPKL SDP is over all n points, not the l constrained ones.
PRIMAL_SIZE_KEYS = {"npkl": ("n",)}
DUAL_COMPLEXITY = {"manifold": (3.0, "Q needs a dense n×n solve: O(n³)")}


@hookimpl
def register_solvers():
    return [
        CvxpyReference(
            "cvxpy",
            PRIMAL_FORMULATIONS,
            "Exact primal program in CVXPY, solved by Clarabel (or any CVXPY solver).",
            PRIMAL_COMPLEXITY,
            PRIMAL_SIZE_KEYS,
            preference=0,  # the primal program, where a dual or a boundary SDP ties with it
        ),
        CvxpyReference(
            "cvxpy-dual",
            DUAL_FORMULATIONS,
            "Exact dual program in CVXPY (hinge LapSVM [000 §2.1]), with primal recovery.",
            DUAL_COMPLEXITY,
        ),
        linear.ExhaustiveTSVM(),
        npkl.BoundarySDP(),
    ]


__all__ = ["CvxpyReference", "Formulation", "register_solvers"]
