"""Word timestamps: when each word of a hypothesis was said, and how sure the model was.

A decoded hypothesis is aligned to the encoder's CTC posteriors
(`ctc_alignment.ctc_forced_align`); its tokens are grouped into words at the
spaces of their text (`TextEncoder.token_surfaces`: byte and SentencePiece
targets alike), and each word gets:

- start: the start of the first encoder frame of its first token (of its
  first token after a gap of more than `MAX_GAP_FRAMES` blank frames inside
  the word, less a frame per token before the gap: see `WordTimer`);
- end: the end of the last encoder frame of its last token;
- with a model's word boundary head (`boundary_probs`), both then placed on
  the 10 ms feature frames by the best path through the head's output,
  between the neighbouring words' CTC spans (`boundary_refinement.py`);
- confidence: the geometric mean of the CTC posterior of its tokens over
  the frames the alignment gives them (blank frames between its tokens do
  not count), in (0, 1], raised to the run's calibration exponent
  (`word_confidence.py`; 1 until calibrated).

An encoder frame stands for the 40 ms (4 feature frames) around the middle
of the audio it sees (`SpeechFrontEnd.input_frames_seen`: 15 feature frames,
165 ms). CTC posteriors are peaky (a token often fires on one frame, blanks
around it), so word times are coarser than a phonetic forced aligner's;
`scripts/word_time_accuracy.py` measures them against the built-in corpus's
synthesizer word times. A word whose tokens got no frames (the hypothesis
cannot fit the frames: more tokens than frames) has start and end -1 and
confidence 0.

Everything is TF ops on padded tensors (no ragged outputs), so it runs in
the SavedModel's `transcribe_timed` signature and under `tf.function`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import tensorflow as tf

from t2t_lite.data.feature_config import FeatureConfig
from t2t_lite.data.text_encoders import EOS_ID, PAD_ID
from t2t_lite.decoding.timing.boundary_refinement import refine_word_boundaries
from t2t_lite.decoding.timing.ctc_alignment import ctc_forced_align
from t2t_lite.decoding.timing.subtitles import TimedWord
from t2t_lite.layers.speech_front_end import SpeechFrontEnd

# Within a word, tokens further apart than this many blank frames (120 ms)
# are not the same stretch of speech (see `WordTimer`).
MAX_GAP_FRAMES = 3


class WordTimes(NamedTuple):
    """Padded word timestamps of a batch of hypotheses.

    Attributes:
        words: string `[batch, max_words]`, "" past a row's `num_words`.
        starts: float32 `[batch, max_words]` seconds.
        ends: float32 `[batch, max_words]` seconds.
        confidences: float32 `[batch, max_words]` in [0, 1].
        num_words: int32 `[batch]`.
    """

    words: tf.Tensor
    starts: tf.Tensor
    ends: tf.Tensor
    confidences: tf.Tensor
    num_words: tf.Tensor


def word_boundary_tables(surfaces: list[bytes]) -> dict[str, np.ndarray]:
    """Per-id facts that group tokens into words, from `TextEncoder.token_surfaces`.

    Returns:
        `{"surface": bytes [vocab], "content": bool, "leading_space": bool,
        "trailing_space": bool}`: whether an id carries any non-space text,
        and whether its text starts or ends with a space (a word boundary).
    """
    return {
        "surface": np.array(surfaces, dtype=object),
        "content": np.array([bool(s.strip()) for s in surfaces]),
        "leading_space": np.array([s[:1].isspace() for s in surfaces]),
        "trailing_space": np.array([s[-1:].isspace() for s in surfaces]),
    }


def encoder_frame_seconds(config: FeatureConfig) -> tuple[float, float]:
    """`(step, middle)`: seconds between encoder frames, and the middle of frame 0's audio.

    Frame `t`'s middle is `middle + t * step`, for the front end `config`
    describes.
    """
    step = config.frame_step_samples
    reduction, first_middle = SpeechFrontEnd.frames_per_output()
    middle = first_middle * step + config.frame_length_samples / 2
    rate = config.sample_rate
    return reduction * step / rate, middle / rate


def _hypothesis_labels(ids: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """Decoded ids `[batch, length]` (EOS, then padding) -> labels and counts."""
    ids = tf.cast(ids, tf.int32)
    kept = (tf.cumsum(tf.cast(ids == EOS_ID, tf.int32), axis=1) == 0) & (ids != PAD_ID)
    return tf.where(kept, ids, PAD_ID), tf.reduce_sum(tf.cast(kept, tf.int32), axis=1)


class WordTimer:
    """Word timestamps for hypotheses of one speech model and target vocabulary.

    Args:
        surfaces: `TextEncoder.token_surfaces()` of the targets.
        features: the run's audio front end (`RunConfig.features`: the
            frame step and window).
        confidence_exponent: the calibration's exponent
            (`word_confidence.calibration_exponent`); 1: raw confidences.

    Example:
    ```python
    timer = WordTimer(encoder.token_surfaces(), run_config.features)
    times = timer(ctc_log_probs, encoded_lengths, ids, offsets)
    times.words[0, :times.num_words[0]], times.starts[0], times.ends[0]
    ```
    """

    def __init__(
        self, surfaces: list[bytes], features: FeatureConfig, confidence_exponent: float = 1.0
    ):
        self.confidence_exponent = float(confidence_exponent)
        tables = word_boundary_tables(surfaces)
        self._surface = tf.constant(tables["surface"], tf.string)
        self._content = tf.constant(tables["content"])
        self._leading_space = tf.constant(tables["leading_space"])
        self._trailing_space = tf.constant(tables["trailing_space"])
        self.frame_step_seconds, self.first_frame_middle = encoder_frame_seconds(features)
        config = features
        # Feature frame j's window has its middle at `feature_middle + j * feature_step` s.
        self.feature_step = config.frame_step_samples / config.sample_rate
        self.feature_middle = config.frame_length_samples / 2 / config.sample_rate

    def __call__(
        self,
        ctc_log_probs,
        encoded_lengths,
        ids,
        offsets=None,
        boundary_probs=None,
        frame_lengths=None,
    ) -> WordTimes:
        """Aligns and groups.

        Args:
            ctc_log_probs: float32 `[batch, frames, vocab]` CTC log-probabilities.
            encoded_lengths: int `[batch]` real encoder frames.
            ids: int `[batch, length]` hypotheses (EOS-terminated, 0-padded).
            offsets: float `[batch]` seconds added to every time (where the
                audio the frames came from starts in its recording); 0 if None.
            boundary_probs: float `[batch, feature_frames, 2]`, the model's
                word boundary head's probabilities (the sigmoid of
                `Transformer.word_boundary_logits`), or None: the
                alignment's times as they are.
            frame_lengths: int `[batch]` real feature frames (needed with
                `boundary_probs`); given, no time falls after the last one's
                middle (the alignment's 40 ms frames may end past the audio).

        Returns:
            `WordTimes`.
        """
        labels, label_lengths = _hypothesis_labels(ids)
        spans = ctc_forced_align(ctc_log_probs, encoded_lengths, labels, label_lengths)
        batch, length = tf.shape(labels)[0], tf.shape(labels)[1]
        real = tf.sequence_mask(label_lengths, length)
        content = tf.gather(self._content, labels) & real
        # A token starts a word when it has text and a space comes before its
        # text: at its own start, at the end of the token before, or at the
        # start of the hypothesis.
        space_before = tf.pad(
            tf.gather(self._trailing_space, labels)[:, :-1], [[0, 0], [1, 0]], constant_values=True
        )
        starts_word = content & (tf.gather(self._leading_space, labels) | space_before)
        word_index = tf.cumsum(tf.cast(starts_word, tf.int32), axis=1) - 1
        num_words = tf.reduce_sum(tf.cast(starts_word, tf.int32), axis=1)
        # Segments: row b's word w is b * (length + 1) + w; the last one of a
        # row collects tokens in no word (spaces, padding).
        in_word = content & (word_index >= 0)
        segments = tf.range(batch)[:, None] * (length + 1) + tf.where(in_word, word_index, length)
        count = batch * (length + 1)

        def per_word(reduce, values):
            result = reduce(tf.reshape(values, [-1]), tf.reshape(segments, [-1]), count)
            return tf.reshape(result, [batch, length + 1])[:, :length]

        aligned = in_word & (spans.last_frame >= spans.first_frame)
        frames_on = tf.cast(spans.last_frame - spans.first_frame + 1, tf.float32)
        frames_on = tf.where(aligned, frames_on, 0.0)
        big = tf.int32.max
        # A word's tokens come a frame or two apart. A CTC head also learns to
        # fire an utterance's first tokens on its first frames, wherever the
        # word really starts (after a pause, a piece of a long recording
        # starts early): tokens cut off from the rest of their word by more
        # than MAX_GAP_FRAMES blank frames are displaced, so the word starts
        # at the first token after its last such gap, one frame back for each
        # displaced token before it.
        token = tf.broadcast_to(tf.range(length)[None, :], [batch, length])
        gap = spans.first_frame - tf.pad(spans.last_frame[:, :-1], [[0, 0], [1, 0]]) - 1
        same_word = in_word & tf.pad(in_word[:, :-1], [[0, 0], [1, 0]]) & ~starts_word
        anchor = aligned & (starts_word | (same_word & (gap > MAX_GAP_FRAMES)))
        anchor_token = per_word(tf.math.unsorted_segment_max, tf.where(anchor, token, -1))
        first_token = per_word(tf.math.unsorted_segment_min, tf.where(aligned, token, big))
        anchor_frame = tf.gather(
            spans.first_frame, tf.clip_by_value(anchor_token, 0, length - 1), batch_dims=1
        )
        first = tf.where(
            anchor_token >= 0,
            tf.maximum(anchor_frame - (anchor_token - first_token), 0),
            big,
        )
        last = per_word(tf.math.unsorted_segment_max, tf.where(aligned, spans.last_frame, -1))
        log_prob_sum = per_word(tf.math.unsorted_segment_sum, spans.mean_log_prob * frames_on)
        word_frames = per_word(tf.math.unsorted_segment_sum, frames_on)
        texts = per_word(tf.strings.unsorted_segment_join, tf.gather(self._surface, labels))
        texts = tf.strings.unicode_transcode(
            tf.strings.strip(texts), "UTF-8", "UTF-8", errors="replace"
        )

        is_word = tf.sequence_mask(num_words, length)
        timed = is_word & (last >= first)
        offsets = tf.zeros([batch]) if offsets is None else tf.cast(offsets, tf.float32)
        half = self.frame_step_seconds / 2
        step, middle = self.frame_step_seconds, self.first_frame_middle

        def seconds(frame, edge):
            return offsets[:, None] + middle + tf.cast(frame, tf.float32) * step + edge

        start_seconds, end_seconds = seconds(first, -half), seconds(last, half)
        if boundary_probs is not None:
            start_frames, end_frames = refine_word_boundaries(
                boundary_probs,
                frame_lengths,
                tf.where(timed, first, 0),
                tf.where(timed, last, 0),
                timed,
            )

            def feature_seconds(frame):
                return (
                    offsets[:, None]
                    + self.feature_middle
                    + self.feature_step * tf.cast(frame, tf.float32)
                )

            start_seconds, end_seconds = feature_seconds(start_frames), feature_seconds(end_frames)
        elif frame_lengths is not None:
            audio_end = (
                offsets
                + self.feature_middle
                + self.feature_step
                * tf.cast(tf.maximum(tf.convert_to_tensor(frame_lengths) - 1, 0), tf.float32)
            )[:, None]
            start_seconds = tf.minimum(start_seconds, audio_end)
            end_seconds = tf.minimum(end_seconds, audio_end)
        width = tf.reduce_max(tf.concat([num_words, [0]], axis=0))
        mean_log_prob = log_prob_sum / tf.maximum(word_frames, 1.0)
        return WordTimes(
            words=tf.where(is_word, texts, "")[:, :width],
            starts=tf.where(timed, start_seconds, -1.0)[:, :width],
            ends=tf.where(timed, end_seconds, -1.0)[:, :width],
            confidences=tf.where(timed, tf.exp(mean_log_prob * self.confidence_exponent), 0.0)[
                :, :width
            ],
            num_words=num_words,
        )


def join_word_times(times: WordTimes, rows, num_rows) -> WordTimes:
    """Each recording's pieces' words, in order: `WordTimes` of `num_rows` rows.

    Args:
        times: `WordTimes` of the pieces (`split_recordings`' order), with
            times already in their recordings' clocks.
        rows: int `[pieces]`: the recording each piece came from.
        num_rows: recordings.

    Returns:
        `WordTimes` `[num_rows, max_words]`.
    """
    rows = tf.cast(rows, tf.int32)
    counts = times.num_words
    before = tf.cumsum(counts, exclusive=True)
    first_in_row = before - tf.gather(tf.math.unsorted_segment_min(before, rows, num_rows), rows)
    width_in = tf.shape(times.words)[1]
    valid = tf.sequence_mask(counts, width_in)  # [pieces, words]
    position = first_in_row[:, None] + tf.range(width_in)[None, :]
    row = tf.broadcast_to(rows[:, None], tf.shape(position))
    index = tf.boolean_mask(tf.stack([row, position], axis=-1), valid)
    num_words = tf.math.unsorted_segment_sum(counts, rows, num_rows)
    shape = tf.stack([num_rows, tf.reduce_max(tf.concat([num_words, [0]], axis=0))])

    def scatter(values, empty):
        filled = tf.fill(shape, tf.constant(empty, values.dtype))
        return tf.tensor_scatter_nd_update(filled, index, tf.boolean_mask(values, valid))

    return WordTimes(
        words=scatter(times.words, ""),
        starts=scatter(times.starts, -1.0),
        ends=scatter(times.ends, -1.0),
        confidences=scatter(times.confidences, 0.0),
        num_words=num_words,
    )


def timed_word_rows(times: WordTimes) -> list[tuple[TimedWord, ...]]:
    """Each row's words of `times` as `TimedWord`s (NumPy values)."""
    words, starts, ends, confidences, counts = (np.asarray(t) for t in times)
    return [
        tuple(
            TimedWord(
                words[row, i].decode("utf-8", errors="replace"),
                float(starts[row, i]),
                float(ends[row, i]),
                float(confidences[row, i]),
            )
            for i in range(counts[row])
        )
        for row in range(len(counts))
    ]
