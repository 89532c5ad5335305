"""Decoder inputs: text lines, waveforms, and a speech split's records as waveforms."""

from __future__ import annotations

import io
from collections.abc import Iterator

import numpy as np
import tensorflow as tf

from t2t_lite.data.dataset_options import without_autotuning
from t2t_lite.data.problem import EVAL, Problem
from t2t_lite.data.text_encoders import EOS_ID
from t2t_lite.decoding.audio.input_limits import input_tokens


class InputListError(ValueError):
    """A --decode_from_file list that is not text; the message says where and what to do."""


def read_input_lines(path: str) -> list[str]:
    """The lines of a UTF-8 file, stripped (text inputs or audio paths).

    Blank lines are kept, as "": output line i answers input line i (as in
    T2T, whose decoder dropped only the empty string after a final newline,
    which `io.StringIO` does not yield). A UTF-8 byte order mark is skipped
    (editors on Windows write one).

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
    return [line.strip() for line in io.StringIO(text, newline=None)]


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


def encode_text_lines(
    encoder, lines: list[str], path: str, max_tokens: int | None = None
) -> list[np.ndarray]:
    """Each non-blank line's ids, EOS appended, checked before anything is decoded.

    Args:
        encoder: the problem's inputs `TextEncoder`.
        lines: from `read_input_lines` (blank lines are skipped here).
        path: the file the lines came from (named in errors).
        max_tokens: the most ids (EOS included) the model takes, as the
            SavedModel enforces it (`RunConfig.max_input_tokens`); None: no limit.

    Returns:
        int32 arrays, one per non-blank line, in order.

    Raises:
        InputListError: a line holds a symbol outside the vocabulary, or is
            longer than `max_tokens`; the message names the line number.
    """
    encoded = []
    for number, line in enumerate(lines, start=1):
        if not line:
            continue
        try:
            ids = encoder.encode(line)
        except ValueError as error:  # e.g. "symbol 2 is outside 0..1."
            raise InputListError(
                f"{path} line {number}: {str(error).rstrip('.')}; inputs must be in the "
                "problem's vocabulary (for the algorithmic problems: symbols separated by spaces)."
            ) from None
        tokens = input_tokens(len(ids))
        if max_tokens is not None and tokens > max_tokens:
            raise InputListError(
                f"{path} line {number} has {tokens} tokens (EOS included), more than "
                f"this model takes ({max_tokens}, from its max_input_seq_length or max_length "
                "hparam); shorten or split the line."
            )
        encoded.append(np.array(ids + [EOS_ID], np.int32))
    return encoded


def text_batches(encoded: list[np.ndarray], batch_size: int) -> Iterator[dict]:
    """Batches of model features, in order, from `encode_text_lines`' ids (zero padded).

    Speech inputs are waveforms; see `waveform_batches`.
    """
    for start in range(0, len(encoded), batch_size):
        yield {"inputs": tf.constant(_pad_stack(encoded[start : start + batch_size]))}


def record_text_batches(
    problem: Problem, data_dir: str, split: str, hparams, batch_size: int
) -> Iterator[dict]:
    """A text split's examples as model feature batches (with "targets"), in record order.

    Zero padded, shard by shard, no length bucketing, none dropped.

    Raises:
        DataError / ShardError: the split's shards are missing or damaged.
    """
    files = problem.require_data(data_dir, split)
    dataset = tf.data.TFRecordDataset(files).map(
        lambda record: problem.preprocess_example(problem.decode_example(record), EVAL, hparams)
    )
    yield from without_autotuning(dataset.padded_batch(batch_size))


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
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]]:
    """A speech split's records as `(waveforms, lengths, targets, utterance_ids)`
    NumPy batches, in record order: what the decoder transcribes as the
    SavedModel would. An id is "" where the records hold none.

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
            "utterance_id": example.get("utterance_id", tf.constant("")),
        }

    dataset = tf.data.TFRecordDataset(files).map(waveform_and_targets).padded_batch(batch_size)
    for batch in without_autotuning(dataset):
        ids = [value.decode("utf-8", "replace") for value in batch["utterance_id"].numpy()]
        yield (
            batch["waveform"].numpy(),
            batch["waveform_length"].numpy(),
            batch["targets"].numpy(),
            ids,
        )
