r"""Sparse text-like semi-supervised data: file readers, the PCMAC loader and a fast generator.

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

import numbers
import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ssl_opt._validation import check_int
from ssl_opt.datasets.base import Dataset, check_seed, resolve_data_file, shared_data_dir
from ssl_opt.exceptions import InvalidInputError

__all__ = [
    "load_svmlight",
    "load_mat",
    "load_pcmac",
    "synthetic_text",
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
        When the file does not hold exactly two distinct labels, is malformed, or has more
        features than ``n_features``.
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


# ----------------------------------------------------------------------------- generator

# Model constants of synthetic_text (see its docstring).
_ZIPF_EXPONENT = 1.0  # background word frequency ∝ 1 / (rank + _ZIPF_SHIFT) ** _ZIPF_EXPONENT
_ZIPF_SHIFT = 2.7
_TOPIC_SHARE = 0.1  # topic words per class, as a share of the vocabulary
_TOPIC_WEIGHT = 0.1  # probability that a token is drawn from the class topic
_TOPIC_EXPONENT = 0.7  # Zipf exponent of the word frequencies within a topic
_STOPWORD_SHARE = 0.01  # most frequent words, never topic words
_CHUNK = 2**22  # entries of a dense block in the completion step


def _word_distributions(d: int, rng: np.random.Generator) -> np.ndarray:
    """Rows: the word distributions of the −1 and +1 topics, shape (2, d)."""
    ranks = np.arange(d, dtype=np.float64)
    zipf = (ranks + _ZIPF_SHIFT) ** -_ZIPF_EXPONENT
    word_of_rank = rng.permutation(d)
    background = np.empty(d)
    background[word_of_rank] = zipf / zipf.sum()
    k = min(d // 2, max(1, round(_TOPIC_SHARE * d)))
    q = np.tile(background, (2, 1))
    if k == 0:
        return q
    head = min(int(np.ceil(_STOPWORD_SHARE * d)), d - 2 * k)
    topic_ranks = head + rng.choice(d - head, size=2 * k, replace=False)
    within = (np.arange(k) + 1.0) ** -_TOPIC_EXPONENT
    within /= within.sum()
    for c in range(2):
        words = word_of_rank[topic_ranks[c * k : (c + 1) * k]]
        q[c] *= 1.0 - _TOPIC_WEIGHT
        q[c, words] += _TOPIC_WEIGHT * within
    return q


def _word_sampler(q: np.ndarray):
    """Inverse-CDF sampler for the two rows of ``q`` with a guide table (Chen's method).

    ``guide[c, b]`` is the first word whose cumulative probability exceeds ``b / K``; a draw
    ``u`` starts there and steps right while ``cdf <= u`` (under one step on average with
    ``K = 4 d`` buckets), which is much faster than a binary search over a large vocabulary.
    """
    d = q.shape[1]
    cdf = np.cumsum(q, axis=1)
    cdf /= cdf[:, -1:]
    cdf[:, -1] = np.inf  # u < 1 always stops at the last word
    buckets = 4 * d
    grid = np.arange(buckets) / buckets
    guide = np.stack([np.searchsorted(cdf[c], grid, side="right") for c in range(2)])

    def draw(topic: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One word per entry of ``topic`` (0 or 1), drawn from that topic's distribution."""
        u = rng.random(topic.size)
        flat = topic * d  # offsets into the raveled cdf
        word = guide[topic, (u * buckets).astype(np.int64)]
        todo = np.flatnonzero(cdf.ravel()[flat + word] <= u)
        while todo.size:
            word[todo] += 1
            todo = todo[cdf.ravel()[flat[todo] + word[todo]] <= u[todo]]
        return word

    return draw


def _sample_documents(
    q: np.ndarray, topic: np.ndarray, m: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Word streams of ``topic.size`` documents, each cut at its ``m``-th distinct word.

    Document ``i`` draws words i.i.d. from ``q[topic[i]]`` until it holds ``m`` distinct words
    (successive sampling without replacement); ``tf`` counts each word's draws. The draws are
    made in vectorized rounds for the rows still short of ``m`` words. A row whose next round
    would need ``d`` or more draws (only when ``m`` is close to ``d``) gets its missing words
    from the Gumbel top-k trick on a dense block instead, which samples the same word set
    distribution; those words get ``tf = 1``.

    Returns ``(row, word, tf)`` sorted by row, then word.
    """
    n, d = topic.size, q.shape[1]
    draw = _word_sampler(q)
    out_keys, out_tf = [], []
    dense_rows, dense_need = [], []
    active = np.arange(n, dtype=np.int64)
    have = np.zeros(n, dtype=np.int64)  # distinct words so far, per active row
    length = np.zeros(n, dtype=np.int64)  # draws so far, per active row
    s_key = np.empty(0, dtype=np.int64)  # streams of the active rows: row * d + word
    growth = 1.25
    while active.size:
        draws = np.ceil((m - have) * growth).astype(np.int64) + 1
        dense = draws >= d
        if dense.any():
            tok = np.repeat(dense, length)
            keys, tf = np.unique(s_key[tok], return_counts=True)
            out_keys.append(keys)
            out_tf.append(tf)
            dense_rows.append(active[dense])
            dense_need.append(m - have[dense])
            s_key = s_key[~tok]
            keep = ~dense
            active, have, draws = active[keep], have[keep], draws[keep]
            if active.size == 0:
                break
        rows = np.repeat(active, draws)
        new_key = rows * d + draw(topic[rows], rng)
        # a stable sort by row keeps each stream in draw order (old draws before new ones)
        s_key = np.concatenate([s_key, new_key])
        s_row = s_key // d
        by_row = np.argsort(s_row, kind="stable")
        s_key, s_row = s_key[by_row], s_row[by_row]
        by_key = np.argsort(s_key, kind="stable")
        sorted_key = s_key[by_key]
        first = np.empty(s_key.size, dtype=bool)
        first[by_key] = np.concatenate([[True], sorted_key[1:] != sorted_key[:-1]])
        start = np.flatnonzero(np.concatenate([[True], s_row[1:] != s_row[:-1]]))
        length = np.diff(np.append(start, s_row.size))
        cum = np.cumsum(first, dtype=np.int64)
        before = np.concatenate([[0], cum[start[1:] - 1]])
        within = cum - np.repeat(before, length)  # distinct words up to and including a draw
        have = within[start + length - 1]
        done_row = have >= m
        done_tok = np.repeat(done_row, length)
        kept = sorted_key[(done_tok & (within <= m))[by_key]]  # sorted: count runs
        run = np.flatnonzero(np.concatenate([kept[:1] == kept[:1], kept[1:] != kept[:-1]]))
        out_keys.append(kept[run])
        out_tf.append(np.diff(np.append(run, kept.size)))
        s_key = s_key[~done_tok]
        active, have, length = active[~done_row], have[~done_row], length[~done_row]
        growth *= 2.0
    if dense_rows:
        rows = np.concatenate(dense_rows)
        order = np.argsort(rows)
        taken = np.concatenate(out_keys)
        extra = _complete_rows(q, topic, rows[order], np.concatenate(dense_need)[order], taken, rng)
        out_keys.append(extra)
        out_tf.append(np.ones(extra.size, dtype=np.int64))
    keys = np.concatenate(out_keys)
    tf = np.concatenate(out_tf)
    order = np.argsort(keys, kind="stable")  # a few sorted runs
    keys, tf = keys[order], tf[order]
    return keys // d, keys % d, tf.astype(np.float64)


def _complete_rows(q, topic, rows, need, taken, rng) -> np.ndarray:
    """Keys of ``need[j]`` more distinct words for the sorted ``rows[j]``, avoiding ``taken``.

    Gumbel top-k: the ``k`` largest of ``log q_w + Gumbel noise`` over the words not yet in the
    row are a successive sample without replacement from ``q``. Dense blocks of rows.
    """
    d = q.shape[1]
    logq = np.log(np.maximum(q, np.finfo(np.float64).tiny))
    taken = np.sort(taken)
    taken_row = taken // d
    step = max(1, _CHUNK // d)
    out = []
    for lo in range(0, rows.size, step):
        blk, blk_need = rows[lo : lo + step], need[lo : lo + step]
        score = logq[topic[blk]] - np.log(-np.log(rng.random((blk.size, d))))
        a, b = np.searchsorted(taken_row, [blk[0], blk[-1] + 1])
        mine = taken[a:b]
        pos = np.searchsorted(blk, mine // d)
        hit = blk[np.minimum(pos, blk.size - 1)] == mine // d
        score[pos[hit], mine[hit] % d] = -np.inf
        k = int(blk_need.max())
        top = np.argpartition(-score, k - 1, axis=1)[:, :k]
        rank = np.argsort(-np.take_along_axis(score, top, axis=1), axis=1)
        top = np.take_along_axis(top, rank, axis=1)
        take = np.arange(k)[None, :] < blk_need[:, None]
        out.append((blk[:, None] * d + top)[take])
    return np.concatenate(out)


def _label_block(size: int, n_pos: int, rng: np.random.Generator) -> np.ndarray:
    y = -np.ones(size, dtype=np.float64)
    y[:n_pos] = 1.0
    rng.shuffle(y)
    return y


def synthetic_text(
    n: int,
    d: int,
    nnz_per_row: int = 60,
    n_labeled: int = 400,
    r: float = 0.5,
    noise: float = 0.05,
    n_test: int = 0,
    seed: int | np.random.Generator | None = 0,
) -> Dataset:
    r"""Sparse tf-idf-like binary text classification data (fast, fully vectorized).

    Model: the vocabulary of ``d`` words has Zipf–Mandelbrot background frequencies
    :math:`p_k \propto (k + 2.7)^{-1}` over a random ranking of the words. Each class owns a
    disjoint topic :math:`T_\pm` of 10 % of the words (at least one; drawn outside the 1 % most
    frequent "stop words", with frequencies :math:`t_j \propto j^{-0.7}` inside the topic). A
    document of topic :math:`c` draws words i.i.d. from :math:`0.9\,p + 0.1\,t_c` until it
    holds exactly ``nnz_per_row`` distinct words (sampling without replacement), and the term
    frequency ``tf`` of a word is its number of draws. Entries are ``tf * idf`` with the
    smoothed :math:`\mathrm{idf}_j = \log\frac{1 + n}{1 + \mathrm{df}_j} + 1` (document
    frequencies of the ``n`` training rows, also used for the test rows), and every row is
    scaled to unit Euclidean norm.

    Labels: exactly ``round(r * size)`` positives in each of the labeled, unlabeled and test
    blocks (the labeled block keeps at least one point of each class); each row's topic equals
    its label except with probability ``noise`` (label noise). About 10 % of a row's draws come
    from its own topic on top of the background, which hits both topics alike (with 60 words
    and ``d = 2000``: ~11 words of the own topic, ~5 of the other), so a linear separator with
    a margin exists for almost every row (a linear SVM trained on all 5000 rows of such an
    instance without noise errs on ~2 % of new rows). Topic words are individually rare, so a
    few labeled rows see only part of each topic (~17 % error with 50 labels, ~4 % with 400),
    and the unlabeled rows, which co-cite topic words, carry the rest: the regime of
    transductive SVMs.

    Parameters
    ----------
    n : int
        Number of training rows (labeled + unlabeled).
    d : int
        Vocabulary size (columns).
    nnz_per_row : int
        Distinct words per row, ``<= d``.
    n_labeled : int
        Labeled rows, placed first; ``2 <= n_labeled <= n`` so both classes are labeled.
    r : float
        Fraction of positive labels, ``0 < r < 1``.
    noise : float
        Probability that a label disagrees with the row's topic, ``0 <= noise < 0.5``.
    n_test : int
        Out-of-sample rows in ``X_test`` / ``y_test``.
    seed : int, None or numpy Generator

    Returns
    -------
    Dataset
        ``X`` (n x d) and ``X_test`` (n_test x d) float64 CSR in canonical format.

    Raises
    ------
    InvalidInputError
        When an argument is out of range.
    """
    n = check_int(n, "n", 2)
    d = check_int(d, "d", 1)
    nnz_per_row = check_int(nnz_per_row, "nnz_per_row", 1, d)
    n_labeled = check_int(n_labeled, "n_labeled", 2, n)
    n_test = check_int(n_test, "n_test", 0)
    if isinstance(r, bool) or not isinstance(r, numbers.Real) or not 0.0 < r < 1.0:
        raise InvalidInputError(f"r (fraction of positives) must be in (0, 1), got {r!r}.")
    if isinstance(noise, bool) or not isinstance(noise, numbers.Real) or not 0 <= noise < 0.5:
        raise InvalidInputError(f"noise must be a real number in [0, 0.5), got {noise!r}.")
    rng = check_seed(seed)

    n_pos_lab = min(max(round(r * n_labeled), 1), n_labeled - 1)
    y_all = np.concatenate(
        [
            _label_block(n_labeled, n_pos_lab, rng),
            _label_block(n - n_labeled, round(r * (n - n_labeled)), rng),
        ]
    )
    y_test = _label_block(n_test, round(r * n_test), rng)
    y_both = np.concatenate([y_all, y_test])
    flip = rng.random(y_both.size) < noise
    topic = ((np.where(flip, -y_both, y_both) + 1) // 2).astype(np.int64)

    q = _word_distributions(d, rng)
    rows, words, tf = _sample_documents(q, topic, nnz_per_row, rng)

    train = rows < n
    df = np.bincount(words[train], minlength=d)
    idf = np.log((1.0 + n) / (1.0 + df)) + 1.0
    vals = tf * idf[words]
    total = n + n_test
    norms = np.sqrt(np.bincount(rows, weights=vals * vals, minlength=total))
    vals /= norms[rows]
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=total))])
    X_full = sp.csr_matrix((vals, words, indptr), shape=(total, d))
    X, X_test = (X_full, X_full[n:]) if n_test == 0 else (X_full[:n], X_full[n:])
    return Dataset(
        X=X,
        y_all=y_all,
        n_labeled=n_labeled,
        name=f"synthetic_text(n={n}, d={d}, nnz={nnz_per_row}, l={n_labeled})",
        X_test=X_test,
        y_test=y_test,
    )
