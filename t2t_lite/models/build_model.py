"""Building the model a run trains: the one place the trainer, decoder and exporter create it."""

from __future__ import annotations

from t2t_lite import registry
from t2t_lite.data.problem import Problem, dummy_batch
from t2t_lite.hparam import HParams


def build_model(
    problem: Problem, hparams: HParams, model_name: str = "transformer", data_dir: str | None = ""
):
    """The registered model `model_name` for `problem` and `hparams`, its variables created.

    Every variable is created by one call on a dummy batch of the problem's
    shapes.

    Args:
        problem: gives the model's vocabulary sizes and input modality
            (`model_kwargs`) and its batch shapes.
        hparams: the run's hparams.
        model_name: a registered model (`--model`).
        data_dir: where the problem's vocabulary files are.
    """
    model = registry.model(model_name).from_hparams(hparams, **problem.model_kwargs(data_dir))
    model(dummy_batch(problem.batch_spec(hparams)), training=False)
    return model
