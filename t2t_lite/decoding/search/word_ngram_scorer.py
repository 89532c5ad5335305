"""A word n-gram LM as a full scorer of the search (shallow fusion with lookahead).

The search extends hypotheses a token at a time; the n-gram knows words. So,
as ESPnet's look-ahead word LM does (Hori et al. 2018), a word is paid for
while it is spelled: extending the current word's prefix `p` by a token's
bytes `s` scores `LA(p + s) - LA(p)`, where `LA` is the log probability,
given the word before, that the next word begins so (the bigram summed over
the known words under the prefix: `NgramTensors.prefix_mass`); a token that
starts a word (a space, or a piece such as SentencePiece's `▁the`) or EOS
ends the word and scores `ln P(word | history) - LA(word)`, so a word's
tokens and its end add up to exactly its n-gram log probability. A prefix
no known word begins with pays the out-of-vocabulary cost once, when it
leaves the vocabulary. EOS adds `ln P(</s> | history)`. Which bytes each
token spells is `ngram/token_spelling.py`'s: byte and SentencePiece
recognizers read the same n-gram.

The tables are sorted int64 hashes (`ngram/word_hash.py`) in non-trainable
variables, read with `tf.searchsorted`, so a SavedModel holds them as it
holds the recognizer's weights.
"""

from __future__ import annotations

import functools
import os

import numpy as np
import tensorflow as tf

from t2t_lite.decoding.search.scorer import Scorer, expand_to_beam_size, gather_beams
from t2t_lite.decoding.search.word_prefixes import NO_WORD, WordPrefixes, spell_tf
from t2t_lite.ngram import word_hash
from t2t_lite.ngram.ngram_tables import NgramTables


class NgramTensors(tf.Module):
    """`NgramTables` as variables, and their lookups in TensorFlow.

    Args:
        tables: the LM's tables (`NgramTables.load`).
    """

    def __init__(self, tables: NgramTables):
        super().__init__(name="word_ngram")
        self.order = tables.order
        self.oov_log_prob = float(tables.oov_log_prob)
        # The byte ids (`token_spelling.byte_ids`) some known word is spelled with.
        self.letters = [int(i) for i in tables.info["letters"]]

        def variables(table, name):
            return (
                tf.Variable(table.keys, trainable=False, name=f"{name}_keys"),
                tf.Variable(table.values, trainable=False, name=f"{name}_values"),
            )

        self.grams = [variables(t, f"grams{k}") for k, t in enumerate(tables.grams, 1)]
        self.histories = [
            variables(t, f"histories{k}") for k, t in enumerate(tables.histories, 1) if k > 1
        ]
        self.lookahead = variables(tables.lookahead, "lookahead")
        self.context_lookahead = variables(tables.context_lookahead, "context_lookahead")

    @staticmethod
    def _get(table, queries: tf.Tensor, default: float) -> tuple[tf.Tensor, tf.Tensor]:
        """`(found, values)` of int64 `queries` (any shape) in a sorted table."""
        # Dense reads only: a gather straight from a variable (a sparse read)
        # puts it in copy-on-read mode, and every later read copies the table.
        keys, values = (tf.convert_to_tensor(t) for t in table)
        flat = tf.reshape(queries, [-1])
        index = tf.minimum(tf.searchsorted(keys, flat), tf.shape(keys)[0] - 1)
        found = tf.equal(tf.gather(keys, index), flat)
        value = tf.where(found, tf.gather(values, index), default)
        shape = tf.shape(queries)
        return tf.reshape(found, shape), tf.reshape(value, shape)

    def prefix_mass(
        self, previous: tf.Tensor, prefixes: tf.Tensor, backoff: tf.Tensor | None = None
    ) -> tf.Tensor:
        """ln P(the next word begins so | the word before), by the bigram.

        Interpolated Kneser-Ney's bigram summed over the words a prefix
        begins: `seen(v, p) + gamma(v) U(p)`. Where no known word begins so,
        `U` is the OOV cost (`seen` is 0).

        Args:
            previous: int64 word hashes (`BOS_WORD` at a sentence's start),
                broadcast against `prefixes`.
            prefixes: int64 prefix hashes (`word_hash.extend`).
            backoff: `backoff(previous)` where the caller has it already.
        """
        if backoff is None:
            backoff = self.backoff(previous)
        unigram = self._get(self.lookahead, prefixes, self.oov_log_prob)[1]
        key = word_hash.context_prefix_key(previous, prefixes)
        seen = self._get(self.context_lookahead, key, 0.0)[1]
        return tf.math.log(seen + tf.exp(backoff + unigram))

    def backoff(self, previous: tf.Tensor) -> tf.Tensor:
        """ln gamma(v) of the bigram history `v` (0 for a word never before another)."""
        history = word_hash.chain_tf(word_hash.history_seed(1), [previous])
        return self._get(self.histories[0], history, 0.0)[1]

    def log_prob(self, history: tf.Tensor, words: tf.Tensor) -> tf.Tensor:
        """ln P(word | history) by ARPA's backoff (`NgramTables.log_prob` in TF).

        Args:
            history: int64 `[..., order - 1]` word hashes, oldest first.
            words: int64 `[...]` word hashes.
        """
        result = tf.fill(tf.shape(words), self.oov_log_prob)
        backoff = tf.zeros(tf.shape(words))
        done = tf.zeros(tf.shape(words), tf.bool)
        for k in range(self.order, 0, -1):
            context = [history[..., j] for j in range(self.order - k, self.order - 1)]
            key = word_hash.chain_tf(word_hash.ngram_seed(k), [*context, words])
            found, value = self._get(self.grams[k - 1], key, 0.0)
            result = tf.where(tf.logical_and(found, tf.logical_not(done)), value + backoff, result)
            done = tf.logical_or(done, found)
            if k > 1:
                key = word_hash.chain_tf(word_hash.history_seed(k - 1), context)
                weight = self._get(self.histories[k - 2], key, 0.0)[1]
                backoff += tf.where(done, 0.0, weight)
        return tf.where(done, result, self.oov_log_prob + backoff)


