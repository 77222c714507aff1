r"""Semi-supervised model selection: the labeled / unlabeled / validation / test split of the
paper protocols, a cross-validation splitter for ``GridSearchCV`` on semi-supervised targets,
and scores on the unlabeled (transductive) and test (out-of-sample) parts.

Protocol (Melacci & Belkin 2011, §6.2 and Table 2): the data are split into a test set
:math:`T` (in the paper one fold of a stratified 4-fold partition, "the same number of per class
examples as in the complete data set") and training data, which are divided into labeled
:math:`L`, unlabeled :math:`U` and validation :math:`V` points; :math:`V` is labeled but only
used to tune parameters, and :math:`L` and :math:`V` each hold at least one example of every
class. A classifier is trained on :math:`L \cup U` and its error is reported on :math:`U`
(transductive) and :math:`T` (out-of-sample).

Conventions: labels follow scikit-learn's semi-supervised convention, ``y == -1`` marks an
unlabeled sample (``LabelSpreading``, ``SelfTrainingClassifier``); estimators are fitted on
``X[split.train]`` with ``split.masked_labels(y)``.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.metrics import get_scorer
from sklearn.model_selection import BaseCrossValidator, StratifiedKFold
from sklearn.utils import _safe_indexing
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _num_samples

from ssl_opt.estimators._labels import UNLABELED, unlabeled_mask

__all__ = [
    "LabeledKFold",
    "SemiSupervisedSplit",
    "semi_supervised_split",
    "test_score",
    "unlabeled_score",
]


# ----------------------------------------------------------------------------- the split


def _index_array(value, name: str, n_samples: int) -> np.ndarray:
    idx = np.asarray(value)
    if idx.size == 0:
        return np.empty(0, dtype=np.intp)
    if idx.ndim != 1 or idx.dtype.kind not in "iu":
        raise ValueError(f"{name} must be a 1-D array of integer indices, got dtype {idx.dtype} "
                         f"and shape {idx.shape}.")
    if idx.min() < 0 or idx.max() >= n_samples:
        raise ValueError(f"{name} has indices outside 0..{n_samples - 1}; pass 0-based indices "
                         "(one_based=True for Matlab index files).")
    return np.sort(idx).astype(np.intp)


@dataclass(frozen=True, eq=False)  # arrays: compare the parts, not the objects
class SemiSupervisedSplit:
    """Disjoint index sets ``labeled`` (L), ``unlabeled`` (U), ``validation`` (V) and ``test``
    (T) into the ``n_samples`` rows of a data set; each is a sorted ``intp`` array.

    The training rows are ``train = sort(L ∪ U)``: fit an estimator on ``X[split.train]`` with
    ``split.masked_labels(y)`` (the labels of L, -1 on U), then score it with
    :func:`unlabeled_score` and :func:`test_score`. Build one with :func:`semi_supervised_split`
    or, from given index lists (e.g. the 1-based ``idxLabs`` / ``idxUnls`` rows of a benchmark
    ``.mat`` file), with :meth:`from_indices`.
    """

    labeled: np.ndarray
    unlabeled: np.ndarray
    validation: np.ndarray
    test: np.ndarray
    n_samples: int

    def __post_init__(self) -> None:
        n = self.n_samples
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
            raise ValueError(f"n_samples must be a positive integer, got {n!r}.")
        parts = {}
        for name in ("labeled", "unlabeled", "validation", "test"):
            idx = _index_array(getattr(self, name), name, int(n))
            idx.flags.writeable = False
            parts[name] = idx
            object.__setattr__(self, name, idx)
        object.__setattr__(self, "n_samples", int(n))
        every = np.concatenate(list(parts.values()))
        if np.unique(every).size != every.size:
            raise ValueError("labeled, unlabeled, validation and test must be disjoint (and "
                             "without repeats); some index occurs twice.")

    @classmethod
    def from_indices(cls, labeled, unlabeled, n_samples: int, *, validation=(), test=(),
                     one_based: bool = False) -> SemiSupervisedSplit:
        """A split from given index lists; ``one_based=True`` converts Matlab's 1-based indices
        (e.g. a row of ``idxLabs`` read with :func:`ssl_opt.datasets.load_mat`, whose values are
        floats) to 0-based ones. Rows in none of the lists belong to no part."""
        if not isinstance(one_based, bool):
            raise ValueError(f"one_based must be True or False, got {one_based!r}.")
        parts = []
        for name, value in (("labeled", labeled), ("unlabeled", unlabeled),
                            ("validation", validation), ("test", test)):
            arr = np.asarray(value).ravel()
            if arr.size and arr.dtype.kind == "f":
                if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
                    raise ValueError(f"{name} must hold integer indices, got non-integer values.")
                arr = arr.astype(np.int64)
            elif arr.size == 0:
                arr = np.empty(0, dtype=np.int64)
            parts.append(arr - 1 if one_based and arr.dtype.kind in "iu" else arr)
        return cls(*parts, n_samples=n_samples)

    @property
    def train(self) -> np.ndarray:
        """The training rows ``sort(labeled ∪ unlabeled)``."""
        return np.union1d(self.labeled, self.unlabeled)

    def _check_y(self, y, name: str) -> np.ndarray:
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != self.n_samples:
            raise ValueError(f"{name} must be 1-D with one label for each of the {self.n_samples} "
                             f"samples the split was made for, got shape {y.shape}.")
        return y

    def masked_labels(self, y) -> np.ndarray:
        """Labels of the training rows for fitting: a copy of ``y[self.train]`` (aligned with
        :attr:`train`) whose unlabeled rows are set to -1, scikit-learn's semi-supervised
        convention.

        Raises ``ValueError`` when -1 is itself the label of a labeled row (±1 labels): -1 would
        then mean "unlabeled"; relabel first, e.g. ``np.where(y == -1, 0, y)``.
        """
        y = self._check_y(y, "y")
        lab = y[self.labeled]
        if np.any(unlabeled_mask(lab)):
            raise ValueError("y has the label -1 on labeled rows, which scikit-learn reads as "
                             "'unlabeled'; relabel the classes first, e.g. "
                             "y = np.where(y == -1, 0, y).")
        train = self.train
        out = y[train].copy()
        if out.dtype.kind in "USO":  # string labels: -1 needs an object array
            out = out.astype(object)
        elif out.dtype.kind in "ub":
            out = out.astype(np.int64)
        out[np.isin(train, self.unlabeled, assume_unique=True)] = UNLABELED
        return out

    def __repr__(self) -> str:
        return (f"SemiSupervisedSplit(n_samples={self.n_samples}, labeled={self.labeled.size}, "
                f"unlabeled={self.unlabeled.size}, validation={self.validation.size}, "
                f"test={self.test.size})")


def _count(value, name: str, n: int, *, allow_none: bool = False) -> int | None:
    """A count given as an integer ``>= 0`` or a fraction in (0, 1) of the ``n`` samples."""
    if value is None and allow_none:
        return None
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"{name} must be >= 0, got {value}.")
        return int(value)
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and 0.0 < value < 1.0:
        return round(float(value) * n)
    raise ValueError(f"{name} must be an integer count >= 0 or a fraction in (0, 1) of the "
                     f"{n} samples, got {value!r}.")


def _rng(random_state) -> np.random.Generator:
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(2**31 - 1))
    if random_state is None or (isinstance(random_state, numbers.Integral)
                                and not isinstance(random_state, bool) and random_state >= 0):
        return np.random.default_rng(random_state)
    raise ValueError("random_state must be None, a non-negative integer, a numpy Generator or "
                     f"RandomState, got {random_state!r}.")


def _allocate(total: int, share: np.ndarray, available: np.ndarray, minimum: int,
              rng: np.random.Generator) -> np.ndarray:
    """Per-class counts ``m`` with ``sum(m) = total``, ``minimum <= m <= available``, closest to
    the quotas ``q = total * share``: start from ``clip(floor(q))``, then add (remove) one unit at
    a time where ``q - m`` (``m - q``) is largest, ties broken at random. Without binding bounds
    this is the largest-remainder rounding, so ``|m - q| < 1``."""
    quota = total * share
    m = np.clip(np.floor(quota).astype(np.int64), minimum, available)
    diff = total - int(m.sum())
    if diff == 0:
        return m
    classes = np.arange(share.size)
    if diff > 0:  # candidates: the j-th extra unit of class k has priority q_k - (m_k + j)
        room = available - m
        cls = np.repeat(classes, room)
        step = np.arange(cls.size) - np.repeat(np.cumsum(room) - room, room)
        priority = quota[cls] - (m[cls] + step)
    else:
        room = m - minimum
        cls = np.repeat(classes, room)
        step = np.arange(cls.size) - np.repeat(np.cumsum(room) - room, room)
        priority = (m[cls] - step) - quota[cls]
    pick = np.lexsort((rng.random(cls.size), -priority))[: abs(diff)]
    return m + np.sign(diff) * np.bincount(cls[pick], minlength=share.size)


def _take(pool: np.ndarray, codes: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Mask of the first ``counts[k]`` entries of class ``k`` in ``pool`` (a random order)."""
    c = codes[pool]
    order = np.argsort(c, kind="stable")
    sizes = np.bincount(c, minlength=counts.size)
    rank = np.empty(pool.size, dtype=np.int64)
    rank[order] = np.arange(pool.size) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    return rank < counts[c]


