"""The word-time accuracy script (`scripts/word_time_accuracy.py`) at its
smallest size: a tiny built-in corpus, a model trained for a few steps, the
report complete. Its figures are not asserted (the model has barely
trained); its pairing and summary are, on known words."""

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from t2t_lite.decoding.subtitles import TimedWord

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "word_time_accuracy.py"
TINY_SPEECH = (
    "hidden_size=32,filter_size=64,num_heads=2,num_encoder_layers=1,num_decoder_layers=1,"
    "batch_size=400000,learning_rate_warmup_steps=10"
)


def load_script():
    spec = importlib.util.spec_from_file_location("word_time_accuracy", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_pairs_only_agreeing_words_and_summarizes_them():
    script = load_script()
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


@pytest.mark.slow
def test_runs_on_a_tiny_trained_run(tmp_path):
    usr = tmp_path / "usr"
    usr.mkdir()
    (usr / "__init__.py").write_text(
        textwrap.dedent(
            """
            from t2t_lite import registry
            from t2t_lite.problems.spoken_synth import SpokenSynth

            @registry.register_problem
            class TinySpokenSynth(SpokenSynth):
                split_sizes = {"train": 24, "dev": 4, "test": 4}
                num_shards = {"train": 1, "dev": 1, "test": 1, "long": 1}
            """
        )
    )
    run = lambda *args: subprocess.run(args, capture_output=True, text=True, timeout=900)  # noqa: E731
    common = [f"--t2t_usr_dir={usr}", "--problem=tiny_spoken_synth"]
    common.append(f"--data_dir={tmp_path / 'data'}")
    datagen = run("t2t-lite-datagen", *common, f"--tmp_dir={tmp_path / 'raw'}")
    assert datagen.returncode == 0, datagen.stderr[-3000:]
    train = run(
        "t2t-lite-trainer", *common, f"--output_dir={tmp_path / 'out'}",
        "--hparams_set=transformer_speech_small", f"--hparams={TINY_SPEECH}",
        "--train_steps=30", "--schedule=train", "--random_seed=1",
    )  # fmt: skip
    assert train.returncode == 0, train.stderr[-3000:]
    report_path = tmp_path / "report.json"
    result = subprocess.run(
        [sys.executable, str(SCRIPT), *common, f"--output_dir={tmp_path / 'out'}",
         "--examples=2", "--decode_hparams=beam_size=1,batch_size=2",
         f"--output_json={report_path}"],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(report_path.read_text())
    assert report["split"] == "test" and report["utterances"] == 2
    assert (
        report["reference_words"] >= 4 and 0 <= report["paired_words"] <= report["reference_words"]
    )
