"""Interpolated Kneser-Ney word n-grams counted in numpy (Chen & Goodman 1998).

    tables = build_kneser_ney(word_stream, order=4)

`word_stream` is the text as word hashes (`sentence_words.word_stream`):
each sentence's words after `order - 1` BOS words, and an EOS word. The
highest order counts n-grams; each lower order counts, for an n-gram, how
many distinct words precede it (its continuation count: "francisco" is
frequent but follows one word). With one discount `D` per order (from the
counts of counts, `n1 / (n1 + 2 n2)`):

    P_k(w | h) = max(c(h w) - D, 0) / c(h .)  +  gamma(h) P_{k-1}(w | h')
    gamma(h)   = D * |{w : c(h w) > 0}| / c(h .)

ending in a uniform distribution over the vocabulary. The stored tables are
ARPA's: `P_k(w | h)` for each counted `(h, w)`, `gamma(h)` as `h`'s backoff
weight. `prune` drops n-grams of order 3 and up counted fewer times (their
probability is then the backoff's), as n-gram toolkits do to keep the
tables a size a decoder loads.

For the search's lookahead (`ngram_tables.py`) it also sums, under each
prefix of each known word, the unigram probabilities and, per word before,
the bigrams' discounted shares.
"""

from __future__ import annotations

import numpy as np

from t2t_lite.ngram import word_hash
from t2t_lite.ngram.ngram_tables import NgramTables, SortedTable

_EMPTY = SortedTable.of(np.zeros(0, np.int64), np.zeros(0))


def _distinct(columns: list[np.ndarray]) -> tuple[list[np.ndarray], np.ndarray]:
    """The distinct rows of `columns` (by their key) and how often each occurs."""
    key = word_hash.chain_np(word_hash.ngram_seed(len(columns)), columns)
    _, first, counts = np.unique(key, return_index=True, return_counts=True)
    return [column[first] for column in columns], counts


def _discount(counts: np.ndarray) -> float:
    ones, twos = np.sum(counts == 1), np.sum(counts == 2)
    return float(ones / (ones + 2 * twos)) if ones + 2 * twos else 0.5


def build_kneser_ney(
    stream: np.ndarray, order: int, vocabulary: dict[int, np.ndarray], prune: int = 1
) -> NgramTables:
    """The tables of an interpolated Kneser-Ney LM of `stream`.

    Args:
        stream: int64 word hashes, each sentence `order - 1` BOS words, its
            words, one EOS word (`sentence_words.word_stream`).
        order: the longest n-gram (2 and up).
        vocabulary: each word hash's target ids (for the lookahead table).
        prune: keep n-grams of order 3 and up counted at least this often.

    Returns:
        `NgramTables` (its `info` holds the counts and discounts).
    """
    if order < 2:
        raise ValueError(f"an n-gram LM's order must be at least 2, got {order}.")
    ends = np.nonzero(stream != word_hash.BOS_WORD)[0]  # each word and EOS ends n-grams
    columns = [stream[ends - (order - 1 - j)] for j in range(order)]
    columns, counts = _distinct(columns)
    grams, histories, discounts, sizes = {}, {}, {}, {}
    lower = None  # P_{k-1}(w | h') of each order-k n-gram, filled bottom-up below
    levels = []
    for k in range(order, 0, -1):
        levels.append((k, columns, counts))
        if k > 1:  # continuation counts: distinct words before each (k-1)-gram
            columns, counts = _distinct(columns[1:])
    vocabulary_size = len(vocabulary) + 1  # and EOS
    for k, columns, counts in reversed(levels):  # order 1 first
        discount = _discount(counts)
        history = (
            word_hash.chain_np(word_hash.history_seed(k - 1), columns[:-1])
            if k > 1
            else np.zeros(len(counts), np.int64)
        )
        unique, inverse = np.unique(history, return_inverse=True)
        total = np.bincount(inverse, weights=counts)
        types = np.bincount(inverse)
        gamma = discount * types / total
        if k == 1:
            lower = np.full(len(counts), 1.0 / vocabulary_size)
        else:
            lower = np.exp(_query(grams, histories, k - 1, columns[1:-1], columns[-1]))
        seen = np.maximum(counts - discount, 0) / total[inverse]  # the discounted share
        prob = seen + gamma[inverse] * lower
        if k == 2:  # P(w | v) = seen(v, w) + gamma(v) P_1(w): the context lookahead's terms
            spelled = columns[1] != word_hash.EOS_WORD
            bigrams = (columns[0][spelled], columns[1][spelled], seen[spelled])
        keep = counts >= prune if k >= 3 else np.ones(len(counts), bool)
        key = word_hash.chain_np(word_hash.ngram_seed(k), columns)
        grams[k] = SortedTable.of(key[keep], np.log(prob[keep]))
        histories[k] = SortedTable.of(unique, np.log(gamma)) if k > 1 else _EMPTY
        if k == 1:
            oov_log_prob = float(np.log(gamma[0] / vocabulary_size))
            spelled = columns[0] != word_hash.EOS_WORD
            unigram = (columns[0][spelled], prob[spelled])
        discounts[k], sizes[k] = discount, int(keep.sum())
    return NgramTables(
        order=order,
        grams=[grams[k] for k in range(1, order + 1)],
        histories=[histories[k] for k in range(1, order + 1)],
        lookahead=_log(_prefix_mass(vocabulary, *unigram)),
        context_lookahead=_prefix_mass(vocabulary, bigrams[1], bigrams[2], contexts=bigrams[0]),
        oov_log_prob=oov_log_prob,
        info={
            # The ids words are spelled with: the search looks no other id up.
            "letters": np.unique(np.concatenate(list(vocabulary.values()))).tolist(),
            "ngrams": {str(k): sizes[k] for k in sizes},
            "discounts": {str(k): round(discounts[k], 4) for k in discounts},
            "words": len(vocabulary),
            "tokens": int(len(ends)),
            "prune": prune,
        },
    )


