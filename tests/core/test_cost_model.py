"""Cost models: power-law fits, the model store (atomic, corrupt, stale) and backend selection
driven by the models, against closed forms and hand-computed choices."""

from __future__ import annotations

import json
import math
import os
import warnings

import numpy as np
import pytest

from ssl_opt.datasets.synthetic import two_moons
from ssl_opt.exceptions import InsufficientMemoryError, InvalidInputError
from ssl_opt.problems import LapRLS
from ssl_opt.problems.lass.examples import _moons_at as lass_moons
from ssl_opt.selection import model_store
from ssl_opt.selection import select as selection
from ssl_opt.selection.cost_model import CostModel, PowerLaw
from ssl_opt.selection.select import REFERENCE_PREFERENCE


# These tests check the rule on the models they write: no solver measures the instance here
# (PCG's conditioning probe would override its model; tests/core/test_instance_selection.py
# checks that).
def select(problem, *args, **kwargs):
    return selection.select(problem, *args, measure=False, **kwargs)


def predict(solver, problem):
    return selection.predict(solver, problem, measure=False)

# ----------------------------------------------------------------------------- fits


@pytest.mark.parametrize("c,a,b", [(0.02, 3e-9, 3.0), (1e-3, 2e-6, 1.0), (0.5, 1e-4, 2.0)])
def test_power_law_fit_recovers_exact_laws(c, a, b):
    s = np.geomspace(50, 5000, 9)
    law = PowerLaw.fit(s, c + a * s**b)
    assert law.b == pytest.approx(b, rel=1e-3)
    assert law.a == pytest.approx(a, rel=2e-2)
    assert law.c == pytest.approx(c, rel=2e-2)
    assert law(20000.0) == pytest.approx(c + a * 20000.0**b, rel=1e-2)


def test_power_law_fit_is_robust_to_multiplicative_noise():
    rng = np.random.default_rng(0)
    s = np.geomspace(100, 10000, 12)
    y = (0.01 + 1e-8 * s**2.5) * np.exp(0.1 * rng.standard_normal(s.size))
    law = PowerLaw.fit(s, y)
    assert abs(law.b - 2.5) < 0.2
    assert np.all(np.abs(np.log([law(x) for x in s]) - np.log(y)) < 0.4)


def test_power_law_with_few_points():
    # two points: the line through them in log-log, no constant
    law = PowerLaw.fit([10, 100], [2.0, 200.0])
    assert (law.c, law.b) == (0.0, pytest.approx(2.0))
    assert law.a == pytest.approx(0.02)
    # one point: the given exponent
    law = PowerLaw.fit([10], [5.0], exponent=3.0)
    assert law.b == 3.0 and law.a == pytest.approx(5e-3)
    with pytest.raises(ValueError):
        PowerLaw.fit([1.0, 2.0], [0.0, -1.0])


def _model(solver, key, size_keys, seconds, memory=None, sizes=(100, 200, 400, 800)):
    """A model that predicts ``seconds`` (and ``memory`` bytes) at every size."""
    time_law = PowerLaw(0.0, float(seconds), 0.0)
    mem_law = None if memory is None else PowerLaw(0.0, float(memory), 0.0)
    pts = tuple((float(s), float(seconds), float(memory or 0)) for s in sizes)
    return CostModel(solver, key, tuple(size_keys), time_law, mem_law, pts)


def test_cost_model_json_round_trip():
    m = CostModel.fit("x", "lass/qp", ("N", "K"), [(100, 0.1, 1e6), (200, 0.3, 2e6),
                                                   (400, 1.0, 4e6), (800, 3.5, 8e6)], 1.5, "why")
    back = CostModel.from_json(json.loads(json.dumps(m.to_json())))
    assert back == m
    assert back.predict_time(1600) == pytest.approx(m.predict_time(1600))


# ----------------------------------------------------------------------------- store


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(model_store.CACHE_ENV, str(tmp_path))
    model_store.clear_cache()
    yield tmp_path
    model_store.clear_cache()


