"""Waveform augmentation for speech training, on the fly, as pure TensorFlow ops.

Speed perturbation (Kaldi's and ESPnet's 0.9 / 1.0 / 1.1), volume
perturbation, additive noise at a random SNR, reverberation by a room
impulse response and exact digital silence around the utterance, each a
function of one utterance: float32 `[samples]` in [-1, 1] (16 kHz by
default) in, float32 `[samples']` in [-1, 1] out. They run
inside `tf.data` maps and `tf.function`s with unknown lengths, so augmented
copies never touch the disk, and all randomness comes from stateless draws
keyed by an int `[2]` seed: the same seed gives the same output (the per-example
seeds of the input pipeline make a run repeatable under `--random_seed`).

Spectral work (resampling, colored noise, convolution) uses `tf.signal`'s
real FFTs at lengths whose prime factors are 2, 3 and 5 (plus the small
numerator and denominator of a speed factor), because an FFT of a length with
a large prime factor costs about seven times more.

Typical use in training only (never in evaluation or serving):

    config = AugmentConfig.from_hparams(hparams)     # AUGMENT_HPARAMS names
    if training and config.enabled:
        waveform = augment_waveform(waveform, config, seed=example_seed)
    features = featurize(waveform, ...)

Noise and room impulse responses come from a user's directories of WAV/FLAC
files (`load_noise_bank`, `load_rir_bank`: read once with NumPy, captured in
the graph as constants) or, when none is named, are generated: white, pink or
brown noise (`colored_noise`) and exponentially decaying noise tails
(`synthetic_rir`).
"""

from __future__ import annotations

import dataclasses
import fractions
import functools
import os
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from t2t_lite.data.audio_features import _stateless_seed
from t2t_lite.data.audio_io import read_audio

SAMPLE_RATE = 16000

# The hparams that drive `augment_waveform` (through `AugmentConfig.from_hparams`),
# all off by default. HParams types are fixed by the default value and an empty
# list would be typed "list of str" (and JSON could not say otherwise), so "off"
# is written [1.0] for the speed factors and [0.0, 0.0] for the volume range.
AUGMENT_HPARAMS = {
    # Speed perturbation: one factor drawn uniformly per utterance (include 1.0
    # to leave some unchanged); [1.0] is off. Kaldi/ESPnet: [0.9, 1.0, 1.1].
    "aug_speed_factors": [1.0],
    "aug_speed_prob": 1.0,
    # Volume perturbation: gain drawn uniformly in [min, max] dB; [0, 0] is off.
    "aug_volume_db": [0.0, 0.0],
    "aug_volume_prob": 1.0,
    # Additive noise at an SNR drawn uniformly in [min, max] dB, from the WAV/FLAC
    # files under aug_noise_dir, or generated white/pink/brown noise if "".
    "aug_noise_prob": 0.0,
    "aug_noise_snr_db": [5.0, 20.0],
    "aug_noise_dir": "",
    # Reverberation by room impulse responses under aug_rir_dir, or synthetic
    # ones (RT60 0.2-0.8 s) if "".
    "aug_reverb_prob": 0.0,
    "aug_rir_dir": "",
}

_AUDIO_EXTENSIONS = (".wav", ".flac")
_AUGMENT_TAG = 0x417567  # "Aug": augment_waveform's stream, apart from dither's
_PROB_SCALE = 1 << 24  # probabilities are compared as integers (same under XLA)
_MAX_DENOMINATOR = 64  # speed factors are taken as fractions p / q, q <= 64
_RESAMPLE_BLOCK = 64  # resampling FFT lengths are multiples of 64 * p (and 64 * q)
_RESAMPLE_MIN_PAD = 256  # zeros after the waveform, so its end rings into them


