"""Loading a trained model from a trainer's output_dir (decoder, exporter)."""

from __future__ import annotations

import tensorflow as tf

from t2t_lite import registry
from t2t_lite.data.problem import Problem, dummy_batch
from t2t_lite.hparam import HParams
from t2t_lite.models.checkpointable import model_weights
from t2t_lite.training import run_dir


class CheckpointNotFoundError(FileNotFoundError):
    """No checkpoint where one was expected; the message says where it looked."""


def resolve_checkpoint(output_dir: str, checkpoint_path: str | None = None) -> str:
    """A checkpoint prefix: `checkpoint_path` (a prefix or a directory) or output_dir's latest."""
    where = checkpoint_path or output_dir
    if tf.io.gfile.isdir(where):
        latest = tf.train.latest_checkpoint(where)
        if latest is None:
            raise CheckpointNotFoundError(
                f"{where} holds no checkpoint; train first or pass --checkpoint_path."
            )
        return latest
    if not tf.io.gfile.exists(where + ".index"):
        raise CheckpointNotFoundError(f"checkpoint {where} does not exist.")
    return where


def load_trained_model(
    output_dir: str,
    problem: Problem,
    data_dir: str,
    model_name: str = "transformer",
    checkpoint_path: str | None = None,
):
    """Returns `(model, hparams, checkpoint)`: the run's model with restored weights."""
    hparams: HParams = run_dir.load_hparams(output_dir)
    checkpoint = resolve_checkpoint(output_dir, checkpoint_path)
    model = registry.model(model_name).from_hparams(hparams, **problem.model_kwargs(data_dir))
    model(dummy_batch(problem.batch_spec(hparams)))
    restored = tf.train.Checkpoint(model=model_weights(model)).restore(checkpoint)
    restored.expect_partial().assert_existing_objects_matched()
    return model, hparams, checkpoint