def test_save_then_read_round_trip_and_no_temporary_left(cache):
    models = [_model("pcg", "manifold/squared", ("n",), 0.5),
              _model("cvxpy", "manifold/squared", ("n",), 2.0, 1e9)]
    path = model_store.save_models(models)
    assert path == cache / model_store.FILENAME
    assert sorted(os.listdir(cache)) == [model_store.FILENAME]
    back = model_store.read_models(path)
    assert back[("cvxpy", "manifold/squared")] == models[1]


def test_interrupted_write_leaves_the_old_file(cache, monkeypatch):
    path = model_store.save_models([_model("pcg", "manifold/squared", ("n",), 0.5)])
    before = path.read_text()

    def broken(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(model_store.json, "dump", broken)
    with pytest.raises(KeyboardInterrupt):
        model_store.save_models([_model("pcg", "manifold/squared", ("n",), 9.0)])
    assert path.read_text() == before
    assert sorted(os.listdir(cache)) == [model_store.FILENAME]


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"format": 1, "package_version": '
                                    '"0.1.0", "models": [{"solver": "x"}]}'])
def test_corrupt_file_is_ignored_with_a_warning(cache, content):
    (cache / model_store.FILENAME).write_text(content)
    with pytest.warns(model_store.CostModelWarning, match="corrupt"):
        loaded = model_store.load_models()
    shipped = model_store.read_models(model_store.shipped_models_path()) or {}
    assert set(loaded) == set(shipped)
    assert all(source == "shipped" for _, source in loaded.values())


@pytest.mark.parametrize("field,value,match", [("package_version", "0.0.1", "stale"),
                                               ("format", 99, "format")])
def test_stale_file_is_ignored_with_a_warning(cache, field, value, match):
    path = model_store.save_models([_model("pcg", "manifold/squared", ("n",), 123.0)])
    doc = json.loads(path.read_text())
    doc[field] = value
    path.write_text(json.dumps(doc))
    with pytest.warns(model_store.CostModelWarning, match=match):
        loaded = model_store.load_models()
    entry = loaded.get(("pcg", "manifold/squared"))
    assert entry is None or entry[1] == "shipped"


def test_user_calibration_overrides_the_shipped_model(cache):
    model_store.save_models([_model("pcg", "manifold/squared", ("n",), 123.0)])
    model, source = model_store.load_models()[("pcg", "manifold/squared")]
    assert source == "calibrated" and model.predict_time(10) == 123.0


def test_shipped_models_cover_every_builtin_generator_pair():
    """The package ships a model for every (solver, generator) pair calibration measures."""
    from ssl_opt import registry

    shipped = model_store.read_models(model_store.shipped_models_path())
    assert shipped, "ssl_opt/data/cost_models.json is missing or unreadable"
    for key, gen in registry.generators().items():
        probe = gen.instance(gen.calibration_scales[0], 0)
        for name, solver in registry.solvers().items():
            if solver.supports(probe) and name != "tsvm-exhaustive":
                assert (name, key) in shipped, (name, key)
                assert shipped[(name, key)].size_keys == solver.cost_size_keys(key,
                                                                               gen.size_keys)


# ----------------------------------------------------------------------------- selection


def _laprls(n=120):
    from ssl_opt.builders import graph_laplacian_from_data, rbf_kernel

    data = two_moons(n=n, n_labeled=6, noise=0.1, seed=1)
    return LapRLS(rbf_kernel(data.X, sigma=0.35),
                  graph_laplacian_from_data(data.X, n_neighbors=6), data.y, 1e-2, 1.0)


def _write(models):
    model_store.save_models(models)
    model_store.clear_cache()


KEY = "manifold/squared"


FOUR = ("cvxpy", "pcg", "newton", "laprls-direct")


def _generic_solvers() -> list[str]:
    """The solvers of models that also apply to LapRLS (a named model)."""
    from ssl_opt import registry

    return sorted(n for n, s in registry.solvers().items()
                  if n not in FOUR and s.supports(_laprls()))