def _draw(pool, codes, total, share, minimum, stratify, rng, name) -> np.ndarray:
    """Mask of ``total`` entries of ``pool`` with at least ``minimum`` of every class."""
    available = np.bincount(codes[pool], minlength=share.size)
    if minimum and np.any(available < minimum):
        raise ValueError(f"no sample of some class is left for the {name} part; lower n_test "
                         "(or the other counts) so every class keeps a sample for it.")
    if stratify:
        return _take(pool, codes, _allocate(total, share, available, minimum, rng))
    first = _take(pool, codes, np.full(share.size, minimum))  # one of each class, at random
    rest = np.flatnonzero(~first)[: total - int(first.sum())]  # pool is in random order
    first[rest] = True
    return first


def semi_supervised_split(y, n_labeled, n_unlabeled=None, n_validation=0, n_test=0, *,
                          stratify: bool = True, random_state=None) -> SemiSupervisedSplit:
    r"""Split samples into labeled (L), unlabeled (U), validation (V) and test (T) parts.

    Follows the protocol of Melacci & Belkin (2011), §6.2: T is held out first (the paper takes
    one fold of a stratified 4-fold partition, i.e. ``n_test=0.25``); the remaining training data
    are divided into L, V and U, where L and V each hold at least one sample of every class, and
    U defaults to all the remaining training samples (their Table 2: ``|L|+|U|+|V|+|T| = n``).
    The paper draws L and V at random "without any additional balancing constraints"; with
    ``stratify=True`` (the default) every part instead gets its classes in the proportions of the
    whole data set: class ``k`` (``n_k`` of the ``n`` samples) gets the largest-remainder rounding
    of ``m * n_k / n`` samples of a part of size ``m``, so within one sample of that quota unless
    the minimum of one per class or a class running out forces more. ``stratify=False`` draws
    uniformly at random (after one sample per class for L and V). Within a class the samples are
    taken in the order of one seeded random permutation, so the split is reproducible.

    Parameters
    ----------
    y : array-like, shape (n,)
        The true class of every sample (any label values; -1 is an ordinary class here).
    n_labeled, n_unlabeled, n_validation, n_test : int or float
        Sizes of L, U, V and T: an integer count, or a fraction in (0, 1) of ``n`` (rounded).
        ``n_unlabeled=None`` puts every sample left after T, L and V in U.
        ``n_labeled`` (and ``n_validation`` when not 0) must be at least the number of classes.
    stratify : bool
    random_state : None, int, numpy Generator or RandomState

    Returns
    -------
    SemiSupervisedSplit
        Disjoint sorted index arrays ``labeled``, ``unlabeled``, ``validation``, ``test``.

    Raises
    ------
    ValueError
        When ``y`` is not 1-D class labels, a count is negative or not a fraction in (0, 1),
        ``n_labeled`` (or a non-zero ``n_validation``) is smaller than the number of classes, or
        the counts add up to more than ``n``.
    """
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y.ravel()
    if y.ndim != 1 or y.size == 0:
        raise ValueError(f"y must be a non-empty 1-D array of class labels, got shape {y.shape}.")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or inf; pass the true class of every sample.")
    check_classification_targets(y)
    if not isinstance(stratify, bool):
        raise ValueError(f"stratify must be True or False, got {stratify!r}.")
    n = y.size
    classes, codes = np.unique(y, return_inverse=True)
    k = classes.size
    n_l = _count(n_labeled, "n_labeled", n)
    n_v = _count(n_validation, "n_validation", n)
    n_t = _count(n_test, "n_test", n)
    n_u = _count(n_unlabeled, "n_unlabeled", n, allow_none=True)
    if n_l < k:
        raise ValueError(f"n_labeled={n_l} is smaller than the number of classes ({k}); the "
                         f"protocol needs at least one labeled sample per class, pass "
                         f"n_labeled >= {k}.")
    if 0 < n_v < k:
        raise ValueError(f"n_validation={n_v} is smaller than the number of classes ({k}); pass "
                         f"0 or n_validation >= {k} (one validation sample per class).")
    used = n_l + n_v + n_t + (n_u or 0)
    if used > n:
        raise ValueError(f"n_labeled + n_unlabeled + n_validation + n_test = {used} exceeds the "
                         f"{n} samples; lower the counts.")
    rng = _rng(random_state)
    share = np.bincount(codes, minlength=k) / n
    pool = rng.permutation(n)
    parts = {}
    for name, total, minimum in (("test", n_t, 0), ("labeled", n_l, 1),
                                 ("validation", n_v, 1 if n_v else 0),
                                 ("unlabeled", n_u, 0)):
        if total is None:  # U: everything left
            parts[name], pool = pool, pool[:0]
            continue
        chosen = _draw(pool, codes, total, share, minimum, stratify, rng, name)
        parts[name], pool = pool[chosen], pool[~chosen]
    return SemiSupervisedSplit(parts["labeled"], parts["unlabeled"], parts["validation"],
                               parts["test"], n_samples=n)


