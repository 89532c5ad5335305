"""t2t-lite-decoder and t2t-lite-avg-checkpoints on a tiny speech model trained on
real LibriSpeech audio (the four utterances of shared/testdata)."""

import json
import re
import sys

import jiwer
import numpy as np
import pytest
import soundfile

from t2t_lite.data.audio_io import read_audio
from t2t_lite.decoding.audio.long_form import piece_ends
from t2t_lite.decoding.timing.word_confidence import CALIBRATION_FILE, save_calibration
from tests.helpers import SCRIPTS, TINY_SPEECH_RUN, run_command, train_user_problem


@pytest.fixture(scope="module")
def trained(tmp_path_factory, librispeech_mini):
    """(usr_dir, data_dir, output_dir) of a 150-step run with checkpoints 50, 100, 150."""
    return train_user_problem(
        tmp_path_factory.mktemp("decoder"),
        "LibrispeechMini",
        "t2t_lite.problems.librispeech.Librispeech",
        ["--hparams_set=transformer_speech_small",
         f"--hparams={TINY_SPEECH_RUN},learning_rate_warmup_steps=20", "--train_steps=150",
         "--save_checkpoints_steps=50", "--iterations_per_loop=50", "--random_seed=3"],
        tmp_dir=librispeech_mini,
        subsets={
            "train": ("train-clean-100",),
            "dev": ("test-other", "test-clean"),
            "test": ("test-clean",),
        },
        num_shards={"train": 1, "dev": 1, "test": 1},
    )  # fmt: skip


def decoder(trained, *extra):
    usr, data_dir, output_dir = trained
    return run_command(
        "t2t-lite-decoder",
        f"--t2t_usr_dir={usr}",
        "--problem=librispeech_mini",
        f"--data_dir={data_dir}",
        f"--output_dir={output_dir}",
        "--decode_hparams=beam_size=2,alpha=0.6,batch_size=2",
        *extra,
    )


def test_reported_wer_is_jiwers_wer_over_the_written_lines(trained):
    _, _, output_dir = trained
    result = decoder(trained, "--dataset_split=dev")
    assert result.returncode == 0, result.stderr[-3000:]
    written = output_dir / "decode_dev.txt"
    hypotheses = written.read_text().splitlines()
    references = (output_dir / "decode_dev.txt.targets").read_text().splitlines()
    assert len(hypotheses) == len(references) == 2
    assert any(r == "HE COULD WAIT NO LONGER" for r in references)
    # The utterance ids, in record order, trace each line back (T2T's .inputs).
    ids = (output_dir / "decode_dev.txt.inputs").read_text().splitlines()
    assert len(ids) == 2 and all(re.fullmatch(r"\d+-\d+-\d+", i) for i in ids)
    reported = float(re.search(r"WER ([0-9.]+)", result.stdout).group(1))
    assert reported == pytest.approx(jiwer.wer(references, hypotheses), abs=1e-4)
    metrics = json.loads((output_dir / "decode_dev.txt.metrics.json").read_text())
    assert metrics["wer"] == pytest.approx(jiwer.wer(references, hypotheses))
    assert metrics["cer"] == pytest.approx(jiwer.cer(references, hypotheses))


def test_decoding_audio_paths_matches_decoding_the_dataset(trained, tmp_path, librispeech_flac):
    _, _, output_dir = trained
    from_dataset = decoder(trained, "--dataset_split=test")
    assert from_dataset.returncode == 0, from_dataset.stderr[-3000:]
    dataset_hypothesis = (output_dir / "decode_test.txt").read_text().splitlines()
    paths = tmp_path / "paths.txt"
    paths.write_text(f"{librispeech_flac}\n")
    from_file = decoder(
        trained, f"--decode_from_file={paths}", f"--decode_to_file={tmp_path / 'out.txt'}"
    )
    assert from_file.returncode == 0, from_file.stderr[-3000:]
    assert (tmp_path / "out.txt").read_text().splitlines() == dataset_hypothesis


