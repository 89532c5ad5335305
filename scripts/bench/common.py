"""What every contender shares: sizes, the FLOP count, the inputs; and librosa's featurizer."""

import multiprocessing
from types import SimpleNamespace

import numpy as np

# The default sizes: every comparison in 8-20 minutes on two cores (20 where bf16 is emulated).
DEFAULT = dict(
    hidden=256, filter=1024, heads=4, encoder_layers=2, decoder_layers=2, vocab=1000, dropout=0.1,
    batch=16, source_length=64, target_length=64,  # text training (batch: speech and pipeline too)
    speech_seconds=2.0, mel_bins=80, speech_channels=3, speech_target_length=32,
    front_end_filters=128, steps=5, reps=5, warmup=1,  # steps: optimizer steps per repetition
    matmul_size=1024, matmul_repeats=10,  # the machine's limit: chained N x N x N matmuls
    beam=4, alpha=0.6, decode_batch=4, decode_lengths=(32, 128, 256), decode_reps=3,
    pipeline_batches=16, pipeline_cores=(1, 2),  # batches of `batch` utterances per repetition
)
# "smallest": every code path in seconds per contender (the test runs it).
PRESETS = {"default": {}, "smallest": dict(
    hidden=32, filter=64, heads=2, encoder_layers=1, decoder_layers=1, vocab=40, batch=2,
    source_length=8, target_length=8, speech_seconds=0.25, speech_target_length=8,
    front_end_filters=8, steps=1, reps=2, matmul_size=64, matmul_repeats=2,
    decode_batch=1, decode_lengths=(4, 8), decode_reps=2, pipeline_batches=1,
),  # One GPU (`scripts/gpu_bench.py`): transformer_base on 256-token pairs, and T2T's
    # LibriSpeech model (transformer_librispeech_v2's sizes) on 15 s utterances.
    "gpu_text": dict(hidden=512, filter=2048, heads=8, encoder_layers=6, decoder_layers=6,
                     vocab=32768, batch=64, source_length=256, target_length=256),
    "gpu_speech": dict(hidden=384, filter=1536, heads=2, encoder_layers=6, decoder_layers=4,
                       vocab=256, batch=32, speech_seconds=15.0, speech_target_length=256),
}  # fmt: skip


def make_sizes(preset: str = "default", **overrides) -> SimpleNamespace:
    """A preset's sizes (with `overrides`), plus `speech_frames` at 10 ms each."""
    values = {**DEFAULT, **PRESETS[preset], **overrides}
    return SimpleNamespace(**values, speech_frames=round(values["speech_seconds"] * 100))


# FLOPs: matmuls and convolutions only; backward = 2 x forward.
def _strided(size: int) -> int:  # a VALID kernel-3, stride-2 convolution
    return (size - 3) // 2 + 1


def front_end_flops(sizes) -> tuple[int, int]:
    """(forward FLOPs of T2T's speech front end for one utterance, output frames): two 3x3
    stride-2 convs (time padded by 2), then a conv over the remaining bins."""
    frames, bins, filters, total = sizes.speech_frames, sizes.mel_bins, sizes.front_end_filters, 0
    for channels in (sizes.speech_channels, filters):
        frames, bins = (frames + 2 - 3) // 2 + 1, _strided(bins)
        total += 2 * frames * bins * (3 * 3 * channels) * filters
    return total + 2 * frames * (3 * bins * filters) * sizes.hidden, frames


def training_step_flops(sizes, speech: bool) -> int:
    """One optimizer step on one batch, `3 x forward`: attention projections, scores and sums,
    feed-forward, softmax, front end (not embeddings, norms or the update: GFLOP/s is a floor)."""
    front_end, source = front_end_flops(sizes) if speech else (0, sizes.source_length)
    target, hidden = sizes.speech_target_length if speech else sizes.target_length, sizes.hidden
    attention = lambda q, k: 2 * 2 * (q + k) * hidden * hidden + 2 * 2 * q * k * hidden
    ffn = lambda positions: 2 * 2 * positions * hidden * sizes.filter
    forward = (front_end + sizes.encoder_layers * (attention(source, source) + ffn(source))
               + sizes.decoder_layers * (attention(target, target) + attention(target, source)
                                         + ffn(target)) + 2 * target * hidden * sizes.vocab)
    return 3 * sizes.batch * forward


