"""Phrase biasing (hotwords): a bonus for spelling a listed phrase, taken back if it fails.

A user's list of phrases (names, product words, commands), each with a
boost, steers the search towards them without retraining, as WeNet's and
sherpa-onnx's context graphs do: every token that extends a match of a
listed phrase earns the phrase's boost per byte it spells, and when the
match fails before the phrase is whole, the bonus it earned is subtracted
again. So a hypothesis only keeps a bonus for a phrase it really contains,
and words near a listed one are not pulled towards it ("boosted words
appearing where they were not said" is what users of biasing report most).

The scorer is a potential: a hypothesis is worth `boost * bytes matched`
of its best current match, plus the phrases it completed. A match starts
only at a word start (the first token, after a space, or a piece beginning
with one) and is complete when the phrase's last byte is followed by a word
start or EOS; a longer phrase still matching ("new york" after "new") keeps
going, and the completed one is banked when no match runs any more. Each
step adds the potential's change, so the bonuses along a hypothesis sum to
its final potential.

Taking a failed match's bonus back restores the hypothesis's score, not
the hypothesis it pushed out of the beam: where a recognizer's hypotheses
lie close together, a match that started and failed changed utterances
with no listed word in them. So the scorer `takes_back`: the search ranks
`beam_size` beams by the score they keep for sure (a running match's bonus
left out) and keeps up to `beam_size` more for hypotheses in the middle of
a match, ranked with it (`provisional_ranking.py`). A hypothesis of those
extra beams joins the first ones only with a phrase complete, and is
dropped when its match fails with none complete, so until a phrase is
spelled whole the first beams are the search's without the list.

The list is part of the request: `phrase_ids` `[phrases, length]` (bytes,
PAD after each phrase) and `phrase_boosts` `[phrases]` ride in the
features, so a SavedModel signature takes them per request. Phrases are
bytes whatever the targets are: how each target id spells bytes (a byte, a
SentencePiece piece) is `phrase_steps.py`'s, so a phrase earns the same
bonus however it is spelled.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from t2t_lite.data.text_encoders import PAD_ID, ByteTextEncoder
from t2t_lite.decoding.decode_config import DEFAULT_BOOST
from t2t_lite.decoding.search.phrase_steps import PhraseSteps, spelling_of
from t2t_lite.decoding.search.scorer import Scorer, gather_beams

# sherpa-onnx's hotwords file syntax: "PHRASE :BOOST" sets one phrase's boost.
BOOST_MARK = " :"
BYTES = ByteTextEncoder()


class PhraseListError(ValueError):
    """A phrase list that cannot be used; the message names the file and line."""


def parse_phrase_lines(
    lines: list[str], default_boost: float = DEFAULT_BOOST, where: str = "line"
) -> list[tuple[str, float]]:
    """`(phrase, boost)` per non-blank line: `PHRASE` or `PHRASE :BOOST`.

    The syntax of a hotwords file, and of a server request's hotwords.

    Args:
        lines: the lines.
        default_boost: the boost of a line without one.
        where: how an error names a line: `"{where} {number}"`.

    Raises:
        PhraseListError: a boost that is not a number > 0.

    Example:
    >>> parse_phrase_lines(["Layla", "  new   york :2", ""], 0.5)
    [('Layla', 0.5), ('new york', 2.0)]
    """
    phrases = []
    for number, line in enumerate(lines, 1):
        text, boost = line.strip(), default_boost
        if BOOST_MARK in text:
            text, _, value = text.rpartition(BOOST_MARK)
            try:
                boost = float(value)
            except ValueError:
                boost = -1.0
            if not 0 < boost < float("inf"):
                raise PhraseListError(
                    f"{where} {number}: the boost after ' :' must be a number > 0, got {value!r}."
                )
        text = " ".join(text.split())
        if text:
            phrases.append((text, boost))
    return phrases


def read_phrase_file(path: str, default_boost: float = DEFAULT_BOOST) -> list[tuple[str, float]]:
    """`(phrase, boost)` per non-blank line of a hotwords file (`parse_phrase_lines`).

    Raises:
        PhraseListError: an unreadable file, or a boost that is not a number > 0.
    """
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise PhraseListError(f"hotwords file {path} cannot be read ({error}).") from error
    return parse_phrase_lines(lines, default_boost, f"{path} line")


def phrase_features(phrases: list[tuple[str, float]]) -> dict:
    """The `phrase_ids` (bytes) and `phrase_boosts` arrays of a phrase list.

    Each phrase is listed as written, lower-cased and upper-cased (corpora
    differ: LibriSpeech's transcripts are upper case, the built-in corpus's
    lower case), so a user need not know which case the model writes.
    """
    variants = [
        (variant, boost)
        for text, boost in phrases
        for variant in dict.fromkeys([text, text.lower(), text.upper()])
    ]
    rows = [BYTES.encode(text) for text, _ in variants]
    ids = np.zeros([len(rows), max((len(r) for r in rows), default=1)], np.int32)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = row
    return {
        "phrase_ids": ids,
        "phrase_boosts": np.array([boost for _, boost in variants], np.float32),
    }


def tf_phrase_features(phrases: tf.Tensor, boosts: tf.Tensor) -> dict:
    """`phrase_features` as TF ops, for a SavedModel's request.

    String `[P]` and float `[P]` -> the features, spaces collapsed, each
    phrase in its three cases.
    """
    cleaned = tf.strings.strip(tf.strings.regex_replace(phrases, r"\s+", " "))
    cases = tf.concat([cleaned, tf.strings.lower(cleaned), tf.strings.upper(cleaned)], axis=0)
    return {
        "phrase_ids": BYTES.tf_encode(cases).to_tensor(PAD_ID),
        "phrase_boosts": tf.tile(tf.cast(boosts, tf.float32), [3]),
    }


def _max_or_zero(bonuses):
    """The largest of the last axis's (non-negative) bonuses; 0 for an empty list."""
    return tf.maximum(tf.reduce_max(bonuses, axis=-1), 0.0)


