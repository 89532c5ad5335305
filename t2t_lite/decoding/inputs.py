"""Model features from user inputs: text lines or audio file paths (decode_from_file)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import tensorflow as tf

from t2t_lite.data.audio_io import read_audio
from t2t_lite.data.problem import Problem
from t2t_lite.data.speech_problem import featurize
from t2t_lite.data.text_encoders import EOS_ID
from t2t_lite.hparam import HParams


def _pad_stack(arrays: list[np.ndarray]) -> np.ndarray:
    longest = max(array.shape[0] for array in arrays)
    padded = [
        np.pad(array, [(0, longest - array.shape[0])] + [(0, 0)] * (array.ndim - 1))
        for array in arrays
    ]
    return np.stack(padded)


def features_from_lines(
    problem: Problem, hparams: HParams, data_dir: str, lines: list[str], batch_size: int
) -> Iterator[dict]:
    """Batches of model features, in order, for text lines or audio paths.

    Raises:
        AudioError: an audio path cannot be read (the message names it).
    """
    if problem.input_modality == "speech":
        yield from _speech_batches(lines, hparams, batch_size)
        return
    encoder = problem.feature_encoders(data_dir)["inputs"]
    for start in range(0, len(lines), batch_size):
        chunk = lines[start : start + batch_size]
        ids = [np.array(encoder.encode(line) + [EOS_ID], np.int32) for line in chunk]
        yield {"inputs": tf.constant(_pad_stack(ids))}


def _speech_batches(paths: list[str], hparams: HParams, batch_size: int) -> Iterator[dict]:
    """Featurizes audio files inside tf.data, as the input pipeline does, so a
    file decodes exactly as the same utterance does from the dataset."""
    waveforms = [read_audio(path) for path in paths]  # fails early, naming the file
    dataset = tf.data.Dataset.from_generator(
        lambda: iter(waveforms), output_signature=tf.TensorSpec([None], tf.float32)
    )

    def features(waveform):
        inputs = featurize(waveform, hparams, training=False)
        return {"inputs": inputs, "inputs_length": tf.shape(inputs)[0]}

    yield from dataset.map(features).padded_batch(batch_size)
