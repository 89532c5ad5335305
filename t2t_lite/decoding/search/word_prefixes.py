"""The word each beam hypothesis is spelling, as a `word_hash` prefix.

Scorers that judge words (the word n-gram, the pronunciation scorer) follow
each hypothesis's current word through the search: a token starting a word
(`TokenSpelling.starts_word`) or EOS ends the word before it, and the
bytes a token spells extend the word under way. The word so far is the hash
chained over its byte ids (`word_hash`), so a whole word is named as the
n-gram and the pronunciation lexicon name it, whether bytes or pieces spelled it.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from t2t_lite.data.reserved_ids import EOS_ID
from t2t_lite.ngram import word_hash
from t2t_lite.ngram.token_spelling import TokenSpelling

# The prefix before a sentence's first word, where words carry their space in
# their first token (pieces): that space ends no word.
NO_WORD = word_hash.extend_np(np.full([1], word_hash.WORD_SEED), [-4])[0]


def spell_tf(prefixes: tf.Tensor, body: tf.Tensor, length: tf.Tensor) -> tf.Tensor:
    """`prefixes` extended by each token's bytes (`body [..., longest]`, `length [...]`)."""
    for depth in range(body.shape[-1]):
        longer = word_hash.extend_tf(prefixes, body[..., depth])
        prefixes = tf.where(depth < length, longer, prefixes)
    return prefixes


class WordPrefixes:
    """Tracks the current word of hypotheses spelled with a vocabulary's tokens.

    Args:
        surfaces: the recognizer's `target_encoder.token_surfaces()`.

    Example:
    ```python
    words = WordPrefixes(encoder.token_surfaces())
    prefix = words.initial(tf.shape(alive_seq)[:2])  # [batch, beam]
    finished = tf.logical_and(words.spoken(prefix), words.ends(tokens))
    prefix = words.after(prefix, tokens)
    ```
    """

    def __init__(self, surfaces: list[bytes]):
        self.spelling = TokenSpelling.of(surfaces)
        self.spaces_lead = self.spelling.spaces_lead
        vocab = np.arange(len(surfaces))
        self.is_eos_np = vocab == EOS_ID
        self.starts_np = self.spelling.starts_word & ~self.is_eos_np
        self.is_start = tf.constant(self.starts_np)
        self.is_eos = tf.constant(self.is_eos_np)
        self.body = tf.constant(self.spelling.body)  # [vocab, longest]
        self.body_length = tf.constant(self.spelling.body_length)
        self.start_prefix = tf.constant(self.spelling.start_prefix)

    @property
    def start(self) -> np.int64:
        """The prefix of the empty hypothesis (`WORD_SEED`: a word begun, nothing spelled)."""
        return word_hash.WORD_SEED if not self.spaces_lead else NO_WORD

    def initial(self, shape) -> tf.Tensor:
        """int64 prefixes of empty hypotheses, of `shape`."""
        return tf.fill(shape, tf.constant(self.start, tf.int64))

    @staticmethod
    def spoken(prefix: tf.Tensor) -> tf.Tensor:
        """Whether a prefix has spelled anything (a word to finish)."""
        return tf.logical_and(
            tf.not_equal(prefix, word_hash.WORD_SEED), tf.not_equal(prefix, NO_WORD)
        )

    @staticmethod
    def base(prefix: tf.Tensor) -> tf.Tensor:
        """The prefix a continuing token spells onto (the first word's, before pieces)."""
        return tf.where(tf.equal(prefix, NO_WORD), word_hash.WORD_SEED, prefix)

    def ends(self, tokens: tf.Tensor) -> tf.Tensor:
        """Whether appending `tokens` (int32) ends the current word (a word start or EOS)."""
        return tf.logical_or(tf.gather(self.is_start, tokens), tf.gather(self.is_eos, tokens))

    def after(self, prefix: tf.Tensor, tokens: tf.Tensor) -> tf.Tensor:
        """The current word after appending `tokens` (int32, `prefix`'s shape)."""
        longer = spell_tf(
            self.base(prefix), tf.gather(self.body, tokens), tf.gather(self.body_length, tokens)
        )
        prefix = tf.where(
            tf.gather(self.is_start, tokens), tf.gather(self.start_prefix, tokens), longer
        )
        return tf.where(tf.gather(self.is_eos, tokens), word_hash.WORD_SEED, prefix)
