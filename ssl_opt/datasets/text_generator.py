r"""A fast generator of sparse text-like semi-supervised data (:func:`synthetic_text`), for the
linear semi-supervised SVM family (L2-SVM, TSVM, DA S3VM of Sindhwani & Keerthi 2006) at the
sizes of its benchmarks: a float64 CSR tf-idf-like matrix in canonical format, never
densified, returned as a :class:`~ssl_opt.datasets.base.Dataset` with the ``n_labeled``
labeled rows first (the file readers and the PCMAC loader are in :mod:`ssl_opt.datasets.text`).
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp

from ssl_opt._validation import check_int
from ssl_opt.datasets.base import Dataset, check_seed
from ssl_opt.exceptions import InvalidInputError

__all__ = ["synthetic_text"]


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
