"""Sharded TFRecord files: T2T's names, atomic writing, serialization helpers.

Shards are named `{problem}-{split}-{i:05d}-of-{n:05d}` inside `data_dir`.
They are written under temporary names and renamed only when every shard of
the split is complete, so an interrupted datagen never leaves a shard that
looks finished.

Beside each split's shards, `write_shards` writes a manifest,
`{problem}-{split}-manifest.json`, before it renames the shards:

    {"problem": "librispeech", "split": "train", "records": 281241,
     "shards": [{"name": "librispeech-train-00000-of-00100",
                 "records": 2813, "bytes": 1234567}, ...],
     "lengths": {"samples": [...], "targets": [...]}}

`lengths` holds each example's lengths as the problem records them
(`Problem.stored_lengths`), in writing order, so a run can say which
examples its length limits keep (`length_policy`) without reading the data.

`check_shards` compares the shards a run is about to read with it, so a
truncated, missing or foreign shard is reported (naming the file and the
datagen command that fixes it) before the first step, not as a TF traceback
mid-training. Data written before manifests existed has none and is read
unchecked, with one warning. A shard damaged without changing its size is
found by TF's record checksums while reading; `find_damaged_shard` then
names it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator

import numpy as np
import tensorflow as tf
from absl import logging

from t2t_lite.data.dataset_options import without_autotuning

_INCOMPLETE = ".incomplete"
_SHARD_NAME = re.compile(r"^(?P<problem>.+)-(?P<split>[^-]+)-\d{5}-of-\d{5}$")
_DATA_LOSS_REASON = re.compile(r"(truncated|corrupted) record at \d+")
_unchecked_warned: set[str] = set()  # manifests already warned about as missing


class ShardError(ValueError):
    """Shards do not match their manifest; the message names the file and the fix."""


def shard_paths(data_dir: str, problem_name: str, split: str, num_shards: int) -> list[str]:
    return [
        os.path.join(data_dir, f"{problem_name}-{split}-{i:05d}-of-{num_shards:05d}")
        for i in range(num_shards)
    ]


def shard_pattern(data_dir: str, problem_name: str, split: str) -> str:
    return os.path.join(data_dir, f"{problem_name}-{split}-?????-of-?????")


def existing_shards(data_dir: str, problem_name: str, split: str) -> list[str]:
    return sorted(tf.io.gfile.glob(shard_pattern(data_dir, problem_name, split)))


def manifest_path(data_dir: str, problem_name: str, split: str) -> str:
    return os.path.join(data_dir, f"{problem_name}-{split}-manifest.json")


def _problem_and_split(shard: str) -> tuple[str, str] | None:
    """(problem, split) from a T2T shard name, or None for any other name."""
    match = _SHARD_NAME.match(os.path.basename(shard))
    return (match["problem"], match["split"]) if match else None


def _manifest_of(shard: str) -> str | None:
    """The manifest that describes `shard`, or None if its name is not T2T's."""
    names = _problem_and_split(shard)
    return manifest_path(os.path.dirname(shard), *names) if names else None


def regenerate_hint(problem_name: str, data_dir: str) -> str:
    """The command that rewrites a problem's shards (ends every shard error)."""
    return f"rerun t2t-lite-datagen --problem={problem_name} --data_dir={data_dir} --overwrite."


def to_example(features: dict) -> tf.train.Example:
    """A tf.train.Example from a dict of int lists, float lists, bytes or str."""
    feature = {}
    for name, value in features.items():
        if isinstance(value, str):
            value = value.encode("utf-8")
        if isinstance(value, bytes):
            feature[name] = tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))
            continue
        values = list(value)
        if all(isinstance(v, int) for v in values):
            feature[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=values))
        elif all(isinstance(v, float | int) for v in values):
            feature[name] = tf.train.Feature(float_list=tf.train.FloatList(value=values))
        else:
            raise ValueError(f"feature {name!r} must hold ints, floats, bytes or str.")
    return tf.train.Example(features=tf.train.Features(feature=feature))


