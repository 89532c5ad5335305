"""Shards: T2T's names, round-robin, atomic (nothing left on failure), and the
manifest that lets a reader tell a truncated shard before reading it."""

import json
import os
import re

import pytest
import tensorflow as tf

from t2t_lite.data import shards


def test_names_and_round_trip(tmp_path):
    paths = shards.shard_paths(str(tmp_path), "my_problem", "train", 3)
    assert [os.path.basename(p) for p in paths] == [
        "my_problem-train-00000-of-00003",
        "my_problem-train-00001-of-00003",
        "my_problem-train-00002-of-00003",
    ]
    examples = [{"targets": [i, 1], "text": f"t{i}", "score": [0.5]} for i in range(7)]
    assert shards.write_shards(iter(examples), paths) == 7
    assert shards.existing_shards(str(tmp_path), "my_problem", "train") == paths
    spec = {
        "targets": tf.io.VarLenFeature(tf.int64),
        "text": tf.io.FixedLenFeature([], tf.string),
        "score": tf.io.FixedLenFeature([1], tf.float32),
    }
    first_shard = list(shards.read_examples(paths[:1], spec))
    assert [int(tf.sparse.to_dense(e["targets"])[0]) for e in first_shard] == [0, 3, 6]
    assert first_shard[1]["text"].numpy() == b"t3"


def test_failure_leaves_nothing(tmp_path):
    paths = shards.shard_paths(str(tmp_path), "broken", "train", 2)

    def examples():
        yield {"targets": [1]}
        raise RuntimeError("reader crashed")

    with pytest.raises(RuntimeError):
        shards.write_shards(examples(), paths)
    assert os.listdir(tmp_path) == []


def _written_split(tmp_path, num_shards=2, examples=5):
    paths = shards.shard_paths(str(tmp_path), "my_problem", "train", num_shards)
    shards.write_shards(iter([{"targets": [i, 1]} for i in range(examples)]), paths)
    return paths


def test_manifest_lists_names_counts_and_sizes(tmp_path):
    paths = _written_split(tmp_path, num_shards=2, examples=5)
    manifest = json.loads((tmp_path / "my_problem-train-manifest.json").read_text())
    assert manifest["problem"] == "my_problem" and manifest["split"] == "train"
    assert manifest["records"] == 5
    assert manifest["shards"] == [
        {"name": os.path.basename(path), "records": count, "bytes": os.path.getsize(path)}
        for path, count in zip(paths, [3, 2], strict=True)
    ]
    shards.check_shards(paths)  # intact shards pass


def test_check_names_a_truncated_missing_or_foreign_shard_and_the_fix(tmp_path):
    paths = _written_split(tmp_path)
    fix = f"rerun t2t-lite-datagen --problem=my_problem --data_dir={tmp_path} --overwrite."
    intact = open(paths[1], "rb").read()
    with open(paths[1], "wb") as handle:
        handle.write(intact[:-7])
    with pytest.raises(shards.ShardError) as error:
        shards.check_shards(paths)
    assert str(error.value) == (
        f"{paths[1]} is truncated: {len(intact) - 7} bytes, but datagen wrote {len(intact)} "
        f"(see {tmp_path / 'my_problem-train-manifest.json'}); {fix}"
    )
    os.remove(paths[1])
    with pytest.raises(shards.ShardError, match=f"{paths[1]} is missing .*; {re.escape(fix)}"):
        shards.check_shards(paths[:1])
    with open(paths[1], "wb") as handle:
        handle.write(intact)
    foreign = str(tmp_path / "my_problem-train-00000-of-00001")
    open(foreign, "wb").close()
    with pytest.raises(shards.ShardError, match=f"{foreign} is not listed in"):
        shards.check_shards(paths + [foreign])


def test_shards_without_manifest_are_read_unchecked_with_one_warning(tmp_path, caplog):
    paths = _written_split(tmp_path)
    os.remove(tmp_path / "my_problem-train-manifest.json")
    with open(paths[0], "ab") as handle:
        handle.write(b"older data: nothing to compare with")
    shards.check_shards(paths)
    shards.check_shards(paths)
    warnings = [r for r in caplog.records if "manifest.json does not exist" in r.getMessage()]
    assert len(warnings) == 1


def test_unreadable_manifest_is_a_shard_error(tmp_path):
    paths = _written_split(tmp_path)
    (tmp_path / "my_problem-train-manifest.json").write_text('{"shards": [')
    with pytest.raises(shards.ShardError, match="is not a readable shard manifest"):
        shards.check_shards(paths)


def test_damaged_shard_of_the_right_size_is_found_by_reading(tmp_path):
    paths = _written_split(tmp_path)
    damaged = bytearray(open(paths[1], "rb").read())
    damaged[len(damaged) // 2] ^= 0xFF
    with open(paths[1], "wb") as handle:
        handle.write(bytes(damaged))
    shards.check_shards(paths)  # sizes agree: only reading can tell
    path, reason = shards.find_damaged_shard(paths)
    assert path == paths[1] and re.fullmatch(r"corrupted record at \d+", reason)
    assert shards.find_damaged_shard(paths[:1]) is None


def test_datagen_refuses_to_keep_a_truncated_shard(tmp_path):
    from t2t_lite.data.problem import Problem

    class ManifestToy(Problem):
        num_shards = {"train": 2}

        def generate_examples(self, data_dir, tmp_dir, split, report):
            yield from ({"inputs": [i + 2], "targets": [i + 2]} for i in range(4))

    problem = ManifestToy()
    problem.generate_data(str(tmp_path), str(tmp_path / "tmp"))
    shard = tmp_path / "manifest_toy-train-00001-of-00002"
    shard.write_bytes(shard.read_bytes()[:-1])
    with pytest.raises(shards.ShardError, match="is truncated"):
        problem.generate_data(str(tmp_path), str(tmp_path / "tmp"))
    report = problem.generate_data(str(tmp_path), str(tmp_path / "tmp"), overwrite=True)
    assert report.split("train").written == 4
    shards.check_shards(shards.existing_shards(str(tmp_path), "manifest_toy", "train"))
