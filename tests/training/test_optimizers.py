"""Optimizers from core Keras with T2T's hparam names."""

import keras
import pytest

from t2t_lite import registry
from t2t_lite.training.adafactor import Adafactor
from t2t_lite.training.fused_adam import FusedAdam
from t2t_lite.training.optimizers import OPTIMIZER_HPARAMS, make_optimizer


def test_adam_uses_t2t_betas():
    optimizer = make_optimizer(registry.hparams("transformer_base"), 0.1)
    assert isinstance(optimizer, FusedAdam)
    assert (optimizer.beta_1, optimizer.beta_2, optimizer.epsilon) == (0.9, 0.997, 1e-9)
    assert optimizer.gradient_accumulation_steps is None


@pytest.mark.parametrize(
    "overrides, kind",
    [
        ("optimizer=adamw,weight_decay=0.01", keras.optimizers.AdamW),
        ("optimizer=lamb", keras.optimizers.Lamb),
        ("optimizer=sgd", keras.optimizers.SGD),
        ("optimizer=momentum,optimizer_momentum_nesterov=true", keras.optimizers.SGD),
    ],
)
def test_other_optimizers(overrides, kind):
    optimizer = make_optimizer(registry.hparams("transformer_base").parse(overrides), 0.1)
    assert isinstance(optimizer, kind)
    if "momentum" in overrides:
        assert optimizer.momentum == 0.9 and optimizer.nesterov


def test_tpu_sets_get_t2ts_adafactor_and_accumulation_is_keras():
    hparams = registry.hparams("transformer_librispeech_tpu").parse(
        "optimizer_multistep_accumulate_steps=4"
    )
    optimizer = make_optimizer(hparams, 0.1)
    assert isinstance(optimizer, Adafactor)
    assert not isinstance(optimizer, keras.optimizers.Adafactor)  # NaN on zero rows + columns
    assert (optimizer.decay_type, optimizer.memory_exponent) == ("pow", 0.8)
    assert optimizer.clipping_threshold == 1.0 and optimizer.multiply_by_parameter_scale
    assert optimizer.factored and optimizer.beta1 == 0.0
    assert optimizer.gradient_accumulation_steps == 4


def test_every_adafactor_hparam_is_read():
    """T2T's optimizer_adafactor_* hparams, including beta1 and
    multiply_by_parameter_scale=False, which Keras's Adafactor could not do."""
    hparams = registry.hparams("transformer_tpu").parse(
        "optimizer_adafactor_beta1=0.9,optimizer_adafactor_multiply_by_parameter_scale=false,"
        "optimizer_adafactor_decay_type=Adam,optimizer_adafactor_beta2=0.99,"
        "optimizer_adafactor_clipping_threshold=2.0,optimizer_adafactor_factored=false"
    )
    optimizer = make_optimizer(hparams, 0.1)
    assert (optimizer.beta1, optimizer.beta2, optimizer.decay_type) == (0.9, 0.99, "adam")
    assert optimizer.clipping_threshold == 2.0
    assert not optimizer.multiply_by_parameter_scale and not optimizer.factored
    assert {name for name in hparams.keys() if name.startswith("optimizer_adafactor_")} == set(
        OPTIMIZER_HPARAMS["adafactor"]
    )


def test_unsupported_settings_are_errors():
    with pytest.raises(ValueError, match="hparam 'optimizer' is 'adagrad'"):
        make_optimizer(registry.hparams("transformer_base").parse("optimizer=adagrad"), 0.1)
    hparams = registry.hparams("transformer_tpu").parse("optimizer_adafactor_decay_type=linear")
    with pytest.raises(ValueError, match="decay_type must be 'pow' or 'Adam'"):
        make_optimizer(hparams, 0.1)
