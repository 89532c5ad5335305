"""Additive noise at a random SNR: generated noise or a bank of noise files.

With no noise directory, the noise is one of `GENERATED_NOISES`: white, pink
or brown noise (`colored_noise`), mains hum (`mains_hum`) or a room's
non-speech sounds (`sound_events`); otherwise clips of the user's WAV/FLAC files
(`load_noise_bank`, read once with NumPy and captured in the graph as a
constant).
"""

from __future__ import annotations

import functools

import numpy as np
import tensorflow as tf

from t2t_lite.data.audio_augment.draws import split_seed, uniform, uniform_index
from t2t_lite.data.audio_augment.sound_events import sound_events
from t2t_lite.data.audio_augment.waveform import as_waveform, clip_to_unit_range, next_fast_length
from t2t_lite.data.audio_io import SAMPLE_RATE, audio_files_under, read_audio
from t2t_lite.data.random_seeds import stateless_seed

# Spectral slopes of the generated colored noises (`colored_noise`'s beta).
COLOR_BETAS = {"white": 0.0, "pink": 1.0, "brown": 2.0}
# What `add_noise` draws from without a noise bank, and what a test condition names.
GENERATED_NOISES = (*COLOR_BETAS, "hum", "events")


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
    length = next_fast_length(tf.maximum(num_samples, 2))
    bins = tf.range(length // 2 + 1)
    hertz = tf.cast(bins, tf.float32) * (sample_rate / tf.cast(length, tf.float32))
    exponent = -0.5 * tf.cast(beta, tf.float32)
    magnitudes = tf.pow(tf.maximum(hertz, min_hertz) / min_hertz, exponent)
    magnitudes *= tf.cast(bins > 0, tf.float32)  # no DC
    phases = tf.random.stateless_uniform(
        tf.shape(bins), seed=stateless_seed(seed), minval=0.0, maxval=2 * np.pi
    )
    spectrum = tf.complex(magnitudes * tf.cos(phases), magnitudes * tf.sin(phases))
    noise = tf.signal.irfft(spectrum, fft_length=length[tf.newaxis])
    noise = noise[:num_samples]
    power = tf.reduce_mean(tf.square(noise))
    return noise * tf.math.rsqrt(tf.maximum(power, 1e-20))


def mains_hum(
    num_samples,
    seed=None,
    sample_rate: int = SAMPLE_RATE,
    harmonics: int = 8,
) -> tf.Tensor:
    """The hum of mains power picked up by a microphone's cable, at unit RMS.

    A 50 Hz or 60 Hz fundamental (drawn: Europe and Asia, or the Americas)
    and its first `harmonics - 1` multiples, the k-th at amplitude 1/k and a
    random phase each: the buzz of a ground loop or a cheap adapter.

    Args:
      num_samples: int scalar (Python or tensor) >= 0.
      seed: an int `[2]` seed or a Python int; None draws a fresh one.
      sample_rate: sample rate in Hz.
      harmonics: how many multiples of the fundamental, itself included.

    Returns:
      float32 `[num_samples]` with mean square 1 (for a few periods or more).

    Example:
      >>> hum = mains_hum(16000, seed=[1, 2])
      >>> round(float(tf.math.reduce_std(hum)), 2)
      1.0
    """
    mains_seed, phase_seed = split_seed(seed, 2)
    fundamental = tf.gather(tf.constant([50.0, 60.0]), uniform_index(mains_seed, 2))
    multiples = tf.range(1, harmonics + 1, dtype=tf.float32)
    phases = tf.random.stateless_uniform([harmonics], phase_seed, maxval=2 * np.pi)
    seconds = tf.range(tf.cast(num_samples, tf.int32), dtype=tf.float32) / sample_rate
    angles = 2 * np.pi * fundamental * seconds[:, None] * multiples + phases
    hum = tf.reduce_sum(tf.sin(angles) / multiples, axis=1)
    return hum * tf.math.rsqrt(tf.maximum(tf.reduce_mean(tf.square(hum)), 1e-20))


def generated_noise(kind: str, num_samples, seed=None, sample_rate: int = SAMPLE_RATE):
    """One of `GENERATED_NOISES` by name, at unit RMS.

    Example:
      >>> generated_noise("pink", 16000, seed=[1, 2]).shape
      TensorShape([16000])
    """
    if kind == "hum":
        return mains_hum(num_samples, seed, sample_rate)
    if kind == "events":
        return sound_events(num_samples, seed, sample_rate)
    if kind not in COLOR_BETAS:
        raise ValueError(f"generated noise must be one of {GENERATED_NOISES}, got {kind!r}.")
    return colored_noise(num_samples, COLOR_BETAS[kind], seed, sample_rate)


def scale_to_snr(waveform, noise, snr_db, sample_rate: int = SAMPLE_RATE) -> tf.Tensor:
    """`noise` scaled so that `waveform`'s active level is `snr_db` above its mean square.

    The signal level is `_active_power` (the non-silent 10 ms blocks); a
    waveform with no sound gives zero noise.
    """
    signal_power = _active_power(waveform, max(sample_rate // 100, 1))
    noise_power = tf.math.divide_no_nan(
        tf.reduce_sum(tf.square(noise)), tf.cast(tf.size(noise), tf.float32)
    )
    snr = tf.pow(10.0, tf.cast(snr_db, tf.float32) / 10.0)
    return noise * tf.sqrt(tf.math.divide_no_nan(signal_power, noise_power * snr))


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
    or, with no bank, one of `GENERATED_NOISES` at random.

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
    waveform = as_waveform(waveform)
    if min_snr_db > max_snr_db:
        raise ValueError(f"min_snr_db {min_snr_db} is above max_snr_db {max_snr_db}.")
    num_samples = tf.shape(waveform)[0]
    snr_seed, choice_seed, offset_seed, noise_seed = split_seed(seed, 4)
    snr_db = uniform(snr_seed, float(min_snr_db), float(max_snr_db))
    if noise_bank is None:
        kind = uniform_index(choice_seed, len(GENERATED_NOISES))
        noise = tf.switch_case(
            tf.cast(kind, tf.int32),
            [
                functools.partial(generated_noise, name, num_samples, noise_seed, sample_rate)
                for name in GENERATED_NOISES
            ],
        )
    else:
        bank = tf.convert_to_tensor(noise_bank, tf.float32)
        if bank.shape.rank != 2 or bank.shape[0] == 0 or bank.shape[1] == 0:
            raise ValueError(f"noise_bank must be [num_clips, clip_samples], got {bank.shape}.")
        clip = tf.gather(bank, uniform_index(choice_seed, tf.shape(bank)[0]))
        clip_samples = tf.shape(bank)[1]
        offset = uniform_index(offset_seed, clip_samples)
        noise = tf.gather(clip, (offset + tf.range(num_samples)) % clip_samples)
    return clip_to_unit_range(waveform + scale_to_snr(waveform, noise, snr_db, sample_rate))


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
    for path in audio_files_under(directory):
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


@functools.lru_cache(maxsize=4)
def cached_noise_bank(directory: str, sample_rate: int) -> np.ndarray:
    return load_noise_bank(directory, sample_rate)
