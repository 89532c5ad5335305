"""The length rule, and what the LibriSpeech sets keep of LibriSpeech-shaped data.

The data is a LibriSpeech tree (FLAC files, transcript files) whose
utterances follow LibriSpeech's duration distribution up to 35 s: real
LibriSpeech speech from shared/testdata, tiled to each duration.
"""

from __future__ import annotations

import json
import os
import pathlib

import numpy as np
import pytest
import soundfile

from t2t_lite import registry
from t2t_lite.data import length_policy, pipeline, shards
from t2t_lite.data.problem import EVAL, TEST, TRAIN
from t2t_lite.problems import librispeech

# Seconds. Shaped like LibriSpeech's training utterances (most 10-17 s, a
# tail to 35 s, a few short ones): 9 of 22 are over T2T's 15.5 s limit.
TRAIN_SECONDS = [1.6, 3.1, 5.2, 7.4, 9.5, 11.0, 12.2, 13.1, 13.8, 14.3, 14.8]
TRAIN_SECONDS += [15.2, 15.4, 15.8, 16.1, 16.5, 17.2, 19.0, 22.5, 27.0, 31.5, 35.0]
DEV_SECONDS = [4.0, 14.9, 34.6]
TEST_SECONDS = [10.0]
LIBRISPEECH_SETS = (
    "transformer_librispeech_v1",
    "transformer_librispeech_v2",
    "transformer_librispeech_tpu_v1",
    "transformer_librispeech_tpu_v2",
)


class ShapedLibrispeech(librispeech.LibrispeechCleanSmall):
    num_shards = {TRAIN: 2, EVAL: 1, TEST: 1}
    workers = 2


def _real_speech(mini: pathlib.Path) -> tuple[np.ndarray, list[str]]:
    audio, words = [], []
    for flac in sorted((mini / "LibriSpeech").rglob("*.flac")):
        audio.append(soundfile.read(flac, dtype="float32")[0])
    for transcript in sorted((mini / "LibriSpeech").rglob("*.trans.txt")):
        for line in transcript.read_text("utf-8").splitlines():
            words += line.split()[1:]
    return np.concatenate(audio), words


def _write_tree(root: pathlib.Path, subset: str, seconds: list[float], speech, words) -> None:
    chapter = root / "LibriSpeech" / subset / "19" / "198"
    chapter.mkdir(parents=True)
    lines = []
    for i, duration in enumerate(seconds):
        utterance_id = f"19-198-{i:04d}"
        samples = int(duration * 16000)
        waveform = np.resize(speech, samples)  # tiled real speech
        soundfile.write(chapter / f"{utterance_id}.flac", waveform, 16000, subtype="PCM_16")
        # About 15 characters a second, LibriSpeech's reading rate.
        text, start = [], i * 7
        while len(" ".join(text)) < 15 * duration:
            text.append(words[(start + len(text)) % len(words)])
        lines.append(f"{utterance_id} {' '.join(text)}")
    (chapter / "19-198.trans.txt").write_text("\n".join(lines) + "\n", "utf-8")


@pytest.fixture(scope="module")
def shaped_data(tmp_path_factory, librispeech_mini):
    """(problem, data_dir) with LibriSpeech-shaped train/dev/test shards."""
    root = tmp_path_factory.mktemp("shaped_librispeech")
    speech, words = _real_speech(librispeech_mini)
    for subset, seconds in (
        ("train-clean-100", TRAIN_SECONDS),
        ("dev-clean", DEV_SECONDS),
        ("test-clean", TEST_SECONDS),
    ):
        _write_tree(root / "raw", subset, seconds, speech, words)
    problem = ShapedLibrispeech()
    problem.generate_data(str(root / "data"), str(root / "raw"))
    return problem, str(root / "data")


def _hparams(problem, name: str, overrides: str = ""):
    return problem.add_hparams(registry.hparams(name).parse(overrides))


def _one_pass(problem, data_dir, hparams, mode=TRAIN):
    """Every batch of one unshuffled pass, and the pipeline's drop counts."""
    counter = pipeline.DropCounter()
    dataset = pipeline.make_dataset(
        problem, mode, data_dir, hparams, shuffle=False, repeat=False, drop_counter=counter
    )
    return list(dataset.as_numpy_iterator()), counter


def test_manifest_records_each_examples_samples_and_target_length(shaped_data):
    problem, data_dir = shaped_data
    recorded = shards.read_manifest_lengths(data_dir, problem.name, TRAIN)
    assert sorted(recorded["samples"]) == [int(s * 16000) for s in TRAIN_SECONDS]
    records = list(
        shards.read_examples(
            shards.existing_shards(data_dir, problem.name, TRAIN), problem.example_spec()
        )
    )
    assert sorted(recorded["targets"]) == sorted(int(r["targets"].values.shape[0]) for r in records)


