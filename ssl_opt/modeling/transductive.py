r"""Transductive linear models with any margin loss and any convex penalty on the weights
(docs/design.md §4.2 and §6): the TSVM of [001 §3.1] with the loss φ and the penalty open.

Outputs ``o = X w + b`` (X dense or sparse, never densified), the first ``l = len(y)`` rows
labeled and the other ``u`` not::

    J(w, b, ŷ) = P(w) [+ P(b)] + 1/(2l) Σ_{i≤l} φ(y_i o_i) + λ'/(2u) Σ_{j>l} φ(ŷ_j o_j)

over ``w``, ``b`` and ``ŷ ∈ {±1}ᵘ`` with ``round(r·u)`` positives. ``φ`` is a
:class:`~ssl_opt.components.MarginLoss`; the penalty ``P`` is a callable returning
modelling-layer terms (or constraints) on the variable it is given. The bias follows TSVM's
convention by default (``bias=True``, docs/design.md §4.2): it is the weight of a constant
feature, so the penalty applies to it too — ``P(w) + P(b)``, exact for every separable penalty
(ridge, ℓ1, elastic net); ``bias="free"`` leaves it unpenalized, ``bias=False`` drops it::

    # TSVM exactly (same objective at w̃ = (w, b)): the squared hinge with Ridge(λ/2)
    TransductiveModel(X, y, lam_u, penalties=lambda v: Ridge(v, lam / 2))
    # Huber hinge, elastic net on w, free bias
    model = TransductiveModel(X, y, lam_u=1.0, loss="huber_hinge", bias="free",
                              penalties=lambda v: ElasticNet(v, 1e-3, 1e-2))
    sol = ssl_opt.solve(model, solver="tsvm-model")

For fixed ``ŷ`` the problem is the convex :class:`~ssl_opt.modeling.Model`
(:meth:`TransductiveModel.inner_problem`) ``P + MarginLossTerm(o_L, y, φ, 1/(2l)) +
MarginLossTerm(o_U, ŷ, φ, λ'/(2u))``, which the model solvers solve and the CVXPY reference
certifies; with the squared hinge and a ridge it lowers to an L2-SVM (MFN). For fixed ``w, b``
relabeling an unlabeled positive ``i`` and negative ``j`` changes ``J`` by
``λ'/(2u) [g(o_i) − g(o_j)]`` with the switch gain ``g(o) = φ(−o) − φ(o)``. ``g`` is
non-decreasing for every convex non-increasing φ (``φ(−o)`` and ``−φ(o)`` both are), and
strictly increasing for the built-in losses (squared hinge, hinge, Huber hinge: piecewise
strictly increasing; logistic: ``g(o) = o``; square: ``4o``), so the improving pairs are the
leading ones of the positives sorted by ascending and the negatives by descending output
[001 §3.1.2]. A loss whose switch gain decreases somewhere is rejected when the model is
built (switching by sorted outputs would be wrong); where ``g`` is flat, pairs tie and are not
switched (the solver switches only strict improvements).

The TSVM of [001 §3.1] is this model by name (:class:`~ssl_opt.problems.TSVM`: the squared
hinge, the ridge ``λ/2‖w̃‖²`` on one weight vector ``w̃ = (w, b)`` over the design with its
constant feature, its inner model a :class:`~ssl_opt.problems.LinearSVM`); the DA S3VM
(:class:`~ssl_opt.problems.DAS3VM`) shares the data, the weights and the loss
(:class:`Transductive`) and relaxes the labels to probabilities.

Certificate (:meth:`TransductiveModel.kkt`, TSVM's residual names): ``stationarity`` (and
``feasibility`` when a penalty is a constraint) of ``(w, b)`` for the inner model at the labels
(ssl_opt/modeling/stationarity.py); ``switch_gain``: the largest objective decrease of one pair
switch at fixed ``(w, b)``, ``λ'/(2u)·max(0, max_{ŷ_j<0} g(o_j) − min_{ŷ_i>0} g(o_i))`` (exact
for any φ) relative to ``max(1, |J|)``; ``balance``: ``|#positives − round(r·u)|/u``;
``integrality``: ``max ||ŷ| − 1|``.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable

import numpy as np
import scipy.sparse as sp

from ssl_opt._validation import check_binary_labels, check_nonnegative
from ssl_opt.components.losses import MarginLoss, get_margin_loss
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.modeling.expressions import Affine, Variable
from ssl_opt.modeling.model import Model
from ssl_opt.modeling.term import PROGRAM_CLASSES, Constraint, Term
from ssl_opt.modeling.terms.margin import MarginLossTerm
from ssl_opt.modeling.terms.norms import ElasticNet
from ssl_opt.numerics.design import LinearDesign
from ssl_opt.problems.base import NonConvexProblem, Structure

#: Bias modes: a penalized constant feature (TSVM), an unpenalized bias, none.
BIAS_MODES = (True, "free", False)
#: Margins where the switch gain is checked to be non-decreasing, and the round-off allowed.
_MONOTONE_GRID = np.concatenate([[-1e3], np.linspace(-50.0, 50.0, 2001), [1e3]])
_MONOTONE_RTOL = 1e-10

#: A penalty: a callable ``v -> Term | list[Term]``, or terms on the model's weights.
Penalties = Callable[[Variable], "Term | Iterable[Term]"] | Iterable[Term]


def resolve_loss(loss) -> MarginLoss:
    """The MarginLoss for a registered name, a class or an object, checked to have a finite
    non-decreasing switch gain ``φ(−o) − φ(o)``."""
    phi = get_margin_loss(loss)
    with np.errstate(all="ignore"):
        g = (np.asarray(phi.value(-_MONOTONE_GRID), dtype=float)
             - np.asarray(phi.value(_MONOTONE_GRID), dtype=float))
    slack = _MONOTONE_RTOL * np.maximum(1.0, np.abs(g[1:]))
    if not np.all(np.isfinite(g)) or np.any(g[:-1] - g[1:] > slack):
        raise InvalidInputError(
            f"loss {phi!r}: its switch gain φ(−o) − φ(o) must be finite and non-decreasing in o "
            "(true for every convex non-increasing margin loss), or switching labels by sorted "
            "outputs is wrong; use a non-increasing loss such as 'squared_hinge', "
            "'huber_hinge' or 'logistic'.")
    return phi


class Transductive(NonConvexProblem):
    """What every transductive linear model shares (:class:`TransductiveModel`, the TSVM and
    the DA S3VM of ``ssl_opt.problems``): the design, the first ``l = len(y)`` rows labeled
    and the other ``u`` not, the balance ``r``, the weight ``λ'`` of the unlabeled loss, the
    margin loss φ, the weight variables and their penalties (terms on the weights only), and
    the outputs ``o = X̃ w (+ b)``. The unlabeled block (hard labels, or DA's probabilities) is
    the subclass's."""

    loss: MarginLoss

    def _set_data(self, design: LinearDesign, y, lam_u, r, supervised: str) -> None:
        """Check and store ``y``, ``λ'`` and ``r`` for the rows of ``design``; ``supervised``
        names the supervised problem to use when every row is labeled."""
        y = check_binary_labels(y, "y", design.n)
        if y.size == design.n:
            raise InvalidInputError(
                f"X has {design.n} rows and y {y.size} labels: there are no unlabeled rows. "
                f"Append the unlabeled rows after the labeled ones, or {supervised}.")
        self.design = design
        self.y = y
        self.lam_u = check_nonnegative(lam_u, "lam_u")
        self.l, self.n = y.size, design.n
        self.u = design.n - y.size
        if r is None:
            r = float(np.mean(y > 0))
        elif isinstance(r, bool) or not isinstance(r, numbers.Real) or not 0 < float(r) < 1:
            raise InvalidInputError(
                f"r (fraction of positive unlabeled rows) must be in (0, 1), got {r!r}.")
        self.r = float(r)
        self.n_pos = int(round(self.r * self.u))

    def _set_weights(self, w: Variable, b: Variable | None, terms, constraints,
                     outputs: Affine) -> None:
        self.w, self.b = w, b
        self.penalty_terms, self.penalty_constraints = tuple(terms), tuple(constraints)
        self.outputs_expression = outputs

    @property
    def sizes(self) -> dict[str, int]:
        return {"n": self.n, "l": self.l, "u": self.u, "d": self.design.d,
                "nnz": self.design.nnz}

    @property
    def unique_prediction(self) -> bool:
        return False

    # ------------------------------------------------------------------ evaluation
    def outputs(self, x) -> np.ndarray:
        """``o = X̃ w (+ b)`` over all rows, at a dict (or Solution) holding the weights."""
        values = getattr(x, "x", x)
        o = self.design.matvec(np.asarray(values["w"], dtype=np.float64))
        return o + float(values["b"]) if self.b is not None else o

    def penalty_value(self, x) -> float:
        """``Σ_k P_k`` at the weights of ``x``."""
        values = {k: np.asarray(v, dtype=np.float64) for k, v in getattr(x, "x", x).items()
                  if k in ("w", "b")}
        return float(sum(t.value(t.argument.value(values)) for t in self.penalty_terms))

    def labeled_cost(self, x, o: np.ndarray) -> float:
        """``P + 1/(2l) Σ_{i≤l} φ(y_i o_i)`` at the weights of ``x`` with outputs ``o``."""
        return self.penalty_value(x) + float(
            self.loss.value(self.y * o[: self.l]).sum()) / (2 * self.l)

    def unlabeled_cost(self, y_u: np.ndarray, o_u: np.ndarray) -> float:
        """``λ'/(2u) Σ_j φ(ŷ_j o_j)``."""
        return self.lam_u * float(self.loss.value(y_u * o_u).sum()) / (2 * self.u)

    def switch_gain(self, o: np.ndarray) -> np.ndarray:
        """``g(o) = φ(−o) − φ(o)``: the loss change of an unlabeled row relabeled from +1 to
        −1; non-decreasing (checked when the model is built). Switching a positive ``i`` and
        a negative ``j`` lowers ``J`` by ``λ'/(2u)[g(o_j) − g(o_i)]`` [001 §3.1.2]."""
        o = np.asarray(o, dtype=np.float64)
        return self.loss.value(-o) - self.loss.value(o)

    def balanced_labels(self, o_u: np.ndarray) -> np.ndarray:
        """The ``round(r·u)`` largest outputs labeled +1, the rest −1: for fixed weights the
        best balanced labeling (the switch gain is non-decreasing)."""
        labels = -np.ones(self.u)
        labels[np.argsort(-np.asarray(o_u), kind="stable")[: self.n_pos]] = 1.0
        return labels

    def best_labeling_objective(self, x) -> float:
        """The hard-label objective at the weights of ``x`` with their best balanced labeling
        (the TSVM objective SVMlin prints; comparable across TSVM, DA and their variants)."""
        values = getattr(x, "x", x)
        o = self.outputs(values)
        return self.labeled_cost(values, o) + self.unlabeled_cost(
            self.balanced_labels(o[self.l:]), o[self.l:])

    def prediction(self, x) -> np.ndarray:
        return self.outputs(self.unpack(x))


class TransductiveModel(Transductive):
    """Transductive linear model over ``(w, b, ŷ)``; see the module docstring.

    Parameters
    ----------
    X : (n, d) array or sparse matrix (CSR kept sparse); the first ``len(y)`` rows are labeled
    y : (l,) ±1 labels (both classes)
    lam_u : λ' ≥ 0, the weight of the unlabeled loss
    penalties : a callable ``v -> Term | list[Term]`` applied to ``w`` (and to ``b`` when
        ``bias=True``); or a list of terms (and constraints) already built on
        ``TransductiveModel.weight_variables(X, bias)``, used as given. Convex, on the weights
        only.
    r : fraction of positive unlabeled rows in (0, 1) (default: the labeled positive fraction)
    loss : a MarginLoss or its name (default the squared hinge of [001])
    bias : ``True`` (penalized like w, TSVM's constant feature), ``"free"`` or ``False``
    name : the variant's name

    Variables: ``w`` (d,), ``b`` () unless ``bias=False``, and ``y_u`` (u,) in {±1}.
    """

    family = "model"
    kkt_options = Model.kkt_options
    residual_tolerances = {"stationarity": "stationarity", "switch_gain": "stationarity",
                           "balance": "feasibility", "integrality": "feasibility",
                           "feasibility": "feasibility"}

    def __init__(self, X, y, lam_u, penalties: Penalties, r=None, loss="squared_hinge", bias=True,
                 name: str = "transductive"):
        if not any(bias is mode or (isinstance(bias, str) and bias == mode)
                   for mode in BIAS_MODES):
            raise InvalidInputError(f"bias must be True (penalized like w, as TSVM's constant "
                                    f"feature), 'free' (unpenalized) or False, got {bias!r}.")
        design = LinearDesign(X, False)
        self._set_data(design, y, lam_u, r, "solve the supervised Model (MarginLossTerm + "
                       "penalties) instead")
        if not isinstance(name, str) or not name:
            raise InvalidInputError(f"name must be a non-empty string, got {name!r}.")
        self.X = design.X
        self.bias = bias
        self.loss = resolve_loss(loss)
        self.name = name
        w, b, terms, constraints = _penalties(penalties, design.d, bias)
        self._set_weights(w, b, terms, constraints, _outputs(self.X, w, b))
        self.outputs_labeled, self.outputs_unlabeled = self._row_outputs()
        self._freeze()

    def _row_outputs(self) -> tuple[Affine, Affine]:
        """The outputs of the labeled and the unlabeled rows as expressions: rows of ``X w + b``
        when the inner model then lowers to a family problem (one product for both terms,
        the form the lowerings read), else ``X_L w + b`` and ``X_U w + b`` on row blocks (half
        the products per evaluation for the model solvers)."""
        f = self.outputs_expression
        rows = f[: self.l], f[self.l:]
        probe = self._assemble(rows, np.where(np.arange(self.u) < self.n_pos, 1.0, -1.0),
                               self.lam_u)
        if probe.lowerings:
            return rows
        Xl, Xu = self.X[: self.l], self.X[self.l:]
        if sp.issparse(Xl):
            Xl, Xu = Xl.tocsr(), Xu.tocsr()
        return _outputs(Xl, self.w, self.b), _outputs(Xu, self.w, self.b)

    # ------------------------------------------------------------------ declaration
    @staticmethod
    def weight_variables(X, bias=True) -> tuple[Variable, Variable | None]:
        """The variables ``(w, b)`` a model of ``X`` uses (``b`` None when ``bias=False``),
        to build ``penalties`` as a list of terms beforehand."""
        return Variable("w", (np.shape(X)[1],)), (None if bias is False else Variable("b"))

    @property
    def variables(self) -> dict[str, tuple[int, ...]]:
        out = {"w": self.w.shape}
        if self.b is not None:
            out["b"] = ()
        out["y_u"] = (self.u,)
        return out

    @property
    def structure(self) -> Structure:
        classes = [self.loss.program_class] + [
            t.program_class for t in self.penalty_terms + self.penalty_constraints]
        inner = max(classes, key=lambda c: PROGRAM_CLASSES.index(c)
                    if c in PROGRAM_CLASSES else len(PROGRAM_CLASSES))
        return Structure(self.family, "transductive", False, False, f"mixed-integer {inner}",
                         self.sizes, self.design.sparse)

    def describe_terms(self) -> str:
        lines = [f"{self.name}: minimize over w, b and y_u ∈ {{±1}}^{self.u} "
                 f"({self.n_pos} positive)"]
        lines += [f"  + {t.describe()}" for t in self.penalty_terms]
        lines.append(f"  + margin_loss(loss={self.loss.name}) on {self.l} labeled rows, "
                     "weight 1/(2l)")
        lines.append(f"  + margin_loss(loss={self.loss.name}) on {self.u} unlabeled rows with "
                     f"labels y_u, weight λ'/(2u) = {self.lam_u / (2 * self.u):g}")
        lines += [f"  s.t. {c.describe()}" for c in self.penalty_constraints]
        return "\n".join(lines)

    def objective(self, x) -> float:
        v = self.unpack(x)
        o = self.outputs(v)
        return self.labeled_cost(v, o) + self.unlabeled_cost(v["y_u"], o[self.l:])

    def from_tsvm(self, x) -> dict[str, np.ndarray]:
        """A TSVM point (``w̃`` with the bias last, ``y_u``) as this model's variables."""
        values = getattr(x, "x", x)
        wt = np.asarray(values["w"], dtype=np.float64)
        d = self.design.d
        out = {"w": wt[:d].copy()}
        if self.b is not None:
            out["b"] = np.array(wt[d] if wt.size > d else 0.0)
        if "y_u" in values:
            out["y_u"] = np.asarray(values["y_u"], dtype=np.float64).copy()
        return out

    # ------------------------------------------------------------------ inner problem
    def _assemble(self, outputs: tuple[Affine, Affine], y_u: np.ndarray, lam_u: float) -> Model:
        terms = [*self.penalty_terms,
                 MarginLossTerm(outputs[0], self.y, self.loss, 1.0 / (2 * self.l)),
                 MarginLossTerm(outputs[1], y_u, self.loss, lam_u / (2 * self.u))]
        return Model(terms, self.penalty_constraints, prediction=self.outputs_expression,
                     name=f"{self.name}-inner")

    def inner_model(self, y_u: np.ndarray, lam_u: float | None = None) -> Model:
        """The convex model for the labels ``y_u`` (±1) and unlabeled weight ``λ'`` (default
        the problem's; the solver anneals it): the penalties, then the labeled and the
        unlabeled margin-loss terms."""
        lam_u = self.lam_u if lam_u is None else float(lam_u)
        return self._assemble((self.outputs_labeled, self.outputs_unlabeled), y_u, lam_u)

    def inner_problem(self, x) -> Model:
        """The convex model with the labels of ``x`` fixed (``ŷ_j = +1`` where ``y_u > 0``,
        else −1)."""
        y_u = self.unpack(x)["y_u"]
        return self.inner_model(np.where(y_u > 0, 1.0, -1.0))

    def _kkt(self, x, kink_tol, max_iter, tol, verbose, complementarity,
             cone) -> dict[str, float]:
        """See the module docstring."""
        v = self.unpack(x)
        if not all(np.all(np.isfinite(a)) for a in v.values()):
            return {"stationarity": float("inf")}
        y_u = v["y_u"]
        inner = self.inner_problem(v)
        # The raw point: a Solution carries the inner solver's multipliers (certificate start).
        out = dict(inner.kkt(x, kink_tol=kink_tol, max_iter=max_iter, tol=tol,
                             verbose=verbose, complementarity=complementarity, cone=cone))
        o_u = self.outputs(v)[self.l:]
        pos, neg = y_u > 0, ~(y_u > 0)
        decrease = 0.0
        if pos.any() and neg.any():
            g = self.switch_gain(o_u)
            decrease = max(0.0, self.lam_u / (2 * self.u) * float(g[neg].max() - g[pos].min()))
        out.update(
            switch_gain=decrease / max(1.0, abs(self.objective(v))),
            balance=abs(int(pos.sum()) - self.n_pos) / self.u,
            integrality=float(np.max(np.abs(np.abs(y_u) - 1.0))),
        )
        return out


def _outputs(X, w: Variable, b: Variable | None) -> Affine:
    """``X w + b`` (or ``X w``) as an expression (X is not copied)."""
    return X @ w + b if b is not None else X @ w


def _penalties(penalties, d: int, bias):
    """``(w, b, terms, constraints)``: the weight variables and the checked penalties."""
    if callable(penalties) and not isinstance(penalties, Term):
        w = Variable("w", (d,))
        b = None if bias is False else Variable("b")
        items = _as_list(penalties(w), "penalties(w)")
        if bias is True:
            try:
                items += _as_list(penalties(b), "penalties(b)")
            except InvalidInputError as exc:
                raise InvalidInputError(
                    f"bias=True applies the penalties to the bias as well (TSVM's penalized "
                    f"constant feature), which failed: {exc} Pass bias='free' and a list of "
                    "terms with the bias penalty you want.") from exc
    else:
        items = _as_list(penalties, "penalties")
        w = b = None
        used = {}
        for t in items:
            for var in (t.argument.variables if isinstance(t, Term) else ()):
                used.setdefault(var.name, var)
        w, b = used.get("w"), used.get("b")
        w = Variable("w", (d,)) if w is None else w
        if b is not None and bias is False:
            raise InvalidInputError("penalties use a bias variable 'b' but bias=False; pass "
                                    "bias='free' (or True) or drop the terms on b.")
        if b is None and bias is not False:
            b = Variable("b")
    if not any(not isinstance(t, Constraint) for t in items):
        raise InvalidInputError(
            "penalties must give at least one Term (e.g. lambda v: Ridge(v, lam / 2), or "
            "lambda v: ElasticNet(v, l1, l2)).")
    allowed = [v for v in (w, b) if v is not None]
    for i, t in enumerate(items):
        label = f"penalties[{i}] ({t.describe()})"
        if not t.convex:
            raise InvalidInputError(f"{label} is not convex; the inner problem must be convex "
                                    "to be certified.")
        if not t.argument.variables or any(
                not any(v is a for a in allowed) for v in t.argument.variables):
            raise InvalidInputError(
                f"{label} must be a term on the model's weights only (it uses "
                f"{[v.name for v in t.argument.variables]}); build the penalties with a "
                "callable, or on TransductiveModel.weight_variables(X, bias).")
    if w.shape != (d,) or (b is not None and b.shape != ()):
        raise InvalidInputError(
            f"penalties must be built on w of shape ({d},) and a scalar b; got w "
            f"{w.shape}" + ("" if b is None else f", b {b.shape}") + ".")
    terms = tuple(t for t in items if not isinstance(t, Constraint))
    constraints = tuple(t for t in items if isinstance(t, Constraint))
    return w, b, terms, constraints


def _as_list(value, what: str) -> list[Term]:
    items = [value] if isinstance(value, Term) else value
    try:
        items = list(items)
    except TypeError as exc:
        raise InvalidInputError(
            f"{what} must give a Term or a list of Terms (and Constraints) on the weights; got "
            f"{type(value).__name__}.") from exc
    for i, t in enumerate(items):
        if not isinstance(t, Term):
            raise InvalidInputError(f"{what}[{i}] must be a Term or a Constraint, got "
                                    f"{type(t).__name__}.")
    return items


def transductive_huber_enet(n: int = 200, seed: int = 0, loss: str = "huber_hinge"
                            ) -> TransductiveModel:
    """A reference instance at any size (for examples and benchmarks): sparse text-like rows
    (:func:`~ssl_opt.datasets.text.synthetic_text`), ``n // 8`` of them labeled (at least 8),
    the Huber hinge (or ``loss``), elastic net ``10⁻³‖w‖₁ + 10⁻²‖w‖²`` and a free bias,
    ``λ' = 1``."""
    from ssl_opt.datasets.text_generator import synthetic_text

    d = max(50, n // 2)
    data = synthetic_text(n=n, d=d, nnz_per_row=min(30, d // 2), n_labeled=max(8, n // 8),
                          seed=seed)
    return TransductiveModel(sp.csr_matrix(data.X), data.y, 1.0,
                             lambda v: ElasticNet(v, 1e-3, 1e-2), loss=loss, bias="free",
                             name=f"transductive-{loss}+enet")


__all__ = ["BIAS_MODES", "Transductive", "TransductiveModel", "resolve_loss",
           "transductive_huber_enet"]
