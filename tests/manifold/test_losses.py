"""The one loss registry (ssl_opt.components): each built-in loss against finite differences,
numerical suprema and closed forms; names and aliases; capabilities declared as data and read
by solvers; user losses that lack or add a capability."""

from __future__ import annotations

import re
from pathlib import Path

import cvxpy as cp
import numpy as np
import pytest
from scipy.optimize import minimize_scalar

import ssl_opt
from ssl_opt import registry
from ssl_opt.components import (
    LOSS_NAMES,
    MARGIN_LOSSES,
    Hinge,
    HuberHinge,
    Logistic,
    MarginLoss,
    Square,
    SquaredHinge,
    get_margin_loss,
    implemented_capabilities,
)
from ssl_opt.datasets.synthetic import gaussian_blobs
from ssl_opt.problems import DAS3VM, NPKL, TSVM, LapRLS, LapSVM, LinearSVM

BUILTIN = [SquaredHinge(), Square(), Hinge(), HuberHinge(), HuberHinge(delta=0.2), Logistic()]
#: Capabilities that are properties of φ, not methods (declared, not inferable).
TRAITS = {"piecewise_quadratic", "quadratic", "piecewise_linear"}


def _kinks(loss) -> list[float]:
    return [1.0] + ([1.0 - loss.delta] if isinstance(loss, HuberHinge) else [])


def _away_from_kinks(loss, m: np.ndarray, gap: float = 1e-3) -> np.ndarray:
    keep = np.all([np.abs(m - k) > gap for k in _kinks(loss)], axis=0)
    return m[keep]


# --------------------------------------------------------------------- values and derivatives


@pytest.mark.parametrize("loss", [x for x in BUILTIN if x.smooth], ids=repr)
def test_derivatives_match_central_differences(loss):
    m = _away_from_kinks(loss, np.random.default_rng(0).uniform(-3.0, 3.0, 400))
    h = 1e-6
    fd = (loss.value(m + h) - loss.value(m - h)) / (2 * h)
    np.testing.assert_allclose(loss.derivative(m), fd, atol=1e-7)
    fd2 = (loss.derivative(m + h) - loss.derivative(m - h)) / (2 * h)
    np.testing.assert_allclose(loss.second_derivative(m), fd2, atol=1e-6)


@pytest.mark.parametrize("loss", BUILTIN, ids=repr)
def test_cvxpy_expression_equals_value(loss):
    m = np.random.default_rng(1).uniform(-3.0, 3.0, 50)
    np.testing.assert_allclose(loss.cvxpy(cp.Constant(m)).value, loss.value(m), atol=1e-12)


def test_closed_forms():
    m = np.array([-2.0, 0.0, 0.5, 1.0, 3.0])
    np.testing.assert_array_equal(SquaredHinge().value(m), [9.0, 1.0, 0.25, 0.0, 0.0])
    np.testing.assert_array_equal(Square().value(m), [9.0, 1.0, 0.25, 0.0, 4.0])
    np.testing.assert_array_equal(Hinge().value(m), [3.0, 1.0, 0.5, 0.0, 0.0])
    # Huber with δ = 1: linear below 0, quadratic on (0, 1), zero above 1.
    np.testing.assert_allclose(HuberHinge(1.0).value(m), [2.5, 0.5, 0.125, 0.0, 0.0])
    np.testing.assert_allclose(Logistic().value(m), np.log1p(np.exp(-m)))
    assert Square().second_derivative(m).tolist() == [2.0] * 5


def test_hinge_subgradients_and_residual():
    hinge = Hinge()
    m = np.array([0.0, 1.0, 2.0])
    lo, hi = hinge.subgradient_interval(m)
    assert lo.tolist() == [-1.0, -1.0, 0.0] and hi.tolist() == [-1.0, 0.0, 0.0]
    lo, hi = hinge.subgradient_interval(np.array([1.0 - 1e-8, 1.0 + 1e-8]), kink_tol=1e-6)
    assert lo.tolist() == [-1.0, -1.0] and hi.tolist() == [0.0, 0.0]
    # (−d)(m − 1)₊ + (1 + d)(1 − m)₊ plus the distance of d outside [−1, 0], by hand:
    cases = [(0.0, -1.0, 0.0), (0.0, -0.5, 0.5), (2.0, 0.0, 0.0), (2.0, -0.25, 0.25),
             (1.0, -0.3, 0.0), (0.5, 0.5, 0.75 + 0.5), (3.0, -1.5, 3.0 + 0.5)]
    for mi, d, expected in cases:
        assert hinge.subgradient_residual(np.array([mi]), np.array([d]))[0] == pytest.approx(
            expected, abs=1e-15)