def configured_phrases(decode_config) -> dict | None:
    """The features of decode hparam `hotwords_file`'s list, or None without one.

    Raises:
        PhraseListError: the file cannot be used.
    """
    if not decode_config.hotwords_file:
        return None
    phrases = read_phrase_file(decode_config.hotwords_file, decode_config.hotword_boost)
    return phrase_features(phrases)


class PhraseBiasScorer(Scorer):
    """A full scorer of phrase-match bonuses (see the module docstring).

    Args:
        phrase_ids: int `[phrases, length]` byte ids (`ByteTextEncoder`), PAD
            after each phrase.
        phrase_boosts: float `[phrases]`, the bonus per matched byte.
        batch_size: the search's batch.
        target_surfaces: the target encoder's `token_surfaces()`: how each
            target id spells bytes (`phrase_steps.py`).

    Example:
    ```python
    bias = PhraseBiasScorer(features["phrase_ids"], features["phrase_boosts"],
                            batch_size, encoder.token_surfaces())
    ids, scores = scored_beam_search([..., WeightedScorer(bias, 1.0)], ...)
    ```
    """

    takes_back = True

    def __init__(self, phrase_ids, phrase_boosts, batch_size, target_surfaces: list[bytes]):
        self.steps = PhraseSteps.of(phrase_ids, spelling_of(target_surfaces))
        self.lengths = self.steps.lengths  # [P]
        # A boost must be > 0 for its phrase to count (0 or less: ignored).
        self.boosts = tf.maximum(tf.cast(phrase_boosts, tf.float32), 0.0)  # [P]
        self.batch_size = batch_size
        self.vocab_size = len(target_surfaces)

    def initial_state(self, beam_size: int):
        num_phrases = tf.shape(self.lengths)[0]
        return {
            # Bytes of each phrase matched so far in the current run.
            "progress": tf.zeros([self.batch_size, beam_size, num_phrases], tf.int32),
            # The best completed phrase's bonus in the current run, not yet banked.
            "pending": tf.zeros([self.batch_size, beam_size], tf.float32),
            "word_start": tf.ones([self.batch_size, beam_size], tf.bool),
        }

    def _whole(self, progress):
        """`[b, beam]`: the bonus of the best phrase matched whole (0: none)."""
        lengths = tf.cast(self.lengths, tf.float32)
        return _max_or_zero(tf.where(progress == self.lengths, lengths * self.boosts, 0.0))

    def _matched(self, progress):
        """`progress`'s shape less its last axis: the bonus of the best running match."""
        return _max_or_zero(tf.cast(progress, tf.float32) * self.boosts)

    def _extended(self, state):
        """`[b, beam, V]`: the bonus of each id's best extended match (0: none).

        Only the table's edges are gathered (`[b, beam, edges]`), and one
        segment max over them per hypothesis and id gives the best: no
        `[b, beam, vocab, phrases]` transition is built.
        """
        steps, pending = self.steps, state["pending"]
        states = steps.state(state["progress"], state["word_start"])  # [b, beam, P]
        active = tf.gather(states, steps.edges[:, 0], axis=2) == steps.edges[:, 1]  # [b, beam, E]
        runs = tf.cast(steps.edge_progress, tf.float32) * tf.gather(self.boosts, steps.edges[:, 0])
        begins = tf.cast(steps.start_progress, tf.float32) * tf.gather(
            self.boosts, steps.starts[:, 0]
        )
        values = tf.concat(
            [
                tf.where(active, runs, 0.0),
                tf.broadcast_to(begins, tf.concat([tf.shape(pending), tf.shape(begins)], 0)),
            ],
            axis=2,
        )
        rows = tf.reshape(tf.range(tf.size(pending)), tf.shape(pending))[:, :, None]  # [b, beam, 1]
        ids = tf.concat([steps.edges[:, 2], steps.starts[:, 1]], axis=0)
        segments = rows * self.vocab_size + ids
        best = tf.math.unsorted_segment_max(
            tf.reshape(values, [-1]),
            tf.reshape(tf.broadcast_to(segments, tf.shape(values)), [-1]),
            tf.size(pending) * self.vocab_size,
        )
        return tf.reshape(tf.maximum(best, 0.0), tf.concat([tf.shape(pending), [-1]], 0))

    def score(self, state, alive_seq, step, candidates=None):
        progress, pending = state["progress"], state["pending"]
        matched = self._extended(state)  # [b, beam, V]
        # A whole phrase followed by a boundary is complete; it stays pending
        # while a longer match runs on, and is banked when none does.
        boundary = self.steps.is_boundary[None, None, :]
        whole = tf.where(boundary, self._whole(progress)[:, :, None], 0.0)
        new_pending = tf.maximum(pending[:, :, None], whole)  # [b, beam, V]
        potential = tf.where(matched > 0, tf.maximum(new_pending, matched), new_pending)
        before = tf.maximum(pending, self._matched(progress))[:, :, None]
        return potential - before, {
            # What a running match holds above the completed phrase: taken back if it fails.
            "provisional": potential - new_pending,
            # The run held a bonus and keeps none of it: its match failed, nothing completed.
            "failed": tf.logical_and(before > 0, potential <= 0),
        }

    def provisional(self, new_state):
        return new_state["provisional"]

    def failed(self, new_state):
        return new_state["failed"]

    def select(self, state, new_state, parents, columns, tokens):
        # The kept extensions' state, from their parents' and the token.
        state = {k: gather_beams(v, parents) for k, v in state.items()}
        progress = self.steps.after(state["progress"], state["word_start"], tokens)
        boundary = tf.gather(self.steps.is_boundary, tokens)
        pending = tf.maximum(
            state["pending"], tf.where(boundary, self._whole(state["progress"]), 0.0)
        )
        running = tf.reduce_any(progress > 0, axis=-1)
        pending = tf.where(running, pending, 0.0)
        # An empty list's reductions lose the static shape a loop variable keeps.
        pending.set_shape(state["pending"].shape)
        word_start = tf.gather(self.steps.bare_space, tokens)
        return {"progress": progress, "pending": pending, "word_start": word_start}
