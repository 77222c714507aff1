r"""Linear (semi-)supervised SVM classifiers on dense or sparse X [001], docs/design.md §4.2.

The estimators wrap the problems of :mod:`ssl_opt.problems.linear.problem`; the bias is the
last weight of ``w`` and multiplies a constant feature appended to every row (it is
regularized, as in SVMlin: :class:`~ssl_opt.numerics.design.LinearDesign`), and
``l2(z) = max(0, 1 − z)²``:

* :class:`LinearL2SVC` — the L2-SVM on the labeled rows only [001 eq. 2],
  ``min_w λ/2‖w‖² + ½ Σ_{i≤l} l2(y_i w̃ᵀx̃_i)`` (:class:`~ssl_opt.problems.LinearSVM`,
  solver ``mfn``): the supervised baseline that accepts semi-supervised ``y``;
* :class:`TransductiveSVC` — TSVM [001 §3.1] (``method="tsvm"``)
  ``min_{w, ŷ} λ/2‖w‖² + 1/(2l) Σ_{i≤l} l2(y_i o_i) + λ'/(2u) Σ_{j>l} l2(ŷ_j o_j)`` over
  labelings ``ŷ`` with ``round(r·u)`` positives, or the deterministic-annealing S3VM
  [001 §3.2, eq. 6–7] (``method="da"``) that relaxes ``ŷ`` to probabilities ``p`` with
  ``mean(p) = r`` (:class:`~ssl_opt.problems.TSVM`, :class:`~ssl_opt.problems.DAS3VM`;
  solvers ``tsvm``, ``da``).

Targets follow scikit-learn's semi-supervised convention: ``y == -1`` marks an unlabeled row,
labels take any values in any order. Two classes give one problem with ``classes_[1] → +1``;
more give one problem per class (one-vs-rest, ``problem_`` and ``solution_`` are lists in
``classes_`` order). The problems want the labeled rows first: the rows are reordered with
:attr:`LabelLayout.order` (no copy when they already are) and every per-sample output is
mapped back to the caller's order.
"""

from __future__ import annotations

import dataclasses
import numbers

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.extmath import safe_sparse_dot
from sklearn.utils.validation import check_is_fitted

from ssl_opt import registry
from ssl_opt._validation import check_bool, check_choice, check_nonnegative, check_positive
from ssl_opt.estimators._base import (
    BACKEND_CHOICES,
    CertifiedMixin,
    SemiSupervisedClassifierMixin,
    checked_X,
    solve_with,
)
from ssl_opt.estimators._diagnostics import (
    warn_if_one_class_takes_all,
    warn_if_ratio_unsupported,
    warn_if_unbalanced,
)
from ssl_opt.estimators._iterations import ITERATION_DOC, fitting, iteration_settings
from ssl_opt.estimators._labels import LabelLayout, label_layout
from ssl_opt.numerics.design import LinearDesign, is_dask_array
from ssl_opt.optional import require
from ssl_opt.problems.linear.problem import DAS3VM, TSVM, LinearSVM
from ssl_opt.selection.select import select
from ssl_opt.solution import Solution

__all__ = ["EXPECTED_FAILED_CHECKS", "LinearL2SVC", "TransductiveSVC"]

_MINUS_ONE_IS_UNLABELED = (
    "Its last case trains on the labels [-1, 1], but -1 marks an unlabeled sample in "
    "scikit-learn's semi-supervised convention, leaving one class; scikit-learn exempts its own "
    "semi-supervised classifiers from those labels by name (_choose_check_classifiers_labels), "
    "and the string and object labels of its other cases are tested in "
    "tests/estimators/test_linear.py.")

#: scikit-learn checks these estimators are expected to fail, with the reason. With no ``-1``
#: in ``y`` LinearL2SVC is an ordinary linear classifier and TransductiveSVC falls back to the
#: L2-SVM, so every other check is meaningful and passes.
EXPECTED_FAILED_CHECKS: dict[str, dict[str, str]] = {
    "LinearL2SVC": {"check_classifiers_classes": _MINUS_ONE_IS_UNLABELED},
    "TransductiveSVC": {"check_classifiers_classes": _MINUS_ONE_IS_UNLABELED},
}

METHODS = ("tsvm", "da")


