"""A tf.train.Checkpoint of model_weights(model) saves and restores every weight."""

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import registry
from t2t_lite.models.checkpointable import model_weights
from t2t_lite.models.transformer import Transformer


def build(seed):
    tf.keras.utils.set_random_seed(seed)
    hparams = registry.hparams("transformer_tiny").parse(
        "hidden_size=16,filter_size=32,num_heads=2,ffn_layer=conv_relu_conv"
    )
    model = Transformer.from_hparams(hparams, input_modality="speech", target_vocab_size=9)
    features = {
        "inputs": np.random.default_rng(0).normal(size=(2, 12, 80, 3)).astype("float32"),
        "inputs_length": np.array([12, 7], "int32"),
        "targets": np.array([[3, 4, 1], [5, 1, 0]], "int32"),
    }
    model(features)
    return model, features


def test_every_weight_round_trips(tmp_path):
    model, features = build(1)
    other, _ = build(2)
    assert not np.allclose(model(features), other(features))
    path = tf.train.Checkpoint(model=model_weights(model)).save(str(tmp_path / "ckpt"))
    saved = [
        n
        for n in tf.train.load_checkpoint(path).get_variable_to_shape_map()
        if n.startswith("model/")
    ]
    assert len(saved) == len(model.weights)
    tf.train.Checkpoint(model=model_weights(other)).restore(path).assert_consumed()
    np.testing.assert_array_equal(model(features), other(features))
    assert any("encoder_layer_1.Sffn_preprocess" in name for name in saved)


def test_unbuilt_model_is_refused():
    hparams = registry.hparams("transformer_tiny")
    model = Transformer.from_hparams(hparams, input_modality=None, target_vocab_size=5)
    with pytest.raises(ValueError, match="has no weights yet"):
        model_weights(model)
