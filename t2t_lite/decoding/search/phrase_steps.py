"""Where each target id takes a phrase's match: the phrase biasing scorer's table.

Phrases are listed in bytes (`ByteTextEncoder` ids, so one list serves every
vocabulary); a recognizer's id spells bytes as `TokenSpelling` says: an id
whose text begins with a space starts a word (the byte space, SentencePiece's
`▁york`), the rest of its text is its body. A match of a phrase is the
number of the phrase's bytes spelled so far, its progress. An id

- continuing a word extends a match when its body is the phrase's next
  bytes: progress `p` becomes `p + len(body)`, if the match runs (`p > 0`,
  or `p = 0` at a word start: after a bare space, or at the first id);
- starting a word extends a running match across the phrase's space ("new"
  then "▁york" in "new york": `p + 1 + len(body)`), and starts a new match
  when its body begins the phrase (`len(body)`).

Any other id ends the match (progress 0). So a phrase is matched the same
whichever pieces spell it, and its bonus (per byte) is the same for a byte
and a SentencePiece recognizer.

The table is sparse: `edges` lists each (phrase, state, id) whose progress
is above 0, a state being the match's progress, or `word_start_state` for
progress 0 at a word start; `starts` lists each (phrase, id) that begins
the phrase in any state. A step of the search gathers only those.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import tensorflow as tf

from t2t_lite.data.text_encoders import EOS_ID, PAD_ID, ByteTextEncoder
from t2t_lite.ngram.token_spelling import TokenSpelling

SPACE_ID = ByteTextEncoder().encode(" ")[0]


@dataclasses.dataclass
class PhraseSteps:
    """The progress each target id gives each phrase's match, from each state.

    Attributes:
        lengths: int32 `[P]`, each phrase's bytes.
        word_start_state: int32 scalar, the state of progress 0 at a word start.
        edges: int32 `[E, 3]`: (phrase, state, id), progress above 0.
        edge_progress: int32 `[E]`, the progress of each edge.
        starts: int32 `[S, 2]`: (phrase, id) of an id that begins the phrase.
        start_progress: int32 `[S]`.
        table: int32 `[P, states, vocab]`, the progress from state and id
            (`starts` not included), for the ids a search keeps.
        start_table: int32 `[P, vocab]`, the progress of a new match by id.
        is_boundary: bool `[vocab]`: the id ends the word before (a word start, EOS).
        bare_space: bool `[vocab]`: the id is a word start with nothing after it.
    """

    lengths: tf.Tensor
    word_start_state: tf.Tensor
    edges: tf.Tensor
    edge_progress: tf.Tensor
    starts: tf.Tensor
    start_progress: tf.Tensor
    table: tf.Tensor
    start_table: tf.Tensor
    is_boundary: tf.Tensor
    bare_space: tf.Tensor

    @classmethod
    def of(cls, phrase_ids, spelling: TokenSpelling) -> PhraseSteps:
        """The steps of byte phrases `phrase_ids` (int `[P, L]`, PAD after each)."""
        phrases = tf.cast(phrase_ids, tf.int32)  # [P, L]
        lengths = tf.reduce_sum(tf.cast(phrases != PAD_ID, tf.int32), axis=1)  # [P]
        longest = tf.shape(phrases)[1]
        body = tf.constant(spelling.body, tf.int32)  # [V, B]
        body_length = tf.constant(spelling.body_length, tf.int32)  # [V]
        starts_word = tf.constant(spelling.starts_word)  # [V]
        widest = spelling.body.shape[1]
        # Whether an id's body is the phrase's bytes from offset q, for q in
        # 0..L + 1 (the body after a space at L): [P, L + 2, V].
        offsets = tf.range(longest + 2)
        padded = tf.pad(phrases, [[0, 0], [0, widest + 2]])  # PAD never spells a byte
        window = tf.gather(padded, offsets[:, None] + tf.range(widest)[None, :], axis=1)
        same = tf.equal(window[:, :, None, :], body[None, None, :, :])  # [P, L + 2, V, B]
        inside = tf.range(widest)[None, :] < body_length[:, None]  # [V, B]
        ends = offsets[None, :, None] + body_length[None, None, :]  # [1, L + 2, V]
        spells = tf.reduce_all(same | ~inside, axis=-1) & (body_length > 0)
        spells &= ends <= lengths[:, None, None]

        # From progress p in 0..L (row p; row L + 1: p = 0 at a word start).
        progress = offsets[: longest + 1]
        continues = tf.where(spells[:, : longest + 1] & ~starts_word, ends[:, : longest + 1], 0)
        at_space = tf.equal(padded[:, : longest + 1], SPACE_ID) & (progress > 0)
        at_space &= progress < lengths[:, None]  # [P, L + 1]
        across = tf.where(
            body_length == 0, progress[None, :, None] + 1, tf.where(spells[:, 1:], ends[:, 1:], 0)
        )
        across = tf.where(at_space[:, :, None] & starts_word, across, 0)
        running = tf.where((progress > 0)[None, :, None], continues, 0)
        table = tf.concat([tf.maximum(running, across), continues[:, :1]], axis=1)
        start_table = tf.where(spells[:, 0] & starts_word, ends[:, 0], 0)  # [P, V]

        edges = tf.cast(tf.where(table > 0), tf.int32)
        starts = tf.cast(tf.where(start_table > 0), tf.int32)
        vocabulary = tf.range(len(spelling.body_length))
        return cls(
            lengths=lengths,
            word_start_state=longest + 1,
            edges=edges,
            edge_progress=tf.gather_nd(table, edges),
            starts=starts,
            start_progress=tf.gather_nd(start_table, starts),
            table=table,
            start_table=start_table,
            is_boundary=starts_word | tf.equal(vocabulary, EOS_ID),
            bare_space=starts_word & tf.equal(body_length, 0),
        )

    def state(self, progress, word_start):
        """int32 `[b, beam, P]`: the table's row of each match."""
        fresh = tf.equal(progress, 0) & word_start[:, :, None]
        return tf.where(fresh, self.word_start_state, progress)

    def after(self, progress, word_start, tokens):
        """int32 `[b, beam, P]`: each match's progress once `tokens` `[b, beam]` is spelled."""
        states = self.state(progress, word_start)
        phrases = tf.broadcast_to(tf.range(tf.shape(progress)[2]), tf.shape(progress))
        ids = tf.broadcast_to(tokens[:, :, None], tf.shape(progress))
        runs = tf.gather_nd(self.table, tf.stack([phrases, states, ids], axis=-1))
        begins = tf.gather_nd(self.start_table, tf.stack([phrases, ids], axis=-1))
        return tf.maximum(runs, begins)


def spelling_of(surfaces: list[bytes]) -> TokenSpelling:
    """The vocabulary's spelling, or a clear error for one that spells no words."""
    spelling = TokenSpelling.of(surfaces)
    if not np.any(spelling.starts_word):
        raise ValueError(
            "phrase biasing needs target ids that spell text with word starts "
            "(bytes, SentencePiece); this vocabulary has no id beginning a word."
        )
    return spelling
