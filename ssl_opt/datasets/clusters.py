r"""Data for the non-parametric kernel learning (NPKL) experiments of [003 §4].

Hu, Wang & Chen (ICML 2011) learn a kernel matrix from *pairwise constraints* and evaluate it by
kernel k-means clustering (see :mod:`ssl_opt.problems.npkl.evaluation`). This module provides

* small multi-class data sets: the synthetic *chessboard* and *double-spiral* sets of Hoi et
  al. (2007) and scikit-learn's bundled *iris* and *wine* (first group of [003 §4.2], Table 3),
  each a :class:`~ssl_opt.datasets.base.Dataset` whose every point's class is known
  (``n_labeled = n``, so ``y == y_all``, int64 labels ``0 .. k-1``; ``n_clusters`` is ``k``):
  the pairwise constraints are drawn from those classes and clusterings are scored against them;
* the paper's constraint budget :func:`paper_constraint_count` (:math:`4n \times 30\%` pairs for
  "much" and :math:`4n \times 10\%` for "little" side information, [003 §4.2]);
* :func:`pairwise_constraints`, which draws random must-link / cannot-link pairs, half of each
  kind as in the paper.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ssl_opt._validation import check_bool, check_choice, check_int, check_nonnegative
from ssl_opt.datasets.base import Dataset, check_seed
from ssl_opt.exceptions import InvalidInputError

__all__ = [
    "chessboard",
    "double_spiral",
    "load_iris_data",
    "load_wine_data",
    "paper_constraint_count",
    "pairwise_constraints",
]


# ----------------------------------------------------------------------------- helpers


def _check_noise(noise) -> float:
    if isinstance(noise, bool) or not isinstance(noise, numbers.Real):
        raise InvalidInputError(f"noise must be a real number >= 0, got {noise!r}.")
    return check_nonnegative(noise, "noise")


def _split_counts(n: int) -> tuple[int, int]:
    """Class sizes ``(n - n // 2, n // 2)``: the first class gets the extra point."""
    return n - n // 2, n // 2


def _labeled_clusters(X: np.ndarray, y: np.ndarray, name: str) -> Dataset:
    """A clustering set: every point's class is known (``n_labeled = n``)."""
    return Dataset(X=X, y_all=y, n_labeled=y.size, name=name)


def _round_half_up(x: float) -> int:
    """``floor(x + 1/2)``; values within 1e-9 below a tie count as the tie (float noise)."""
    return int(math.floor(x + 0.5 + 1e-9))


# ----------------------------------------------------------------------------- synthetic sets


def chessboard(n: int = 100, seed: int = 0) -> Dataset:
    r"""Points on a 4x4 chessboard of unit cells, labeled by the colour of their cell.

    The board is :math:`[0, 4)^2`; the label of :math:`x = (x_1, x_2)` is the parity
    :math:`(\lfloor x_1 \rfloor + \lfloor x_2 \rfloor) \bmod 2` of its cell, so no line (nor any
    low-degree boundary) separates the classes. This is the *chessboard* set of Hoi et al.
    (2007), used with ``n = 100`` and 120 constraints in [003 §4.2, Table 3].

    Every point is uniform on the board, but the class sizes are fixed rather than binomial:
    class 0 has ``n - n // 2`` points and class 1 has ``n // 2``. (Each point first gets its
    class, then a cell uniformly among the 8 cells of that colour, then a uniform position in
    the cell; an equal-weight mixture of the uniform laws on the two colours is the uniform law
    on the board.) The rows are in random order.
    """
    n = check_int(n, "n", 2)
    rng = check_seed(seed)
    n0, n1 = _split_counts(n)
    y = np.concatenate([np.zeros(n0, dtype=np.int64), np.ones(n1, dtype=np.int64)])
    y = rng.permutation(y)
    # Cells of each colour: (a, b) with (a + b) % 2 == colour, a, b in 0..3.
    a, b = np.meshgrid(np.arange(4), np.arange(4), indexing="ij")
    cells = np.stack([a.ravel(), b.ravel()], axis=1)
    colour = cells.sum(axis=1) % 2
    by_colour = np.stack([cells[colour == 0], cells[colour == 1]])  # (2, 8, 2)
    pick = rng.integers(0, 8, size=n)
    corner = by_colour[y, pick].astype(np.float64)
    X = corner + rng.random((n, 2))
    return _labeled_clusters(X, y, f"chessboard(n={n})")


def double_spiral(n: int = 100, noise: float = 0.03, seed: int = 0) -> Dataset:
    r"""Two interleaved Archimedean spirals in the plane (classes 0 and 1).

    Class 0 is :math:`r(\theta)\,(\cos\theta, \sin\theta)` with :math:`r(\theta) =
    \theta / \theta_1`, :math:`\theta \in [\theta_0, \theta_1] = [\pi/2, 5\pi/2]` (one full
    turn, radius from 1/5 to 1); class 1 is the same curve rotated by :math:`\pi`. Arc length
    grows like :math:`\theta^2`, so the :math:`m` points of a class are placed at jittered
    arc-length quantiles :math:`u_i = (i + v_i)/m`, :math:`v_i \sim U[0, 1)`,
    :math:`\theta_i = \sqrt{\theta_0^2 + u_i(\theta_1^2 - \theta_0^2)}` (stratified: no
    large gaps along an arm). Isotropic Gaussian noise of standard deviation ``noise`` is added.
    Neighbouring arms of different classes are :math:`\pi / \theta_1 = 0.4` apart radially
    (the two inner tips too), so for ``noise`` up to about 0.05 the classes are well separated
    by nearest neighbours but far from linearly separable. This mimics the *double-spiral* set
    of Hoi et al. (2007) used in [003 §4.2] (Table 3: 120 constraints, i.e. n = 100).

    Class 0 has ``n - n // 2`` points and class 1 has ``n // 2``; the rows are in random order.
    """
    n = check_int(n, "n", 2)
    noise = _check_noise(noise)
    rng = check_seed(seed)
    n0, n1 = _split_counts(n)
    y = np.concatenate([np.zeros(n0, dtype=np.int64), np.ones(n1, dtype=np.int64)])
    u = np.concatenate([(np.arange(m) + rng.random(m)) / m for m in (n0, n1)])
    th0, th1 = 0.5 * np.pi, 2.5 * np.pi
    theta = np.sqrt(th0**2 + u * (th1**2 - th0**2))
    r = theta / th1
    X = np.stack([r * np.cos(theta), r * np.sin(theta)], axis=1)
    X[y == 1] *= -1.0  # rotation by pi
    X += noise * rng.standard_normal((n, 2))
    order = rng.permutation(n)
    return _labeled_clusters(X[order], y[order], f"double_spiral(n={n}, noise={noise:g})")


# ----------------------------------------------------------------------------- UCI sets


def _bundled(loader, name: str, standardize) -> Dataset:
    standardize = check_bool(standardize, "standardize")
    X, y = loader(return_X_y=True)
    X = np.asarray(X, dtype=np.float64)
    y = np.unique(np.asarray(y), return_inverse=True)[1].astype(np.int64)
    if standardize:
        sd = X.std(axis=0)
        X = (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
        name += "(standardized)"
    return _labeled_clusters(np.ascontiguousarray(X), y, name)


def load_iris_data(standardize: bool = False) -> Dataset:
    r"""Fisher's *iris* (150 points, 4 features, 3 classes of 50) from scikit-learn's bundle.

    Uses :func:`sklearn.datasets.load_iris` (no download). With ``standardize=True`` each
    feature is z-scored, :math:`x_{ij} \leftarrow (x_{ij} - \bar x_j) / s_j` with the population
    standard deviation :math:`s_j` (``ddof=0``). First-group set of [003 §4.2]; with much
    side information the paper uses :math:`\mathrm{round}(4 \cdot 150 \cdot 0.3) = 180` pairs.
    """
    from sklearn.datasets import load_iris

    return _bundled(load_iris, "iris", standardize)


def load_wine_data(standardize: bool = False) -> Dataset:
    r"""UCI *wine* (178 points, 13 features, 3 classes of 59/71/48) from scikit-learn's bundle.

    Uses :func:`sklearn.datasets.load_wine` (no download). The raw features have very different
    scales (proline is in the hundreds to thousands), so Euclidean methods are dominated by one
    feature unless ``standardize=True``, which z-scores each feature (population standard
    deviation). First-group set of [003 §4.2]; 214 pairs with much side information.
    """
    from sklearn.datasets import load_wine

    return _bundled(load_wine, "wine", standardize)


# ----------------------------------------------------------------------------- constraints


def paper_constraint_count(n: int, setting: str = "much") -> int:
    r"""Number of pairwise constraints used in [003 §4.2] for ``n`` points.

    :math:`\mathrm{round}(4n \times 30\%)` for ``"much"`` and :math:`\mathrm{round}(4n \times
    10\%)` for ``"little"`` side information, rounding halves up (computed in exact integer
    arithmetic): iris (n = 150) → 180, wine (n = 178) → 214, chessboard (n = 100) → 120.
    """
    n = check_int(n, "n", 2)
    setting = check_choice(setting, "setting", ("much", "little"))
    percent = 30 if setting == "much" else 10
    return (4 * n * percent + 50) // 100


def _check_labels(y) -> np.ndarray:
    try:
        arr = np.asarray(y)
    except (TypeError, ValueError) as exc:  # pragma: no cover - ragged input
        raise InvalidInputError(f"y must be a 1-D vector of integer class labels: {exc}") from exc
    if arr.ndim != 1:
        raise InvalidInputError(f"y must be 1-D, got an array with shape {arr.shape}.")
    if arr.dtype == np.bool_ or not (
        np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
    ):
        raise InvalidInputError(
            f"y must hold integer class labels, got dtype {arr.dtype}; encode classes as "
            "integers (e.g. with np.unique(y, return_inverse=True)[1])."
        )
    if np.issubdtype(arr.dtype, np.floating):
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise InvalidInputError(
                "y must hold integer class labels; it contains non-integer, NaN or inf values."
            )
        arr = arr.astype(np.int64)
    if arr.size < 2:
        raise InvalidInputError(f"y must label at least 2 points to form a pair, got {arr.size}.")
    return arr.astype(np.int64, copy=False)


def _check_fraction(value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidInputError(f"must_link_fraction must be a real number, got {value!r}.")
    f = float(value)
    if not (0.0 <= f <= 1.0):
        raise InvalidInputError(f"must_link_fraction must be in [0, 1], got {value!r}.")
    return f


def _enumerate(kind_must: bool, y: np.ndarray) -> np.ndarray:
    """All admissible keys ``i*n + j`` (``i < j``) of one kind, sorted."""
    n = y.size
    i, j = np.triu_indices(n, k=1)
    same = y[i] == y[j]
    keep = same if kind_must else ~same
    return i[keep] * n + j[keep]


def _sample_keys(
    kind_must: bool, m: int, available: int, y: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    r"""``m`` distinct keys ``i*n + j`` (``i < j``), uniform among the admissible pairs.

    When ``m > available / 2`` all admissible pairs are enumerated and ``m`` are chosen without
    replacement. Otherwise ordered pairs are drawn i.i.d. uniformly from the admissible ordered
    pairs — :math:`i` with probability proportional to its number of partners (points of its
    own class but itself, for must-links; points of the other classes, for cannot-links), then
    the partner :math:`j` uniformly — and the first ``m`` distinct unordered pairs, in order of
    first appearance, are kept. By exchangeability this is a uniform random ``m``-subset. Each
    draw is new with probability >= 1/2, so few rounds are needed.
    """
    n = y.size
    if m == 0:
        return np.empty(0, dtype=np.int64)
    if 2 * m > available:
        keys = _enumerate(kind_must, y)
        return rng.choice(keys, size=m, replace=False)
    order = np.argsort(y, kind="stable")
    _, inverse, counts = np.unique(y, return_inverse=True, return_counts=True)
    start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.empty(n, dtype=np.int64)  # rank of each point within its class, class-sorted
    rank[order] = np.arange(n) - np.repeat(start, counts)
    size_i = counts[inverse]
    partners = (size_i - 1) if kind_must else (n - size_i)
    p = partners / partners.sum()
    seen = np.empty(0, dtype=np.int64)
    while True:
        need = m - _unique_first(seen, m).size
        batch = max(2 * need + 16, 64)
        i = rng.choice(n, size=batch, p=p)
        c = inverse[i]
        r = rng.integers(0, partners[i])  # rank of the partner among the admissible ones
        if kind_must:
            # r-th member of class c other than i: skip i's own rank within the class.
            r = r + (r >= rank[i])
            j = order[start[c] + r]
        else:
            # r-th point outside class c in class-sorted order.
            j = order[np.where(r < start[c], r, r + counts[c])]
        lo, hi = np.minimum(i, j), np.maximum(i, j)
        seen = np.concatenate([seen, lo * n + hi])
        first = _unique_first(seen, m)
        if first.size == m:
            return first


def _unique_first(keys: np.ndarray, m: int) -> np.ndarray:
    """The first ``m`` distinct values of ``keys`` in order of first appearance."""
    _, idx = np.unique(keys, return_index=True)
    return keys[np.sort(idx)[:m]]


def pairwise_constraints(
    y, n_pairs: int, seed: int = 0, must_link_fraction: float = 0.5
) -> tuple[np.ndarray, np.ndarray]:
    r"""Random must-link / cannot-link pairs from class labels, as in [003 §4.2].

    Returns ``(pairs, labels)``: ``pairs`` is an ``(m, 2)`` int64 array of *distinct unordered*
    pairs :math:`\{i, j\}`, stored with :math:`i < j`, and ``labels`` an int64 vector with
    :math:`+1` for a must-link (:math:`y_i = y_j`) and :math:`-1` for a cannot-link
    (:math:`y_i \ne y_j`). Exactly :math:`m_+ = \lfloor m f + 1/2 \rfloor` pairs are must-links
    (round half up; :math:`f` = ``must_link_fraction``, 1/2 in the paper, so an odd :math:`m`
    gets :math:`\lceil m/2 \rceil` must-links) and :math:`m - m_+` are cannot-links. Each kind
    is a uniformly random subset of the admissible pairs of that kind (see the sampler's notes:
    i.i.d. draws de-duplicated in order of first appearance, or enumeration when more than half
    of the admissible pairs are requested); the rows are shuffled so the kinds are interleaved.

    Parameters
    ----------
    y : array_like, shape (n,)
        Integer class labels (any integer values; floats with integral values are accepted).
    n_pairs : int
        Number of pairs :math:`m \ge 1`, e.g. :func:`paper_constraint_count`.
    seed : int, None or numpy.random.Generator
        Seed of :func:`numpy.random.default_rng`; the result is deterministic given it.
    must_link_fraction : float in [0, 1]

    Raises
    ------
    InvalidInputError
        If ``y`` is not a 1-D integer label vector, ``n_pairs < 1``, the fraction is outside
        [0, 1], cannot-links are requested but ``y`` has one class, or more pairs of a kind are
        requested than exist.
    """
    y = _check_labels(y)
    m = check_int(n_pairs, "n_pairs", 1)
    f = _check_fraction(must_link_fraction)
    rng = check_seed(seed)
    n = y.size
    m_must = _round_half_up(m * f)
    m_cannot = m - m_must
    counts = np.unique(y, return_counts=True)[1]
    avail_must = int(sum(int(c) * (int(c) - 1) // 2 for c in counts))
    avail_cannot = n * (n - 1) // 2 - avail_must
    if m_cannot > 0 and counts.size < 2:
        raise InvalidInputError(
            f"y holds a single class, so no cannot-link pair exists, but n_pairs={m} with "
            f"must_link_fraction={f:g} asks for {m_cannot}; use must_link_fraction=1 or labels "
            "with at least 2 classes."
        )
    for kind, want, have in (
        ("must-link", m_must, avail_must),
        ("cannot-link", m_cannot, avail_cannot),
    ):
        if want > have:
            raise InvalidInputError(
                f"n_pairs={m} with must_link_fraction={f:g} asks for {want} {kind} pairs but y "
                f"admits only {have}; lower n_pairs or change must_link_fraction."
            )
    keys = np.concatenate(
        [
            _sample_keys(True, m_must, avail_must, y, rng),
            _sample_keys(False, m_cannot, avail_cannot, y, rng),
        ]
    )
    labels = np.concatenate([np.ones(m_must, dtype=np.int64), -np.ones(m_cannot, dtype=np.int64)])
    perm = rng.permutation(m)
    keys, labels = keys[perm], labels[perm]
    pairs = np.stack([keys // n, keys % n], axis=1).astype(np.int64)
    return pairs, labels
