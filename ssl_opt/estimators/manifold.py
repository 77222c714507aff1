"""Laplacian SVM and Laplacian RLS classifiers on raw data [000] (docs/design.md §4.1, §7).

``fit(X, y)`` builds the kernel ``K`` and the graph Laplacian ``L^p`` of the training points,
puts the labeled points first, and solves

    J(α, b) = ½ ( Σ_{i≤l} φ(y_i f_i) + γ_A αᵀKα + γ_I fᵀLf ),   f = Kα + b,

with φ the squared hinge (``LapSVC``, primal LapSVM [000 eq. 7]; any margin loss through
``loss``) or the square (``LapRLSC``, [000 §5]). The decision function on new points is
``K(X_new, X_train) α + b``, computed in row blocks so one block of the cross kernel is alive at
a time. More than two classes are one-vs-rest: K, L and the problem data are built once and
shared by every class; LapRLS solves the c problems with one factorization and c right-hand
sides.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from ssl_opt import registry
from ssl_opt._validation import (
    as_float_matrix,
    check_bool,
    check_int,
    check_positive,
    check_square,
    check_symmetric,
)
from ssl_opt.api import solve
from ssl_opt.builders.laplacian import validated_adjacency
from ssl_opt.estimators._base import (
    BACKEND_CHOICES,
    CertifiedMixin,
    SemiSupervisedClassifierMixin,
    checked_X,
    solve_with,
)
from ssl_opt.estimators._diagnostics import (
    warn_if_degenerate_kernel,
    warn_if_disconnected,
    warn_if_one_class_takes_all,
)
from ssl_opt.estimators._iterations import (
    ITERATION_DOC,
    fitting,
    iteration_settings,
    settings_for,
)
from ssl_opt.estimators._kernels import (
    check_graph_params,
    check_kernel_choice,
    graph_laplacian,
    kernel_expansion,
    kernel_function,
)
from ssl_opt.estimators._labels import LabelLayout
from ssl_opt.exceptions import InsufficientMemoryError
from ssl_opt.operators import KernelOperator, NystromOperator
from ssl_opt.operators.plan import kernel_plan
from ssl_opt.plugins.manifold.early_stopping import RULES
from ssl_opt.problems.manifold.problem import LapRLS, LapSVM
from ssl_opt.problems.one_vs_rest import OneVsRest

#: The check of scikit-learn's suite that cannot hold for these estimators, with the reason.
EXPECTED_FAILED_CHECKS: dict[str, dict[str, str]] = {
    name: {"check_classifiers_classes": (
        "its last case labels the classes -1 and 1, but -1 marks an unlabeled sample in "
        "scikit-learn's semi-supervised convention (the check exempts LabelSpreading by name "
        "for this reason), so only one class is labeled and fit refuses it")}
    for name in ("LapSVC", "LapRLSC")}


def _graph_input(M, name: str, order: np.ndarray, adjacency: bool):
    """A user's ``affinity`` (graph checks) or ``laplacian`` (finite, real, symmetric), of
    the training points' size, permuted to the labeled-first order: ``M[order][:, order]``."""
    M = validated_adjacency(M, name) if adjacency else as_float_matrix(M, name)
    check_square(M, name, order.size)
    if not adjacency:
        check_symmetric(M, name)
    if sp.issparse(M):
        return sp.csr_matrix(M)[order][:, order]
    return M[np.ix_(order, order)]


#: ``operator`` choices → the precision of a matrix-free K's tiles (None: K stored dense;
#: "nystrom": a low-rank :class:`~ssl_opt.operators.NystromOperator`).
OPERATORS = {"auto": None, "dense": None, "matrix-free": np.float64,
             "matrix-free-float32": np.float32, "nystrom": None}
#: Solvers that never form K, by operator.
OPERATOR_SOLVERS = {"matrix-free": ("pcg",), "matrix-free-float32": ("pcg",),
                    "nystrom": ("pcg", "lowrank-newton")}


