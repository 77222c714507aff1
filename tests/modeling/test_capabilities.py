"""One capability table: what a term or a loss offers is read from the methods it implements
and the flags it sets (``TERM_METHODS``, ``TERM_FLAGS``, the losses' ``METHOD_CAPABILITIES``),
and the generic solvers decide from that set alone."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from scipy.optimize import minimize_scalar

import ssl_opt
from ssl_opt import registry
from ssl_opt.components import Hinge, HuberHinge, MarginLoss, Square, SquaredHinge
from ssl_opt.components.losses import Logistic
from ssl_opt.modeling import (
    L1,
    GraphTV,
    GroupNorms,
    MarginLossTerm,
    Model,
    QuadraticForm,
    Ridge,
    SquaredError,
    Variable,
)


@pytest.mark.parametrize("loss", [SquaredHinge(), Square(), Hinge(), HuberHinge(0.3)],
                         ids=repr)
@pytest.mark.parametrize("s", [0.05, 0.7, 3.0])
def test_loss_prox_is_the_argmin_computed_numerically(loss, s):
    u = np.linspace(-3.0, 3.0, 41)
    want = [minimize_scalar(lambda m, a=a: s * float(loss.value(np.array(m))) + 0.5 * (m - a) ** 2,
                            bounds=(a - 10, a + 10), method="bounded",
                            options={"xatol": 1e-12}).x for a in u]
    assert "prox" in loss.capabilities
    np.testing.assert_allclose(loss.prox(u, s), want, atol=1e-7)


def test_a_loss_without_prox_leaves_the_term_without_one():
    term = MarginLossTerm(Variable("f", (4,)), np.ones(4), Logistic())
    assert "prox" not in Logistic().capabilities and "prox" not in term.capabilities
    with pytest.raises(NotImplementedError):
        term.prox(np.zeros(4), 1.0)


class _ScaledHinge(MarginLoss):
    """``2 max(0, 1 − m)``, a user's loss that implements its prox."""

    name = "scaled_hinge"
    program_class = "QP"

    def value(self, m):
        return 2.0 * np.maximum(0.0, 1.0 - m)

    def cvxpy(self, m):
        return 2.0 * cp.pos(1 - m)

    def subgradient_interval(self, m, kink_tol: float = 0.0):
        m = np.asarray(m, dtype=float)
        return np.where(m <= 1.0 + kink_tol, -2.0, 0.0), np.where(m < 1.0 - kink_tol, -2.0, 0.0)

    def prox(self, u, s):
        return Hinge().prox(u, 2.0 * s)


def test_a_user_loss_with_prox_reaches_the_splitting_solvers():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 4))
    y = np.where(X[:, 0] + 0.3 * rng.standard_normal(30) > 0, 1.0, -1.0)
    w = Variable("w", (4,))
    model = Model([MarginLossTerm(X @ w, y, _ScaledHinge()), Ridge(w, 0.5)], prediction=X @ w)
    assert "prox" in model.terms[0].capabilities
    assert not registry.get_solver("pdhg").missing(model)
    solution = ssl_opt.solve(model, solver="pdhg")
    certificate = ssl_opt.certify(model, solution)  # against the CVXPY reference
    assert certificate.passed, certificate


def test_flags_and_norm_structure_are_capabilities():
    x = Variable("x", (6,))
    F = Variable("F", (5, 2))
    W = np.ones((5, 5)) - np.eye(5)
    assert "constant_hessian" in QuadraticForm(x, np.eye(6)).capabilities
    assert "constant_hessian" in SquaredError(x, np.zeros(6)).capabilities
    assert "constant_hessian" not in MarginLossTerm(x, np.ones(6)).capabilities
    assert {"norm_structure", "elementwise_prox"} <= L1(x).capabilities
    assert "norm_structure" in GroupNorms(F, 1.0).capabilities
    assert "norm_structure" in GraphTV(F, W, 1.0, norm="l2").capabilities
    assert "norm_structure" not in Ridge(x).capabilities
