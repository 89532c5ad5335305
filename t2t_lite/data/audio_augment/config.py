"""The augmentation hparams, their config, and the chain that applies them.

`AUGMENT_HPARAMS` are the `aug_*` hparams a speech problem adds;
`AugmentConfig.from_hparams` reads them. The input pipeline applies, in
order: `augment_speech` (speed, reverberation: the speaker), `pause_after`
and `pause_before` (the pauses around the utterance), `add_room_sounds`
(noise, babble, then the level, under the pauses too) and `microphone` (a
room's floor and a microphone's band over all of it), each from its own
stateless draws, so the same seed gives the same output. `augment_waveform`
is the two halves without pauses between them.
"""

from __future__ import annotations

import dataclasses
import functools

import tensorflow as tf

from t2t_lite.data.audio_augment.babble import add_babble
from t2t_lite.data.audio_augment.band import band_limit
from t2t_lite.data.audio_augment.draws import coin, split_seed
from t2t_lite.data.audio_augment.floor import add_floor
from t2t_lite.data.audio_augment.noise import add_noise, cached_noise_bank
from t2t_lite.data.audio_augment.pause import append_pause, prepend_pause
from t2t_lite.data.audio_augment.reverb import cached_rir_bank, reverberate
from t2t_lite.data.audio_augment.speed import speed_fraction, speed_perturb
from t2t_lite.data.audio_augment.volume import volume_perturb
from t2t_lite.data.audio_augment.waveform import as_waveform
from t2t_lite.data.audio_io import SAMPLE_RATE
from t2t_lite.data.random_seeds import stateless_seed

# The hparams that drive `augment_waveform` (through `AugmentConfig.from_hparams`),
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

_AUGMENT_TAG = 0x417567  # "Aug": augment_waveform's stream, apart from dither's
_PAUSE_TAG = 0x506175  # "Pau": pause_after's
_LEAD_TAG = 0x4C6561  # "Lea": pause_before's
_MICROPHONE_TAG = 0x4D6963  # "Mic": microphone's
_BABBLE_TAG = 0x426162  # "Bab": babble's, apart from the draws before it


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


def _maybe(apply_seed, probability: float, augment, waveform: tf.Tensor) -> tf.Tensor:
    """`augment()` with `probability`, else `waveform` (no coin when it is 1)."""
    if probability >= 1.0:
        return augment()
    return tf.cond(coin(apply_seed, probability), augment, lambda: waveform)


def _augment_seeds(seed) -> tuple[tf.Tensor, list[tf.Tensor]]:
    """The example's seed folded with the chain's tag, and its eight sub-seeds.

    Folding with a fixed tag lets the pipeline's per-example seed be passed as
    it is, without correlating with the dither or SpecAugment draws it also
    keys; both halves of the chain draw from the same eight.
    """
    tagged = tf.random.fold_in(stateless_seed(seed), _AUGMENT_TAG)
    return tagged, split_seed(tagged, 8)


def augment_speech(waveform, config: AugmentConfig, seed=None) -> tf.Tensor:
    """The speech as the speaker makes it in the room: speed, then reverberation.

    The first half of `augment_waveform`; apply before the pauses around the
    utterance (`pause_after`, `pause_before`), which are not the speaker's.
    Use it in training only.

    Args:
      waveform: float32 `[samples]`, one utterance in [-1, 1].
      config: an `AugmentConfig`.
      seed: an int `[2]` seed or a Python int; None draws a fresh one.

    Returns:
      float32 `[samples']` in [-1, 1] (`samples'` differs after speed
      perturbation).

    Example:
      >>> config = AugmentConfig(speed_factors=(1.1,))
      >>> augment_speech(tf.zeros([16000]), config, seed=[1, 2]).shape
      TensorShape([14545])
    """
    waveform = as_waveform(waveform)
    _, seeds = _augment_seeds(seed)
    if config.speed_enabled:
        waveform = _maybe(
            seeds[0],
            config.speed_prob,
            functools.partial(speed_perturb, waveform, config.speed_factors, seeds[1]),
            waveform,
        )
    if config.reverb_enabled:
        rir_bank = cached_rir_bank(config.rir_dir, config.sample_rate) if config.rir_dir else None
        waveform = _maybe(
            seeds[2],
            config.reverb_prob,
            functools.partial(reverberate, waveform, rir_bank, seeds[3], config.sample_rate),
            waveform,
        )
    return waveform