def _five_smooth_numbers(limit: int) -> np.ndarray:
    """Sorted numbers 2^a 3^b 5^c <= limit: lengths the FFT handles fastest."""
    numbers = []
    power2 = 1
    while power2 <= limit:
        power3 = power2
        while power3 <= limit:
            power5 = power3
            while power5 <= limit:
                numbers.append(power5)
                power5 *= 5
            power3 *= 3
        power2 *= 2
    return np.array(sorted(numbers), np.int32)


_FAST_LENGTHS = _five_smooth_numbers(np.iinfo(np.int32).max)


def _next_fast_length(length: tf.Tensor) -> tf.Tensor:
    """The smallest 5-smooth int32 >= `length` (a scalar, at least 1)."""
    length = tf.maximum(tf.cast(length, tf.int32), 1)
    table = tf.constant(_FAST_LENGTHS)
    return tf.gather(table, tf.searchsorted(table, length[tf.newaxis], side="left"))[0]


def _split_seed(seed, num: int) -> list[tf.Tensor]:
    """`num` independent int64 `[2]` seeds from one (low 32 bits kept, as XLA reads)."""
    seeds = tf.random.split(_stateless_seed(seed), num)
    return [_stateless_seed(seeds[index]) for index in range(num)]


def _uniform_index(seed: tf.Tensor, count) -> tf.Tensor:
    """An int32 scalar uniform in [0, count), from an integer draw."""
    return tf.random.stateless_uniform(
        [], seed=seed, minval=0, maxval=tf.cast(count, tf.int32), dtype=tf.int32
    )


def _uniform(seed: tf.Tensor, low: float, high: float) -> tf.Tensor:
    """A float32 scalar uniform in [low, high) (exactly `low` when they are equal)."""
    if low == high:
        return tf.constant(low, tf.float32)
    return tf.random.stateless_uniform([], seed=seed, minval=low, maxval=high)


def _coin(seed: tf.Tensor, probability: float) -> tf.Tensor:
    """A bool scalar, True with `probability`."""
    threshold = int(round(probability * _PROB_SCALE))
    draw = tf.random.stateless_uniform([], seed=seed, minval=0, maxval=_PROB_SCALE, dtype=tf.int32)
    return draw < threshold


def _as_waveform(waveform) -> tf.Tensor:
    waveform = tf.convert_to_tensor(waveform, tf.float32)
    if waveform.shape.rank is not None and waveform.shape.rank != 1:
        raise ValueError(
            f"Waveform augmentation expects one utterance shaped [samples], got {waveform.shape}."
        )
    return waveform


def _clip(waveform: tf.Tensor) -> tf.Tensor:
    return tf.clip_by_value(waveform, -1.0, 1.0)


# ----------------------------------------------------------------------- speed


def _speed_fraction(factor: float) -> fractions.Fraction:
    if not factor > 0:
        raise ValueError(f"Speed factors must be positive, got {factor}.")
    return fractions.Fraction(factor).limit_denominator(_MAX_DENOMINATOR)


