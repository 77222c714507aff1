r"""The modelling layer's reference variants (docs/modeling.md), built at any size.

Each builder ``name(n, seed) -> Model`` states one variant of a paper's problem as a
composition of terms; the same code (at small n) gives the ``ssl-opt certify`` instances
(:mod:`ssl_opt.modeling.examples`) and (at growing n) the benchmark
``benchmarks/bench_modeling.py``:

==========================  ================================================================
builder                     variant
==========================  ================================================================
``lapsvm_tv``               LapSVM (squared hinge) + graph total variation Σ w_ij |f_i − f_j|
``laprls_l1``               LapRLS + ℓ1 on α
``linear_huber_enet``       linear SVM with the Huber hinge + elastic net on w, sparse X
``linear_logistic_enet``    linear logistic model + elastic net on w, sparse X
``lass_entropy``            LASS + entropy Σ z log z
``lass_l1_graph``           LASS + ℓ1 graph term Σ w_ij ‖z_i − z_j‖₁
``ere_group``               robust ERE + row-group ℓ2,1 on W
``ere_huber``               ERE with Huber edge terms
``multiclass_laprls``       LapRLS with n × c outputs (one-vs-rest targets)
``multiclass_simplex``      the same with every row of scores on the simplex
``multiclass_l21``          multi-class LapRLS + row-group ℓ2,1 on α (classes share support)
``lapsvm_balance``          LapSVM (squared hinge) with the S3VM balance constraint on the
                            unlabeled outputs, mean f_u = 2r − 1
``lapsvm_box``              LapSVM (squared hinge) with the box −½ ≤ f ≤ ½ on every output
``label_propagation``       label spreading (Zhou et al. 2004) with every row of F on the
                            simplex: tr(FᵀLF) + μ‖F − Y‖², Y one-hot on the labeled rows
==========================  ================================================================
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ssl_opt.builders import knn_graph, laplacian, rbf_kernel
from ssl_opt.builders.laplacian import incidence_matrix
from ssl_opt.datasets.synthetic import two_moons
from ssl_opt.datasets.text_generator import synthetic_text
from ssl_opt.modeling.expressions import Variable
from ssl_opt.modeling.model import Model
from ssl_opt.modeling.terms import (
    L1,
    Balance,
    Box,
    ElasticNet,
    Entropy,
    FixedRows,
    GraphQuadratic,
    GraphTV,
    GroupNorms,
    HuberNorms,
    LinearScore,
    MarginLossTerm,
    Ridge,
    RKHSNorm,
    SimplexRows,
    SquaredError,
)


def _moons(n: int, seed: int):
    data = two_moons(n=n, n_labeled=max(4, n // 25), noise=0.1, seed=seed)
    K = rbf_kernel(data.X, sigma=0.35)
    W = knn_graph(data.X, n_neighbors=6)
    return data, K, W, laplacian(W)


def _kernel_model_terms(K, L, y, loss, gamma_A, gamma_I):
    """``½(Σ_{i≤l} φ(y_i f_i) + γ_A αᵀKα + γ_I fᵀLf)``, f = Kα + b (docs/design.md §4.1)."""
    n = K.shape[0]
    alpha, b = Variable("alpha", (n,)), Variable("b")
    f = K @ alpha + b
    terms = [MarginLossTerm(f[: len(y)], y, loss, 0.5), RKHSNorm(alpha, K, 0.5 * gamma_A),
             GraphQuadratic(f, L, 0.5 * gamma_I)]
    return alpha, f, terms


def lapsvm_tv(n: int = 120, seed: int = 0, tv: float = 0.05) -> Model:
    data, K, W, L = _moons(n, seed)
    _, f, terms = _kernel_model_terms(K, L, data.y, "squared_hinge", 1e-2, 1.0)
    return Model(terms + [GraphTV(f, W, tv)], prediction=f, name="lapsvm+tv")


def laprls_l1(n: int = 120, seed: int = 0, l1: float = 1e-3) -> Model:
    data, K, W, L = _moons(n, seed)
    alpha, f, terms = _kernel_model_terms(K, L, data.y, "square", 1e-2, 1.0)
    return Model(terms + [L1(alpha, l1)], prediction=f, name="laprls+l1")


def _text(n: int, seed: int):
    d = max(50, n // 2)
    data = synthetic_text(n=n, d=d, nnz_per_row=min(30, d // 2), n_labeled=n, seed=seed)
    return sp.csr_matrix(data.X), data.y


def _linear(n: int, seed: int, loss: str, name: str) -> Model:
    X, y = _text(n, seed)
    w, b = Variable("w", (X.shape[1],)), Variable("b")
    f = X @ w + b
    return Model([MarginLossTerm(f, y, loss, 1.0 / len(y)), ElasticNet(w, 1e-3, 5e-3)],
                 prediction=f, name=name)


def linear_huber_enet(n: int = 200, seed: int = 0) -> Model:
    return _linear(n, seed, "huber", "linear-huber+enet")


def linear_logistic_enet(n: int = 200, seed: int = 0) -> Model:
    return _linear(n, seed, "logistic", "linear-logistic+enet")


def _lass(N: int, seed: int):
    data = two_moons(n=N, n_labeled=2, noise=0.1, seed=seed)
    W = knn_graph(data.X, n_neighbors=8)
    rng = np.random.default_rng(seed + 1)
    G = np.zeros((N, 3))
    tagged = rng.choice(N, N // 3, replace=False)
    G[tagged, (data.y_all[tagged] > 0).astype(int)] = 1.0
    Z = Variable("Z", (N, 3))
    terms = [LinearScore(Z, G), GraphQuadratic(Z, laplacian(W), 0.1)]
    return W, Z, terms


def lass_entropy(N: int = 150, seed: int = 0, mu: float = 0.1) -> Model:
    _, Z, terms = _lass(N, seed)
    return Model(terms + [Entropy(Z, mu)], [SimplexRows(Z)], prediction=Z,
                 name="lass+entropy", unique_prediction=True)


def lass_l1_graph(N: int = 150, seed: int = 0, tv: float = 0.05) -> Model:
    W, Z, terms = _lass(N, seed)
    return Model(terms + [GraphTV(Z, W, tv, norm="l1")], [SimplexRows(Z)], prediction=Z,
                 name="lass+l1-graph")


def _ere(n: int, seed: int, huber: float | None):
    from ssl_opt.problems.ere.examples import clusters_with_outliers

    data = clusters_with_outliers(n=n, d=3, c=3, l_per_class=2, n_neighbors=6, outliers=0.1,
                                  seed=seed)
    X, Y = data.X, data.Y
    l, c, d = Y.shape[0], Y.shape[1], X.shape[1]
    F, Wv, b = Variable("F", (n, c)), Variable("W", (d, c)), Variable("b", (c,))
    A = sp.triu(sp.csr_matrix(data.A), k=1).tocoo()
    if huber is None:
        graph = GraphTV(F, data.A, 1.0, norm="l2")
    else:
        D = incidence_matrix(A.row, A.col, n)
        graph = HuberNorms(D @ F, A.data, delta=huber)
    terms = [graph, GroupNorms(X @ Wv + b - F, 1.0), Ridge(Wv, 0.05)]
    return F, Wv, terms, [FixedRows(F, np.arange(l), Y)]


def ere_group(n: int = 60, seed: int = 1, mu: float = 0.1) -> Model:
    F, Wv, terms, constraints = _ere(n, seed, None)
    return Model(terms + [GroupNorms(Wv, mu)], constraints, prediction=F, name="ere+l21")


def ere_huber(n: int = 60, seed: int = 1, delta: float = 0.1) -> Model:
    F, _, terms, constraints = _ere(n, seed, delta)
    return Model(terms, constraints, prediction=F, name="ere-huber-edges")


def _multiclass(n: int, seed: int, rkhs: float):
    from sklearn.datasets import make_blobs

    X, labels = make_blobs(n_samples=n, centers=3, cluster_std=1.2, random_state=seed)
    l_idx = np.concatenate([np.flatnonzero(labels == k)[:3] for k in range(3)])
    order = np.concatenate([l_idx, np.setdiff1d(np.arange(n), l_idx)])
    X, labels = X[order], labels[order]
    K = rbf_kernel(X, sigma=1.5)
    L = laplacian(knn_graph(X, n_neighbors=6))
    onehot = np.eye(3)[labels[: l_idx.size]]
    alpha, b = Variable("alpha", (n, 3)), Variable("b", (3,))
    f = K @ alpha + b
    regularizers = [RKHSNorm(alpha, K, rkhs), GraphQuadratic(f, L, 0.5)]
    return f, onehot, regularizers


def multiclass_laprls(n: int = 90, seed: int = 0, rkhs: float = 0.5e-2) -> Model:
    f, onehot, regularizers = _multiclass(n, seed, rkhs)
    targets = 2.0 * onehot - 1.0  # one-vs-rest ±1
    return Model([SquaredError(f[: len(onehot)], targets, 0.5)] + regularizers, prediction=f,
                 name="multiclass-laprls", unique_prediction=True)


def multiclass_simplex(n: int = 90, seed: int = 0, rkhs: float = 0.5) -> Model:
    """Simplex rows on f = Kα + b make PDHG's dual part carry K: with a small RKHS weight it
    needs tens of thousands of iterations (0.005: 43,000 at n = 45; 0.5: 5,000)."""
    f, onehot, regularizers = _multiclass(n, seed, rkhs)
    return Model([SquaredError(f[: len(onehot)], onehot, 0.5)] + regularizers,
                 [SimplexRows(f)], prediction=f, name="multiclass-simplex",
                 unique_prediction=True)


def multiclass_l21(n: int = 90, seed: int = 0, rkhs: float = 0.5e-2, mu: float = 1e-3) -> Model:
    f, onehot, regularizers = _multiclass(n, seed, rkhs)
    alpha = f.variables[0]
    return Model([SquaredError(f[: len(onehot)], 2.0 * onehot - 1.0, 0.5)] + regularizers
                 + [GroupNorms(alpha, mu)], prediction=f, name="multiclass-l21")


def _lapsvm(n: int, seed: int):
    data, K, W, L = _moons(n, seed)
    _, f, terms = _kernel_model_terms(K, L, data.y, "squared_hinge", 1e-2, 1.0)
    return data, f, terms


def lapsvm_balance(n: int = 120, seed: int = 0) -> Model:
    """``mean(f_u) = 2r − 1`` with r the labeled fraction of positives (the S3VM balance
    constraint [001 §3.1] on a kernel expansion)."""
    data, f, terms = _lapsvm(n, seed)
    l = len(data.y)
    r = float(np.mean(data.y > 0))
    return Model(terms, [Balance(f[l:], 2.0 * r - 1.0)], prediction=f, name="lapsvm+balance")


def lapsvm_box(n: int = 120, seed: int = 0, bound: float = 0.5) -> Model:
    """``−bound ≤ f ≤ bound`` on every output; below the margin 1 the box binds (at ±1 it
    would not: the squared hinge stops pushing at the margin)."""
    _, f, terms = _lapsvm(n, seed)
    return Model(terms, [Box(f, -bound, bound)], prediction=f, name="lapsvm+box")


def label_propagation(n: int = 90, seed: int = 0, mu: float = 0.1) -> Model:
    from sklearn.datasets import make_blobs

    X, labels = make_blobs(n_samples=n, centers=3, cluster_std=1.5, random_state=seed)
    L = laplacian(knn_graph(X, n_neighbors=6))
    Y = np.zeros((n, 3))
    for k in range(3):
        Y[np.flatnonzero(labels == k)[:3], k] = 1.0
    F = Variable("F", (n, 3))
    return Model([GraphQuadratic(F, L, 1.0), SquaredError(F, Y, mu)], [SimplexRows(F)],
                 prediction=F, name="label-propagation+simplex", unique_prediction=True)


#: Builder name → builder, in the order of docs/modeling.md.
VARIANTS = {
    "lapsvm_tv": lapsvm_tv,
    "laprls_l1": laprls_l1,
    "linear_huber_enet": linear_huber_enet,
    "linear_logistic_enet": linear_logistic_enet,
    "lass_entropy": lass_entropy,
    "lass_l1_graph": lass_l1_graph,
    "ere_group": ere_group,
    "ere_huber": ere_huber,
    "multiclass_laprls": multiclass_laprls,
    "multiclass_simplex": multiclass_simplex,
    "multiclass_l21": multiclass_l21,
    "lapsvm_balance": lapsvm_balance,
    "lapsvm_box": lapsvm_box,
    "label_propagation": label_propagation,
}
