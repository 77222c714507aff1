r"""Linear semi-supervised SVMs: L2-SVM, TSVM and DA S3VM [001], docs/design.md §4.2.

``l2(z) = max(0, 1 − z)²``, the :class:`~ssl_opt.components.SquaredHinge` every problem here
stores as ``loss``; ``X̃ = [X, 1]`` when ``bias=True`` (the bias is the last weight and
is regularized, as in SVMlin); outputs ``o = X̃ w``.

* :class:`LinearSVM`  ``J(w) = λ/2‖w‖² + ½ Σ_i c_i l2(y_i o_i)``                       [001 eq. 2]
* :class:`TSVM`       ``λ/2‖w‖² + 1/(2l) Σ_{i≤l} l2(y_i o_i) + λ'/(2u) Σ_{j>l} l2(ŷ_j o_j)``,
  ``ŷ ∈ {±1}ᵘ`` with ``round(r·u)`` positives                                          [001 §3.1]
* :class:`DAS3VM`     ``λ/2‖w‖² + 1/(2l) Σ l2(y_i o_i)
  + λ'/(2u) Σ_j [p_j l2(o_j) + (1−p_j) l2(−o_j)]
  + T/(2u) Σ_j [p_j log p_j + (1−p_j) log(1−p_j)]``, ``mean(p) = r``                  [001 eq. 6–7]

TSVM and DA are non-convex: their certificates check the convex inner problem (labels or ``p``
fixed, a :class:`LinearSVM`), block optimality of the labels / ``p``, and balance.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import scipy.sparse.linalg as spla
from scipy.optimize import brentq
from scipy.special import expit, xlogy

from ssl_opt._validation import (
    as_float_array,
    check_binary_labels,
    check_bool,
    check_nonnegative,
    check_positive,
    optional,
)
from ssl_opt.components import MarginLoss, SquaredHinge
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.modeling.expressions import Variable, matmul
from ssl_opt.modeling.model import Model
from ssl_opt.modeling.terms import MarginLossTerm, Ridge
from ssl_opt.modeling.transductive import Transductive, TransductiveModel
from ssl_opt.numerics.design import LinearDesign, is_dask_array
from ssl_opt.problems.base import Structure
from ssl_opt.solvers import Option

#: The L2 loss of the whole family [001 eq. 2]: MFN's CGLS steps and break-point line search
#: are written for it.
L2_LOSS: MarginLoss = SquaredHinge()


#: n-vectors a linear solver keeps on the client when X is distributed (outputs, CGLS's z,
#: labels, costs, temporaries).
CLIENT_VECTORS = 12


def as_design(X, bias: bool) -> LinearDesign:
    """``X`` itself when it is a design already (shared, with its own bias), a
    :class:`~ssl_opt.operators.DaskDesign` on the default ``distributed.Client`` for a dask
    array, otherwise ``LinearDesign(X, bias)``."""
    if isinstance(X, LinearDesign):
        return X
    if is_dask_array(X):
        from ssl_opt.operators.distributed import DaskDesign

        return DaskDesign(X, bias)
    return LinearDesign(X, bias)


class _DesignCosts:
    """Selection's corrections for a design whose rows are not in this process (a
    :class:`~ssl_opt.operators.DaskDesign`): the cost models were fitted in memory."""

    def time_for(self, solver, modeled: float, measure: bool = True) -> tuple[float, str]:
        """A product-bound solver's time scales by the ratio of the design's product pair to
        the same pair in memory (synchronizations included; modeled either way:
        ``measure`` is the common signature's). Returns ``(seconds, note)``."""
        design = self.design
        if design.in_memory or modeled != modeled:
            return modeled, ""
        local = LinearDesign.product_seconds(design)
        pair = float(design.product_seconds())
        ratio = pair / local
        return modeled * ratio, (
            f"X on {design.n_blocks} dask row blocks: a product pair ~{pair:.3g} s, "
            f"{ratio:.3g}× in memory ({1e3 * design.sync_seconds:.3g} ms per synchronization)")

    def memory_for(self, solver, modeled: float) -> tuple[float, str]:
        """X and the active-row copies live on the workers: the client holds
        ``CLIENT_VECTORS`` n-vectors. Returns ``(bytes, note)``."""
        design = self.design
        if design.in_memory:
            return modeled, ""
        return 8.0 * CLIENT_VECTORS * design.n, (
            "X on the workers: the client holds O(n) vectors")


class LinearSVM(_DesignCosts, Model):
    """L2-SVM ``J(w) = λ/2‖w‖² + ½ Σ_i c_i max(0, 1 − y_i w̃ᵀx̃_i)²`` [001 eq. 2].

    A named model (docs/design.md §2a): ``MarginLossTerm(X̃ @ w, y, SquaredHinge(), ½,
    sample_weight=c) + Ridge(w, λ/2)`` in the one variable ``w`` (the bias last), so its
    certificate (``stationarity``, from the terms), its CVXPY reference and the generic solvers
    are the model's; ``mfn`` reads the design. ``X̃ @ w`` is ``X @ w[:d] + 1 w[d]`` (X is never
    copied), or products through the design when X is distributed.

    Parameters
    ----------
    X : (n, d) array or sparse matrix (CSR preferred; never densified), a dask array (rows
        kept on the workers of the default ``distributed.Client``:
        :class:`~ssl_opt.operators.DaskDesign`) or a prebuilt design (shared)
        The first ``len(y)`` rows are the training rows (extra rows are ignored).
    y : (l,) array of ±1
    lam : float > 0
        λ, which also regularizes the bias.
    cost : (l,) array of non-negative weights ``c_i`` (default 1)
    bias : bool
        Append a constant feature 1 (``w`` then has ``d + 1`` entries, the bias last).
    """

    family = "linear"
    residual_tolerances = {"stationarity": "stationarity"}  # unconstrained: no feasibility
    loss = L2_LOSS

    def __init__(self, X, y, lam, cost=None, bias=True):
        bias = check_bool(bias, "bias")
        design = as_design(X, bias)
        y = check_binary_labels(y, "y", design.n)
        if design.n > y.size:
            design = design.rows(slice(0, y.size))
        self.design = design
        self.y = y
        self.lam = check_positive(lam, "lam")
        self.cost = self._check_cost(cost, y.size)
        self.bias = design.bias
        self.l = y.size
        w = Variable("w", (design.dim,))
        f = design_outputs(design, w)
        weights = None if np.all(self.cost == 1.0) else self.cost
        super().__init__([MarginLossTerm(f, y, self.loss, 0.5, sample_weight=weights),
                          Ridge(w, 0.5 * self.lam)],
                         prediction=f, name="linear-svm", unique_prediction=True)

    @staticmethod
    def _check_cost(cost, l: int) -> np.ndarray:
        if cost is None:
            return np.ones(l)
        try:
            c = as_float_array(cost, "cost")
        except InvalidInputError as exc:
            if exc.__cause__ is None:
                raise
            raise InvalidInputError(f"cost must be a vector of weights: {exc.__cause__}") from exc
        if c.shape != (l,):
            raise InvalidInputError(f"cost must have shape ({l},) like y, got {c.shape}.")
        if not np.all(np.isfinite(c)) or np.any(c < 0):
            raise InvalidInputError("cost must hold finite non-negative weights c_i >= 0.")
        return c

    @property
    def structure(self) -> Structure:
        sizes = {"n": self.l, "l": self.l, "d": self.design.d, "nnz": self.design.nnz}
        return Structure(self.family, "l2svm", True, True, self.loss.program_class, sizes,
                         self.design.sparse)

    def outputs(self, w: np.ndarray) -> np.ndarray:
        return self.design.matvec(w)


def design_outputs(design: LinearDesign, w: Variable):
    """``X̃ @ w`` as an expression: ``X @ w[:d] (+ 1 w[d])`` on X in memory, products through the
    design (a :class:`~scipy.sparse.linalg.LinearOperator`, no CVXPY form) when it is not."""
    if not design.in_memory:
        return matmul(spla.LinearOperator((design.n, design.dim), matvec=design.matvec,
                                          rmatvec=design.rmatvec, dtype=np.float64), w)
    if not design.bias:
        return matmul(design.X, w)
    return matmul(design.X, w[: design.d]) + matmul(np.ones((design.n, 1)), w[design.d:])


def _transductive_data(problem: Transductive, X, y, lam, lam_u, r, bias) -> None:
    """TSVM's and DA's data [001 §3]: the design with its bias (a prebuilt design is shared,
    not copied: the one-vs-rest problems of a multi-class fit all read the same rows), the
    squared hinge and the ridge ``λ/2‖w̃‖²`` on the one weight vector ``w̃`` (bias last)."""
    bias = check_bool(bias, "bias")
    design = as_design(X, bias)
    problem._set_data(design, y, lam_u, r, "use LinearSVM")
    problem.lam = check_positive(lam, "lam")
    problem.bias = design.bias
    problem.loss = L2_LOSS
    w = Variable("w", (design.dim,))
    problem._set_weights(w, None, [Ridge(w, 0.5 * problem.lam)], [], design_outputs(design, w))
    problem._freeze()


class TSVM(_DesignCosts, TransductiveModel):
    """Transductive L2-SVM over ``(w, ŷ)`` with ``round(r·u)`` positive ``ŷ`` [001 §3.1].

    A named transductive model (docs/design.md §2a): the :class:`TransductiveModel` with the
    squared hinge and the ridge ``λ/2‖w̃‖²`` on ``w̃ = (w, b)`` (the bias a regularized
    constant feature), so its certificate (the inner :class:`LinearSVM`'s model certificate,
    ``switch_gain``, ``balance``, ``integrality``) and the ``tsvm-model`` solver are the
    transductive model's; ``tsvm`` runs the paper's switching on MFN directly.

    Parameters
    ----------
    X : (n, d) array, sparse matrix, dask array (:class:`~ssl_opt.operators.DaskDesign`) or
        prebuilt design; the first ``len(y)`` rows are labeled
    y : (l,) ±1 labels
    lam, lam_u : λ > 0 and λ' ≥ 0
    r : fraction of positive unlabeled rows (default: the labeled positive fraction)
    bias : append a regularized constant feature

    Variables: ``w`` (d+1 with bias) and ``y_u`` (u,) in {±1}.
    """

    family = "linear"
    name = "tsvm"
    residual_tolerances = {"stationarity": "stationarity", "switch_gain": "stationarity",
                           "balance": "feasibility", "integrality": "feasibility"}  # no constraint

    def __init__(self, X, y, lam, lam_u, r=None, bias=True):
        _transductive_data(self, X, y, lam, lam_u, r, bias)

    @property
    def structure(self) -> Structure:
        return Structure(self.family, "tsvm", False, False, "mixed-integer QP", self.sizes,
                         self.design.sparse)

    def inner_model(self, y_u: np.ndarray, lam_u: float | None = None) -> LinearSVM:
        """The convex L2-SVM with the labels ``ŷ`` fixed: costs ``1/l`` on the labeled rows and
        ``λ'/u`` on the unlabeled ones (``λ'`` the problem's unless given)."""
        lam_u = self.lam_u if lam_u is None else float(lam_u)
        cost = np.concatenate([np.full(self.l, 1.0 / self.l), np.full(self.u, lam_u / self.u)])
        return LinearSVM(self.design, np.concatenate([self.y, y_u]), self.lam, cost, self.bias)


class DAS3VM(_DesignCosts, Transductive):
    """Deterministic-annealing semi-supervised SVM over ``(w, p)`` [001 §3.2, eq. 6–7].

    TSVM's data (:class:`Transductive`: squared hinge, ridge ``λ/2‖w̃‖²``) with the labels
    relaxed to probabilities ``p``. :meth:`objective` is the annealing target (``T = 0``: the
    expected TSVM loss under ``p``, which is the TSVM objective at binary ``p``);
    :meth:`annealing_objective` adds the entropy term at a temperature ``T``. A solution from
    the ``da`` solver records the temperature of its last stage as ``x["T"]``; :meth:`kkt`
    checks the closed form of ``p`` at that ``T``.
    """

    family = "linear"
    kkt_options = {"T": Option(None, "temperature of the closed form of p (default: the "
                                      "solution's x['T'])", optional(check_nonnegative))}
    residual_tolerances = {"stationarity": "stationarity", "p_optimality": "stationarity",
                           "balance": "feasibility", "p_bounds": "feasibility"}

    def __init__(self, X, y, lam, lam_u, r=None, bias=True):
        _transductive_data(self, X, y, lam, lam_u, r, bias)

    @property
    def variables(self) -> dict[str, tuple[int, ...]]:
        return {"w": (self.design.dim,), "p": (self.u,)}

    @property
    def structure(self) -> Structure:
        return Structure(self.family, "da", False, True, "non-convex", self.sizes,
                         self.design.sparse)

    def unlabeled_loss(self, p, o_u) -> float:
        """``λ'/(2u) Σ_j [p_j l2(o_j) + (1 − p_j) l2(−o_j)]``."""
        phi = self.loss.value
        return float(self.lam_u * (p @ phi(o_u) + (1 - p) @ phi(-o_u)) / (2 * self.u))

    def objective(self, x) -> float:
        v = self.unpack(x)
        o = self.outputs(v)
        return self.labeled_cost(v, o) + self.unlabeled_loss(v["p"], o[self.l:])

    def loss_difference(self, o_u: np.ndarray) -> np.ndarray:
        """``l2(o_j) − l2(−o_j)``, the loss change of an unlabeled row relabeled from −1 to +1
        (``−``:meth:`switch_gain`): ``∂J/∂p_j`` is ``λ'/(2u)`` times it [001 eq. 9]."""
        return -self.switch_gain(o_u)

    def gradient(self, x) -> dict[str, np.ndarray]:
        """The gradient of :meth:`objective` (``T = 0``, any real ``p``) [001 eq. 7]:
        ``∂J/∂w = λw + X̃ᵀv`` with ``v_i = −y_i (1 − y_i o_i)₊ / l`` on the labeled rows and
        ``v_j = λ'/u [−p_j (1 − o_j)₊ + (1 − p_j)(1 + o_j)₊]`` on the unlabeled ones;
        ``∂J/∂p_j = λ'/(2u) [l2(o_j) − l2(−o_j)]``."""
        v = self.unpack(x)
        w, p = v["w"], v["p"]
        o = self.outputs(v)
        o_l, o_u = o[: self.l], o[self.l:]
        c = self.lam_u / self.u
        v_o = np.concatenate([-self.y * np.maximum(0.0, 1.0 - self.y * o_l) / self.l,
                              c * (-p * np.maximum(0.0, 1.0 - o_u)
                                   + (1 - p) * np.maximum(0.0, 1.0 + o_u))])
        return {"w": self.lam * w + self.design.rmatvec(v_o),
                "p": 0.5 * c * self.loss_difference(o_u)}

    def annealing_objective(self, x, T: float) -> float:
        """Eq. 6 at temperature ``T`` (entropy term included)."""
        p = self.unpack(x)["p"]
        entropy = xlogy(p, p) + xlogy(1 - p, 1 - p)
        return self.objective(x) + float(T) * float(entropy.sum()) / (2 * self.u)

    def unlabeled_costs(self, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Costs ``λ'p_j/u`` and ``λ'(1−p_j)/u`` of each unlabeled row as +1 and −1 [001 eq. 8]."""
        return self.lam_u * p / self.u, self.lam_u * (1 - p) / self.u

    def inner_problem(self, x) -> LinearSVM:
        """The convex L2-SVM with ``p`` fixed: labeled rows, then every unlabeled row twice."""
        p = np.clip(self.unpack(x)["p"], 0.0, 1.0)
        idx_l, idx_u = np.arange(self.l), np.arange(self.l, self.n)
        design = self.design.stacked([idx_l, idx_u, idx_u])
        labels = np.concatenate([self.y, np.ones(self.u), -np.ones(self.u)])
        c_pos, c_neg = self.unlabeled_costs(p)
        cost = np.concatenate([np.full(self.l, 1.0 / self.l), c_pos, c_neg])
        return LinearSVM(design, labels, self.lam, cost, self.bias)

    def closed_form_p(self, o_u: np.ndarray, T: float) -> np.ndarray:
        """``p_j = 1/(1 + exp((g_j − 2ν)/T))``, ``g_j = λ'[l2(o_j) − l2(−o_j)]``, with ν from
        ``mean(p) = r`` by Brent's method [001 eq. 9] (the ``da`` solver has its own root finder;
        this one is the independent check)."""
        g = self.lam_u * self.loss_difference(o_u)
        logit_r = np.log(self.r / (1 - self.r))
        lo, hi = g.min() + T * logit_r, g.max() + T * logit_r

        def balance(s):
            return float(np.mean(expit((s - g) / T))) - self.r

        if hi - lo <= 0:
            return np.full(self.u, self.r)
        s = brentq(balance, lo, hi, xtol=1e-14 * max(1.0, abs(hi)), rtol=1e-15, maxiter=500)
        return expit((s - g) / T)

    @staticmethod
    def temperature_of(x) -> float | None:
        values = getattr(x, "x", x)
        if isinstance(values, Mapping) and "T" in values:
            return float(np.asarray(values["T"]))
        return None

    def _kkt(self, x, T: float | None) -> dict[str, float]:
        """``stationarity`` of ``w`` for fixed ``p`` (the model certificate of
        :meth:`inner_problem`); ``p_optimality``: ``max|p − p*(w)|`` with the closed form at
        temperature ``T`` (from ``x["T"]`` unless given), or at ``T = 0`` the relative gap of
        the linear program ``min_p Σ p_j g_j`` over the balanced box; ``balance``:
        ``|mean(p) − r|``; ``p_bounds``: distance of ``p`` outside [0, 1]."""
        v = self.unpack(x)
        w, p = v["w"], v["p"]
        if not (np.all(np.isfinite(w)) and np.all(np.isfinite(p))):
            return {"stationarity": float("inf")}
        T = self.temperature_of(x) if T is None else float(T)
        o_u = self.outputs(v)[self.l:]
        stat = self.inner_problem(v).kkt({"w": w})["stationarity"]
        if T is not None and T > 0:
            p_opt = float(np.max(np.abs(p - self.closed_form_p(o_u, T))))
        else:
            g = self.loss_difference(o_u)
            q = _lp_vertex(g, self.r * self.u)
            gap = 0.5 * self.lam_u / self.u * float(g @ (p - q))
            p_opt = max(0.0, gap) / max(1.0, abs(self.objective(v)))
        return {
            "stationarity": stat,
            "p_optimality": p_opt,
            "balance": abs(float(p.mean()) - self.r),
            "p_bounds": float(max(0.0, -p.min(), p.max() - 1.0)),
        }


def _lp_vertex(g: np.ndarray, mass: float) -> np.ndarray:
    """``argmin Σ q_j g_j`` over ``q ∈ [0,1]ᵘ``, ``Σ q = mass``: the smallest ``g`` get 1."""
    q = np.zeros(g.size)
    order = np.argsort(g, kind="stable")
    full = int(np.floor(mass))
    q[order[:full]] = 1.0
    if full < g.size:
        q[order[full]] = mass - full
    return q


__all__ = ["DAS3VM", "L2_LOSS", "LinearSVM", "TSVM"]
