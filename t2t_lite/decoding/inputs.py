"""Decoder inputs: text lines, waveforms, and a speech split's records as waveforms."""

from __future__ import annotations

import io
from collections.abc import Iterator

import numpy as np
import tensorflow as tf

from t2t_lite.data.problem import Problem
from t2t_lite.data.text_encoders import EOS_ID


class InputListError(ValueError):
    """A --decode_from_file list that is not text; the message says where and what to do."""


def read_input_lines(path: str) -> list[str]:
    """The non-blank lines of a UTF-8 file, stripped (text inputs or audio paths).

    A UTF-8 byte order mark is skipped (editors on Windows write one).

    Args:
        path: a local file.

    Returns:
        The lines, in order.

    Raises:
        InputListError: the file is not UTF-8 (the message names the line and byte).
        OSError: the file cannot be read.
    """
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as error:
        raise InputListError(_not_utf8_message(path, data, error.start)) from None
    # newline=None: the same line ends as open() in text mode ("\n", "\r\n", "\r").
    return [line.strip() for line in io.StringIO(text, newline=None) if line.strip()]


def _not_utf8_message(path: str, data: bytes, offset: int) -> str:
    line = data.count(b"\n", 0, offset) + 1
    column = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
    return (
        f"{path} is not UTF-8: byte 0x{data[offset]:02x} at line {line}, column {column} "
        f"(byte offset {offset}); save it as UTF-8 text, one input per line."
    )


def _pad_stack(arrays: list[np.ndarray]) -> np.ndarray:
    longest = max(array.shape[0] for array in arrays)
    padded = [
        np.pad(array, [(0, longest - array.shape[0])] + [(0, 0)] * (array.ndim - 1))
        for array in arrays
    ]
    return np.stack(padded)


def text_batches(
    problem: Problem, data_dir: str, lines: list[str], batch_size: int
) -> Iterator[dict]:
    """Batches of model features, in order, for text lines (EOS appended).

    Speech inputs are waveforms; see `waveform_batches`.
    """
    encoder = problem.feature_encoders(data_dir)["inputs"]
    for start in range(0, len(lines), batch_size):
        chunk = lines[start : start + batch_size]
        ids = [np.array(encoder.encode(line) + [EOS_ID], np.int32) for line in chunk]
        yield {"inputs": tf.constant(_pad_stack(ids))}


def waveform_batches(
    waveforms: list[np.ndarray], batch_size: int
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """`(waveforms [batch, samples] zero padded, lengths [batch])`, in order."""
    for start in range(0, len(waveforms), batch_size):
        chunk = waveforms[start : start + batch_size]
        lengths = np.array([len(w) for w in chunk], np.int32)
        yield _pad_stack([np.asarray(w, np.float32) for w in chunk]), lengths


def record_waveform_batches(
    problem: Problem, data_dir: str, split: str, batch_size: int
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """A speech split's records as `(waveforms, lengths, targets)` NumPy batches,
    in shard order: what the decoder transcribes as the SavedModel would.

    Raises:
        DataError / ShardError: the split's shards are missing or damaged.
    """
    files = problem.require_data(data_dir, split)

    def waveform_and_targets(serialized):
        example = problem.decode_example(serialized)
        waveform = example["waveform"]
        return {
            "waveform": waveform,
            "waveform_length": tf.shape(waveform)[0],
            "targets": example["targets"],
        }

    dataset = tf.data.TFRecordDataset(files).map(waveform_and_targets).padded_batch(batch_size)
    for batch in dataset:
        yield batch["waveform"].numpy(), batch["waveform_length"].numpy(), batch["targets"].numpy()
