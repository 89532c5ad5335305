"""The augmentation hparams and the typed config they are read into.

`AUGMENT_HPARAMS` are the `aug_*` hparams a speech problem adds, all off by
default; `AugmentConfig.from_hparams` reads and checks them. The stages that
apply a config are in `stages.py`, their order in `recording.py`.
"""

from __future__ import annotations

import dataclasses
import functools

from t2t_lite.data.audio_augment.speed import speed_fraction
from t2t_lite.data.audio_io import SAMPLE_RATE

# The hparams that drive the stages (`stages.py`) (through `AugmentConfig.from_hparams`),
# all off by default. HParams types are fixed by the default value and an empty
# list would be typed "list of str" (and JSON could not say otherwise), so "off"
# is written [1.0] for the speed factors and [0.0, 0.0] for the volume range.
AUGMENT_HPARAMS = {
    # Speed perturbation: one factor drawn uniformly per utterance (include 1.0
    # to leave some unchanged); [1.0] is off. Kaldi/ESPnet: [0.9, 1.0, 1.1].
    "aug_speed_factors": [1.0],
    "aug_speed_prob": 1.0,
    # Volume perturbation: gain drawn uniformly in [min, max] dB; [0, 0] is off.
    "aug_volume_db": [0.0, 0.0],
    "aug_volume_prob": 1.0,
    # Additive noise at an SNR drawn uniformly in [min, max] dB, from the WAV/FLAC
    # files under aug_noise_dir, or generated white/pink/brown noise if "".
    "aug_noise_prob": 0.0,
    "aug_noise_snr_db": [5.0, 20.0],
    "aug_noise_dir": "",
    # Reverberation by room impulse responses under aug_rir_dir, or synthetic
    # ones (RT60 0.2-0.8 s) if "".
    "aug_reverb_prob": 0.0,
    "aug_rir_dir": "",
    # Babble (`babble.add_babble`): [min, max] other training utterances
    # talking under this one at an SNR drawn in [min, max] dB.
    "aug_babble_prob": 0.0,
    "aug_babble_snr_db": [5.0, 25.0],
    "aug_babble_voices": [3, 6],
    # A pause after the utterance (`pause.append_pause`): white noise
    # [min, max] dB under the utterance's level for [min, max] seconds.
    "aug_pause_prob": 0.0,
    "aug_pause_seconds": [0.15, 0.4],
    "aug_pause_db": [30.0, 50.0],
    # A pause before the utterance (`pause.prepend_pause`), as loud as the
    # pause after: the quiet before a speaker starts.
    "aug_lead_prob": 0.0,
    "aug_lead_seconds": [0.2, 1.5],
    # A room's noise floor (`floor.add_floor`) at an absolute level drawn in
    # [min, max] dBFS, under everything, pauses included.
    "aug_floor_prob": 0.0,
    "aug_floor_dbfs": [-75.0, -45.0],
    # A microphone's or telephone line's band (`band.band_limit`): lower edge
    # drawn in aug_band_low_hz, upper in aug_band_high_hz.
    "aug_band_prob": 0.0,
    "aug_band_low_hz": [50.0, 400.0],
    "aug_band_high_hz": [3400.0, 8000.0],
}


def _float_pair(name: str, value) -> tuple[float, float]:
    values = tuple(float(v) for v in value)
    if len(values) != 2 or values[0] > values[1]:
        raise ValueError(f"{name} must be [min, max] with min <= max, got {list(value)}.")
    return values


def _probability(name: str, value) -> float:
    value = float(value)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be a probability in [0, 1], got {value}.")
    return value


