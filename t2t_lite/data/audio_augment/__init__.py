"""Waveform augmentation for speech training, on the fly, as pure TensorFlow ops.

Speed perturbation (Kaldi's and ESPnet's 0.9 / 1.0 / 1.1), volume
perturbation, additive noise and babble at a random SNR, reverberation by a room
impulse response and pauses of quieter noise before and after the utterance, each a
function of one utterance: float32 `[samples]` in [-1, 1] (16 kHz by
default) in, float32 `[samples']` in [-1, 1] out. They run
inside `tf.data` maps and `tf.function`s with unknown lengths, so augmented
copies never touch the disk, and all randomness comes from stateless draws
keyed by an int `[2]` seed: the same seed gives the same output (the
per-example seeds of the input pipeline make a run repeatable under
`--random_seed`).

What the input pipeline uses is imported from here:

    config = AugmentConfig.from_hparams(hparams)     # AUGMENT_HPARAMS names
    if training:
        waveform, stretch, lead = augment_recording(waveform, config, example_seed, voices)

One module per augmentation, each usable alone:

    speed.py     speed_perturb: band-limited resampling by a random factor
    volume.py    volume_perturb: a random gain
    noise.py     colored_noise, mains_hum, generated_noise, add_noise, scale_to_snr,
                 load_noise_bank
    sound_events.py  sound_events: knocks, taps and beeps, sparse
    babble.py    babble, add_babble: other utterances talking under this one
    reverb.py    synthetic_rir, reverberate, load_rir_bank
    pause.py     append_pause, prepend_pause: quieter noise after / before it
    floor.py     add_floor: a room's noise floor at an absolute level
    band.py      band_limit: a microphone's or telephone line's band
    config.py    AUGMENT_HPARAMS, AugmentConfig: the hparams and their typed config
    stages.py    augment_speech, pause_after, pause_before, add_room_sounds,
                 microphone, and augment_waveform (the two halves without pauses)
    recording.py augment_recording: all of them in the order a room records
    conditions.py  fixed, named listening conditions for noisy test splits
                 (CONDITIONS, apply_condition), made with the generators above
    draws.py     the stateless seed splits, uniform draws and coins
    waveform.py  the input check, clipping and fast FFT lengths they share
"""

from t2t_lite.data.audio_augment.config import AUGMENT_HPARAMS, AugmentConfig
from t2t_lite.data.audio_augment.recording import augment_recording
from t2t_lite.data.audio_augment.stages import (
    add_room_sounds,
    augment_speech,
    augment_waveform,
    microphone,
    pause_after,
    pause_before,
)

__all__ = [
    "AUGMENT_HPARAMS",
    "AugmentConfig",
    "add_room_sounds",
    "augment_recording",
    "augment_speech",
    "augment_waveform",
    "microphone",
    "pause_after",
    "pause_before",
]
