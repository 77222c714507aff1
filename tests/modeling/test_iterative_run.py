"""The bookkeeping every generic iterative solver shares (plugins/model/iterative.py): the
time limit, the history rows and the final status decided by the model's certificate."""

from __future__ import annotations

import numpy as np
import pytest

import ssl_opt
from ssl_opt import registry
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.plugins.model.common import ModelSolver
from ssl_opt.solution import TIME_LIMIT

#: The generic solvers with a time limit (the CVXPY references have their own).
TIMED = sorted(name for name, s in registry.solvers().items()
               if isinstance(s, ModelSolver) and "time_limit" in s.options)
MODEL_EXAMPLES = [e for e in registry.examples() if e.family == "model"]


def test_every_generic_iterative_solver_takes_a_time_limit():
    assert {"pdhg", "admm-split", "mirror", "fista", "lbfgs", "newton-cg", "irls-newton",
            "irls-mm"} <= set(TIMED)


@pytest.mark.parametrize("name", TIMED)
def test_time_limit_stops_early_with_the_best_iterate(name):
    """With a limit far below one step, each solver stops at its first check with status
    'time_limit' (where the unlimited solve goes on), returning a finite point whose history
    ends there; the unlimited solve is the independent run it is compared with."""
    solver = registry.solvers()[name]
    compared = 0
    for example in MODEL_EXAMPLES:
        model = example.build()
        if not solver.supports(model):
            continue
        full = ssl_opt.solve(model, solver=name)
        limited = ssl_opt.solve(model, solver=name, time_limit=1e-9)
        if full.iterations <= limited.iterations:
            continue  # done by the first check: nothing for the limit to cut
        compared += 1
        assert limited.status == TIME_LIMIT, (example.name, limited.status)
        assert all(np.all(np.isfinite(v)) for v in limited.x.values())
        assert np.isfinite(limited.objective)
        assert len(limited.history) < len(full.history)
        if compared == 2:
            break
    assert compared, f"no model example where {name} needs more than one check"


@pytest.mark.parametrize("name", TIMED)
@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), "1", True])
def test_a_bad_time_limit_is_refused_by_name(name, bad):
    model = next(e.build() for e in MODEL_EXAMPLES
                 if registry.solvers()[name].supports(e.build()))
    with pytest.raises(InvalidInputError, match="time_limit"):
        ssl_opt.solve(model, solver=name, time_limit=bad)


def test_history_rows_carry_their_time_and_verbose_prints_them(capsys):
    model = next(e.build() for e in MODEL_EXAMPLES
                 if registry.solvers()["pdhg"].supports(e.build()))
    solution = ssl_opt.solve(model, solver="pdhg", verbose=True)
    times = solution.history["time"]
    assert len(times) >= 1 and np.all(np.diff(times) >= 0) and times[-1] <= solution.time
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("[pdhg]")]
    assert len(lines) == len(solution.history)