def _resample_by_fraction(waveform: tf.Tensor, p: tf.Tensor, q: tf.Tensor) -> tf.Tensor:
    """Plays `waveform` p/q times faster: `round(n q / p)` samples, band-limited.

    The waveform, padded with at least `_RESAMPLE_MIN_PAD` zeros to `N = j 64 p`
    samples (j 5-smooth), is transformed; the spectrum is cut (p > q) or
    zero-extended (p < q) to that of `M = j 64 q` samples, so every frequency
    is scaled by p/q and what would pass the new Nyquist frequency is removed
    (an ideal low-pass: no aliasing); the inverse transform is scaled by M/N
    to keep the amplitude. The bin at the shorter length's Nyquist frequency
    is dropped, as it has no unambiguous counterpart.
    """
    num_samples = tf.shape(waveform)[0]
    block_in, block_out = _RESAMPLE_BLOCK * p, _RESAMPLE_BLOCK * q
    blocks = _next_fast_length((num_samples + _RESAMPLE_MIN_PAD + block_in - 1) // block_in)
    length_in, length_out = blocks * block_in, blocks * block_out
    padded = tf.pad(waveform, [[0, length_in - num_samples]])
    spectrum = tf.signal.rfft(padded)
    kept = tf.minimum(length_in, length_out) // 2
    # irfft zero-pads the spectrum up to length_out // 2 + 1 bins.
    resampled = tf.signal.irfft(spectrum[:kept], fft_length=length_out[tf.newaxis])
    resampled *= tf.cast(length_out, tf.float32) / tf.cast(length_in, tf.float32)
    num_out = 2 * tf.cast(num_samples, tf.int64) * tf.cast(q, tf.int64) + tf.cast(p, tf.int64)
    num_out = tf.cast(num_out // (2 * tf.cast(p, tf.int64)), tf.int32)
    return _clip(resampled[:num_out])


def speed_perturb(waveform, factors: Sequence[float], seed=None) -> tf.Tensor:
    """Speed perturbation (Kaldi, ESPnet): resample to play one random factor faster.

    Draws one of `factors` uniformly and resamples the waveform so that it
    plays `factor` times faster at the same sample rate, as sox's `speed`
    effect does: `round(len / factor)` samples, tempo and pitch both scaled by
    `factor`. Resampling is band-limited (FFT-based: the spectrum is cut or
    zero-extended, see `_resample_by_fraction`), so speeding up does not alias
    content above the new Nyquist frequency back into the band. Each factor
    is used as the nearest fraction with a denominator <= 64 (exact for 0.9
    and 1.1). A drawn factor of 1.0 returns the input unchanged, bit for bit;
    other outputs are clipped to [-1, 1].

    Args:
      waveform: float32 `[samples]`, one utterance.
      factors: Python floats > 0, e.g. `[0.9, 1.0, 1.1]`.
      seed: an int `[2]` seed (tensor or list) or a Python int; None draws a
        fresh one (not repeatable).

    Returns:
      float32 `[round(samples / factor)]`.

    Example:
      >>> speed_perturb(tf.zeros([16000]), [1.1], seed=[1, 2]).shape
      TensorShape([14545])
      >>> speed_perturb(tf.zeros([16000]), [0.9], seed=[1, 2]).shape
      TensorShape([17778])
    """
    waveform = _as_waveform(waveform)
    if not factors:
        raise ValueError("speed_perturb needs at least one factor.")
    fractions_ = [_speed_fraction(float(factor)) for factor in factors]
    if all(fraction == 1 for fraction in fractions_):
        return waveform
    index = _uniform_index(_stateless_seed(seed), len(fractions_))
    p = tf.gather(tf.constant([f.numerator for f in fractions_], tf.int32), index)
    q = tf.gather(tf.constant([f.denominator for f in fractions_], tf.int32), index)
    return tf.cond(
        tf.equal(p, q),
        lambda: waveform,
        lambda: _resample_by_fraction(waveform, p, q),
    )


# ---------------------------------------------------------------------- volume


def volume_perturb(waveform, min_gain_db: float, max_gain_db: float, seed=None) -> tf.Tensor:
    """Volume perturbation: a gain drawn uniformly in dB, then clipping to [-1, 1].

    Args:
      waveform: float32 `[samples]`.
      min_gain_db: lowest gain in dB (e.g. -6.0).
      max_gain_db: highest gain in dB (e.g. 6.0), >= `min_gain_db`.
      seed: an int `[2]` seed or a Python int; None draws a fresh one.

    Returns:
      float32 `[samples]`: `clip(waveform * 10^(gain / 20), -1, 1)`.

    Example:
      >>> volume_perturb(tf.fill([4], 0.5), 6.0, 6.0, seed=1).numpy().round(3)
      array([0.998, 0.998, 0.998, 0.998], dtype=float32)
    """
    waveform = _as_waveform(waveform)
    if min_gain_db > max_gain_db:
        raise ValueError(f"min_gain_db {min_gain_db} is above max_gain_db {max_gain_db}.")
    gain_db = _uniform(_stateless_seed(seed), float(min_gain_db), float(max_gain_db))
    return _clip(waveform * tf.pow(10.0, gain_db / 20.0))


# ----------------------------------------------------------------------- noise


def _active_power(waveform: tf.Tensor, block: int, relative_db: float = -40.0) -> tf.Tensor:
    """Mean square of the non-silent part of `waveform` (0 if it is all silence).

    The waveform is cut into blocks of `block` samples (10 ms); a block counts
    when its mean square is within `relative_db` of the loudest block's and
    above -100 dBFS, so exact digital silence and pauses do not lower the level
    that an SNR refers to.
    """
    num_samples = tf.shape(waveform)[0]
    num_blocks = (num_samples + block - 1) // block
    padded = tf.pad(waveform, [[0, num_blocks * block - num_samples]])
    sums = tf.reduce_sum(tf.square(tf.reshape(padded, [num_blocks, block])), axis=1)
    counts = tf.cast(tf.minimum(block, num_samples - tf.range(num_blocks) * block), tf.float32)
    means = sums / counts
    loudest = tf.reduce_max(tf.concat([means, [0.0]], axis=0))
    active = (means >= loudest * 10.0 ** (relative_db / 10.0)) & (means > 1e-10)
    return tf.math.divide_no_nan(
        tf.reduce_sum(tf.where(active, sums, 0.0)), tf.reduce_sum(tf.where(active, counts, 0.0))
    )


def colored_noise(
    num_samples,
    beta,
    seed=None,
    sample_rate: int = SAMPLE_RATE,
    min_hertz: float = 50.0,
) -> tf.Tensor:
    """Noise whose power spectrum falls as 1 / f^beta, at unit RMS.

    Random-phase noise: every frequency bin gets the magnitude
    `max(f, min_hertz)^(-beta/2)` (flat below `min_hertz`, so brown noise is
    not all sub-audio rumble; no DC) and a uniformly random phase, and one
    inverse real FFT makes the samples (Gaussian-like, as sums of many
    sinusoids). That costs a third of shaping drawn Gaussian noise, whose
    draw and forward FFT are the expensive part. beta 0 is white, 1 pink,
    2 brown.

    Args:
      num_samples: int scalar (Python or tensor) >= 0.
      beta: the spectral slope exponent (Python float or float32 scalar).
      seed: an int `[2]` seed or a Python int; None draws a fresh one.
      sample_rate: sample rate in Hz (gives `f` its unit).
      min_hertz: below this frequency the spectrum is flat.

    Returns:
      float32 `[num_samples]` with mean square 1 (for num_samples >= 2).

    Example:
      >>> noise = colored_noise(16000, beta=1.0, seed=[3, 4])
      >>> round(float(tf.math.reduce_std(noise)), 2)
      1.0
    """
    num_samples = tf.cast(num_samples, tf.int32)
    length = _next_fast_length(tf.maximum(num_samples, 2))
    bins = tf.range(length // 2 + 1)
    hertz = tf.cast(bins, tf.float32) * (sample_rate / tf.cast(length, tf.float32))
    exponent = -0.5 * tf.cast(beta, tf.float32)
    magnitudes = tf.pow(tf.maximum(hertz, min_hertz) / min_hertz, exponent)
    magnitudes *= tf.cast(bins > 0, tf.float32)  # no DC
    phases = tf.random.stateless_uniform(
        tf.shape(bins), seed=_stateless_seed(seed), minval=0.0, maxval=2 * np.pi
    )
    spectrum = tf.complex(magnitudes * tf.cos(phases), magnitudes * tf.sin(phases))
    noise = tf.signal.irfft(spectrum, fft_length=length[tf.newaxis])
    noise = noise[:num_samples]
    power = tf.reduce_mean(tf.square(noise))
    return noise * tf.math.rsqrt(tf.maximum(power, 1e-20))


def add_noise(
    waveform,
    noise_bank=None,
    min_snr_db: float = 5.0,
    max_snr_db: float = 20.0,
    seed=None,
    sample_rate: int = SAMPLE_RATE,
) -> tf.Tensor:
    """Adds noise at a random SNR relative to the utterance's non-silent level.

    The SNR is drawn uniformly in `[min_snr_db, max_snr_db]`. The signal level
    is the mean square over the utterance's non-silent 10 ms blocks (within
    40 dB of the loudest; exact zeros never count), the noise level the mean
    square of the noise actually added, so exact digital silence inside the
    utterance gets the same noise as the rest. An utterance with no sound
    gets no noise.

    The noise is a random clip of `noise_bank` read from a random offset
    (wrapping around, so the clip is tiled when shorter than the utterance)
    or, with no bank, generated white, pink or brown noise (`colored_noise`,
    one of the three at random).

    Args:
      waveform: float32 `[samples]`.
      noise_bank: None, or float32 `[num_clips, clip_samples]` (from
        `load_noise_bank`), a NumPy array or tensor.
      min_snr_db: lowest SNR in dB.
      max_snr_db: highest SNR in dB.
      seed: an int `[2]` seed or a Python int; None draws a fresh one.
      sample_rate: sample rate in Hz (10 ms blocks; the colored noise).

    Returns:
      float32 `[samples]`, clipped to [-1, 1].

    Example:
      >>> speech = tf.sin(tf.range(16000, dtype=tf.float32) * 0.3) * 0.1
      >>> noisy = add_noise(speech, None, 10.0, 10.0, seed=[5, 6])
      >>> added = noisy - speech
      >>> round(float(10 * np.log10(np.mean(speech**2) / np.mean(added**2))), 1)
      10.0
    """
    waveform = _as_waveform(waveform)
    if min_snr_db > max_snr_db:
        raise ValueError(f"min_snr_db {min_snr_db} is above max_snr_db {max_snr_db}.")
    num_samples = tf.shape(waveform)[0]
    snr_seed, choice_seed, offset_seed, noise_seed = _split_seed(seed, 4)
    snr_db = _uniform(snr_seed, float(min_snr_db), float(max_snr_db))
    if noise_bank is None:
        beta = tf.gather(tf.constant([0.0, 1.0, 2.0]), _uniform_index(choice_seed, 3))
        noise = colored_noise(num_samples, beta, noise_seed, sample_rate)
    else:
        bank = tf.convert_to_tensor(noise_bank, tf.float32)
        if bank.shape.rank != 2 or bank.shape[0] == 0 or bank.shape[1] == 0:
            raise ValueError(f"noise_bank must be [num_clips, clip_samples], got {bank.shape}.")
        clip = tf.gather(bank, _uniform_index(choice_seed, tf.shape(bank)[0]))
        clip_samples = tf.shape(bank)[1]
        offset = _uniform_index(offset_seed, clip_samples)
        noise = tf.gather(clip, (offset + tf.range(num_samples)) % clip_samples)
    signal_power = _active_power(waveform, max(sample_rate // 100, 1))
    noise_power = tf.math.divide_no_nan(
        tf.reduce_sum(tf.square(noise)), tf.cast(num_samples, tf.float32)
    )
    scale = tf.sqrt(tf.math.divide_no_nan(signal_power, noise_power * tf.pow(10.0, snr_db / 10.0)))
    return _clip(waveform + scale * noise)


# ---------------------------------------------------------------------- reverb


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
    rt60_seed, drr_seed, tail_seed = _split_seed(seed, 3)
    length = max(int(np.ceil(rt60_range[1] * sample_rate)), 2)
    rt60 = _uniform(rt60_seed, float(rt60_range[0]), float(rt60_range[1]))
    drr_db = _uniform(drr_seed, float(drr_db_range[0]), float(drr_db_range[1]))
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
    waveform = _as_waveform(waveform)
    choice_seed, rir_seed = _split_seed(seed, 2)
    if rir_bank is None:
        rir = synthetic_rir(rir_seed, sample_rate, rt60_range, drr_db_range)
    else:
        bank = tf.convert_to_tensor(rir_bank, tf.float32)
        if bank.shape.rank != 2 or bank.shape[0] == 0 or bank.shape[1] == 0:
            raise ValueError(f"rir_bank must be [num_rirs, rir_samples], got {bank.shape}.")
        rir = tf.gather(bank, _uniform_index(choice_seed, tf.shape(bank)[0]))
    num_samples = tf.shape(waveform)[0]
    length = _next_fast_length(num_samples + tf.shape(rir)[0] - 1)[tf.newaxis]
    spectrum = tf.signal.rfft(waveform, fft_length=length) * tf.signal.rfft(rir, fft_length=length)
    reverberant = tf.signal.irfft(spectrum, fft_length=length)[:num_samples]
    gain = tf.sqrt(
        tf.math.divide_no_nan(
            tf.reduce_sum(tf.square(waveform)), tf.reduce_sum(tf.square(reverberant))
        )
    )
    return _clip(reverberant * gain)


# --------------------------------------------------------------- file banks


def _audio_files(directory: str) -> list[str]:
    """WAV and FLAC files under `directory` (recursively), in sorted order."""
    if not os.path.isdir(directory):
        raise ValueError(f"Audio directory {directory!r} does not exist or is not a directory.")
    found = []
    for root, dirs, files in os.walk(directory):
        dirs.sort()
        found += [
            os.path.join(root, name)
            for name in sorted(files)
            if name.lower().endswith(_AUDIO_EXTENSIONS)
        ]
    if not found:
        raise ValueError(f"No .wav or .flac files under {directory!r}.")
    return found


def load_noise_bank(
    directory: str,
    sample_rate: int = SAMPLE_RATE,
    clip_seconds: float = 10.0,
    max_seconds: float = 1800.0,
) -> np.ndarray:
    """Reads every WAV/FLAC file under `directory` into equal-length noise clips.

    Each file (read with `audio_io.read_audio`: mono, resampled to
    `sample_rate`) is cut into clips of `clip_seconds`; a file shorter than
    one clip is tiled to the clip's length, and the partial clip at a longer
    file's end is dropped. Clips quieter than -80 dBFS are dropped. When the
    clips add up to more than `max_seconds`, an evenly spaced subset is kept,
    so the bank stays small enough to live in the graph as a constant
    (1800 s of 16 kHz audio is 115 MB).

    Args:
      directory: a directory searched recursively for .wav and .flac files.
      sample_rate: sample rate of the bank in Hz.
      clip_seconds: length of each clip in seconds.
      max_seconds: the most audio to keep, in seconds.

    Returns:
      float32 `[num_clips, round(clip_seconds * sample_rate)]`.

    Raises:
      ValueError: no audio files, or no clip that is not silent.
      audio_io.AudioError: a file cannot be read.

    Example:
      >>> bank = load_noise_bank("/data/musan/noise")  # doctest: +SKIP
      >>> bank.shape  # doctest: +SKIP
      (180, 160000)
    """
    clip_samples = max(int(round(clip_seconds * sample_rate)), 1)
    clips = []
    for path in _audio_files(directory):
        audio = read_audio(path, sample_rate)
        if audio.size < clip_samples:
            pieces = [np.resize(audio, clip_samples)]  # repeats the file
        else:
            count = audio.size // clip_samples
            pieces = list(audio[: count * clip_samples].reshape(count, clip_samples))
        clips += [piece for piece in pieces if np.mean(np.square(piece, dtype=np.float64)) > 1e-8]
    if not clips:
        raise ValueError(f"Every noise file under {directory!r} is silent.")
    max_clips = max(int(max_seconds * sample_rate) // clip_samples, 1)
    if len(clips) > max_clips:
        keep = np.unique(np.linspace(0, len(clips) - 1, max_clips).round().astype(int))
        clips = [clips[index] for index in keep]
    return np.stack(clips).astype(np.float32)


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
    for path in _audio_files(directory):
        response = read_audio(path, sample_rate).astype(np.float64)
        energy = np.sum(np.square(response))
        if energy == 0:
            raise ValueError(f"Room impulse response {path!r} is all zeros.")
        response = response[np.argmax(np.abs(response)) :][:max_samples]
        responses.append(response / np.sqrt(np.sum(np.square(response))))
    length = max(response.size for response in responses)
    return np.stack([np.pad(r, [0, length - r.size]) for r in responses]).astype(np.float32)


@functools.lru_cache(maxsize=4)
def _cached_noise_bank(directory: str, sample_rate: int) -> np.ndarray:
    return load_noise_bank(directory, sample_rate)


@functools.lru_cache(maxsize=4)
def _cached_rir_bank(directory: str, sample_rate: int) -> np.ndarray:
    return load_rir_bank(directory, sample_rate)


# ------------------------------------------------------------------ pipeline


def _float_pair(name: str, value) -> tuple[float, float]:
    values = tuple(float(v) for v in value)
    if len(values) != 2 or values[0] > values[1]:
        raise ValueError(f"{name} must be [min, max] with min <= max, got {list(value)}.")
    return values


def _probability(name: str, value) -> float:
    value = float(value)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be a probability in [0, 1], got {value}.")
    return value


@dataclasses.dataclass(frozen=True)
class AugmentConfig:
    """Which waveform augmentations `augment_waveform` applies, and how.

    Fields mirror `AUGMENT_HPARAMS` without the `aug_` prefix; the defaults
    turn everything off. Lists are stored as tuples, so a config is hashable.

    Example:
      >>> config = AugmentConfig(speed_factors=(0.9, 1.0, 1.1), noise_prob=0.5)
      >>> config.enabled, config.reverb_enabled
      (True, False)
    """

    speed_factors: tuple[float, ...] = (1.0,)
    speed_prob: float = 1.0
    volume_db: tuple[float, float] = (0.0, 0.0)
    volume_prob: float = 1.0
    noise_prob: float = 0.0
    noise_snr_db: tuple[float, float] = (5.0, 20.0)
    noise_dir: str = ""
    reverb_prob: float = 0.0
    rir_dir: str = ""
    sample_rate: int = SAMPLE_RATE

    def __post_init__(self):
        set_field = functools.partial(object.__setattr__, self)
        # An empty list (off) may come back from JSON typed as strings.
        factors = tuple(float(f) for f in self.speed_factors) or (1.0,)
        for factor in factors:
            _speed_fraction(factor)
        set_field("speed_factors", factors)
        set_field("volume_db", _float_pair("volume_db", self.volume_db))
        set_field("noise_snr_db", _float_pair("noise_snr_db", self.noise_snr_db))
        for name in ("speed_prob", "volume_prob", "noise_prob", "reverb_prob"):
            set_field(name, _probability(name, getattr(self, name)))
        set_field("sample_rate", int(self.sample_rate))

    @property
    def speed_enabled(self) -> bool:
        return self.speed_prob > 0 and any(f != 1.0 for f in self.speed_factors)

    @property
    def volume_enabled(self) -> bool:
        return self.volume_prob > 0 and self.volume_db != (0.0, 0.0)

    @property
    def noise_enabled(self) -> bool:
        return self.noise_prob > 0

    @property
    def reverb_enabled(self) -> bool:
        return self.reverb_prob > 0

    @property
    def enabled(self) -> bool:
        """Whether any augmentation is on."""
        return any(
            (
                self.speed_enabled,
                self.volume_enabled,
                self.noise_enabled,
                self.reverb_enabled,
            )
        )

    @classmethod
    def from_hparams(cls, hparams) -> AugmentConfig:
        """The config that `hparams` asks for; missing `aug_*` hparams take
        `AUGMENT_HPARAMS`' defaults (off), `sample_rate` is `audio_sample_rate`.

        Example:
          >>> from t2t_lite.hparam import HParams
          >>> hparams = HParams(**AUGMENT_HPARAMS).parse("aug_volume_db=[-6,6]")
          >>> AugmentConfig.from_hparams(hparams).volume_db
          (-6.0, 6.0)
        """

        def get(name):
            return hparams.get(name, AUGMENT_HPARAMS[name])

        return cls(
            speed_factors=tuple(get("aug_speed_factors")),
            speed_prob=get("aug_speed_prob"),
            volume_db=tuple(get("aug_volume_db")),
            volume_prob=get("aug_volume_prob"),
            noise_prob=get("aug_noise_prob"),
            noise_snr_db=tuple(get("aug_noise_snr_db")),
            noise_dir=get("aug_noise_dir"),
            reverb_prob=get("aug_reverb_prob"),
            rir_dir=get("aug_rir_dir"),
            sample_rate=hparams.get("audio_sample_rate", SAMPLE_RATE),
        )


def _maybe(apply_seed, probability: float, augment, waveform: tf.Tensor) -> tf.Tensor:
    """`augment()` with `probability`, else `waveform` (no coin when it is 1)."""
    if probability >= 1.0:
        return augment()
    return tf.cond(_coin(apply_seed, probability), augment, lambda: waveform)


def augment_waveform(waveform, config: AugmentConfig, seed=None) -> tf.Tensor:
    """Applies the augmentations `config` enables: speed, reverb, noise, volume.

    In that order (the room reverberates the speaker, noise is added in the
    room, the recording level changes last), each with its own probability
    and its own sub-seed. The seed is first folded with a fixed tag, so the
    pipeline's per-example seed can be passed as it is, without correlating
    with the dither or SpecAugment draws it also keys. Noise and impulse
    response directories are read once per process (cached) when the
    function is traced. Use it in training only.

    Args:
      waveform: float32 `[samples]`, one utterance in [-1, 1].
      config: an `AugmentConfig` (e.g. `AugmentConfig.from_hparams(hparams)`).
      seed: an int `[2]` seed or a Python int; None draws a fresh one.

    Returns:
      float32 `[samples']` in [-1, 1] (`samples'` differs after speed
      perturbation); the input itself when `config` enables nothing.

    Example:
      >>> config = AugmentConfig(speed_factors=(1.1,), volume_db=(-3.0, 3.0))
      >>> augment_waveform(tf.zeros([16000]), config, seed=[1, 2]).shape
      TensorShape([14545])
    """
    waveform = _as_waveform(waveform)
    if not config.enabled:
        return waveform
    tagged = tf.random.fold_in(_stateless_seed(seed), _AUGMENT_TAG)
    seeds = _split_seed(tagged, 8)
    rate = config.sample_rate
    if config.speed_enabled:
        waveform = _maybe(
            seeds[0],
            config.speed_prob,
            functools.partial(speed_perturb, waveform, config.speed_factors, seeds[1]),
            waveform,
        )
    if config.reverb_enabled:
        rir_bank = _cached_rir_bank(config.rir_dir, rate) if config.rir_dir else None
        waveform = _maybe(
            seeds[2],
            config.reverb_prob,
            functools.partial(reverberate, waveform, rir_bank, seeds[3], rate),
            waveform,
        )
    if config.noise_enabled:
        noise_bank = _cached_noise_bank(config.noise_dir, rate) if config.noise_dir else None
        low, high = config.noise_snr_db
        waveform = _maybe(
            seeds[4],
            config.noise_prob,
            functools.partial(add_noise, waveform, noise_bank, low, high, seeds[5], rate),
            waveform,
        )
    if config.volume_enabled:
        low, high = config.volume_db
        waveform = _maybe(
            seeds[6],
            config.volume_prob,
            functools.partial(volume_perturb, waveform, low, high, seeds[7]),
            waveform,
        )
    return waveform
