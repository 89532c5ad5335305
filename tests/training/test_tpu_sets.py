"""Every TPU hparams set trains under XLA with static shapes on a LibriSpeech-
layout tree (CPU, tiny sizes): the step Cloud TPU runs, as far as a CPU can
check it. Each set keeps its optimizer (T2T's Adafactor), schedule, broadcast
dropout and static-shape bucketing; only sizes and lengths are cut."""

import pathlib

import numpy as np
import pytest
import soundfile
import tensorflow as tf

from t2t_lite import run_dir
from t2t_lite.data import pipeline
from t2t_lite.data.problem import EVAL, TEST, TRAIN
from t2t_lite.hparam import create_hparams
from t2t_lite.problems.librispeech import LibrispeechCleanSmall
from t2t_lite.training import trainer as trainer_module
from t2t_lite.training.build_trainer import build_trainer
from tests.helpers import TINY_TRANSFORMER

TPU_SETS = [
    "transformer_tpu",
    "transformer_librispeech_tpu",
    "transformer_librispeech_tpu_v1",
    "transformer_librispeech_tpu_v2",
]
# Sizes cut for two CPU cores; lengths cut to the tree's (<= 5.2 s, 96
# bytes). transformer_tpu is a text set: its max_length (64 tokens) is
# raised to speech lengths like the LibriSpeech sets', in frames x mel bins.
# One length bucket: each XLA compile of the step costs ~30 CPU seconds even
# at this size, so one shape per set (the sets' own 4 buckets are checked
# below without compiling; tests/cli/test_trainer.py compiles several shapes).
TINY = (
    f"{TINY_TRANSFORMER},"
    "num_encoder_layers=1,num_decoder_layers=1,use_fixed_batch_size=true,batch_size=2,"
    "max_length=41600,max_input_seq_length=520,max_target_seq_length=96,"
    "static_length_buckets=1,learning_rate_warmup_steps=100"
)
STEPS = 10
LOOP = 5


class TreeLibrispeech(LibrispeechCleanSmall):
    num_shards = {TRAIN: 1, EVAL: 1, TEST: 1}


def write_tree(root: pathlib.Path, mini: pathlib.Path, sizes: dict, seed: int = 0) -> None:
    """A LibriSpeech tree of 2-6 s utterances: one or two of the real `mini`
    clips (2.1-2.5 s) joined, with their transcripts."""
    clips = []
    for transcripts in sorted((mini / "LibriSpeech").rglob("*.trans.txt")):
        for line in transcripts.read_text().splitlines():
            utterance_id, text = line.split(" ", 1)
            audio, _ = soundfile.read(transcripts.parent / f"{utterance_id}.flac", dtype="float32")
            if audio.size < 3 * 16000:
                clips.append((audio, text))
    rng = np.random.default_rng(seed)
    for subset, count in sizes.items():
        chapter = root / "LibriSpeech" / subset / "19" / "198"
        chapter.mkdir(parents=True)
        lines = []
        for index in range(count):
            chosen = [clips[i] for i in rng.integers(len(clips), size=1 + index % 2)]
            audio = np.concatenate([a * rng.uniform(0.5, 1.0) for a, _ in chosen])
            utterance_id = f"19-198-{index:04d}"
            soundfile.write(chapter / f"{utterance_id}.flac", audio, 16000, subtype="PCM_16")
            lines.append(f"{utterance_id} {' '.join(text for _, text in chosen)}")
        (chapter / "19-198.trans.txt").write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory, librispeech_mini):
    root = tmp_path_factory.mktemp("tpu_sets")
    write_tree(
        root / "raw", librispeech_mini, {"train-clean-100": 16, "dev-clean": 2, "test-clean": 2}
    )
    TreeLibrispeech().generate_data(str(root / "data"), str(root / "raw"))
    return str(root / "data")


@pytest.mark.slow
@pytest.mark.parametrize("hparams_set", TPU_SETS)
def test_tpu_set_trains_under_xla_with_static_shapes(hparams_set, data_dir, tmp_path, monkeypatch):
    problem = TreeLibrispeech()
    hparams = create_hparams(hparams_set, TINY, problem)
    assert hparams.optimizer == "Adafactor" and hparams.layer_prepostprocess_dropout_broadcast_dims
    losses = []
    make_loop = trainer_module.make_train_loop

    def recording_loop(*args):
        loop = make_loop(*args)

        def run(iterator, steps):
            totals = loop(iterator, steps)
            losses.append(float(totals["loss"]) / max(int(totals["steps"]), 1))
            return totals

        return run

    monkeypatch.setattr(trainer_module, "make_train_loop", recording_loop)
    config = trainer_module.TrainerConfig(
        output_dir=str(tmp_path / "run"),
        data_dir=data_dir,
        train_steps=STEPS,
        save_checkpoints_steps=STEPS,
        iterations_per_loop=LOOP,
        log_step_count_steps=STEPS,
        xla_compile=True,
        static_shapes=True,
        random_seed=1,
    )
    run_dir.save_or_check_hparams(config.output_dir, hparams)
    trainer = build_trainer(problem, hparams, "transformer", config, tf.distribute.get_strategy())
    trainer.train()
    assert trainer.step == STEPS and len(losses) == STEPS // LOOP
    assert all(np.isfinite(losses)), losses
    assert losses[-1] < losses[0], losses  # mean loss of steps 6-10 < of steps 1-5
    assert all(np.all(np.isfinite(w.numpy())) for w in trainer.model.weights)
    # At the set's own lengths, static mode makes 4 shapes, not T2T's 27-108 buckets.
    own = create_hparams(hparams_set, "", problem)
    assert len(pipeline.static_batch_shapes(problem, own)) == own.static_length_buckets == 4
