"""A word n-gram LM as sorted hash tables, ARPA's layout: saved, loaded and queried.

    tables = NgramTables.load(lm_dir)
    tables.log_prob(histories, words)    # ln P(word | history), numpy

Order k's table holds each kept k-gram's key (`word_hash.ngram_key`) and
its log probability; order k's histories (k - 1 words) hold their log
backoff weight. `P(w | h)` is the longest kept n-gram `(h', w)` whose
history `h'` ends `h`, times the backoff weights of the longer histories
(ARPA's rule; for interpolated Kneser-Ney the stored probability already
holds the lower orders' share). A word in no table costs `oov_log_prob`.

The search scores a word letter by letter with the lookahead tables, so a
hypothesis pays for a word as it spells it, not all at its end
(`decoding/search/word_ngram_scorer.py`): the probability of the words a
prefix begins given the word before, `P_2(p... | v)`, which is interpolated
Kneser-Ney's `seen(v, p) + gamma(v) U(p)`: `U` from the unigram lookahead
(each prefix of a known word, ln of its words' unigram probability),
`seen` from the context lookahead, `gamma(v)` the bigram history's backoff
weight.
"""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np

from t2t_lite.ngram import word_hash

TABLES_FILE = "ngram.npz"
INFO_FILE = "ngram.json"
LOOKAHEAD_TABLES = ("lookahead", "context_lookahead")


def has_ngram(lm_dir: str) -> bool:
    """Whether `lm_dir` holds a word n-gram LM (`t2t-lite-ngram`'s output)."""
    return os.path.exists(os.path.join(lm_dir, TABLES_FILE))


@dataclasses.dataclass
class SortedTable:
    """int64 keys, sorted, and one float32 value each."""

    keys: np.ndarray
    values: np.ndarray

    @classmethod
    def of(cls, keys: np.ndarray, values: np.ndarray) -> SortedTable:
        order = np.argsort(keys, kind="stable")
        return cls(keys[order].astype(np.int64), values[order].astype(np.float32))

    def get(self, keys: np.ndarray, default: float) -> tuple[np.ndarray, np.ndarray]:
        """`(found, values)`: each key's value, `default` where absent."""
        if not len(self.keys):
            return np.zeros(keys.shape, bool), np.full(keys.shape, default, np.float32)
        index = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
        found = self.keys[index] == keys
        return found, np.where(found, self.values[index], np.float32(default))


@dataclasses.dataclass
class NgramTables:
    """Everything the search reads of a word n-gram LM.

    Attributes:
        order: the longest n-gram.
        grams: per order k (index k - 1), the k-grams' log probabilities.
        histories: per order k (index k - 1; the first is empty), the
            (k-1)-word histories' log backoff weights.
        lookahead: each prefix of a known word (its hash chain) and the log
            of the unigram probability of the words it begins.
        context_lookahead: each (word v, prefix p) where a bigram `v w` with
            `w` beginning with `p` was counted, and the sum over those `w`
            of the bigram's discounted share (`P_2(w | v)` less
            `gamma(v) P_1(w)`, not a log); keyed by
            `word_hash.context_prefix_key`.
        oov_log_prob: the unigram log probability of a word in no table.
        info: how it was built (the problem, counts, discounts, vocabulary).
    """

    order: int
    grams: list[SortedTable]
    histories: list[SortedTable]
    lookahead: SortedTable
    context_lookahead: SortedTable
    oov_log_prob: float
    info: dict

    def save(self, lm_dir: str) -> str:
        """Writes `ngram.npz` and `ngram.json` into `lm_dir`; returns the tables' path."""
        os.makedirs(lm_dir, exist_ok=True)
        arrays = {}
        for name in LOOKAHEAD_TABLES:
            arrays[f"{name}_keys"] = getattr(self, name).keys
            arrays[f"{name}_values"] = getattr(self, name).values
        for k in range(1, self.order + 1):
            arrays[f"grams{k}_keys"] = self.grams[k - 1].keys
            arrays[f"grams{k}_values"] = self.grams[k - 1].values
            arrays[f"histories{k}_keys"] = self.histories[k - 1].keys
            arrays[f"histories{k}_values"] = self.histories[k - 1].values
        path = os.path.join(lm_dir, TABLES_FILE)
        partial = path + ".partial.npz"
        np.savez(partial, **arrays)
        info = dict(self.info, order=self.order, oov_log_prob=self.oov_log_prob)
        info_partial = os.path.join(lm_dir, INFO_FILE + ".partial")
        with open(info_partial, "w") as handle:
            json.dump(info, handle, indent=1, sort_keys=True)
        os.replace(partial, path)
        os.replace(info_partial, os.path.join(lm_dir, INFO_FILE))
        return path

    @classmethod
    def load(cls, lm_dir: str) -> NgramTables:
        """The tables `save` wrote into `lm_dir`."""
        with open(os.path.join(lm_dir, INFO_FILE)) as handle:
            info = json.load(handle)
        arrays = np.load(os.path.join(lm_dir, TABLES_FILE))
        order = int(info["order"])
        missing = [name for name in LOOKAHEAD_TABLES if f"{name}_keys" not in arrays]
        if missing:
            raise ValueError(
                f"{os.path.join(lm_dir, TABLES_FILE)} has no {missing[0]} table (an older "
                "t2t-lite-ngram wrote it): run t2t-lite-ngram again."
            )

        def table(name):
            return SortedTable(arrays[f"{name}_keys"], arrays[f"{name}_values"])

        return cls(
            order=order,
            grams=[table(f"grams{k}") for k in range(1, order + 1)],
            histories=[table(f"histories{k}") for k in range(1, order + 1)],
            lookahead=table("lookahead"),
            context_lookahead=table("context_lookahead"),
            oov_log_prob=float(info["oov_log_prob"]),
            info=info,
        )

    def log_prob(self, histories: np.ndarray, words: np.ndarray) -> np.ndarray:
        """ln P(word | history) by ARPA's backoff rule.

        Args:
            histories: int64 `[n, order - 1]` word hashes, oldest first
                (`word_hash.BOS_WORD` before a sentence's first word).
            words: int64 `[n]` word hashes (`word_hash.EOS_WORD`: the end).
        """
        histories = np.asarray(histories, np.int64).reshape(len(words), self.order - 1)
        words = np.asarray(words, np.int64)
        result = np.full(len(words), self.oov_log_prob, np.float32)
        backoff = np.zeros(len(words), np.float32)
        done = np.zeros(len(words), bool)
        for k in range(self.order, 0, -1):
            context = [histories[:, j] for j in range(self.order - k, self.order - 1)]
            found, value = self.grams[k - 1].get(
                word_hash.chain_np(word_hash.ngram_seed(k), [*context, words]), 0.0
            )
            take = found & ~done
            result = np.where(take, value + backoff, result)
            done |= found
            if k > 1:
                _, weight = self.histories[k - 1].get(
                    word_hash.chain_np(word_hash.history_seed(k - 1), context), 0.0
                )
                backoff = backoff + np.where(done, 0.0, weight)
        return np.where(done, result, self.oov_log_prob + backoff)
