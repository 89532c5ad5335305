"""Tests for t2t_lite.data.spoken_synth.corpus: eSpeak NG speech in a LibriSpeech tree.

Every tree here is tiny (a few dozen utterances of real synthesized audio).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re

import numpy as np
import pytest
import soundfile

from t2t_lite.data.spoken_synth import corpus as spoken_corpus
from t2t_lite.data.spoken_synth import plan as spoken_plan
from t2t_lite.data.spoken_synth.espeak import UnknownVoiceError

TINY_SIZES = {"train": 16, "dev": 4, "test": 4}
TINY_LONG_S = (2.0, 6.0)  # long recordings of 2-6 s: a few test utterances each


def _config(**overrides) -> spoken_plan.CorpusConfig:
    overrides.setdefault("long_duration_s", TINY_LONG_S)
    return spoken_plan.CorpusConfig(split_sizes=dict(TINY_SIZES), **overrides)


def _read_tree(root: str) -> dict[str, tuple[str, str, np.ndarray]]:
    """utterance id -> (split, transcript, int16 samples), read with soundfile."""
    utterances = {}
    librispeech = os.path.join(root, "LibriSpeech")
    for split in sorted(os.listdir(librispeech)):
        if not os.path.isdir(os.path.join(librispeech, split)):
            continue
        for directory, _, filenames in os.walk(os.path.join(librispeech, split)):
            for filename in filenames:
                if not filename.endswith(".trans.txt"):
                    continue
                with open(os.path.join(directory, filename), encoding="utf-8") as lines:
                    for line in lines:
                        utterance_id, text = line.rstrip("\n").split(" ", 1)
                        samples, rate = soundfile.read(
                            os.path.join(directory, utterance_id + ".flac"), dtype="int16"
                        )
                        assert rate == 16000
                        utterances[utterance_id] = (split, text, samples)
    return utterances


@pytest.fixture(scope="module")
def tiny_tree(tmp_path_factory):
    """(root, config, summary) of a tiny corpus built with 2 workers."""
    root = str(tmp_path_factory.mktemp("spoken") / "corpus")
    config = _config()
    summary = spoken_corpus.build_corpus(root, config, num_workers=2)
    return root, config, summary


# -- tree ------------------------------------------------------------------------------


def test_unknown_voice_fails_before_synthesis(tmp_path):
    config = _config(train_voices=("en-us+nosuchvariant",))
    with pytest.raises(UnknownVoiceError, match="nosuchvariant"):
        spoken_corpus.build_corpus(str(tmp_path / "corpus"), config, num_workers=1)
    assert not os.path.exists(tmp_path / "corpus")


def test_tree_has_librispeech_layout(tiny_tree):
    root, config, summary = tiny_tree
    assert not summary.reused
    long_ids = spoken_corpus.read_long_recordings(root)
    assert summary.utterances == {**TINY_SIZES, "long": len(long_ids)}
    librispeech = os.path.join(root, "LibriSpeech")
    assert sorted(os.listdir(root)) == sorted(
        [
            "LibriSpeech",
            spoken_corpus.MARKER_NAME,
            spoken_corpus.LONG_MAPPING_NAME,
            spoken_corpus.WORD_TIMES_NAME,
        ]
    )
    assert sorted(os.listdir(librispeech)) == ["SPEAKERS.TXT", "dev", "long", "test", "train"]
    counts = dict.fromkeys(TINY_SIZES, 0)
    for split in TINY_SIZES:
        for speaker in os.listdir(os.path.join(librispeech, split)):
            assert speaker.isdigit()
            for chapter in os.listdir(os.path.join(librispeech, split, speaker)):
                assert chapter.isdigit()
                chapter_dir = os.path.join(librispeech, split, speaker, chapter)
                transcript_name = f"{speaker}-{chapter}.trans.txt"
                flacs = sorted(set(os.listdir(chapter_dir)) - {transcript_name})
                with open(os.path.join(chapter_dir, transcript_name), encoding="utf-8") as lines:
                    ids = [line.split(" ", 1)[0] for line in lines]
                assert [f"{utterance_id}.flac" for utterance_id in sorted(ids)] == flacs
                for name in flacs:
                    assert re.fullmatch(rf"{speaker}-{chapter}-\d{{4}}\.flac", name)
                    info = soundfile.info(os.path.join(chapter_dir, name))
                    assert (info.samplerate, info.channels, info.subtype) == (16000, 1, "PCM_16")
                counts[split] += len(flacs)
    assert counts == TINY_SIZES


def test_test_voice_is_absent_from_train_and_dev_speakers(tiny_tree):
    root, config, _ = tiny_tree
    with open(os.path.join(root, "LibriSpeech", "SPEAKERS.TXT"), encoding="utf-8") as table:
        rows = [
            [field.strip() for field in line.split("|")]
            for line in table
            if not line.startswith(";")
        ]
    voices_by_split: dict[str, set[str]] = {}
    for speaker, _, split, _, voice in rows:
        assert os.path.isdir(os.path.join(root, "LibriSpeech", split, speaker))
        voices_by_split.setdefault(split, set()).add(voice)
    assert voices_by_split["test"] == {"en-us-nyc+f3"}
    assert "en-us-nyc+f3" not in voices_by_split["train"] | voices_by_split["dev"]
    test_speakers = set(os.listdir(os.path.join(root, "LibriSpeech", "test")))
    for split in ("train", "dev"):
        assert not test_speakers & set(os.listdir(os.path.join(root, "LibriSpeech", split)))


def test_audio_is_audible_unclipped_speech_of_plausible_length(tiny_tree):
    root, _, summary = tiny_tree
    utterances = {
        utterance_id: entry
        for utterance_id, entry in _read_tree(root).items()
        if entry[0] != "long"  # tested below
    }
    assert len(utterances) == sum(TINY_SIZES.values())
    total_seconds = 0.0
    for utterance_id, (_, text, samples) in utterances.items():
        waveform = samples.astype(np.float64) / 32767
        seconds = waveform.size / 16000
        total_seconds += seconds
        rms = np.sqrt(np.mean(np.square(waveform)))
        assert rms > 0.01, utterance_id  # measured >= 0.025 (the quiet klatt voice)
        assert np.abs(waveform).max() < 0.999, utterance_id  # never clipped
        assert 0.15 <= seconds / len(text.split()) <= 0.8, (utterance_id, text, seconds)
    assert total_seconds == pytest.approx(
        sum(summary.audio_seconds[split] for split in TINY_SIZES), abs=0.01
    )


def test_same_seed_gives_identical_audio_and_transcripts(tiny_tree, tmp_path):
    root, config, _ = tiny_tree
    # One worker instead of two: the order of synthesis must not matter either.
    again = spoken_corpus.build_corpus(str(tmp_path / "again"), config, num_workers=1)
    assert not again.reused
    first, second = _read_tree(root), _read_tree(str(tmp_path / "again"))
    assert first.keys() == second.keys()
    for utterance_id, (split, text, samples) in first.items():
        assert second[utterance_id][:2] == (split, text)
        np.testing.assert_array_equal(samples, second[utterance_id][2])


def test_complete_tree_is_reused(tiny_tree, monkeypatch):
    root, config, summary = tiny_tree
    marker = os.path.join(root, spoken_corpus.MARKER_NAME)
    before = os.stat(marker).st_mtime_ns

    def no_synthesis(*args, **kwargs):
        raise AssertionError("a complete tree was synthesized again")

    monkeypatch.setattr(spoken_corpus, "render_utterance", no_synthesis)
    kept = spoken_corpus.build_corpus(root, config)
    assert kept.reused and kept.utterances == summary.utterances
    assert os.stat(marker).st_mtime_ns == before


def test_changed_parameters_rebuild_and_interruptions_leave_no_complete_tree(tmp_path, monkeypatch):
    root = str(tmp_path / "corpus")
    small = spoken_plan.CorpusConfig(split_sizes={"train": 2, "dev": 1, "test": 1})
    spoken_corpus.build_corpus(root, small, num_workers=1)
    reseeded = dataclasses.replace(small, seed=99)
    assert not spoken_corpus.corpus_is_complete(root, reseeded)
    rebuilt = spoken_corpus.build_corpus(root, reseeded, num_workers=1)
    assert not rebuilt.reused and spoken_corpus.corpus_is_complete(root, reseeded)
    assert spoken_corpus.read_marker(root)["parameters"]["seed"] == 99
    assert sorted(os.listdir(tmp_path)) == ["corpus"]  # no staging or stale copies

    # A run that dies midway keeps the previous tree and its marker intact.
    real_render = spoken_corpus.render_utterance
    calls = []

    def dies_on_third_utterance(plan, synthesizer):
        calls.append(plan)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real_render(plan, synthesizer)

    monkeypatch.setattr(spoken_corpus, "render_utterance", dies_on_third_utterance)
    with pytest.raises(KeyboardInterrupt):
        spoken_corpus.build_corpus(root, small, num_workers=1)
    assert spoken_corpus.corpus_is_complete(root, reseeded)
    assert not spoken_corpus.corpus_is_complete(root, small)
    assert sorted(os.listdir(tmp_path)) == ["corpus"]


# -- long recordings -------------------------------------------------------------------


def test_long_recordings_are_the_test_audio_joined_with_low_noise_pauses(tiny_tree):
    root, config, summary = tiny_tree
    utterances = _read_tree(root)
    mapping = spoken_corpus.read_long_recordings(root)
    test_ids = sorted(i for i, (split, _, _) in utterances.items() if split == "test")
    # Every test utterance once, in the corpus order, across recordings.
    assert [i for components in mapping.values() for i in components] == test_ids
    assert sorted(i for i, (split, _, _) in utterances.items() if split == "long") == sorted(
        mapping
    )
    assert len(mapping) >= 2  # 4 test utterances of ~2 s in 2-6 s recordings
    pause = 8000  # 0.5 s
    long_seconds = 0.0
    for long_id, components in mapping.items():
        split, text, samples = utterances[long_id]
        assert split == "long"
        assert text == " ".join(utterances[i][1] for i in components)
        assert long_id.split("-")[0] == components[0].split("-")[0]  # the test speaker
        parts = [utterances[i][2] for i in components]
        assert samples.size == sum(part.size for part in parts) + pause * (len(parts) - 1)
        offset = 0
        for number, part in enumerate(parts):
            if number:
                gap = samples[offset : offset + pause].astype(np.float64)
                speech = np.concatenate(parts).astype(np.float64)
                level_db = 10 * np.log10(np.mean(gap**2) / np.mean(speech**2))
                assert level_db == pytest.approx(-40, abs=1.5)  # noise, not silence
                offset += pause
            np.testing.assert_array_equal(samples[offset : offset + part.size], part)
            offset += part.size
        long_seconds += samples.size / 16000
        if len(mapping) > 1:
            assert TINY_LONG_S[0] <= samples.size / 16000 <= TINY_LONG_S[1], long_id
    assert summary.utterances["long"] == len(mapping)
    assert summary.audio_seconds["long"] == pytest.approx(long_seconds, abs=0.01)
    assert long_seconds == pytest.approx(
        summary.audio_seconds["test"] + 0.5 * (len(test_ids) - len(mapping)), abs=0.01
    )


def test_long_parameters_are_in_the_marker(tiny_tree):
    root, config, _ = tiny_tree
    parameters = spoken_corpus.read_marker(root)["parameters"]
    assert parameters["long_duration_s"] == list(TINY_LONG_S)
    assert parameters["long_pause_s"] == 0.5
    assert parameters["format_version"] == spoken_plan.FORMAT_VERSION >= 2
    assert not spoken_corpus.corpus_is_complete(
        root, dataclasses.replace(config, long_duration_s=(3.0, 6.0))
    )


# -- word times ------------------------------------------------------------------------


def test_word_times_cover_every_utterance_inside_its_audio(tiny_tree):
    root, _, _ = tiny_tree
    utterances = _read_tree(root)
    times = spoken_corpus.read_word_times(root)
    assert times.keys() == utterances.keys()  # every split, long included
    for utterance_id, (_, text, samples) in utterances.items():
        words = times[utterance_id]
        assert [word.word for word in words] == text.split(" ")
        ends = [0.0] + [word.end_s for word in words]
        for word, previous_end in zip(words, ends, strict=False):
            assert previous_end <= word.start_s < word.end_s <= samples.size / 16000, utterance_id


def test_long_word_times_are_the_components_shifted(tiny_tree):
    root, _, _ = tiny_tree
    utterances = _read_tree(root)
    times = spoken_corpus.read_word_times(root)
    mapping = spoken_corpus.read_long_recordings(root)
    assert max(len(components) for components in mapping.values()) > 1
    for long_id, components in mapping.items():
        expected, offset = [], 0
        for utterance_id in components:
            expected += [
                (word, start + offset / 16000, end + offset / 16000)
                for word, start, end in times[utterance_id]
            ]
            offset += utterances[utterance_id][2].size + 8000  # 0.5 s pauses
        assert len(times[long_id]) == len(expected)
        for got, want in zip(times[long_id], expected, strict=True):
            assert got.word == want[0]
            assert (got.start_s, got.end_s) == pytest.approx(want[1:], abs=1e-9)


def test_a_tree_from_before_word_times_is_not_complete(tmp_path):
    config = _config()
    marker = {"parameters": {**config.parameters(), "format_version": 2}, "summary": {}}
    (tmp_path / spoken_corpus.MARKER_NAME).write_text(json.dumps(marker), encoding="utf-8")
    assert not spoken_corpus.corpus_is_complete(str(tmp_path), config)
    marker["parameters"] = config.parameters()
    (tmp_path / spoken_corpus.MARKER_NAME).write_text(json.dumps(marker), encoding="utf-8")
    assert spoken_corpus.corpus_is_complete(str(tmp_path), config)
