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
    clean = spoken_audio.render_utterance(
        dataclasses.replace(plan, snr_db=None), synthesizer
    ).astype(np.float64)
    speech_power = np.mean(np.square(clean))
    for color in ("white", "pink"):
        noisy = spoken_audio.render_utterance(
            dataclasses.replace(plan, snr_db=12.0, noise_color=color), synthesizer
        )
        noise = noisy - clean
        assert 10 * np.log10(speech_power / np.mean(np.square(noise))) == pytest.approx(
            12.0, abs=0.5
        )
        spectrum = np.abs(np.fft.rfft(noise)) ** 2
        low, high = spectrum[: spectrum.size // 8].mean(), spectrum[-spectrum.size // 8 :].mean()
        assert (low > 10 * high) == (color == "pink")  # pink: 1/f; white: flat
