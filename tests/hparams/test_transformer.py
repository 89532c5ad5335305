"""The transformer hparams sets carry Tensor2Tensor's values."""

import pytest

from t2t_lite import registry

# T2T's transformer_base (= transformer_base_v3 over v2, v1, basic_params1).
TRANSFORMER_BASE = {
    "batch_size": 4096,
    "max_length": 256,
    "min_length_bucket": 8,
    "length_bucket_step": 1.1,
    "hidden_size": 512,
    "filter_size": 2048,
    "num_heads": 8,
    "num_hidden_layers": 6,
    "num_encoder_layers": 0,
    "num_decoder_layers": 0,
    "attention_key_channels": 0,
    "attention_value_channels": 0,
    "ffn_layer": "dense_relu_dense",
    "conv_first_kernel": 3,
    "pos": "timing",
    "self_attention_type": "dot_product",
    "max_relative_position": 0,
    "layer_preprocess_sequence": "n",
    "layer_postprocess_sequence": "da",
    "layer_prepostprocess_dropout": 0.1,
    "attention_dropout": 0.1,
    "relu_dropout": 0.1,
    "norm_type": "layer",
    "norm_epsilon": 1e-6,
    "shared_embedding_and_softmax_weights": True,
    "multiply_embedding_mode": "sqrt_depth",
    "initializer": "uniform_unit_scaling",
    "initializer_gain": 1.0,
    "label_smoothing": 0.1,
    "optimizer": "adam",
    "optimizer_adam_beta1": 0.9,
    "optimizer_adam_beta2": 0.997,
    "optimizer_adam_epsilon": 1e-9,
    "weight_decay": 0.0,
    "clip_grad_norm": 0.0,
    "learning_rate_schedule": "constant*linear_warmup*rsqrt_decay*rsqrt_hidden_size",
    "learning_rate_constant": 2.0,
    "learning_rate_warmup_steps": 8000,
    "learning_rate": 0.2,
    "optimizer_multistep_accumulate_steps": 0,
}

# Each set as T2T defines it: its differences from transformer_base.
DIFFERENCES = {
    "transformer_tiny": {
        "num_hidden_layers": 2,
        "hidden_size": 128,
        "filter_size": 512,
        "num_heads": 4,
    },
    "transformer_small": {
        "num_hidden_layers": 2,
        "hidden_size": 256,
        "filter_size": 1024,
        "num_heads": 4,
    },
    "transformer_big": {
        "hidden_size": 1024,
        "filter_size": 4096,
        "batch_size": 2048,
        "num_heads": 16,
        "layer_prepostprocess_dropout": 0.3,
    },
    # T2T's pos=None is "none" here.
    "transformer_relative": {
        "pos": "none",
        "self_attention_type": "dot_product_relative",
        "max_relative_position": 20,
    },
    "transformer_relative_tiny": {
        "pos": "none",
        "self_attention_type": "dot_product_relative",
        "max_relative_position": 20,
        "num_hidden_layers": 2,
        "hidden_size": 128,
        "filter_size": 512,
        "num_heads": 4,
    },
    "transformer_relative_big": {
        "pos": "none",
        "self_attention_type": "dot_product_relative",
        "max_relative_position": 20,
        "hidden_size": 1024,
        "filter_size": 4096,
        "batch_size": 2048,
        "num_heads": 16,
        "layer_prepostprocess_dropout": 0.3,
    },
    "transformer_tpu": {
        "optimizer": "Adafactor",
        "learning_rate_schedule": "rsqrt_decay",
        "learning_rate_warmup_steps": 10000,
        "max_length": 64,
        "batch_size": 2048,
        "attention_dropout_broadcast_dims": "0,1",
        "relu_dropout_broadcast_dims": "1",
        "layer_prepostprocess_dropout_broadcast_dims": "1",
    },
}


def test_transformer_base_has_t2t_values():
    hparams = registry.hparams("transformer_base")
    for name, value in TRANSFORMER_BASE.items():
        assert hparams.get(name) == value, name
        assert type(hparams.get(name)) is type(value), name


@pytest.mark.parametrize("name", sorted(DIFFERENCES))
def test_derived_sets_differ_from_base_exactly_as_in_t2t(name):
    base = registry.hparams("transformer_base")
    hparams = registry.hparams(name)
    expected = DIFFERENCES[name]
    assert hparams.differences(base) == sorted(expected)
    for key, value in expected.items():
        assert hparams.get(key) == value, key