def _take_rows(X, index: np.ndarray):
    """``X[index]`` for dense or CSR ``X``; ``X`` itself when ``index`` is ``0..n-1``."""
    if index.size == X.shape[0] and np.array_equal(index, np.arange(index.size)):
        return X
    return X[index]


def _block_scores(block, W: np.ndarray) -> np.ndarray:
    """``block @ W`` for a dense or sparse row block (runs on a worker)."""
    return np.asarray(block @ W, dtype=np.float64)


def _targets(layout: LabelLayout) -> np.ndarray:
    """(l, k) ±1 targets: one column (``classes_[1]`` → +1) for two classes, else one per class."""
    if layout.n_classes == 2:
        return layout.binary_targets()[:, None]
    return layout.one_vs_rest_targets()


class _LinearS3VMBase(CertifiedMixin, SemiSupervisedClassifierMixin, BaseEstimator):
    """Fit loop, fitted attributes and tags shared by the linear estimators.

    Fitted attributes: ``classes_``, ``coef_`` (k, d) and ``intercept_`` (k,) with ``k = 1``
    for two classes, ``transduction_`` (predicted labels of the training rows, in their order),
    ``problem_``, ``solution_``, ``n_features_in_``. ``decision_function(X) = X coef_ᵀ +
    intercept_`` ((n,) for two classes, (n, k) otherwise); ``predict`` takes its sign / argmax.
    """

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    # -- subclasses -----------------------------------------------------------------------
    def _check_params(self) -> None:
        check_positive(self.lam, "lam")
        check_bool(self.fit_intercept, "fit_intercept")
        check_bool(self.warm_start, "warm_start")
        self._check_solver_param()
        c = self.client
        if c is not None and not isinstance(c, str) and not hasattr(c, "submit"):
            raise ValueError(f"client must be None, 'default', a scheduler address or a "
                             f"distributed.Client, got {type(c).__name__}.")

    # -- where X lives ----------------------------------------------------------------------
    def _cluster(self):
        """The ``distributed.Client`` of this fit, or None (X in memory). ``"default"`` is
        ``distributed.default_client()``; an address string connects once per estimator."""
        c = self.client
        if c is None or hasattr(c, "submit"):
            return c
        distributed = require("distributed", "client=")
        Client, default_client = distributed.Client, distributed.default_client

        if c == "default":
            try:
                return default_client()
            except ValueError as exc:
                raise ValueError("client='default' needs a running distributed.Client; create "
                                 "one (Client(LocalCluster()) or Client(address)) or pass "
                                 "client=None.") from exc
        cached = getattr(self, "_connected", None)
        if cached is None or cached[0] != c:
            self._connected = (c, Client(c, set_as_default=False))
        return self._connected[1]

    def _design(self, X, client):
        """The rows ``X`` as the problems' design: in memory, or row blocks on ``client``'s
        workers (:class:`~ssl_opt.operators.DaskDesign`; MFN, TSVM and DA run unchanged)."""
        if client is None:
            return LinearDesign(X, self.fit_intercept)
        from ssl_opt.operators import DaskDesign

        return DaskDesign(X, self.fit_intercept, client=client)

    def _validate_any_X(self, X, y):
        """``(X, layout)``: scikit-learn's validation for in-memory X; for a dask array only
        its shape (validating the values would gather X: the workers check them when they
        build the blocks)."""
        if not is_dask_array(X):
            return self._validate_X_y(X, y, accept_sparse="csr")
        if self.client is None:
            raise ValueError("X is a dask array: pass client= (a distributed.Client, its "
                             "address or 'default') to fit on the cluster, or X.compute().")
        if X.ndim != 2 or X.shape[0] < 2 or X.shape[1] < 1:
            raise ValueError(f"X must be a 2-D dask array with n >= 2 rows and d >= 1 "
                             f"columns, got shape {X.shape}.")
        self.n_features_in_ = int(X.shape[1])
        layout = label_layout(y, int(X.shape[0]))
        self.classes_ = layout.classes
        return X, layout

    def _problems(self, X, layout: LabelLayout, targets: np.ndarray, client) -> list:
        raise NotImplementedError

    def _solve_one(self, problem, previous: Solution | None) -> Solution:
        return solve_with(problem, self.solver, self.solver_options, previous,
                          iteration_settings(self))

    def _unlabeled_outputs(self, problems: list, solutions: list) -> list:
        """(outputs on the unlabeled rows, class ratio r) of each transductive problem, for
        :func:`~ssl_opt.estimators._diagnostics.warn_if_unbalanced`."""
        return []

    # -- scikit-learn API -------------------------------------------------------------------
    @fitting
    def fit(self, X, y):
        """Fit on ``X`` (n, d), dense or sparse, and ``y`` (n,) with ``-1`` for unlabeled rows.

        Returns
        -------
        self
        """
        self._check_params()
        X, layout = self._validate_any_X(X, y)
        targets = _targets(layout)
        previous = self._previous_solutions()
        if previous is not None and len(previous) != targets.shape[1]:
            previous = None
        problems = self._problems(X, layout, targets, self._cluster())
        solutions = [self._solve_one(p, None if previous is None else previous[k])
                     for k, p in enumerate(problems)]
        d = X.shape[1]
        W = np.stack([np.asarray(s.x["w"], dtype=np.float64) for s in solutions])
        self.coef_ = np.ascontiguousarray(W[:, :d])
        self.intercept_ = W[:, d].copy() if self.fit_intercept else np.zeros(W.shape[0])
        if len(problems) == 1:
            self.problem_, self.solution_ = problems[0], solutions[0]
        else:
            self.problem_, self.solution_ = problems, solutions
        scores = self._scores(X)
        self.transduction_ = self._labels_of(scores)
        labeled = scores[layout.order[:layout.n_labeled]]
        self._fit_probability(labeled[:, 0] if labeled.shape[1] == 1 else labeled,
                              layout.indicator())
        checks = self._unlabeled_outputs(problems, solutions)
        reasons = [warn_if_unbalanced(outputs_u, ratio) for outputs_u, ratio in checks]
        if not checks:
            reasons = [warn_if_one_class_takes_all(
                self.transduction_[layout.order[layout.n_labeled:]], len(self.classes_))]
        self.degenerate_ = next((r for r in reasons if r), None)
        self._check_ratio(X, layout, targets)
        return self

    def _check_ratio(self, X, layout: LabelLayout, targets: np.ndarray) -> None:
        """A check of the class ratio after the fit; none for a supervised model."""

    def _scores(self, X) -> np.ndarray:
        """``X coef_ᵀ + intercept_`` (n, k) on validated X (sparse X stays sparse); on the
        cluster for a dask array (only the n × k scores come back)."""
        if is_dask_array(X):
            W = self.coef_.T
            scores = X.map_blocks(_block_scores, W, dtype=np.float64,
                                  chunks=(X.chunks[0], (W.shape[1],)))
            cluster = self._cluster()
            out = cluster.compute(scores).result() if cluster is not None else scores.compute()
            return np.asarray(out) + self.intercept_
        return safe_sparse_dot(X, self.coef_.T, dense_output=True) + self.intercept_

    def _labels_of(self, scores: np.ndarray) -> np.ndarray:
        codes = (scores[:, 0] > 0).astype(np.intp) if scores.shape[1] == 1 else scores.argmax(1)
        return self.classes_[codes]

    def decision_function(self, X) -> np.ndarray:
        """Decision values ``X coef_ᵀ + intercept_``: shape (n,) for two classes (positive
        means ``classes_[1]``), (n, k) one-vs-rest scores otherwise."""
        check_is_fitted(self, "coef_")
        X = self._validate_new(X)
        scores = self._scores(X)
        return scores[:, 0] if scores.shape[1] == 1 else scores

    def predict(self, X) -> np.ndarray:
        """Class labels: ``classes_[1]`` where the binary score is > 0, else the argmax of the
        one-vs-rest scores."""
        check_is_fitted(self, "coef_")
        return self._labels_of(self._scores(self._validate_new(X)))

    def _validate_new(self, X):
        if is_dask_array(X):
            if X.ndim != 2 or X.shape[1] != self.n_features_in_:
                raise ValueError(f"X has shape {X.shape}; this estimator was fitted on "
                                 f"{self.n_features_in_} features.")
            return X
        return checked_X(self, X, accept_sparse="csr", reset=False)


