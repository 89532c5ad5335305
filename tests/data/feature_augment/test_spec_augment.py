"""SpecAugment's masks: widths, counts and fraction as asked, and the same
masks for a seed in eager mode, XLA and tf.data."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.data.feature_augment.spec_augment import SpecAugmentConfig, spec_augment


def _runs(flags):
    """Lengths of the runs of True in a 1-D bool array."""
    padded = np.concatenate([[0], flags.astype(np.int8), [0]])
    edges = np.flatnonzero(np.diff(padded))
    return list(edges[1::2] - edges[::2])


def test_spec_augment_without_masks_is_a_no_op():
    features = tf.random.normal([50, 20, 3])
    augmented = spec_augment(features, SpecAugmentConfig(), seed=3)
    np.testing.assert_array_equal(augmented.numpy(), features.numpy())
    no_width = SpecAugmentConfig(freq_masks=2, freq_mask_width=0, time_masks=2, time_mask_width=0)
    zero_width = spec_augment(features, no_width, seed=3)
    np.testing.assert_array_equal(zero_width.numpy(), features.numpy())


def test_spec_augment_frequency_masks_have_the_requested_width():
    widths = []
    for seed in range(40):
        augmented = spec_augment(
            tf.ones([30, 80, 3]),
            SpecAugmentConfig(freq_masks=1, freq_mask_width=10),
            seed=seed,
        ).numpy()
        masked_bins = np.all(augmented == 0.0, axis=(0, 2))
        # A bin is masked in every frame and channel, or not at all.
        assert np.all(augmented[:, ~masked_bins] == 1.0)
        runs = _runs(masked_bins)
        assert len(runs) <= 1
        widths.append(runs[0] if runs else 0)
    assert max(widths) == 10 and min(widths) <= 2


def test_spec_augment_time_masks_respect_count_width_and_fraction():
    for seed in range(20):
        augmented = spec_augment(
            tf.ones([200, 8, 2]),
            # at most 10 of the 200 frames
            SpecAugmentConfig(time_masks=3, time_mask_width=100, time_mask_max_fraction=0.05),
            seed=seed,
        ).numpy()
        masked_frames = np.all(augmented == 0.0, axis=(1, 2))
        assert np.all(augmented[~masked_frames] == 1.0)
        runs = _runs(masked_frames)
        assert len(runs) <= 3
        assert sum(runs) <= 30 and max(runs, default=0) <= 30


def test_spec_augment_is_deterministic_for_a_seed_in_every_mode():
    features = tf.random.stateless_normal([120, 40, 3], seed=[0, 1])
    first = spec_augment(features, seed=11).numpy()
    again = spec_augment(features, seed=11).numpy()
    other = spec_augment(features, seed=12).numpy()
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)
    assert 0 < np.mean(first == 0.0) < 1

    compiled = tf.function(lambda x, seed: spec_augment(x, seed=seed), jit_compile=True)
    np.testing.assert_array_equal(compiled(features, tf.constant([11, 0])).numpy(), first)

    def pipeline():
        seeds = tf.data.Dataset.random(seed=5).batch(2)
        examples = tf.data.Dataset.from_tensors(features).repeat(3)
        return [
            x.numpy()
            for x in tf.data.Dataset.zip((examples, seeds)).map(
                lambda x, seed: spec_augment(x, seed=seed)
            )
        ]

    run_one, run_two = pipeline(), pipeline()
    for one, two in zip(run_one, run_two, strict=True):
        np.testing.assert_array_equal(one, two)
    assert not np.array_equal(run_one[0], run_one[1])


def test_spec_augment_rejects_batches():
    with pytest.raises(ValueError, match="one utterance"):
        spec_augment(tf.zeros([2, 10, 8, 3]), seed=0)


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"freq_masks": -1}, "hparam specaugment_freq_masks must be >= 0, got -1."),
        ({"time_mask_max_fraction": 1.5}, "specaugment_time_mask_max_fraction must be in [0, 1]"),
    ],
)
def test_a_bad_setting_is_one_sentence_naming_its_hparam(fields, message):
    with pytest.raises(ValueError) as error:
        SpecAugmentConfig(**fields)
    assert message in str(error.value) and "\n" not in str(error.value)
