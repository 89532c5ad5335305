"""The speech path end to end in the library: the small speech hparams set
trains on (a small copy of) the built-in spoken corpus, and its dev token
accuracy rises between an evaluation just after warm-up and one 550 steps later,
while real decoding reads some of the audio."""

import pytest
import tensorflow as tf

from t2t_lite import run_dir
from t2t_lite.decoding.evaluation.evaluator import DecodeEvaluator
from t2t_lite.decoding.run_config import RunConfig
from t2t_lite.hparam import create_hparams
from t2t_lite.problems.spoken_synth import SpokenSynth
from t2t_lite.training.build_trainer import build_trainer
from t2t_lite.training.trainer import TrainerConfig


class SmallSpokenSynth(SpokenSynth):
    split_sizes = {"train": 240, "dev": 24, "test": 8}
    num_shards = {"train": 1, "dev": 1, "test": 1}


@pytest.mark.slow
def test_small_speech_set_trains_and_dev_accuracy_goes_up(tmp_path):
    problem = SmallSpokenSynth()
    data_dir = str(tmp_path / "data")
    problem.generate_data(data_dir, str(tmp_path / "raw"))
    hparams = create_hparams("transformer_speech_small", "learning_rate_warmup_steps=100", problem)
    config = TrainerConfig(
        output_dir=str(tmp_path / "run"),
        data_dir=data_dir,
        train_steps=150,
        eval_steps=3,
        save_checkpoints_steps=700,
        iterations_per_loop=50,
        log_step_count_steps=100,
        random_seed=5,
    )
    run_dir.save_or_check_hparams(config.output_dir, hparams)
    evaluator = DecodeEvaluator.factory(
        run_config=RunConfig.from_hparams(hparams),
        problem=problem,
        data_dir=data_dir,
        max_examples=24,
    )
    trainer = build_trainer(
        problem,
        hparams,
        "transformer",
        config,
        tf.distribute.get_strategy(),
        make_eval_decoder=evaluator,
    )
    trainer.train(evaluate_every=150)
    # Go on to step 700, as a user re-running with a larger --train_steps
    # would. The first evaluation comes just after warm-up rather than at
    # mid-run: from 350 to 700 steps dev accuracy on 24 utterances sometimes
    # plateaus (CI on 2026-11-25 measured 0.797 at both), so that pair could
    # not tell a learning model from a stuck one.
    config.train_steps = 700
    trainer.train(evaluate_every=550)
    results = run_dir.read_eval_results(config.output_dir)
    assert [r["step"] for r in results] == [150, 700]
    first, second = results
    # Teacher-forced token accuracy is compared: on 240 utterances the dev
    # cross-entropy can rise (over-confidence) while the model improves, and
    # with T2T's front end (layer norm + ReLU at its end) greedy decoding is
    # not yet informative at 700 steps (measured WER 0.96 -> 1.01 while
    # accuracy rose 0.757 -> 0.824 and loss fell 0.780 -> 0.692); the quick
    # start's 3,000 steps show WER falling (README).
    assert second["accuracy"] > first["accuracy"], (first, second)
    assert second["decode_cer"] < 0.9, second  # decoding reads some of the audio