class LinearL2SVC(_LinearS3VMBase):
    __doc__ = r"""Linear L2-SVM trained on the labeled rows [001 eq. 2]: a supervised baseline that
    accepts semi-supervised ``y`` (rows with ``y == -1`` are ignored).

    ``min_w λ/2‖w‖² + ½ Σ_{i≤l} max(0, 1 − y_i w̃ᵀx̃_i)²`` with ``x̃ = [x, 1]`` when
    ``fit_intercept`` (the bias is regularized, as in SVMlin), solved by L2-SVM-MFN (modified
    finite Newton with CGLS, O(nnz) per step; X is never densified).

    Parameters
    ----------
    lam : float > 0
        λ, the weight of ``½‖w‖²`` (bias included).
    fit_intercept : bool
        Append the constant feature whose weight is ``intercept_``.
    solver : str
        ``"auto"``, ``"fast"`` (``mfn``), ``"reference"`` (CVXPY) or a registered solver name.
    solver_options : dict or None
        Options of the solver (e.g. ``{"tol": 1e-9}`` for ``mfn``).
    warm_start : bool
        Seed MFN from the previous fit's ``w`` when the same estimator is refit (e.g. along a
        grid of ``lam`` walked with ``set_params``; ``GridSearchCV`` clones, so starts cold).
    client : None, "default", a scheduler address or a ``distributed.Client``
        Where X's rows live during the fit. ``None``: in memory. Otherwise row blocks on the
        cluster's workers (:class:`~ssl_opt.operators.DaskDesign`, docs/scaling.md), where the
        solvers run unchanged and only n-vectors reach this process. X may then be a dask
        array that is never gathered: predictions on it are computed on the cluster too.
        ``"default"`` is ``distributed.default_client()``. Pass an address or ``"default"``,
        not a Client, where the estimator is cloned (``GridSearchCV``): a Client cannot be
        copied.
""" + ITERATION_DOC + r"""
    Attributes
    ----------
    classes_, coef_ (k, d), intercept_ (k,), transduction_, n_features_in_, n_iter_
    problem_, solution_ : the :class:`~ssl_opt.problems.LinearSVM` (one per class for more
        than two classes, sharing one design matrix) and its solution.
    """

    def __init__(self, lam: float = 1e-3, fit_intercept: bool = True, solver: str = "auto",
                 solver_options: dict | None = None, warm_start: bool = False, client=None,
                 max_iter: int | None = None, tol: float | None = None, verbose: int = 0):
        self.lam = lam
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.solver_options = solver_options
        self.warm_start = warm_start
        self.client = client
        self.max_iter = max_iter
        self.tol = tol
        self.verbose = verbose

    def _problems(self, X, layout: LabelLayout, targets: np.ndarray, client) -> list:
        design = self._design(_take_rows(X, layout.order[: layout.n_labeled]), client)
        return [LinearSVM(design, targets[:, k], self.lam, bias=self.fit_intercept)
                for k in range(targets.shape[1])]