def _query(grams, histories, order, context, words) -> np.ndarray:
    """ln P_order(w | h) from the tables built so far (orders 1..order)."""
    tables = NgramTables(
        order=order,
        grams=[grams[k] for k in range(1, order + 1)],
        histories=[histories[k] for k in range(1, order + 1)],
        lookahead=_EMPTY,
        context_lookahead=_EMPTY,
        oov_log_prob=-np.inf,
        info={},
    )
    history = np.stack(context, axis=1) if context else np.zeros((len(words), 0), np.int64)
    return tables.log_prob(history, words)


def _prefix_mass(
    spelling: dict[int, np.ndarray],
    words: np.ndarray,
    masses: np.ndarray,
    contexts: np.ndarray | None = None,
) -> SortedTable:
    """Each prefix of each row's word and the summed mass of the rows under it.

    Args:
        spelling: each word hash's target ids.
        words: int64 `[rows]`, each row's word.
        masses: `[rows]`, each row's mass.
        contexts: int64 `[rows]`: each row's previous word, which then
            heads the key (`word_hash.context_prefix_key`); None: keys are
            the prefixes' hashes.
    """
    distinct, row_word = np.unique(words, return_inverse=True)
    spelled = [spelling[w] for w in distinct.tolist()]
    lengths = np.array([len(ids) for ids in spelled], np.int64)
    longest_first = np.argsort(-lengths, kind="stable")
    rank = np.empty_like(longest_first)
    rank[longest_first] = np.arange(len(longest_first))
    rows = np.argsort(rank[row_word], kind="stable")  # rows by their word's rank
    row_rank = rank[row_word][rows]
    prefix = np.full(len(distinct), word_hash.WORD_SEED, np.int64)  # by rank
    keys, values = [], []
    for depth in range(int(lengths.max(initial=0))):
        reached = int(np.count_nonzero(lengths > depth))  # ranks [0, reached) go this deep
        ids = [spelled[i][depth] for i in longest_first[:reached].tolist()]
        prefix[:reached] = word_hash.extend_np(prefix[:reached], ids)
        taken = rows[: np.searchsorted(row_rank, reached)]
        key = prefix[row_rank[: len(taken)]]
        if contexts is not None:
            key = word_hash.context_prefix_key(contexts[taken], key)
        keys.append(key)
        values.append(masses[taken])
    if not keys:
        return _EMPTY
    unique, inverse = np.unique(np.concatenate(keys), return_inverse=True)
    return SortedTable.of(unique, np.bincount(inverse, weights=np.concatenate(values)))


def _log(table: SortedTable) -> SortedTable:
    with np.errstate(divide="ignore"):
        return SortedTable(table.keys, np.log(table.values))
