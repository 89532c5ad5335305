"""Which frames of an utterance are quiet against its own loud frames.

Per-utterance mean and variance normalization (`audio_features.
normalize_per_utterance`) takes its statistics from every sounding frame,
so a second of a room's floor before the first word pulls the mean far
under the speech and changes every frame the model sees: the same words
read differently after a pause. Leaving out frames far under the
utterance's loud frames keeps the statistics the speech's, however much
quiet surrounds it. The reference is the utterance's tenth loudest frame:
not the mean, which the quiet itself would pull down, nor a quantile, which
moves as quiet frames are added, nor the loudest, which one click sets.

    quiet = quiet_frames_of_utterance(log_mel, real, floor_db=30.0)
"""

from __future__ import annotations

import tensorflow as tf

from t2t_lite.data.causal_normalization import NATS_PER_DB

# The loud frames' level: the frame this far down the utterance's frames
# ranked by energy (0-based: a tenth of a second of 10 ms frames).
LOUD_RANK = 9


def quiet_frames_of_utterance(features, nonpadding_mask, floor_db: float) -> tf.Tensor:
    """Frames more than `floor_db` dB under their utterance's loud frames.

    Args:
        features: float32 `[batch, frames, bins, channels]`, channel 0 the
            log-mel (after the digital-silence fill).
        nonpadding_mask: `[batch, frames]`, true for real frames.
        floor_db: how far under the loud frames (`LOUD_RANK`, or the
            loudest tenth of an utterance under a second) a frame is quiet.

    Returns:
        bool `[batch, frames]`, false on padding.

    Example:
        >>> loud, quiet = tf.fill([1, 80, 1], 0.0), tf.fill([1, 80, 1], -5.0)
        >>> frames = tf.stack([loud, quiet, loud, loud])[:, 0][None]
        >>> quiet_frames_of_utterance(frames, tf.ones([1, 4], bool), 30.0).numpy()
        array([[False,  True, False, False]])
    """
    energy = tf.reduce_mean(tf.convert_to_tensor(features, tf.float32)[..., 0], axis=-1)
    real = tf.cast(nonpadding_mask, tf.bool)
    ranked = tf.sort(tf.where(real, energy, -float("inf")), axis=-1, direction="DESCENDING")
    count = tf.reduce_sum(tf.cast(real, tf.int32), axis=-1)
    rank = tf.minimum(LOUD_RANK, count // 10)  # a tenth of a shorter one's frames
    loud = tf.gather(ranked, rank[:, None], batch_dims=1)  # [batch, 1]
    return real & (energy < loud - floor_db * NATS_PER_DB)