# ----------------------------------------------------------------------------- CV splitter


class LabeledKFold(BaseCrossValidator):
    """K-fold cross-validation over the labeled samples of semi-supervised targets.

    Only the labeled samples (``y != -1``) are split, into ``n_splits`` stratified folds
    (:class:`sklearn.model_selection.StratifiedKFold`). Each train set is every unlabeled sample
    plus the other labeled folds; each test set is one held-out labeled fold, so scikit-learn's
    default scorers (``estimator.score``, ``"accuracy"``, ...) see true labels only. This is the
    parameter search of the protocol when the validation labels are given to the search as part
    of ``y`` (Melacci & Belkin 2011, §6.3: parameters chosen by the error on V).

    Parameters
    ----------
    n_splits : int, >= 2
    shuffle : bool
        Shuffle each class's labeled samples before cutting the folds.
    random_state : None, int or RandomState
        Used when ``shuffle`` is True.
    """

    def __init__(self, n_splits: int = 3, shuffle: bool = True, random_state=None):
        self.n_splits = n_splits
        self.shuffle = shuffle
        self.random_state = random_state

    def get_n_splits(self, X=None, y=None, groups=None) -> int:
        """The number of folds, ``n_splits``."""
        return self.n_splits

    def split(self, X, y, groups=None):
        """Yield ``(train, test)`` index arrays (sorted); ``groups`` is ignored."""
        n_splits = self.n_splits
        if isinstance(n_splits, bool) or not isinstance(n_splits, numbers.Integral) \
                or n_splits < 2:
            raise ValueError(f"n_splits must be an integer >= 2, got {n_splits!r}.")
        if y is None:
            raise ValueError("LabeledKFold needs y (-1 marking unlabeled samples); pass y to "
                             "split / GridSearchCV.fit.")
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:
            y = y.ravel()
        n = _num_samples(X)
        if y.ndim != 1 or y.shape[0] != n:
            raise ValueError(f"y must be 1-D with one label per sample of X ({n}), got shape "
                             f"{y.shape}.")
        labeled = np.flatnonzero(~unlabeled_mask(y))
        unlabeled = np.flatnonzero(unlabeled_mask(y))
        if labeled.size < n_splits:
            raise ValueError(f"y has {labeled.size} labeled samples, fewer than "
                             f"n_splits={n_splits}; label more samples or lower n_splits.")
        folds = StratifiedKFold(n_splits, shuffle=self.shuffle,
                                random_state=self.random_state if self.shuffle else None)
        for train_lab, test_lab in folds.split(np.zeros((labeled.size, 1)), y[labeled]):
            yield (np.sort(np.concatenate([labeled[train_lab], unlabeled])),
                   np.sort(labeled[test_lab]))