def add_room_sounds(waveform, config: AugmentConfig, seed=None, voices=None) -> tf.Tensor:
    """What the room adds over the whole recording: noise, babble, then the level.

    The second half of `augment_waveform`. Apply after the pauses: a room's
    noise and other talkers do not wait for the speaker, so the stretch
    before the first word and after the last carries them too (as the noisy
    test conditions do, `conditions.py`), and no model learns that speech
    starts where the noise starts. The SNR is against the utterance's
    active level (`noise.scale_to_snr`), so quiet pauses barely move it.
    Use it in training only.

    Args:
      waveform: float32 `[samples]` in [-1, 1].
      config: an `AugmentConfig`.
      seed: the example's seed, as given to `augment_speech`.
      voices: float32 ragged `[num_voices, None]`, other utterances for
        babble (`config.voices_wanted` of them); needed when babble is on.

    Returns:
      float32 `[samples]` in [-1, 1].

    Raises:
      ValueError: babble on and no `voices`.

    Example:
      >>> config = AugmentConfig(noise_prob=1.0, noise_snr_db=(10.0, 10.0))
      >>> add_room_sounds(tf.zeros([16000]), config, seed=[1, 2]).shape
      TensorShape([16000])
    """
    waveform = as_waveform(waveform)
    tagged, seeds = _augment_seeds(seed)
    rate = config.sample_rate
    if config.noise_enabled:
        noise_bank = cached_noise_bank(config.noise_dir, rate) if config.noise_dir else None
        low, high = config.noise_snr_db
        waveform = _maybe(
            seeds[4],
            config.noise_prob,
            functools.partial(add_noise, waveform, noise_bank, low, high, seeds[5], rate),
            waveform,
        )
    if config.babble_enabled:
        if voices is None:
            raise ValueError(
                "babble needs other utterances: pass voices (the input pipeline does)."
            )
        coin_seed, babble_seed = split_seed(tf.random.fold_in(tagged, _BABBLE_TAG), 2)
        waveform = _maybe(
            coin_seed,
            config.babble_prob,
            functools.partial(
                add_babble, waveform, voices, config.babble_voices, config.babble_snr_db,
                babble_seed, rate,
            ),
            waveform,
        )  # fmt: skip
    if config.volume_enabled:
        low, high = config.volume_db
        waveform = _maybe(
            seeds[6],
            config.volume_prob,
            functools.partial(volume_perturb, waveform, low, high, seeds[7]),
            waveform,
        )
    return waveform


def augment_waveform(waveform, config: AugmentConfig, seed=None, voices=None) -> tf.Tensor:
    """Applies the augmentations `config` enables: speed, reverb, noise, babble, volume.

    `augment_speech` then `add_room_sounds` (the room reverberates the
    speaker, noise and other speakers are added in the room, the recording
    level changes last), each augmentation with its own probability and its
    own sub-seed, for an utterance without pauses around it; the input
    pipeline puts its pauses between the two halves. Noise and impulse
    response directories are read once per process (cached) when the
    function is traced. Use it in training only.

    Args:
      waveform: float32 `[samples]`, one utterance in [-1, 1].
      config: an `AugmentConfig` (e.g. `AugmentConfig.from_hparams(hparams)`).
      seed: an int `[2]` seed or a Python int; None draws a fresh one.
      voices: float32 ragged `[num_voices, None]`, other utterances for
        babble (`config.voices_wanted` of them); needed when babble is on.

    Returns:
      float32 `[samples']` in [-1, 1] (`samples'` differs after speed
      perturbation); the input itself when `config` enables nothing.

    Example:
      >>> config = AugmentConfig(speed_factors=(1.1,), volume_db=(-3.0, 3.0))
      >>> augment_waveform(tf.zeros([16000]), config, seed=[1, 2]).shape
      TensorShape([14545])
    """
    waveform = as_waveform(waveform)
    if not config.enabled:
        return waveform
    if seed is None:  # one draw for both halves
        seed = stateless_seed(None)
    return add_room_sounds(augment_speech(waveform, config, seed), config, seed, voices)


