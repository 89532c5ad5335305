"""Decoding metrics of a dev subset, for the trainer's evaluations.

The trainer knows nothing of decoding: whoever builds it (the trainer CLI, a
test) hands it `DecodeEvaluator.factory(...)`, which it calls with its model
once the model exists, then calls the evaluator with a dev dataset at every
evaluation.
"""

from __future__ import annotations

import functools

import tensorflow as tf

from t2t_lite.data.problem import Problem
from t2t_lite.decoding.checkpoints.run_decode_config import check_language_model
from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.decoding.evaluation import scoring
from t2t_lite.decoding.run_config import RunConfig
from t2t_lite.decoding.search.model_search import BatchDecoder, decode_dataset

# Evaluation decodes greedily unless told otherwise: fast enough for every
# evaluation; the overrides (e.g. "ctc_weight=0.3") apply on top.
EVAL_DECODE_DEFAULTS = "beam_size=1"


class DecodeEvaluator:
    """Decodes up to `max_examples` dev examples and scores them as the decoder CLI does.

    Args:
        model: the trainer's model (a `Transformer` with inputs).
        run_config: the run's `RunConfig` (audio front end, length limits).
        problem: gives the metrics (`scoring.decode_metrics`) and the target
            encoder.
        data_dir: where the problem's vocabulary files are.
        decode_overrides: decode hparams over `EVAL_DECODE_DEFAULTS`.
        max_examples: how many dev examples each evaluation decodes.

    Call arguments:
        dataset: dev batches (with "targets").

    Returns:
        `{"decode_<metric>": value}`.

    Raises:
        ValueError (at construction): decode hparams the model cannot honour,
            so a run fails before training rather than at its first evaluation.
    """

    def __init__(
        self,
        model,
        run_config: RunConfig,
        problem: Problem,
        data_dir: str,
        decode_overrides: str = "",
        max_examples: int = 64,
    ):
        decode_config = DecodeConfig.parse(
            decode_overrides, base=DecodeConfig.parse(EVAL_DECODE_DEFAULTS)
        )
        self._encoder = problem.feature_encoders(data_dir)["targets"]
        self._decoder = BatchDecoder(
            model, run_config, decode_config, target_surfaces=self._encoder.token_surfaces()
        )
        check_language_model(self._decoder.decode_config, model)
        self._metrics = scoring.decode_metrics(problem)
        self.max_examples = max_examples

    @classmethod
    def factory(cls, **kwargs):
        """`model -> DecodeEvaluator`: every argument but the model, bound now."""
        return functools.partial(cls, **kwargs)

    def __call__(self, dataset: tf.data.Dataset) -> dict:
        decoded = decode_dataset(self._decoder, dataset, self._encoder, self.max_examples)
        scores = scoring.score(
            self._metrics, [d["hypothesis"] for d in decoded], [d["reference"] for d in decoded]
        )
        return {f"decode_{name}": value for name, value in scores.items()}
