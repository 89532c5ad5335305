"""Decoding with a trained model: the one search eval, the decoder CLI and the SavedModel share.

`model_search` encodes a batch once and runs, as the decode hparams say:

- beam search with the attention decoder (T2T's; greedy with beam_size 1),
- joint CTC/attention beam search when `0 < ctc_weight < 1` (ESPnet's hybrid
  decoding: each extension scored `(1 - w) * attention + w * CTC prefix`),
- CTC greedy decoding when `ctc_weight == 1` (no decoder loop at all);
- with `lm_weight > 0`, a language model's log probabilities added to
  each extension's score (shallow fusion, `language_model.py`);
- with `phoneme_weight > 0`, the beams re-ranked by how well the phoneme
  CTC head hears their words' CMUdict pronunciations (`pronunciation_rescorer.py`);
- with `phrase_ids` and `phrase_boosts` in the features, bonuses for
  spelling the request's phrases (`phrase_bias.py`).

An input with no speech (`inputs_length` 0: an empty waveform, or one the
featurizer found silent) decodes to the empty sequence, score 0.

No output is longer than the cap: `max_decode_length`, else the run's
`RunConfig.max_target_length` (hparam `max_target_seq_length`), else 256.
Each batch stops at T2T's decode length, the encoder output's length plus
`extra_length` (rounded up to a multiple of 16), within the cap, or
earlier when every beam has finished. The length is a tensor, so one
traced search serves every batch shape, and the self-attention
cache grows as the steps need (`MultiHeadAttention`'s growing cache): a step
costs what the prefix holds, not what the cap allows (a fixed-length cache at
256 spent half of a step copying and reordering mostly empty positions).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.decoding.run_config import RunConfig
from t2t_lite.decoding.search.beam_search import scored_beam_search
from t2t_lite.decoding.search.ctc_greedy import ctc_greedy_decode
from t2t_lite.decoding.search.ctc_prefix_scorer import CtcPrefixScorer
from t2t_lite.decoding.search.decoder_scorer import DecoderScorer
from t2t_lite.decoding.search.language_model import language_model_scorer
from t2t_lite.decoding.search.phrase_bias import PhraseBiasScorer
from t2t_lite.decoding.search.pronunciation_rescorer import PronunciationRescorer
from t2t_lite.decoding.search.pronunciation_table import load_pronunciations
from t2t_lite.decoding.search.scorer import WeightedScorer

LENGTH_QUANTUM = 16
DEFAULT_DECODE_CAP = 256


def decode_cap(run_config: RunConfig, decode_config: DecodeConfig) -> int:
    """The longest output a decode may produce."""
    return decode_config.max_decode_length or run_config.max_target_length or DEFAULT_DECODE_CAP


def decode_length(encoded_length, extra_length: int, cap: int):
    """T2T's decode length: encoder positions + `extra_length`, in `[1, cap]`.

    The sum is rounded up to `LENGTH_QUANTUM`, then held in `[1, cap]` (a
    tensor for a tensor).
    """
    wanted = encoded_length + extra_length
    wanted = LENGTH_QUANTUM * ((wanted + LENGTH_QUANTUM - 1) // LENGTH_QUANTUM)
    return tf.clip_by_value(wanted, 1, cap)


def model_search(
    model,
    features: dict,
    decode_config: DecodeConfig,
    cap: int,
    encoded=None,
    fixed_shapes: bool = False,
    target_surfaces: list[bytes] | None = None,
):
    """Decodes a batch of model features.

    Args:
        model: a `Transformer` with inputs.
        features: "inputs" (and for speech "inputs_length"), a batch.
        decode_config: `DecodeConfig.for_model(model)`.
        cap: `decode_cap(...)`, the longest output.
        encoded: `model.encode(features)`'s `(memory, memory_mask)`, when the
            caller needs the encoder's output too (word times); else encoded here.
        fixed_shapes: a `cap`-long output buffer and a fixed-length cache,
            every shape static (XLA, a TPU, TFLite); else a growing cache.
            Both stop at T2T's decode length.
        target_surfaces: the target encoder's `token_surfaces()`, which a
            word n-gram LM (`lm_dir`), the pronunciation rescorer and a
            phrase list spell words from.

    Returns:
        `(ids [batch, beams, length] int32, scores [batch, beams] float32)`,
        best first; `beams` is `beam_size`, or 1 for CTC greedy decoding.
    """
    memory, memory_mask = encoded or model.encode(features, training=False)
    batch_size = tf.shape(memory)[0]
    frames = tf.cast(tf.reduce_sum(tf.cast(memory_mask, tf.float32), axis=1), tf.int32)
    weight = decode_config.ctc_weight
    if weight >= 1.0:
        ids, scores = ctc_greedy_decode(model.ctc_log_probs(memory), frames)
        ids, scores = ids[:, None], scores[:, None]
    else:
        cache = model.initial_decode_cache(
            features, cap if fixed_shapes else None, encoded=(memory, memory_mask)
        )
        decoder = DecoderScorer(
            lambda ids, step, states: model.decode_step(ids[:, -1], step, states),
            cache,
            use_fixed_shapes=fixed_shapes,
        )
        scorers = [WeightedScorer(decoder, 1.0 - weight)]
        if weight > 0.0:
            ctc = CtcPrefixScorer(model.ctc_log_probs(memory), frames)
            scorers.append(WeightedScorer(ctc, weight))
        if decode_config.lm_weight > 0.0:  # shallow fusion
            lm = language_model_scorer(
                decode_config.lm_dir,
                model,
                batch_size,
                cap if fixed_shapes else None,
                target_surfaces,
            )
            scorers.append(WeightedScorer(lm, decode_config.lm_weight))
        if "phrase_ids" in features:  # the request's phrase list (hotwords)
            if target_surfaces is None:
                raise ValueError("phrase biasing needs target_surfaces (a caller's bug).")
            bias = PhraseBiasScorer(
                features["phrase_ids"], features["phrase_boosts"], batch_size, target_surfaces
            )
            scorers.append(WeightedScorer(bias, 1.0))
        # T2T's decode length from the padded input length; a fixed-shape
        # input is padded to a static length, so its longest real row stands
        # in (a one-row request then stops where the dynamic search stops).
        encoded_length = tf.reduce_max(frames) if fixed_shapes else tf.shape(memory)[1]
        length = decode_length(encoded_length, decode_config.extra_length, cap)
        ids, scores = scored_beam_search(
            scorers,
            tf.zeros([batch_size], tf.int32),
            beam_size=decode_config.beam_size,
            decode_length=cap if fixed_shapes else length,
            stop_length=length,
            use_fixed_shapes=fixed_shapes,
            vocab_size=model.target_vocab_size,
            alpha=decode_config.alpha,
        )
        if decode_config.phoneme_weight > 0.0:  # the lexicon, through the phoneme head
            if target_surfaces is None:
                raise ValueError("pronunciation rescoring needs target_surfaces (a caller's bug).")
            rescorer = PronunciationRescorer(load_pronunciations(), target_surfaces)
            ids, scores = rescorer(
                ids, scores, model.phoneme_log_probs(memory), frames, decode_config.phoneme_weight
            )
    if "inputs_length" in features:  # no speech: the empty transcript
        empty = tf.reshape(tf.cast(features["inputs_length"], tf.int32), [-1]) <= 0
        ids = tf.where(tf.reshape(empty, [-1, 1, 1]), 0, ids)
        scores = tf.where(tf.reshape(empty, [-1, 1]), 0.0, scores)
    return ids, scores


def _relaxed_spec(tensor) -> tf.TensorSpec:
    """Batch and length dimensions unknown, the rest as given: one trace for all batches."""
    tensor = tf.convert_to_tensor(tensor)
    shape = [None] * min(tensor.shape.rank, 2) + tensor.shape.as_list()[2:]
    return tf.TensorSpec(shape, tensor.dtype)


class BatchDecoder:
    """`model_search` over batches of model features, traced once.

    Args:
        model: a `Transformer` with inputs.
        run_config: the run's `RunConfig` (for `max_target_length`).
        decode_config: from `decode_hparams`.
        phrases: a phrase list every batch is biased towards
            (`phrase_bias.phrase_features`), or None.
        target_surfaces: the target encoder's `token_surfaces()` (needed
            with a word n-gram LM).

    Call arguments:
        features: a batch of model features ("targets" is ignored).

    Returns:
        `(ids [batch, beams, length] int32, scores [batch, beams] float32)`
        as NumPy arrays, best beam first.

    Raises:
        ValueError: decode hparams the model cannot honour (see
            `DecodeConfig.for_model`).
    """

    def __init__(
        self,
        model,
        run_config: RunConfig,
        decode_config: DecodeConfig,
        phrases: dict | None = None,
        target_surfaces: list[bytes] | None = None,
    ):
        decode_config = decode_config.for_model(model)
        self.phrases = phrases or {}
        self.target_surfaces = target_surfaces
        self.model = model
        self.decode_config = decode_config
        self.cap = decode_cap(run_config, decode_config)
        self._functions: dict[tuple, tf.types.experimental.PolymorphicFunction] = {}

    def _function(self, inputs: dict):
        key = tuple(sorted(inputs))
        if key not in self._functions:
            signature = {name: _relaxed_spec(value) for name, value in inputs.items()}
            model, hp, cap, surfaces = (
                self.model,
                self.decode_config,
                self.cap,
                self.target_surfaces,
            )
            self._functions[key] = tf.function(
                lambda features: model_search(model, features, hp, cap, target_surfaces=surfaces),
                input_signature=[signature],
            )
        return self._functions[key]

    def __call__(self, features: dict) -> tuple[np.ndarray, np.ndarray]:
        inputs = {k: v for k, v in features.items() if k != "targets"}
        inputs.update(self.phrases)
        ids, scores = self._function(inputs)(inputs)
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
