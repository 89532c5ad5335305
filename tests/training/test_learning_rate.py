"""T2T's learning-rate factors and schedule strings."""

import math

import keras
import pytest

from t2t_lite import registry
from t2t_lite.training.learning_rate import T2TSchedule


def t2t_base_rate(step):
    """T2T's transformer_base schedule, written out by hand."""
    return 2.0 * min(1.0, step / 8000) * max(step, 8000) ** -0.5 * 512**-0.5


@pytest.mark.parametrize("step", [0, 1, 100, 4000, 7999, 8000, 8001, 20000, 100000])
def test_transformer_base_schedule_matches_t2t(step):
    schedule = T2TSchedule.from_hparams(registry.hparams("transformer_base"))
    assert float(schedule(step)) == pytest.approx(t2t_base_rate(step), rel=1e-6, abs=1e-12)


def test_known_values():
    schedule = T2TSchedule.from_hparams(registry.hparams("transformer_base"))
    assert float(schedule(8000)) == pytest.approx(9.882118e-4, rel=1e-6)
    assert float(schedule(4000)) == pytest.approx(4.941059e-4, rel=1e-6)
    assert float(schedule(32000)) == pytest.approx(4.941059e-4, rel=1e-6)


def test_other_factors():
    hparams = registry.hparams("transformer_base").parse(
        "learning_rate_warmup_steps=100,learning_rate_decay_steps=1000,learning_rate_decay_rate=0.5"
    )
    values = {name: hparams.get(name) for name in hparams.keys()}

    def rate(schedule, step, train_steps=0):
        return float(T2TSchedule(schedule, values, train_steps)(step))

    assert rate("rsqrt_normalized_decay", 400) == pytest.approx(math.sqrt(100) / math.sqrt(400))
    assert rate("linear_decay", 1500, train_steps=2000) == pytest.approx(0.5)
    assert rate("linear_decay", 10, train_steps=2000) == 1.0
    assert rate("exp_decay", 2100) == pytest.approx(0.5**2)
    assert rate("cosdecay", 50) == 1.0
    assert rate("cosdecay", 500) == pytest.approx(0.5 * (1 + math.cos(math.pi * 0.5)))
    assert rate("constant*rsqrt_hidden_size", 7) == pytest.approx(2.0 / math.sqrt(512))
    # The TPU sets' "rsqrt_decay" alone.
    tpu = T2TSchedule.from_hparams(registry.hparams("transformer_librispeech_tpu"))
    assert float(tpu(40000)) == pytest.approx(40000**-0.5)


def test_accumulation_divides_the_batch_count_keras_gives_the_schedule():
    """Keras 3 calls the schedule with its batch count (`_iterations`); T2T
    divided its global step by the accumulation. With 4 batches an update,
    the rate applied at the 2nd update is the schedule's at step 8 / 4 less
    one batch: measured on an SGD step of a constant gradient."""
    hparams = registry.hparams("transformer_base").parse(
        "optimizer_multistep_accumulate_steps=4,learning_rate_schedule=linear_warmup,"
        "learning_rate_warmup_steps=100"
    )
    schedule = T2TSchedule.from_hparams(hparams)
    assert float(schedule(40)) == pytest.approx(40 / 4 / 100)  # not 40 / 100
    optimizer = keras.optimizers.SGD(learning_rate=schedule, gradient_accumulation_steps=4)
    weight = keras.Variable(0.0)
    optimizer.build([weight])
    moves = []
    for _ in range(8):
        before = float(weight.numpy())
        optimizer.apply_gradients([(keras.ops.convert_to_tensor(1.0), weight)])
        moves.append(before - float(weight.numpy()))
    # Updates at the 4th and 8th batch, when Keras's count is 3 and 7.
    assert moves[3] == pytest.approx(3 / 4 / 100) and moves[7] == pytest.approx(7 / 4 / 100)
    assert moves[:3] == moves[4:7] == [0.0, 0.0, 0.0]


def test_unknown_and_legacy_factors_are_errors():
    hparams = registry.hparams("transformer_base")
    with pytest.raises(ValueError, match="unknown learning rate factor 'warmup'"):
        T2TSchedule.from_hparams(hparams.parse("learning_rate_schedule=constant*warmup"))
    with pytest.raises(ValueError, match="legacy schedule reads learning_rate"):
        T2TSchedule.from_hparams(hparams.parse("learning_rate_schedule=legacy"))


def test_config_round_trip():
    schedule = T2TSchedule.from_hparams(registry.hparams("transformer_base"), train_steps=10)
    clone = T2TSchedule.from_config(schedule.get_config())
    assert float(clone(5000)) == float(schedule(5000))
