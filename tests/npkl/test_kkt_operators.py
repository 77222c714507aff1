"""NPKL's certificate above DENSE_EIG_MAX (forced here on small problems by lowering it): the
eigenvalues of G from Lanczos on sparse products (or on Δ̃x from the sparse blocks and the
factor of Δ_UU for the boundary problem), those of Z from the factor Φ (Z = ΦΦᵀ, checked against
Z) or from Lanczos on the shifted dense Z (the threshold is `ssl_opt.numerics.eigen`'s, which the
core's conic certificate and NPKL read). Every residual is compared with a dense numpy
computation written here from the docs' table (numpy eigvalsh), at BCD's solution and at wrong
points whose certificate must fail."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import ssl_opt
from ssl_opt.builders import knn_graph
from ssl_opt.datasets.clusters import double_spiral, pairwise_constraints
from ssl_opt.numerics import eigen
from ssl_opt.problems import NPKL


def _np_derivative(loss, t):
    return -2.0 * (1.0 - t) if loss == "square" else -2.0 * np.maximum(0.0, 1.0 - t)


def _np_value(loss, t):
    return (1.0 - t) ** 2 if loss == "square" else np.maximum(0.0, 1.0 - t) ** 2


def _np_kkt(Delta, pairs, labels, C, loss, Z, lam):
    """The residual table of docs/npkl.md, densely, y = −C ℓ'(t) recovered from Z."""
    Z = 0.5 * (Z + Z.T)
    t = labels * Z[pairs[:, 0], pairs[:, 1]]
    y = -C * _np_derivative(loss, t)
    G = np.array(Delta, dtype=float)
    w = -0.5 * y * labels
    np.add.at(G, (pairs[:, 0], pairs[:, 1]), w)
    np.add.at(G, (pairs[:, 1], pairs[:, 0]), w)
    g, z = np.linalg.eigvalsh(G), np.linalg.eigvalsh(Z)
    omega = float(np.sum(Delta * Z) + C * np.sum(_np_value(loss, t)))
    inner, scale = float(np.sum(G * Z)), max(1.0, abs(omega))
    return {"gradient_psd": max(0.0, -g[0]) / max(1.0, g[-1]),
            "kernel_psd": max(0.0, -z[0]) / max(1.0, z[-1]),
            "complementarity": abs(inner) / scale,
            "suboptimality_bound": (max(0.0, inner) + max(0.0, -g[0]) * omega / lam) / scale,
            "symmetry": 0.0}


def _close(got, expected):
    assert set(got) == set(expected)
    for key, value in expected.items():
        assert abs(got[key] - value) <= 1e-8 * value + 1e-11, (key, got[key], value)


@pytest.fixture(scope="module", params=["square", "squared_hinge"])
def solved(request):
    d = double_spiral(n=80, seed=6)
    pairs, labels = pairwise_constraints(d.y, 70, seed=6)
    p = NPKL(knn_graph(d.X, n_neighbors=5), pairs, labels, C=2.0, loss=request.param)
    sol = ssl_opt.solve(p, solver="bcd", tol=1e-9)
    assert sol.status == "optimal"
    return p, sol


def _expected(p, Z):
    return _np_kkt(p.Delta.toarray(), p.pairs, p.labels, p.C, p.loss.name, Z,
                   p.lambda_min_bound)


def _no_dense_lanczos(*args, **kwargs):
    raise AssertionError("the factor Φ should have given Z's eigenvalues")