def test_silence_and_long_recordings_from_files(trained, tmp_path, librispeech_flac):
    """A silent file decodes to an empty line; a recording longer than
    segment_seconds is cut in its pause and transcribed as its two pieces
    are, texts joined (nothing truncated)."""
    short = read_audio(librispeech_flac)
    twice = np.concatenate([short, np.zeros(8000, np.float32), short])
    (cut, end) = piece_ends(twice, len(twice), 16000, 3.0).numpy()
    # In the pause: the inserted 0.5 s plus the utterance's own quiet start.
    assert len(short) < cut < len(short) + 16000 and end == len(twice)
    audio = {"silence": np.zeros(16000), "twice": twice, "one": twice[:cut], "two": twice[cut:]}
    for name, samples in audio.items():
        soundfile.write(tmp_path / f"{name}.wav", samples.astype(np.float32), 16000)
    paths = tmp_path / "paths.txt"
    paths.write_text("".join(f"{tmp_path / name}.wav\n" for name in audio))
    out = tmp_path / "out.txt"
    result = decoder(
        trained,
        f"--decode_from_file={paths}",
        f"--decode_to_file={out}",
        "--decode_hparams=beam_size=2,alpha=0.6,batch_size=2,segment_seconds=3",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    silence, twice, one, two = out.read_text().split("\n")[:4]
    assert silence == ""
    assert twice == " ".join(t for t in (one, two) if t)


def test_bad_audio_path_is_one_clear_line(trained, tmp_path):
    paths = tmp_path / "paths.txt"
    paths.write_text(str(tmp_path / "missing.flac") + "\n")
    result = decoder(trained, f"--decode_from_file={paths}")
    assert result.returncode == 1
    assert "missing.flac" in result.stderr.strip().splitlines()[-1]
    assert not (tmp_path / "paths.txt.decodes").exists()


def test_averaged_checkpoint_is_accepted_by_the_decoder(trained):
    _, _, output_dir = trained
    result = run_command(
        "t2t-lite-avg-checkpoints", f"--output_dir={output_dir}", "--num_last_checkpoints=3"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "averaged 3 checkpoints (ckpt-50 .. ckpt-150)" in result.stdout
    decoded = decoder(
        trained,
        "--dataset_split=test",
        f"--checkpoint_path={output_dir / 'averaged'}",
        f"--decode_to_file={output_dir / 'avg_decodes.txt'}",
    )
    assert decoded.returncode == 0, decoded.stderr[-3000:]
    assert "[checkpoint ckpt-150-avg3]" in decoded.stdout
    too_many = run_command(
        "t2t-lite-avg-checkpoints", f"--output_dir={output_dir}", "--num_last_checkpoints=9"
    )
    assert too_many.returncode == 1
    assert "asked to average 9 checkpoints" in too_many.stderr


def test_degenerate_audio_files_decode_to_empty_lines(trained, tmp_path, librispeech_flac):
    """No samples, one sample, less than a frame, all NaN: each an empty line
    (as the SavedModel answers them), beside a real utterance decoded as alone."""
    files = {
        "no_samples": np.zeros(0, np.float32),
        "one_sample": np.full(1, 0.5, np.float32),
        "under_a_frame": np.full(100, 0.25, np.float32),
        "all_nan": np.full(4000, np.nan, np.float32),
    }
    for name, samples in files.items():
        soundfile.write(tmp_path / f"{name}.wav", samples, 16000, subtype="FLOAT")
    paths = tmp_path / "paths.txt"
    paths.write_text(
        "".join(f"{tmp_path / name}.wav\n" for name in files) + f"{librispeech_flac}\n"
    )
    alone_paths = tmp_path / "alone.txt"
    alone_paths.write_text(f"{librispeech_flac}\n")
    result = decoder(trained, f"--decode_from_file={paths}", f"--decode_to_file={tmp_path / 'o'}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "2 audio files with no sound decoded as empty lines" in result.stdout
    alone = decoder(
        trained, f"--decode_from_file={alone_paths}", f"--decode_to_file={tmp_path / 'a'}"
    )
    assert alone.returncode == 0, alone.stderr[-3000:]
    lines = (tmp_path / "o").read_text().split("\n")
    assert lines[:4] == ["", "", "", ""]
    assert lines[4] == (tmp_path / "a").read_text().split("\n")[0] != ""


def test_word_times_and_subtitles_for_audio_files(trained, tmp_path, librispeech_flac):
    """With a CTC head, every decode writes `<out>.words.jsonl` (each line's
    words with times); --output_format writes one file per audio file."""
    short = read_audio(librispeech_flac)
    soundfile.write(tmp_path / "speech.wav", short, 16000)
    soundfile.write(tmp_path / "late.wav", np.concatenate([np.zeros(16000), short]), 16000)
    paths = tmp_path / "paths.txt"
    paths.write_text(f"{tmp_path / 'speech.wav'}\n\n{tmp_path / 'late.wav'}\n")
    out = tmp_path / "out" / "decoded.txt"
    result = decoder(
        trained, f"--decode_from_file={paths}", f"--decode_to_file={out}", "--output_format=srt"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "words.jsonl" in result.stdout and "2 .srt files" in result.stdout
    texts = out.read_text().split("\n")[:3]
    records = [json.loads(line) for line in (tmp_path / "out" / "decoded.txt.words.jsonl").open()]
    assert [r["text"] for r in records] == texts and records[1] == {"text": "", "words": []}
    assert records[0]["audio"] == str(tmp_path / "speech.wav")
    for record in (records[0], records[2]):
        assert [w["word"] for w in record["words"]] == record["text"].split()
    # One second of exact zeros first: the same words, one second later.
    assert records[2]["text"] == records[0]["text"]
    pairs = zip(records[0]["words"], records[2]["words"], strict=True)
    aligned = [(alone, late) for alone, late in pairs if alone["start"] >= 0]
    assert aligned, "no word to compare"
    for alone, late in aligned:
        assert late["start"] == pytest.approx(alone["start"] + 1.0, abs=2e-3)
        assert late["end"] == pytest.approx(alone["end"] + 1.0, abs=2e-3)
    srt = (tmp_path / "out" / "late.srt").read_text()
    if texts[2]:
        assert srt.startswith("1\n00:00:01,") and texts[2].split()[0] in srt
    assert (tmp_path / "out" / "speech.srt").exists()


def test_output_format_needs_audio_files(trained):
    result = decoder(trained, "--dataset_split=dev", "--output_format=vtt")
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert (
        last.startswith("t2t-lite-decoder: error: --output_format")
        and "Traceback" not in result.stderr
    )
    assert "--decode_from_file" in last


def test_hotwords_and_a_language_model_reach_the_search(trained, tmp_path, no_lm_run):
    """A listed word spelled out by the biased search, a fused LM accepted;
    a bad hotwords file or lm_dir is one line and exit 1."""
    _, _, output_dir = trained
    hotwords = tmp_path / "hotwords.txt"
    hotwords.write_text("zebra :20\n")
    base = "beam_size=2,alpha=0.6,batch_size=2"
    out = tmp_path / "biased.txt"
    result = decoder(
        trained, f"--decode_to_file={out}", f"--decode_hparams={base},hotwords_file={hotwords}"
    )
    assert result.returncode == 0, result.stderr
    assert "zebra" in out.read_text().lower()  # LibriSpeech's upper case: "ZEBRA"
    plain = tmp_path / "plain.txt"
    assert decoder(trained, f"--decode_to_file={plain}").returncode == 0
    assert "zebra" not in plain.read_text().lower()

    fused = tmp_path / "fused.txt"
    lm = f"--decode_hparams={base},lm_dir={no_lm_run.output_dir},lm_weight=0.3"
    result = decoder(trained, f"--decode_to_file={fused}", lm)
    assert result.returncode == 0, result.stderr
    assert fused.exists()

    hotwords.write_text("zebra :lots\n")
    cases = {
        f"hotwords_file={hotwords}": "line 1: the boost after ' :' must be a number > 0",
        f"hotwords_file={tmp_path / 'none.txt'}": "cannot be read",
        f"lm_dir={tmp_path},lm_weight=0.3": "holds no t2t-lite-trainer run",
    }
    for overrides, expected in cases.items():
        result = decoder(trained, f"--decode_hparams={base},{overrides}")
        assert result.returncode == 1
        lines = result.stderr.strip().splitlines()
        assert expected in lines[-1] and "Traceback" not in result.stderr


def test_word_confidences_are_calibrated_for_the_runs_checkpoint(
    trained, tmp_path, librispeech_flac
):
    """scripts/calibrate_word_confidence.py fits and stores an exponent for
    the checkpoint; the decoder raises each word's confidence to it unless
    decode hparam word_confidence_exponent is given."""
    usr, data_dir, output_dir = trained
    calibration = output_dir / CALIBRATION_FILE
    try:
        fitted = run_command(
            sys.executable, str(SCRIPTS / "calibrate_word_confidence.py"),
            f"--t2t_usr_dir={usr}", "--problem=librispeech_mini", f"--data_dir={data_dir}",
            f"--output_dir={output_dir}", "--check_split=test",
            "--decode_hparams=beam_size=1,batch_size=2",
        )  # fmt: skip
        assert fitted.returncode == 0, fitted.stderr[-3000:]
        assert "dev: " in fitted.stdout and "test: " in fitted.stdout
        assert "expected calibration error" in fitted.stdout
        stored = json.loads(calibration.read_text())
        assert stored["checkpoint"] == "ckpt-150" and stored["split"] == "dev"
        assert stored["words"] > 0 and stored["exponent"] > 0
        # An exponent far from 1, so that applying it shows.
        save_calibration(str(output_dir), 0.5, "ckpt-150", split="dev")
        paths = tmp_path / "paths.txt"
        paths.write_text(f"{librispeech_flac}\n")
        confidences = {}
        for name, decode_hparams in (("calibrated", ""), ("raw", ",word_confidence_exponent=1")):
            out = tmp_path / name
            result = decoder(
                trained, f"--decode_from_file={paths}", f"--decode_to_file={out}",
                f"--decode_hparams=beam_size=2,alpha=0.6,batch_size=2{decode_hparams}",
            )  # fmt: skip
            assert result.returncode == 0, result.stderr[-3000:]
            words = json.loads((tmp_path / f"{name}.words.jsonl").read_text())["words"]
            confidences[name] = np.array([w["confidence"] for w in words if w["start"] >= 0])
        assert confidences["raw"].size > 0, "no word to compare"
        np.testing.assert_allclose(confidences["calibrated"], confidences["raw"] ** 0.5, atol=2e-4)
        # A calibration file that is not one: one sentence naming it, exit 1.
        calibration.write_text("{not json")
        broken = decoder(trained, f"--decode_from_file={paths}", f"--decode_to_file={out}")
        assert broken.returncode == 1 and "Traceback" not in broken.stderr
        assert CALIBRATION_FILE in broken.stderr.strip().splitlines()[-1]
    finally:
        calibration.unlink(missing_ok=True)  # the other tests decode raw
