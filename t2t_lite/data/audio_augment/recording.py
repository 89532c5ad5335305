"""The whole augmentation chain for one training utterance, in the order a room records it.

The speaker speaks (`augment_speech`: speed, the room's reverberation);
the recording runs before and after the words (`pause_after`,
`pause_before`); the room's noise and other talkers play under all of it
and the level changes (`add_room_sounds`); the microphone adds its floor
and band last (`microphone`). The order is the point: noise added before
the pauses would leave the stretch before the first word quiet, and a model
would learn that speech starts where the noise starts, which no room
honours (the noisy test conditions play their noise before and after the
speech, `conditions.py`).

    waveform, stretch, lead = augment_recording(waveform, config, seed, voices)
"""

from __future__ import annotations

import tensorflow as tf

from t2t_lite.data.audio_augment.config import AugmentConfig
from t2t_lite.data.audio_augment.stages import (
    add_room_sounds,
    augment_speech,
    microphone,
    pause_after,
    pause_before,
)
from t2t_lite.data.audio_augment.waveform import as_waveform


def augment_recording(
    waveform, config: AugmentConfig, seed=None, voices=None
) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """One training utterance through every augmentation `config` enables.

    Args:
      waveform: float32 `[samples]`, one utterance in [-1, 1].
      config: an `AugmentConfig`.
      seed: the example's int `[2]` seed (each stage folds in its own tag).
      voices: float32 ragged `[num_voices, None]`, other utterances for
        babble; needed when babble is on.

    Returns:
      `(waveform, stretch, lead)`: float32 `[samples']` in [-1, 1]; the
      speed perturbation's float32 length ratio (every moment of the speech
      moves by it); the int32 samples of the pause before the speech (every
      moment moves by it after the stretch).

    Example:
      >>> config = AugmentConfig(lead_prob=1.0, lead_seconds=(0.25, 0.25))
      >>> waveform, stretch, lead = augment_recording(tf.ones([16000]), config, [1, 2])
      >>> waveform.shape, float(stretch), int(lead)
      (TensorShape([20000]), 1.0, 4000)
    """
    waveform = as_waveform(waveform)
    original = tf.shape(waveform)[0]
    if config.enabled:
        waveform = augment_speech(waveform, config, seed)
    # Speed perturbation is the one augmentation that changes the length,
    # and it stretches every moment by the same ratio.
    stretch = tf.cast(tf.shape(waveform)[0], tf.float32) / tf.cast(
        tf.maximum(original, 1), tf.float32
    )
    if config.pause_enabled:  # after the stretch: it moves no time
        waveform = pause_after(waveform, config, seed)
    lead = tf.constant(0)
    if config.lead_enabled:  # moves every time by its length
        waveform, lead = pause_before(waveform, config, seed)
    if config.enabled:  # noise and other talkers under the pauses too, then the level
        waveform = add_room_sounds(waveform, config, seed, voices)
    if config.microphone_enabled:  # the floor and band over everything
        waveform = microphone(waveform, config, seed)
    return waveform, stretch, lead
