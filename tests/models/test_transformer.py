"""The Transformer: shapes, padding, causality, cached decoding, overfitting, XLA."""

import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import registry
from t2t_lite.data.phoneme_ctc_hparams import PHONEME_VOCAB_SIZE
from t2t_lite.models.chunk_attention import draw_left_chunks
from t2t_lite.models.transformer import Transformer
from t2t_lite.models.transformer_config import MODEL_HPARAMS, TransformerConfig
from t2t_lite.training.losses import padded_cross_entropy
from tests.helpers import fit_one_batch, random_sequences

VOCAB = 12
BATCH = 3
TARGET_LENGTH = 7
FRAMES = 24


def tiny_hparams(ffn_layer="dense_relu_dense", **overrides):
    hparams = registry.hparams("transformer_tiny")
    hparams.parse(
        "hidden_size=32,filter_size=64,num_heads=4,num_hidden_layers=2,"
        f"ffn_layer={ffn_layer},conv_first_kernel=3"
    )
    return hparams.override_from_dict(overrides)


def make_model(modality, ffn_layer="dense_relu_dense", **overrides):
    return Transformer.from_hparams(
        tiny_hparams(ffn_layer, **overrides),
        input_modality=modality,
        input_vocab_size=VOCAB if modality == "symbol" else 0,
        target_vocab_size=VOCAB,
    )


