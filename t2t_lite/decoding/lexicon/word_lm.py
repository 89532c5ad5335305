"""The word n-gram as the lexicon search asks it: whole words, one history at a time.

The byte search reads the n-gram's tables inside its graph, a letter at a
time (`decoding/search/word_ngram_scorer.py`); the lexicon search knows whole
words and asks `ln P(word | the last order - 1 words)` where a word ends. The
same question recurs across frames and hypotheses, so answers are cached.
"""

from __future__ import annotations

import numpy as np

from t2t_lite.ngram import word_hash
from t2t_lite.ngram.ngram_tables import NgramTables

History = tuple[int, ...]


class WordLm:
    """ln P(word | history) of a word n-gram, cached, in numpy.

    Args:
        tables: the n-gram (`NgramTables.load(lm_dir)`).

    Example:
    ```python
    lm = WordLm(NgramTables.load(lm_dir))
    history = lm.start
    scores = lm.log_probs([(history, word_keys(["the"])[0])])
    ```
    """

    def __init__(self, tables: NgramTables):
        self.tables = tables
        self.start: History = (int(word_hash.BOS_WORD),) * (tables.order - 1)
        self._cache: dict[tuple[History, int], float] = {}

    def known(self, words: np.ndarray) -> np.ndarray:
        """bool per int64 word key: the n-gram counted the word (it is no OOV)."""
        keys = word_hash.chain_np(word_hash.ngram_seed(1), [np.asarray(words, np.int64)])
        found, _ = self.tables.grams[0].get(keys, 0.0)
        return found

    def unigram(self, words: np.ndarray) -> np.ndarray:
        """The order-1 table's log probability of each word key (the OOV's where absent)."""
        keys = word_hash.chain_np(word_hash.ngram_seed(1), [np.asarray(words, np.int64)])
        _, values = self.tables.grams[0].get(keys, self.tables.oov_log_prob)
        return values

    def log_probs(self, questions: list[tuple[History, int]]) -> list[float]:
        """`ln P(word | history)` for each `(history, word key)`; `word_hash.EOS_WORD` ends."""
        missing = list({q for q in questions if q not in self._cache})
        if missing:
            histories = np.array([history for history, _ in missing], np.int64)
            words = np.array([word for _, word in missing], np.int64)
            values = self.tables.log_prob(histories, words)
            self._cache.update(zip(missing, values.astype(float).tolist(), strict=True))
        return [self._cache[q] for q in questions]

    @staticmethod
    def after(history: History, word: int) -> History:
        """The history once `word` is said."""
        return (*history[1:], word) if history else ()