# ----------------------------------------------------------------------------- scores


class _Transduced(ClassifierMixin, BaseEstimator):
    """The fitted labels of the training rows as a classifier of row indices, so that a
    scikit-learn scorer can score them: ``predict(rows)`` is ``transduction_[rows]`` and
    ``predict_proba(rows)`` ``label_distributions_[rows]`` when the estimator has those."""

    def _fit(self, estimator):
        self.labels_ = np.asarray(estimator.transduction_)
        self.proba_ = getattr(estimator, "label_distributions_", None)
        self.classes_ = getattr(estimator, "classes_", None)
        if self.classes_ is None:
            self.classes_ = np.unique(self.labels_)
        return self

    def predict(self, rows):
        return self.labels_[np.asarray(rows, dtype=np.intp).ravel()]

    @available_if(lambda self: self.proba_ is not None)
    def predict_proba(self, rows):
        return np.asarray(self.proba_)[np.asarray(rows, dtype=np.intp).ravel()]


def unlabeled_score(estimator, y_true, split: SemiSupervisedSplit, scoring="accuracy", *,
                    X=None) -> float:
    """Transductive score on the unlabeled part U of ``split``.

    ``estimator`` must have been fitted on ``X[split.train]`` with ``split.masked_labels(y)``.
    Its ``transduction_`` (and ``label_distributions_`` for probability scorers) on the rows of U
    are scored against ``y_true[split.unlabeled]``; an estimator without ``transduction_``
    predicts ``X[split.unlabeled]`` instead (pass the full ``X`` then).

    Parameters
    ----------
    estimator : fitted classifier
    y_true : array-like, shape (n,)
        True labels of all ``split.n_samples`` samples.
    split : SemiSupervisedSplit
    scoring : str or callable
        A scikit-learn scorer name (:func:`sklearn.metrics.get_scorer`) or a scorer callable
        ``scorer(estimator, X, y)``; the default is the accuracy, 1 - the error of the paper.
    X : array-like or sparse matrix, shape (n, d), optional
        All samples; needed only when the estimator has no ``transduction_``.
    """
    y_true = split._check_y(y_true, "y_true")
    if split.unlabeled.size == 0:
        raise ValueError("split has no unlabeled sample to score; pass n_unlabeled > 0.")
    scorer = get_scorer(scoring)
    target = y_true[split.unlabeled]
    if hasattr(estimator, "transduction_"):
        n_train = split.train.size
        if _num_samples(estimator.transduction_) != n_train:
            raise ValueError(f"estimator.transduction_ has {_num_samples(estimator.transduction_)} "
                             f"entries, not one per training row ({n_train}); fit it on "
                             "X[split.train] with split.masked_labels(y).")
        rows = np.searchsorted(split.train, split.unlabeled)
        return float(scorer(_Transduced()._fit(estimator), rows.reshape(-1, 1), target))
    if X is None:
        raise ValueError(f"{type(estimator).__name__} has no transduction_; pass X= (all "
                         "samples) so that the unlabeled rows can be predicted.")
    _check_rows(X, split)
    return float(scorer(estimator, _safe_indexing(X, split.unlabeled), target))


def test_score(estimator, X, y_true, split: SemiSupervisedSplit, scoring="accuracy") -> float:
    """Out-of-sample score on the test part T: ``scorer(estimator, X[split.test],
    y_true[split.test])`` with ``scorer = sklearn.metrics.get_scorer(scoring)``.

    ``X`` and ``y_true`` hold all ``split.n_samples`` samples; ``estimator`` is fitted (on
    ``X[split.train]``), and its ``predict`` / ``predict_proba`` / ``decision_function`` is
    applied to the test rows.
    """
    y_true = split._check_y(y_true, "y_true")
    if split.test.size == 0:
        raise ValueError("split has no test sample to score; pass n_test > 0.")
    _check_rows(X, split)
    scorer = get_scorer(scoring)
    return float(scorer(estimator, _safe_indexing(X, split.test), y_true[split.test]))


test_score.__test__ = False  # not a pytest test when imported into a test module


def _check_rows(X, split: SemiSupervisedSplit) -> None:
    n = _num_samples(X)
    if n != split.n_samples:
        raise ValueError(f"X has {n} rows but the split was made for {split.n_samples} samples; "
                         "pass all samples (not X[split.train]).")
