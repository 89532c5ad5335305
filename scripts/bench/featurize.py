"""Input-pipeline contenders: t2t-lite's training pipeline vs librosa's log-mel.

Both featurize the same synthetic utterances (`audio.py`), limited to the
same number of cores (the worker pins its process before importing them).

- t2t-lite: the real training input pipeline, `pipeline.make_dataset` in
  TRAIN mode over TFRecord shards written by the problem's own datagen:
  parse int16 PCM, dithered log-mel + delta-deltas + per-utterance
  normalization, SpecAugment (two frequency and two time masks, the paper's
  LD policy), length filter, bucketing and batching. Its `tf.data` threads
  and TF's op threads are capped at the core count.
- librosa: `preemphasis` + `feature.melspectrogram` (T2T's frame, FFT,
  mel range and magnitude) + log, per utterance; optionally also
  `feature.delta` (orders 1 and 2) and per-utterance normalization, the same
  work as t2t-lite's. On two cores, a `multiprocessing` pool of two
  single-threaded workers, the way a PyTorch `DataLoader` would run it.
"""

from __future__ import annotations

import atexit
import multiprocessing
import shutil
import tempfile
import time

import numpy as np

from . import audio
from .sizes import Sizes

# -- t2t-lite --------------------------------------------------------------------------


def _bench_problem_class():
    """A speech problem whose raw data are the benchmark's synthetic utterances."""
    from t2t_lite.data.problem import TRAIN
    from t2t_lite.data.speech_problem import SpeechRecognitionProblem, Utterance

    class BenchSpeech(SpeechRecognitionProblem):
        num_shards = {TRAIN: 2}

        def __init__(self, count: int, seconds: float):
            self.count, self.seconds = count, seconds

        def utterances(self, data_dir, tmp_dir, split, report):
            for index in range(self.count):
                yield Utterance(f"u{index}", audio.utterance(index, self.seconds), "benchmark")

    return BenchSpeech


class T2TFeaturize:
    """`pipeline_batches` batches from a fresh training-pipeline iterator per repetition.

    Args:
        sizes: shared sizes (`batch` utterances of `speech_seconds` per batch).
        cores: CPU cores the pipeline may use.
    """

    def __init__(self, sizes: Sizes, cores: int):
        import tensorflow as tf

        from t2t_lite import registry
        from t2t_lite.data import pipeline
        from t2t_lite.data.problem import TRAIN

        tf.config.threading.set_intra_op_parallelism_threads(cores)
        tf.config.threading.set_inter_op_parallelism_threads(cores)
        self.sizes = sizes
        count = sizes.pipeline_batches * sizes.batch
        problem = _bench_problem_class()(count, sizes.speech_seconds)
        data_dir = tempfile.mkdtemp(prefix="t2t_lite_bench_")
        atexit.register(shutil.rmtree, data_dir, ignore_errors=True)
        problem.generate_data(data_dir, f"{data_dir}/tmp")
        hparams = problem.add_hparams(registry.hparams("transformer_librispeech_v2"))
        hparams.override_from_dict(
            {
                "batch_size": sizes.batch,
                "use_fixed_batch_size": True,
                "specaugment_freq_masks": 2,
                "specaugment_time_masks": 2,
            }
        )
        options = tf.data.Options()
        options.threading.private_threadpool_size = cores
        options.threading.max_intra_op_parallelism = cores
        self.dataset = pipeline.make_dataset(problem, TRAIN, data_dir, hparams, seed=1)
        self.dataset = self.dataset.with_options(options)
        for _ in range(sizes.warmup):
            self.run()

    def run(self) -> dict:
        # A fresh iterator, so that no work is done between repetitions. Its
        # construction (instantiating the pipeline's functions, ~0.1 s, once
        # per training run) is not timed; reading and featurizing from the
        # first record on is.
        iterator = iter(self.dataset)
        start = time.perf_counter()
        utterances = 0
        for _ in range(self.sizes.pipeline_batches):
            utterances += int(next(iterator)["targets"].shape[0])
        seconds = time.perf_counter() - start
        del iterator
        return {"seconds": seconds, "units": utterances * self.sizes.speech_seconds}


# -- librosa ---------------------------------------------------------------------------

_WAVES: list[np.ndarray] = []
_DELTAS = False


def librosa_features(wave: np.ndarray, deltas: bool) -> np.ndarray:
    """librosa log-mel `[frames, 80]` (or `[frames, 80, 3]` with deltas, normalized)."""
    import librosa

    emphasized = librosa.effects.preemphasis(wave, coef=0.97)
    mel = librosa.feature.melspectrogram(
        y=emphasized,
        sr=audio.SAMPLE_RATE,
        n_fft=512,
        win_length=400,
        hop_length=160,
        center=False,
        power=1.0,
        n_mels=80,
        fmin=20.0,
        fmax=8000.0,
        htk=True,
    )
    log_mel = np.log(np.maximum(mel, 1e-3))  # [bins, frames]
    if not deltas:
        return log_mel.T
    stacked = np.stack(
        [
            log_mel,
            librosa.feature.delta(log_mel, width=5, order=1, mode="constant"),
            librosa.feature.delta(log_mel, width=9, order=2, mode="constant"),
        ],
        axis=-1,
    ).transpose(1, 0, 2)  # [frames, bins, 3]
    mean = stacked.mean(axis=0, keepdims=True)
    return (stacked - mean) / np.sqrt(stacked.var(axis=0, keepdims=True) + 1e-9)


def _init_pool(count: int, seconds: float, deltas: bool) -> None:
    global _WAVES, _DELTAS
    _WAVES, _DELTAS = audio.utterances(count, seconds), deltas
    librosa_features(_WAVES[0], deltas)  # warm up this process


def _featurize_index(index: int) -> np.ndarray:
    return librosa_features(_WAVES[index], _DELTAS)


class LibrosaFeaturize:
    """Every utterance once per repetition, in-process (1 core) or by a pool.

    Args:
        sizes: shared sizes.
        cores: 1 (this process) or more (a pool of that many processes).
        deltas: add delta-deltas and normalization (t2t-lite's full work).
    """

    def __init__(self, sizes: Sizes, cores: int, deltas: bool):
        self.sizes = sizes
        self.count = sizes.pipeline_batches * sizes.batch
        self.deltas = deltas
        self.waves = audio.utterances(self.count, sizes.speech_seconds)
        self.pool = None
        if cores > 1:
            context = multiprocessing.get_context("fork")
            self.pool = context.Pool(cores, _init_pool, (self.count, sizes.speech_seconds, deltas))
            atexit.register(self.pool.terminate)
        # Small tasks, so that a worker slowed by another process on its core
        # does not hold the whole map up.
        self.chunksize = max(1, self.count // (16 * cores))
        for _ in range(sizes.warmup):
            self.run()

    def run(self) -> dict:
        start = time.perf_counter()
        if self.pool is None:
            features = [librosa_features(wave, self.deltas) for wave in self.waves]
        else:
            features = self.pool.map(_featurize_index, range(self.count), self.chunksize)
        seconds = time.perf_counter() - start
        assert len(features) == self.count
        return {"seconds": seconds, "units": self.count * self.sizes.speech_seconds}
