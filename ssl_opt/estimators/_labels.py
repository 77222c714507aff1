"""Semi-supervised targets in scikit-learn's convention, mapped to the problems' conventions.

scikit-learn marks an unlabeled sample with ``y = -1`` (``LabelSpreading``, ``SelfTraining``),
in any order and with any label values. The problems (docs/design.md §3) want the ``l`` labeled
points first and binary labels ±1. :class:`LabelLayout` holds the map between the two: the
permutation that puts the labeled points first (stable, so each group keeps its order), the
sorted ``classes_``, and each labeled point's class index. ``classes_[1]`` is the +1 class of
a binary problem.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import column_or_1d

from ssl_opt.exceptions import warn

#: The value of ``y`` that marks an unlabeled sample.
UNLABELED = -1


class LabelConventionWarning(UserWarning):
    """``y`` looks written in another convention than scikit-learn's semi-supervised one
    (``-1`` unlabeled): read the message for the conversion."""


@dataclass(frozen=True)
class LabelLayout:
    """Where the labeled points are and which class each one has.

    Attributes
    ----------
    classes : ndarray, sorted class values (``UNLABELED`` excluded)
    order : ndarray of int, shape (n,)
        ``X[order]`` has the labeled points first.
    n_labeled : int
    codes : ndarray of int, shape (n_labeled,)
        Class index (into ``classes``) of each labeled point, in ``order``.
    """

    classes: np.ndarray
    order: np.ndarray
    n_labeled: int
    codes: np.ndarray

    @property
    def n(self) -> int:
        return self.order.size

    @property
    def n_classes(self) -> int:
        return self.classes.size

    @property
    def inverse(self) -> np.ndarray:
        """``inverse[i]`` is the position of original sample ``i`` in the reordered arrays."""
        inv = np.empty_like(self.order)
        inv[self.order] = np.arange(self.order.size)
        return inv

    def binary_targets(self) -> np.ndarray:
        """±1 labels of the labeled points: ``classes[1]`` → +1, ``classes[0]`` → −1."""
        if self.n_classes != 2:
            raise ValueError(f"binary_targets needs 2 classes, got {self.n_classes}.")
        return np.where(self.codes == 1, 1.0, -1.0)

    def one_vs_rest_targets(self) -> np.ndarray:
        """(n_labeled, n_classes) ±1 matrix: column k is +1 on class k, −1 elsewhere."""
        Y = -np.ones((self.n_labeled, self.n_classes))
        Y[np.arange(self.n_labeled), self.codes] = 1.0
        return Y

    def indicator(self) -> np.ndarray:
        """(n_labeled, n_classes) 0/1 matrix: row i has a 1 in the column of its class."""
        Y = np.zeros((self.n_labeled, self.n_classes))
        Y[np.arange(self.n_labeled), self.codes] = 1.0
        return Y


def unlabeled_mask(y: np.ndarray) -> np.ndarray:
    if y.dtype.kind in "iuf":
        return y == UNLABELED
    if y.dtype.kind == "b":
        return np.zeros(y.shape, dtype=bool)
    return np.array([isinstance(v, (int, float, np.integer, np.floating)) and v == UNLABELED
                     and not isinstance(v, bool) for v in y], dtype=bool)


def label_layout(y, n_samples: int, *, min_classes: int = 2,
                 allow_unlabeled: bool = True) -> LabelLayout:
    """Validate semi-supervised targets ``y`` and return their :class:`LabelLayout`.

    Raises ``ValueError`` naming the fix when ``y`` is not 1-D of length ``n_samples``, holds
    NaN or continuous values, has no labeled point, or fewer than ``min_classes`` classes.
    """
    if y is None:
        raise ValueError("This estimator requires y to be passed, but the target y is None; "
                         "pass one label per sample (-1 for unlabeled).")
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = column_or_1d(y, warn=True)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D (one label per sample, -1 for unlabeled), got shape "
                         f"{y.shape}.")
    if y.shape[0] != n_samples:
        raise ValueError(f"y has {y.shape[0]} entries but X has {n_samples} samples; pass one "
                         "label per row of X (-1 for unlabeled).")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or inf; mark unlabeled samples with -1.")
    _refuse_string_unlabeled(y)
    unlabeled = unlabeled_mask(y) if allow_unlabeled else np.zeros(y.shape, dtype=bool)
    labeled = ~unlabeled
    if not labeled.any():
        raise ValueError("y has no labeled sample (every entry is -1); label at least one "
                         "sample of each class.")
    y_lab = y[labeled]
    _refuse_mixed_types(y_lab)
    check_classification_targets(y_lab)
    classes, codes = np.unique(y_lab, return_inverse=True)
    _warn_if_zero_marks_unlabeled(y, unlabeled)
    if classes.size < min_classes:
        raise ValueError(f"y has {classes.size} class among its labeled samples; this "
                         f"estimator needs at least {min_classes} classes.")
    order = np.concatenate([np.flatnonzero(labeled), np.flatnonzero(unlabeled)])
    return LabelLayout(classes, order, int(labeled.sum()), codes.astype(np.intp))


def _is_text(values: np.ndarray) -> np.ndarray:
    return np.fromiter((isinstance(v, (str, bytes)) for v in values), dtype=bool,
                       count=values.size)


def _refuse_string_unlabeled(y: np.ndarray) -> None:
    """A ``'-1'`` among string labels would be a class of its own, not the unlabeled mark
    (scikit-learn's ``SelfTrainingClassifier`` refuses string ``y`` for this reason)."""
    if y.dtype.kind in "US":
        text = y.astype(str)
    elif y.dtype.kind == "O":
        text = np.array([v.decode() if isinstance(v, bytes) else v
                         for v in y[_is_text(y)]], dtype=str)
    else:
        return
    if np.any(np.char.strip(text) == str(UNLABELED)):
        raise ValueError(
            "y holds the string '-1', which would be read as a class of its own: the "
            "unlabeled mark is the integer -1. Convert y, e.g. y = y.astype(object); "
            "y[y == '-1'] = -1, or encode the labels as integers.")


def _refuse_mixed_types(y_lab: np.ndarray) -> None:
    if y_lab.dtype.kind != "O" or y_lab.size == 0:
        return
    text = _is_text(y_lab)
    if text.any() and not text.all():
        shown = [y_lab[np.argmax(text)], y_lab[np.argmin(text)]]
        raise ValueError(
            f"y mixes string and numeric labels (e.g. {shown[0]!r} and {shown[1]!r}); use one "
            "type for all labels, e.g. y = y.astype(str) with the unlabeled samples set "
            "to the integer -1 in an object array.")


def _warn_if_zero_marks_unlabeled(y: np.ndarray, unlabeled: np.ndarray) -> None:
    """Warn when ``y`` holds exactly -1, 0 and 1 with 0 on most samples: ±1 labels with 0
    for unlabeled, read here as classes 0 and 1 with the -1 samples unlabeled."""
    if y.dtype.kind not in "iuf":
        return
    values = np.unique(y)
    if values.size != 3 or not np.array_equal(values, [-1, 0, 1]):
        return
    zeros = int(np.count_nonzero(y == 0))
    if 2 * zeros > y.size and zeros > int(unlabeled.sum()):
        warn(
            f"y holds -1, 0 and 1 with 0 on {zeros} of {y.size} samples: -1 marks an "
            "unlabeled sample here and 0 is a class. If your labels are ±1 with 0 for "
            "unlabeled, convert them first: y = np.where(y == 0, -1, (y == 1).astype(int)) "
            "(class -1 becomes 0).", LabelConventionWarning)
