"""The operator plan (ssl_opt/operators/plan.py) against its closed forms: the 8n² of a dense
K, the 8nm of a Nyström factor, and the choice flipping where K stops fitting the budget."""

from __future__ import annotations

import pytest

from ssl_opt.exceptions import InvalidInputError
from ssl_opt.operators.plan import DENSE_SHARE, kernel_plan


def test_memory_follows_the_closed_forms():
    plan = kernel_plan(10_000, 5, landmarks=300, memory_budget=1e12, threads=2)
    dense, free, nys = (plan.option(k) for k in ("dense", "matrix-free", "nystrom"))
    assert dense.memory >= 8.0 * 10_000**2 > free.memory
    assert nys.memory >= 8.0 * 10_000 * 300
    assert dense.exact and free.exact and not nys.exact
    assert (dense.solver, free.solver, nys.solver) == ("pcg", "pcg", "lowrank-newton")
    # Every product of the matrix-free K recomputes n² kernel entries: slower than stored K.
    assert free.seconds > dense.seconds - 10_000**2 * 1e-8
    assert plan.choice == "dense"


def test_the_choice_flips_where_the_dense_kernel_stops_fitting():
    n = 20_000
    need = kernel_plan(n, 3, memory_budget=1e15).option("dense").memory
    assert kernel_plan(n, 3, memory_budget=need / DENSE_SHARE * 1.01).choice == "dense"
    small = kernel_plan(n, 3, memory_budget=need / DENSE_SHARE * 0.99)
    assert small.choice == "matrix-free"  # exact; the approximation is never chosen for you
    tiny = kernel_plan(n, 3, memory_budget=need * 0.5)
    assert not tiny.option("dense").fits and tiny.option("matrix-free").fits
    assert "does not fit" in tiny.table() and "* matrix-free" in tiny.table()


@pytest.mark.parametrize("kwargs,match", [({"n": 0, "d": 2}, "n"), ({"n": 10, "d": 0}, "d"),
                                          ({"n": 10, "d": 2, "memory_budget": -1},
                                           "memory_budget"),
                                          ({"n": 10, "d": 2, "landmarks": 0}, "landmarks")])
def test_bad_sizes_are_refused(kwargs, match):
    with pytest.raises(InvalidInputError, match=match):
        kernel_plan(**kwargs)
