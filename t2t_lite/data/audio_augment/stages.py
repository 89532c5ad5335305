"""The stages of the augmentation chain, each from its own stateless draws.

`augment_speech` (speed, reverberation: the speaker), `pause_after` and
`pause_before` (the pauses around the utterance), `add_room_sounds` (noise,
babble, then the level, under the pauses too) and `microphone` (a room's
floor and a microphone's band over all of it). Each folds the example's
seed with its own tag, so the same seed gives the same output and no stage's
draws move another's. `recording.augment_recording` runs them in the order
a room records; `augment_waveform` is the two halves without pauses.
"""

from __future__ import annotations

import functools

import tensorflow as tf

from t2t_lite.data.audio_augment.babble import add_babble
from t2t_lite.data.audio_augment.band import band_limit
from t2t_lite.data.audio_augment.config import AugmentConfig
from t2t_lite.data.audio_augment.draws import coin, split_seed
from t2t_lite.data.audio_augment.floor import add_floor
from t2t_lite.data.audio_augment.noise import add_noise, cached_noise_bank
from t2t_lite.data.audio_augment.pause import append_pause, prepend_pause
from t2t_lite.data.audio_augment.reverb import cached_rir_bank, reverberate
from t2t_lite.data.audio_augment.speed import speed_perturb
from t2t_lite.data.audio_augment.volume import volume_perturb
from t2t_lite.data.audio_augment.waveform import as_waveform
from t2t_lite.data.random_seeds import stateless_seed

_AUGMENT_TAG = 0x417567  # "Aug": augment_waveform's stream, apart from dither's
_PAUSE_TAG = 0x506175  # "Pau": pause_after's
_LEAD_TAG = 0x4C6561  # "Lea": pause_before's
_MICROPHONE_TAG = 0x4D6963  # "Mic": microphone's
_BABBLE_TAG = 0x426162  # "Bab": babble's, apart from the draws before it


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
