"""Reading, resampling and writing audio files (FLAC and WAV) with NumPy.

Everything downstream of datagen expects one convention: float32 mono samples
in [-1, 1] at 16 kHz, stored as int16 PCM (docs/design.md, "Data flow"). This
module is the only place that talks to audio files, so that convention is
enforced here and bad files turn into one clear `AudioError`.

Integer PCM is scaled by 1/32767 (not 1/32768) in both directions, as
Tensor2Tensor's `AudioEncoder` does, so a 16-bit file survives
`to_int16_pcm(read_audio(path))` bit for bit (only -32768 becomes -32767).
"""

from __future__ import annotations

import functools
import io
import math
import os
import uuid

import numpy as np
import scipy.signal
import soundfile

SAMPLE_RATE = 16000
# Audio file extensions read, in order of preference when one utterance has both.
AUDIO_EXTENSIONS = (".flac", ".wav")
_INT16_SCALE = float(np.iinfo(np.int16).max)  # 32767


class AudioError(ValueError):
    """An audio file is missing, empty, corrupt or holds unusable samples.

    The message is one sentence naming the file and the problem, so callers
    (datagen) can log it, count the example as skipped and move on.
    """


def to_int16_pcm(waveform: np.ndarray) -> np.ndarray:
    """Converts float samples to int16 PCM: clip to [-1, 1], scale, round.

    Args:
      waveform: float array of samples nominally in [-1, 1], any shape.

    Returns:
      An int16 array of the same shape.

    Example:
      >>> to_int16_pcm(np.array([0.0, 0.5, 1.5, -1.0], np.float32))
      array([     0,  16384,  32767, -32767], dtype=int16)
    """
    clipped = np.clip(np.asarray(waveform, dtype=np.float64), -1.0, 1.0)
    return np.round(clipped * _INT16_SCALE).astype(np.int16)


def from_int16_pcm(pcm: np.ndarray) -> np.ndarray:
    """Converts int16 PCM to float32 samples in [-1, 1] (inverse of `to_int16_pcm`).

    Args:
      pcm: integer array of int16 sample values, any shape.

    Returns:
      A float32 array of the same shape; -32768 is clipped to -1.0.

    Example:
      >>> from_int16_pcm(np.array([0, 32767, -32768], np.int16))
      array([ 0.,  1., -1.], dtype=float32)
    """
    samples = np.asarray(pcm, dtype=np.float32) / np.float32(_INT16_SCALE)
    return np.clip(samples, -1.0, 1.0)


def resample(waveform: np.ndarray, from_rate: int, to_rate: int) -> np.ndarray:
    """Resamples a mono waveform with a polyphase anti-aliasing filter.

    The output has `ceil(len(waveform) * to_rate / from_rate)` samples.

    Args:
      waveform: 1-D float array.
      from_rate: its sample rate in Hz.
      to_rate: the wanted sample rate in Hz.

    Returns:
      A float32 1-D array at `to_rate` (the input itself, as float32, when the
      rates are equal).

    Example:
      >>> resample(np.zeros(44100, np.float32), 44100, 16000).shape
      (16000,)
    """
    from_rate, to_rate = int(from_rate), int(to_rate)
    if from_rate <= 0 or to_rate <= 0:
        raise ValueError(
            f"Sample rates must be positive, got from_rate={from_rate} and to_rate={to_rate}."
        )
    waveform = np.asarray(waveform, dtype=np.float32)
    if from_rate == to_rate or waveform.size == 0:
        return waveform
    # The smallest integer up/down pair keeps the polyphase filter short
    # (44.1 kHz -> 16 kHz is 160/441, not 16000/44100).
    divisor = math.gcd(from_rate, to_rate)
    up, down = to_rate // divisor, from_rate // divisor
    resampled = scipy.signal.resample_poly(
        waveform.astype(np.float64), up, down, window=_anti_alias_filter(up, down)
    )
    return resampled.astype(np.float32)


@functools.lru_cache(maxsize=8)
def _anti_alias_filter(up: int, down: int) -> np.ndarray:
    """The FIR filter `scipy.signal.resample_poly` would design for `up/down`
    (its default Kaiser window, beta 5), designed once per rate pair rather
    than once per call: datagen resamples thousands of utterances at one rate."""
    max_rate = max(up, down)
    taps = scipy.signal.firwin(2 * 10 * max_rate + 1, 1.0 / max_rate, window=("kaiser", 5.0))
    taps.setflags(write=False)  # shared between calls; resample_poly copies it
    return taps


