"""Synthetic speech-like audio, the same for every featurizer (NumPy, seeded).

Each utterance is a sum of a few harmonics of a gliding pitch, amplitude
modulated at a syllable rate, plus low noise: it exercises every mel band
without needing a corpus or a network.
"""

from __future__ import annotations

import numpy as np

SAMPLE_RATE = 16000


def utterance(index: int, seconds: float, seed: int = 7) -> np.ndarray:
    """Float32 mono waveform in [-1, 1] of `seconds` at 16 kHz."""
    rng = np.random.default_rng([seed, index])
    samples = int(round(seconds * SAMPLE_RATE))
    time = np.arange(samples) / SAMPLE_RATE
    pitch = rng.uniform(90, 220) * (1 + 0.2 * np.sin(2 * np.pi * rng.uniform(0.3, 1.0) * time))
    phase = 2 * np.pi * np.cumsum(pitch) / SAMPLE_RATE
    voice = sum(np.sin(k * phase) / k for k in range(1, 12))
    envelope = 0.5 + 0.5 * np.sin(2 * np.pi * rng.uniform(3, 6) * time) ** 2
    wave = 0.15 * envelope * voice + 0.01 * rng.standard_normal(samples)
    return np.clip(wave, -1.0, 1.0).astype(np.float32)


def utterances(count: int, seconds: float) -> list[np.ndarray]:
    """`count` utterances of `seconds` each."""
    return [utterance(index, seconds) for index in range(count)]
