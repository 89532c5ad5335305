"""build_optimizer and the Trainer's handed-in parts: the optimizer arrives built."""

import keras
import pytest

from t2t_lite import registry
from t2t_lite.training.build_trainer import build_optimizer
from t2t_lite.training.trainer import Trainer


def _model():
    return keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])


def test_float16_gets_a_loss_scale_and_every_optimizer_is_built():
    hparams = registry.hparams("transformer_tiny")
    assert build_optimizer(hparams, 10, _model()).built
    hparams.activation_dtype = "float16"
    optimizer = build_optimizer(hparams, 10, _model())
    assert isinstance(optimizer, keras.optimizers.LossScaleOptimizer) and optimizer.built


def test_trainer_refuses_an_optimizer_without_slots():
    with pytest.raises(ValueError, match="inside strategy.scope"):
        Trainer(_model(), keras.optimizers.SGD(), None, None, None, None)