class _ManifoldClassifier(CertifiedMixin, SemiSupervisedClassifierMixin, BaseEstimator):
    """Shared by :class:`LapSVC` and :class:`LapRLSC` (parameters documented there)."""

    def __init__(self, gamma_A: float = 1e-6, gamma_I: float = 1.0, *, kernel="rbf",
                 sigma=None, degree: int = 3, coef0: float = 1.0, poly_scale=None,
                 n_neighbors: int = 10, graph_weights: str = "binary",
                 normalized_laplacian: bool = True, laplacian_power: int = 1,
                 fit_intercept: bool = True, solver: str = "auto", solver_options=None,
                 early_stopping=None, warm_start: bool = False, block_size=None,
                 operator: str = "auto", n_landmarks: int = 500, max_iter=None, tol=None,
                 verbose: int = 0):
        self.gamma_A = gamma_A
        self.gamma_I = gamma_I
        self.kernel = kernel
        self.sigma = sigma
        self.degree = degree
        self.coef0 = coef0
        self.poly_scale = poly_scale
        self.n_neighbors = n_neighbors
        self.graph_weights = graph_weights
        self.normalized_laplacian = normalized_laplacian
        self.laplacian_power = laplacian_power
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.solver_options = solver_options
        self.early_stopping = early_stopping
        self.warm_start = warm_start
        self.block_size = block_size
        self.operator = operator
        self.n_landmarks = n_landmarks
        self.max_iter = max_iter
        self.tol = tol
        self.verbose = verbose

    def _loss(self):
        raise NotImplementedError

    def _problem(self, K, L, y_pm):
        return LapSVM(K, L, y_pm, self.gamma_A, self.gamma_I, loss=self._loss(),
                      bias=self.fit_intercept)

    # ------------------------------------------------------------------ validation
    def _check_params(self) -> None:
        self._check_solver_param()
        check_kernel_choice(self.kernel)
        check_positive(self.gamma_A, "gamma_A")
        check_positive(self.gamma_I, "gamma_I")
        check_graph_params(self.n_neighbors, self.graph_weights, self.sigma)
        check_int(self.laplacian_power, "laplacian_power", 1)
        for name in ("normalized_laplacian", "fit_intercept", "warm_start"):
            check_bool(getattr(self, name), name)
        if self.early_stopping not in RULES:
            raise ValueError(f"early_stopping must be one of {RULES}, got "
                             f"{self.early_stopping!r}.")
        if self.early_stopping is not None and self.solver not in ("auto", "fast", "pcg"):
            raise ValueError(f"early_stopping is a rule of the 'pcg' solver; it cannot be used "
                             f"with solver={self.solver!r}. Use solver='auto' or 'pcg'.")
        if self.block_size is not None:
            check_int(self.block_size, "block_size", 1)
        if self.operator not in OPERATORS:
            raise ValueError(f"operator must be one of {tuple(OPERATORS)}, got "
                             f"{self.operator!r}.")
        if self.operator not in ("auto", "dense"):
            if callable(self.kernel) or self.kernel == "precomputed":
                raise ValueError(f"operator={self.operator!r} recomputes a built-in kernel "
                                 "('rbf', 'poly' or 'linear') from X; it cannot take "
                                 f"kernel={self.kernel!r}.")
            allowed = OPERATOR_SOLVERS[self.operator]
            if self.solver not in ("auto", "fast", *allowed):
                raise ValueError(f"operator={self.operator!r} never forms K, which only "
                                 f"{allowed} respect; solver={self.solver!r} would form K. "
                                 f"Use solver='auto' or one of {allowed}.")
        check_int(self.n_landmarks, "n_landmarks", 1)

    def _precomputed(self) -> bool:
        return isinstance(self.kernel, str) and self.kernel == "precomputed"

    # ------------------------------------------------------------------ fit
    @fitting
    def fit(self, X, y, *, affinity=None, laplacian=None, X_val=None, y_val=None):
        """Fit on ``X`` (n, d) — or the (n, n) Gram matrix with ``kernel="precomputed"`` — and
        ``y`` (n,), ``-1`` marking unlabeled samples.

        ``affinity`` (n, n) replaces the kNN graph by a given symmetric non-negative W;
        ``laplacian`` (n, n) replaces the graph Laplacian altogether (used as given, with no
        normalization or power). ``X_val``, ``y_val``: labeled validation points for
        ``early_stopping="validation"`` or ``"mixed"`` (PCG [000 Alg. 3]).
        """
        self._check_params()
        X, layout = self._validate_X_y(X, y, accept_sparse=["csr", "csc"])
        n = X.shape[0]
        if self._precomputed() and X.shape[1] != n:
            raise ValueError(f"kernel='precomputed' needs the square (n, n) Gram matrix as X, "
                             f"got shape {X.shape}.")
        order = layout.order
        Xo = X[order][:, order] if self._precomputed() else X[order]
        kern, self.kernel_params_ = kernel_function(
            self.kernel, Xo, self.sigma, self.degree, self.coef0, self.poly_scale)
        kind = "polynomial" if self.kernel == "poly" else self.kernel
        self.operator_ = self._resolve_operator(n, X.shape[1])
        if self.operator_ == "nystrom":
            # Landmarks: a fixed-seed uniform sample of the training rows (reproducible fits).
            K = NystromOperator(Xo, kind, landmarks=min(int(self.n_landmarks), n), seed=0,
                                **self.kernel_params_)
        elif self.operator_ != "dense":
            K = KernelOperator(Xo, kind, dtype=OPERATORS[self.operator_], **self.kernel_params_)
        else:
            K = _dense_kernel(kern, Xo)
            warn_if_degenerate_kernel(K)
        L, W = graph_laplacian(
            Xo, K,
            affinity=None if affinity is None else _graph_input(affinity, "affinity", order,
                                                                True),
            laplacian_matrix=None if laplacian is None else _graph_input(
                laplacian, "laplacian", order, False),
            precomputed=self._precomputed(), n_neighbors=self.n_neighbors,
            weights=self.graph_weights, normalized=self.normalized_laplacian,
            power=self.laplacian_power)
        if W is not None:
            warn_if_disconnected(W, layout.n_labeled)
        self._kernel = kern
        self.X_fit_ = X
        targets = self._targets(layout)
        first = self._problem(K, L, targets[:, 0])
        problems = [first] + [first.with_labels(t) for t in targets.T[1:]]
        options = self._solver_options(layout, X_val, y_val)
        solutions = self._solve_all(problems, options)
        self._store(layout, problems, solutions)
        return self

    def _resolve_operator(self, n: int, d: int) -> str:
        """The operator kind of this fit. ``"auto"``: the dense K while it fits in memory, else
        the matrix-free operator (exact; never the Nyström approximation), as
        :func:`ssl_opt.operators.plan.kernel_plan` predicts (kept in ``operator_plan_``). A
        user kernel (precomputed or callable) is dense. An explicit ``"dense"`` that cannot
        fit is refused before K is allocated, with the plan in the message."""
        self.operator_plan_ = None
        if self._precomputed() or callable(self.kernel):
            return "dense" if self.operator == "auto" else self.operator
        if self.operator not in ("auto", "dense"):
            return self.operator
        plan = kernel_plan(n, d, landmarks=self.n_landmarks)
        self.operator_plan_ = plan
        if self.operator == "auto":
            return plan.choice
        if not plan.option("dense").fits:
            raise InsufficientMemoryError(
                f"operator='dense' needs {plan.option('dense').memory / 2**30:.3g} GiB for K "
                f"at n = {n}, more than the {plan.memory_budget / 2**30:.3g} GiB available. "
                f"Use operator='matrix-free' (exact, PCG) or 'nystrom' (approximate):\n"
                f"{plan.table()}")
        return "dense"

    @staticmethod
    def _targets(layout: LabelLayout) -> np.ndarray:
        if layout.n_classes == 2:
            return layout.binary_targets()[:, None]
        return layout.one_vs_rest_targets()

    def _solver_options(self, layout: LabelLayout, X_val, y_val) -> list[dict]:
        """Options per class: the user's ``solver_options``, early stopping and, for the
        validation rules, the validation kernel with that class's ±1 labels."""
        base = dict(self.solver_options or {})
        n_problems = 1 if layout.n_classes == 2 else layout.n_classes
        if self.early_stopping is None:
            return [base] * n_problems
        base["early_stopping"] = self.early_stopping
        if self.early_stopping == "stability":
            return [base] * n_problems
        if X_val is None or y_val is None:
            raise ValueError(f"early_stopping={self.early_stopping!r} needs labeled validation "
                             "points: pass X_val and y_val to fit.")
        X_val = checked_X(self, X_val, name="X_val", accept_sparse=["csr", "csc"],
                          reset=False)
        y_val = np.asarray(y_val)
        if y_val.shape != (X_val.shape[0],) or not np.isin(y_val, layout.classes).all():
            raise ValueError("y_val must hold one label of classes_ per row of X_val.")
        Xo = self.X_fit_[layout.order]
        if self._precomputed():
            K_val = np.asarray(X_val, dtype=np.float64)[:, layout.order]
        else:
            K_val = self._kernel(X_val, Xo)
        columns = [layout.classes[1]] if n_problems == 1 else list(layout.classes)
        return [{**base, "validation": (K_val, np.where(y_val == c, 1.0, -1.0))}
                for c in columns]

    def _solve_all(self, problems: list, options: list[dict]) -> list:
        """One solution per problem. The classes of a multi-class fit are one
        :class:`~ssl_opt.problems.OneVsRest` problem: ``select`` weighs one LU for every class
        (LapRLS) against the classes one by one (Newton then starts every class from one
        shared LapRLS factorization), see ``plugins/model/one_vs_rest.py``."""
        previous = self._previous_solutions()
        if previous is not None and len(previous) != len(problems):
            previous = None
        # K is recomputed on every product: the user asked for no stored K, which PCG honours
        products_only = self.operator_ in ("matrix-free", "matrix-free-float32")
        solver = "pcg" if products_only and self.solver in ("auto", "fast") else self.solver
        settings = iteration_settings(self)
        if len(problems) == 1:
            return [solve_with(problems[0], solver, options[0],
                               None if previous is None else previous[0], settings)]
        classes = OneVsRest(problems[0], np.column_stack([p.y for p in problems]))
        whole = solver in BACKEND_CHOICES or registry.get_solver(solver).supports(classes)
        if whole and previous is None and not any(options):
            return classes.split(solve_with(classes, solver, None, settings=settings))
        if solver not in BACKEND_CHOICES:
            settings_for(registry.get_solver(solver), settings, strict=True)
        return classes.split(solve(classes, solver="one-vs-rest", class_solver=solver,
                                   class_options=options, class_defaults=settings or None,
                                   warm_start=previous))

    def _store(self, layout: LabelLayout, problems: list, solutions: list) -> None:
        self._order = layout.order
        inv = layout.inverse
        alphas = np.column_stack([s.x["alpha"] for s in solutions])
        bs = np.array([float(s.x.get("b", 0.0)) for s in solutions])  # no b without a bias
        F = np.column_stack([p.decision_values(s.x["alpha"], b)
                             for p, s, b in zip(problems, solutions, bs, strict=True)])
        binary = layout.n_classes == 2
        self.dual_coef_ = alphas[inv, 0] if binary else alphas[inv]
        self.intercept_ = bs[0] if binary else bs
        self.decision_values_ = F[inv, 0] if binary else F[inv]
        self.transduction_ = self._labels_from(self.decision_values_)
        self._fit_probability(self.decision_values_[layout.order[:layout.n_labeled]],
                              layout.indicator())
        self.degenerate_ = warn_if_one_class_takes_all(
            self.transduction_[layout.order[layout.n_labeled:]], layout.n_classes)
        # A Nyström fit predicts through the feature map: f(x) = φ(x)ᵀ(Φᵀα) + b.
        factor = getattr(problems[0].K, "factor", None) if self.operator_ == "nystrom" else None
        self.nystrom_ = problems[0].K if factor is not None else None
        self._feature_coef = None if factor is None else np.asarray(
            factor.T @ alphas, dtype=np.float64)
        self.problem_ = problems[0] if binary else problems
        self.solution_ = solutions[0] if binary else solutions
        self.n_labeled_ = layout.n_labeled

    # ------------------------------------------------------------------ pickling
    def __getstate__(self):
        """The fitted state without the n×n kernel of a dense fit (8n² bytes; prediction
        needs ``X_fit_`` and the coefficients only): ``problem_`` is left out and rebuilt from
        ``X_fit_``, its graph and its labels at its first use after unpickling (by
        ``certificate()``)."""
        state = super().__getstate__()
        problems = state.get("problem_")
        if problems is not None and state.get("operator_") == "dense":
            many = problems if isinstance(problems, list) else [problems]
            del state["problem_"]
            state["_problem_recipe"] = (many[0].L, [p.y for p in many])
        return state

    def __getattr__(self, name: str):
        if name == "problem_" and "_problem_recipe" in self.__dict__:
            L, labels = self.__dict__.pop("_problem_recipe")
            order = self._order
            Xo = (self.X_fit_[order][:, order] if self._precomputed()
                  else self.X_fit_[order])
            first = self._problem(_dense_kernel(self._kernel, Xo), L, labels[0])
            problems = [first] + [first.with_labels(y) for y in labels[1:]]
            self.problem_ = problems[0] if len(problems) == 1 else problems
            return self.problem_
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # ------------------------------------------------------------------ predict
    def decision_function(self, X) -> np.ndarray:
        """``K(X, X_train) α + b``: (m,) for two classes (positive means ``classes_[1]``),
        (m, c) one-vs-rest scores otherwise. Computed in row blocks of at most
        ``block_size`` rows (default: 16 MiB of kernel per block)."""
        check_is_fitted(self, "dual_coef_")
        X = checked_X(self, X, accept_sparse=["csr", "csc"], reset=False)
        if self._precomputed() and X.shape[1] != self.X_fit_.shape[0]:
            raise ValueError(f"kernel='precomputed': X must be the (m, {self.X_fit_.shape[0]}) "
                             f"kernel between new and training points, got {X.shape}.")
        if getattr(self, "nystrom_", None) is not None:
            scores = self.nystrom_.features(X) @ self._feature_coef + self.intercept_
            return scores[:, 0] if scores.shape[1] == 1 else scores
        return kernel_expansion(self._kernel, X, self.X_fit_, self.dual_coef_, self.intercept_,
                                self.block_size)

    def _labels_from(self, scores: np.ndarray) -> np.ndarray:
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(np.intp)]
        return self.classes_[np.argmax(scores, axis=1)]

    def predict(self, X) -> np.ndarray:
        """Class labels: the sign of the decision function (two classes) or its argmax."""
        return self._labels_from(self.decision_function(X))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.pairwise = self._precomputed()
        return tags


