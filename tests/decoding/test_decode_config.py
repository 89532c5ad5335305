"""DecodeConfig: T2T's override text read once, every bad value one sentence."""

import types

import pytest

from t2t_lite.decoding.decode_config import (
    DEFAULT_CTC_WEIGHT,
    MODEL_CTC_WEIGHT,
    DecodeConfig,
)


def test_defaults_are_t2ts_with_the_ctc_weight_left_to_the_model():
    config = DecodeConfig.parse("")
    assert (config.beam_size, config.alpha, config.extra_length) == (4, 0.6, 50)
    assert config.ctc_weight == MODEL_CTC_WEIGHT and config == DecodeConfig()


def test_overrides_are_typed_and_a_base_can_be_overridden():
    config = DecodeConfig.parse("ctc_weight=1,return_beams=true,segment_seconds=6")
    assert config.ctc_weight == 1.0 and isinstance(config.ctc_weight, float)
    assert config.return_beams is True and config.segment_seconds == 6.0
    eval_config = DecodeConfig.parse("alpha=0.2", base=DecodeConfig.parse("beam_size=1"))
    assert (eval_config.beam_size, eval_config.alpha) == (1, 0.2)


@pytest.mark.parametrize(
    "overrides, message",
    [
        ("beam_size=0", "decode hparam beam_size must be >= 1, got 0."),
        ("batch_size=0", "decode hparam batch_size must be >= 1, got 0."),
        ("segment_seconds=-1", "decode hparam segment_seconds must be >= 0, got -1.0."),
        ("ctc_weight=1.5", "decode hparam ctc_weight must be in [0, 1], got 1.5."),
        ("stream_final=guess", "decode hparam stream_final must be one of search, rescore"),
        ("beam_width=4", "beam_width"),
        ("beam_size=four", "beam_size"),
    ],
)
def test_a_bad_value_is_one_sentence(overrides, message):
    with pytest.raises(ValueError) as error:
        DecodeConfig.parse(overrides)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_for_model_settles_the_ctc_weight_and_refuses_what_the_model_cannot_do():
    with_head = types.SimpleNamespace(input_modality="speech", ctc_projection=object())
    without = types.SimpleNamespace(input_modality="speech", ctc_projection=None)
    language_model = types.SimpleNamespace(input_modality=None, ctc_projection=None)
    assert DecodeConfig().for_model(with_head).ctc_weight == DEFAULT_CTC_WEIGHT
    assert DecodeConfig().for_model(without).ctc_weight == 0.0
    assert DecodeConfig.parse("ctc_weight=0").for_model(with_head).ctc_weight == 0.0
    with pytest.raises(ValueError, match="needs a model with a CTC head"):
        DecodeConfig.parse("ctc_weight=0.5").for_model(without)
    with pytest.raises(ValueError, match="a language model has none"):
        DecodeConfig().for_model(language_model)


def test_the_config_is_frozen_and_values_round_trip():
    config = DecodeConfig.parse("beam_size=2")
    with pytest.raises(AttributeError):
        config.beam_size = 3
    assert DecodeConfig(**config.values()) == config