def random_features(modality, rng, batch=BATCH):
    features = {"targets": random_sequences(rng, batch, TARGET_LENGTH, VOCAB)}
    if modality == "symbol":
        features["inputs"] = random_sequences(rng, batch, 6, VOCAB)
    elif modality == "speech":
        features["inputs"] = rng.normal(size=(batch, FRAMES, 80, 3)).astype(np.float32)
        features["inputs_length"] = rng.integers(FRAMES // 2, FRAMES + 1, batch).astype(np.int32)
        features["inputs_length"][0] = FRAMES
    return features


def train(model, features, steps):
    """The last loss of `steps` Adam steps (a fresh optimizer) on `features`."""
    return fit_one_batch(model, features, steps, tf.keras.optimizers.Adam(3e-3), 0.1)


@pytest.fixture(name="greedy")
def greedy_fixture(greedy_decode):
    def greedy(model, features, length, use_cache):
        inputs = {k: v for k, v in features.items() if k != "targets"}
        batch = len(features["targets"])
        fn = tf.function(lambda f: greedy_decode(model, f, length, use_cache, batch_size=batch))
        return fn(inputs).numpy()

    return greedy


CONFIGS = [
    (modality, ffn)
    for modality in ("symbol", "speech", None)
    for ffn in ("dense_relu_dense", "conv_relu_conv")
]
# T2T's transformer_relative: relative self-attention and no timing signal.
RELATIVE = dict(pos="none", self_attention_type="dot_product_relative", max_relative_position=3)
# Conformer's convolution module in every encoder layer.
CONFORMER = dict(conformer_conv_kernel=3)


@pytest.mark.parametrize(
    "modality, ffn_layer, overrides",
    [(modality, ffn, {}) for modality, ffn in CONFIGS]
    + [("symbol", "dense_relu_dense", RELATIVE), (None, "conv_relu_conv", RELATIVE)]
    + [("speech", "conv_relu_conv", CONFORMER)],
)
def test_overfits_a_batch_and_cached_decoding_equals_recomputation(
    modality, ffn_layer, overrides, greedy
):
    """Train on one random batch: the loss reaches ~0, greedy decoding gives the
    targets back, and fast (cached) greedy equals slow greedy, both on the
    trained batch and on unseen random inputs."""
    rng = np.random.default_rng(7)
    tf.keras.utils.set_random_seed(7)
    model = make_model(
        modality,
        ffn_layer,
        layer_prepostprocess_dropout=0.0,
        attention_dropout=0.0,
        relu_dropout=0.0,
        **overrides,
    )
    batch = BATCH if modality is not None else 1  # an LM can only memorize one sequence
    features = random_features(modality, rng, batch)
    loss = train(model, features, steps=150)
    assert loss < 0.05, loss

    decoded = greedy(model, features, TARGET_LENGTH, use_cache=True)
    np.testing.assert_array_equal(decoded, features["targets"])
    np.testing.assert_array_equal(decoded, greedy(model, features, TARGET_LENGTH, False))

    unseen = random_features(modality, np.random.default_rng(99), BATCH)
    fast = greedy(model, unseen, 10, use_cache=True)
    slow = greedy(model, unseen, 10, use_cache=False)
    np.testing.assert_array_equal(fast, slow)


@pytest.fixture(scope="module")
def speech_model():
    model = make_model("speech", "conv_relu_conv")
    model(random_features("speech", np.random.default_rng(0)))
    return model


def test_forward_shapes(speech_model):
    rng = np.random.default_rng(1)
    for modality in ("symbol", None):
        logits = make_model(modality)(random_features(modality, rng))
        assert logits.shape == (BATCH, TARGET_LENGTH, VOCAB)
        assert logits.dtype == tf.float32
    features = random_features("speech", rng)
    assert speech_model(features).shape == (BATCH, TARGET_LENGTH, VOCAB)
    memory, mask = speech_model.encode(features)
    assert memory.shape == (BATCH, FRAMES // 4, 32)
    expected_mask = np.arange(FRAMES // 4)[None] < np.ceil(features["inputs_length"] / 4)[:, None]
    np.testing.assert_array_equal(mask.numpy(), expected_mask.astype(np.float32))


def test_speech_padding_frames_never_change_real_outputs(speech_model):
    features = random_features("speech", np.random.default_rng(2))
    features["inputs_length"] = np.array([FRAMES, 13, 9], np.int32)
    changed = dict(features)
    noisy = features["inputs"].copy()
    for row, length in enumerate(features["inputs_length"]):
        noisy[row, length:] = 100.0 * np.random.default_rng(row).normal(
            size=noisy[row, length:].shape
        )
    changed["inputs"] = noisy
    np.testing.assert_allclose(speech_model(features), speech_model(changed), atol=1e-5)
    # The same utterance alone, without the batch's extra padding, agrees too.
    alone = {
        "inputs": features["inputs"][1:2, :13],
        "inputs_length": features["inputs_length"][1:2],
        "targets": features["targets"][1:2],
    }
    np.testing.assert_allclose(speech_model(alone), speech_model(features)[1:2], atol=1e-5)


def test_text_padding_never_changes_real_outputs():
    model = make_model("symbol", "conv_relu_conv")
    features = random_features("symbol", np.random.default_rng(3))
    padded = dict(features)
    padded["inputs"] = np.pad(features["inputs"], [[0, 0], [0, 5]])
    np.testing.assert_allclose(model(features), model(padded), atol=1e-5)


@pytest.mark.parametrize(
    "modality, ffn_layer", [("symbol", "conv_relu_conv"), (None, "dense_relu_dense")]
)
def test_decoder_never_sees_the_future(modality, ffn_layer):
    model = make_model(modality, ffn_layer)
    features = random_features(modality, np.random.default_rng(4))
    base = model(features).numpy()
    for t in range(TARGET_LENGTH - 1):
        changed = dict(features)
        targets = features["targets"].copy()
        # Logits at position p see targets < p only (the decoder input is shifted).
        targets[:, t:] = np.random.default_rng(t).integers(2, VOCAB, targets[:, t:].shape)
        changed["targets"] = targets
        np.testing.assert_allclose(model(changed).numpy()[:, : t + 1], base[:, : t + 1], atol=1e-5)


def test_xla_train_step_and_cached_decode_step_match(speech_model, greedy_decode):
    features = random_features("speech", np.random.default_rng(5))

    def loss_and_grads(features):
        with tf.GradientTape() as tape:
            loss, _ = padded_cross_entropy(speech_model(features), features["targets"])
        return loss, tape.gradient(loss, speech_model.trainable_variables)

    loss, grads = tf.function(loss_and_grads)(features)
    xla_loss, xla_grads = tf.function(loss_and_grads, jit_compile=True)(features)
    assert float(xla_loss) == pytest.approx(float(loss), rel=1e-4)
    for grad, xla_grad in zip(grads, xla_grads, strict=True):
        np.testing.assert_allclose(xla_grad, grad, atol=1e-4, rtol=1e-3)

    cache = speech_model.initial_decode_cache(features, max_length=6)
    previous = tf.constant([0, 3, 5], tf.int32)

    def two_steps(previous, cache):
        logits, cache = speech_model.decode_step(previous, tf.constant(0), cache)
        return speech_model.decode_step(tf.argmax(logits, -1, tf.int32), tf.constant(1), cache)

    logits, new_cache = tf.function(two_steps)(previous, cache)
    xla_logits, xla_cache = tf.function(two_steps, jit_compile=True)(previous, cache)
    np.testing.assert_allclose(xla_logits, logits, atol=1e-4)
    tf.nest.map_structure(
        lambda a, b: np.testing.assert_allclose(a, b, atol=1e-4), xla_cache, new_cache
    )
    # The whole greedy loop compiles too, and gives the same tokens.
    inputs = {k: v for k, v in features.items() if k != "targets"}
    np.testing.assert_array_equal(
        tf.function(lambda f: greedy_decode(speech_model, f, 6), jit_compile=True)(inputs),
        tf.function(lambda f: greedy_decode(speech_model, f, 6))(inputs),
    )


def test_mixed_bfloat16_trains_with_float32_loss():
    model = make_model("speech", "conv_relu_conv", activation_dtype="bfloat16")
    assert model.dtype_policy.name == "mixed_bfloat16"
    features = random_features("speech", np.random.default_rng(6))
    logits = model(features, training=True)
    assert logits.dtype == tf.float32
    assert all(v.dtype == "float32" for v in model.trainable_variables)
    first = train(model, features, steps=1)
    last = train(model, features, steps=20)
    assert np.isfinite(first) and last < first


def test_config_round_trip_and_weights_survive_save_load(tmp_path, speech_model):
    features = random_features("speech", np.random.default_rng(8))
    clone = Transformer.from_config(speech_model.get_config())
    clone(features)
    path = str(tmp_path / "model.weights.h5")
    speech_model.save_weights(path)
    clone.load_weights(path)
    np.testing.assert_allclose(clone(features), speech_model(features), atol=1e-6)
    assert clone.get_config() == speech_model.get_config()


@pytest.mark.parametrize("modality", ["symbol", "speech", None])
def test_build_creates_every_weight_and_keras_does_not_warn(modality):
    model = make_model(modality, ctc_loss_weight=0.3 if modality else 0.0)
    features = random_features(modality, np.random.default_rng(3))
    shapes = {key: (None,) + np.shape(value)[1:] for key, value in features.items()}
    with warnings.catch_warnings():
        # Keras warns when a layer without build() has unbuilt sublayers.
        warnings.simplefilter("error")
        model.build(shapes)
    built = sorted(w.path for w in model.weights)
    model(features)
    assert sorted(w.path for w in model.weights) == built


def test_ctc_head_gives_per_frame_logits_and_the_same_decoder_logits():
    features = random_features("speech", np.random.default_rng(9))
    model = make_model("speech", ctc_loss_weight=0.3)
    # Built with the model: a checkpoint holds it before any CTC step runs.
    assert model.ctc_projection.built
    logits, ctc_logits, ctc_mask = model.call_with_ctc(features)
    np.testing.assert_allclose(logits, model(features), atol=1e-6)
    assert ctc_logits.shape == (BATCH, FRAMES // 4, VOCAB) and ctc_logits.dtype == tf.float32
    np.testing.assert_array_equal(ctc_mask, model.encode(features)[1])
    clone = Transformer.from_config(model.get_config())
    assert clone.ctc_projection is not None
    with pytest.raises(ValueError, match="ctc_head=True"):
        make_model("speech").call_with_ctc(features)
    with pytest.raises(ValueError, match="decoder-only model has no encoder"):
        TransformerConfig(10, input_modality=None, ctc_head=True)


def test_intermediate_ctc_reads_the_layer_asked_for_through_the_final_norm():
    features = random_features("speech", np.random.default_rng(5))
    model = make_model("speech", ctc_loss_weight=0.3, num_hidden_layers=3)
    outputs = model.call_with_heads(features, intermediate_ctc_layer=2)
    plain = model.call_with_heads(features)
    assert plain.intermediate_ctc_logits is None
    np.testing.assert_allclose(outputs.ctc_logits, plain.ctc_logits, atol=1e-6)
    np.testing.assert_allclose(outputs.logits, plain.logits, atol=1e-6)
    # The same model cut after layer 2 gives it as its final CTC logits.
    layers = model.encoder_layers
    model.encoder_layers = layers[:2]
    try:
        cut = model.call_with_heads(features).ctc_logits
    finally:
        model.encoder_layers = layers
    np.testing.assert_allclose(outputs.intermediate_ctc_logits, cut, atol=1e-6)
    assert np.abs(np.asarray(cut) - np.asarray(plain.ctc_logits)).max() > 1e-3
    with pytest.raises(ValueError, match="intermediate CTC needs a model built with ctc_head"):
        make_model("speech").call_with_heads(features, intermediate_ctc_layer=1)


def test_the_phoneme_ctc_head_reads_its_layer_and_survives_a_config_round_trip():
    features = random_features("speech", np.random.default_rng(6))
    model = make_model("speech", num_hidden_layers=3, phoneme_ctc_weight=0.3, phoneme_ctc_layer=2)
    assert model.ctc_projection is None
    model.build({key: (None,) + np.shape(value)[1:] for key, value in features.items()})
    assert model.phoneme_projection.built  # with the model: checkpoints hold it
    paths = [weight.path for weight in model.phoneme_projection.weights]
    assert paths == [f"{model.name}/phoneme_ctc_projection/{w}" for w in ("kernel", "bias")]
    outputs = model.call_with_heads(features)
    assert outputs.phoneme_ctc_logits.shape == (BATCH, FRAMES // 4, PHONEME_VOCAB_SIZE)
    np.testing.assert_array_equal(outputs.ctc_mask, model.encode(features)[1])
    np.testing.assert_allclose(outputs.logits, model(features), atol=1e-6)
    layers = model.encoder_layers
    model.encoder_layers = layers[:2]  # the model cut after layer 2
    try:
        cut_memory, _ = model.encode(features)
    finally:
        model.encoder_layers = layers
    np.testing.assert_allclose(
        outputs.phoneme_ctc_logits, model.phoneme_projection(cut_memory), atol=1e-6
    )
    clone = Transformer.from_config(model.get_config())
    assert clone.config.phoneme_ctc_layer == 2 and clone.phoneme_projection is not None
    last = make_model("speech", num_hidden_layers=3, phoneme_ctc_weight=0.3)
    assert last.config.phoneme_ctc_layer == 3  # hparam 0: the last layer
    assert make_model("speech").call_with_heads(features).phoneme_ctc_logits is None


def test_librispeech_v2_has_t2t_shape_and_parameter_count():
    hparams = registry.hparams("transformer_librispeech_v2")
    model = Transformer.from_hparams(hparams, input_modality="speech", target_vocab_size=256)
    model({"inputs": np.zeros((1, 16, 80, 3), np.float32), "targets": np.ones((1, 2), np.int32)})
    assert len(model.encoder_layers) == 6 and len(model.decoder_layers) == 4
    hidden, filters, kernel, vocab = 384, 1536, 9, 256
    norm = 2 * hidden
    attention = 4 * hidden * hidden  # q, k, v, output; no biases (T2T)
    ffn = kernel * hidden * filters + filters + filters * hidden + hidden
    front_end = 3 * 3 * 3 * 128 + 2 * 128 + 3 * 3 * 128 * 128 + 2 * 128 + 3 * 19 * 128 * hidden
    front_end += norm  # T2T's layer_norm after the last convolution
    encoder = 6 * (2 * norm + attention + ffn) + norm
    decoder = 4 * (3 * norm + 2 * attention + ffn) + norm
    expected = vocab * hidden + front_end + encoder + decoder  # embedding shared with softmax
    assert model.count_params() == expected
    print(f"transformer_librispeech_v2 parameters: {expected:,}")


def test_from_hparams_reads_every_model_hparam():
    hparams = tiny_hparams()
    read = []

    class Recording(type(hparams)):
        def __getattr__(self, name):
            read.append(name)
            return super().__getattr__(name)

        def get(self, name, default=None):  # hparams a saved run may lack
            read.append(name)
            return super().get(name, default)

    recording = Recording()
    for name in hparams.keys():
        recording.add_hparam(name, hparams.get(name))
    Transformer.from_hparams(
        recording, input_modality="symbol", input_vocab_size=5, target_vocab_size=5
    )
    assert sorted(set(read)) == sorted(MODEL_HPARAMS)


def test_conformer_conv_kernel_puts_the_module_in_every_encoder_layer():
    features = random_features("speech", np.random.default_rng(4))
    model = make_model("speech", **CONFORMER)
    model(features)
    paths = [w.path for w in model.weights]
    for i in range(len(model.encoder_layers)):
        wanted = f"/encoder_layer_{i}/conv_module/depthwise_kernel"
        assert sum(path.endswith(wanted) for path in paths) == 1, paths
    # A run saved before the hparam existed (its hparams.json lacks it) had none.
    saved = tiny_hparams()
    saved.del_hparam("conformer_conv_kernel")
    old = Transformer.from_hparams(saved, input_modality="speech", target_vocab_size=VOCAB)
    old(features)
    assert not any("conv_module" in w.path for w in old.weights)


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError, match="unknown input_modality 'image'"):
        TransformerConfig(10, input_modality="image")
    with pytest.raises(ValueError, match="needs input_vocab_size"):
        TransformerConfig(10, input_modality="symbol")
    with pytest.raises(ValueError, match="hparam 'activation_dtype'"):
        make_model("symbol", activation_dtype="int8")
    with pytest.raises(ValueError, match="unknown initializer"):
        make_model("symbol", initializer="zeros")
    with pytest.raises(ValueError, match="unknown self_attention_type 'local'"):
        make_model("symbol", self_attention_type="local")
    with pytest.raises(ValueError, match="needs max_relative_position >= 1"):
        make_model("symbol", self_attention_type="dot_product_relative")
    with pytest.raises(ValueError, match="set use_dynamic_chunk=True too"):
        TransformerConfig(10, input_modality="speech", use_dynamic_left_chunk=True)
    with pytest.raises(ValueError, match="conformer_conv_kernel must be 0 .none. or an odd"):
        make_model("speech", conformer_conv_kernel=4)
    with pytest.raises(ValueError, match="does not stream yet"):
        make_model("speech", conformer_conv_kernel=3, use_dynamic_chunk=True)
    with pytest.raises(ValueError, match="decoder-only model has no encoder"):
        TransformerConfig(10, input_modality=None, conformer_conv_kernel=3)


def test_the_left_context_draw_covers_every_limit_and_unlimited():
    """U2++'s draw: 0 (unlimited) .. chunks - 1, each about equally often;
    one chunk of full context is always unlimited."""
    seed = keras.random.SeedGenerator(3)
    drawn = [int(draw_left_chunks(97, 25, seed)) for _ in range(400)]  # 4 chunks
    counts = np.bincount(drawn, minlength=4)
    assert counts.size == 4 and counts.min() > 60, counts
    assert {int(draw_left_chunks(97, 97, seed)) for _ in range(20)} == {0}


def test_tpu_broadcast_dropout_only_where_t2t_broadcasts():
    # T2T's input dropout (tf.nn.dropout) and conv_relu_conv's ReLU dropout
    # take no broadcast dims; the pre/postprocess and attention dropouts do.
    hparams = registry.hparams("transformer_librispeech_tpu")
    hparams.parse("hidden_size=16,filter_size=32,num_encoder_layers=1,num_decoder_layers=1")
    assert hparams.ffn_layer == "conv_relu_conv" and hparams.relu_dropout_broadcast_dims == "1"
    model = Transformer.from_hparams(hparams, input_modality="speech", target_vocab_size=VOCAB)
    model.build({"inputs": (None, None, 80, 3)})
    for dropout in (model.encoder_dropout, model.decoder_dropout):
        assert dropout.get_config()["dropout_broadcast_dims"] == []
    for layer in (*model.encoder_layers, *model.decoder_layers):
        assert layer._ffn.get_config()["dropout_broadcast_dims"] == []
        assert layer._ffn_post.get_config()["dropout_broadcast_dims"] == [1]