def pause_after(waveform, config: AugmentConfig, seed=None) -> tf.Tensor:
    """Appends a pause to `waveform` with probability `config.pause_prob`.

    `pause.append_pause`, from its own stream of the example's seed; after
    `augment_waveform` (and after a speed perturbation's stretch is measured:
    the pause stretches no word time). Use it in training only.

    Example:
      >>> config = AugmentConfig(pause_prob=1.0, pause_seconds=(0.25, 0.25))
      >>> pause_after(tf.zeros([16000]), config, seed=[1, 2]).shape
      TensorShape([20000])
    """
    waveform = as_waveform(waveform)
    if not config.pause_enabled:
        return waveform
    coin_seed, pause_seed = split_seed(tf.random.fold_in(stateless_seed(seed), _PAUSE_TAG), 2)
    return _maybe(
        coin_seed,
        config.pause_prob,
        functools.partial(
            append_pause, waveform, config.pause_seconds, config.pause_db, config.sample_rate,
            pause_seed,
        ),
        waveform,
    )  # fmt: skip


def pause_before(waveform, config: AugmentConfig, seed=None) -> tuple[tf.Tensor, tf.Tensor]:
    """Prepends a pause to `waveform` with probability `config.lead_prob`.

    `pause.prepend_pause` (as loud as `pause_db`), from its own stream of the
    example's seed. Returns `(waveform, lead samples)`, the lead 0 where no
    pause was drawn. Use it in training only.

    Example:
      >>> config = AugmentConfig(lead_prob=1.0, lead_seconds=(0.25, 0.25))
      >>> waveform, lead = pause_before(tf.ones([16000]), config, seed=[1, 2])
      >>> waveform.shape, int(lead)
      (TensorShape([20000]), 4000)
    """
    waveform = as_waveform(waveform)
    if not config.lead_enabled:
        return waveform, tf.constant(0)
    coin_seed, pause_seed = split_seed(tf.random.fold_in(stateless_seed(seed), _LEAD_TAG), 2)

    def lead():
        return prepend_pause(
            waveform, config.lead_seconds, config.pause_db, config.sample_rate, pause_seed
        )

    if config.lead_prob >= 1.0:
        return lead()
    return tf.cond(coin(coin_seed, config.lead_prob), lead, lambda: (waveform, tf.constant(0)))


def microphone(waveform, config: AugmentConfig, seed=None) -> tf.Tensor:
    """What the microphone adds last: a room's noise floor, then the microphone's band.

    The floor is at an absolute level (`floor.add_floor`, with
    `config.floor_prob`) under everything, pauses included; the band is
    `band.band_limit`, with `config.band_prob`. Each comes from its own stream
    of the example's seed. Apply after `pause_before`. Use it in training only.

    Example:
      >>> config = AugmentConfig(floor_prob=1.0, floor_dbfs=(-60.0, -60.0))
      >>> microphone(tf.zeros([16000]), config, seed=[1, 2]).shape
      TensorShape([16000])
    """
    waveform = as_waveform(waveform)
    if not config.microphone_enabled:
        return waveform
    seeds = split_seed(tf.random.fold_in(stateless_seed(seed), _MICROPHONE_TAG), 4)
    rate = config.sample_rate
    if config.floor_prob > 0:
        floor = functools.partial(add_floor, waveform, config.floor_dbfs, seeds[1], rate)
        waveform = _maybe(seeds[0], config.floor_prob, floor, waveform)
    if config.band_prob > 0:
        band = functools.partial(
            band_limit, waveform, config.band_low_hz, config.band_high_hz, seeds[3], rate
        )
        waveform = _maybe(seeds[2], config.band_prob, band, waveform)
    return waveform
