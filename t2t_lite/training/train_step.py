"""The distributed training step and the multi-step loop that runs it.

One replica step computes T2T's loss as a global mean over every non-padding
target token of the global batch (each replica divides its token-summed
cross-entropy by the all-reduced token count), so any strategy gives the
loss and gradient of the same global batch. The gradient is all-reduced
once here so its global norm can be reported and, with `clip_grad_norm`,
clipped as T2T clips it; Keras then sums the per-replica shares back.
"""

from __future__ import annotations

import dataclasses

import keras
import tensorflow as tf

from t2t_lite.data.feature_config import FeatureConfig
from t2t_lite.data.phoneme_ctc_hparams import phoneme_ctc_weight
from t2t_lite.data.word_boundary_weight import WEIGHT_HPARAM, boundary_loss_weight
from t2t_lite.hparam import HParams
from t2t_lite.training.losses import (
    summed_boundary_loss,
    summed_cross_entropy,
    summed_ctc_loss,
)
from t2t_lite.training.optimizers import optimizer_name

# Intermediate CTC (Lee & Watanabe, 2021; ESPnet's interctc_layer_idx and
# interctc_weight): the CTC head also reads one encoder layer below the last,
# and that CTC loss takes this share of the CTC term.
INTERMEDIATE_LAYER_HPARAM = "intermediate_ctc_layer"
INTERMEDIATE_WEIGHT_HPARAM = "intermediate_ctc_weight"
STEP_HPARAMS = (
    "label_smoothing",
    "clip_grad_norm",
    "weight_decay",
    "ctc_loss_weight",
    WEIGHT_HPARAM,
    INTERMEDIATE_LAYER_HPARAM,
    INTERMEDIATE_WEIGHT_HPARAM,
)
# Step hparams added after runs were saved, and the value such a run trained
# with (filled in before a resume compares hparams, as the model's are).
STEP_HPARAM_DEFAULTS = {INTERMEDIATE_LAYER_HPARAM: 0, INTERMEDIATE_WEIGHT_HPARAM: 0.0}


@dataclasses.dataclass(frozen=True)
class StepSettings:
    label_smoothing: float
    clip_grad_norm: float
    l2_weight_decay: float  # T2T's weight_decay as an L2 loss term (0 with AdamW)
    frame_seconds: float  # seconds per input frame (speech), for throughput
    ctc_loss_weight: float = 0.0  # weight of the encoder's auxiliary CTC loss
    word_boundary_loss_weight: float = 0.0  # weight of the word boundary head's loss
    intermediate_ctc_layer: int = 0  # 1-based encoder layer of intermediate CTC (0: none)
    intermediate_ctc_weight: float = 0.0  # its share of the CTC term
    phoneme_ctc_weight: float = 0.0  # weight of the phoneme CTC head's loss, added

    @classmethod
    def from_hparams(cls, hparams: HParams) -> StepSettings:
        """The settings `hparams` give (`STEP_HPARAMS`).

        Example:
        >>> from t2t_lite import registry
        >>> StepSettings.from_hparams(registry.hparams("transformer_tiny")).frame_seconds
        0.01
        """
        # AdamW decays the weights itself, in place of T2T's L2 loss term.
        decoupled = optimizer_name(hparams) == "adamw"
        layer, weight = (
            hparams.get(name, STEP_HPARAM_DEFAULTS[name])
            for name in (INTERMEDIATE_LAYER_HPARAM, INTERMEDIATE_WEIGHT_HPARAM)
        )
        _check_intermediate_ctc(hparams, int(layer), float(weight))
        return cls(
            label_smoothing=hparams.label_smoothing,
            clip_grad_norm=hparams.clip_grad_norm,
            l2_weight_decay=0.0 if decoupled else hparams.weight_decay,
            frame_seconds=FeatureConfig.from_hparams(hparams).frame_seconds,
            ctc_loss_weight=hparams.ctc_loss_weight,
            word_boundary_loss_weight=boundary_loss_weight(hparams),
            intermediate_ctc_layer=int(layer),
            intermediate_ctc_weight=float(weight),
            phoneme_ctc_weight=phoneme_ctc_weight(hparams),
        )


def _check_intermediate_ctc(hparams: HParams, layer: int, weight: float) -> None:
    if not layer and not weight:
        return
    encoder_layers = hparams.num_encoder_layers or hparams.num_hidden_layers
    if encoder_layers < 2:
        raise ValueError(
            f"{INTERMEDIATE_LAYER_HPARAM}={layer} reads an encoder layer below the last, "
            f"but this model has {encoder_layers}: use 2 or more, or set "
            f"{INTERMEDIATE_LAYER_HPARAM}=0,{INTERMEDIATE_WEIGHT_HPARAM}=0."
        )
    if not 0 < weight < 1 or not 1 <= layer < encoder_layers:
        raise ValueError(
            f"intermediate CTC needs {INTERMEDIATE_LAYER_HPARAM} from 1 to "
            f"{encoder_layers - 1} (an encoder layer below the last) and "
            f"{INTERMEDIATE_WEIGHT_HPARAM} between 0 and 1, got {layer} and {weight:g}; "
            "set both, or both to 0."
        )
    if not hparams.ctc_loss_weight:
        raise ValueError(
            f"{INTERMEDIATE_LAYER_HPARAM}={layer} trains the CTC head on an encoder "
            "layer, but this model has none: set ctc_loss_weight > 0."
        )


def _l2_loss(variables) -> tf.Tensor:
    """T2T's weight decay term: l2_loss of every variable except biases."""
    terms = [tf.nn.l2_loss(v) for v in variables if len(v.shape) > 1]
    return tf.add_n(terms) if terms else tf.constant(0.0)


