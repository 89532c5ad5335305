"""A speech problem's test split under named listening conditions, as splits of its own.

    t2t-lite-datagen --problem=spoken_synth --data_dir=$DATA --noisy_test
    t2t-lite-decoder --output_dir=$OUT --dataset_split=test_pink_20db

For each condition of `audio_augment.conditions.CONDITIONS`, the records of
the problem's test split (as datagen wrote them) are rendered under it and
written as split `test_<condition>`, with their own shards and manifest:
the same utterances, ids, transcripts and speakers, the waveform changed,
word times moved by the lead. Each utterance's rendering is seeded by its
position and the condition's name, so the splits are the same on every
machine and every run. Babble is made of other utterances of the same split
(`conditions.BABBLE_VOICES` of them, the next ones in record order, never
the utterance itself). Splits that exist are kept, as datagen keeps any.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

import numpy as np
import tensorflow as tf

from t2t_lite.data import shards
from t2t_lite.data.audio_augment.conditions import BABBLE_VOICES, CONDITIONS, apply_condition
from t2t_lite.data.problem import TEST, DataError, Problem, SplitReport
from t2t_lite.data.speech_features import PCM_SCALE, SAMPLE_RATE

_FLOAT_FIELDS = ("word_starts", "word_ends")


def condition_split(name: str, split: str = TEST) -> str:
    """The split that holds `split` under condition `name`: `test_pink_20db`."""
    return f"{split}_{name}"


def _records(problem: Problem, data_dir: str, split: str) -> list[dict]:
    """The split's records as `shards.to_example` dicts, in record order."""
    records = []
    for serialized in tf.data.TFRecordDataset(problem.require_data(data_dir, split)):
        example = tf.train.Example.FromString(serialized.numpy())
        record = {}
        for name, feature in example.features.feature.items():
            kind = feature.WhichOneof("kind")
            values = list(getattr(feature, kind).value)
            if kind == "bytes_list":
                record[name] = values[0]
            elif values:
                record[name] = values
        records.append(record)
    return records


def _waveform(record: dict) -> np.ndarray:
    return np.frombuffer(record["waveform"], "<i2").astype(np.float32) / PCM_SCALE


def _pcm(waveform: np.ndarray) -> bytes:
    return np.clip(np.round(waveform * PCM_SCALE), -32768, 32767).astype("<i2").tobytes()


def _rendered(
    records: list[dict], waveforms: list[np.ndarray], name: str, report: SplitReport
) -> Iterator[dict]:
    """The records under condition `name`, word times moved by its lead."""
    condition = CONDITIONS[name]
    for index, record in enumerate(records):
        others = range(1, min(BABBLE_VOICES, len(records) - 1) + 1)
        voices = [waveforms[(index + k) % len(records)] for k in others]
        seed = zlib.crc32(f"{name}/{index}".encode())
        noisy = apply_condition(waveforms[index], condition, seed, voices)
        report.audio_seconds += noisy.size / SAMPLE_RATE
        out = {**record, "waveform": _pcm(noisy)}
        for field in _FLOAT_FIELDS:
            if field in out:
                out[field] = [float(t) + condition.lead_seconds for t in out[field]]
        yield out


def write_noisy_splits(
    problem: Problem, data_dir: str, split: str = TEST, overwrite: bool = False
) -> dict[str, SplitReport]:
    """Writes `split` under every condition (see the module docstring).

    Args:
      problem: a speech problem whose `split` datagen has written.
      data_dir: where its shards are.
      split: the split to render (test).
      overwrite: rewrite condition splits that exist.

    Returns:
      `{condition split: SplitReport}`.

    Raises:
      DataError: the problem takes no audio, or `split` has no shards.
    """
    if problem.input_modality != "speech":
        raise DataError(f"--noisy_test is for speech problems; {problem.name} takes text.")
    records = None
    reports = {}
    for name, condition in CONDITIONS.items():
        target = condition_split(name, split)
        report = reports[target] = SplitReport()
        existing = shards.existing_shards(data_dir, problem.name, target)
        if existing and not overwrite:
            shards.check_shards(existing)
            report.reused = True
            continue
        if records is None:
            records = _records(problem, data_dir, split)
            waveforms = [_waveform(record) for record in records]
            count = len(problem.require_data(data_dir, split))  # as many shards
        if condition.noise == "babble" and len(records) < 2:
            raise DataError(f"{problem.name} {split} has one utterance; babble needs others.")
        for stale in existing:
            tf.io.gfile.remove(stale)
        paths = shards.shard_paths(data_dir, problem.name, target, count)
        examples = _rendered(records, waveforms, name, report)
        report.written = shards.write_shards(examples, paths, problem.stored_lengths)
    return reports
