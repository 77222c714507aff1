"""The one type every data set generator and loader returns, :class:`Dataset`, and the helpers
they share (seeds, the folder of the public data files).

A semi-supervised set puts its ``n_labeled`` labeled rows first; a clustering set knows the class
of every point. Either way ``y_all`` holds the labels of all rows (for the unlabeled ones: to
measure the transductive error, never for training) and ``y`` those of the labeled rows.
"""

from __future__ import annotations

import numbers
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from ssl_opt.exceptions import InvalidInputError

__all__ = ["ClusterData", "Dataset", "SSLData", "check_seed", "resolve_data_file",
           "shared_data_dir"]


@dataclass(repr=False)
class Dataset:
    """A data set: training points with labels, optional out-of-sample points.

    Attributes
    ----------
    X : ndarray or scipy.sparse.csr_matrix, shape (n, d), float64
        All training points; rows ``0 .. n_labeled-1`` are the labeled ones.
    y_all : ndarray, shape (n,)
        Labels of every row: ±1 (float64) for the binary semi-supervised sets, class indices
        ``0 .. k-1`` (int64) for the clustering sets.
    n_labeled : int
        Number of labeled rows, ``0 <= n_labeled <= n``: the first rows of ``X``. The clustering
        sets have ``n_labeled = n`` (their pairwise constraints are drawn from every point's
        class); 0 means the labels only serve to evaluate.
    name : str
    X_test : ndarray or csr_matrix, shape (n_test, d)
        Out-of-sample points; 0 rows when omitted (sparse when ``X`` is).
    y_test : ndarray, shape (n_test,)
        Their labels; empty, of ``y_all``'s dtype, when omitted.
    """

    X: Any
    y_all: np.ndarray
    n_labeled: int
    name: str
    X_test: Any = None
    y_test: np.ndarray | None = None

    def __post_init__(self) -> None:
        if getattr(self.X, "ndim", None) != 2:
            raise InvalidInputError(f"X must be an (n, d) matrix, got {type(self.X).__name__} "
                                    f"with shape {getattr(self.X, 'shape', None)}.")
        n, d = self.X.shape
        self.y_all = np.asarray(self.y_all)
        if self.y_all.shape != (n,):
            raise InvalidInputError(
                f"y_all must hold one label per row of X: shape ({n},), got {self.y_all.shape}.")
        if (isinstance(self.n_labeled, bool) or not isinstance(self.n_labeled, numbers.Integral)
                or not 0 <= self.n_labeled <= n):
            raise InvalidInputError(
                f"n_labeled must be an integer in [0, {n}] (rows of X), got {self.n_labeled!r}.")
        self.n_labeled = int(self.n_labeled)
        if self.X_test is None:
            self.X_test = (sp.csr_matrix((0, d), dtype=np.float64) if sp.issparse(self.X)
                           else np.empty((0, d), dtype=np.float64))
        if self.y_test is None:
            self.y_test = np.empty(0, dtype=self.y_all.dtype)
        self.y_test = np.asarray(self.y_test)
        if self.X_test.ndim != 2 or self.X_test.shape[1] != d:
            raise InvalidInputError(
                f"X_test must have d = {d} columns like X, got shape {self.X_test.shape}.")
        if self.y_test.shape != (self.X_test.shape[0],):
            raise InvalidInputError(
                f"y_test must hold one label per row of X_test: shape ({self.X_test.shape[0]},), "
                f"got {self.y_test.shape}.")

    @property
    def y(self) -> np.ndarray:
        """Labels of the labeled rows, ``y_all[:n_labeled]`` (a view)."""
        return self.y_all[: self.n_labeled]

    @property
    def n(self) -> int:
        """Number of training rows."""
        return int(self.X.shape[0])

    @property
    def n_clusters(self) -> int:
        """Number of distinct classes ``k`` among all training rows (``y_all``)."""
        return int(np.unique(self.y_all).size)

    def class_labels(self, y: np.ndarray | None = None) -> np.ndarray:
        """Labels as non-negative class indices: ±1 becomes 0/1 (+1 → 1), class indices stay.

        The estimators read ``-1`` as "unlabeled" (scikit-learn's semi-supervised convention),
        so ±1 labels must not reach them as such. ``y`` defaults to ``y_all``.
        """
        y = self.y_all if y is None else np.asarray(y)
        if np.isin(y, (-1.0, 1.0)).all():
            return (y > 0).astype(np.int64)
        return y.astype(np.int64)

    def semi_supervised_targets(self) -> np.ndarray:
        """``y`` for :mod:`ssl_opt.estimators` and scikit-learn: :meth:`class_labels` of the
        labeled rows and ``-1`` on the unlabeled ones (rows ``n_labeled`` onward)."""
        y = self.class_labels()
        y[self.n_labeled:] = -1
        return y

    def __repr__(self) -> str:
        kind = "sparse" if sp.issparse(self.X) else "dense"
        return (f"Dataset({self.name!r}: n={self.n}, d={self.X.shape[1]} {kind}, "
                f"n_labeled={self.n_labeled}, n_test={self.X_test.shape[0]}, "
                f"classes={self.n_clusters})")


#: Former names of :class:`Dataset` (the semi-supervised and the clustering data sets).
SSLData = Dataset
ClusterData = Dataset


# ----------------------------------------------------------------------------- shared helpers


def check_seed(seed) -> np.random.Generator:
    """A numpy Generator from a non-negative integer seed, ``None`` or a Generator."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or (isinstance(seed, numbers.Integral) and not isinstance(seed, bool)):
        if seed is not None and int(seed) < 0:
            raise InvalidInputError(f"seed must be a non-negative integer, got {seed!r}.")
        return np.random.default_rng(seed)
    raise InvalidInputError(
        f"seed must be a non-negative integer, None or a numpy Generator, got {seed!r}."
    )


def shared_data_dir() -> Path | None:
    """Folder holding the shared benchmark ``.mat`` files, or ``None`` when absent.

    Looked up in order: the directory named by the environment variable ``SSL_OPT_DATA``;
    ``../shared/data`` relative to the current working directory; ``../shared/data`` relative to
    each parent directory of this file (i.e. a ``shared/data`` folder next to the checkout).
    """
    candidates: list[Path] = []
    env = os.environ.get("SSL_OPT_DATA")
    if env:
        candidates.append(Path(env).expanduser())
    candidates.append(Path.cwd() / ".." / "shared" / "data")
    for parent in Path(__file__).resolve().parents:
        candidates.append(parent.parent / "shared" / "data")
    for cand in candidates:
        try:
            if cand.is_dir():
                return cand.resolve()
        except OSError:
            continue
    return None


def resolve_data_file(filename: str, path) -> Path:
    """``path`` (a file, or a folder holding ``filename``), else ``filename`` in
    :func:`shared_data_dir`; :class:`FileNotFoundError` saying where it looked otherwise."""
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise InvalidInputError(
            f"path must be None, a str or an os.PathLike naming {filename} or its folder, got "
            f"{path!r}.")
    if path is None:
        folder = shared_data_dir()
        if folder is None:
            raise FileNotFoundError(
                f"{filename} not found: no shared data folder (set SSL_OPT_DATA to the folder "
                f"holding {filename}, or pass path=...)."
            )
        file = folder / filename
    else:
        file = Path(path).expanduser()
        if file.is_dir():
            file = file / filename
    if not file.is_file():
        raise FileNotFoundError(
            f"{filename} not found at {file}; pass path= pointing to the file or its folder, "
            "or set SSL_OPT_DATA."
        )
    return file
