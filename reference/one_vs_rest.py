"""The CVXPY program of a :class:`~ssl_opt.problems.OneVsRest`: the classes' own primal
programs side by side, ``minimize Σ_k J_k`` over independent blocks (one program, so one
certificate compares with one optimum). The class program is the one the ``cvxpy`` reference
uses for the binary problem."""

from __future__ import annotations

from ssl_opt.optional import cvxpy as cp
from ssl_opt.problems.one_vs_rest import OneVsRest
from ssl_opt.reference.cvxpy_solver import Formulation, formulation_for
from ssl_opt.solvers import lacking_capabilities


def formulation(columns: list[Formulation]) -> Formulation:
    """The one-vs-rest formulation over the binary ``columns`` formulations."""
    table = {f.problem_type: f for f in columns}

    def of(problem):
        return formulation_for(table, type(problem.first))

    def build(problem: OneVsRest):
        form = of(problem)
        built = [form.build(p) for p in problem.columns]
        objective = sum(prog.objective.args[0] for prog, _ in built)
        constraints = [c for prog, _ in built for c in prog.constraints]
        return cp.Problem(cp.Minimize(objective), constraints), (form, built)

    def recover(problem: OneVsRest, state) -> dict:
        form, built = state
        return problem.stack([form.recover(p, handles)
                              for p, (_, handles) in zip(problem.columns, built, strict=True)])

    def missing(problem: OneVsRest) -> list[str]:
        form = of(problem)
        if form is None:
            return [f"a CVXPY program of its {type(problem.first).__name__} classes"]
        return (lacking_capabilities(problem.first, form.requires)
                + list(form.missing(problem.first)))

    def cost(problem: OneVsRest) -> float:
        """c times the class program's prediction (the blocks are independent)."""
        from ssl_opt import registry
        from ssl_opt.selection.select import predict

        return problem.c * predict(registry.get_solver("cvxpy"), problem.first).seconds

    return Formulation(OneVsRest, build, recover, missing, cost)
