"""The core install: the estimators and fast solvers without the extras (cvxpy and its solvers,
dask, matplotlib), each missing extra named with the command that installs it.

A package is made missing in a subprocess by ``sys.modules[name] = None``, which makes both
``import name`` and ``importlib.util.find_spec(name)`` report it absent, as in a venv
installed without the extra (``benchmarks/install_size.sh`` checks a real one).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ssl_opt.exceptions import MissingDependencyError
from ssl_opt.optional import EXTRA_OF, LazyModule, install_hint, missing_reasons, require

ROOT = Path(__file__).resolve().parents[2]
EXTRAS = ("cvxpy", "clarabel", "osqp", "scs", "matplotlib", "dask", "distributed")


def _run(code: str, missing=EXTRAS) -> str:
    preamble = "import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in missing)
    done = subprocess.run([sys.executable, "-c", preamble + textwrap.dedent(code)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_importing_the_estimators_and_a_fast_fit_do_not_import_cvxpy():
    out = _run("""
        from sklearn.datasets import make_moons
        from ssl_opt.estimators import LapSVC
        print("after import:", "cvxpy" in sys.modules)
        X, y = make_moons(60, noise=0.1, random_state=0)
        y[10:] = -1
        LapSVC().fit(X, y).predict(X)
        print("after fit:", "cvxpy" in sys.modules)
    """, missing=())
    assert "after import: False" in out and "after fit: False" in out


def test_every_estimator_fits_and_certifies_on_residuals_without_the_extras():
    out = _run("""
        import warnings
        from sklearn.datasets import make_moons
        from ssl_opt.estimators import ESTIMATORS
        X, y = make_moons(60, noise=0.1, random_state=0)
        y[10:] = -1
        for cls in ESTIMATORS:
            seeded = {"random_state": 0} if "random_state" in cls().get_params() else {}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est = cls(**seeded).fit(X, y)
            cert = est.certificate()
            certs = cert if isinstance(cert, list) else [cert]
            sols = est.solution_ if isinstance(est.solution_, list) else [est.solution_]
            # a solver's "optimal" holds up on the residuals (BCD may say "stalled" instead)
            assert all(c.passed for c, s in zip(certs, sols) if s.status == "optimal"), certs
            assert all(c.objective_gap is None for c in certs)
            assert any("ssl-opt[reference]" in n for c in certs for n in c.notes), certs[0].notes
            print("fitted", cls.__name__)
    """)
    assert out.count("fitted") == 8


def test_each_missing_extra_is_named_with_its_install_command():
    out = _run("""
        import ssl_opt
        from ssl_opt.cli import main
        from ssl_opt.exceptions import MissingDependencyError, UnsupportedProblemError
        from sklearn.datasets import make_moons
        from ssl_opt.estimators import LapSVC, LinearL2SVC
        X, y = make_moons(60, noise=0.1, random_state=0)
        y[10:] = -1
        est = LapSVC().fit(X, y)
        for call in (lambda: ssl_opt.solve(est.problem_, backend="reference"),
                     lambda: ssl_opt.solve(est.problem_, solver="cvxpy"),
                     lambda: est.solution_.history.plot(),
                     lambda: LinearL2SVC(client="default").fit(X, y)):
            try:
                call()
                print("no error")
            except (MissingDependencyError, UnsupportedProblemError) as exc:
                print(type(exc).__name__, exc)
        print("certify exit", main(["certify"]))
        print("bench exit", main(["bench", "lass"]))
    """)
    assert "no error" not in out
    assert out.count("pip install 'ssl-opt[reference]'") == 2
    assert "History.plot needs matplotlib" in out and "ssl-opt[plot]" in out
    assert "client= needs distributed" in out and "ssl-opt[dask]" in out
    assert "certify exit 2" in out and "bench exit 2" in out


def test_require_names_the_extra_and_the_lazy_module_imports_on_use():
    with pytest.raises(MissingDependencyError, match="needs no_such_package_x"):
        require("no_such_package_x", "this test")
    assert install_hint("cvxpy") == "pip install 'ssl-opt[reference]'"
    assert missing_reasons(["numpy"]) == []
    assert "not installed" in missing_reasons(["no_such_package_x"])[0]
    lazy = LazyModule("json", "this test")
    assert lazy.dumps([1]) == "[1]"


def test_the_extras_in_pyproject_match_the_packages_the_code_treats_as_optional():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

    def names(requirements):
        return {r.split("[")[0].split(">")[0].split("=")[0].strip() for r in requirements}

    extras = project["optional-dependencies"]
    for extra in ("reference", "dask", "plot"):
        assert {EXTRA_OF[p] for p in names(extras[extra])} == {extra}
    assert set(EXTRA_OF) == names(extras["reference"] + extras["dask"] + extras["plot"])
    assert not names(project["dependencies"]) & set(EXTRA_OF)
