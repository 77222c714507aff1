"""One suite over every registered example × every registered solver that supports it (as
scikit-learn's ``check_estimator`` runs one suite over every estimator).

For each pair: the solution certifies (unless its solver honestly reports it stalled, as
``ssl-opt certify`` classifies rows); each perturbed variable makes the certificate fail,
judged by ``certify`` against the reference optimum and the problem's own residuals; the
problem honours the Problem contract (declared residuals, checked ``kkt`` options, dict or
Solution arguments, a gradient that matches central finite differences); every solver
documents its options and rejects unknown ones by name.
"""

from __future__ import annotations

import zlib
from functools import cache

import numpy as np
import pytest

import ssl_opt
from ssl_opt import registry
from ssl_opt.problems import DAS3VM, ERE, LASS, NPKL, TSVM
from ssl_opt.problems.base import Problem
from ssl_opt.solution import STALLED, Solution

#: Size of a perturbation relative to ``max(1, ‖v‖)``: far above every certificate tolerance.
PERTURBATION = 1e-2
#: A relative objective change this small along a feasible move means the move stayed in the
#: optimal set (round-off level: far below any change a perturbation of that size can make).
FLAT = 1e-12
#: Central differences: step, and agreement relative to ``max(1, |f|)`` (their error is
#: O(h²) on these piecewise-quadratic objectives, round-off O(ε|f|/h)).
FD_STEP = 1e-4
FD_RTOL = 1e-8


@cache
def examples() -> dict:
    return {e.name: e for e in registry.examples()}


@cache
def problem(example: str):
    """One problem per example for the whole module, so the certificate's reference optimum
    (cached per problem object) is computed once."""
    return examples()[example].build()


@cache
def solution(example: str, solver: str) -> Solution:
    return ssl_opt.solve(problem(example), solver=solver)


def _supports(solver, example: str) -> bool:
    """Whether the pair is tested; an error here (a broken build or ``supports``) keeps the
    pair, so that its tests fail with that error instead of aborting the collection."""
    try:
        return solver.supports(problem(example))
    except Exception:
        return True


def _variables_of(example: str) -> list[str]:
    try:
        return list(problem(example).variables)
    except Exception:
        return ["<build failed>"]  # the test fails on problem(example) with the error


def pairs() -> list:
    return [pytest.param(name, solver_name, id=f"{name}-{solver_name}")
            for name in examples() for solver_name, solver in registry.solvers().items()
            if _supports(solver, name)]


def variables() -> list:
    out = []
    for param in pairs():
        name, solver_name = param.values
        for var in _variables_of(name):
            out.append(pytest.param(name, solver_name, var, id=f"{name}-{solver_name}-{var}"))
    return out


def _smooth_examples() -> list[str]:
    out = []
    for name in examples():
        try:
            smooth = problem(name).structure.smooth
        except Exception:
            smooth = True  # tested, so that the error shows
        if smooth:
            out.append(name)
    return out


def rng_for(*keys: str) -> np.random.Generator:
    """A generator seeded from the test's identity, so each case is reproducible alone."""
    return np.random.default_rng(zlib.crc32("/".join(keys).encode()))