def _laprls_models(ref, pcg, newton, direct, ref_mem=None, fast_mem=None):
    """Models of the reference and the three paper solvers as given, and of every generic
    solver at 100 s (so the four decide)."""
    return [_model("cvxpy", KEY, ("n",), ref, ref_mem),
            _model("pcg", KEY, ("n",), pcg, fast_mem),
            _model("newton", KEY, ("n",), newton, fast_mem),
            _model("laprls-direct", KEY, ("n",), direct, fast_mem)] + [
        _model(name, KEY, ("n",), 100.0, fast_mem) for name in _generic_solvers()]


def test_auto_prefers_the_reference_only_within_the_preference_factor(cache):
    problem = _laprls()
    _write(_laprls_models(ref=0.11, pcg=0.5, newton=0.3, direct=0.1))
    sel = select(problem)
    assert 0.11 <= REFERENCE_PREFERENCE * 0.1
    assert sel.solver == "cvxpy" and sel.backend == "reference"
    _write(_laprls_models(ref=0.2, pcg=0.5, newton=0.3, direct=0.1))
    sel = select(problem)
    assert sel.solver == "laprls-direct"
    assert "beyond" in sel.reason
    assert sel.predicted_time == {"cvxpy": 0.2, "pcg": 0.5, "newton": 0.3, "laprls-direct": 0.1,
                                  **dict.fromkeys(_generic_solvers(), 100.0)}
    assert all(p.source == "calibrated" for p in sel.predictions.values())


def test_time_budget_decides_for_the_reference(cache):
    problem = _laprls()
    _write(_laprls_models(ref=30.0, pcg=0.5, newton=0.3, direct=0.1))
    assert select(problem).solver == "laprls-direct"
    assert select(problem, time_budget=60).solver == "cvxpy"
    assert select(problem, time_budget=10).solver == "laprls-direct"
    assert select(problem, backend="reference").solver == "cvxpy"
    assert select(problem, backend="fast").solver == "laprls-direct"


def test_memory_excludes_candidates_and_refuses_when_nothing_fits(cache):
    problem = _laprls()
    _write(_laprls_models(ref=0.1, pcg=0.5, newton=0.3, direct=0.2, ref_mem=8e9, fast_mem=1e8))
    sel = select(problem, memory_budget=1e9)
    assert sel.solver == "laprls-direct"  # the reference would be chosen but does not fit
    assert sel.predicted_memory["cvxpy"] == 8e9
    with pytest.raises(InsufficientMemoryError) as err:
        select(problem, memory_budget=1e7)
    message = str(err.value)
    for name in ("cvxpy", "pcg", "newton", "laprls-direct"):
        assert name in message
    assert "memory_budget" in message


def test_budgets_are_validated(cache):
    problem = _laprls()
    for bad in (0, -1.0, "fast", math.nan, True):
        with pytest.raises(InvalidInputError, match="budget"):
            select(problem, time_budget=bad)
    with pytest.raises(InvalidInputError, match="memory_budget"):
        select(problem, memory_budget=-5)


def test_prediction_uses_the_generators_size_product(cache):
    problem = lass_moons(150, 0)
    N, K = problem.structure.sizes["N"], problem.structure.sizes["K"]
    law = PowerLaw(0.01, 2e-6, 1.3)
    _write([CostModel("admm-split", "lass/qp", ("N", "K"), law, None,
                      ((100.0, 0.1, 0.0), (10_000.0, 1.0, 0.0)))])
    from ssl_opt import registry

    p = predict(registry.get_solver("admm-split"), problem)
    assert p.size == N * K
    assert p.seconds == pytest.approx(0.01 + 2e-6 * (N * K) ** 1.3)
    assert not p.extrapolated and p.source == "calibrated"


