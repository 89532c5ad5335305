"""t2t-lite-trainer with a streaming set on real LibriSpeech audio: it
computes the normalization prior from the training data at its start, keeps
it in hparams.json, and a resumed run reads it back instead."""

import json

from t2t_lite.data.feature_config import PRIOR_MEAN, PRIOR_MEAN_SQUARE
from tests.helpers import TINY_SPEECH_RUN, problem_source, run_command, write_usr_dir


def test_the_trainer_keeps_the_prior_and_a_resume_reads_it(tmp_path, librispeech_mini):
    usr = write_usr_dir(
        tmp_path / "usr",
        problem_source(
            "LibrispeechMini",
            "t2t_lite.problems.librispeech.Librispeech",
            subsets={
                "train": ("test-clean", "test-other"),
                "dev": ("test-clean",),
                "test": ("test-clean",),
            },
            num_shards={"train": 1, "dev": 1, "test": 1},
        ),  # fmt: skip
    )
    common = [f"--t2t_usr_dir={usr}", "--problem=librispeech_mini", f"--data_dir={tmp_path}/data"]
    datagen = run_command("t2t-lite-datagen", *common, f"--tmp_dir={librispeech_mini}")
    assert datagen.returncode == 0, datagen.stderr[-3000:]

    def train(steps):
        return run_command(
            "t2t-lite-trainer", *common, f"--output_dir={tmp_path}/out", "--schedule=train",
            "--hparams_set=transformer_speech_small_streaming",
            f"--hparams={TINY_SPEECH_RUN}", f"--train_steps={steps}", "--random_seed=1",
        )  # fmt: skip

    first = train(1)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "normalization prior: feature statistics of 2 training utterances" in first.stdout
    saved = json.loads((tmp_path / "out" / "hparams.json").read_text())
    assert len(saved[PRIOR_MEAN]) == len(saved[PRIOR_MEAN_SQUARE]) == 80 * 3
    assert saved["audio_normalization_prior_frames"] == 100
    # The set's word boundary head needs word times, which this corpus lacks:
    # it is left out, said, and saved so (a resume and the decoder agree).
    assert "librispeech_mini has no word times: training without the word boundary head" in (
        first.stdout
    )
    assert saved["word_boundary_loss_weight"] == 0.0

    resumed = train(2)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "normalization prior" not in resumed.stdout  # read from hparams.json
    assert json.loads((tmp_path / "out" / "hparams.json").read_text()) == saved
