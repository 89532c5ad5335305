"""Loading a trained model from a trainer's output_dir (decoder, exporter)."""

from __future__ import annotations

import dataclasses

import tensorflow as tf

from t2t_lite import run_dir
from t2t_lite.data.problem import Problem
from t2t_lite.decoding.run_config import RunConfig
from t2t_lite.hparam import HParams
from t2t_lite.models.build_model import build_model
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


@dataclasses.dataclass(frozen=True)
class TrainedRun:
    """A trainer's run: where it is and what it was, ready to restore.

    The decoder, the exporters, an LM for fusion and the scripts each take
    one and call `restored_model()`.

    Args:
        output_dir: the trainer's output directory (hparams.json, checkpoints).
        problem: the run's problem.
        hparams: the run's hparams (`run_dir.load_hparams(output_dir)`; `of`
            reads them).
        model_name: the registered model.
        data_dir: the problem's data directory (for vocabularies).
        checkpoint_path: a checkpoint prefix or directory; default the latest
            checkpoint of `output_dir`.

    Example:

    ```python
    run = TrainedRun.of("/runs/asr", registry.problem("librispeech"), data_dir="/data")
    model, checkpoint = run.restored_model()
    ```
    """

    output_dir: str
    problem: Problem
    hparams: HParams
    model_name: str = "transformer"
    data_dir: str | None = None
    checkpoint_path: str | None = None

    @classmethod
    def of(cls, output_dir: str, problem: Problem, **fields) -> TrainedRun:
        """The run in `output_dir`, its hparams read from its hparams.json.

        Raises:
            FileNotFoundError: `output_dir` holds no hparams.json.
        """
        return cls(output_dir, problem, run_dir.load_hparams(output_dir), **fields)

    @property
    def run_config(self) -> RunConfig:
        """What decoding reads of the run's hparams (`RunConfig`), typed once.

        It takes the problem's hparams that a run saved before them lacks.
        """
        self.problem.add_hparams(self.hparams)
        return RunConfig.from_hparams(self.hparams)

    def restored_model(self):
        """`(model, checkpoint)`: the run's model with its checkpoint's weights.

        Raises:
            CheckpointNotFoundError: no checkpoint where one was asked for.
            CheckpointMismatchError: the checkpoint does not fit the model.
        """
        self.problem.add_hparams(self.hparams)  # a run saved before the problem had an hparam
        checkpoint = resolve_checkpoint(self.output_dir, self.checkpoint_path)
        model = build_model(self.problem, self.hparams, self.model_name, self.data_dir)
        restore_weights(model, checkpoint)
        return model, checkpoint
