"""The worker-side functions of :class:`~ssl_opt.operators.distributed.DaskDesign`: each runs on
the worker that holds a row block of the design (its first argument), so only vectors travel —
products ``X_b w`` and ``X_bᵀ v``, row selections, and the fused CGLS steps of the linear family
(docs/scaling.md)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


# --------------------------------------------------------------------- worker-side functions
def as_block(chunk):
    """A chunk as a float64 CSR matrix in canonical format, or a C-contiguous float64 array."""
    if sp.issparse(chunk):
        block = sp.csr_matrix(chunk, dtype=np.float64)
        if not block.has_canonical_format:
            block = block.copy()  # never modify a chunk someone else holds
            block.sum_duplicates()
        return block
    if hasattr(chunk, "tocsr") and not isinstance(chunk, np.ndarray):  # pydata sparse
        return as_block(chunk.tocsr())
    return np.ascontiguousarray(np.asarray(chunk), dtype=np.float64)


def block_info(block) -> tuple[int, int, int, bool, bool]:
    """``(rows, columns, stored entries, sparse, all finite)`` of one block."""
    data = block.data if sp.issparse(block) else block
    nnz = int(block.nnz) if sp.issparse(block) else int(block.size)
    return (int(block.shape[0]), int(block.shape[1]), nnz, sp.issparse(block),
            bool(np.all(np.isfinite(data))))


def block_nnz(block) -> int:
    return int(block.nnz) if sp.issparse(block) else int(block.size)


def vstack_blocks(*blocks):
    if sp.issparse(blocks[0]):
        return sp.vstack(blocks, format="csr")
    return np.vstack(blocks)


def block_matvec(block, w):
    return np.asarray(block @ w, dtype=np.float64).ravel()


def block_rmatvec(block, v):
    return np.asarray(block.T @ v, dtype=np.float64).reshape((block.shape[1],) + v.shape[1:])


def take_rows(block, index):
    return block[index]


def block_cgls_rows(block, C, b):
    """CGLS's per-row weights and targets of one block, kept on the block's worker for the
    whole solve (``block`` is an argument only so the task runs where the block is)."""
    assert block.shape[0] == C.size == b.size
    return C, b


def block_outputs(block, w, bias: bool):
    """``X̃_b w`` exactly as :meth:`DaskDesign.matvec` computes it."""
    d = block.shape[1]
    out = block_matvec(block, w[:d])
    if bias:
        out += w[d]
    return out


def with_bias_row(block, v, bias: bool):
    """``X̃_bᵀ v``: ``X_bᵀ v`` with the bias row ``Σ v`` appended."""
    head = block_rmatvec(block, v)
    return np.concatenate([head, v.sum(axis=0, keepdims=True)]) if bias else head


def block_cgls_start(block, rows, o, beta, bias: bool):
    """``X̃_bᵀ [z_b, C_b b_b]`` with ``z_b = C_b (b_b − o_b)``, as the in-memory CGLS starts
    (``o_b = X̃_b β`` computed here when not given)."""
    C, b = rows
    if o is None:
        o = block_outputs(block, beta, bias)
    return with_bias_row(block, np.column_stack([C * (b - o), C * b]), bias)


def block_cgls_step(block, rows, p, bias: bool):
    """One fused CGLS product on a block: ``q_b = X̃_b p``, returns ``[X̃_bᵀ(C_b q_b), q_bᵀC_b q_b]``
    (``dim + 1`` floats)."""
    C = rows[0]
    q = block_outputs(block, p, bias)
    Cq = C * q
    return np.append(with_bias_row(block, Cq, bias), Cq @ q)


def block_cgls_true_residual(block, rows, beta, bias: bool):
    """``X̃_bᵀ C_b (b_b − X̃_b β)`` from ``β`` itself (no recurrence)."""
    C, b = rows
    return with_bias_row(block, C * (b - block_outputs(block, beta, bias)), bias)
