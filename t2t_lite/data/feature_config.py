"""The speech front end's settings, typed and checked once.

A speech problem adds `AUDIO_HPARAMS` (T2T's `audio_*` names, SpecAugment's,
the envelope augmentation's and VTLP's) to a run's hparams; `FeatureConfig.from_hparams`
is the one place that reads them, checks them (one sentence per bad value)
and hands the featurization, the length rules, word times and the exports a
frozen config, as the model takes its `TransformerConfig`. The training
set's normalization prior (`causal_normalization.Prior`), which the trainer
stores in the run's hparams, is read and written here too.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from t2t_lite.data.audio_augment import AugmentConfig
from t2t_lite.data.audio_io import SAMPLE_RATE
from t2t_lite.data.causal_normalization import Prior
from t2t_lite.data.feature_augment.spec_augment import HPARAM_PREFIX, SpecAugmentConfig
from t2t_lite.hparam import HParams

# Field -> its hparam: T2T's name where T2T had the setting. The defaults
# are the dataclass's; `AUDIO_HPARAMS` (below the class) pairs the two.
HPARAM_NAMES = {
    "sample_rate": "audio_sample_rate",
    "preemphasis": "audio_preemphasis",
    "dither": "audio_dither",
    "frame_length_ms": "audio_frame_length",
    "frame_step_ms": "audio_frame_step",
    "lower_edge_hertz": "audio_lower_edge_hertz",
    "upper_edge_hertz": "audio_upper_edge_hertz",
    "num_mel_bins": "audio_num_mel_bins",
    "add_delta_deltas": "audio_add_delta_deltas",
    "causal_normalization": "audio_causal_normalization",
    "prior_frames": "audio_normalization_prior_frames",
    "statistics_floor_db": "audio_statistics_floor_db",
    "envelope_db": "aug_envelope_db",
    "vtlp_warp": "aug_vtlp_warp",
}
# SpecAugment's fields (`FeatureConfig.spec_augment`) -> their hparams.
_SPEC_AUGMENT_NAMES = {
    field: HPARAM_PREFIX + field.name for field in dataclasses.fields(SpecAugmentConfig)
}
# Where the trainer keeps the training set's statistics: `[mel_bins *
# channels]` floats flattened from `[mel_bins, channels]`.
PRIOR_MEAN = "audio_normalization_prior_mean"
PRIOR_MEAN_SQUARE = "audio_normalization_prior_mean_square"


def hparam_name(field: str) -> str:
    """The hparam behind a `FeatureConfig` field (for messages)."""
    return HPARAM_NAMES[field]


@dataclasses.dataclass(frozen=True)
class FeatureConfig:
    """How waveforms become the model's input features.

    Attributes: see `HPARAM_NAMES` for each field's hparam; `prior` is the
    training set's statistics when the hparams hold them; `augment` the
    waveform augmentations (`aug_*`, `AugmentConfig`); `spec_augment`
    SpecAugment's masks (`specaugment_*`, `SpecAugmentConfig`).

    Example:
    >>> config = FeatureConfig()
    >>> config.frame_step_samples, config.frame_length_samples, config.channels
    (160, 400, 3)
    """

    sample_rate: int = SAMPLE_RATE
    preemphasis: float = 0.97
    dither: float = 1.0 / np.iinfo(np.int16).max  # triangular, training only
    frame_length_ms: float = 25.0
    frame_step_ms: float = 10.0
    lower_edge_hertz: float = 20.0
    upper_edge_hertz: float = 8000.0
    num_mel_bins: int = 80
    add_delta_deltas: bool = True
    # t2t-lite: running statistics for streaming (causal_normalization.py),
    # started from the training set's worth `prior_frames` frames.
    causal_normalization: bool = False
    prior_frames: int = 0
    # t2t-lite: frames this many dB under a reference are left out of the
    # normalization's statistics (the quiet before speech), 0 = none are.
    # The reference is the prior's level for running statistics, else the
    # utterance's own loud frames (utterance_level.py).
    statistics_floor_db: float = 0.0
    # t2t-lite: envelope augmentation (spectral_envelope.py), 0 = off.
    envelope_db: float = 0.0
    # t2t-lite: vocal tract length perturbation's largest |alpha - 1|
    # (vocal_tract_warp.py), 0 = off.
    vtlp_warp: float = 0.0
    prior: Prior | None = dataclasses.field(default=None, compare=False)
    augment: AugmentConfig = AugmentConfig()
    spec_augment: SpecAugmentConfig = SpecAugmentConfig()

    def __post_init__(self):
        positive = ("sample_rate", "frame_length_ms", "frame_step_ms", "num_mel_bins")
        at_least_zero = (
            "dither",
            "prior_frames",
            "statistics_floor_db",
            "envelope_db",
            "vtlp_warp",
        )
        for name in positive:
            if not getattr(self, name) > 0:
                raise ValueError(
                    f"hparam {hparam_name(name)} must be > 0, got {getattr(self, name)}."
                )
        for name in at_least_zero:
            if getattr(self, name) < 0:
                raise ValueError(
                    f"hparam {hparam_name(name)} must be >= 0, got {getattr(self, name)}."
                )
        if not self.vtlp_warp < 0.5:
            raise ValueError(
                f"hparam {hparam_name('vtlp_warp')} must be under 0.5 (a warp factor between "
                f"0.5 and 1.5), got {self.vtlp_warp}; Jaitly and Hinton's is 0.1."
            )
        if not 0 <= self.lower_edge_hertz < self.upper_edge_hertz <= self.sample_rate / 2:
            raise ValueError(
                f"hparams audio_lower_edge_hertz={self.lower_edge_hertz} and "
                f"audio_upper_edge_hertz={self.upper_edge_hertz} must satisfy "
                f"0 <= lower < upper <= half the sample rate ({self.sample_rate / 2:g})."
            )
        if self.prior_frames > 0 and not self.causal_normalization:
            raise ValueError(
                f"hparams set audio_normalization_prior_frames={self.prior_frames} without "
                "audio_causal_normalization: the prior only starts causal running statistics; "
                "set audio_causal_normalization=true or audio_normalization_prior_frames=0."
            )
        if self.statistics_floor_db > 0 and self.causal_normalization and not self.prior_frames:
            raise ValueError(
                f"hparams set audio_statistics_floor_db={self.statistics_floor_db} without "
                "audio_normalization_prior_frames: the floor is under the prior's level; "
                "set audio_normalization_prior_frames > 0 or audio_statistics_floor_db=0."
            )

    @classmethod
    def from_hparams(cls, hparams: HParams) -> FeatureConfig:
        """The config a speech run's hparams give (defaults for names they lack).

        Raises:
            ValueError: a value out of range, one sentence naming its hparam.
        """
        values = {
            field: hparams.get(name) for field, name in HPARAM_NAMES.items() if name in hparams
        }
        masks = {
            field.name: hparams.get(name)
            for field, name in _SPEC_AUGMENT_NAMES.items()
            if name in hparams
        }
        config = cls(
            **values,
            augment=AugmentConfig.from_hparams(hparams),
            spec_augment=SpecAugmentConfig(**masks),
        )
        if config.wants_prior and PRIOR_MEAN in hparams and PRIOR_MEAN_SQUARE in hparams:
            bins = config.num_mel_bins
            prior = Prior(
                mean=np.asarray(hparams.get(PRIOR_MEAN), np.float32).reshape(bins, -1),
                mean_square=np.asarray(hparams.get(PRIOR_MEAN_SQUARE), np.float32).reshape(
                    bins, -1
                ),
                frames=config.prior_frames,
            )
            config = dataclasses.replace(config, prior=prior)
        return config

    @property
    def wants_prior(self) -> bool:
        """Whether causal statistics start from the training set's."""
        return self.prior_frames > 0

    def required_prior(self) -> Prior | None:
        """The prior featurization starts from; None when none is wanted.

        Raises:
            ValueError: one is wanted but the hparams held no statistics.
        """
        if not self.wants_prior:
            return None
        if self.prior is None:
            raise ValueError(
                f"hparams set audio_normalization_prior_frames={self.prior_frames} but hold no "
                f"training-set statistics ({PRIOR_MEAN}): train with t2t-lite-trainer, which "
                "computes them, or set audio_normalization_prior_frames=0."
            )
        return self.prior

    @property
    def frame_step_samples(self) -> int:
        """Samples between feature frames (160 at 16 kHz and 10 ms)."""
        return int(self.frame_step_ms * self.sample_rate / 1000)

    @property
    def frame_length_samples(self) -> int:
        """Samples in one feature frame's window (400 at 16 kHz and 25 ms)."""
        return int(self.frame_length_ms * self.sample_rate / 1000)

    @property
    def frame_seconds(self) -> float:
        """Seconds between feature frames."""
        return self.frame_step_ms / 1000.0

    @property
    def channels(self) -> int:
        """Feature channels: 3 with delta-deltas, else 1."""
        return 3 if self.add_delta_deltas else 1


