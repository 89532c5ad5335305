"""Tests for t2t_lite.data.librispeech_reader: real LibriSpeech files and bad files
made here."""

from __future__ import annotations

import pathlib
import shutil

import numpy as np
import pytest
import soundfile

from t2t_lite.data import librispeech_reader as reader
from t2t_lite.data.problem import DataError, SplitReport

SUBSETS = ["train-clean-100", "test-clean", "test-other"]


def _trans_lines(mini: pathlib.Path, subset: str) -> dict[str, str]:
    lines = {}
    for path in sorted((mini / "LibriSpeech" / subset).rglob("*.trans.txt")):
        for line in path.read_text("utf-8").splitlines():
            utterance_id, text = line.split(" ", 1)
            lines[utterance_id] = text
    return lines


@pytest.mark.parametrize("below", ["", "LibriSpeech"], ids=["parent", "LibriSpeech"])
def test_reads_real_tree_in_order_matching_flac_and_transcripts(below, librispeech_mini):
    report = SplitReport()
    root = librispeech_mini / below
    utterances = list(reader.read_librispeech_tree(root, SUBSETS, report, workers=2))
    expected = {}
    for subset in SUBSETS:
        expected.update(_trans_lines(librispeech_mini, subset))
    # Subsets in the order given, then sorted ids: deterministic.
    assert [u.utterance_id for u in utterances] == [
        "1034-121119-0022",
        "1034-121119-0046",
        "1089-134691-0000",
        "2033-164915-0001",
    ]
    assert not report.skipped
    for utterance in utterances:
        assert utterance.transcript == expected[utterance.utterance_id]  # upper case kept
        flac = next((librispeech_mini / "LibriSpeech").rglob(f"{utterance.utterance_id}.flac"))
        pcm, rate = soundfile.read(flac, dtype="int16")
        assert rate == 16000 and utterance.waveform.dtype == np.float32
        np.testing.assert_allclose(utterance.waveform, pcm / 32767.0, atol=1 / 32767)


def test_order_does_not_depend_on_the_number_of_workers(librispeech_mini):
    def ids(workers):
        utterances = reader.read_librispeech_tree(
            librispeech_mini, SUBSETS[::-1], SplitReport(), workers
        )
        return [(u.utterance_id, u.waveform.tobytes()) for u in utterances]

    assert ids(1) == ids(2)
    assert ids(1)[0][0] == "2033-164915-0001"  # test-other first, as asked


def _bad_tree(root: pathlib.Path, good: pathlib.Path) -> pathlib.Path:
    """One chapter with one `good` FLAC, one good WAV and one of each bad case."""
    chapter = root / "LibriSpeech" / "test-clean" / "1089" / "134691"
    chapter.mkdir(parents=True)
    shutil.copy(good, chapter / "1089-134691-0000.flac")
    (chapter / "1089-134691-0001.flac").write_bytes(b"fLaC this is not a real FLAC stream" * 10)
    (chapter / "1089-134691-0002.flac").write_bytes(b"")  # zero-length
    # 0003: a transcript line, no audio.
    shutil.copy(good, chapter / "1089-134691-0004.flac")  # audio, no transcript line
    shutil.copy(good, chapter / "1089-134691-0005.flac")  # its line is not UTF-8
    tone = (0.3 * np.sin(np.arange(8000) / 5.0)).astype(np.float32)
    soundfile.write(chapter / "1089-134691-0006.wav", tone, 16000, subtype="PCM_16")
    (chapter / "1089-134691.trans.txt").write_bytes(
        b"1089-134691-0000 HE COULD WAIT NO LONGER\n"
        b"1089-134691-0001 CORRUPT AUDIO\n"
        b"1089-134691-0002 EMPTY AUDIO\n"
        b"1089-134691-0003 NO AUDIO FOR THIS LINE\n"
        b"1089-134691-0005 CAF\xe9 IN LATIN-1\n"
        b"1089-134691-0006 A WAVE FILE\n"
    )
    return root


def test_bad_inputs_are_skipped_and_counted(tmp_path, librispeech_flac):
    report = SplitReport()
    tree = _bad_tree(tmp_path, librispeech_flac)
    utterances = list(reader.read_librispeech_tree(tree, ["test-clean"], report, workers=2))
    assert [(u.utterance_id, u.transcript) for u in utterances] == [
        ("1089-134691-0000", "HE COULD WAIT NO LONGER"),
        ("1089-134691-0006", "A WAVE FILE"),
    ]
    assert report.skipped == {
        "corrupt audio": 1,
        "empty audio": 1,
        "transcript line with no audio": 1,
        "audio with no transcript": 1,
        "non-UTF-8 transcript": 1,
    }


def test_missing_subset_is_a_clear_error(librispeech_mini):
    with pytest.raises(DataError, match="'dev-clean' is not in .*extract dev-clean.tar.gz"):
        list(reader.read_librispeech_tree(librispeech_mini, ["dev-clean"], SplitReport()))