def random_direction(shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    d = rng.normal(size=shape)
    return d / np.linalg.norm(d)


# ---------------------------------------------------------------------------- perturbations


def perturb(prob, values: dict, var: str, rng: np.random.Generator) -> np.ndarray:
    """``values[var]`` moved by about ``PERTURBATION·max(1, ‖v‖)``, staying feasible where the
    variable is constrained, so that only optimality (not feasibility) can reject it."""
    v = np.asarray(values[var], dtype=np.float64)
    step = PERTURBATION * max(1.0, float(np.linalg.norm(v)))
    if isinstance(prob, TSVM) and var == "y_u":
        # Swap the labels of one positive and one negative row: still ±1 and balanced.
        i, j = rng.choice(np.flatnonzero(v > 0)), rng.choice(np.flatnonzero(v < 0))
        out = v.copy()
        out[[i, j]] = -out[[i, j]]
        return out
    if isinstance(prob, DAS3VM) and var == "p":
        # Toward the uniform p = r: stays in [0, 1] with mean r.
        return (1 - PERTURBATION) * v + PERTURBATION * prob.r
    if isinstance(prob, LASS) and var == "Z":
        # Toward a random row-stochastic matrix: rows stay on the simplex.
        R = rng.random(v.shape)
        return (1 - PERTURBATION) * v + PERTURBATION * R / R.sum(axis=1, keepdims=True)
    if isinstance(prob, NPKL) and var == "Z":
        # Plus a random positive semidefinite matrix: Z stays symmetric PSD.
        B = rng.normal(size=v.shape)
        S = B @ B.T
        return v + step * S / np.linalg.norm(S)
    if isinstance(prob, ERE) and var == "F":
        # Only the unlabeled rows: F_l = Y is fixed.
        d = np.zeros_like(v)
        d[prob.l:] = random_direction(v[prob.l:].shape, rng)
        return v + step * d
    return v + step * random_direction(v.shape, rng)


# ---------------------------------------------------------------------------- pairs


@pytest.mark.parametrize(("example", "solver"), pairs())
def test_solution_certifies(example, solver):
    """Mirrors ``ssl-opt certify``: a pass, or an honest 'stalled' status from the solver (any
    status short of optimal from a solver that declares itself inexact on the problem)."""
    prob, sol = problem(example), solution(example, solver)
    cert = ssl_opt.certify(prob, sol)
    if sol.status == STALLED or (sol.status != "optimal"
                                 and registry.get_solver(solver).inexact(prob)):
        # The solver says it is not optimal; the certificate may confirm it or not, and says so.
        assert any(repr(sol.status) in note for note in cert.notes), cert.notes
        return
    assert cert.passed, f"status {sol.status!r}; " + "; ".join(cert.reasons)


@pytest.mark.parametrize(("example", "solver", "var"), variables())
def test_perturbed_solution_fails(example, solver, var):
    prob, sol = problem(example), solution(example, solver)
    if not ssl_opt.certify(prob, sol).passed:
        pytest.skip(f"the solution itself does not certify (solver status {sol.status!r})")
    point = dict(sol.x)  # extras (multipliers, DA's T) stay: they are part of the solution
    point[var] = perturb(prob, point, var, rng_for(example, solver, var))
    cert = ssl_opt.certify(prob, point)  # against the reference optimum and the residuals
    before, after = prob.objective(sol), prob.objective(point)
    if prob.structure.convex and abs(after - before) <= FLAT * max(1.0, abs(before)):
        # The objective is flat along the move (e.g. LapSVM's bias when no labeled point is
        # on the hinge): the optimum is not unique and the moved point is optimal too.
        assert cert.passed, cert.report()
        return
    assert not cert.passed, f"perturbing {var!r} still certifies:\n{cert.report()}"
    # The residuals alone reject it too (as they must where no reference is within budget).
    alone = ssl_opt.certify(prob, point, reference=False)
    assert not alone.passed, f"perturbing {var!r} passes the residuals:\n{alone.report()}"


@pytest.mark.parametrize(("example", "solver"), pairs())
def test_problem_contract_at_solution(example, solver):
    prob, sol = problem(example), solution(example, solver)
    residuals = prob.kkt(sol)
    assert residuals, "kkt returned no residual"
    assert set(residuals) <= set(prob.residual_tolerances)
    with pytest.raises(ssl_opt.InvalidInputError, match="no_such_option"):
        prob.kkt(sol, no_such_option=1)
    as_dict = {k: sol.x[k] for k in prob.variables}
    assert prob.objective(as_dict) == pytest.approx(prob.objective(sol), rel=1e-14, abs=0)
    np.testing.assert_array_equal(prob.prediction(as_dict), prob.prediction(sol))
    if prob.structure.smooth and defines_gradient(prob):
        from_solution, from_dict = prob.gradient(sol), prob.gradient(as_dict)
        for k in prob.variables:
            np.testing.assert_array_equal(from_solution[k], from_dict[k])


# ---------------------------------------------------------------------------- problems


@pytest.mark.parametrize("example", list(examples()))
def test_problem_declarations(example):
    prob = problem(example)
    assert examples()[example].family == prob.structure.family
    assert set(prob.residual_tolerances.values()) <= {"stationarity", "feasibility"}
    for name, option in prob.kkt_options.items():
        assert isinstance(option.doc, str) and option.doc.strip(), f"kkt option {name!r}"


def defines_gradient(prob) -> bool:
    return type(prob).gradient is not Problem.gradient


@pytest.mark.parametrize("example", _smooth_examples())
def test_gradient_matches_finite_differences(example):
    prob = problem(example)
    if not defines_gradient(prob):
        pytest.skip(f"{type(prob).__name__} is declared smooth but defines no gradient")
    rng = rng_for(example, "gradient")
    x = {k: 0.5 * rng.normal(size=shape) for k, shape in prob.variables.items()}
    grad = prob.gradient(x)
    assert set(grad) == set(prob.variables)
    for k, shape in prob.variables.items():
        assert isinstance(grad[k], np.ndarray) and grad[k].shape == shape, k
    scale = max(1.0, abs(prob.objective(x)))
    for k, shape in prob.variables.items():
        # One variable at a time, so a wrong gradient of a small block (a bias) shows too.
        d = random_direction(shape, rng)
        f_plus = prob.objective({**x, k: x[k] + FD_STEP * d})
        f_minus = prob.objective({**x, k: x[k] - FD_STEP * d})
        finite_difference = (f_plus - f_minus) / (2 * FD_STEP)
        directional = float(np.sum(grad[k] * d))
        assert abs(finite_difference - directional) <= FD_RTOL * scale, (
            k, finite_difference, directional)


# ---------------------------------------------------------------------------- solvers


def first_supported_example(solver) -> str | None:
    return next((e for e in examples() if _supports(solver, e)), None)


@pytest.mark.parametrize("solver", sorted(registry.solvers()))
def test_solver_options_are_documented(solver):
    for name, option in registry.get_solver(solver).options.items():
        assert isinstance(option.doc, str) and option.doc.strip(), f"{solver}: option {name!r}"


@pytest.mark.parametrize("solver", sorted(registry.solvers()))
def test_solver_rejects_unknown_option(solver):
    example = first_supported_example(registry.get_solver(solver))
    assert example is not None, f"no registered example exercises solver {solver!r}"
    with pytest.raises(ssl_opt.InvalidInputError, match="no_such_option"):
        ssl_opt.solve(problem(example), solver=solver, no_such_option=1)
