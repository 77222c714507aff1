r"""Sparse text-like semi-supervised data: file readers and the PCMAC loader (the generator,
:func:`~ssl_opt.datasets.text_generator.synthetic_text`, is in its own module).

These feed the linear semi-supervised SVM family (L2-SVM, TSVM, DA S3VM of Sindhwani & Keerthi
2006), which works on large sparse tf-idf matrices. Every matrix returned here is a float64
:class:`scipy.sparse.csr_matrix` in canonical format (sorted column indices, no duplicates);
nothing is densified.

Like :mod:`ssl_opt.datasets.synthetic`, the :class:`~ssl_opt.datasets.base.Dataset` instances
returned here put the ``n_labeled`` labeled rows first (``y == y_all[:n_labeled]``), the
unlabeled rows after them, and optional out-of-sample rows in ``X_test`` / ``y_test`` (0 rows
when there are none). The file readers :func:`load_svmlight` and :func:`load_mat` return the
files' contents (a tuple and a dict).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ssl_opt._validation import check_int
from ssl_opt.datasets.base import Dataset, resolve_data_file, shared_data_dir
from ssl_opt.exceptions import InvalidInputError

__all__ = [
    "load_svmlight",
    "load_mat",
    "load_pcmac",
    "shared_data_dir",
]


# ----------------------------------------------------------------------------- helpers


def existing_file(path, what: str) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidInputError(f"path must be a str or os.PathLike naming {what}, got {path!r}.")
    file = Path(path).expanduser()
    if not file.is_file():
        raise FileNotFoundError(f"{what} not found at {file}; pass path= pointing to the file.")
    return file


def _canonical_csr(mat) -> sp.csr_matrix:
    """Float64 CSR copy of a sparse matrix with sorted, merged column indices."""
    out = sp.csr_matrix(mat, dtype=np.float64, copy=True)
    out.sum_duplicates()  # also sorts the indices
    return out


# ----------------------------------------------------------------------------- file readers


def load_svmlight(
    path: str | Path, n_features: int | None = None, *, zero_based: bool | str = "auto"
) -> tuple[sp.csr_matrix, np.ndarray]:
    """Read a binary SVMlight / LIBSVM file as a float64 CSR matrix and ±1 labels.

    Parameters
    ----------
    path : str or Path
        The file (read with :func:`sklearn.datasets.load_svmlight_file`).
    n_features : int, optional
        Number of columns of ``X``; by default the largest feature index in the file. Use it to
        give train and test files the same width.
    zero_based : bool or "auto"
        Whether feature indices start at 0 (passed to scikit-learn). The default ``"auto"``
        assumes 1-based indices (the LIBSVM convention) unless an index 0 occurs, so pass
        ``True`` for a 0-based file whose first column is empty.

    Returns
    -------
    X : scipy.sparse.csr_matrix, shape (n, n_features)
        Float64, canonical format.
    y : ndarray, shape (n,)
        ±1 labels: of the two distinct labels in the file (e.g. {0, 1}, {1, 2} or {-1, 1}) the
        larger becomes +1 and the smaller −1.

    Raises
    ------
    FileNotFoundError
        When the file does not exist.
    InvalidInputError
        When the file does not hold exactly two distinct labels, is malformed, has NaN or inf
        entries, or has more features than ``n_features``.
    """
    from sklearn.datasets import load_svmlight_file

    file = existing_file(path, "SVMlight file")
    if n_features is not None:
        n_features = check_int(n_features, "n_features", 1)
    if not (zero_based == "auto" or isinstance(zero_based, bool)):
        raise InvalidInputError(f'zero_based must be True, False or "auto", got {zero_based!r}.')
    try:
        X, y = load_svmlight_file(
            str(file), n_features=n_features, dtype=np.float64, zero_based=zero_based
        )
    except ValueError as exc:
        raise InvalidInputError(
            f"{file} could not be read as an SVMlight file ({exc}); check its format"
            + (" and n_features" if n_features is not None else "")
            + "."
        ) from exc
    finite_features = bool(np.all(np.isfinite(X.data)))
    if not (finite_features and np.all(np.isfinite(y))):
        bad = "labels" if finite_features else "features"
        raise InvalidInputError(
            f"{file} has NaN or inf {bad}; remove or impute those entries before loading."
        )
    labels = np.unique(y)
    if labels.size != 2:
        shown = labels[:10].tolist() + (["..."] if labels.size > 10 else [])
        raise InvalidInputError(
            f"{file} must hold exactly two distinct labels for binary classification, found "
            f"{labels.size}: {shown}; relabel it as a one-vs-rest binary problem first."
        )
    y_pm = np.where(y == labels[1], 1.0, -1.0)
    return _canonical_csr(X), y_pm


def load_mat(path: str | Path, keys: str | Iterable[str] | None = None) -> dict:
    """Read the variables of a Matlab ``.mat`` file with :func:`scipy.io.loadmat`.

    Parameters
    ----------
    path : str or Path
        The ``.mat`` file.
    keys : str or iterable of str, optional
        Variables to return (in that order); by default all of them.

    Returns
    -------
    dict
        Variable name -> value, without loadmat's ``__header__``-style entries. Sparse matrices
        become float64 CSR (canonical format); dense numeric arrays become float64, with row and
        column vectors (shape ``(1, k)`` or ``(k, 1)``) squeezed to 1-D; anything else (strings,
        cells, structs) is returned as loadmat gives it.

    Raises
    ------
    FileNotFoundError
        When the file does not exist.
    InvalidInputError
        When a requested key is missing (the message lists the available keys), ``keys`` is
        not a string or strings, or the file is not a readable ``.mat`` file.
    """
    from scipy.io import loadmat, whosmat

    file = existing_file(path, ".mat file")
    if keys is not None:
        keys = [keys] if isinstance(keys, str) else list(keys)
        if not all(isinstance(k, str) for k in keys):
            raise InvalidInputError(f"keys must be a variable name or a list of names, got {keys}.")
    try:
        mat = loadmat(str(file), variable_names=keys)
        available = [name for name, _, _ in whosmat(str(file))] if keys is not None else None
    except Exception as exc:  # scipy raises assorted errors on a corrupt file
        raise InvalidInputError(f"{file} is not a readable .mat file: {exc}") from exc
    if keys is None:
        keys = [k for k in mat if not (k.startswith("__") and k.endswith("__"))]
    else:
        missing = [k for k in keys if k not in mat]
        if missing:
            raise InvalidInputError(
                f"{file} has no variable(s) {missing}; pass keys from the available ones: "
                f"{sorted(available)}."
            )
    out = {}
    for key in keys:
        value = mat[key]
        if sp.issparse(value):
            value = _canonical_csr(value)
        elif isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
            value = np.asarray(value, dtype=np.float64)
            if value.ndim == 2 and 1 in value.shape:
                value = value.ravel()
        out[key] = value
    return out


def _as_index_matrix(value, name: str, file: Path) -> np.ndarray:
    idx = np.atleast_2d(np.asarray(value, dtype=np.float64))
    if idx.ndim != 2 or not np.all(np.isfinite(idx)) or not np.all(idx == np.round(idx)):
        raise InvalidInputError(f"{file}: {name} must be a matrix of integer (1-based) indices.")
    return idx.astype(np.int64)


def load_pcmac(split: int = 0, path: str | Path | None = None) -> Dataset:
    """Load the PCMAC text benchmark (20 Newsgroups, Windows vs Mac) for one fixed split.

    Reads ``text1.mat`` (keys ``X`` sparse 1946x7511 tf-idf, ``y`` ±1, ``idxLabs`` 10x50 and
    ``idxUnls`` 10x1896 with 1-based Matlab indices, one split per row) from ``path`` (a file or
    a folder) or from :func:`~ssl_opt.datasets.synthetic.shared_data_dir`.

    Parameters
    ----------
    split : int
        Row of ``idxLabs`` / ``idxUnls`` to use (0-based).
    path : str or Path, optional
        The file or the folder holding it.

    Returns
    -------
    Dataset
        ``X`` (float64 CSR, never densified) ordered as [labeled rows of the split; unlabeled
        rows of the split], ``y`` the 50 labels, ``y_all`` all labels in that order. Rows that
        neither index list of the split names (none, in the public file) go to ``X_test`` /
        ``y_test``; otherwise those are empty (0 rows, same number of columns, ``X_test`` CSR).

    Raises
    ------
    FileNotFoundError
        When the file cannot be found.
    InvalidInputError
        When ``split`` is out of range or the file's contents are malformed (missing keys,
        labels other than ±1, indices out of range or repeated within a split).
    """
    check_int(split, "split", 0)  # the upper bound comes with the file
    file = resolve_data_file("text1.mat", path)
    mat = load_mat(file)
    missing = [k for k in ("X", "y", "idxLabs", "idxUnls") if k not in mat]
    if missing:
        raise InvalidInputError(f"{file} lacks the keys {missing}; is it the PCMAC text1.mat?")
    X = mat["X"]
    if not sp.issparse(X):  # load_mat squeezed a one-column matrix to 1-D
        X = np.asarray(X, dtype=np.float64)
        X = sp.csr_matrix(X.reshape(-1, 1) if X.ndim < 2 else X)
    y_all = np.asarray(mat["y"], dtype=np.float64).ravel()
    idx_lab = _as_index_matrix(mat["idxLabs"], "idxLabs", file)
    idx_unl = _as_index_matrix(mat["idxUnls"], "idxUnls", file)
    n = X.shape[0]
    if y_all.size != n or not np.all(np.isin(y_all, (-1.0, 1.0))):
        raise InvalidInputError(
            f"{file}: y must hold one ±1 label per row of X ({n}); the file is malformed."
        )
    if idx_lab.shape[0] != idx_unl.shape[0]:
        raise InvalidInputError(
            f"{file}: idxLabs has {idx_lab.shape[0]} splits but idxUnls {idx_unl.shape[0]}."
        )
    split = check_int(split, "split", 0, idx_lab.shape[0] - 1)
    order = np.concatenate([idx_lab[split], idx_unl[split]]) - 1
    if order.size and (order.min() < 0 or order.max() >= n):
        raise InvalidInputError(f"{file}: split {split} has indices outside 1..{n}.")
    if np.unique(order).size != order.size:
        raise InvalidInputError(f"{file}: split {split} names some rows twice.")
    covered = np.zeros(n, dtype=bool)
    covered[order] = True
    rest = np.flatnonzero(~covered)
    l = idx_lab.shape[1]
    yo = y_all[order]
    return Dataset(
        X=_canonical_csr(X[order]),
        y_all=yo,
        n_labeled=l,
        name=f"pcmac(split={split})",
        X_test=_canonical_csr(X[rest]),
        y_test=y_all[rest].copy(),
    )