def make_replica_step(model, optimizer, settings: StepSettings):
    """The per-replica train step: returns a dict of float32 step statistics."""
    loss_scaling = isinstance(optimizer, keras.optimizers.LossScaleOptimizer)

    def replica_step(features):
        context = tf.distribute.get_replica_context()
        replicas = float(context.num_replicas_in_sync)
        targets = tf.cast(features["targets"], tf.int32)
        variables = model.trainable_variables
        with tf.GradientTape() as tape:
            if (
                settings.ctc_loss_weight
                or settings.word_boundary_loss_weight
                or settings.phoneme_ctc_weight
            ):
                outputs = model.call_with_heads(
                    features, training=True, intermediate_ctc_layer=settings.intermediate_ctc_layer
                )
                logits = outputs.logits
            else:
                logits = model(features, training=True)
            xent_sum, tokens = summed_cross_entropy(logits, targets, settings.label_smoothing)
            if settings.ctc_loss_weight:
                # Both terms are per-token means of the global batch, mixed as
                # hybrid CTC/attention training mixes them.
                ctc_sum = summed_ctc_loss(outputs.ctc_logits, outputs.ctc_mask, targets)
                if settings.intermediate_ctc_layer:
                    share = settings.intermediate_ctc_weight
                    intermediate_sum = summed_ctc_loss(
                        outputs.intermediate_ctc_logits, outputs.ctc_mask, targets
                    )
                    ctc_sum = (1.0 - share) * ctc_sum + share * intermediate_sum
                weight = settings.ctc_loss_weight
                xent_sum = (1.0 - weight) * xent_sum + weight * ctc_sum
            if settings.phoneme_ctc_weight:
                # Added on the same per-target-token scale; an utterance
                # without phoneme targets counts for nothing here.
                phoneme_sum = summed_ctc_loss(
                    outputs.phoneme_ctc_logits,
                    outputs.ctc_mask,
                    features["phonemes"],
                    weights=features["phonemes_known"],
                )
                xent_sum += settings.phoneme_ctc_weight * phoneme_sum
            global_tokens = context.all_reduce(tf.distribute.ReduceOp.SUM, tokens)
            loss = xent_sum / tf.maximum(global_tokens, 1.0)
            if settings.word_boundary_loss_weight:
                # A per-frame mean of the global batch, added: the head reads
                # the encoder through stop_gradient, so it changes nothing else.
                boundary_sum, frames = summed_boundary_loss(
                    outputs.boundary_logits, features["word_boundaries"], features["inputs_length"]
                )
                global_frames = context.all_reduce(tf.distribute.ReduceOp.SUM, frames)
                loss += (
                    settings.word_boundary_loss_weight
                    * boundary_sum
                    / tf.maximum(global_frames, 1.0)
                )
            if settings.l2_weight_decay:
                loss += settings.l2_weight_decay * _l2_loss(variables) / replicas
            scaled_loss = optimizer.scale_loss(loss) if loss_scaling else loss
        grads = tape.gradient(scaled_loss, variables)
        scale = tf.cast(optimizer.dynamic_scale, tf.float32) if loss_scaling else 1.0
        if replicas > 1:
            grads = context.all_reduce(tf.distribute.ReduceOp.SUM, grads)
        grad_norm = tf.linalg.global_norm(grads) / scale
        if settings.clip_grad_norm:
            grads, _ = tf.clip_by_global_norm(
                grads, settings.clip_grad_norm * scale, use_norm=grad_norm * scale
            )
        if replicas > 1:
            grads = [g / replicas for g in grads]  # Keras sums them again
        optimizer.apply(grads, variables)

        examples = tf.cast(tf.shape(targets)[0], tf.float32)
        stats = {
            # Each replica holds its share of the global mean: the sum is the loss.
            "loss": context.all_reduce(tf.distribute.ReduceOp.SUM, loss),
            "grad_norm": grad_norm,
            "examples": context.all_reduce(tf.distribute.ReduceOp.SUM, examples),
            "target_tokens": global_tokens,
        }
        if "inputs_length" in features:
            frames = tf.cast(tf.reduce_sum(features["inputs_length"]), tf.float32)
            stats["audio_seconds"] = (
                context.all_reduce(tf.distribute.ReduceOp.SUM, frames) * settings.frame_seconds
            )
        return stats

    return replica_step


def make_train_loop(strategy, replica_step, xla_compile: bool):
    """`loop(iterator, steps)` -> summed statistics; stops at a non-finite loss.

    Returns a dict with `steps` run, sums of each statistic, the last
    `grad_norm`, and `bad_step`: the index (within this loop) of the first
    step whose loss was NaN/Inf, or -1.
    """
    step_fn = tf.function(replica_step, jit_compile=True) if xla_compile else replica_step

    @tf.function
    def loop(iterator, steps):
        names = ["loss", "grad_norm", "examples", "target_tokens"]
        if "inputs_length" in iterator.element_spec:
            names.append("audio_seconds")
        totals = {name: tf.constant(0.0) for name in names}
        last_grad_norm = tf.constant(0.0)
        done = tf.constant(0)
        bad_step = tf.constant(-1)
        for index in tf.range(steps):
            per_replica = strategy.run(step_fn, args=(next(iterator),))
            # Every replica returns the same (all-reduced) values.
            stats = {k: strategy.experimental_local_results(v)[0] for k, v in per_replica.items()}
            totals = {name: totals[name] + stats[name] for name in names}
            last_grad_norm = stats["grad_norm"]
            done = index + 1
            if not tf.math.is_finite(stats["loss"]):
                bad_step = index
                break
        totals["grad_norm"] = last_grad_norm
        totals["steps"] = done
        totals["bad_step"] = bad_step
        return totals

    return loop
