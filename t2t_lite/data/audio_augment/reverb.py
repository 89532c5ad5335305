"""Reverberation by a room impulse response: synthetic, or from a bank of files.

With no impulse-response directory, each response is a `synthetic_rir`
(a direct path and an exponentially decaying noise tail); otherwise one of
the user's WAV/FLAC responses (`load_rir_bank`, read once with NumPy and
captured in the graph as a constant).
"""

from __future__ import annotations

import functools

import numpy as np
import tensorflow as tf

from t2t_lite.data.audio_augment.draws import split_seed, uniform, uniform_index
from t2t_lite.data.audio_augment.waveform import as_waveform, clip_to_unit_range, next_fast_length
from t2t_lite.data.audio_io import SAMPLE_RATE, audio_files_under, read_audio


def synthetic_rir(
    seed=None,
    sample_rate: int = SAMPLE_RATE,
    rt60_range: tuple[float, float] = (0.2, 0.8),
    drr_db_range: tuple[float, float] = (0.0, 10.0),
) -> tf.Tensor:
    """A simple synthetic room impulse response: direct path + decaying noise tail.

    `h[0] = 1` is the direct path; from sample 1 on, Gaussian noise under an
    exponential envelope that falls 60 dB in RT60 seconds (RT60 drawn
    uniformly in `rt60_range`) is the diffuse reverberation, scaled so that
    the direct-to-reverberant energy ratio is drawn uniformly in
    `drr_db_range` (0 to 10 dB: a speaker within a few metres).

    Args:
      seed: an int `[2]` seed or a Python int; None draws a fresh one.
      sample_rate: sample rate in Hz.
      rt60_range: (min, max) reverberation time in seconds.
      drr_db_range: (min, max) direct-to-reverberant ratio in dB.

    Returns:
      float32 `[ceil(max RT60 * sample_rate)]`.

    Example:
      >>> rir = synthetic_rir(seed=[7, 8])
      >>> rir.shape, float(rir[0])
      (TensorShape([12800]), 1.0)
    """
    rt60_seed, drr_seed, tail_seed = split_seed(seed, 3)
    length = max(int(np.ceil(rt60_range[1] * sample_rate)), 2)
    rt60 = uniform(rt60_seed, float(rt60_range[0]), float(rt60_range[1]))
    drr_db = uniform(drr_seed, float(drr_db_range[0]), float(drr_db_range[1]))
    seconds = tf.range(length, dtype=tf.float32) / sample_rate
    envelope = tf.exp(-np.log(1000.0) * seconds / rt60)  # amplitude: -60 dB at RT60
    tail = tf.random.stateless_normal([length], seed=tail_seed) * envelope
    tail *= tf.cast(tf.range(length) > 0, tf.float32)
    tail_energy = tf.reduce_sum(tf.square(tail))
    tail *= tf.sqrt(tf.pow(10.0, -drr_db / 10.0) / tail_energy)
    return tail + tf.one_hot(0, length, dtype=tf.float32)


def reverberate(
    waveform,
    rir_bank=None,
    seed=None,
    sample_rate: int = SAMPLE_RATE,
    rt60_range: tuple[float, float] = (0.2, 0.8),
    drr_db_range: tuple[float, float] = (0.0, 10.0),
) -> tf.Tensor:
    """Convolves the waveform with a room impulse response, keeping its length and level.

    The response is a random row of `rir_bank` or, with no bank, a
    `synthetic_rir`. The convolution runs as a product of real FFTs; the
    output is the first `samples` samples of the full convolution (the
    direct path is at t=0, so nothing is delayed; the tail past the end is
    cut, as a recording that stops would cut it), scaled to the input's RMS
    and clipped to [-1, 1].

    Args:
      waveform: float32 `[samples]`.
      rir_bank: None, or float32 `[num_rirs, rir_samples]` (from
        `load_rir_bank`), a NumPy array or tensor.
      seed: an int `[2]` seed or a Python int; None draws a fresh one.
      sample_rate: sample rate in Hz (synthetic responses only).
      rt60_range: reverberation time range in seconds (synthetic only).
      drr_db_range: direct-to-reverberant ratio range in dB (synthetic only).

    Returns:
      float32 `[samples]`.

    Example:
      >>> reverberate(tf.ones([8000]) * 0.1, None, seed=[9, 10]).shape
      TensorShape([8000])
    """
    waveform = as_waveform(waveform)
    choice_seed, rir_seed = split_seed(seed, 2)
    if rir_bank is None:
        rir = synthetic_rir(rir_seed, sample_rate, rt60_range, drr_db_range)
    else:
        bank = tf.convert_to_tensor(rir_bank, tf.float32)
        if bank.shape.rank != 2 or bank.shape[0] == 0 or bank.shape[1] == 0:
            raise ValueError(f"rir_bank must be [num_rirs, rir_samples], got {bank.shape}.")
        rir = tf.gather(bank, uniform_index(choice_seed, tf.shape(bank)[0]))
    num_samples = tf.shape(waveform)[0]
    length = next_fast_length(num_samples + tf.shape(rir)[0] - 1)[tf.newaxis]
    spectrum = tf.signal.rfft(waveform, fft_length=length) * tf.signal.rfft(rir, fft_length=length)
    reverberant = tf.signal.irfft(spectrum, fft_length=length)[:num_samples]
    gain = tf.sqrt(
        tf.math.divide_no_nan(
            tf.reduce_sum(tf.square(waveform)), tf.reduce_sum(tf.square(reverberant))
        )
    )
    return clip_to_unit_range(reverberant * gain)


def load_rir_bank(
    directory: str,
    sample_rate: int = SAMPLE_RATE,
    max_seconds: float = 1.0,
) -> np.ndarray:
    """Reads every WAV/FLAC file under `directory` as one room impulse response.

    Each response (mono, resampled to `sample_rate`) is shifted so that its
    strongest sample (the direct path) is at t=0, cut to `max_seconds`,
    scaled to unit energy, and zero-padded to the longest one's length.

    Args:
      directory: a directory searched recursively for .wav and .flac files.
      sample_rate: sample rate of the bank in Hz.
      max_seconds: the longest response kept, in seconds.

    Returns:
      float32 `[num_rirs, rir_samples]`.

    Raises:
      ValueError: no audio files, or one that is all zeros.
      audio_io.AudioError: a file cannot be read.

    Example:
      >>> bank = load_rir_bank("/data/RIRS_NOISES/real_rirs")  # doctest: +SKIP
      >>> bank.shape  # doctest: +SKIP
      (325, 16000)
    """
    max_samples = max(int(round(max_seconds * sample_rate)), 1)
    responses = []
    for path in audio_files_under(directory):
        response = read_audio(path, sample_rate).astype(np.float64)
        energy = np.sum(np.square(response))
        if energy == 0:
            raise ValueError(f"Room impulse response {path!r} is all zeros.")
        response = response[np.argmax(np.abs(response)) :][:max_samples]
        responses.append(response / np.sqrt(np.sum(np.square(response))))
    length = max(response.size for response in responses)
    return np.stack([np.pad(r, [0, length - r.size]) for r in responses]).astype(np.float32)


@functools.lru_cache(maxsize=4)
def cached_rir_bank(directory: str, sample_rate: int) -> np.ndarray:
    return load_rir_bank(directory, sample_rate)
