"""Optimizers from core Keras with T2T's hparam names."""

import keras
import pytest

from t2t_lite import registry
from t2t_lite.training.optimizers import make_optimizer


def test_adam_uses_t2t_betas():
    optimizer = make_optimizer(registry.hparams("transformer_base"), 0.1)
    assert isinstance(optimizer, keras.optimizers.Adam)
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


def test_tpu_sets_get_adafactor_and_accumulation_is_keras():
    hparams = registry.hparams("transformer_librispeech_tpu").parse(
        "optimizer_multistep_accumulate_steps=4"
    )
    optimizer = make_optimizer(hparams, 0.1)
    assert isinstance(optimizer, keras.optimizers.Adafactor)
    assert optimizer.beta_2_decay == -0.8 and optimizer.relative_step is False
    assert optimizer.gradient_accumulation_steps == 4


def test_unsupported_settings_are_errors():
    with pytest.raises(ValueError, match="hparam 'optimizer' is 'adagrad'"):
        make_optimizer(registry.hparams("transformer_base").parse("optimizer=adagrad"), 0.1)
    hparams = registry.hparams("transformer_tpu").parse("optimizer_adafactor_beta1=0.9")
    with pytest.raises(ValueError, match="optimizer_adafactor_beta1"):
        make_optimizer(hparams, 0.1)
