"""Words and n-grams as 64-bit hashes of target ids, in numpy and in TensorFlow.

The n-gram tables are built in numpy and read inside the search's graph, so a
word is named the same way in both: the hash chained over its target ids,
one id at a time (`extend`), from `WORD_SEED`. The search extends a
hypothesis's current word by each next id, so a prefix and a whole word are
hashed alike and no id-to-word table is needed. An n-gram's key chains its
words' hashes from its order's seed (`ngram_key`), a history's from another.
Both versions wrap around in int64 and shift arithmetically, as numpy and TF
do, so they agree bit for bit (a test checks).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

# splitmix64's odd multiplier, as a signed int64.
_MULTIPLIER = np.int64(-7046029254386353131)
_SHIFT = 29
WORD_SEED = np.int64(0x5EED)
_NGRAM_SEED = np.int64(0x6E6772616D)  # "ngram"
_HISTORY_SEED = np.int64(0x68697374)  # "hist"
_CONTEXT_SEED = np.int64(0x63747874)  # "ctxt"


def extend_np(hashes: np.ndarray, ids) -> np.ndarray:
    """`hashes` (int64) extended by `ids` (one id per hash), element-wise."""
    mixed = np.bitwise_xor(np.asarray(hashes, np.int64), np.asarray(ids, np.int64))
    mixed = mixed * _MULTIPLIER  # wraps around in int64
    return np.bitwise_xor(mixed, np.right_shift(mixed, _SHIFT))


def extend_tf(hashes: tf.Tensor, ids) -> tf.Tensor:
    """`extend_np` in TensorFlow."""
    mixed = tf.bitwise.bitwise_xor(hashes, tf.cast(ids, tf.int64))
    mixed = mixed * tf.constant(_MULTIPLIER, tf.int64)
    shifted = tf.bitwise.right_shift(mixed, tf.constant(_SHIFT, tf.int64))
    return tf.bitwise.bitwise_xor(mixed, shifted)


# The sentence's start and end as words: hashes of ids no word contains.
BOS_WORD = extend_np(np.full([1], WORD_SEED), [-1])[0]
EOS_WORD = extend_np(np.full([1], WORD_SEED), [-2])[0]


def chain_np(seed, columns) -> np.ndarray:
    """The hash chained from `seed` over `columns` (int64 arrays of one length)."""
    key = np.full(len(columns[0]), seed, np.int64)
    for column in columns:
        key = extend_np(key, column)
    return key


def chain_tf(seed, columns) -> tf.Tensor:
    """`chain_np` in TensorFlow (`columns` of one shape)."""
    key = tf.fill(tf.shape(columns[0]), tf.constant(seed, tf.int64))
    for column in columns:
        key = extend_tf(key, column)
    return key


def ngram_seed(order: int) -> np.int64:
    """The seed of an order's n-gram keys."""
    return extend_np(np.full([1], _NGRAM_SEED), [order])[0]


def history_seed(length: int) -> np.int64:
    """The seed of the keys of histories of `length` words."""
    return extend_np(np.full([1], _HISTORY_SEED), [length])[0]


def context_prefix_key(previous_words, prefixes):
    """The key of (previous word, prefix of the next word), numpy or TF alike."""
    if isinstance(prefixes, np.ndarray):
        return chain_np(_CONTEXT_SEED, [np.broadcast_to(previous_words, prefixes.shape), prefixes])
    previous = tf.broadcast_to(previous_words, tf.shape(prefixes))
    return chain_tf(_CONTEXT_SEED, [previous, prefixes])
