"""Kernel manifold regularization: LapSVM (primal, hinge) and LapRLS [000].

Variables ``alpha`` (n,) and ``b`` (scalar, fixed at 0 when ``bias=False``); ``f = Kα + b·1``;
margins ``m_i = y_i f_i`` on the first ``l = len(y)`` points. docs/design.md §4.1 fixes the scaling:

    J(α, b) = ½ ( Σ_{i≤l} φ(m_i) + γ_A αᵀKα + γ_I fᵀLf )

which is [000 eq. 7] for the squared hinge. Gradient (the ½ absorbed) [000 eq. 9]:

    v   = ½ J_Lᵀ(y ∘ φ'(m)) + γ_A α + γ_I L f,   ∇_α J = K v,
    ∇_b J = 1ᵀ( ½ J_Lᵀ(y ∘ φ'(m)) + γ_I L f ).

``v`` is the preconditioned gradient ∇̂ of [000 Alg. 1] (preconditioner diag(1, K)).

LapSVM is a named model (docs/design.md §2a): the model ``MarginLossTerm(f[:l], y, φ, ½)
+ RKHSNorm(α, K, γ_A/2) + GraphQuadratic(f, L, γ_I/2)``, ``f = Kα (+ b)``, with its structure
tag ``manifold/<loss>``; every solver of models applies to it besides the paper's (Newton, PCG,
laprls-direct), and its certificate is the model's (:mod:`ssl_opt.modeling.stationarity`):
``stationarity`` is ``min ‖∇_α J, ∇_b J‖_∞`` over the hinge's subgradients at margins within
the kink tolerance of 1, relative to the largest term of the gradient. Without a bias the
model has the one variable ``alpha``.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

from ssl_opt._validation import (
    PSD_DENSE_MAX_N,
    as_float_matrix,
    check_binary_labels,
    check_bool,
    check_positive,
    check_psd,
    check_square,
    check_symmetric,
    reject_complex,
)
from ssl_opt.components import MarginLoss, Square, get_margin_loss
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.modeling.expressions import Variable, matmul
from ssl_opt.modeling.model import Model
from ssl_opt.modeling.terms import GraphQuadratic, MarginLossTerm, RKHSNorm
from ssl_opt.problems.base import Structure
from ssl_opt.problems.manifold.conditioning import Conditioning, preconditioned_spectrum

#: Density above which a sparse Laplacian is stored dense (measured crossover of matvec cost).
DENSE_L_FILL = 0.25
#: Memory of one block of kernel columns computed by products ``K @ E_idx`` (unit columns) for
#: an operator without ``columns()``: the block has ``COLUMN_BLOCK_BYTES // (8n)`` columns.
COLUMN_BLOCK_BYTES = 64 * 2**20
#: n-vectors a products-only solver keeps for a kernel operator (PCG's iterates, products and
#: temporaries, measured: ``plugins/manifold/pcg.py``); the selector's memory for it.
PRODUCT_SOLVER_VECTORS = 24
#: Seconds per entry of one product with a stored dense K (memory bound; measured 2.7e-10 at
#: n = 10,000 on this 2-core machine, benchmarks/bench_scaling.py (a)).
DENSE_PRODUCT_SECONDS = 2.7e-10
#: Seconds of a PCG iteration besides its product (the L product, vector updates, the line
#: search; ~1e-4 s measured at n = 250 here): the cost models' time is products plus this.
ITERATION_SECONDS = 1e-4
#: Variant keys that differ from the loss's name: LapRLS is "squared" in the shipped cost models
#: (ssl_opt/data/cost_models.json) and docs/bench.
VARIANT_NAMES = {"square": "squared"}


class LapSVM(Model):
    """Laplacian SVM family: ``J = ½(Σ φ(y_i f_i) + γ_A αᵀKα + γ_I fᵀLf)``, ``f = Kα + b``.

    A named model (module docstring): its terms, certificate and CVXPY reference are the
    model's, its paper solvers read the data below.

    Parameters
    ----------
    K : (n, n) array, sparse matrix or ``scipy.sparse.linalg.LinearOperator``
        Symmetric positive semi-definite Gram matrix (an operator only provides ``K @ v``).
    L : (n, n) array or sparse matrix
        Symmetric positive semi-definite graph Laplacian (possibly normalized or a power).
    y : (l,) array of ±1
        Labels of the first ``l`` points; both classes must be present.
    gamma_A, gamma_I : float > 0
        Ambient (RKHS) and intrinsic (graph) regularization weights.
    loss : str or MarginLoss
        ``"squared_hinge"`` (primal LapSVM [000 eq. 7]), ``"hinge"`` (original LapSVM
        [000 eq. 4], half its objective), ``"square"`` or ``"squared"`` (LapRLS), ``"huber"``,
        ``"logistic"`` or any :class:`~ssl_opt.components.MarginLoss`; stored as the object.
    bias : bool
        Include the unregularized bias ``b`` (a variable of the model only then).
    """

    family = "manifold"
    residual_tolerances = {"stationarity": "stationarity"}  # unconstrained: no feasibility

    def __init__(self, K, L, y, gamma_A, gamma_I, loss="squared_hinge", bias=True):
        K = _as_kernel(K)
        n = K.shape[0]
        if n == 0:
            raise InvalidInputError("K is empty (0x0): pass the n x n kernel of n >= 1 points.")
        L = as_float_matrix(L, "L")
        check_square(L, "L", n)
        check_symmetric(L, "L")
        _check_convex(K, L, n)
        if sp.issparse(L):
            # A CSR product costs several times a dense one per stored entry: a nearly full
            # "sparse" L (e.g. a power of a kNN Laplacian) is kept dense.
            L = L.toarray() if L.nnz > DENSE_L_FILL * n * n else sp.csr_matrix(L)
        self._assemble(K, L, check_binary_labels(y, "y", n), check_positive(gamma_A, "gamma_A"),
                       check_positive(gamma_I, "gamma_I"), get_margin_loss(loss),
                       check_bool(bias, "bias"))

    def _assemble(self, K, L, y, gamma_A: float, gamma_I: float, loss: MarginLoss,
                  bias: bool) -> None:
        """Store the validated data and state the model's terms on it (no copy, no check)."""
        self.K, self.L, self.y = K, L, y
        self.gamma_A, self.gamma_I = gamma_A, gamma_I
        self.loss: MarginLoss = loss
        self.bias = bias
        self.n, self.l = K.shape[0], y.size
        alpha = Variable("alpha", (self.n,))
        f = matmul(K, alpha)
        if bias:
            f = f + Variable("b")
        super().__init__([MarginLossTerm(f[: self.l], y, loss, 0.5),
                          RKHSNorm(alpha, K, 0.5 * gamma_A, validated=True),
                          GraphQuadratic(f, L, 0.5 * gamma_I, validated=True)],
                         prediction=f, name=f"{type(self).__name__.lower()}[{self.variant}]",
                         unique_prediction=loss.unique_decision)

    def _twin(self, K=None, y=None, loss: MarginLoss | None = None) -> LapSVM:
        """The same problem on other (already validated) K, y or loss, built without checks."""
        twin = object.__new__(type(self))
        twin._assemble(self.K if K is None else K, self.L, self.y if y is None else y,
                       self.gamma_A, self.gamma_I, self.loss if loss is None else loss,
                       self.bias)
        return twin

    def with_labels(self, y, loss=None) -> LapSVM:
        """The same problem with other labels ``y`` for the same labeled points (and, if given,
        another margin ``loss``): K, L and every label-independent quantity are shared, not
        copied or re-validated (the c problems of a one-vs-rest multi-class fit,
        docs/design.md §7)."""
        y = check_binary_labels(y, "y", self.n)
        if y.size != self.l:
            raise InvalidInputError(f"y must label the same {self.l} points, got {y.size} "
                                    "labels.")
        twin = self._twin(y=y, loss=None if loss is None else get_margin_loss(loss))
        if "K_dense" in vars(self):  # a label-independent cache worth sharing
            object.__setattr__(twin, "K_dense", self.K_dense)
        return twin

    # ------------------------------------------------------------------ declaration
    @property
    def structure(self) -> Structure:
        sizes = {"n": self.n, "l": self.l, "u": self.n - self.l}
        if sp.issparse(self.L):
            sizes["nnz_L"] = int(self.L.nnz)
        if sp.issparse(self.K):
            sizes["nnz_K"] = int(self.K.nnz)
        return Structure(
            family=self.family,
            variant=self.variant,
            convex=True,
            smooth=self.loss.smooth,
            program_class=self.loss.program_class,
            sizes=sizes,
            sparse=sp.issparse(self.L),
        )

    @property
    def variant(self) -> str:
        name = VARIANT_NAMES.get(self.loss.name, self.loss.name)
        return f"{name}{'' if self.bias else ', no bias'}"

    @cached_property
    def laplacian_annihilates_ones(self) -> bool:
        """Whether ``L·1 = 0`` (unnormalized L): then the dual LapSVM of [000 §2.1] is exact."""
        ones = np.ones(self.n)
        return bool(np.max(np.abs(self.L @ ones)) <= 1e-10 * max(1.0, _abs_max(self.L)))

    def with_dense_kernel(self) -> LapSVM:
        """This problem with K stored as a dense array (:attr:`K_dense`): itself when it is
        one. The CVXPY reference states its program on it (an operator has no CVXPY form)."""
        if isinstance(self.K, np.ndarray):
            return self
        return self._twin(K=self.K_dense)

    # ------------------------------------------------------------------ products
    def K_dot(self, v: np.ndarray) -> np.ndarray:
        return np.asarray(self.K @ v, dtype=np.float64)

    def L_dot(self, v: np.ndarray) -> np.ndarray:
        return np.asarray(self.L @ v, dtype=np.float64)

    @property
    def kernel_is_operator(self) -> bool:
        """Whether K is a products-only ``LinearOperator`` (neither an array nor sparse)."""
        return isinstance(self.K, LinearOperator)

    @cached_property
    def K_dense(self) -> np.ndarray:
        """K as a dense array (materialized once for operator or sparse inputs: 8n² bytes).

        Only the dense solvers (Newton's reduced system, laprls-direct, the CVXPY references)
        read it; PCG, its early stopping and the certificate use products and
        :meth:`K_columns`, so a kernel operator is never densified on that path."""
        if isinstance(self.K, np.ndarray):
            return self.K
        if sp.issparse(self.K):
            return self.K.toarray()
        return self.K_columns(np.arange(self.n))

    def K_columns(self, idx) -> np.ndarray:
        """``K[:, idx]`` (n × len(idx)) without forming K.

        An operator's own ``columns(idx)`` when it has one (e.g.
        :class:`ssl_opt.operators.KernelOperator`), else products ``K @ E`` with unit columns
        ``E = I[:, idx_block]`` in blocks of :data:`COLUMN_BLOCK_BYTES` (exact: one non-zero
        per column of E)."""
        idx = np.asarray(idx, dtype=np.intp).ravel()
        if isinstance(self.K, np.ndarray):
            return self.K[:, idx]
        if "K_dense" in vars(self):
            return self.K_dense[:, idx]
        if sp.issparse(self.K):
            return self.K[:, idx].toarray()
        columns = getattr(self.K, "columns", None)
        if callable(columns):
            return np.asarray(columns(idx), dtype=np.float64).reshape(self.n, idx.size)
        out = np.empty((self.n, idx.size))
        width = max(1, COLUMN_BLOCK_BYTES // (8 * self.n))
        for start in range(0, idx.size, width):
            block = idx[start : start + width]
            E = np.zeros((self.n, block.size))
            E[block, np.arange(block.size)] = 1.0
            out[:, start : start + block.size] = np.asarray(self.K @ E, dtype=np.float64)
        return out

    def memory_for(self, solver, modeled: float) -> tuple[float, str]:
        """Selection's memory of ``solver`` on this problem, from the cost model's ``modeled``
        bytes (fitted on dense-K instances, where K is input, not extra memory).

        For a kernel operator a solver that reads only products (``kernel_access =
        "products"``: PCG) keeps ``PRODUCT_SOLVER_VECTORS`` n-vectors plus the operator's
        product workspace (``bytes_in_flight`` when it says) — its analytic
        ``predicted_memory`` when it has one; any other solver densifies K (:attr:`K_dense`):
        ``modeled + 8n²``. Returns ``(bytes, note)``; the note is empty when nothing changes."""
        if not self.kernel_is_operator or "K_dense" in vars(self):
            return modeled, ""
        access = getattr(solver, "kernel_access", "dense")
        if access == "factor":
            return float(solver.predicted_memory(self)), (
                "K is a low-rank factor ΦΦᵀ: the solver works with Φ, K never formed")
        if access == "products":
            own = float(solver.predicted_memory(self))
            if own != own:
                own = 8.0 * PRODUCT_SOLVER_VECTORS * self.n + self.kernel_workspace
            return own, "K is a products-only operator: O(n) vectors, K never formed"
        dense = 8.0 * self.n**2
        return (modeled if modeled == modeled else 0.0) + dense, (
            f"K is a products-only operator: + {dense / 2**30:.3g} GiB (8n²) for its dense copy")

    def time_for(self, solver, modeled: float, measure: bool = True) -> tuple[float, str]:
        """Selection's time of ``solver``, from the cost model's ``modeled`` seconds (fitted on
        stored dense K, whose product costs ``DENSE_PRODUCT_SECONDS·n²``). For an operator
        that predicts its own product (``product_seconds()``, a :class:`KernelOperator`:
        timed on a sample of rows when ``measure``, else its model): a
        products-only solver's time is read as iterations of a stored K's product plus
        ``ITERATION_SECONDS``, and each product is swapped for the operator's. Any other
        solver adds forming K once (the operator's ``dense_seconds()``, else one product's
        work: every kernel entry computed once). Returns ``(seconds, note)``."""
        product = getattr(self.K, "product_seconds", None) if self.kernel_is_operator else None
        access = getattr(solver, "kernel_access", "dense")
        if (product is None or "K_dense" in vars(self) or modeled != modeled
                or access == "factor"):
            return modeled, ""
        per_product = float(product(measure=measure))
        how = "timed on a sample of its rows" if measure else "predicted from its sizes"
        if access == "products":
            # The model's time is iterations × (a stored K's product + the rest of an
            # iteration): swap the product, keep the rest.
            dense = DENSE_PRODUCT_SECONDS * self.n**2
            iterations = modeled / (dense + ITERATION_SECONDS)
            ratio = per_product / dense
            return modeled + iterations * (per_product - dense), (
                f"each product costs ~{per_product:.3g} s on the operator ({how}), "
                f"{ratio:.3g}× a stored K's")
        # Forming K: the operator's own estimate (a Nyström K̃ is an n×n×r GEMM), else every
        # kernel entry computed once, about one product's work.
        dense = getattr(self.K, "dense_seconds", None)
        form = float(dense()) if callable(dense) else per_product
        return modeled + form, (f"+ ~{form:.3g} s to form K from the operator"
                                + ("" if callable(dense) else f" (one product, {how})"))

    @property
    def approximation_note(self) -> str:
        """What K approximates, when it says (a :class:`~ssl_opt.operators.NystromOperator`'s
        ``approximation_note()``): solutions and certificates carry it, so results on an
        approximate kernel are never mistaken for the exact kernel's. Empty otherwise."""
        note = getattr(self.K, "approximation_note", None) if self.kernel_is_operator else None
        return str(note()) if callable(note) else ""

    @property
    def kernel_workspace(self) -> float:
        """Bytes one product with K allocates beyond its n-vector result (an operator's
        ``bytes_in_flight`` when it declares it, else 0)."""
        work = getattr(self.K, "bytes_in_flight", 0) if self.kernel_is_operator else 0
        return float(work) if isinstance(work, (int, float, np.number)) else 0.0

    # ------------------------------------------------------------------ evaluation
    def decision_values(self, alpha: np.ndarray, b: float) -> np.ndarray:
        return self.K_dot(alpha) + (b if self.bias else 0.0)

    def objective_parts(self, alpha, b, Kalpha=None, Lf=None) -> float:
        """Objective from precomputed products (``Kα``, ``L f``) — used by solvers."""
        Kalpha = self.K_dot(alpha) if Kalpha is None else Kalpha
        f = Kalpha + (b if self.bias else 0.0)
        Lf = self.L_dot(f) if Lf is None else Lf
        loss = np.sum(self.loss.value(self.y * f[: self.l]))
        return 0.5 * (loss + self.gamma_A * alpha @ Kalpha + self.gamma_I * f @ Lf)

    def objective(self, x) -> float:
        """The model's objective, from one product by K (:meth:`objective_parts`)."""
        v = self.unpack(x)
        return float(self.objective_parts(v["alpha"], float(v["b"]) if self.bias else 0.0))

    def preconditioned_gradient(self, alpha, f, Lf) -> tuple[np.ndarray, float]:
        """``(v, ∇_b J)`` at ``f = Kα + b`` given ``L f``; ``∇_α J = K v`` (smooth φ only)."""
        r = np.zeros(self.n)
        r[: self.l] = 0.5 * self.y * self.loss.derivative(self.y * f[: self.l])
        r += self.gamma_I * Lf
        g_b = float(np.sum(r)) if self.bias else 0.0
        r += self.gamma_A * alpha
        return r, g_b

    @cached_property
    def entry_scales(self) -> tuple[float, float]:
        """``(max|K|, max|L|)``: the round-off scale of the solvers' curvature test
        (``plugins/manifold/iterates.py``). For a kernel operator ``max|diag K|`` when it
        offers ``diagonal()`` (for a PSD K, ``|K_ij| ≤ √(K_ii K_jj)``, so it is max|K|), else 0
        (the test then scales by ``‖d‖‖Kd‖`` only)."""
        k_scale = _operator_scale(self.K) if self.kernel_is_operator else _abs_max(self.K)
        return k_scale, _abs_max(self.L)

    @cached_property
    def conditioning(self) -> Conditioning:
        """The spectrum PCG's preconditioned Hessian spans, by a few Lanczos steps (one K and
        one L product each; :mod:`~ssl_opt.problems.manifold.conditioning`): selection predicts
        PCG's iterations from it. Measured once per problem."""
        return preconditioned_spectrum(self)

    @cached_property
    def gradient_scale(self) -> float:
        """``max(1, ‖∇J(0, 0)‖)``: the paper solvers (Newton, PCG) stop on the gradient norm
        relative to this."""
        d0 = -1.0  # the hinge's slope at 0, for a loss that offers no subgradient
        if "subgradient" in self.loss.capabilities:
            d0 = float(self.loss.subgradient_interval(np.zeros(1))[0][0])
        r = np.zeros(self.n)
        r[: self.l] = 0.5 * self.y * d0
        g = self.K_dot(r)
        g_b = np.sum(r) if self.bias else 0.0
        return float(max(1.0, np.sqrt(g @ g + g_b**2)))


class LapRLS(LapSVM):
    """Laplacian RLS [000 §5]: the squared loss ``(y_i − f_i)²`` in the same scaling."""

    def __init__(self, K, L, y, gamma_A, gamma_I, bias=True):
        super().__init__(K, L, y, gamma_A, gamma_I, loss=Square(), bias=bias)


def _as_kernel(K):
    if isinstance(K, LinearOperator):
        reject_complex(K, "K")
        if K.shape[0] != K.shape[1]:
            raise InvalidInputError(f"K must be square, got operator shape {K.shape}.")
        rng = np.random.default_rng(0)
        u, w = rng.standard_normal((2, K.shape[0]))
        Kw, Ku = K @ w, K @ u
        lhs, rhs = u @ Kw, w @ Ku
        # Round-off of the operator's own precision (float32 tiles of a KernelOperator:
        # ~1e-7 per entry) relative to the products' size, not to the possibly cancelling uᵀKw.
        eps = np.finfo(getattr(K, "block_dtype", np.float64)).eps
        tol = max(1e-8, 100 * eps) * max(1.0, float(np.linalg.norm(u) * np.linalg.norm(Kw)))
        if not np.isfinite(lhs) or abs(lhs - rhs) > tol:
            raise InvalidInputError("K (operator) must be symmetric and finite: uᵀKw ≠ wᵀKu.")
        return K
    K = as_float_matrix(K, "K")
    check_square(K, "K")
    check_symmetric(K, "K")
    return sp.csr_matrix(K) if sp.issparse(K) else K


def _check_convex(K, L, n: int) -> None:
    """Refuse an indefinite K or L (the objective would be non-convex) where a dense eigenvalue
    solve is cheap. Above :data:`PSD_DENSE_MAX_N` Lanczos on a kernel's cluster of near-zero
    eigenvalues can cost far more than the solve, so the check is left to the solvers' curvature
    test (``check_curvature`` in plugins/manifold/iterates.py)."""
    if n > PSD_DENSE_MAX_N:
        return
    if not isinstance(K, LinearOperator):
        check_psd(K, "K")
    check_psd(L, "L")


def _operator_scale(K) -> float:
    """``max|diag K|`` of an operator offering ``diagonal()`` (= max|K_ij| for a PSD K), else 0."""
    diagonal = getattr(K, "diagonal", None)
    if not callable(diagonal):
        return 0.0
    try:
        d = np.asarray(diagonal(), dtype=np.float64)
    except (NotImplementedError, TypeError, ValueError):
        return 0.0
    d = d[np.isfinite(d)]
    return float(np.max(np.abs(d))) if d.size else 0.0


def _abs_max(M) -> float:
    """``max|M|`` without an n×n temporary (the dense path reads M twice instead)."""
    if sp.issparse(M):
        return float(abs(M).max()) if M.nnz else 0.0
    return float(max(M.max(), -M.min())) if M.size else 0.0