@pytest.mark.parametrize("loss", [x for x in BUILTIN if x.smooth], ids=repr)
def test_smooth_subgradient_is_the_derivative(loss):
    m = np.linspace(-2.0, 2.0, 9)
    lo, hi = loss.subgradient_interval(m, kink_tol=0.1)
    np.testing.assert_array_equal(lo, loss.derivative(m))
    np.testing.assert_array_equal(hi, loss.derivative(m))
    d = loss.derivative(m) + np.linspace(-1.0, 1.0, 9)
    np.testing.assert_allclose(loss.subgradient_residual(m, d), np.abs(np.linspace(-1, 1, 9)),
                               atol=1e-15)


# ------------------------------------------------------------------------------- conjugates

CONJUGATE = [x for x in BUILTIN if "conjugate" in x.capabilities]


def _conjugate_domain(loss) -> tuple[float, float]:
    """The interval of g = −s where φ*(−g) is finite: from ``conjugate_form`` for the quadratic
    conjugates, [0, 1] for the logistic (φ' ranges over (−1, 0))."""
    if isinstance(loss, Logistic):
        return 0.0, 1.0
    return loss.conjugate_form[1:]


def _maximize_concave(f, lo: float = -20.0, hi: float = 20.0) -> float:
    """max of a concave f on [lo, hi] by ternary search (exact for concave f, kinks included)."""
    for _ in range(200):
        a, b = lo + (hi - lo) / 3, hi - (hi - lo) / 3
        if f(a) < f(b):
            lo = a
        else:
            hi = b
    return f(0.5 * (lo + hi))


def _numerical_conjugate(loss, s: float) -> float:
    """sup_m (s·m − φ(m)) (the maximizer is within [−40, 40] for the s tested; the
    logistic's at g = −s ∈ {0, 1} is at infinity, approached to e^{−40})."""
    return _maximize_concave(lambda m: s * m - float(loss.value(np.array([m]))[0]), -40.0, 40.0)


@pytest.mark.parametrize("loss", CONJUGATE, ids=repr)
def test_conjugate_is_the_supremum(loss):
    lo, hi = _conjugate_domain(loss)
    g = np.linspace(max(lo, -3.0), min(hi, 3.0), 13)  # g = −s inside the domain
    for gi in g:
        assert loss.conjugate(np.array([-gi]))[0] == pytest.approx(
            _numerical_conjugate(loss, -gi), abs=1e-9)
    # Outside [lo, hi] the supremum is unbounded: s·m − φ(m) grows without limit.
    for gi in (lo - 0.5, hi + 0.5):
        if np.isfinite(gi):
            assert np.isinf(loss.conjugate(np.array([-gi]))[0])
            m = np.array([-1e6, 1e6])
            assert np.max(-gi * m - loss.value(m)) > 1e5


@pytest.mark.parametrize("loss", CONJUGATE, ids=repr)
def test_dual_cvxpy_is_the_scaled_conjugate(loss):
    """Σ −C φ*(−y/C) equals Σ min_t (C φ(t) + y t), and its constraints are the domain."""
    C = 1.7
    lo, hi = _conjugate_domain(loss)
    rng = np.random.default_rng(2)
    inside = C * rng.uniform(max(lo, -2.0), min(hi, 2.0), 6)
    y = cp.Variable(inside.size)
    value, constraints = loss.dual_cvxpy(y, C)
    y.value = inside
    direct = sum(
        -_maximize_concave(lambda t, yi=yi: -C * float(loss.value(np.array([t]))[0]) - yi * t)
        for yi in inside)
    assert value.value == pytest.approx(direct, abs=1e-8)
    assert value.value == pytest.approx(-C * loss.conjugate(-inside / C).sum(), abs=1e-12)
    assert all(c.value() for c in constraints)
    for outside in (C * lo - 0.1, C * hi + 0.1):
        if np.isfinite(outside):
            y.value = np.full(inside.size, outside)
            assert not all(c.value() for c in constraints)
    assert value.is_concave()


def test_conjugate_forms_by_hand():
    """φ*(−g) = −g + κg²/2 on [lo, hi]: κ from the curvature of h(u) = φ(1 − u), the box
    from the range of −φ' (module docstring table)."""
    assert SquaredHinge().conjugate_form == (0.5, 0.0, np.inf)
    assert Square().conjugate_form == (0.5, -np.inf, np.inf)
    assert Hinge().conjugate_form == (0.0, 0.0, 1.0)
    assert HuberHinge(0.3).conjugate_form == (0.3, 0.0, 1.0)
    # The logistic's conjugate is the negative binary entropy: not quadratic, no form.
    assert Logistic().conjugate_form is None
    assert "conjugate" in Logistic().capabilities
    assert "quadratic_conjugate" not in Logistic().capabilities


# ----------------------------------------------------------------- registry and capabilities


