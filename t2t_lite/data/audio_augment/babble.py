"""Babble: other utterances talking at once under the speech, at a random SNR.

The noise of a café or an open office is other people talking, and it is
the hardest noise for a recognizer: it has the spectrum and the rhythm of
speech. Generated noise teaches none of that, so training mixes babble from
other training utterances (the input pipeline hands each example a few:
`pipeline.make_dataset`), and the noisy test splits from other test
utterances (`conditions.py`), with the same `babble` below.
"""

from __future__ import annotations

import tensorflow as tf

from t2t_lite.data.audio_augment.draws import split_seed, uniform
from t2t_lite.data.audio_augment.noise import scale_to_snr
from t2t_lite.data.audio_augment.waveform import as_waveform, clip_to_unit_range
from t2t_lite.data.audio_io import SAMPLE_RATE


def babble(voices: tf.RaggedTensor, num_samples, count=None, offsets=None) -> tf.Tensor:
    """Several voices talking at once, at unit RMS.

    Each voice (another utterance) is brought to unit RMS, read from its
    offset and repeated to `num_samples`; the first `count` voices are
    summed (empty or silent voices add nothing) and the sum brought to unit
    RMS. No voice is followed when there are three or more.

    Args:
      voices: float32 ragged `[num_voices, None]`.
      num_samples: int scalar, the length wanted.
      count: int scalar, how many of the voices to use; None for all.
      offsets: int `[num_voices]` samples into each voice to start from
        (taken modulo its length); None for 0.

    Returns:
      float32 `[num_samples]` with mean square 1 (all zeros when no voice
      has sound).

    Example:
      >>> voices = tf.ragged.constant([[0.1, -0.1, 0.1], [0.5, 0.0]])
      >>> [round(float(v), 3) for v in babble(voices, 4)]
      [1.307, -0.541, 1.307, 0.541]
    """
    voices = tf.cast(voices, tf.float32)
    num_samples = tf.cast(num_samples, tf.int64)
    lengths = voices.row_lengths()
    num_voices = tf.shape(lengths, out_type=tf.int64)[0]
    count = num_voices if count is None else tf.minimum(tf.cast(count, tf.int64), num_voices)
    offsets = tf.zeros_like(lengths) if offsets is None else tf.cast(offsets, tf.int64)
    safe_lengths = tf.maximum(lengths, 1)
    # [num_voices, num_samples]: each voice from its offset, wrapping around.
    steps = (offsets[:, None] + tf.range(num_samples)[None, :]) % safe_lengths[:, None]
    samples = tf.gather(voices.flat_values, voices.row_starts()[:, None] + steps)
    power = tf.math.divide_no_nan(
        tf.reduce_sum(tf.square(voices), axis=1), tf.cast(lengths, tf.float32)
    )
    used = (tf.range(num_voices) < count) & (lengths > 0) & (power > 1e-20)
    gains = tf.where(used, tf.math.rsqrt(tf.maximum(power, 1e-20)), 0.0)
    total = tf.reduce_sum(samples * gains[:, None], axis=0)
    return total * tf.math.rsqrt(tf.maximum(tf.reduce_mean(tf.square(total)), 1e-20))


def add_babble(
    waveform,
    voices: tf.RaggedTensor,
    voice_range: tuple[int, int] = (3, 6),
    snr_db: tuple[float, float] = (5.0, 25.0),
    seed=None,
    sample_rate: int = SAMPLE_RATE,
) -> tf.Tensor:
    """Adds babble of `voice_range` voices at an SNR drawn in `snr_db`.

    How many of `voices` talk is drawn in `voice_range` (at most all of
    them), each from a random point of its utterance; the SNR is the
    utterance's active level over the babble's (`noise.scale_to_snr`), as
    for generated noise.

    Args:
      waveform: float32 `[samples]`.
      voices: float32 ragged `[num_voices, None]`, other utterances.
      voice_range: `(min, max)` voices talking.
      snr_db: `(min, max)` SNR in dB.
      seed: an int `[2]` seed or a Python int; None draws a fresh one.
      sample_rate: sample rate in Hz (the level's 10 ms blocks).

    Returns:
      float32 `[samples]` in [-1, 1].

    Example:
      >>> speech = tf.sin(tf.range(16000, dtype=tf.float32) * 0.3) * 0.1
      >>> voices = tf.RaggedTensor.from_row_lengths(tf.random.normal([24000], seed=1), [8000] * 3)
      >>> added = add_babble(speech, voices, (3, 3), (10.0, 10.0), seed=[1, 2]) - speech
      >>> round(float(10 * tf.math.log(tf.reduce_mean(speech**2) / tf.reduce_mean(added**2))
      ...             / tf.math.log(10.0)), 1)
      10.0
    """
    waveform = as_waveform(waveform)
    count_seed, offset_seed, snr_seed = split_seed(seed, 3)
    lengths = voices.row_lengths()
    count = tf.random.stateless_uniform(
        [], count_seed, minval=int(voice_range[0]), maxval=int(voice_range[1]) + 1, dtype=tf.int32
    )
    fractions = tf.random.stateless_uniform(tf.shape(lengths), offset_seed)
    offsets = tf.cast(fractions * tf.cast(lengths, tf.float32), tf.int64)
    noise = babble(voices, tf.shape(waveform)[0], count, offsets)
    level = uniform(snr_seed, float(snr_db[0]), float(snr_db[1]))
    return clip_to_unit_range(waveform + scale_to_snr(waveform, noise, level, sample_rate))
