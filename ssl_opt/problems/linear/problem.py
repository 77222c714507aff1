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

import numbers
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
from ssl_opt.problems.base import NonConvexProblem, Structure
from ssl_opt.problems.linear.design import LinearDesign, is_dask_array
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

    def time_for(self, solver, modeled: float) -> tuple[float, str]:
        """A product-bound solver's time scales by the ratio of the design's product pair to
        the same pair in memory (synchronizations included). Returns ``(seconds, note)``."""
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

    def as_model(self) -> LinearSVM:
        """This problem as a :class:`~ssl_opt.modeling.Model`: itself (a named model)."""
        return self

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


class _Transductive(_DesignCosts, NonConvexProblem):
    """Shared data of TSVM and DA: the first ``l = len(y)`` rows labeled, ``u = n − l`` not."""

    family = "linear"
    loss = L2_LOSS

    def __init__(self, X, y, lam, lam_u, r=None, bias=True):
        # A prebuilt LinearDesign (with its own bias) is shared, not copied: the one-vs-rest
        # problems of a multi-class fit all read the same rows.
        bias = check_bool(bias, "bias")
        design = as_design(X, bias)
        y = check_binary_labels(y, "y", design.n)
        if y.size == design.n:
            raise InvalidInputError(
                f"X has {design.n} rows and y {y.size} labels: there are no unlabeled rows. "
                "Append the unlabeled rows after the labeled ones, or use LinearSVM."
            )
        self.design = design
        self.y = y
        self.lam = check_positive(lam, "lam")
        self.lam_u = check_nonnegative(lam_u, "lam_u")
        self.l = y.size
        self.u = design.n - y.size
        self.n = design.n
        self.bias = design.bias
        if r is None:
            r = float(np.mean(y > 0))
        elif isinstance(r, bool) or not isinstance(r, numbers.Real) or not 0 < float(r) < 1:
            raise InvalidInputError(
                f"r (fraction of positive unlabeled rows) must be in (0, 1), got {r!r}."
            )
        self.r = float(r)
        self.n_pos = int(round(self.r * self.u))
        self._freeze()

    @property
    def sizes(self) -> dict[str, int]:
        return {"n": self.n, "l": self.l, "u": self.u, "d": self.design.d,
                "nnz": self.design.nnz}

    @property
    def unique_prediction(self) -> bool:
        return False

    def outputs(self, w: np.ndarray) -> np.ndarray:
        return self.design.matvec(w)

    def labeled_cost(self, w: np.ndarray, o: np.ndarray) -> float:
        """``λ/2‖w‖² + 1/(2l) Σ_{i≤l} l2(y_i o_i)``."""
        return float(0.5 * self.lam * w @ w
                     + self.loss.value(self.y * o[: self.l]).sum() / (2 * self.l))

    def switch_gain(self, o: np.ndarray) -> np.ndarray:
        """``l2(−o) − l2(o)``: the loss change of an unlabeled point relabeled from +1 to −1.

        Strictly increasing in ``o``, so relabeling a positive ``i`` and a negative ``j`` lowers
        the loss exactly when ``o_i < o_j`` [001 §3.1.2].
        """
        return self.loss.value(-o) - self.loss.value(o)

    def balanced_labels(self, o_u: np.ndarray) -> np.ndarray:
        """The ``n_pos`` largest outputs labeled +1, the rest −1: for fixed ``w`` this labeling
        minimizes the TSVM objective among balanced ones (:meth:`switch_gain` is monotone)."""
        labels = -np.ones(self.u)
        labels[np.argsort(-o_u, kind="stable")[: self.n_pos]] = 1.0
        return labels

    def tsvm_objective(self, w: np.ndarray) -> float:
        """The TSVM objective at ``w`` with its best balanced labeling (comparable across TSVM,
        DA and SVMlin)."""
        o = self.outputs(w)
        y_u = self.balanced_labels(o[self.l:])
        return self.labeled_cost(w, o) + self.lam_u * self.loss.value(y_u * o[self.l:]).sum() / (
            2 * self.u)

    def prediction(self, x) -> np.ndarray:
        return self.outputs(self.unpack(x)["w"])

    def _loss_gradient(self, o, v_u) -> np.ndarray:
        """``X̃ᵀv`` with ``v = ∂J/∂o``: ``−y_i (1 − y_i o_i)₊ / l`` on the labeled rows and the
        given unlabeled part ``v_u`` (the loss's part of ``∂J/∂w = λw + X̃ᵀv``)."""
        y_l = self.y
        v = np.concatenate([-y_l * np.maximum(0.0, 1.0 - y_l * o[: self.l]) / self.l, v_u])
        return self.design.rmatvec(v)

    def _inner_stationarity(self, w, o, v_u) -> float:
        """The stationarity of the inner :class:`LinearSVM` (labels or ``p`` fixed) as its
        model certificate measures it: ``‖λw + X̃ᵀv‖∞ / max(1, ‖λw‖∞, ‖X̃ᵀv‖∞)``, the gradient
        over the largest gradient of its two terms (the loss and the ridge)."""
        loss_part, ridge_part = self._loss_gradient(o, v_u), self.lam * w
        scale = max(1.0, float(np.max(np.abs(loss_part))), float(np.max(np.abs(ridge_part))))
        return float(np.max(np.abs(loss_part + ridge_part))) / scale


