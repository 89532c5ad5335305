"""The batches every training and decoding contender sees (NumPy, seeded).

Ids are drawn from `[2, vocab)`: no padding (0) and no EOS (1), so every
contender does the same work on every position. Speech inputs stand for
normalized log-mel features (zero mean, unit variance) of full-length
utterances.
"""

from __future__ import annotations

import numpy as np

from .sizes import Sizes

SEED = 1234


def _ids(rng: np.random.Generator, shape: tuple[int, ...], vocab: int) -> np.ndarray:
    return rng.integers(2, vocab, size=shape, dtype=np.int32)


def text_batch(sizes: Sizes) -> dict[str, np.ndarray]:
    """`inputs [batch, source_length]` and `targets [batch, target_length]` ids."""
    rng = np.random.default_rng(SEED)
    return {
        "inputs": _ids(rng, (sizes.batch, sizes.source_length), sizes.vocab),
        "targets": _ids(rng, (sizes.batch, sizes.target_length), sizes.vocab),
    }


def speech_batch(sizes: Sizes) -> dict[str, np.ndarray]:
    """`inputs [batch, frames, mel_bins, channels]`, `inputs_length`, `targets`."""
    rng = np.random.default_rng(SEED + 1)
    shape = (sizes.batch, sizes.speech_frames, sizes.mel_bins, sizes.speech_channels)
    return {
        "inputs": rng.standard_normal(shape, dtype=np.float32),
        "inputs_length": np.full([sizes.batch], sizes.speech_frames, np.int32),
        "targets": _ids(rng, (sizes.batch, sizes.speech_target_length), sizes.vocab),
    }


def decode_inputs(sizes: Sizes) -> np.ndarray:
    """Source ids `[decode_batch, source_length]` for the decoding comparison."""
    rng = np.random.default_rng(SEED + 2)
    return _ids(rng, (sizes.decode_batch, sizes.source_length), sizes.vocab)


def shift_right(targets: np.ndarray) -> np.ndarray:
    """Decoder inputs: targets shifted one position right, 0 (the start) first."""
    return np.pad(targets, [[0, 0], [1, 0]])[:, :-1]


def sinusoids(length: int, depth: int, start: int = 0) -> np.ndarray:
    """T2T's timing signal `[length, depth]`: sin half then cos half, log-spaced
    timescales from 1 to 1e4 (what the Keras and PyTorch contenders add)."""
    half = depth // 2
    increment = np.log(1.0e4) / max(half - 1, 1)
    inverse_timescales = np.exp(np.arange(half) * -increment)
    scaled = np.arange(start, start + length)[:, None] * inverse_timescales[None, :]
    return np.concatenate([np.sin(scaled), np.cos(scaled)], axis=1).astype(np.float32)
