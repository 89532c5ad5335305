"""Re-ranks the search's beams by how well the phoneme CTC head hears their words.

The recipe's phoneme head (`phoneme_ctc_hparams`) learns CMUdict's sounds
of every transcript word; the byte decoder, on the same encoder, spells
what it hears by ear ("they and tide and medered away" for "they untied it
and led it away", whose phonemes the head reads nearly right). A hybrid
recognizer decodes words through a lexicon from such a head; this rescorer
brings the lexicon in after the search, as U2's attention rescoring brings
in the decoder: each beam's words (up to its EOS) are looked up in CMUdict
(first pronunciation; one spoken noise for a word CMUdict lacks, as the
head was trained), and the beam's score gains
`phoneme_weight * log p_ctc(those phonemes | the phoneme head)`, the whole
sequence's CTC probability (TF's CTC loss). The beams are then re-sorted.

Why after the search and not inside it: a word's sounds are known only once
it is finished, so a term paid at each word's end makes every hypothesis
that finishes a word pay what one still spelling has not; inside the search
that drove the beams to spell run-on non-words that never end (measured:
`docs/benchmarks.md`, "What the phoneme head hears, in the search"). Whole
beams compare fairly.
"""

from __future__ import annotations

import tensorflow as tf

from t2t_lite.data.reserved_ids import EOS_ID, PAD_ID
from t2t_lite.decoding.search.pronunciation_table import PronunciationTable
from t2t_lite.decoding.search.scorer import gather_beams, merge_beam_dim, shape_list
from t2t_lite.decoding.search.word_prefixes import WordPrefixes

# A beam whose phonemes no alignment of the frames can emit (more phonemes
# than frames allow) scores this instead of -inf: finite, and below any real one.
IMPOSSIBLE = -1.0e9
_NO_WORD_HERE = 0  # the word hash of a position that finishes no word


class PronunciationRescorer:
    """Scores and re-ranks beams by the phoneme CTC log probability of their words' sounds.

    Args:
        table: the lexicon (`load_pronunciations`).
        surfaces: the recognizer's `target_encoder.token_surfaces()`.

    Example:
    ```python
    rescorer = PronunciationRescorer(load_pronunciations(), encoder.token_surfaces())
    ids, scores = rescorer(ids, scores, model.phoneme_log_probs(memory), frames, weight=0.3)
    ```
    """

    def __init__(self, table: PronunciationTable, surfaces: list[bytes]):
        self.table = table
        self.words = WordPrefixes(surfaces)

    def finished_words(self, ids: tf.Tensor) -> tf.Tensor:
        """int64 `[n, length + 1]`: the hash of the word each position finishes, else 0.

        A position finishes the word before it when its token starts a word
        or is EOS (the first EOS; a row without one ends after its last id).
        Tokens after the first EOS are not read.

        Args:
            ids: int32 `[n, length]` token ids.
        """
        ids = tf.cast(ids, tf.int32)
        ids = tf.concat([ids, tf.fill([tf.shape(ids)[0], 1], EOS_ID)], axis=1)
        before_end = tf.cumsum(tf.cast(tf.equal(ids, EOS_ID), tf.int32), axis=1, exclusive=True)
        read = tf.equal(before_end, 0)  # up to and including the first EOS

        def step(carried, position):
            prefix, _ = carried
            token, reading = position
            finishes = reading & self.words.ends(token) & self.words.spoken(prefix)
            finished = tf.where(finishes, prefix, tf.constant(_NO_WORD_HERE, tf.int64))
            return self.words.after(prefix, token), finished

        start = self.words.initial(tf.shape(ids)[:1])
        _, finished = tf.scan(
            step,
            (tf.transpose(ids), tf.transpose(read)),
            initializer=(start, tf.zeros_like(start)),
        )
        return tf.transpose(finished)

    def phonemes(self, ids: tf.Tensor) -> tf.RaggedTensor:
        """int32 `[n, (phonemes)]`: each row's words' phonemes."""
        words = self.finished_words(ids)  # [n, positions]
        pronunciations, lengths = self.table.lookup(words)  # [n, positions, P], [n, positions]
        said = tf.range(self.table.longest) < lengths[..., None]
        said = tf.logical_and(said, tf.not_equal(words, _NO_WORD_HERE)[..., None])
        rows = tf.shape(ids)[0]
        return tf.ragged.boolean_mask(
            tf.reshape(pronunciations, [rows, -1]), tf.reshape(said, [rows, -1])
        )

    def log_probs(self, ids, phoneme_log_probs, frames) -> tf.Tensor:
        """float32 `[batch, beams]`: log p_ctc(each beam's phonemes).

        Args:
            ids: int32 `[batch, beams, length]`, the search's beams.
            phoneme_log_probs: float32 `[batch, frames, phonemes]`.
            frames: int `[batch]`, each item's real frames.
        """
        batch, beams = shape_list(ids)[:2]
        labels = self.phonemes(merge_beam_dim(ids))
        lengths = tf.cast(labels.row_lengths(), tf.int32)
        posteriors = tf.repeat(tf.cast(phoneme_log_probs, tf.float32), beams, axis=0)
        frames = tf.repeat(tf.cast(frames, tf.int32), beams, axis=0)
        # CTC needs a blank between two equal labels: the frames a row needs.
        repeats = tf.reduce_sum(tf.cast(tf.equal(labels[:, 1:], labels[:, :-1]), tf.int32), axis=1)
        possible = lengths + repeats <= frames
        # TF's CTC kernel (the dense-label path runs in Python ops, ~100x
        # slower) wants blank last and a label in every row: a row without
        # words gets one spoken noise, and its score is replaced below.
        wordless = tf.cast(lengths == 0, tf.int32)
        stand_ins = tf.RaggedTensor.from_row_lengths(
            tf.fill([tf.reduce_sum(wordless)], self.table.spoken_noise), tf.cast(wordless, tf.int64)
        )
        labels = tf.concat([labels, stand_ins], axis=1) - 1  # blank (0) moves last
        blank_last = tf.concat([posteriors[:, :, PAD_ID + 1 :], posteriors[:, :, :1]], axis=2)
        loss = tf.compat.v1.nn.ctc_loss(
            labels.to_sparse(),
            blank_last,
            tf.maximum(frames, 1),
            time_major=False,
            ignore_longer_outputs_than_inputs=True,
        )
        # No words: every real frame blank.
        real = tf.sequence_mask(frames, tf.shape(posteriors)[1])
        silent = tf.reduce_sum(tf.where(real, posteriors[:, :, PAD_ID], 0.0), axis=1)
        log_p = tf.where(lengths > 0, -loss, silent)
        # The kernel scores a row it cannot align 0: it is IMPOSSIBLE.
        log_p = tf.where(possible, tf.maximum(log_p, IMPOSSIBLE), IMPOSSIBLE)
        return tf.reshape(log_p, [batch, beams])

    def __call__(self, ids, scores, phoneme_log_probs, frames, weight: float):
        """`(ids, scores)` re-ranked: each beam's score plus `weight * log_probs`, best first."""
        scores = scores + weight * self.log_probs(ids, phoneme_log_probs, frames)
        order = tf.argsort(scores, axis=1, direction="DESCENDING", stable=True)
        return gather_beams(ids, order), gather_beams(scores, order)
