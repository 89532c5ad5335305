"""SpecAugment's frequency and time masks (Park et al., 2019).

The masks apply to one utterance's normalized features, keyed by a stateless
seed.

`SpecAugmentConfig` holds the masks' settings (hparams `specaugment_<field>`,
read by `FeatureConfig.from_hparams`); `spec_augment` applies them.
"""

from __future__ import annotations

import dataclasses

import tensorflow as tf

from t2t_lite.data.random_seeds import INT32_MAX, stateless_seed


def _band_mask(size: tf.Tensor, max_width: tf.Tensor, draws: tf.Tensor) -> tf.Tensor:
    """[size] bool: the union of `num_masks` random bands along one axis.

    Each band has width `w ~ U{0..max_width}` and start `s ~ U{0..size - w}`
    (SpecAugment, Park et al. 2019, Sec. 2), taken from `draws`, int32
    `[2, num_masks]` uniform in `[0, 2**31 - 1)`, by modulo (its bias is
    below size / 2**31, i.e. negligible).
    """
    max_width = tf.minimum(tf.cast(max_width, tf.int32), size)
    widths = draws[0] % (max_width + 1)
    starts = draws[1] % (size - widths + 1)
    positions = tf.range(size)[tf.newaxis, :]
    inside = (positions >= starts[:, tf.newaxis]) & (positions < (starts + widths)[:, tf.newaxis])
    return tf.reduce_any(inside, axis=0)


# A field's hparam is this prefix and the field's name.
HPARAM_PREFIX = "specaugment_"


@dataclasses.dataclass(frozen=True)
class SpecAugmentConfig:
    """SpecAugment's masks: off by default, as in T2T.

    Attributes:
        freq_masks: number of frequency masks (0 disables them).
        freq_mask_width: maximum frequency mask width F in mel bins.
        time_masks: number of time masks (0 disables them).
        time_mask_width: maximum time mask width T in frames.
        time_mask_max_fraction: upper bound p on a time mask's width as a
            fraction of the utterance's frames.

    Example:
    >>> SpecAugmentConfig(freq_masks=2, time_masks=2).enabled
    True
    """

    freq_masks: int = 0
    freq_mask_width: int = 27
    time_masks: int = 0
    time_mask_width: int = 100
    time_mask_max_fraction: float = 1.0

    def __post_init__(self):
        for field in ("freq_masks", "freq_mask_width", "time_masks", "time_mask_width"):
            if getattr(self, field) < 0:
                raise ValueError(
                    f"hparam {HPARAM_PREFIX}{field} must be >= 0, got {getattr(self, field)}."
                )
        if not 0.0 <= self.time_mask_max_fraction <= 1.0:
            raise ValueError(
                f"hparam {HPARAM_PREFIX}time_mask_max_fraction must be in [0, 1], "
                f"got {self.time_mask_max_fraction}."
            )

    @property
    def enabled(self) -> bool:
        """Whether any mask is drawn."""
        return bool(self.freq_masks or self.time_masks)


# The paper's LibriSpeech double policy (LD: F=27, mF=2, T=100, mT=2,
# p=1.0) minus time warping.
LIBRISPEECH_DOUBLE = SpecAugmentConfig(freq_masks=2, time_masks=2)


def spec_augment(
    features: tf.Tensor,
    config: SpecAugmentConfig = LIBRISPEECH_DOUBLE,
    seed: int | tf.Tensor | None = None,
    mask_value: float = 0.0,
) -> tf.Tensor:
    """SpecAugment frequency and time masking of one utterance (Park et al., 2019).

    Draws `config.freq_masks` bands of `f ~ U{0..freq_mask_width}`
    consecutive mel bins and `config.time_masks` bands of `t ~ U{0..T'}`
    consecutive frames, `T' = min(time_mask_width, floor(time_mask_max_fraction
    * frames))`, and sets them to `mask_value` in every channel. Apply it
    after normalization, where 0 is the mean.

    All randomness comes from stateless integer draws keyed by `seed`, so the
    same seed gives the same masks in eager mode, `tf.function`, XLA and
    `tf.data`.

    Args:
      features: float32 `[frames, bins, channels]` of one utterance.
      config: the masks; default the paper's LibriSpeech double policy.
      seed: a Python int or an int `[2]` tensor; None draws a fresh seed from
        the global generator (not repeatable).
      mask_value: the value written into masked cells.

    Returns:
      float32 tensor shaped like `features`.

    Example:
      >>> features = tf.random.normal([300, 80, 3])
      >>> augmented = spec_augment(features, seed=7)
      >>> # In tf.data, give each example its own seed:
      >>> # ds = tf.data.Dataset.zip((ds, tf.data.Dataset.random(seed=1).batch(2)))
      >>> # ds = ds.map(lambda x, s: spec_augment(x, seed=s))
    """
    features = tf.convert_to_tensor(features, tf.float32)
    if features.shape.rank is not None and features.shape.rank != 3:
        raise ValueError(
            "spec_augment expects one utterance shaped [frames, bins, channels], "
            f"got shape {features.shape}."
        )
    if not config.enabled:
        return features
    num_freq_masks, num_time_masks = config.freq_masks, config.time_masks
    # One draw for every band: integers only, since XLA and the TF kernels
    # turn random bits into floats differently but agree on integers, so the
    # masks match in every mode.
    draws = tf.random.stateless_uniform(
        [2, num_freq_masks + num_time_masks],
        seed=stateless_seed(seed),
        minval=0,
        maxval=INT32_MAX,
        dtype=tf.int32,
    )
    num_frames, num_bins = tf.shape(features)[0], tf.shape(features)[1]
    # The masks stay [frames or 1, bins or 1, 1] and broadcast in the one
    # `where`: no full-size boolean tensors to make and combine.
    masked = tf.zeros([1, 1, 1], tf.bool)
    if num_freq_masks > 0:
        freq_mask = _band_mask(num_bins, config.freq_mask_width, draws[:, :num_freq_masks])
        masked |= freq_mask[tf.newaxis, :, tf.newaxis]
    if num_time_masks > 0:
        fraction_limit = tf.cast(
            tf.floor(config.time_mask_max_fraction * tf.cast(num_frames, tf.float32)),
            tf.int32,
        )
        max_width = tf.minimum(config.time_mask_width, fraction_limit)
        time_mask = _band_mask(num_frames, max_width, draws[:, num_freq_masks:])
        masked |= time_mask[:, tf.newaxis, tf.newaxis]
    return tf.where(masked, tf.cast(mask_value, tf.float32), features)
