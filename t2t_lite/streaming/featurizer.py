"""Featurization of a stream chunk by chunk: each call reads only its new audio.

    featurizer = IncrementalFeaturizer(FeatureConfig.from_hparams(hparams))
    state = featurizer.initial_state()
    for chunk in chunks:                                  # float32 [1, samples]
        frames, state = featurizer.step(chunk, state)     # [1, new frames, bins, channels]
    frames, state = featurizer.step(tf.zeros([1, 0]), state, final=True)  # the rest

The frames, joined, are `speech_features.featurize_batch` of the whole
stream (a test checks it) for a model with causal normalization
(`audio_causal_normalization`), whose frames never read ahead more than
their window and the delta-deltas' reach. What a chunk leaves for the next
is bounded, whatever the stream's length (`STATE`):

- the samples of the frames not yet complete (`pending`, under one window);
- the last `2 * reach` log-mel frames and their digital-silence flags
  (`mel_tail`, `silent_tail`): the delta-deltas of a frame read `reach`
  frames on each side, so a frame is emitted `reach` frames after its log-mel;
- the running totals of the digital-silence fill and of the normalization
  (`causal_normalization.Totals`);
- how many leading exact zeros were cut (`cut`, the stream's clock) and the
  sum of squares of the samples after them (`energy`, `samples`: the level
  the no-speech rule reads).

One departure from featurizing the whole stream: exact zeros at the end of
the audio so far are framed (as digital silence, filled), where the whole
stream's featurization cuts them; a client that sends digital silence in a
pause gets frames to endpoint on, and only a stream that ends in exact
zeros featurizes differently (frames for its last zeros).
"""

from __future__ import annotations

import tensorflow as tf

from t2t_lite.data import audio_features, causal_normalization
from t2t_lite.data.causal_normalization import Totals
from t2t_lite.data.feature_config import FeatureConfig
from t2t_lite.data.speech_features import log_mel_frames
from t2t_lite.streaming.state import empty_state, with_shape

# The state tensors, in signature order (`Totals` as three tensors each).
STATE = (
    "cut",
    "started",
    "pending",
    "mel_tail",
    "silent_tail",
    "frames",
    "fill_count",
    "fill_total",
    "fill_total_square",
    "norm_count",
    "norm_total",
    "norm_total_square",
    "energy",
    "samples",
)