def test_registry_resolves_names_and_aliases():
    assert set(MARGIN_LOSSES) == {"squared_hinge", "square", "hinge", "huber", "logistic"}
    assert set(LOSS_NAMES) == set(MARGIN_LOSSES) | {"squared", "huber_hinge"}
    for name, cls in MARGIN_LOSSES.items():
        assert cls.name == name and type(get_margin_loss(name)) is cls
    assert type(get_margin_loss("square")) is Square
    assert type(get_margin_loss("squared")) is Square
    assert get_margin_loss("squared") == get_margin_loss("square") == Square()
    huber = HuberHinge(0.3)
    assert get_margin_loss(huber) is huber and huber != HuberHinge(0.5)
    assert type(get_margin_loss(Hinge)) is Hinge
    for bad in ("cubic", "Hinge", 3, None):
        with pytest.raises(ssl_opt.InvalidInputError, match="loss must be one of"):
            get_margin_loss(bad)


@pytest.mark.parametrize("loss", BUILTIN, ids=repr)
def test_declared_capabilities_are_implemented(loss):
    """A built-in loss declares its capabilities; those backed by methods are exactly the
    methods it implements, the rest are properties of φ."""
    declared = loss.capabilities
    assert isinstance(declared, frozenset)
    assert declared - TRAITS == implemented_capabilities(type(loss))
    assert loss.smooth == ("derivative" in declared)
    if "quadratic" in declared:
        assert "second_derivative" in declared and "piecewise_quadratic" in declared
    if "piecewise_linear" in declared:
        assert loss.conjugate_form[0] == 0.0 and not loss.smooth


def test_exact_step_is_offered_where_declared_and_minimizes():
    rng = np.random.default_rng(3)
    for loss in BUILTIN:
        if "exact_step" not in loss.capabilities:
            with pytest.raises(NotImplementedError):
                loss.exact_step(np.zeros(2), np.ones(2), -1.0, 0.0)
            continue
        m, t = rng.normal(0.8, 1.0, 12), rng.normal(0.0, 1.0, 12)
        a0, a1 = -1.0 - 0.1 * float(t @ t), 0.7

        def along(s, loss=loss, m=m, t=t, a0=a0, a1=a1):
            return 0.5 * loss.value(m + s * t).sum() + a0 * s + 0.5 * a1 * s * s

        s = loss.exact_step(m, t, a0, a1)
        brute = minimize_scalar(along, bounds=(0, 100), method="bounded",
                                options={"xatol": 1e-12, "maxiter": 2000})
        assert along(s) <= brute.fun + 1e-10 * max(1.0, abs(brute.fun))


def test_every_family_stores_the_loss_object():
    d = gaussian_blobs(n=20, n_labeled=8, d=3, seed=0)
    K, L = np.eye(20), np.eye(20) - np.full((20, 20), 1 / 20)
    assert LapSVM(K, L, d.y, 1.0, 1.0, loss="hinge").loss == Hinge()
    assert LapRLS(K, L, d.y, 1.0, 1.0).loss == Square()
    for problem in (LinearSVM(d.X, d.y, 0.1), TSVM(d.X, d.y, 0.1, 1.0),
                    DAS3VM(d.X, d.y, 0.1, 1.0)):
        assert problem.loss == SquaredHinge()
    S = np.ones((6, 6)) - np.eye(6)
    for name, cls in (("square", Square), ("squared", Square), ("hinge", Hinge)):
        p = NPKL(S, [[0, 1], [2, 3]], [1, -1], C=1.0, loss=name)
        assert type(p.loss) is cls
        assert p.structure.variant == cls.name  # "square": the NPKL cost-model key
    assert LapSVM(K, L, d.y, 1.0, 1.0, loss="square").structure.variant == "squared"


def test_npkl_refuses_a_loss_without_a_conjugate():
    S = np.ones((6, 6)) - np.eye(6)
    with pytest.raises(ssl_opt.InvalidInputError, match="loss"):
        NPKL(S, [[0, 1], [2, 3]], [1, -1], C=1.0, loss=ExpLossFirstOrder())


def test_no_code_branches_on_a_loss_name():
    root = Path(__file__).resolve().parents[2]
    names = "hinge|square|squared|squared_hinge|huber|logistic"
    pattern = re.compile(rf"""(==|!=)\s*["']({names})["']|\.name\s*(==|!=)"""
                         rf"""|\bif\b.*\bloss\b.*\bin\s*[(\[{{]\s*["']""")
    offenders = []
    for top in ("ssl_opt", "plugins", "reference"):
        if not (root / top).is_dir():
            pytest.skip("source tree not available")
        for path in (root / top).rglob("*.py"):
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if pattern.search(line):
                    offenders.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


# ------------------------------------------------------------------- solvers read capabilities


class ExpLoss(MarginLoss):
    """φ(m) = exp(−m) with value and CVXPY expression only: no derivative."""

    name = "exp"

    def value(self, m):
        return np.exp(-m)

    def cvxpy(self, m):
        return cp.exp(-m)


