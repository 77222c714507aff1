"""The linear maps' matrix forms (``ssl_opt/modeling/maps.py``) against their own products:
``matrix()`` column by column from ``apply`` on basis vectors, ``column_matrix(c)`` against
``matrix()`` as ``A₀ ⊗ I_c`` (None exactly when the map treats the columns differently), and
``|A|`` products against numpy's absolute value of the dense matrix."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ssl_opt.modeling.maps import (
    Broadcast,
    Compose,
    Identity,
    MatMul,
    NotExplicit,
    Rows,
    Scale,
    chain_matrix,
)

RNG = np.random.default_rng(0)
N, C = 5, 3


def _dense(m) -> np.ndarray:
    """The matrix of ``m`` from ``apply`` on the basis vectors (C-order flattening)."""
    size = int(np.prod(m.in_shape, dtype=int))
    cols = [np.ravel(m.apply(np.eye(size)[k].reshape(m.in_shape))) for k in range(size)]
    return np.stack(cols, axis=1)


def _maps():
    A = RNG.standard_normal((4, N))
    S = sp.random(4, N, density=0.5, random_state=1, format="csr")
    return {
        "identity": Identity((N, C)),
        "dense product": MatMul(A, (N, C)),
        "sparse product": MatMul(S, (N, C)),
        "rows": Rows(np.array([4, 0, 2]), (N, C)),
        "bias": Broadcast(N, (C,)),
        "scalar scale": Scale(-2.5, (N, C)),
        "row scale": Scale(RNG.standard_normal((N, 1)), (N, C)),
        "column scale": Scale(RNG.standard_normal((1, C)), (N, C)),
        "composition": Compose(Rows(np.array([1, 3]), (4, C)), MatMul(A, (N, C))),
        "vector product": MatMul(A, (N,)),
    }


@pytest.mark.parametrize("name", list(_maps()))
def test_matrix_is_the_maps_own_product(name):
    m = _maps()[name]
    M = m.matrix()
    M = M.toarray() if sp.issparse(M) else M
    assert np.allclose(M, _dense(m), atol=1e-14)


@pytest.mark.parametrize("name", list(_maps()))
def test_column_matrix_is_the_one_column_block_or_none(name):
    m = _maps()[name]
    full = _dense(m)
    columns = C if len(m.in_shape) == 2 or m.in_shape == (C,) else 1
    block = m.column_matrix(columns)
    if block is None:  # then no A₀ gives A = A₀ ⊗ I_c
        A0 = full[::columns, ::columns]
        assert not np.allclose(np.kron(A0, np.eye(columns)), full)
        assert name == "column scale"
        return
    block = block.toarray() if sp.issparse(block) else np.asarray(block)
    assert np.allclose(np.kron(block, np.eye(columns)), full, atol=1e-14)


@pytest.mark.parametrize("name", list(_maps()))
def test_absolute_products_bound_the_maps_entries(name):
    m = _maps()[name]
    absolute = np.abs(_dense(m))
    v = RNG.random(m.in_shape)
    g = RNG.random(m.out_shape)
    got, back = m.abs_apply(v, {}), m.abs_adjoint(g, {})
    if isinstance(m, Compose):  # |A||B| ≥ |AB| entrywise
        assert np.all(np.ravel(got) >= absolute @ np.ravel(v) - 1e-12)
        assert np.all(np.ravel(back) >= absolute.T @ np.ravel(g) - 1e-12)
    else:
        assert np.allclose(np.ravel(got), absolute @ np.ravel(v))
        assert np.allclose(np.ravel(back), absolute.T @ np.ravel(g))


def test_a_products_only_operator_has_no_matrix_and_no_absolute_value():
    op = spla.aslinearoperator(RNG.standard_normal((4, N)))
    m = MatMul(op, (N,))
    with pytest.raises(NotImplementedError):
        m.matrix()
    with pytest.raises(NotExplicit):
        m.abs_apply(np.ones(N), {})
    assert MatMul(op, (N, C)).column_matrix(C) is None
    assert chain_matrix([Rows(np.array([0]), (4, C)), MatMul(op, (N, C))], C) is None