def write_shards(
    examples: Iterable[dict],
    paths: list[str],
    stored_lengths: Callable[[dict], dict[str, int]] | None = None,
) -> int:
    """Writes `examples` round-robin into `paths`, and their manifest.

    The manifest (see the module docstring) is written when the paths have
    T2T's names, after every shard is complete and before any is renamed, so
    shards that an interrupted rename left behind disagree with it.

    Args:
        examples: dicts for `to_example`.
        paths: the final shard paths, all of one split.
        stored_lengths: example -> named lengths (`Problem.stored_lengths`),
            recorded per example in the manifest for `read_manifest_lengths`.

    Returns:
        How many examples were written.

    On any error the temporary files are removed and nothing is renamed.
    """
    for path in paths:
        tf.io.gfile.makedirs(os.path.dirname(path) or ".")
    temporary = [path + _INCOMPLETE for path in paths]
    writers = [tf.io.TFRecordWriter(path) for path in temporary]
    counts = [0] * len(paths)
    lengths: dict[str, list[int]] = {}
    try:
        for index, example in enumerate(examples):
            shard = index % len(writers)
            writers[shard].write(to_example(example).SerializeToString())
            counts[shard] += 1
            if stored_lengths is not None:
                for name, length in stored_lengths(example).items():
                    lengths.setdefault(name, []).append(int(length))
        for writer in writers:
            writer.close()
        sizes = [tf.io.gfile.stat(path).length for path in temporary]
        _write_manifest(paths, counts, sizes, lengths)
    except BaseException:
        for writer in writers:
            writer.close()
        for path in temporary:
            if tf.io.gfile.exists(path):
                tf.io.gfile.remove(path)
        raise
    for path, final in zip(temporary, paths, strict=True):
        tf.io.gfile.rename(path, final, overwrite=True)
    return sum(counts)


def _write_manifest(
    paths: list[str], counts: list[int], sizes: list[int], lengths: dict[str, list[int]]
) -> None:
    """Writes the manifest of the split `paths` belong to (atomically)."""
    manifest = _manifest_of(paths[0])
    if manifest is None:  # not T2T's names: nothing can find a manifest later
        return
    problem_name, split = _problem_and_split(paths[0])
    content = {
        "problem": problem_name,
        "split": split,
        "records": sum(counts),
        "shards": [
            {"name": os.path.basename(path), "records": count, "bytes": size}
            for path, count, size in zip(paths, counts, sizes, strict=True)
        ],
    }
    text = json.dumps(content, indent=2)
    if lengths:  # one line per length list: a split can have 100,000s of examples
        listed = ",\n".join(f'    "{name}": {json.dumps(v)}' for name, v in lengths.items())
        text = text[: text.rindex("}")].rstrip() + ',\n  "lengths": {\n' + listed + "\n  }\n}"
    temporary = manifest + _INCOMPLETE
    with tf.io.gfile.GFile(temporary, "w") as handle:
        handle.write(text + "\n")
    tf.io.gfile.rename(temporary, manifest, overwrite=True)


def remove_manifest(data_dir: str, problem_name: str, split: str) -> None:
    """Removes a split's manifest, if any (its shards are being replaced or removed)."""
    path = manifest_path(data_dir, problem_name, split)
    if tf.io.gfile.exists(path):
        tf.io.gfile.remove(path)


def _read_manifest(path: str) -> tuple[str, dict[str, int]]:
    """The problem a manifest belongs to, and its shard names -> byte sizes.

    Raises:
        ShardError: it is not a manifest `write_shards` wrote.
    """
    try:
        with tf.io.gfile.GFile(path) as handle:
            content = json.load(handle)
        sizes = {entry["name"]: int(entry["bytes"]) for entry in content["shards"]}
        return content["problem"], sizes
    except (ValueError, KeyError, TypeError) as error:
        data_dir, name = os.path.split(path)
        problem_name = name.rsplit("-", 2)[0]  # {problem}-{split}-manifest.json
        raise ShardError(
            f"{path} is not a readable shard manifest ({type(error).__name__}: {error}); "
            + regenerate_hint(problem_name, data_dir)
        ) from None


