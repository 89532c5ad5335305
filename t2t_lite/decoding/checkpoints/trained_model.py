"""Loading a trained model from a trainer's output_dir (decoder, exporter)."""

from __future__ import annotations

import tensorflow as tf

from t2t_lite import run_dir
from t2t_lite.data.problem import Problem
from t2t_lite.hparam import HParams
from t2t_lite.models.build import build_model
from t2t_lite.models.checkpointable import model_weights


class CheckpointNotFoundError(FileNotFoundError):
    """No checkpoint where one was expected; the message says where it looked."""


class CheckpointMismatchError(ValueError):
    """The checkpoint does not hold every weight of the model built from hparams.json."""


def resolve_checkpoint(output_dir: str, checkpoint_path: str | None = None) -> str:
    """A checkpoint prefix: `checkpoint_path` (a prefix or a directory) or output_dir's latest."""
    where = checkpoint_path or output_dir
    if tf.io.gfile.isdir(where):
        latest = tf.train.latest_checkpoint(where)
        if latest is None:
            raise CheckpointNotFoundError(
                f"{where} holds no checkpoint: train first (t2t-lite-trainer) or pass "
                "--checkpoint_path=<checkpoint prefix or directory>."
            )
        return latest
    if not tf.io.gfile.exists(where + ".index"):
        raise CheckpointNotFoundError(
            f"checkpoint {where} does not exist (no {where}.index); pass a prefix such as "
            "<output_dir>/ckpt-1000, or a directory."
        )
    return where


def restore_weights(model, checkpoint: str) -> None:
    """Restores every model weight (not the optimizer) from a trainer checkpoint.

    Raises:
        CheckpointMismatchError: a weight of the model is not in the checkpoint,
            or has another shape there.
    """
    try:
        status = tf.train.Checkpoint(model=model_weights(model)).restore(checkpoint)
        status.expect_partial()  # the optimizer's slots and the step stay unread
        status.assert_existing_objects_matched()
    except (AssertionError, ValueError, tf.errors.OpError) as error:
        reason = " ".join(str(error).split())[:300] or type(error).__name__
        raise CheckpointMismatchError(
            f"checkpoint {checkpoint} does not match the model built from hparams.json "
            f"({reason}); use a checkpoint of the same run."
        ) from error


def load_trained_model(
    output_dir: str,
    problem: Problem,
    data_dir: str,
    model_name: str = "transformer",
    checkpoint_path: str | None = None,
):
    """Returns `(model, hparams, checkpoint)`: the run's model with restored weights."""
    hparams: HParams = run_dir.load_hparams(output_dir)
    problem.add_hparams(hparams)  # a run saved before the problem had an hparam
    checkpoint = resolve_checkpoint(output_dir, checkpoint_path)
    model = build_model(problem, hparams, model_name, data_dir)
    restore_weights(model, checkpoint)
    return model, hparams, checkpoint
