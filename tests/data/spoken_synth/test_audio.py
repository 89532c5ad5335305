"""Tests for t2t_lite.data.spoken_synth.audio: rendering plans into noisy speech."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from t2t_lite.data.spoken_synth import audio as spoken_audio
from t2t_lite.data.spoken_synth import plan as spoken_plan
from t2t_lite.data.spoken_synth.espeak import EspeakSynthesizer


@pytest.fixture(scope="module")
def synthesizer():
    with EspeakSynthesizer() as shared:
        yield shared


def test_noise_is_mixed_at_the_planned_snr(synthesizer):
    # No padding: the SNR is defined over the speech, not the added silences.
    plan = spoken_plan.plan_corpus(spoken_plan.CorpusConfig(split_sizes={"train": 1}))["train"][0]
    plan = dataclasses.replace(plan, lead_silence_s=0.0, tail_silence_s=0.0)
    clean, _ = spoken_audio.render_utterance(dataclasses.replace(plan, snr_db=None), synthesizer)
    clean = clean.astype(np.float64)
    speech_power = np.mean(np.square(clean))
    for color in ("white", "pink"):
        noisy, _ = spoken_audio.render_utterance(
            dataclasses.replace(plan, snr_db=12.0, noise_color=color), synthesizer
        )
        noise = noisy - clean
        assert 10 * np.log10(speech_power / np.mean(np.square(noise))) == pytest.approx(
            12.0, abs=0.5
        )
        spectrum = np.abs(np.fft.rfft(noise)) ** 2
        low, high = spectrum[: spectrum.size // 8].mean(), spectrum[-spectrum.size // 8 :].mean()
        assert (low > 10 * high) == (color == "pink")  # pink: 1/f; white: flat


def test_long_components_start_after_each_pause():
    config = spoken_plan.CorpusConfig(long_pause_s=0.5)
    parts = [np.full(size, number + 1, np.int16) for number, size in enumerate([100, 30, 7])]
    recording = spoken_audio.join_with_pauses(parts, config, (0, 0, 0))
    starts = spoken_audio.component_starts([part.size for part in parts], config)
    assert starts == [0, 100 + 8000, 100 + 8000 + 30 + 8000]
    assert recording.size == starts[-1] + 7
    for start, part in zip(starts, parts, strict=True):
        np.testing.assert_array_equal(recording[start : start + part.size], part)