def read_manifest_lengths(data_dir: str, problem_name: str, split: str) -> dict | None:
    """The per-example lengths datagen recorded for a split, as int64 arrays.

    Returns:
        `{name: array}` (e.g. "samples" and "targets" for speech), or None if
        the split has no manifest or its manifest records no lengths.
    """
    path = manifest_path(data_dir, problem_name, split)
    if not tf.io.gfile.exists(path):
        return None
    with tf.io.gfile.GFile(path) as handle:
        lengths = json.load(handle).get("lengths")
    if not lengths:
        return None
    return {name: np.asarray(values, np.int64) for name, values in lengths.items()}


def check_shards(paths: list[str]) -> None:
    """Checks shards against their manifest before anything reads them.

    Every shard listed must be there with the size datagen wrote, and no
    other shard may be; shards without a manifest (older data, or names
    that are not T2T's) pass, with one warning per split.

    Args:
        paths: shard paths about to be read, e.g. from `existing_shards`.

    Raises:
        ShardError: a shard is missing, truncated, resized or not listed; the
            message names it and the datagen command that rewrites it.
    """
    by_manifest: dict[str, list[str]] = {}
    for path in paths:
        manifest = _manifest_of(path)
        if manifest:  # other names never had a manifest: nothing to check
            by_manifest.setdefault(manifest, []).append(path)
    for manifest, shard_group in by_manifest.items():
        if tf.io.gfile.exists(manifest):
            _check_against_manifest(shard_group, manifest)
        else:
            _warn_unchecked(manifest)


def _warn_unchecked(manifest: str) -> None:
    if manifest in _unchecked_warned:
        return
    _unchecked_warned.add(manifest)
    logging.warning(
        "%s does not exist (data written before datagen wrote manifests): the shards "
        "are read unchecked; t2t-lite-datagen --overwrite writes it.",
        manifest,
    )


def _check_against_manifest(paths: list[str], manifest: str) -> None:
    problem_name, expected = _read_manifest(manifest)
    data_dir = os.path.dirname(manifest)
    fix = regenerate_hint(problem_name, data_dir)
    present = {os.path.basename(path): path for path in paths}
    for name in expected:
        if name not in present:
            raise ShardError(
                f"{os.path.join(data_dir, name)} is missing ({manifest} lists "
                f"{len(expected)} shards); {fix}"
            )
    for name, path in present.items():
        if name not in expected:
            raise ShardError(
                f"{path} is not listed in {manifest} (left from another datagen run?); {fix}"
            )
        size = tf.io.gfile.stat(path).length
        if size != expected[name]:
            state = "is truncated" if size < expected[name] else "has changed"
            raise ShardError(
                f"{path} {state}: {size} bytes, but datagen wrote {expected[name]} "
                f"(see {manifest}); {fix}"
            )


def find_damaged_shard(paths: list[str]) -> tuple[str, str] | None:
    """Reads every record of `paths` to find the first shard TF cannot read.

    TF's DataLossError names no file, so after one this finds which shard it
    was. It reads all the data: only for the error path.

    Returns:
        (path, TF's reason, e.g. "corrupted record at 2900"), or None if all read.
    """
    for path in paths:
        try:
            # Reading every record is the check: a damaged one raises here.
            tf.data.TFRecordDataset(path).batch(4096).reduce(0, lambda count, _: count + 1)
        except tf.errors.DataLossError as error:
            return path, data_loss_reason(error)
    return None


def data_loss_reason(error: tf.errors.DataLossError) -> str:
    """The short part of TF's DataLossError message ("truncated record at 153010")."""
    match = _DATA_LOSS_REASON.search(error.message or "")
    if match:
        return match.group(0)
    lines = [line.strip() for line in (error.message or "").splitlines() if line.strip()]
    return lines[-1] if lines else "data loss"


def read_examples(paths: list[str], spec: dict) -> Iterator[dict]:
    """Parses every record of `paths` with `spec` (eager; for tests and tools)."""
    for record in without_autotuning(tf.data.TFRecordDataset(paths)):
        yield tf.io.parse_single_example(record, spec)
