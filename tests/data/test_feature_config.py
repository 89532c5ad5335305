"""FeatureConfig: the audio hparams read once, every bad value one sentence."""

import pytest

from t2t_lite import registry
from t2t_lite.data.feature_config import AUDIO_HPARAMS, FeatureConfig, store_prior
from t2t_lite.hparam import HParams


def test_the_defaults_are_t2ts_front_end_and_the_hparams_table():
    config = FeatureConfig.from_hparams(HParams(**AUDIO_HPARAMS))
    assert config == FeatureConfig()
    assert (config.sample_rate, config.num_mel_bins, config.frame_step_ms) == (16000, 80, 10.0)
    assert (config.frame_step_samples, config.frame_length_samples, config.channels) == (
        160,
        400,
        3,
    )
    assert not config.augment.enabled and not config.spec_augment.enabled


def test_a_registered_set_reads_through():
    hparams = registry.problem("librispeech").add_hparams(
        registry.hparams("transformer_speech_small_streaming")
    )
    config = FeatureConfig.from_hparams(hparams)
    assert config.causal_normalization and config.prior_frames == 100 and config.envelope_db == 4.0
    assert config.prior is None  # the trainer adds the statistics
    store_prior(hparams, [[0.0] * 3] * 80, [[1.0] * 3] * 80)
    prior = FeatureConfig.from_hparams(hparams).required_prior()
    assert prior.mean.shape == (80, 3) and prior.frames == 100


def test_specaugment_hparams_reach_the_nested_config():
    hparams = HParams(**{**AUDIO_HPARAMS, "specaugment_freq_masks": 2, "specaugment_time_masks": 1})
    masks = FeatureConfig.from_hparams(hparams).spec_augment
    assert (masks.freq_masks, masks.freq_mask_width, masks.time_masks) == (2, 27, 1)
    assert masks.enabled


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"audio_num_mel_bins": 0}, "hparam audio_num_mel_bins must be > 0, got 0."),
        ({"audio_dither": -1.0}, "hparam audio_dither must be >= 0, got -1.0."),
        ({"audio_upper_edge_hertz": 9000.0}, "must satisfy 0 <= lower < upper <= half"),
        ({"specaugment_time_mask_max_fraction": 2.0}, "must be in [0, 1], got 2.0."),
        ({"specaugment_time_masks": -1}, "hparam specaugment_time_masks must be >= 0, got -1."),
        ({"audio_normalization_prior_frames": 5}, "without audio_causal_normalization"),
        ({"aug_volume_db": [3.0, 1.0]}, "volume_db must be [min, max]"),
        ({"aug_vtlp_warp": -0.1}, "hparam aug_vtlp_warp must be >= 0, got -0.1."),
        ({"aug_vtlp_warp": 0.5}, "hparam aug_vtlp_warp must be under 0.5"),
    ],
)
def test_a_bad_value_is_one_sentence_naming_its_hparam(overrides, message):
    with pytest.raises(ValueError) as error:
        FeatureConfig.from_hparams(HParams(**{**AUDIO_HPARAMS, **overrides}))
    assert message in str(error.value) and "\n" not in str(error.value)