def _dense_kernel(kern, Xo) -> np.ndarray:
    """The symmetric (n, n) Gram matrix ``kern(Xo, Xo)``, its shape checked."""
    n = Xo.shape[0]
    K = kern(Xo, Xo)
    if K.shape != (n, n):
        raise ValueError(f"the kernel returned shape {K.shape} on {n} points; a callable "
                         "kernel must return the (len(A), len(B)) Gram matrix.")
    return 0.5 * (K + K.T)


_COMMON_DOC = """
    Parameters
    ----------
    gamma_A, gamma_I : float > 0
        Ambient (RKHS) and intrinsic (graph) weights of [000 eq. 7] (with its ½ scaling).
    kernel : {"rbf", "poly", "linear", "precomputed"} or callable k(A, B)
        ``"rbf"`` is ``exp(−‖x − x'‖²/(2σ²))``; ``"precomputed"`` takes the Gram matrix as X
        at fit and the (m, n_train) cross kernel at predict.
    sigma : float > 0 or None
        RBF width; ``None`` takes the median distance between training points.
    degree, coef0, poly_scale : polynomial kernel ``(poly_scale·xᵀx' + coef0)^degree``
        (``poly_scale=None``: 1/n_features).
    n_neighbors : int
        kNN graph size (cut to n − 1 with a warning); ignored when an affinity or Laplacian
        is given to ``fit``.
    graph_weights : {"binary", "heat"}
        kNN edge weights (heat: ``exp(−d²/(2t²))`` with t the mean kNN distance).
    normalized_laplacian : bool
        ``I − D^{-1/2} W D^{-1/2}`` instead of ``D − W``.
    laplacian_power : int ≥ 1
        The power p of ``L^p`` [000 §6].
    fit_intercept : bool
        Include the unregularized bias b.
    solver : str
        ``"auto"`` (picked per size by :func:`ssl_opt.select`), ``"fast"``, ``"reference"``
        or a solver name (``"newton"``, ``"pcg"``, ``"laprls-direct"``, ``"cvxpy"``, ...).
    solver_options : dict or None
        Options passed to the solver (``tol``, ``max_iter``, ...).
    early_stopping : None, "stability", "validation" or "mixed"
        PCG's early-stopping rules [000 Alg. 2–3]; the validation rules need ``X_val``,
        ``y_val`` at fit.
    warm_start : bool
        Start from the previous fit's solution when the sizes match (e.g. along a grid of
        γs set with ``set_params``).
    block_size : int or None
        Rows of K(X_new, X_train) formed at a time by ``decision_function``.
    operator : {"auto", "dense", "matrix-free", "matrix-free-float32", "nystrom"}
        How K is held. ``"auto"`` (default): stored while it fits in half the available
        memory, else matrix-free; ``operator_`` says which and ``operator_plan_`` holds the
        predicted memory and time of every kind (:func:`ssl_opt.operators.plan.kernel_plan`).
        ``"dense"``: stored, every solver applies; refused with the plan when it cannot fit.
        ``"matrix-free"`` / ``"matrix-free-float32"``: recomputed from X on every product and
        never stored (:class:`ssl_opt.operators.KernelOperator`, float64 or float32 tiles; PCG
        only). ``"nystrom"``: replaced by its Nyström approximation ``K̃ = ΦΦᵀ`` on
        ``n_landmarks`` training rows sampled with a fixed seed
        (:class:`ssl_opt.operators.NystromOperator`; ``lowrank-newton`` or PCG): the fit is
        of K̃, not K, and ``solution_.info["approximation"]`` says how far apart they are
        (docs/scaling.md).
    n_landmarks : int
        Landmarks of ``operator="nystrom"`` (clipped to n); ignored otherwise.
""" + ITERATION_DOC + """
    Attributes
    ----------
    classes_, n_features_in_
    operator_ : the operator kind the fit used (``operator="auto"`` resolved)
    operator_plan_ : the :class:`~ssl_opt.operators.plan.KernelPlan` it was chosen from (None
        for a user kernel or an explicit matrix-free / Nyström operator)
    n_iter_ : the solver's iterations (one per class for one-vs-rest)
    dual_coef_ : (n,) or (n, c) — α in the order of the training samples
    intercept_ : float or (c,)
    transduction_ : labels predicted for the training samples
    decision_values_ : f on the training samples
    problem_, solution_ : the underlying problem(s) and solution(s), one per class for
        one-vs-rest; ``certificate()`` certifies them.
    kernel_params_ : the resolved kernel parameters (e.g. the default σ)
"""