class IncrementalFeaturizer:
    """`featurize_batch` of a stream, one chunk at a time, with bounded state.

    Args:
        config: the model's `FeatureConfig`, with `causal_normalization`.

    Raises:
        ValueError: a config without causal normalization (its frames read the
            whole utterance), or one that wants a prior the hparams lack.
    """

    def __init__(self, config: FeatureConfig):
        if not config.causal_normalization:
            raise ValueError(
                "incremental featurization needs hparam audio_causal_normalization=True "
                "(per-utterance statistics read the whole utterance)."
            )
        self.config = config
        self.prior = config.required_prior()
        self.step_samples = config.frame_step_samples
        # The samples one frame reads: its window, and one before it for the
        # pre-emphasis (`y[t] = x[t + 1] - a x[t]`).
        self.span = config.frame_length_samples + (1 if config.preemphasis > 0 else 0)
        self.reach = audio_features.delta_delta_reach() if config.add_delta_deltas else 0
        self.bins, self.channels = config.num_mel_bins, config.channels

    def state_spec(self) -> dict[str, tf.TensorSpec]:
        """The state's shapes (`pending`'s length varies, under one window)."""
        bins, channels, tail = self.bins, self.channels, 2 * self.reach
        shapes = {
            "cut": ([], tf.int32),
            "started": ([], tf.bool),
            "pending": ([1, None], tf.float32),
            "mel_tail": ([1, tail, bins, 1], tf.float32),
            "silent_tail": ([1, tail], tf.bool),
            "frames": ([], tf.int32),
            "fill_count": ([1, 1, 1, 1], tf.float32),
            "fill_total": ([1, 1, bins, 1], tf.float32),
            "fill_total_square": ([1, 1, bins, 1], tf.float32),
            "norm_count": ([1, 1, 1, 1], tf.float32),
            "norm_total": ([1, 1, bins, channels], tf.float32),
            "norm_total_square": ([1, 1, bins, channels], tf.float32),
            "energy": ([], tf.float32),
            "samples": ([], tf.int32),
        }
        return {name: tf.TensorSpec(*shapes[name], name=name) for name in STATE}

    def initial_state(self) -> dict[str, tf.Tensor]:
        """The state before the first sample."""
        state = empty_state(self.state_spec())
        fill = Totals.start(1, self.bins, 1)
        norm = Totals.start(1, self.bins, self.channels, self.prior)
        state.update(_totals_state("fill", fill), **_totals_state("norm", norm))
        return state

    def level_dbfs(self, state) -> tf.Tensor:
        """The RMS level of the stream's samples after the cut (-inf for none).

        Measured as `audio_features.level_dbfs` measures a whole utterance.
        """
        mean = state["energy"] / tf.maximum(tf.cast(state["samples"], tf.float32), 1.0)
        return 10.0 * tf.math.log(mean) / tf.math.log(10.0)

    def step(self, waveform, state: dict, final: bool = False):
        """The frames the new samples complete (with `final`, every frame left).

        Args:
            waveform: float32 `[1, samples]`, finite (`zero_non_finite` where
                the audio entered), any length (0 too).
            state: `initial_state()` or the previous step's.
            final: the stream ends after `waveform`.

        Returns:
            `(features [1, frames, bins, channels], state)`: the normalized
            features of the frames completed, in order.
        """
        config, reach = self.config, self.reach
        waveform = tf.convert_to_tensor(waveform, tf.float32)
        # Leading exact zeros are cut until the first sample that is not one.
        nonzero = tf.not_equal(waveform[0], 0.0)
        first = tf.cond(
            tf.reduce_any(nonzero),
            lambda: tf.argmax(tf.cast(nonzero, tf.int32), output_type=tf.int32),
            lambda: tf.shape(waveform)[1],
        )
        dropped = tf.where(state["started"], 0, first)
        new = waveform[:, dropped:]
        x = tf.concat([state["pending"], new], axis=1)
        length = tf.shape(x)[1]
        if final:
            frames = audio_features.num_feature_frames(
                length, config.sample_rate, config.frame_step_ms, config.preemphasis
            )
            used = length
        else:
            frames = tf.maximum((length - self.span) // self.step_samples + 1, 0)
            used = tf.where(frames > 0, (frames - 1) * self.step_samples + self.span, 0)
        log_mel, silent = log_mel_frames(x[:, :used], tf.reshape(used, [1]), frames, config)
        filled, fill = causal_normalization.fill_from(
            log_mel, silent, tf.ones_like(silent), _totals(state, "fill")
        )
        # The delta-deltas over the last frames and the new ones; a frame's
        # own are complete once `reach` frames follow it (at the end: zeros).
        window = tf.concat([state["mel_tail"], filled], axis=1)
        silent_window = tf.concat([state["silent_tail"], silent], axis=1)
        end = 2 * reach + frames
        if final:
            window = tf.pad(window, [[0, 0], [0, reach], [0, 0], [0, 0]])
            last = end
        else:
            last = reach + frames
        features = audio_features.add_delta_deltas(window) if reach else window
        # Window position p is the stream's frame `state["frames"] - 2 reach
        # + p`; the tail's positions before frame 0 are the zeros the
        # whole-stream correlation pads with, not frames.
        first_out = reach + tf.maximum(2 * reach - state["frames"] - reach, 0)
        first_out = tf.minimum(first_out, last)
        features = features[:, first_out:last]
        emitted_silent = silent_window[:, first_out:last]
        counted = ~emitted_silent
        if config.statistics_floor_db > 0:
            counted &= ~causal_normalization.quiet_frames(
                features, self.prior, config.statistics_floor_db
            )
        features, norm = causal_normalization.normalize_from(
            features, tf.ones_like(counted), counted, _totals(state, "norm")
        )
        tail = 2 * reach
        new_state = {
            "cut": state["cut"] + dropped,
            "started": state["started"] | tf.reduce_any(nonzero),
            "pending": x[:, length:] if final else x[:, frames * self.step_samples :],
            "mel_tail": with_shape(window[:, end - tail : end], state["mel_tail"].shape),
            "silent_tail": with_shape(
                silent_window[:, end - tail : end], state["silent_tail"].shape
            ),
            "frames": state["frames"] + frames,
            "energy": state["energy"] + tf.reduce_sum(tf.square(new)),
            "samples": state["samples"] + tf.shape(new)[1],
            **_totals_state("fill", fill),
            **_totals_state("norm", norm),
        }
        return with_shape(features, [1, None, self.bins, self.channels]), new_state


def _totals(state: dict, prefix: str) -> Totals:
    return Totals(*(state[f"{prefix}_{name}"] for name in Totals._fields))


def _totals_state(prefix: str, totals: Totals) -> dict[str, tf.Tensor]:
    return {f"{prefix}_{name}": value for name, value in zip(Totals._fields, totals, strict=True)}