@functools.lru_cache(maxsize=2)
def _load(lm_dir: str) -> NgramTensors:
    return NgramTensors(NgramTables.load(lm_dir))


def load_ngram(lm_dir: str) -> NgramTensors:
    """The n-gram in `lm_dir` as variables, loaded once per path."""
    with tf.init_scope():  # variables made eagerly, shared by every trace
        return _load(os.path.abspath(lm_dir))


class WordNgramScorer(Scorer):
    """Scores every next token by a word n-gram with bigram lookahead.

    Args:
        tensors: the LM (`load_ngram`).
        batch_size: the search's batch (an int or a scalar tensor).
        surfaces: the recognizer's `target_encoder.token_surfaces()` (bytes,
            SentencePiece, ...): what each id spells (`TokenSpelling`).

    Example:
    ```python
    scorer = WordNgramScorer(load_ngram(lm_dir), batch_size, encoder.token_surfaces())
    scorers.append(WeightedScorer(scorer, lm_weight))
    ```
    """

    def __init__(self, tensors: NgramTensors, batch_size, surfaces: list[bytes]):
        self.lm = tensors
        self.batch_size = batch_size
        self.words = WordPrefixes(surfaces)
        spelling = self.words.spelling
        eos, starts = self.words.is_eos_np, self.words.starts_np
        spellable = spelling.spellable(tensors.letters)
        spells = spelling.body_length > 0
        # Only ids that spell bytes of known words can extend a prefix into
        # the vocabulary, so only they are looked up. `score`'s columns: the
        # C continuing ids, an OOV prefix's; the S ids starting a word, an
        # OOV start's; a bare space. Every id reads one of them.
        going_on = np.nonzero(~starts & ~eos & spellable)[0]
        starting = np.nonzero(starts & spells & spellable)[0]
        c, s = len(going_on), len(starting)
        column = np.where(starts, c + 1 + s, c)
        column[going_on] = np.arange(c)
        column[starting] = c + 1 + np.arange(s)
        column[starts & ~spells] = c + s + 2
        self.columns = tf.constant(column, tf.int32)
        self.going_on_body = tf.constant(spelling.body[going_on])  # [C, longest]
        self.going_on_length = tf.constant(spelling.body_length[going_on])
        self.starting_prefix = tf.constant(spelling.start_prefix[starting])  # [S]
        self.is_eos = self.words.is_eos
        self.starts_spelling = tf.constant(starts & spells)

    def initial_state(self, beam_size: int):
        history = tf.fill([self.batch_size, self.lm.order - 1], word_hash.BOS_WORD)
        return {
            "history": expand_to_beam_size(history, beam_size),  # [batch, beam, order - 1]
            # The current word so far (WORD_SEED: begun, nothing spelled).
            "prefix": expand_to_beam_size(self.words.initial([self.batch_size]), beam_size),
            "paid": expand_to_beam_size(tf.zeros([self.batch_size]), beam_size),  # for it
        }

    def _after_word(self, history, prefix):
        """The history after the current word (unchanged if there is none)."""
        shifted = tf.concat([history[..., 1:], prefix[..., None]], axis=-1)
        return tf.where(self.words.spoken(prefix)[..., None], shifted, history)

    def _masses(self, previous, prefixes):
        """`prefix_mass` of `prefixes` `[batch, beam, n]`, and the OOV prefix's `[.., 1]`."""
        backoff = self.lm.backoff(previous)
        mass = self.lm.prefix_mass(previous, prefixes, backoff)
        return tf.concat([mass, backoff + self.lm.oov_log_prob], -1)

    def score(self, state, alive_seq, step, candidates=None):
        history, prefix, paid = state["history"], state["prefix"], state["paid"]
        spoken = self.words.spoken(prefix)
        # Ending the current word: its n-gram probability less what was paid;
        # an empty word (a space after a space) costs an unknown word's.
        empty = tf.where(tf.equal(prefix, NO_WORD), 0.0, self.lm.oov_log_prob)
        word = tf.where(spoken, self.lm.log_prob(history, prefix) - paid, empty)
        after = self._after_word(history, prefix)
        # Continuing ids: the lookahead of each longer prefix, less what was paid.
        longer = spell_tf(
            self.words.base(prefix)[..., None], self.going_on_body, self.going_on_length
        )
        parts = [self._masses(history[..., -1:], longer) - paid[..., None]]
        # Starting ids: the word's end, and the lookahead of the new word's start.
        shape = tf.concat([tf.shape(prefix), tf.shape(self.starting_prefix)], 0)
        starting = tf.broadcast_to(self.starting_prefix, shape)
        parts.append(self._masses(after[..., -1:], starting) + word[..., None])
        parts.append(word[..., None])  # a bare space
        scores = tf.gather(tf.concat(parts, -1), self.columns, axis=-1)  # [batch, beam, vocab]
        end = tf.where(spoken, word, 0.0) + self.lm.log_prob(
            after, tf.fill(tf.shape(prefix), word_hash.EOS_WORD)
        )
        return tf.where(self.is_eos, end[..., None], scores), state

    def select(self, state, new_state, parents, columns, tokens):
        history = gather_beams(state["history"], parents)
        prefix = gather_beams(state["prefix"], parents)
        tokens = tf.cast(tokens, tf.int32)
        ends = self.words.ends(tokens)  # [batch, beam]
        history = tf.where(ends[..., None], self._after_word(history, prefix), history)
        prefix = self.words.after(prefix, tokens)
        pays = tf.logical_or(~ends, tf.gather(self.starts_spelling, tokens))
        return {
            "history": history,
            "prefix": prefix,
            "paid": tf.where(pays, self.lm.prefix_mass(history[..., -1], prefix), 0.0),
        }