class TransductiveSVC(_LinearS3VMBase):
    __doc__ = r"""Transductive linear SVM: TSVM with multiple switching [001 §3.1] or the
    deterministic-annealing S3VM [001 §3.2], on dense or sparse X.

    TSVM: ``min_{w, ŷ} λ/2‖w‖² + 1/(2l) Σ_{i≤l} l2(y_i w̃ᵀx̃_i) + λ'/(2u) Σ_{j>l} l2(ŷ_j
    w̃ᵀx̃_j)`` over ``ŷ ∈ {±1}ᵘ`` with ``round(r·u)`` positives; DA replaces ``ŷ`` by
    probabilities ``p`` (``mean(p) = r``) and anneals an entropy term at temperature ``T → 0``
    (eq. 6–7). Both are non-convex: the solution is block-optimal (``certificate()`` checks
    the convex problem at the final labels / ``p`` against its reference optimum).

    Parameters
    ----------
    method : "tsvm" or "da"
    lam : float > 0
        λ (bias included).
    lam_u : float >= 0
        λ', the weight of the unlabeled rows (0: the L2-SVM on the labeled rows).
    ratio : float in (0, 1) or None
        r, the fraction of unlabeled rows put in the positive class (for more than two
        classes: in class k, per one-vs-rest problem). ``None`` takes the labeled fraction of
        ``classes_[1]`` (of class k), clipped into ``[1/u, 1 − 1/u]`` so that both sides keep at
        least one unlabeled row.
    fit_intercept : bool
    solver : str
        ``"auto"``, ``"fast"``, ``"reference"`` (exhaustive enumeration, u ≤ 12) or a registered
        solver name (``"tsvm"`` / ``"da"``).
    solver_options : dict or None
        Options of the solver (e.g. ``{"S": 1}`` for classic single-switch TSVM).
    warm_start : bool
        TSVM: start at the target λ' from the previous fit's ``w`` (labels re-balanced from its
        outputs), skipping the labeled start and the λ' annealing. DA has no warm start.
    client : None, "default", a scheduler address or a ``distributed.Client``
        Where X's rows live during the fit. ``None``: in memory. Otherwise row blocks on the
        cluster's workers (:class:`~ssl_opt.operators.DaskDesign`, docs/scaling.md), where the
        solvers run unchanged and only n-vectors reach this process. X may then be a dask
        array that is never gathered: predictions on it are computed on the cluster too.
        ``"default"`` is ``distributed.default_client()``. Pass an address or ``"default"``,
        not a Client, where the estimator is cloned (``GridSearchCV``): a Client cannot be
        copied.
""" + ITERATION_DOC + r"""
    Notes
    -----
    ``tsvm`` and ``da`` take ``tol`` but no ``max_iter``: their switching and annealing run to
    the end (the cap of their inner MFN solves is ``solver_options["mfn_max_iter"]``);
    ``max_iter`` caps ``mfn`` where the fit falls back to the L2-SVM (below).

    With no unlabeled row (every ``y != -1``, as in scikit-learn's estimator checks) there is
    nothing to transduce: the estimator solves the ``u = 0`` limit, the L2-SVM
    ``λ/2‖w‖² + 1/(2l) Σ l2(y_i o_i)`` (a :class:`~ssl_opt.problems.LinearSVM` with costs
    ``1/l``), by the L2-SVM solver of the same backend (``mfn`` for ``"auto"``, ``"fast"`` or a
    named TSVM/DA solver), passing on only the ``solver_options`` it accepts. After a fit with
    unlabeled rows a :class:`~ssl_opt.estimators._diagnostics.DegenerateProblemWarning` is
    issued when the unlabeled predictions put every row in one class or stray far from ``r``.

    Attributes
    ----------
    classes_, coef_ (k, d), intercept_ (k,), transduction_, n_features_in_, n_iter_
    ratio_ : ndarray (k,), the r of each problem (nan where it fell back to the L2-SVM)
    problem_, solution_ : the TSVM / DAS3VM (or LinearSVM) and its solution, lists for more
        than two classes.
    """

    def __init__(self, method: str = "tsvm", lam: float = 1e-3, lam_u: float = 1.0,
                 ratio: float | None = None, fit_intercept: bool = True, solver: str = "auto",
                 solver_options: dict | None = None, warm_start: bool = False, client=None,
                 max_iter: int | None = None, tol: float | None = None, verbose: int = 0):
        self.client = client
        self.method = method
        self.lam = lam
        self.lam_u = lam_u
        self.ratio = ratio
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.solver_options = solver_options
        self.warm_start = warm_start
        self.max_iter = max_iter
        self.tol = tol
        self.verbose = verbose

    def _check_params(self) -> None:
        super()._check_params()
        check_choice(self.method, "method", METHODS)
        check_nonnegative(self.lam_u, "lam_u")
        r = self.ratio
        if r is not None and (isinstance(r, bool) or not isinstance(r, numbers.Real)
                              or not 0.0 < float(r) < 1.0):
            raise ValueError(f"ratio (fraction of unlabeled rows in the positive class) must be "
                             f"a float in (0, 1) or None to take it from the labels, got {r!r}.")

    def _ratio(self, y: np.ndarray, u: int) -> float:
        if self.ratio is not None:
            return float(self.ratio)
        r = float(np.mean(y > 0))
        if u >= 2:
            return float(np.clip(r, 1.0 / u, 1.0 - 1.0 / u))
        return 0.5

    def _problems(self, X, layout: LabelLayout, targets: np.ndarray, client) -> list:
        l, u = layout.n_labeled, layout.n - layout.n_labeled
        k = targets.shape[1]
        if u == 0:
            design = self._design(X, client)
            cost = np.full(l, 1.0 / l)
            self.ratio_ = np.full(k, np.nan)
            return [LinearSVM(design, targets[:, j], self.lam, cost, bias=self.fit_intercept)
                    for j in range(k)]
        design = self._design(_take_rows(X, layout.order), client)  # shared
        cls = TSVM if self.method == "tsvm" else DAS3VM
        self.ratio_ = np.array([self._ratio(targets[:, j], u) for j in range(k)])
        return [cls(design, targets[:, j], self.lam, self.lam_u, r=self.ratio_[j],
                    bias=self.fit_intercept) for j in range(k)]

    def _solve_one(self, problem, previous: Solution | None) -> Solution:
        solver, options = self.solver, dict(self.solver_options or {})
        if isinstance(problem, LinearSVM):
            solver, options = _l2svm_fallback(problem, solver, options)
        if isinstance(problem, TSVM) and previous is not None:
            previous = _balanced_warm_start(problem, previous)
        return solve_with(problem, solver, options, previous, iteration_settings(self))

    def _unlabeled_outputs(self, problems: list, solutions: list) -> list:
        return [(p.prediction(s)[p.l:], p.r) for p, s in zip(problems, solutions, strict=True)
                if isinstance(p, (TSVM, DAS3VM))]

    def _check_ratio(self, X, layout: LabelLayout, targets: np.ndarray) -> None:
        """When r comes from the labels, compare it with the share of unlabeled rows that the
        L2-SVM of the labeled rows alone puts in each class (one MFN solve on the l labeled
        rows per class): see :func:`warn_if_ratio_unsupported`."""
        l, n = layout.n_labeled, layout.n
        if self.ratio is not None or l == n or is_dask_array(X):
            return
        labeled = self._design(_take_rows(X, layout.order[:l]), None)
        X_u = _take_rows(X, layout.order[l:])
        d = X.shape[1]
        for j in range(targets.shape[1]):
            svm = LinearSVM(labeled, targets[:, j], self.lam, np.full(l, 1.0 / l),
                            bias=self.fit_intercept)
            w = np.asarray(solve_with(svm, "fast", None).x["w"], dtype=np.float64)
            scores = safe_sparse_dot(X_u, w[:d], dense_output=True)
            if self.fit_intercept:
                scores = scores + w[d]
            label = self.classes_[1] if targets.shape[1] == 1 else self.classes_[j]
            warn_if_ratio_unsupported(self.ratio_[j], float(np.mean(scores > 0)), label)


