"""Tests for t2t_lite.data.audio_io on real LibriSpeech FLACs and WAVs made here."""

from __future__ import annotations

import os

import numpy as np
import pytest
import soundfile

from t2t_lite.data import audio_io

# Frame counts of the four real utterances (16 kHz, so seconds = frames / 16000).
LIBRISPEECH_FRAMES = {
    "test-clean/1089/134691/1089-134691-0000.flac": 33360,
    "test-other/2033/164915/2033-164915-0001.flac": 143040,
    "train-clean-100/1034/121119/1034-121119-0022.flac": 40640,
    "train-clean-100/1034/121119/1034-121119-0046.flac": 39360,
}


def _sine(frequency: float, sample_rate: int, seconds: float) -> np.ndarray:
    time = np.arange(int(sample_rate * seconds)) / sample_rate
    return (0.5 * np.sin(2 * np.pi * frequency * time)).astype(np.float32)


def _peak_frequency(waveform: np.ndarray, sample_rate: int) -> float:
    spectrum = np.abs(np.fft.rfft(waveform * np.hanning(len(waveform))))
    return float(np.argmax(spectrum) * sample_rate / len(waveform))


@pytest.mark.parametrize("relative_path", sorted(LIBRISPEECH_FRAMES))
def test_reads_real_librispeech_flac(relative_path, librispeech_mini):
    path = librispeech_mini / "LibriSpeech" / relative_path
    waveform = audio_io.read_audio(path)
    assert waveform.dtype == np.float32 and waveform.ndim == 1
    assert len(waveform) == LIBRISPEECH_FRAMES[relative_path]
    assert 0.0 < np.abs(waveform).max() <= 1.0
    # 16-bit FLAC is scaled by 1/32767 both ways, so its samples come back exactly.
    raw, rate = soundfile.read(path, dtype="int16")
    assert rate == 16000
    np.testing.assert_array_equal(audio_io.to_int16_pcm(waveform), np.maximum(raw, -32767))


@pytest.mark.parametrize("file_rate, channels", [(44100, 2), (8000, 1), (48000, 1), (22050, 2)])
def test_wav_is_resampled_to_16k_and_keeps_its_pitch(tmp_path, file_rate, channels):
    seconds = 0.5
    tone = _sine(440.0, file_rate, seconds)
    # The second channel is silent, so the mixdown halves the amplitude.
    frames = np.stack([tone] + [np.zeros_like(tone)] * (channels - 1), axis=1)
    path = tmp_path / f"tone_{file_rate}_{channels}ch.wav"
    soundfile.write(path, frames, file_rate, subtype="PCM_16")

    waveform = audio_io.read_audio(path)

    assert waveform.dtype == np.float32 and waveform.ndim == 1
    assert len(waveform) == int(np.ceil(len(tone) * 16000 / file_rate))
    assert abs(_peak_frequency(waveform, 16000) - 440.0) <= 2.0
    middle = waveform[1000:-1000]
    assert np.abs(middle).max() == pytest.approx(0.5 / channels, rel=0.02)


def test_resample_preserves_a_tone_and_length():
    tone = _sine(1000.0, 44100, 1.0)
    resampled = audio_io.resample(tone, 44100, 16000)
    assert resampled.dtype == np.float32 and resampled.shape == (16000,)
    assert abs(_peak_frequency(resampled, 16000) - 1000.0) <= 1.0
    np.testing.assert_array_equal(audio_io.resample(tone, 16000, 16000), tone)
    with pytest.raises(ValueError, match="positive"):
        audio_io.resample(tone, 0, 16000)


def test_resample_removes_content_above_the_new_nyquist():
    # 7 kHz is fine at 44.1 kHz but must not alias into 8 kHz audio as 1 kHz.
    tone = _sine(7000.0, 44100, 1.0) + _sine(10000.0, 44100, 1.0)
    resampled = audio_io.resample(tone, 44100, 16000)
    spectrum = np.abs(np.fft.rfft(resampled * np.hanning(len(resampled))))
    alias_bin, tone_bin = 6000, 7000  # 10 kHz would alias to 16 - 10 = 6 kHz.
    assert spectrum[alias_bin] < 1e-2 * spectrum[tone_bin]


