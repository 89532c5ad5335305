"""Non-speech sounds of a room: knocks, taps and clicks, and the beeps of devices.

Generated, not recorded: each event is a damped resonance with a burst of
noise (a knock on a door or a table, a key, a cup set down: decaying in 2
to 60 ms, resonating at 80-1,500 Hz) or a tone with soft edges (a phone,
a microwave, a notification: 300-3,000 Hz, 60-400 ms), at levels spread
over 20 dB, one to six a second at random times. Between them is silence,
so the noise is sparse where the colored noises and hum are steady, and a
recognizer trained with it learns that a sudden sound is not a word.
"""

from __future__ import annotations

import math

import numpy as np
import tensorflow as tf

from t2t_lite.data.audio_augment.draws import split_seed, uniform
from t2t_lite.data.audio_io import SAMPLE_RATE

# At most this many events are drawn (six a second for 10 s and more are
# rarely needed; a longer utterance just gets them more sparsely).
MAX_EVENTS = 64
EVENT_SECONDS = 0.4  # the longest event: a beep


def _log_uniform(seed, shape, low: float, high: float) -> tf.Tensor:
    draw = tf.random.stateless_uniform(shape, seed, math.log(low), math.log(high))
    return tf.exp(draw)


def sound_events(num_samples, seed=None, sample_rate: int = SAMPLE_RATE) -> tf.Tensor:
    """Sparse non-speech sounds (see the module docstring), at unit RMS.

    Args:
      num_samples: int scalar (Python or tensor) >= 0.
      seed: an int `[2]` seed or a Python int; None draws a fresh one.
      sample_rate: sample rate in Hz.

    Returns:
      float32 `[num_samples]` with mean square 1 (0 for an empty waveform).

    Example:
      >>> events = sound_events(32000, seed=[1, 2])
      >>> round(float(tf.reduce_mean(tf.square(events))), 2)
      1.0
    """
    num_samples = tf.cast(num_samples, tf.int32)
    seeds = split_seed(seed, 10)
    window = int(EVENT_SECONDS * sample_rate)
    shape = [MAX_EVENTS]
    # How many, where, what and how loud.
    seconds = tf.cast(num_samples, tf.float32) / sample_rate
    per_second = uniform(seeds[0], 1.0, 6.0)
    count = tf.minimum(tf.cast(tf.math.ceil(per_second * seconds), tf.int32), MAX_EVENTS)
    starts = tf.cast(
        tf.random.stateless_uniform(shape, seeds[1]) * tf.cast(num_samples, tf.float32), tf.int32
    )
    is_beep = tf.random.stateless_uniform(shape, seeds[2]) < 0.3
    amplitude = tf.pow(10.0, tf.random.stateless_uniform(shape, seeds[3], -1.0, 0.0))
    amplitude *= tf.cast(tf.range(MAX_EVENTS) < count, tf.float32)
    # Each event's waveform over its window: [events, window].
    t = tf.range(window, dtype=tf.float32)[tf.newaxis, :] / sample_rate
    phase = tf.random.stateless_uniform(shape + [1], seeds[4], 0.0, 2 * np.pi)
    resonance = _log_uniform(seeds[5], shape + [1], 80.0, 1500.0)
    decay = _log_uniform(seeds[6], shape + [1], 0.002, 0.06)
    burst = tf.random.stateless_normal([MAX_EVENTS, window], seeds[7])
    knock = tf.exp(-t / decay) * (tf.sin(2 * np.pi * resonance * t + phase) + 0.5 * burst)
    pitch = _log_uniform(seeds[8], shape + [1], 300.0, 3000.0)
    length = 0.06 + (EVENT_SECONDS - 0.06) * tf.random.stateless_uniform(shape + [1], seeds[9])
    edge = 0.01  # 10 ms raised-cosine onset and release: no click of its own
    envelope = tf.clip_by_value(tf.minimum(t, length - t) / edge, 0.0, 1.0)
    beep = tf.sin(2 * np.pi * pitch * t + phase) * (0.5 - 0.5 * tf.cos(np.pi * envelope))
    events = tf.where(is_beep[:, tf.newaxis], beep, knock) * amplitude[:, tf.newaxis]
    # Laid into the recording; what runs past its end is dropped.
    positions = starts[:, tf.newaxis] + tf.range(window)[tf.newaxis, :]
    inside = positions < num_samples
    sound = tf.scatter_nd(
        tf.boolean_mask(positions, inside)[:, tf.newaxis],
        tf.boolean_mask(events, inside),
        num_samples[tf.newaxis],
    )
    power = tf.math.divide_no_nan(tf.reduce_sum(tf.square(sound)), tf.cast(num_samples, tf.float32))
    return sound * tf.math.rsqrt(tf.maximum(power, 1e-20)) * tf.cast(power > 0, tf.float32)