@pytest.mark.parametrize("name", LIBRISPEECH_SETS)
def test_librispeech_sets_keep_every_utterance_within_their_batch_budget(shaped_data, name):
    problem, data_dir = shaped_data
    hparams = _hparams(problem, name)
    report = length_policy.run_lengths_report(problem, hparams, data_dir, static=False)
    expected_hours = {TRAIN: sum(TRAIN_SECONDS) / 3600, EVAL: sum(DEV_SECONDS) / 3600}
    for split, counts in report["splits"].items():
        assert counts["dropped"] == {} and counts["kept"] == counts["examples"]
        assert counts["kept_seconds"] / 3600 == pytest.approx(expected_hours[split], abs=1e-6)
    assert "DROPPED" not in length_policy.describe(report)

    batches, counter = _one_pass(problem, data_dir, hparams)
    assert counter.total() == 0
    assert sum(len(b["targets"]) for b in batches) == len(TRAIN_SECONDS)
    bins = hparams.audio_num_mel_bins
    for batch in batches:
        frames = batch["inputs"].shape[1]
        if hparams.use_fixed_batch_size:
            assert len(batch["inputs"]) <= hparams.batch_size
            assert len(batch["inputs"]) * frames * bins <= hparams.fixed_batch_length_budget
        else:
            assert len(batch["inputs"]) * frames * bins <= hparams.batch_size
    # The longest utterance, 35 s, went into a smaller batch rather than away,
    # with the room's lead (at most a second) still within the 36 s.
    longest = max(batches, key=lambda b: b["inputs"].shape[1])
    assert 3499 <= longest["inputs_length"].max() <= 3600


def test_t2t_limits_drop_what_the_report_says_they_drop(shaped_data):
    problem, data_dir = shaped_data
    # T2T's own v2 limits: 1550 frames, 350 bytes, 16 utterances whatever their length.
    hparams = _hparams(
        problem,
        "transformer_librispeech_v2",
        # No lead before the utterances: the report reads stored lengths, and
        # a lead would take the 15.2 and 15.4 s ones past 15.5 s in training
        # (the pipeline counts such drops; the trainer logs them).
        "max_input_seq_length=1550,max_target_seq_length=350,fixed_batch_length_budget=0,"
        "aug_lead_prob=0.0",
    )
    report = length_policy.run_lengths_report(problem, hparams, data_dir, static=False)
    train = report["splits"][TRAIN]
    over = [s for s in TRAIN_SECONDS if s * 100 > 1550]
    assert train["examples"] - train["kept"] == len(over) == 9
    assert train["dropped"] == {"max_input_seq_length": 9}
    assert train["seconds"] - train["kept_seconds"] == pytest.approx(sum(over), abs=1e-3)
    # Evaluation drops only for the per-feature limits (eval_drop_long_sequences is off).
    assert report["splits"][EVAL]["dropped"] == {"max_input_seq_length": 1}
    text = length_policy.describe(report)
    kept_minutes = (sum(TRAIN_SECONDS) - sum(over)) / 60
    dropped_minutes = sum(over) / 60
    assert (
        f"train: kept 13 of 22 examples ({kept_minutes:.1f} min), "
        f"DROPPED 9 ({dropped_minutes:.1f} min): 9 over max_input_seq_length"
    ) in text

    # The pipeline drops exactly those, counted under the same reason.
    batches, counter = _one_pass(problem, data_dir, hparams)
    assert sum(len(b["targets"]) for b in batches) == train["kept"]
    assert counter.counts()["max_input_seq_length"] == 9 and counter.total() == 9


def test_a_run_on_data_without_recorded_lengths_says_so(shaped_data, tmp_path):
    problem, data_dir = shaped_data
    copy = tmp_path / "old_data"
    copy.mkdir()
    for name in os.listdir(data_dir):
        (copy / name).write_bytes((pathlib.Path(data_dir) / name).read_bytes())
    manifest = shards.manifest_path(str(copy), problem.name, TRAIN)
    content = json.loads(pathlib.Path(manifest).read_text())
    del content["lengths"]
    pathlib.Path(manifest).write_text(json.dumps(content))
    hparams = _hparams(problem, "transformer_librispeech")
    report = length_policy.run_lengths_report(problem, hparams, str(copy), static=False)
    assert report["unrecorded"] == [TRAIN] and list(report["splits"]) == [EVAL]
    assert "train: lengths not recorded" in length_policy.describe(report)


def test_length_checks_apply_the_first_failing_limit():
    hparams = registry.hparams("transformer_base").parse(
        "max_input_seq_length=10,max_target_seq_length=5,max_length=8"
    )
    lengths = {
        "inputs": np.array([4, 12, 6, 7]),
        "targets": np.array([2, 9, 6, 3]),
        "batch": np.array([4, 12, 6, 9]),
    }
    checks = length_policy.length_checks(
        lengths, length_policy.active_limits(hparams, TRAIN, False)
    )
    assert [reason for reason, _ in checks] == list(length_policy.DROP_REASONS)
    within = {reason: list(ok) for reason, ok in checks}
    assert within["max_input_seq_length"] == [True, False, True, True]
    assert within["max_target_seq_length"] == [True, False, False, True]
    assert within["max_length"] == [True, False, True, False]
    # max_length does not apply to evaluation unless asked to.
    assert "max_length" not in length_policy.active_limits(hparams, EVAL, False)
    assert "max_length" in length_policy.active_limits(hparams, EVAL, True)