@pytest.mark.parametrize(
    "name, content, problem",
    [
        ("corrupt.flac", b"fLaC" + bytes(range(256)) * 8, "could not be decoded"),
        ("noise.wav", b"RIFF-but-not-really" * 20, "could not be decoded"),
        ("empty.flac", b"", "is empty"),
    ],
)
def test_bad_files_raise_audio_error_naming_the_file(tmp_path, name, content, problem):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(audio_io.AudioError, match=problem) as raised:
        audio_io.read_audio(path)
    assert str(path) in str(raised.value)
    assert isinstance(raised.value, ValueError)


def test_truncated_real_flac_raises_audio_error(tmp_path, librispeech_flac):
    data = librispeech_flac.read_bytes()
    path = tmp_path / "truncated.flac"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(audio_io.AudioError, match="truncated.flac"):
        audio_io.read_audio(path)


def test_missing_and_sampleless_files_raise_audio_error(tmp_path):
    with pytest.raises(audio_io.AudioError, match="does not exist"):
        audio_io.read_audio(tmp_path / "missing.flac")
    path = tmp_path / "no_samples.wav"
    soundfile.write(path, np.zeros(0, np.int16), 16000)
    with pytest.raises(audio_io.AudioError, match="no audio samples"):
        audio_io.read_audio(path)
    # Audio to transcribe: no samples is an empty waveform (it decodes to "").
    assert audio_io.read_audio(path, strict=False).shape == (0,)


def test_non_finite_samples_are_refused_or_read_as_zero(tmp_path):
    path = tmp_path / "nan.wav"
    samples = np.array([0.5, np.nan, -0.25, np.inf], np.float32)
    soundfile.write(path, samples, 16000, subtype="FLOAT")
    with pytest.raises(audio_io.AudioError, match="NaN or infinite"):
        audio_io.read_audio(path)
    np.testing.assert_array_equal(audio_io.read_audio(path, strict=False), [0.5, 0.0, -0.25, 0.0])


def test_int16_round_trip():
    every_value = np.arange(-32767, 32768, dtype=np.int16)
    samples = audio_io.from_int16_pcm(every_value)
    assert samples.dtype == np.float32
    assert samples.min() == -1.0 and samples.max() == 1.0
    np.testing.assert_array_equal(audio_io.to_int16_pcm(samples), every_value)

    rng = np.random.default_rng(0)
    waveform = rng.uniform(-1, 1, 1000).astype(np.float32)
    restored = audio_io.from_int16_pcm(audio_io.to_int16_pcm(waveform))
    assert np.abs(restored - waveform).max() <= 0.5 / 32767 + 1e-7

    np.testing.assert_array_equal(
        audio_io.to_int16_pcm(np.array([2.0, -3.0, 0.5])), [32767, -32767, 16384]
    )
    assert audio_io.from_int16_pcm(np.array([-32768], np.int16))[0] == -1.0


def test_write_flac_round_trips_atomically(tmp_path):
    waveform = _sine(300.0, 16000, 0.25)
    path = tmp_path / "tone.flac"
    audio_io.write_flac(path, waveform)

    info = soundfile.info(path)
    assert (info.format, info.subtype, info.samplerate) == ("FLAC", "PCM_16", 16000)
    np.testing.assert_array_equal(
        audio_io.to_int16_pcm(audio_io.read_audio(path)),
        audio_io.to_int16_pcm(waveform),
    )
    # Overwriting replaces the file and leaves no temporary file behind.
    audio_io.write_flac(path, audio_io.to_int16_pcm(waveform[:100]))
    assert soundfile.info(path).frames == 100
    assert os.listdir(tmp_path) == ["tone.flac"]


def test_write_flac_failure_leaves_nothing_behind(tmp_path):
    path = tmp_path / "stereo.flac"
    with pytest.raises(ValueError, match="mono"):
        audio_io.write_flac(path, np.zeros((10, 2), np.float32))
    with pytest.raises(ValueError, match="positive"):
        audio_io.write_flac(path, np.zeros(10, np.float32), sample_rate=0)
    # FLAC cannot store 1 MHz audio: libsndfile fails after the temp file exists.
    with pytest.raises(RuntimeError, match="sample rate"):
        audio_io.write_flac(path, np.zeros(10, np.float32), sample_rate=1_000_000)
    assert os.listdir(tmp_path) == []