def test_a_model_of_another_variant_is_borrowed_and_said_so(cache):
    from ssl_opt import registry
    from ssl_opt.problems import LapSVM

    data = two_moons(n=80, n_labeled=6, seed=0)
    from ssl_opt.builders import graph_laplacian_from_data, rbf_kernel

    L = graph_laplacian_from_data(data.X, n_neighbors=6)
    problem = LapSVM(rbf_kernel(data.X, sigma=0.35), L, data.y, 1e-2, 1.0, loss="logistic")
    _write([_model("newton", "manifold/squared_hinge", ("n",), 0.25, sizes=(10, 15))])
    p = predict(registry.get_solver("newton"), problem)
    assert p.seconds == 0.25 and "manifold/squared_hinge" in p.source
    assert p.extrapolated  # n = 80 is beyond 4x the largest calibrated size (15)


def test_a_stale_size_definition_falls_back_to_the_analytic_estimate(cache):
    from ssl_opt import registry

    problem = _laprls()
    _write([_model("pcg", KEY, ("n", "l"), 99.0)])  # the generator sizes manifold by n alone
    p = predict(registry.get_solver("pcg"), problem)
    assert p.source == "analytic"
    assert p.seconds == pytest.approx(registry.get_solver("pcg").predicted_time(problem))


def test_selection_table_lists_every_candidate(cache):
    problem = _laprls()
    _write(_laprls_models(ref=0.2, pcg=0.5, newton=0.3, direct=0.1, fast_mem=2**20))
    sel = select(problem)
    lines = sel.table().splitlines()
    assert len(lines) == 4 + len(_generic_solvers()) and lines[0].startswith("* laprls-direct")
    assert "1 MiB" in sel.table()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        str(sel)


def _npkl_hinge_models(ref, fast):
    key = "npkl/hinge"
    return [_model("cvxpy", key, ("n",), 3 * ref), _model("cvxpy-boundary", key, ("l",), ref),
            _model("bcd", key, ("l",), fast), _model("pdhg", key, ("l",), 10 * ref)]


def test_an_inexact_fast_solver_is_a_last_resort(cache):
    from ssl_opt import registry
    from ssl_opt.selection.select import INEXACT_FALLBACK_SECONDS

    problem = registry.generators()["npkl/hinge"].instance(40)
    assert registry.get_solver("bcd").inexact(problem)
    assert not registry.get_solver("bcd").inexact(registry.generators()["npkl/square"]
                                                  .instance(40))
    # BCD is 50x faster but stalls on the hinge: the exact reference, predicted within 60 s
    _write(_npkl_hinge_models(ref=5.0, fast=0.1))
    assert select(problem).solver == "cvxpy-boundary"
    # nothing exact within the default fallback: BCD, and the reason says why
    _write(_npkl_hinge_models(ref=2 * INEXACT_FALLBACK_SECONDS, fast=0.1))
    sel = select(problem)
    assert sel.solver == "bcd" and "stalls" in sel.reason
    # a budget that admits the reference restores it
    assert select(problem, time_budget=4 * INEXACT_FALLBACK_SECONDS).solver == "cvxpy-boundary"
    assert select(problem, backend="fast").solver == "bcd"
    # an exact fast solver predicted within the deadline is preferred to the stalling BCD
    _write(_npkl_hinge_models(ref=2.0, fast=0.1))
    assert select(problem, backend="fast").solver == "pdhg"


# ----------------------------------------------------------------------------- hostile cache


def _good_entry():
    return _model("pcg", KEY, ("n",), 0.5, 1e6).to_json()


def _with(**changes):
    return [{**_good_entry(), **changes}]