@pytest.mark.parametrize("form", ["Z", "Z and Phi", "Phi"])
def test_operator_certificate_matches_numpy_at_the_solution(solved, form, monkeypatch):
    p, sol = solved
    Z, Phi = sol.x["Z"], sol.x["Phi"]
    x = {"Z": {"Z": Z}, "Z and Phi": {"Z": Z, "Phi": Phi}, "Phi": {"Phi": Phi}}[form]
    expected = _expected(p, Z)
    assert max(expected.values()) < 1e-6  # an optimum: the reference certifies it
    dense = p.kkt(x, multipliers="recover")  # n = 80: LAPACK
    monkeypatch.setattr(eigen, "DENSE_EIG_MAX", 5)
    if form != "Z":
        monkeypatch.setattr(eigen, "psd_extremes", _no_dense_lanczos)
    _close(dense, expected)
    _close(p.kkt(x, multipliers="recover"), expected)


@pytest.mark.parametrize("wrong", ["negative Z with the solution's Phi", "perturbed Phi",
                                   "perturbed Z"])
def test_operator_certificate_fails_at_wrong_points(solved, wrong, monkeypatch):
    p, sol = solved
    Z, Phi = sol.x["Z"], sol.x["Phi"]
    rng = np.random.default_rng(1)
    if wrong == "perturbed Phi":
        Phi = Phi + 0.05 * rng.standard_normal(Phi.shape)
        x, Z = {"Phi": Phi}, Phi @ Phi.T
    else:
        u = rng.standard_normal(p.n)
        u /= np.linalg.norm(u)
        E = rng.standard_normal((p.n, p.n))
        if wrong == "perturbed Z":  # a symmetric perturbation, PSD lost or not
            Z = Z + 1e-3 * (E + E.T)
            x = {"Z": Z}
        else:  # a negative direction: Φ no longer describes Z and must not be used
            Z = Z - 0.01 * np.linalg.eigvalsh(Z)[-1] * np.outer(u, u)
            x = {"Z": Z, "Phi": Phi}
    expected = _expected(p, Z)
    monkeypatch.setattr(eigen, "DENSE_EIG_MAX", 5)
    got = p.kkt(x, multipliers="recover")
    _close(got, expected)
    assert max(got.values()) > 1e-4
    if wrong == "negative Z with the solution's Phi":
        assert got["kernel_psd"] > 1e-3


def test_boundary_certificate_uses_the_factored_schur_complement(solved, monkeypatch):
    """The boundary problem (dense Δ̃) above DENSE_EIG_MAX: λ(G̃) by Lanczos on
    Δ̃x = Δ_LL x − Δ_LU Δ_UU⁻¹ Δ_UL x, against numpy on Δ̃ computed here."""
    p, sol = solved
    red = p.boundary_reduction()
    assert red.factored_schur
    L, U = red.constrained, red.unconstrained
    D = p.Delta.toarray()
    Dt = D[np.ix_(L, L)] - D[np.ix_(L, U)] @ np.linalg.solve(D[np.ix_(U, U)], D[np.ix_(U, L)])
    calls = []

    def counted(v):
        calls.append(1)
        return red.schur_times(v)

    monkeypatch.setattr(eigen, "DENSE_EIG_MAX", 5)
    object.__setattr__(red.reduced, "_delta_times", counted)  # a frozen problem: a spy
    V = sol.x["V"]
    try:
        for Z_BD in (V.T @ V, V.T @ V + 0.05 * np.diag(np.arange(L.size) % 3 - 1.0)):
            expected = _np_kkt(Dt, red.reduced.pairs, p.labels, p.C, p.loss.name, Z_BD,
                               p.lambda_min_bound)
            _close(red.reduced.kkt({"Z": Z_BD}, multipliers="recover"), expected)
        F = V.T + 0.05 * np.random.default_rng(2).standard_normal(V.T.shape)
        _close(red.reduced.kkt({"Phi": F}, multipliers="recover"),
               _np_kkt(Dt, red.reduced.pairs, p.labels, p.C, p.loss.name, F @ F.T,
                       p.lambda_min_bound))
    finally:
        object.__setattr__(red.reduced, "_delta_times", red.schur_times)
    assert calls and not sp.issparse(red.reduced.Delta)
    assert max(expected.values()) > 1e-4  # the second point is not an optimum