class ExpLossFirstOrder(ExpLoss):
    def derivative(self, m):
        return -np.exp(-m)


def test_user_loss_without_derivative_is_refused_by_newton_and_pcg(problem_factory):
    base = problem_factory("blobs", n=40)
    p = LapSVM(base.K, base.L, base.y, 0.1, 0.5, loss=ExpLoss())
    assert p.loss.capabilities == {"value", "cvxpy"}
    assert not p.structure.smooth and p.structure.variant == "exp"
    for name, lacking in (("pcg", "derivative"), ("newton", "derivative, second_derivative")):
        solver = registry.get_solver(name)
        reasons = solver.missing(p)
        assert reasons[0] == (f"a loss with {lacking} (this problem's loss ExpLoss() does not "
                              f"offer {'it' if ',' not in lacking else 'them'})")
        assert "for the hinge use" in reasons[1]
        with pytest.raises(ssl_opt.UnsupportedProblemError, match=lacking):
            ssl_opt.solve(p, solver=name)
    assert registry.get_solver("cvxpy").supports(p)


def test_user_loss_with_a_derivative_runs_pcg_but_not_newton(problem_factory):
    base = problem_factory("blobs", n=40)
    p = LapSVM(base.K, base.L, base.y, 0.1, 0.5, loss=ExpLossFirstOrder())
    assert "derivative" in p.loss.capabilities and p.structure.smooth
    assert registry.get_solver("pcg").supports(p)
    assert "second_derivative" in registry.get_solver("newton").missing(p)[0]
    ref = ssl_opt.solve(p, solver="cvxpy")
    sol = ssl_opt.solve(p, solver="pcg")
    assert abs(sol.objective - ref.objective) < 1e-7 * max(1.0, abs(ref.objective))


class ShiftedSquare(MarginLoss):
    """φ(m) = 3(1.2 − m)²: quadratic, declared so with the ``"quadratic"`` trait."""

    name = "shifted_square"

    @property
    def capabilities(self):
        return super().capabilities | {"quadratic", "piecewise_quadratic"}

    def value(self, m):
        return 3.0 * (1.2 - m) ** 2

    def cvxpy(self, m):
        return 3.0 * cp.square(1.2 - m)

    def derivative(self, m):
        return -6.0 * (1.2 - m)

    def second_derivative(self, m):
        return np.full_like(np.asarray(m, dtype=float), 6.0)


def test_direct_solve_takes_any_quadratic_loss(problem_factory):
    base = problem_factory("moons", n=50)
    p = LapSVM(base.K, base.L, base.y, 0.05, 0.5, loss=ShiftedSquare())
    ref = ssl_opt.solve(p, solver="cvxpy")
    direct = ssl_opt.solve(p, solver="laprls-direct")
    newton = ssl_opt.solve(p, solver="newton")
    for sol in (direct, newton):
        assert abs(sol.objective - ref.objective) < 1e-8 * max(1.0, abs(ref.objective))
        assert p.kkt(sol)["stationarity"] < 1e-9
    assert "quadratic" in registry.get_solver("laprls-direct").missing(
        LapSVM(base.K, base.L, base.y, 0.05, 0.5, loss="squared_hinge"))[0]


class DoubleHinge(MarginLoss):
    """φ(m) = 2 max(0, 1 − m): piecewise linear, conjugate box [0, 2]."""

    name = "double_hinge"
    conjugate_form = (0.0, 0.0, 2.0)

    @property
    def capabilities(self):
        return super().capabilities | {"piecewise_linear"}

    def value(self, m):
        return 2.0 * np.maximum(0.0, 1.0 - m)

    def cvxpy(self, m):
        return 2.0 * cp.pos(1 - m)

    def subgradient_interval(self, m, kink_tol=0.0):
        lo, hi = Hinge().subgradient_interval(m, kink_tol)
        return 2.0 * lo, 2.0 * hi


def test_dual_reference_takes_any_piecewise_linear_loss(problem_factory):
    base = problem_factory("moons", n=50, seed=4)
    p = LapSVM(base.K, base.L, base.y, 0.05, 0.5, loss=DoubleHinge())
    primal = ssl_opt.solve(p, solver="cvxpy")
    dual = ssl_opt.solve(p, solver="cvxpy-dual")
    assert abs(dual.objective - primal.objective) < 1e-7 * max(1.0, abs(primal.objective))
    assert dual.x["beta"].max() <= 2.0 and dual.x["beta"].max() > 1.0  # the wider box is used
    assert ssl_opt.certify(p, dual, reference=primal).passed
    refused = registry.get_solver("cvxpy-dual").missing(problem_factory("moons", n=50))
    assert refused == ["a loss with piecewise_linear (this problem's loss SquaredHinge() does "
                       "not offer it)"]
