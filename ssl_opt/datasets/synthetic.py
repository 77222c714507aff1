r"""Small semi-supervised data sets: synthetic generators and the G50C benchmark loader.

Every function returns a :class:`~ssl_opt.datasets.base.Dataset` whose first ``n_labeled`` rows
of ``X`` are the labeled points (``y`` holds their ±1 labels, ``y == y_all[:n_labeled]``); the
remaining rows are unlabeled, with their true labels in ``y_all`` for measuring the transductive
error. ``X_test`` / ``y_test`` hold optional out-of-sample points (empty arrays when
``n_test=0``).
"""

from __future__ import annotations

import numbers

import numpy as np
from scipy.stats import norm

from ssl_opt._validation import check_int, check_positive
from ssl_opt.datasets.base import Dataset, check_seed, resolve_data_file, shared_data_dir
from ssl_opt.exceptions import InvalidInputError

__all__ = [
    "two_moons",
    "gaussian_blobs",
    "g50c_like",
    "shared_data_dir",
    "load_g50c",
]


# ----------------------------------------------------------------------------- helpers


def _balanced_labels(n: int, rng: np.random.Generator) -> np.ndarray:
    """Shuffled ±1 vector with ``n // 2`` entries −1 and ``n - n // 2`` entries +1."""
    y = np.ones(n, dtype=np.float64)
    y[: n // 2] = -1.0
    rng.shuffle(y)
    return y


def _arrange(
    X: np.ndarray,
    y_all: np.ndarray,
    n_labeled: int,
    rng: np.random.Generator,
    X_test: np.ndarray,
    y_test: np.ndarray,
    name: str,
) -> Dataset:
    """Move ``n_labeled`` randomly chosen points to the front.

    With ``n_labeled >= 2``, ``n_labeled // 2`` points come from each class (one more random
    point when ``n_labeled`` is odd), so both classes are labeled.
    """
    n = X.shape[0]
    if n_labeled >= 2:
        half = n_labeled // 2
        chosen = []
        for cls in (-1.0, 1.0):
            members = np.flatnonzero(y_all == cls)
            if members.size < half:
                raise InvalidInputError(
                    f"n_labeled={n_labeled} needs {half} points of class {cls:+.0f} but only "
                    f"{members.size} exist; lower n_labeled or raise n."
                )
            chosen.append(rng.choice(members, size=half, replace=False))
        lab = np.concatenate(chosen)
        if n_labeled % 2:
            rest = np.setdiff1d(np.arange(n), lab, assume_unique=True)
            lab = np.append(lab, rng.choice(rest, size=1))
        lab = rng.permutation(lab)
    else:
        lab = rng.choice(n, size=n_labeled, replace=False)
    mask = np.ones(n, dtype=bool)
    mask[lab] = False
    order = np.concatenate([lab, np.flatnonzero(mask)])
    Xo = np.ascontiguousarray(X[order], dtype=np.float64)
    yo = np.ascontiguousarray(y_all[order], dtype=np.float64)
    return Dataset(
        X=Xo,
        y_all=yo,
        n_labeled=n_labeled,
        name=name,
        X_test=np.ascontiguousarray(X_test, dtype=np.float64),
        y_test=np.ascontiguousarray(y_test, dtype=np.float64),
    )


def _check_sizes(n, n_labeled, n_test) -> tuple[int, int, int]:
    n = check_int(n, "n", 2)
    n_labeled = check_int(n_labeled, "n_labeled", 1, n)
    n_test = check_int(n_test, "n_test", 0)
    return n, n_labeled, n_test


def _two_gaussians(
    n: int, mean: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    r"""``n`` balanced ±1 points :math:`x = y\,\mu + \varepsilon`, :math:`\varepsilon \sim N(0, I)`.

    Exactly ``n // 2`` points have label −1.
    """
    y = _balanced_labels(n, rng)
    X = rng.standard_normal((n, mean.size)) + y[:, None] * mean[None, :]
    return X, y


# ----------------------------------------------------------------------------- generators


def two_moons(
    n: int = 200, n_labeled: int = 2, noise: float = 0.1, seed: int = 0, n_test: int = 0
) -> Dataset:
    r"""Two interleaving half circles (:func:`sklearn.datasets.make_moons`) with ±1 labels.

    The lower moon (scikit-learn class 1) is labeled +1, the upper one −1. ``n + n_test``
    points are drawn together with Gaussian noise of standard deviation ``noise``; the last
    ``n_test`` become the test set. The first ``n_labeled`` rows of ``X`` are labeled and hold
    ``n_labeled // 2`` points of each class when ``n_labeled >= 2``.
    """
    from sklearn.datasets import make_moons

    n, n_labeled, n_test = _check_sizes(n, n_labeled, n_test)
    if isinstance(noise, bool) or not isinstance(noise, numbers.Real) or not noise >= 0:
        raise InvalidInputError(f"noise must be a real number >= 0, got {noise!r}.")
    if not np.isfinite(noise):
        raise InvalidInputError(f"noise must be finite, got {noise!r}.")
    rng = check_seed(seed)
    state = int(rng.integers(0, 2**31 - 1))
    Xa, lab = make_moons(n_samples=n + n_test, noise=float(noise), shuffle=True, random_state=state)
    ya = 2.0 * lab.astype(np.float64) - 1.0
    return _arrange(
        Xa[:n], ya[:n], n_labeled, rng, Xa[n:], ya[n:], f"two_moons(n={n}, l={n_labeled})"
    )


def gaussian_blobs(
    n: int = 200,
    n_labeled: int = 10,
    d: int = 2,
    separation: float = 3.0,
    seed: int = 0,
    n_test: int = 0,
) -> Dataset:
    r"""Two unit-covariance Gaussian classes in :math:`\mathbb R^d` with equal priors.

    Class :math:`y \in \{-1, +1\}` has mean :math:`y\,(\delta/2)\,e` with
    :math:`e = \mathbf 1/\sqrt d` and :math:`\delta` = ``separation`` (the distance between the
    means), so the Bayes error is :math:`\Phi(-\delta/2)`. The training set has exactly
    ``n // 2`` points of class −1.
    """
    n, n_labeled, n_test = _check_sizes(n, n_labeled, n_test)
    d = check_int(d, "d", 1)
    delta = check_positive(separation, "separation")
    rng = check_seed(seed)
    mean = np.full(d, 0.5 * delta / np.sqrt(d))
    X, y = _two_gaussians(n, mean, rng)
    Xt, yt = _two_gaussians(n_test, mean, rng)
    return _arrange(X, y, n_labeled, rng, Xt, yt, f"gaussian_blobs(n={n}, d={d}, l={n_labeled})")


def g50c_like(
    n: int = 550, n_labeled: int = 50, d: int = 50, seed: int = 0, n_test: int = 0
) -> Dataset:
    r"""Synthetic G50C: two unit-covariance Gaussians in :math:`\mathbb R^d`, Bayes error 5%.

    Class :math:`y \in \{-1,+1\}` (equal priors) has mean :math:`y\,\mu\,e`, :math:`e =
    \mathbf 1/\sqrt d`, with :math:`\mu = \Phi^{-1}(0.95) \approx 1.6449` so that the Bayes
    classifier :math:`\operatorname{sign}(e^\top x)` errs with probability
    :math:`\Phi(-\mu) = 0.05`.
    """
    n, n_labeled, n_test = _check_sizes(n, n_labeled, n_test)
    d = check_int(d, "d", 1)
    rng = check_seed(seed)
    mu = float(norm.ppf(0.95))
    mean = np.full(d, mu / np.sqrt(d))
    X, y = _two_gaussians(n, mean, rng)
    Xt, yt = _two_gaussians(n_test, mean, rng)
    return _arrange(X, y, n_labeled, rng, Xt, yt, f"g50c_like(n={n}, d={d}, l={n_labeled})")


# ----------------------------------------------------------------------------- benchmark files


def load_g50c(split: int = 0, path=None) -> Dataset:
    """Load the G50C benchmark (550 points in 50 dimensions, 50 labeled) for one fixed split.

    Reads ``g50c.mat`` (keys ``X`` 550x50, ``y`` ±1, ``idxLabs`` 10x50, ``idxUnls`` 10x500 with
    1-based Matlab indices) from ``path`` (a file or a folder) or from :func:`shared_data_dir`.
    ``X`` is ordered as [labeled rows of split ``split``; unlabeled rows of that split]; ``y`` is
    the 50 labels, ``y_all`` all labels in that order, and the test arrays are empty.

    Raises
    ------
    FileNotFoundError
        When the file cannot be found.
    InvalidInputError
        When ``split`` is out of range or the file's contents are malformed.
    """
    from scipy.io import loadmat

    check_int(split, "split", 0)  # the upper bound comes with the file
    file = resolve_data_file("g50c.mat", path)
    mat = loadmat(str(file))
    missing = [k for k in ("X", "y", "idxLabs", "idxUnls") if k not in mat]
    if missing:
        raise InvalidInputError(f"{file} lacks the keys {missing}; is it the G50C .mat file?")
    X = np.asarray(mat["X"], dtype=np.float64)
    y_all = np.asarray(mat["y"], dtype=np.float64).ravel()
    idx_lab = np.atleast_2d(np.asarray(mat["idxLabs"], dtype=np.int64))
    idx_unl = np.atleast_2d(np.asarray(mat["idxUnls"], dtype=np.int64))
    n_splits = idx_lab.shape[0]
    split = check_int(split, "split", 0, n_splits - 1)
    n = X.shape[0]
    if X.ndim != 2 or y_all.size != n or not np.all(np.isin(y_all, (-1.0, 1.0))):
        raise InvalidInputError(
            f"{file}: X must be n x d and y n ±1 labels; the file is malformed."
        )
    order = np.concatenate([idx_lab[split], idx_unl[split]]) - 1
    if order.size != n or not np.array_equal(np.sort(order), np.arange(n)):
        raise InvalidInputError(
            f"{file}: idxLabs/idxUnls row {split} is not a permutation of 1..{n}."
        )
    l = idx_lab.shape[1]  # noqa: E741
    yo = y_all[order]
    return Dataset(
        X=np.ascontiguousarray(X[order]), y_all=yo, n_labeled=l, name=f"g50c(split={split})")
