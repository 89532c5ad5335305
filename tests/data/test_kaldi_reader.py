"""Tests for the Kaldi data-directory reader, on real speechocean762 audio."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest
import soundfile

from t2t_lite.data import kaldi_reader
from t2t_lite.data.audio_io import read_audio
from t2t_lite.data.problem import DataError, SplitReport
from t2t_lite.data.speech_problem import Speaker
from t2t_lite.data.utterance_files import SKIP_CORRUPT_AUDIO, read_utterance_files


def _write(directory: pathlib.Path, name: str, lines: list[str]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_text("".join(line + "\n" for line in lines), "utf-8")


def test_the_corpus_own_directory_lists_every_utterance_with_its_speaker(speechocean762_mini):
    root = speechocean762_mini / "speechocean762"
    report = SplitReport()
    files = kaldi_reader.list_kaldi_dir(str(root / "test"), str(root), report)
    assert not report.skipped
    assert len(files) == 10
    assert [f.utterance_id for f in files] == sorted(f.utterance_id for f in files)
    first = next(f for f in files if f.utterance_id == "000030012")
    assert first.transcript == "MARK IS GOING TO SEE ELEPHANT"
    assert first.speaker == Speaker("0003", 6, "m")
    assert pathlib.Path(first.path).is_file()
    utterances = list(read_utterance_files(files, report, "test", workers=2))
    assert len(utterances) == 10
    waveform, _ = soundfile.read(first.path, dtype="float32")
    np.testing.assert_allclose(utterances[0].waveform, waveform, atol=1 / 32767)
    assert utterances[0].speaker == first.speaker


def test_bad_lines_are_skipped_and_counted_and_any_rate_is_read(tmp_path, speechocean762_mini):
    wav = next((speechocean762_mini / "speechocean762/WAVE").rglob("*.WAV"))
    waveform = read_audio(wav)
    # The same recording at 44.1 kHz stereo, as FLAC, by absolute path.
    stereo = tmp_path / "stereo.flac"
    soundfile.write(stereo, np.stack([waveform, waveform], axis=1), 16000)
    resampled = tmp_path / "fast.flac"
    soundfile.write(resampled, read_audio(stereo, sample_rate=44100), 44100)
    (tmp_path / "audio").mkdir()
    (tmp_path / "audio/broken.wav").write_bytes(b"RIFF not really")
    (tmp_path / "audio/good.wav").write_bytes(wav.read_bytes())
    data = tmp_path / "data/train"
    _write(
        data,
        "text",
        [
            "u1 HELLO THERE",
            "u2\tTABS  AND   SPACES",
            "u3 PIPED",
            "u4 NO AUDIO",
            "u5 BROKEN",
            "u6",
            "u1 DUPLICATE",
        ],
    )
    _write(
        data,
        "wav.scp",
        [
            "u1 audio/good.wav",
            f"u2 {resampled}",
            "u3 sox audio/good.wav -t wav - |",
            "u5 audio/broken.wav",
            "u6 audio/good.wav",
            "u7 audio/good.wav",
        ],
    )
    _write(data, "utt2spk", ["u1 s1", "u2 s2"])
    _write(data, "spk2age", ["s1 9"])
    _write(data, "spk2gender", ["s1 f", "s2 m"])
    report = SplitReport()
    files = kaldi_reader.list_kaldi_dir(str(data), str(tmp_path), report)
    assert [f.utterance_id for f in files] == ["u1", "u2", "u5"]
    assert files[1].transcript == "TABS  AND   SPACES"
    assert files[0].speaker == Speaker("s1", 9, "f")
    assert files[1].speaker == Speaker("s2", None, "m")
    assert files[2].speaker is None
    assert dict(report.skipped) == {
        kaldi_reader.SKIP_DUPLICATE: 1,
        kaldi_reader.SKIP_EMPTY_TRANSCRIPT: 1,
        kaldi_reader.SKIP_COMMAND: 1,
        kaldi_reader.SKIP_NO_AUDIO: 1,
        kaldi_reader.SKIP_NO_TRANSCRIPT: 1,  # u7
    }
    utterances = list(read_utterance_files(files, report, "train", workers=1))
    assert [u.utterance_id for u in utterances] == ["u1", "u2"]
    assert report.skipped[SKIP_CORRUPT_AUDIO] == 1
    # 44.1 kHz stereo comes back as the 16 kHz mono recording it was made from.
    assert abs(len(utterances[1].waveform) - len(waveform)) <= 2
    n = min(len(waveform), len(utterances[1].waveform))
    assert np.corrcoef(utterances[1].waveform[:n], waveform[:n])[0, 1] > 0.99


def test_segments_cut_utterances_out_of_recordings(tmp_path, speechocean762_mini):
    wav = next((speechocean762_mini / "speechocean762/WAVE").rglob("*.WAV"))
    whole = read_audio(wav)
    data = tmp_path / "data"
    _write(data, "wav.scp", [f"rec {wav}"])
    _write(data, "segments", ["a rec 0.0 0.5", "b rec 0.5 -1", "c rec 0.7 0.2"])
    _write(data, "text", ["a FIRST", "b REST", "c BACKWARDS"])
    report = SplitReport()
    files = kaldi_reader.list_kaldi_dir(str(data), str(tmp_path), report)
    assert report.skipped == {kaldi_reader.SKIP_BAD_SEGMENT: 1, kaldi_reader.SKIP_NO_AUDIO: 1}
    first, rest = read_utterance_files(files, report, "x", workers=1)
    np.testing.assert_array_equal(first.waveform, whole[:8000])
    np.testing.assert_array_equal(rest.waveform, whole[8000:])


def test_a_directory_without_text_or_wav_scp_is_one_sentence(tmp_path):
    _write(tmp_path, "text", ["u1 HELLO"])
    with pytest.raises(DataError, match=r"has no wav\.scp file"):
        kaldi_reader.list_kaldi_dir(str(tmp_path), str(tmp_path), SplitReport())
