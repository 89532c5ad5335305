"""Scores each word a hypothesis finishes by how well the phoneme CTC head hears it.

The recipe's phoneme head (`phoneme_ctc_hparams`) learns CMUdict's sounds
of every transcript word; the byte decoder, on the same encoder, spells
what it hears by ear ("they and tide and medered away" for "they untied it
and led it away", whose phonemes the head reads nearly right). A hybrid
recognizer decodes words through a lexicon from such a head; this scorer
brings the lexicon into the joint search instead, as one more weighted term
(ESPnet's sum of scorers): when a token ends a word (a word-starting token
or EOS), the word's first CMUdict pronunciation (one spoken noise for a
word CMUdict lacks, as in training) is appended to the hypothesis's phoneme
sequence, and the step scores the CTC prefix score of the longer phoneme
sequence less the shorter's (`CtcPrefixScorer` over the phoneme head's
posteriors). EOS scores the whole phoneme sequence (every frame consumed).
Tokens that continue a word score 0: the word is paid for once it is
finished, so along a hypothesis the scores sum to the phoneme CTC's log
probability of its finished words' pronunciations.

A misspelled word (out of the lexicon) becomes one spoken noise, which the
head gives little probability where it hears a real word's phonemes; a real
word whose sounds the head hears gains over one that merely looks alike.
"""

from __future__ import annotations

import tensorflow as tf

from t2t_lite.decoding.search.ctc_prefix_scorer import CtcPrefixScorer
from t2t_lite.decoding.search.pronunciation_table import PronunciationTable
from t2t_lite.decoding.search.scorer import Scorer, expand_to_beam_size, gather_beams
from t2t_lite.decoding.search.word_prefixes import WordPrefixes

_CTC_KEYS = ("r", "score", "last")


class PronunciationScorer(Scorer):
    """Scores every next token by the phoneme CTC prefix score of the words it finishes.

    A full scorer: a token that ends a word scores the word's pronunciation,
    the same for every such token of a hypothesis; any other token 0.

    Args:
        phoneme_log_probs: float32 `[batch, frames, phonemes]`, the phoneme
            head's log posteriors (`Transformer.phoneme_log_probs`).
        lengths: int `[batch]`, each item's real frames.
        table: the lexicon (`load_pronunciations`).
        batch_size: the search's batch (an int or a scalar tensor).
        surfaces: the recognizer's `target_encoder.token_surfaces()`.

    Example:
    ```python
    scorer = PronunciationScorer(
        model.phoneme_log_probs(memory), frames, load_pronunciations(), batch_size, surfaces
    )
    scorers.append(WeightedScorer(scorer, phoneme_weight))
    ```
    """

    def __init__(self, phoneme_log_probs, lengths, table: PronunciationTable, batch_size, surfaces):
        # No phoneme id is EOS_ID (a reserved id): the phoneme sequence's
        # end is scored by `sequence_score`, not by a candidate.
        self.ctc = CtcPrefixScorer(phoneme_log_probs, lengths)
        self.table = table
        self.batch_size = batch_size
        self.words = WordPrefixes(surfaces)

    def initial_state(self, beam_size: int) -> dict:
        """The empty hypothesis: no phonemes, no word begun.

        Returns:
            `CtcPrefixScorer`'s state of the phonemes of the finished words
            (`r`, `score`, `last`) and `prefix`, the word under way's hash.
        """
        state = self.ctc.initial_state(beam_size)
        state["prefix"] = expand_to_beam_size(self.words.initial([self.batch_size]), beam_size)
        return state

    def _say_word(self, state: dict) -> dict:
        """The phoneme CTC state after the current word's pronunciation.

        Unchanged where no word is under way.
        """
        ids, lengths = self.table.lookup(state["prefix"])  # [batch, beam, longest], [batch, beam]
        lengths = tf.where(self.words.spoken(state["prefix"]), lengths, 0)

        def say(i, r, score, last):
            phoneme = tf.gather(ids, i, axis=2)  # [batch, beam]
            psi, forward = self.ctc.extend(
                {"r": r, "last": last}, phoneme[..., None], 0, empty=tf.equal(last, -1)
            )
            going = i < lengths
            r = tf.where(going[..., None, None], forward[:, :, 0], r)
            score = tf.where(going, psi[..., 0], score)
            last = tf.where(going, phoneme, last)
            return i + 1, r, score, last

        _, r, score, last = tf.while_loop(
            lambda i, *_: i < tf.reduce_max(lengths),
            say,
            (tf.constant(0), state["r"], state["score"], state["last"]),
            maximum_iterations=self.table.longest,
        )
        return {"r": r, "score": score, "last": last}

    def score(self, state, alive_seq, step, candidates=None):
        said = self._say_word(state)
        word = said["score"] - state["score"]  # [batch, beam]
        end = self.ctc.sequence_score(said["r"]) - state["score"]
        scores = tf.where(self.words.is_start, word[..., None], 0.0)  # [batch, beam, vocab]
        return tf.where(self.words.is_eos, end[..., None], scores), said

    def select(self, state, new_state, parents, columns, tokens):
        tokens = tf.cast(tokens, tf.int32)
        ends = self.words.ends(tokens)  # [batch, beam]
        kept = {}
        for key in _CTC_KEYS:
            before, said = gather_beams(state[key], parents), gather_beams(new_state[key], parents)
            where = tf.reshape(ends, tf.concat([tf.shape(ends), [1] * (said.shape.rank - 2)], 0))
            kept[key] = tf.where(where, said, before)
        kept["prefix"] = self.words.after(gather_beams(state["prefix"], parents), tokens)
        return kept
