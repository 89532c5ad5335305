"""The word-time accuracy script (`scripts/word_time_accuracy.py`) at its
smallest size: a tiny built-in corpus, a model trained for a few steps, the
report complete. Its figures are not asserted (the model has barely
trained); its pairing and summary are, on known words."""

import json
import sys

import pytest

from t2t_lite.decoding.timing.subtitles import TimedWord
from tests.helpers import (
    SCRIPTS,
    TINY_SPEECH_RUN,
    load_script,
    problem_source,
    run_command,
    train_with_commands,
    write_usr_dir,
)

SCRIPT = "word_time_accuracy.py"


def test_pairs_only_agreeing_words_and_summarizes_them():
    script = load_script(SCRIPT)
    reference = [("go", 0.10, 0.30), ("to", 0.35, 0.45), ("bed", 0.50, 0.90)]
    hypothesis = [TimedWord("go", 0.12, 0.26, 0.9), TimedWord("two", 0.35, 0.45, 0.9),
                  TimedWord("bed", 0.62, 0.90, 0.9), TimedWord("now", -1, -1, 0)]  # fmt: skip
    pairs = script.paired_boundaries(reference, hypothesis)
    assert pairs == [((0.10, 0.30), (0.12, 0.26)), ((0.50, 0.90), (0.62, 0.90))]
    report = script.summarize(pairs, reference_words=3)
    assert report["paired_words"] == 2 and report["reference_words"] == 3
    assert report["start_mean_abs_ms"] == pytest.approx(70.0)  # 20 and 120 ms
    assert report["end_mean_abs_ms"] == pytest.approx(20.0)  # 40 and 0 ms
    assert report["start_mean_signed_ms"] == pytest.approx(70.0)
    assert report["end_mean_signed_ms"] == pytest.approx(-20.0)
    assert report["within_50ms"] == 0.75 and report["within_100ms"] == 0.75
    assert report["within_25ms"] == 0.5  # 20, 120, 40 and 0 ms
    assert report["start_within_25ms"] == 0.5 and report["end_within_25ms"] == 0.5
    assert report["start_within_100ms"] == 0.5 and report["end_within_50ms"] == 1.0


@pytest.mark.slow
def test_runs_on_a_tiny_trained_run(tmp_path):
    usr = write_usr_dir(
        tmp_path / "usr",
        problem_source(
            "TinySpokenSynth",
            "t2t_lite.problems.spoken_synth.SpokenSynth",
            split_sizes={"train": 24, "dev": 4, "test": 4},
            num_shards={"train": 1, "dev": 1, "test": 1, "long": 1},
        ),
    )
    data_dir, output_dir = train_with_commands(
        usr, "tiny_spoken_synth", tmp_path,
        "--hparams_set=transformer_speech_small",
        f"--hparams={TINY_SPEECH_RUN},learning_rate_warmup_steps=10",
        "--train_steps=30", "--random_seed=1",
        tmp_dir=tmp_path / "raw",
    )  # fmt: skip
    report_path = tmp_path / "report.json"
    result = run_command(
        sys.executable, str(SCRIPTS / SCRIPT),
        f"--t2t_usr_dir={usr}", "--problem=tiny_spoken_synth", f"--data_dir={data_dir}",
        f"--output_dir={output_dir}", "--examples=2", "--decode_hparams=beam_size=1,batch_size=2",
        f"--output_json={report_path}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(report_path.read_text())
    assert report["split"] == "test" and report["utterances"] == 2
    assert (
        report["reference_words"] >= 4 and 0 <= report["paired_words"] <= report["reference_words"]
    )
