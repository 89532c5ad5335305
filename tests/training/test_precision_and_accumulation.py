"""float16 with loss scaling and gradient accumulation, through the Trainer.

Both are T2T hparams (`activation_dtype=float16`,
`optimizer_multistep_accumulate_steps`) that only show their bugs in a real
run: the loss-scale variable, and the step that counts batches while Keras's
`iterations` counts updates.
"""

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import run_dir
from t2t_lite.hparam import create_hparams
from t2t_lite.problems.algorithmic import AlgorithmicIdentityBinary40
from t2t_lite.training.build_trainer import build_trainer
from t2t_lite.training.trainer import TrainerConfig

TINY = "hidden_size=32,filter_size=64,num_heads=2,batch_size=512,learning_rate_warmup_steps=10"


class SmallIdentity(AlgorithmicIdentityBinary40):
    split_sizes = {"train": 2000, "dev": 64, "test": 64}
    num_shards = {"train": 1, "dev": 1, "test": 1}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("data")
    SmallIdentity().generate_data(str(path), str(path / "raw"))
    return str(path)


def make_trainer(data_dir, output_dir, overrides, train_steps):
    problem = SmallIdentity()
    hparams = create_hparams("transformer_tiny", f"{TINY},{overrides}", problem)
    config = TrainerConfig(
        output_dir=str(output_dir),
        data_dir=data_dir,
        train_steps=train_steps,
        eval_steps=2,
        save_checkpoints_steps=train_steps,
        iterations_per_loop=10,
        log_step_count_steps=10,
        random_seed=3,
    )
    run_dir.save_or_check_hparams(config.output_dir, hparams)
    return build_trainer(problem, hparams, "transformer", config, tf.distribute.get_strategy())


def test_float16_trains_with_a_dynamic_loss_scale(data_dir, tmp_path):
    trainer = make_trainer(data_dir, tmp_path / "run", "activation_dtype=float16", 60)
    assert trainer.model.dtype_policy.name == "mixed_float16"
    before = trainer.evaluate()["loss"]
    trainer.train()
    assert trainer.step == 60
    after = trainer.evaluate()["loss"]
    assert np.isfinite(after) and after < before, (before, after)
    assert float(trainer.optimizer.dynamic_scale) > 0


def test_accumulation_counts_batches_and_updates_every_k(data_dir, tmp_path):
    trainer = make_trainer(data_dir, tmp_path / "run", "optimizer_multistep_accumulate_steps=4", 6)
    weights = [v.numpy().copy() for v in trainer.model.trainable_variables]
    trainer.train()
    # Six batches, one update (after the fourth): train_steps counts batches
    # as T2T's global step did; the schedule sees updates.
    assert trainer.step == 6
    assert int(trainer.optimizer.iterations) == 1
    assert any(
        not np.array_equal(w, v.numpy())
        for w, v in zip(weights, trainer.model.trainable_variables, strict=True)
    )
    resumed = make_trainer(data_dir, tmp_path / "run", "optimizer_multistep_accumulate_steps=4", 8)
    assert resumed.restore() == 6
    resumed.train()
    assert resumed.step == 8 and int(resumed.optimizer.iterations) == 2
