"""Warnings for runs that are degenerate in ways a user would not notice from the result.

* a kernel that is nearly the identity (width far too small: every point only resembles
  itself, so predictions away from the labeled points collapse to the bias) or nearly constant
  (width far too large: every point resembles every other one);
* a disconnected graph (the manifold term then cannot carry labels between components);
* an S3VM whose unlabeled predictions put all points in one class or contradict the class
  ratio it was asked to keep, or whose class ratio, taken from the labels, is far from what
  the labeled rows alone predict on the unlabeled ones;
* any classifier that puts every unlabeled point in one class.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from ssl_opt.exceptions import warn


class DegenerateProblemWarning(UserWarning):
    """The fitted problem is degenerate (kernel width, graph, class balance): read the message
    for the parameter to change."""


def _off_diagonal_sample(K: np.ndarray, size: int = 20000) -> np.ndarray:
    n = K.shape[0]
    rng = np.random.default_rng(0)
    i = rng.integers(0, n, size)
    j = rng.integers(0, n, size)
    keep = i != j
    return K[i[keep], j[keep]]


def warn_if_degenerate_kernel(K: np.ndarray, what: str = "kernel") -> None:
    """Warn when the Gram matrix ``K`` is nearly diagonal or nearly constant.

    Measured on a sample of off-diagonal entries against the mean diagonal: nearly the identity
    when the largest off-diagonal magnitude is below 1e-3 of it; nearly constant when the
    off-diagonal entries span less than 1e-3 of it.
    """
    if K.shape[0] < 3:
        return
    diag = float(np.mean(np.abs(np.diag(K))))
    off = _off_diagonal_sample(K)
    if diag <= 0 or off.size == 0:
        return
    if np.max(np.abs(off)) < 1e-3 * diag:
        warn(f"The {what} matrix is nearly the identity (off-diagonal entries below "
             f"1e-3 of the diagonal): the kernel width is too small for these data, "
             "so points far from labeled ones get the bias only. Increase the width "
             "(sigma) or leave it to the data-driven default.",
             DegenerateProblemWarning)
    elif np.ptp(off) < 1e-3 * diag and np.min(off) > 0.5 * diag:
        warn(f"The {what} matrix is nearly constant (off-diagonal entries within "
             "1e-3 of each other): the kernel width is too large for these data. "
             "Decrease the width (sigma) or leave it to the data-driven default.",
             DegenerateProblemWarning)


def warn_if_disconnected(W, labeled=None, what: str = "graph") -> int:
    """Warn when the graph of adjacency ``W`` has a connected component without a labeled
    point (``labeled``: a boolean mask or the number ``l`` of leading labeled points; ``None``
    warns on any disconnection). The Laplacian term cannot carry labels into such a component:
    its predictions come from the kernel alone. Returns the number of components."""
    Wm = W if sp.issparse(W) else sp.csr_matrix(W)
    n_comp, comp = connected_components(Wm, directed=False)
    if n_comp == 1:
        return 1
    if labeled is None:
        blind = n_comp
    else:
        mask = labeled if isinstance(labeled, np.ndarray) else np.arange(Wm.shape[0]) < labeled
        blind = n_comp - np.unique(comp[mask]).size
    if blind:
        warn(f"The {what} has {n_comp} connected components, {blind} of them without "
             "a labeled point: the Laplacian term cannot carry labels into those. "
             "Increase n_neighbors, pass a connected affinity, or label a point in "
             "each component.", DegenerateProblemWarning)
    return int(n_comp)


def warn_if_unbalanced(predictions_u: np.ndarray, ratio: float,
                       tolerance: float = 0.25) -> str | None:
    """Warn when ±1 predictions on the unlabeled points are all one class, or their positive
    fraction is off the requested ``ratio`` by more than ``tolerance`` (absolute). Returns
    the reason when the fit is degenerate (one class), else None."""
    if predictions_u.size == 0:
        return None
    frac = float(np.mean(predictions_u > 0))
    if frac in (0.0, 1.0):
        reason = "the S3VM put every unlabeled point in one class"
        warn("The S3VM put every unlabeled point in one class: the solution is "
             "degenerate. Check the class ratio r, lower lam_u, or add labels.",
             DegenerateProblemWarning)
        return reason
    if abs(frac - ratio) > tolerance:
        warn(f"The S3VM's unlabeled predictions are {frac:.0%} positive but the class "
             f"ratio it was asked to keep is {ratio:.0%}: the run may have converged "
             "to a poor (possibly flipped) labeling. Check r and lam_u.",
             DegenerateProblemWarning)
    return None


def one_class_takes_all(labels_u: np.ndarray, n_classes: int, minimum: int = 5) -> bool:
    """A classifier of ``n_classes ≥ 2`` classes put all of its ``≥ minimum`` unlabeled
    points (their fitted labels ``labels_u``) in one class."""
    return (n_classes >= 2 and labels_u.size >= minimum
            and bool(np.all(labels_u == labels_u[0])))


def warn_if_one_class_takes_all(labels_u: np.ndarray, n_classes: int,
                                minimum: int = 5) -> str | None:
    """Warn when :func:`one_class_takes_all`; returns that reason, or None."""
    if not one_class_takes_all(labels_u, n_classes, minimum):
        return None
    first = labels_u[0]
    first = first.item() if isinstance(first, np.generic) else first
    warn(f"Every one of the {labels_u.size} unlabeled points was put in class "
         f"{first!r}: the fit is degenerate (one class takes all). Check that the "
         "labeled points represent every class, and the regularization weights "
         "(a graph term too strong, or a kernel too wide).",
         DegenerateProblemWarning)
    return f"every unlabeled point was put in class {first!r}"


def warn_if_ratio_unsupported(ratio: float, supervised_fraction: float, label,
                              tolerance: float = 0.25) -> None:
    """Warn when the class ratio ``ratio``, taken from the labeled rows, differs by more
    than ``tolerance`` from ``supervised_fraction``, the share of unlabeled rows that a
    classifier of the labeled rows alone puts in class ``label``: the labeled rows are then
    unlikely to be a random sample of the classes, and the transduction keeps their share."""
    if abs(ratio - supervised_fraction) > tolerance:
        label = label.item() if isinstance(label, np.generic) else label
        warn(f"The class ratio r = {ratio:.2f} of class {label!r} was taken from the "
             "labeled rows, but an L2-SVM of the labeled rows alone puts "
             f"{supervised_fraction:.0%} of the unlabeled rows in that class: the "
             "labeled rows are likely not a random sample of the classes, and the "
             "transduction keeps their share. Pass ratio= with the share you expect.",
             DegenerateProblemWarning)