def _l2svm_fallback(problem: LinearSVM, solver: str, options: dict) -> tuple[str, dict]:
    """The solver for the all-labeled L2-SVM: ``solver`` itself when it handles it, else the
    solver :func:`~ssl_opt.select` picks on ``solver``'s backend, with only the options it
    shares with ``solver`` (``mfn_max_iter`` becomes ``mfn``'s ``max_iter``)."""
    if solver in BACKEND_CHOICES:
        backend = solver
    else:
        chosen = registry.get_solver(solver)  # an unknown name raises SolverNotFoundError here
        if isinstance(problem, chosen.problem_types):
            return solver, options
        backend = chosen.backend
    name = select(problem, backend).solver
    accepted = registry.get_solver(name).options
    if "mfn_max_iter" in options and "max_iter" in accepted:
        options.setdefault("max_iter", options["mfn_max_iter"])
    return name, {key: value for key, value in options.items() if key in accepted}


def _balanced_warm_start(problem: TSVM, previous: Solution) -> Solution | None:
    """The previous fit's ``w`` with labels that satisfy this problem's balance: its own
    ``y_u`` when it still has ``round(r·u)`` positives, else :meth:`TSVM.balanced_labels` of
    the outputs (the tsvm solver keeps the count of positives fixed)."""
    x = getattr(previous, "x", {})
    w = np.asarray(x.get("w", ()), dtype=np.float64)
    if w.shape != (problem.design.dim,) or not np.all(np.isfinite(w)):
        return None
    y_u = np.asarray(x.get("y_u", ()), dtype=np.float64)
    if y_u.shape != (problem.u,) or int((y_u > 0).sum()) != problem.n_pos \
            or not np.all(np.isin(y_u, (-1.0, 1.0))):
        y_u = problem.balanced_labels(problem.outputs(w)[problem.l:])
    return dataclasses.replace(previous, x={"w": w, "y_u": y_u})