class LapSVC(_ManifoldClassifier):
    __doc__ = """Laplacian SVM classifier trained in the primal [000 eq. 7]: squared-hinge loss by
    default (``loss`` takes any margin loss of :mod:`ssl_opt.components.losses`: "hinge" for
    the original LapSVM, "huber", "logistic", ...).
    """ + _COMMON_DOC

    def __init__(self, gamma_A: float = 1e-6, gamma_I: float = 1.0, *, loss="squared_hinge",
                 kernel="rbf", sigma=None, degree: int = 3, coef0: float = 1.0,
                 poly_scale=None, n_neighbors: int = 10, graph_weights: str = "binary",
                 normalized_laplacian: bool = True, laplacian_power: int = 1,
                 fit_intercept: bool = True, solver: str = "auto", solver_options=None,
                 early_stopping=None, warm_start: bool = False, block_size=None,
                 operator: str = "auto", n_landmarks: int = 500, max_iter=None, tol=None,
                 verbose: int = 0):
        super().__init__(gamma_A, gamma_I, kernel=kernel, sigma=sigma, degree=degree,
                         coef0=coef0, poly_scale=poly_scale, n_neighbors=n_neighbors,
                         graph_weights=graph_weights,
                         normalized_laplacian=normalized_laplacian,
                         laplacian_power=laplacian_power, fit_intercept=fit_intercept,
                         solver=solver, solver_options=solver_options,
                         early_stopping=early_stopping, warm_start=warm_start,
                         block_size=block_size, operator=operator, n_landmarks=n_landmarks,
                         max_iter=max_iter, tol=tol, verbose=verbose)
        self.loss = loss

    def _loss(self):
        return self.loss


class LapRLSC(_ManifoldClassifier):
    __doc__ = """Laplacian regularized least-squares classifier [000 §5]: the square loss
    ``(y − f)²``; one direct solve (all classes at once) or PCG.
    """ + _COMMON_DOC

    def _loss(self):
        return "square"

    def _problem(self, K, L, y_pm):
        return LapRLS(K, L, y_pm, self.gamma_A, self.gamma_I, bias=self.fit_intercept)