class TSVM(_Transductive):
    """Transductive L2-SVM over ``(w, ŷ)`` with ``round(r·u)`` positive ``ŷ`` [001 §3.1].

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

    residual_tolerances = {"stationarity": "stationarity", "switch_gain": "stationarity",
                           "balance": "feasibility", "integrality": "feasibility"}

    @property
    def variables(self) -> dict[str, tuple[int, ...]]:
        return {"w": (self.design.dim,), "y_u": (self.u,)}

    @property
    def structure(self) -> Structure:
        return Structure(self.family, "tsvm", False, False, "mixed-integer QP", self.sizes,
                         self.design.sparse)

    def objective(self, x) -> float:
        v = self.unpack(x)
        w, y_u = v["w"], v["y_u"]
        o = self.outputs(w)
        return self.labeled_cost(w, o) + self.lam_u * self.loss.value(y_u * o[self.l:]).sum() / (
            2 * self.u)

    def inner_problem(self, x) -> LinearSVM:
        """The convex L2-SVM with the labels ``ŷ`` of ``x`` fixed (costs 1/l and λ'/u)."""
        y_u = np.sign(self.unpack(x)["y_u"])
        cost = np.concatenate([np.full(self.l, 1.0 / self.l), np.full(self.u, self.lam_u / self.u)])
        return LinearSVM(self.design, np.concatenate([self.y, y_u]), self.lam, cost, self.bias)

    def _kkt(self, x) -> dict[str, float]:
        """``stationarity`` of ``w`` for the labels (the model certificate of
        :meth:`inner_problem`, a view of it); ``switch_gain``: the objective decrease of the
        best label-pair switch at fixed ``w`` relative to ``max(1, J)`` (0: no improving pair);
        ``balance``: ``|#positives − round(r·u)| / u``; ``integrality``: ``max ||ŷ| − 1|``."""
        v = self.unpack(x)
        w, y_u = v["w"], v["y_u"]
        if not (np.all(np.isfinite(w)) and np.all(np.isfinite(y_u))):
            return {"stationarity": float("inf")}
        o = self.outputs(w)
        o_u = o[self.l:]
        c_u = self.lam_u / self.u
        v_u = -c_u * y_u * np.maximum(0.0, 1.0 - y_u * o_u)
        stat = self._inner_stationarity(w, o, v_u)
        pos, neg = y_u > 0, y_u < 0
        gain = 0.0
        if pos.any() and neg.any():
            best = self.switch_gain(np.array([o_u[pos].min()]))[0]
            worst = self.switch_gain(np.array([o_u[neg].max()]))[0]
            gain = max(0.0, 0.5 * c_u * (worst - best))
        scale = max(1.0, abs(self.objective(v)))
        return {
            "stationarity": stat,
            "switch_gain": gain / scale,
            "balance": abs(int(pos.sum()) - self.n_pos) / self.u,
            "integrality": float(np.max(np.abs(np.abs(y_u) - 1.0))),
        }


class DAS3VM(_Transductive):
    """Deterministic-annealing semi-supervised SVM over ``(w, p)`` [001 §3.2, eq. 6–7].

    :meth:`objective` is the annealing target (``T = 0``: the expected TSVM loss under ``p``,
    which is the TSVM objective at binary ``p``); :meth:`annealing_objective` adds the entropy
    term at a temperature ``T``. A solution from the ``da`` solver records the temperature of
    its last stage as ``x["T"]``; :meth:`kkt` checks the closed form of ``p`` at that ``T``.
    """

    kkt_options = {"T": Option(None, "temperature of the closed form of p (default: the "
                                      "solution's x['T'])", optional(check_nonnegative))}
    residual_tolerances = {"stationarity": "stationarity", "p_optimality": "stationarity",
                           "balance": "feasibility", "p_bounds": "feasibility"}

    @property
    def variables(self) -> dict[str, tuple[int, ...]]:
        return {"w": (self.design.dim,), "p": (self.u,)}

    @property
    def structure(self) -> Structure:
        return Structure(self.family, "da", False, True, "non-convex", self.sizes,
                         self.design.sparse)

    def _unlabeled_loss(self, p, o_u) -> float:
        phi = self.loss.value
        return float(self.lam_u * (p @ phi(o_u) + (1 - p) @ phi(-o_u)) / (2 * self.u))

    def objective(self, x) -> float:
        v = self.unpack(x)
        w, p = v["w"], v["p"]
        o = self.outputs(w)
        return self.labeled_cost(w, o) + self._unlabeled_loss(p, o[self.l:])

    def unlabeled_output_gradient(self, p: np.ndarray, o_u: np.ndarray) -> np.ndarray:
        """``∂J/∂o_j = λ'/u [−p_j (1 − o_j)₊ + (1 − p_j)(1 + o_j)₊]`` of the unlabeled loss."""
        c = self.lam_u / self.u
        return c * (-p * np.maximum(0.0, 1.0 - o_u) + (1 - p) * np.maximum(0.0, 1.0 + o_u))

    def loss_difference(self, o_u: np.ndarray) -> np.ndarray:
        """``l2(o_j) − l2(−o_j)``, the loss change of an unlabeled row relabeled from −1 to +1
        (``−``:meth:`switch_gain`): ``∂J/∂p_j`` is ``λ'/(2u)`` times it [001 eq. 9]."""
        return -self.switch_gain(o_u)

    def gradient(self, x) -> dict[str, np.ndarray]:
        """The gradient of :meth:`objective` (``T = 0``) [001 eq. 7]:
        ``∂J/∂w = λw + X̃ᵀ ∂J/∂o`` and ``∂J/∂p_j = λ'/(2u) [l2(o_j) − l2(−o_j)]``."""
        v = self.unpack(x)
        w, p = v["w"], v["p"]
        o = self.outputs(w)
        o_u = o[self.l:]
        c = self.lam_u / self.u
        return {"w": self.lam * w + self._loss_gradient(o, self.unlabeled_output_gradient(p, o_u)),
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
        :meth:`inner_problem`, a view of it); ``p_optimality``: ``max|p − p*(w)|`` with the
        closed form at temperature ``T`` (from ``x["T"]`` unless given), or at ``T = 0`` the
        relative gap of the linear program ``min_p Σ p_j g_j`` over the balanced box;
        ``balance``: ``|mean(p) − r|``; ``p_bounds``: distance of ``p`` outside [0, 1]."""
        v = self.unpack(x)
        w, p = v["w"], v["p"]
        if not (np.all(np.isfinite(w)) and np.all(np.isfinite(p))):
            return {"stationarity": float("inf")}
        T = self.temperature_of(x) if T is None else float(T)
        o = self.outputs(w)
        o_u = o[self.l:]
        c = self.lam_u / self.u
        v_u = self.unlabeled_output_gradient(p, o_u)
        stat = self._inner_stationarity(w, o, v_u)
        if T is not None and T > 0:
            p_opt = float(np.max(np.abs(p - self.closed_form_p(o_u, T))))
        else:
            g = self.loss_difference(o_u)
            q = _lp_vertex(g, self.r * self.u)
            gap = 0.5 * c * float(g @ (p - q))
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
