"""Decoding batches and datasets with a trained model (shared by eval and decoder).

`decode_length` is static (the cache has a fixed shape), chosen per batch
as T2T does: the input length plus `extra_length`, capped by
`max_decode_length` (or the hparams' `max_target_seq_length`, else 256),
rounded up to a multiple of 16 so that few lengths need tracing.
"""

from __future__ import annotations

import math

import numpy as np
import tensorflow as tf

from t2t_lite.decoding.beam_search import beam_search
from t2t_lite.hparam import HParams

LENGTH_QUANTUM = 16
_DEFAULT_CAP = 256


def decode_hparams(overrides: str = "") -> HParams:
    """T2T's decode hparams (`--decode_hparams`), with its defaults."""
    return HParams(
        beam_size=4,
        alpha=0.6,
        extra_length=50,
        batch_size=16,
        return_beams=False,
        max_decode_length=0,  # 0: hparams.max_target_seq_length, else 256
    ).parse(overrides)


class BatchDecoder:
    """Beam search (greedy when beam_size is 1) over batches of model features.

    Args:
        model: a `Transformer` (anything with `initial_decode_cache`,
            `decode_step`, `input_modality` and `target_vocab_size`).
        hparams: the model's hparams (for `max_target_seq_length`).
        decode_hp: from `decode_hparams`.

    Call arguments:
        features: a batch of model features ("targets" is ignored).

    Returns:
        `(ids [batch, beams, length] int32, scores [batch, beams] float32)`
        as NumPy arrays, best beam first.
    """

    def __init__(self, model, hparams: HParams, decode_hp: HParams):
        if model.input_modality is None:
            raise ValueError("decoding needs a problem with inputs (a language model has none).")
        self.model = model
        self.decode_hp = decode_hp
        self.cap = decode_hp.max_decode_length or hparams.max_target_seq_length or _DEFAULT_CAP
        self._functions: dict[int, tf.types.experimental.PolymorphicFunction] = {}

    def decode_length(self, features: dict) -> int:
        input_length = int(features["inputs"].shape[1])
        if self.model.input_modality == "speech":
            input_length = math.ceil(input_length / 4)  # the front end's reduction
        wanted = input_length + self.decode_hp.extra_length
        wanted = LENGTH_QUANTUM * math.ceil(wanted / LENGTH_QUANTUM)
        return max(1, min(self.cap, wanted))

    def _function(self, decode_length: int):
        if decode_length not in self._functions:
            model, hp = self.model, self.decode_hp

            def search(features):
                cache = model.initial_decode_cache(features, decode_length)
                batch_size = tf.shape(cache["layer_0"]["self_attention"])[0]
                return beam_search(
                    lambda ids, step, states: model.decode_step(ids[:, -1], step, states),
                    tf.zeros([batch_size], tf.int32),
                    beam_size=hp.beam_size,
                    decode_length=decode_length,
                    vocab_size=model.target_vocab_size,
                    alpha=hp.alpha,
                    states=cache,
                )

            self._functions[decode_length] = tf.function(search, reduce_retracing=True)
        return self._functions[decode_length]

    def __call__(self, features: dict) -> tuple[np.ndarray, np.ndarray]:
        inputs = {k: v for k, v in features.items() if k != "targets"}
        ids, scores = self._function(self.decode_length(inputs))(inputs)
        return ids.numpy(), scores.numpy()


def decode_dataset(
    decoder: BatchDecoder, dataset: tf.data.Dataset, encoder, max_examples: int | None = None
) -> list[dict]:
    """Decodes `dataset` batches until `max_examples`; one dict per example:
    `hypothesis`, `reference`, `score` (and `beams`, every beam's text)."""
    results = []
    for features in dataset:
        ids, scores = decoder(features)
        references = features["targets"].numpy()
        for row in range(ids.shape[0]):
            results.append(
                {
                    "hypothesis": encoder.decode(ids[row, 0]),
                    "reference": encoder.decode(references[row]),
                    "score": float(scores[row, 0]),
                    "beams": [encoder.decode(beam) for beam in ids[row]],
                }
            )
            if max_examples is not None and len(results) >= max_examples:
                return results
    return results