@pytest.mark.parametrize("models", [
    "a string", ["a", 1], {"pcg": _good_entry()}, [[1, 2, 3]], None, 3,
    _with(time="fast"), _with(time=[1, 2, 3]), _with(time={"c": None, "a": 1, "b": 1}),
    _with(time={"c": True, "a": 1.0, "b": 1.0}), _with(memory="lots"),
    _with(size_keys="n"), _with(size_keys=[1]), _with(solver=5), _with(key=""),
    _with(points=[[1, 2]]), _with(points="none"), _with(points=[[1, "x", 3]]),
    _with(expected_exponent="cubic"), _with(complexity=3),
], ids=lambda v: type(v).__name__)
def test_a_malformed_models_entry_is_ignored_with_a_warning(cache, models):
    doc = {"format": model_store.FORMAT, "package_version": model_store._package_version(),
           "models": models}
    (cache / model_store.FILENAME).write_text(json.dumps(doc))
    with pytest.warns(model_store.CostModelWarning, match="corrupt"):
        loaded = model_store.load_models()
    assert all(source == "shipped" for _, source in loaded.values())
    assert select(_laprls()).solver  # selection still works, on the shipped models


ABSURD = {
    "negative_time": (PowerLaw(-5.0, 0.0, 0.0), None, "time law is negative"),
    "negative_slope": (PowerLaw(0.0, -1e-3, 1.0), None, "time law is negative"),
    "nan_time": (PowerLaw(0.0, math.nan, 1.0), None, "NaN or infinite"),
    "infinite_time": (PowerLaw(math.inf, 1.0, 1.0), None, "NaN or infinite"),
    "huge_exponent": (PowerLaw(0.0, 1e-9, 50.0), None, "exponent 50 is outside"),
    "negative_exponent": (PowerLaw(0.0, 1.0, -3.0), None, "exponent -3 is outside"),
    "astronomic_time": (PowerLaw(1e300, 0.0, 0.0), None, "predicts 1e\\+300"),
    "astronomic_memory": (PowerLaw(0.0, 1e-3, 1.0), PowerLaw(0.0, 1e300, 0.0),
                          "memory law predicts 1e\\+300"),
    "nan_memory": (PowerLaw(0.0, 1e-3, 1.0), PowerLaw(math.nan, 1.0, 1.0),
                   "memory law has a NaN"),
}


@pytest.mark.parametrize("kind", sorted(ABSURD))
def test_an_absurd_law_is_ignored_with_a_warning_and_never_drives_selection(cache, kind):
    time_law, memory_law, match = ABSURD[kind]
    absurd = CostModel("laprls-direct", KEY, ("n",), time_law, memory_law,
                       ((100.0, 0.1, 1e6), (200.0, 0.2, 2e6)))
    sane = _laprls_models(ref=0.2, pcg=0.5, newton=0.3, direct=0.1)[:3]
    _write(sane + [absurd])
    with pytest.warns(model_store.CostModelWarning,
                      match=f"cost model of 'laprls-direct' on '{KEY}'.*{match}"):
        sel = select(_laprls())
    assert sel.predictions["laprls-direct"].source != "calibrated"
    assert all(sel.predictions[name].source == "calibrated"
               for name in ("cvxpy", "pcg", "newton"))
    shipped = model_store.read_models(model_store.shipped_models_path())
    expected = shipped[("laprls-direct", KEY)].predict_time(_laprls().n)
    assert sel.predictions["laprls-direct"].seconds == pytest.approx(expected)


@pytest.mark.parametrize("point", [(100.0, -1.0, 1e6), (100.0, 0.1, math.nan)])
def test_a_model_with_absurd_measurements_is_ignored(cache, point):
    absurd = CostModel("laprls-direct", KEY, ("n",), PowerLaw(0.0, 1e-3, 1.0), None,
                       (point, (200.0, 0.2, 2e6)))
    _write([absurd])
    with pytest.warns(model_store.CostModelWarning, match="measured point"):
        loaded = model_store.load_models()
    assert loaded[("laprls-direct", KEY)][1] == "shipped"


def test_every_shipped_and_fitted_law_is_plausible():
    for model in model_store.read_models(model_store.shipped_models_path()).values():
        assert model.implausible() == []
    fitted = CostModel.fit("x", KEY, ("n",), [(100, 1e-4, 1e3), (200, 9e-4, 9e3),
                                              (400, 8e-3, 1e5), (800, 0.07, 1e6)], 3.0)
    assert fitted.implausible() == []