class StreamResampler:
    """`resample` for a stream that arrives in pieces.

    The pieces' outputs, joined, are the samples `resample` gives the whole
    stream.

    Each call returns the outputs its input completes: `resample_poly`'s
    filter reaches `10 * max(up, down)` upsampled samples either side, so the
    last few outputs wait for the next piece (under 1 ms of audio), and
    `final=True` gives them, as the stream's end. Only the inputs later
    outputs still read are kept.

    Example:
      >>> stream = StreamResampler(48000, 16000)
      >>> pieces = [stream(np.ones(4800)), stream(np.ones(4800), final=True)]
      >>> sum(len(p) for p in pieces)
      3200
    """

    def __init__(self, from_rate: int, to_rate: int):
        divisor = math.gcd(int(from_rate), int(to_rate))
        self.up, self.down = int(to_rate) // divisor, int(from_rate) // divisor
        self._reach = 10 * max(self.up, self.down)  # resample_poly's half filter length
        self._kept = np.zeros(0, np.float64)
        self._kept_from = 0  # the stream index of _kept[0], a multiple of `down`
        self._emitted = 0  # outputs returned so far

    def __call__(self, piece: np.ndarray, final: bool = False) -> np.ndarray:
        """The float32 outputs `piece` (1-D, at `from_rate`) completes."""
        piece = np.asarray(piece, np.float64)
        if self.up == self.down:
            return piece.astype(np.float32)
        self._kept = np.concatenate([self._kept, piece])
        end = self._kept_from + self._kept.size
        # With the kept inputs starting at a multiple of `down`, output j of
        # resampling them is output `first + j` of the whole stream.
        first = self._kept_from * self.up // self.down
        if final:
            last = -(-end * self.up // self.down)
        else:  # outputs whose filter reaches no input past `end`
            last = max((end * self.up - self._reach - 1) // self.down + 1, self._emitted)
        resampled = scipy.signal.resample_poly(self._kept, self.up, self.down)
        out = resampled[self._emitted - first : last - first]
        self._emitted = last
        needed = max((last * self.down - self._reach) // self.up, 0)
        drop = max(needed // self.down * self.down - self._kept_from, 0)
        self._kept, self._kept_from = self._kept[drop:], self._kept_from + drop
        return out.astype(np.float32)


def _describe(error: Exception) -> str:
    """libsndfile's own reason, without its "Error opening <path>:" prefix."""
    reason = getattr(error, "error_string", None) or str(error)
    reason = reason.strip().removeprefix("Error :").strip().rstrip(".")
    return reason or type(error).__name__


def audio_files_under(directory: str) -> list[str]:
    """The WAV and FLAC files under `directory`, searched recursively, in sorted order.

    Raises:
      ValueError: `directory` is not a directory, or holds no such file.
    """
    if not os.path.isdir(directory):
        raise ValueError(f"Audio directory {directory!r} does not exist or is not a directory.")
    found = []
    for root, dirs, files in os.walk(directory):
        dirs.sort()
        found += [
            os.path.join(root, name)
            for name in sorted(files)
            if name.lower().endswith(AUDIO_EXTENSIONS)
        ]
    if not found:
        raise ValueError(f"No .wav or .flac files under {directory!r}.")
    return found


def padded_batch(waveforms: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """`(batch, lengths)`: 1-D waveforms as one zero-padded float32 batch.

    The batch is at least one sample wide, so an empty waveform still makes a
    batch.

    Example:
    >>> padded_batch([np.ones(2), np.ones(1)])[0].tolist()
    [[1.0, 1.0], [1.0, 0.0]]
    """
    lengths = np.array([w.size for w in waveforms], np.int32)
    batch = np.zeros([len(waveforms), max(int(lengths.max(initial=0)), 1)], np.float32)
    for row, waveform in enumerate(waveforms):
        batch[row, : waveform.size] = waveform
    return batch, lengths


def finite_samples(samples) -> np.ndarray:
    """float32 samples with NaN and infinities read as 0 (silence, not loud).

    Where audio enters in NumPy (a file, a LiteRT request, a streamed chunk),
    as `audio_features.zero_non_finite` does in TensorFlow.

    Example:
    >>> finite_samples([0.5, float("nan"), float("-inf")])
    array([0.5, 0. , 0. ], dtype=float32)
    """
    samples = np.asarray(samples, np.float32)
    return np.where(np.isfinite(samples), samples, 0.0).astype(np.float32)


def read_audio(
    path: str | os.PathLike, sample_rate: int = SAMPLE_RATE, strict: bool = True
) -> np.ndarray:
    """Reads a FLAC or WAV file as float32 mono samples in [-1, 1].

    Multi-channel audio is averaged to mono; any sample rate is resampled to
    `sample_rate` with `resample`.

    Args:
      path: the audio file.
      sample_rate: the sample rate of the returned waveform, in Hz.
      strict: refuse a file with no samples or with NaN/infinite samples (data
        to train on). Otherwise (audio to transcribe) such a file reads as it
        is served: no samples as an empty waveform, non-finite samples as 0.

    Returns:
      A float32 1-D array.

    Raises:
      AudioError: the file is missing, empty, not decodable or (if `strict`)
        has no samples or NaN/infinite samples. The message names the file.

    Example:
      >>> waveform = read_audio("1089-134691-0000.flac")  # doctest: +SKIP
      >>> waveform.dtype, waveform.shape  # doctest: +SKIP
      (dtype('float32'), (33440,))
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise AudioError(f"Audio file {path!r} does not exist or is not a file.")
    if os.path.getsize(path) == 0:
        raise AudioError(f"Audio file {path!r} is empty (0 bytes).")
    return _decode(path, f"Audio file {path!r}", sample_rate, strict)


def read_audio_bytes(
    data: bytes, name: str, sample_rate: int = SAMPLE_RATE, strict: bool = False
) -> np.ndarray:
    """`read_audio` of a file's bytes (an upload), `name` naming it in errors.

    Example:
      >>> read_audio_bytes(b"RIFF", "the request body")  # doctest: +SKIP
      AudioError: the request body could not be decoded as FLAC or WAV (...).
    """
    if not data:
        raise AudioError(f"{name} is empty (0 bytes).")
    return _decode(io.BytesIO(data), name, sample_rate, strict)


def _decode(source, name: str, sample_rate: int, strict: bool) -> np.ndarray:
    """`read_audio`'s decoding of a path or a file object; `name` starts its errors."""
    try:
        with soundfile.SoundFile(source) as audio_file:
            file_rate = audio_file.samplerate
            # 16-bit PCM goes through from_int16_pcm so it round-trips exactly.
            if audio_file.subtype == "PCM_16":
                samples = from_int16_pcm(audio_file.read(dtype="int16", always_2d=True))
            else:
                samples = audio_file.read(dtype="float32", always_2d=True)
    except (soundfile.LibsndfileError, RuntimeError, OSError) as error:
        raise AudioError(
            f"{name} could not be decoded as FLAC or WAV ({_describe(error)})."
        ) from error
    return to_mono(samples, file_rate, sample_rate, name, strict)


def to_mono(
    samples: np.ndarray, rate: int, sample_rate: int, name: str, strict: bool = False
) -> np.ndarray:
    """`[frames, channels]` float samples at `rate` -> float32 mono at `sample_rate`.

    The output is in [-1, 1], with `read_audio`'s rules for empty and
    non-finite samples.

    Raises:
      AudioError: (if `strict`) no samples, or NaN/infinite samples.
    """
    if samples.shape[0] == 0:
        if strict:
            raise AudioError(f"{name} contains no audio samples.")
        return np.zeros(0, np.float32)
    if not np.all(np.isfinite(samples)):
        if strict:
            raise AudioError(f"{name} contains NaN or infinite samples.")
        samples = finite_samples(samples)
    mono = samples.mean(axis=1, dtype=np.float32)
    mono = resample(mono, rate, sample_rate)
    # Resampling can overshoot full scale slightly (Gibbs ringing).
    return np.clip(mono, -1.0, 1.0)


def write_flac(
    path: str | os.PathLike, waveform: np.ndarray, sample_rate: int = SAMPLE_RATE
) -> None:
    """Writes a mono waveform as a 16-bit FLAC file, atomically.

    The file is written under a temporary name in the destination directory
    and renamed into place, so a crash never leaves a half-written `path`.

    Args:
      path: the destination file; its directory must exist.
      waveform: 1-D float samples in [-1, 1] (clipped), or int16 PCM.
      sample_rate: the sample rate to record in the file, in Hz.

    Example:
      >>> write_flac("tone.flac", np.zeros(16000, np.float32))  # doctest: +SKIP
    """
    path = os.fspath(path)
    waveform = np.asarray(waveform)
    if waveform.ndim != 1:
        raise ValueError(
            f"write_flac expects a mono waveform of shape [samples], got shape "
            f"{waveform.shape} for {path!r}."
        )
    if int(sample_rate) <= 0:
        raise ValueError(f"Sample rate must be positive, got {sample_rate} for {path!r}.")
    pcm = waveform if waveform.dtype == np.int16 else to_int16_pcm(waveform)
    # A unique name next to the target (same filesystem, so os.replace is
    # atomic); open(..., "xb") rather than mkstemp so the file gets the usual
    # umask permissions instead of 0600.
    directory, name = os.path.split(os.path.abspath(path))
    temp_path = os.path.join(directory, f".{name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(temp_path, "xb") as temp_file:
            soundfile.write(temp_file, pcm, int(sample_rate), format="FLAC", subtype="PCM_16")
            temp_file.flush()
            os.fsync(temp_file.fileno())
        os.replace(temp_path, path)
    except BaseException:
        if os.path.exists(temp_path):
            os.remove(temp_path)
        raise
