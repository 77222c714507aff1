"""Built-in small instances of the linear S3VM family, for ``ssl-opt certify`` (a plugin)."""

from __future__ import annotations

import numpy as np

from ssl_opt.datasets.synthetic import gaussian_blobs
from ssl_opt.datasets.text_generator import synthetic_text
from ssl_opt.examples import Example
from ssl_opt.hookspecs import hookimpl
from ssl_opt.problems.linear.problem import DAS3VM, TSVM, LinearSVM
from ssl_opt.selection.generators import Generator, geometric_scales


def _text_l2svm():
    data = synthetic_text(400, 600, nnz_per_row=25, n_labeled=400, r=0.4, seed=4)
    cost = np.where(data.y > 0, 1.5, 1.0)  # per-example costs, as for class weighting
    return LinearSVM(data.X, data.y, lam=1e-2, cost=cost)


def _tiny_blobs():
    # u = 10: the exhaustive reference enumerates the 252 balanced labelings. On this instance
    # TSVM stops at a local optimum and DA finds the global one.
    return gaussian_blobs(n=18, n_labeled=8, d=3, seed=3)


def _tsvm_tiny():
    data = _tiny_blobs()
    return TSVM(data.X, data.y, lam=0.1, lam_u=1.0)


def _da_tiny():
    data = _tiny_blobs()
    return DAS3VM(data.X, data.y, lam=0.1, lam_u=1.0, r=0.5)


def _tsvm_text():
    data = synthetic_text(300, 500, nnz_per_row=25, n_labeled=40, r=0.5, seed=5)
    return TSVM(data.X, data.y, lam=1e-3, lam_u=1.0)


@hookimpl
def register_examples():
    return [
        Example("l2svm-text", "linear", "L2-SVM with per-example costs, sparse text 400x600",
                _text_l2svm),
        Example("tsvm-tiny", "linear", "TSVM, Gaussian blobs n=18 (u=10: global optimum by "
                "enumeration)", _tsvm_tiny),
        Example("da-tiny", "linear", "DA S3VM, same instance as tsvm-tiny", _da_tiny),
        Example("tsvm-text", "linear", "TSVM, sparse text 300x500 with 40 labels (no global "
                "reference)", _tsvm_text),
    ]


def _text_at(kind: str):
    """Sparse text with n rows over n // 2 words, 25 words per row; every row labeled for the
    L2-SVM, 10 % labeled for TSVM and DA. ``operator="dask"`` puts X's rows on the workers of
    the default ``distributed.Client`` (:class:`~ssl_opt.operators.DaskDesign`)."""
    def build(n: int, seed: int, operator: str = "dense"):
        labeled = n if kind == "l2svm" else max(4, n // 10)
        data = synthetic_text(n, max(100, n // 2), nnz_per_row=25, n_labeled=labeled, r=0.5,
                              seed=seed)
        X = data.X
        if operator == "dask":  # rows on the workers of the default distributed.Client
            from ssl_opt.operators import DaskDesign

            X = DaskDesign(X, bias=True)
        if kind == "l2svm":
            return LinearSVM(X, data.y, lam=1e-2)
        if kind == "tsvm":
            return TSVM(X, data.y, lam=1e-3, lam_u=1.0)
        return DAS3VM(X, data.y, lam=1e-3, lam_u=1.0, r=0.5)

    return build


@hookimpl
def register_generators():
    grid = geometric_scales(200, 200_000)
    bench = (500, 2000, 8000, 32000, 128000)
    kinds = ("dense", "dask")
    return [
        Generator("linear/l2svm", ("nnz",), _text_at("l2svm"),
                  "L2-SVM on sparse text, n rows x n/2 words", grid, bench, kinds),
        Generator("linear/tsvm", ("nnz",), _text_at("tsvm"),
                  "TSVM on sparse text, 10 % labeled", grid, bench, kinds),
        Generator("linear/da", ("nnz",), _text_at("da"),
                  "DA S3VM on sparse text, 10 % labeled", grid, bench, kinds),
    ]
