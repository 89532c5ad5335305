"""The distributed train step: same global batch, same loss, any strategy."""

import json
import sys
from pathlib import Path

import pytest

from tests.helpers import NO_DROPOUT, TINY_TRANSFORMER, run_command

SCRIPT = Path(__file__).parent / "scripts" / "mirrored_vs_default.py"


def test_mirrored_over_two_cpus_follows_the_default_loss_curve():
    result = run_command(sys.executable, str(SCRIPT), timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    curves = json.loads(result.stdout.strip().splitlines()[-1])
    default, mirrored = curves["default"], curves["mirrored"]
    assert len(default["losses"]) == 6
    assert default["losses"][-1] < default["losses"][0]  # it trains
    assert mirrored["losses"] == pytest.approx(default["losses"], rel=1e-4)
    assert mirrored["checksum"] == pytest.approx(default["checksum"], rel=1e-5)


def speech_batch(seed: int) -> dict:
    """Two utterances of random features (40 and 30 frames) and their targets."""
    import numpy as np

    rng = np.random.default_rng(seed)
    return {
        "inputs": rng.normal(size=(2, 40, 80, 3)).astype(np.float32),
        "inputs_length": np.array([40, 30], np.int32),
        "targets": np.array([[4, 5, 6, 1], [7, 8, 1, 0]], np.int32),
    }


def test_ctc_loss_weight_mixes_the_encoder_ctc_loss_into_the_step_loss():
    import keras
    import tensorflow as tf

    from t2t_lite import registry
    from t2t_lite.models.transformer import Transformer
    from t2t_lite.training.losses import summed_cross_entropy, summed_ctc_loss
    from t2t_lite.training.train_step import StepSettings, make_replica_step

    hparams = registry.hparams("transformer_tiny").parse(
        f"{TINY_TRANSFORMER},ctc_loss_weight=0.25,{NO_DROPOUT}"
    )
    model = Transformer.from_hparams(hparams, input_modality="speech", target_vocab_size=9)
    features = speech_batch(seed=0)
    logits, ctc_logits, ctc_mask = model.call_with_ctc(features)
    xent, tokens = summed_cross_entropy(logits, features["targets"], 0.1)
    ctc = summed_ctc_loss(ctc_logits, ctc_mask, features["targets"])
    expected = float((0.75 * xent + 0.25 * ctc) / tokens)

    optimizer = keras.optimizers.SGD(0.0)
    optimizer.build(model.trainable_variables)
    settings = StepSettings(0.1, 0.0, 0.0, 0.01, ctc_loss_weight=0.25)
    step = tf.function(make_replica_step(model, optimizer, settings))
    stats = step(features)
    assert float(stats["loss"]) == pytest.approx(expected, rel=1e-5)
    assert float(stats["grad_norm"]) > 0


def test_intermediate_ctc_takes_its_share_of_the_ctc_term():
    import keras
    import tensorflow as tf

    from t2t_lite import registry
    from t2t_lite.models.transformer import Transformer
    from t2t_lite.training.losses import summed_cross_entropy, summed_ctc_loss
    from t2t_lite.training.train_step import StepSettings, make_replica_step

    hparams = (
        registry.hparams("transformer_tiny")
        .parse(
            f"{TINY_TRANSFORMER},ctc_loss_weight=0.25,{NO_DROPOUT},"
            "intermediate_ctc_layer=1,intermediate_ctc_weight=0.4"
        )
        .parse("num_hidden_layers=2")
    )
    model = Transformer.from_hparams(hparams, input_modality="speech", target_vocab_size=9)
    features = speech_batch(seed=1)
    outputs = model.call_with_heads(features, intermediate_ctc_layer=1)
    xent, tokens = summed_cross_entropy(outputs.logits, features["targets"], 0.1)
    ctc = summed_ctc_loss(outputs.ctc_logits, outputs.ctc_mask, features["targets"])
    intermediate = summed_ctc_loss(
        outputs.intermediate_ctc_logits, outputs.ctc_mask, features["targets"]
    )
    assert abs(float(intermediate) - float(ctc)) > 1e-3  # two different terms
    expected = float((0.75 * xent + 0.25 * (0.6 * ctc + 0.4 * intermediate)) / tokens)

    optimizer = keras.optimizers.SGD(0.0)
    optimizer.build(model.trainable_variables)
    settings = StepSettings.from_hparams(hparams)
    assert (settings.intermediate_ctc_layer, settings.intermediate_ctc_weight) == (1, 0.4)
    stats = tf.function(make_replica_step(model, optimizer, settings))(features)
    assert float(stats["loss"]) == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize(
    "overrides, message",
    [
        ("intermediate_ctc_layer=2,intermediate_ctc_weight=0.3", "from 1 to 1 .an encoder layer"),
        ("intermediate_ctc_layer=1,intermediate_ctc_weight=0.3,num_encoder_layers=1", "has 1"),
        ("intermediate_ctc_layer=1", "between 0 and 1, got 1 and 0; set both"),
        ("intermediate_ctc_weight=0.3", "got 0 and 0.3; set both, or both to 0"),
        ("intermediate_ctc_layer=1,intermediate_ctc_weight=1.0", "between 0 and 1"),
        ("ctc_loss_weight=0.0,intermediate_ctc_layer=1,intermediate_ctc_weight=0.3", "set ctc_"),
    ],
)
def test_intermediate_ctc_settings_the_model_cannot_train_are_refused(overrides, message):
    from t2t_lite import registry
    from t2t_lite.training.train_step import StepSettings

    hparams = (
        registry.hparams("transformer_tiny")
        .parse(f"{TINY_TRANSFORMER},ctc_loss_weight=0.3")
        .parse(f"num_hidden_layers=2,{overrides}")
    )
    with pytest.raises(ValueError, match=message):
        StepSettings.from_hparams(hparams)


def test_the_word_boundary_loss_is_added_and_trains_only_the_head():
    import keras
    import numpy as np
    import tensorflow as tf

    from t2t_lite import registry
    from t2t_lite.models.transformer import Transformer
    from t2t_lite.training.losses import summed_boundary_loss, summed_cross_entropy
    from t2t_lite.training.train_step import StepSettings, make_replica_step

    hparams = registry.hparams("transformer_tiny").parse(
        f"{TINY_TRANSFORMER},word_boundary_loss_weight=0.5,{NO_DROPOUT}"
    )
    model = Transformer.from_hparams(hparams, input_modality="speech", target_vocab_size=9)
    rng = np.random.default_rng(0)
    boundaries = np.zeros([2, 40, 2], np.float32)
    boundaries[:, [5, 20], 0] = boundaries[:, [19, 33], 1] = 1.0
    features = {
        "inputs": rng.normal(size=(2, 40, 80, 3)).astype(np.float32),
        "inputs_length": np.array([40, 30], np.int32),
        "targets": np.array([[4, 5, 6, 1], [7, 8, 1, 0]], np.int32),
        "word_boundaries": boundaries,
    }
    outputs = model.call_with_heads(features)
    xent, tokens = summed_cross_entropy(outputs.logits, features["targets"], 0.1)
    boundary, frames = summed_boundary_loss(
        outputs.boundary_logits, boundaries, features["inputs_length"]
    )
    assert float(frames) == 70.0
    expected = float(xent / tokens + 0.5 * boundary / frames)

    optimizer = keras.optimizers.SGD(0.0)
    optimizer.build(model.trainable_variables)
    settings = StepSettings(0.1, 0.0, 0.0, 0.01, word_boundary_loss_weight=0.5)
    stats = tf.function(make_replica_step(model, optimizer, settings))(features)
    assert float(stats["loss"]) == pytest.approx(expected, rel=1e-5)
    # The head reads the encoder through stop_gradient: its loss reaches its own
    # weights and no other.
    with tf.GradientTape() as tape:
        outputs = model.call_with_heads(features, training=True)
        boundary, _ = summed_boundary_loss(
            outputs.boundary_logits, boundaries, features["inputs_length"]
        )
    head = {id(v) for v in model.word_boundary_head.trainable_variables}
    for variable, gradient in zip(
        model.trainable_variables, tape.gradient(boundary, model.trainable_variables), strict=True
    ):
        assert (gradient is not None) == (id(variable) in head), variable.path


def test_the_phoneme_ctc_loss_is_added_for_utterances_whose_words_are_known():
    """The head reads its encoder layer; an utterance marked unknown counts for nothing."""
    import keras
    import numpy as np
    import tensorflow as tf

    from t2t_lite import registry
    from t2t_lite.models.transformer import Transformer
    from t2t_lite.training.losses import summed_cross_entropy, summed_ctc_loss
    from t2t_lite.training.train_step import StepSettings, make_replica_step

    hparams = (
        registry.hparams("transformer_tiny")
        .parse(f"{TINY_TRANSFORMER},{NO_DROPOUT},phoneme_ctc_weight=0.5,phoneme_ctc_layer=1")
        .parse("num_hidden_layers=2")
    )
    model = Transformer.from_hparams(hparams, input_modality="speech", target_vocab_size=9)
    features = {
        **speech_batch(seed=2),
        "phonemes": np.array([[15, 4, 22, 26], [9, 30, 0, 0]], np.int32),
        "phonemes_known": np.array([1, 0], np.int32),
    }
    outputs = model.call_with_heads(features)
    assert outputs.ctc_logits is None and outputs.phoneme_ctc_logits.shape == (2, 10, 42)
    xent, tokens = summed_cross_entropy(outputs.logits, features["targets"], 0.1)
    first_only = summed_ctc_loss(
        outputs.phoneme_ctc_logits[:1], outputs.ctc_mask[:1], features["phonemes"][:1]
    )
    expected = float((xent + 0.5 * first_only) / tokens)

    optimizer = keras.optimizers.SGD(0.0)
    optimizer.build(model.trainable_variables)
    settings = StepSettings.from_hparams(hparams)
    assert settings.phoneme_ctc_weight == 0.5
    stats = tf.function(make_replica_step(model, optimizer, settings))(features)
    assert float(stats["loss"]) == pytest.approx(expected, rel=1e-5)
    # The head reads layer 1 (through the final norm), not the encoder's output.
    memory, _ = model.encode(features)
    assert not np.allclose(outputs.phoneme_ctc_logits, model.phoneme_projection(memory), atol=1e-3)