# The hparams a speech problem adds (T2T's SpeechRecognitionProblem.hparams
# and t2t-lite's), with their defaults.
AUDIO_HPARAMS = {
    **{name: getattr(FeatureConfig(), field) for field, name in HPARAM_NAMES.items()},
    **{name: field.default for field, name in _SPEC_AUGMENT_NAMES.items()},
}


def store_prior(hparams: HParams, mean, mean_square) -> None:
    """Keeps a prior's statistics in `hparams`, where `FeatureConfig.from_hparams` finds them.

    They are added, or replace those already there.

    Args:
        hparams: the run's hparams, changed in place.
        mean: `[mel_bins, channels]` mean of unnormalized features.
        mean_square: `[mel_bins, channels]` their mean square.
    """
    for name, value in ((PRIOR_MEAN, mean), (PRIOR_MEAN_SQUARE, mean_square)):
        flat = [float(x) for x in np.asarray(value, np.float64).reshape(-1)]
        if name in hparams:
            hparams.set_hparam(name, flat)
        else:
            hparams.add_hparam(name, flat)


def saved_prior(hparams: HParams) -> tuple[list, list] | None:
    """`(mean, mean_square)` as stored in `hparams`, or None if absent."""
    if PRIOR_MEAN not in hparams or PRIOR_MEAN_SQUARE not in hparams:
        return None
    return hparams.get(PRIOR_MEAN), hparams.get(PRIOR_MEAN_SQUARE)