@dataclasses.dataclass(frozen=True)
class AugmentConfig:
    """Which waveform augmentations `augment_waveform` applies, and how.

    Fields mirror `AUGMENT_HPARAMS` without the `aug_` prefix; the defaults
    turn everything off. Lists are stored as tuples, so a config is hashable.

    Example:
      >>> config = AugmentConfig(speed_factors=(0.9, 1.0, 1.1), noise_prob=0.5)
      >>> config.enabled, config.reverb_enabled
      (True, False)
    """

    speed_factors: tuple[float, ...] = (1.0,)
    speed_prob: float = 1.0
    volume_db: tuple[float, float] = (0.0, 0.0)
    volume_prob: float = 1.0
    noise_prob: float = 0.0
    noise_snr_db: tuple[float, float] = (5.0, 20.0)
    noise_dir: str = ""
    reverb_prob: float = 0.0
    rir_dir: str = ""
    babble_prob: float = 0.0
    babble_snr_db: tuple[float, float] = (5.0, 25.0)
    babble_voices: tuple[int, int] = (3, 6)
    pause_prob: float = 0.0
    pause_seconds: tuple[float, float] = (0.15, 0.4)
    pause_db: tuple[float, float] = (30.0, 50.0)
    lead_prob: float = 0.0
    lead_seconds: tuple[float, float] = (0.2, 1.5)
    floor_prob: float = 0.0
    floor_dbfs: tuple[float, float] = (-75.0, -45.0)
    band_prob: float = 0.0
    band_low_hz: tuple[float, float] = (50.0, 400.0)
    band_high_hz: tuple[float, float] = (3400.0, 8000.0)
    sample_rate: int = SAMPLE_RATE

    def __post_init__(self):
        set_field = functools.partial(object.__setattr__, self)
        # An empty list (off) may come back from JSON typed as strings.
        factors = tuple(float(f) for f in self.speed_factors) or (1.0,)
        for factor in factors:
            speed_fraction(factor)
        set_field("speed_factors", factors)
        set_field("volume_db", _float_pair("volume_db", self.volume_db))
        set_field("noise_snr_db", _float_pair("noise_snr_db", self.noise_snr_db))
        set_field("babble_snr_db", _float_pair("babble_snr_db", self.babble_snr_db))
        voices = tuple(int(v) for v in self.babble_voices)
        if len(voices) != 2 or not 1 <= voices[0] <= voices[1]:
            raise ValueError(
                f"babble_voices must be [min, max] with 1 <= min <= max, got {list(voices)}."
            )
        set_field("babble_voices", voices)
        set_field("pause_seconds", _float_pair("pause_seconds", self.pause_seconds))
        set_field("pause_db", _float_pair("pause_db", self.pause_db))
        set_field("lead_seconds", _float_pair("lead_seconds", self.lead_seconds))
        for name in ("floor_dbfs", "band_low_hz", "band_high_hz"):
            set_field(name, _float_pair(name, getattr(self, name)))
        if self.band_low_hz[1] >= self.band_high_hz[0]:
            raise ValueError(
                f"band_low_hz {list(self.band_low_hz)} must lie under band_high_hz "
                f"{list(self.band_high_hz)}."
            )
        probabilities = ("speed_prob", "volume_prob", "noise_prob", "reverb_prob", "babble_prob",
                         "pause_prob", "lead_prob", "floor_prob", "band_prob")  # fmt: skip
        for name in probabilities:
            set_field(name, _probability(name, getattr(self, name)))
        set_field("sample_rate", int(self.sample_rate))

    @property
    def speed_enabled(self) -> bool:
        return self.speed_prob > 0 and any(f != 1.0 for f in self.speed_factors)

    @property
    def volume_enabled(self) -> bool:
        return self.volume_prob > 0 and self.volume_db != (0.0, 0.0)

    @property
    def noise_enabled(self) -> bool:
        return self.noise_prob > 0

    @property
    def reverb_enabled(self) -> bool:
        return self.reverb_prob > 0

    @property
    def babble_enabled(self) -> bool:
        return self.babble_prob > 0

    @property
    def voices_wanted(self) -> int:
        """How many other training utterances each one needs at hand (babble's)."""
        return self.babble_voices[1] if self.babble_enabled else 0

    @property
    def pause_enabled(self) -> bool:
        return self.pause_prob > 0

    @property
    def lead_enabled(self) -> bool:
        return self.lead_prob > 0

    @property
    def microphone_enabled(self) -> bool:
        return self.floor_prob > 0 or self.band_prob > 0

    @property
    def enabled(self) -> bool:
        """Whether any augmentation of `augment_waveform` is on.

        The pauses are not among them: they are `pause_after`'s and `pause_before`'s.
        """
        return any(
            (
                self.speed_enabled,
                self.volume_enabled,
                self.noise_enabled,
                self.reverb_enabled,
                self.babble_enabled,
            )
        )

    @classmethod
    def from_hparams(cls, hparams) -> AugmentConfig:
        """The config that `hparams` asks for.

        Missing `aug_*` hparams take `AUGMENT_HPARAMS`' defaults (off), and
        `sample_rate` is `audio_sample_rate`.

        Example:
          >>> from t2t_lite.hparam import HParams
          >>> hparams = HParams(**AUGMENT_HPARAMS).parse("aug_volume_db=[-6,6]")
          >>> AugmentConfig.from_hparams(hparams).volume_db
          (-6.0, 6.0)
        """

        def get(name):
            return hparams.get(name, AUGMENT_HPARAMS[name])

        return cls(
            speed_factors=tuple(get("aug_speed_factors")),
            speed_prob=get("aug_speed_prob"),
            volume_db=tuple(get("aug_volume_db")),
            volume_prob=get("aug_volume_prob"),
            noise_prob=get("aug_noise_prob"),
            noise_snr_db=tuple(get("aug_noise_snr_db")),
            noise_dir=get("aug_noise_dir"),
            reverb_prob=get("aug_reverb_prob"),
            rir_dir=get("aug_rir_dir"),
            babble_prob=get("aug_babble_prob"),
            babble_snr_db=tuple(get("aug_babble_snr_db")),
            babble_voices=tuple(get("aug_babble_voices")),
            pause_prob=get("aug_pause_prob"),
            pause_seconds=tuple(get("aug_pause_seconds")),
            pause_db=tuple(get("aug_pause_db")),
            lead_prob=get("aug_lead_prob"),
            lead_seconds=tuple(get("aug_lead_seconds")),
            floor_prob=get("aug_floor_prob"),
            floor_dbfs=tuple(get("aug_floor_dbfs")),
            band_prob=get("aug_band_prob"),
            band_low_hz=tuple(get("aug_band_low_hz")),
            band_high_hz=tuple(get("aug_band_high_hz")),
            sample_rate=hparams.get("audio_sample_rate", SAMPLE_RATE),
        )