# Inputs: ids in [2, vocab) (no padding, no EOS), so every position is work.
def batch(sizes, kind: str) -> dict:
    """Seeded features of `kind`: "symbol" (text), "speech" (log-mel stand-ins `[batch, frames,
    bins, channels]`) or "decode" (source ids only)."""
    rng = np.random.default_rng({"symbol": 1234, "speech": 1235, "decode": 1236}[kind])
    ids = lambda length, rows=sizes.batch: rng.integers(2, sizes.vocab, (rows, length), np.int32)
    if kind == "decode":
        return {"inputs": ids(sizes.source_length, sizes.decode_batch)}
    if kind == "symbol":
        return {"inputs": ids(sizes.source_length), "targets": ids(sizes.target_length)}
    shape = (sizes.batch, sizes.speech_frames, sizes.mel_bins, sizes.speech_channels)
    return {"inputs": rng.standard_normal(shape, dtype=np.float32),
            "inputs_length": np.full([sizes.batch], sizes.speech_frames, np.int32),
            "targets": ids(sizes.speech_target_length)}  # fmt: skip


def sinusoids(length: int, depth: int) -> np.ndarray:
    """T2T's timing signal `[length, depth]` (sin half, cos half; 1 to 1e4)."""
    half = depth // 2
    inverse = np.exp(np.arange(half) * -np.log(1.0e4) / max(half - 1, 1))
    scaled = np.arange(length)[:, None] * inverse[None, :]
    return np.concatenate([np.sin(scaled), np.cos(scaled)], axis=1).astype(np.float32)


def utterance(index: int, seconds: float) -> np.ndarray:
    """Speech-like 16 kHz audio: harmonics of a gliding pitch, syllable-rate envelope, low noise
    (every mel band is exercised, no corpus needed)."""
    rng, samples = np.random.default_rng([7, index]), int(round(seconds * 16000))
    time = np.arange(samples) / 16000
    pitch = rng.uniform(90, 220) * (1 + 0.2 * np.sin(2 * np.pi * rng.uniform(0.3, 1.0) * time))
    phase = 2 * np.pi * np.cumsum(pitch) / 16000
    voice = sum(np.sin(k * phase) / k for k in range(1, 12))
    envelope = 0.5 + 0.5 * np.sin(2 * np.pi * rng.uniform(3, 6) * time) ** 2
    wave = 0.15 * envelope * voice + 0.01 * rng.standard_normal(samples)
    return np.clip(wave, -1.0, 1.0).astype(np.float32)


# librosa's featurizer (its own worker; a pool of processes on several cores).
_WAVES: list = []


def librosa_features(task: tuple) -> np.ndarray:
    """Task `(index, deltas)`: pre-emphasis + log-mel of `_WAVES[index]` with T2T's frame, FFT,
    mel range and magnitude; `deltas` adds delta-deltas and per-utterance CMVN (t2t-lite's work)."""
    import librosa

    wave, deltas = _WAVES[task[0]], task[1]
    mel = librosa.feature.melspectrogram(
        y=librosa.effects.preemphasis(wave, coef=0.97), sr=16000, n_fft=512, win_length=400,
        hop_length=160, center=False, power=1.0, n_mels=80, fmin=20.0, fmax=8000.0, htk=True)
    log_mel = np.log(np.maximum(mel, 1e-3))  # [bins, frames]
    if not deltas:
        return log_mel.T
    stacked = np.stack([log_mel, librosa.feature.delta(log_mel, width=5, order=1, mode="constant"),
                        librosa.feature.delta(log_mel, width=9, order=2, mode="constant")],
                       axis=-1).transpose(1, 0, 2)  # fmt: skip
    mean, var = stacked.mean(axis=0, keepdims=True), stacked.var(axis=0, keepdims=True)
    return (stacked - mean) / np.sqrt(var + 1e-9)


class Librosa:
    """`run(deltas=...)`: every utterance once, in this process (1 core) or by a pool of
    single-threaded processes (as a PyTorch `DataLoader` would run it)."""

    def __init__(self, sizes, cores: int):
        self.sizes, self.count = sizes, sizes.pipeline_batches * sizes.batch
        _WAVES[:] = [utterance(index, sizes.speech_seconds) for index in range(self.count)]
        librosa_features((0, True))  # imports and warms up before the pool forks
        self.pool = multiprocessing.get_context("fork").Pool(cores) if cores > 1 else None
        self.chunksize = max(1, self.count // (16 * cores))  # a slowed worker holds little up

    def run(self, deltas: bool) -> dict:
        tasks = [(index, deltas) for index in range(self.count)]
        features = ([librosa_features(task) for task in tasks] if self.pool is None
                    else self.pool.map(librosa_features, tasks, self.chunksize))  # fmt: skip
        return {"units": len(features) * self.sizes.speech_seconds}
