"""Named listening conditions: clean test speech as a room and a microphone deliver it.

A `Condition` is fixed (no ranges): a noise floor at an absolute level, a
stretch of it before and after the speech, an additive noise of one kind at
one SNR, a room's reverberation. `CONDITIONS` names the ones t2t-lite
measures (`docs/benchmarks.md`, "In a room"), and `apply_condition` renders
one utterance under one, the same way every time (its seed is the
utterance's), with the training augmentation's own generators (`noise.py`,
`reverb.py`), so a test condition and the training draws mean the same
thing.

    noisy = apply_condition(waveform, CONDITIONS["pink_20db"], seed=17)

`datagen`'s `--noisy_test` writes each condition of a speech problem's test
split as its own split, `test_<name>` (`data/noisy_splits.py`).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import tensorflow as tf

from t2t_lite.data.audio_augment.babble import babble
from t2t_lite.data.audio_augment.noise import GENERATED_NOISES, generated_noise, scale_to_snr
from t2t_lite.data.audio_augment.reverb import reverberate
from t2t_lite.data.audio_augment.waveform import clip_to_unit_range
from t2t_lite.data.audio_io import SAMPLE_RATE

NOISE_KINDS = (*GENERATED_NOISES, "babble")
# Voices summed into one babble: enough that no single one is followed.
BABBLE_VOICES = 5
# A reverberant room's direct-to-reverberant ratio: a speaker a few metres away.
ROOM_DRR_DB = 5.0


@dataclasses.dataclass(frozen=True)
class Condition:
    """One fixed listening condition (see the module docstring).

    Attributes:
      floor_dbfs: a white noise floor at this RMS level (dBFS) under the
        whole recording; None for none.
      lead_seconds / tail_seconds: the floor (and noise) alone before and
        after the speech.
      noise: one of `NOISE_KINDS`, added at `snr_db` under the whole
        recording; None for none.
      snr_db: the speech's active level over the noise's, in dB.
      rt60: the room's reverberation time in seconds (a synthetic impulse
        response); None for a dry recording.
    """

    floor_dbfs: float | None = None
    lead_seconds: float = 0.0
    tail_seconds: float = 0.0
    noise: str | None = None
    snr_db: float | None = None
    rt60: float | None = None

    def __post_init__(self):
        if self.noise is not None and self.noise not in NOISE_KINDS:
            raise ValueError(f"noise must be one of {NOISE_KINDS}, got {self.noise!r}.")
        if (self.noise is None) != (self.snr_db is None):
            raise ValueError("noise and snr_db go together: give both or neither.")
        if min(self.lead_seconds, self.tail_seconds) < 0:
            raise ValueError("lead_seconds and tail_seconds must be >= 0.")


def _noise_conditions() -> dict[str, Condition]:
    # Half a second of the noise alone before and after the speech, as a
    # recording started and stopped by hand has.
    return {
        f"{kind}_{snr}db": Condition(
            noise=kind, snr_db=float(snr), lead_seconds=0.5, tail_seconds=0.5
        )  # fmt: skip
        for snr in (20, 10)
        for kind in NOISE_KINDS
    }


# The conditions of the measurements in docs/benchmarks.md ("In a room"): a
# quiet room's floor through a laptop microphone (-60 dBFS) and quieter and
# louder ones, with the speaker starting 0.3 s or 1 s after the recording;
# an office (20 dB SNR) and a loud place (10 dB) with each noise kind; a
# reverberant room.
CONDITIONS: dict[str, Condition] = {
    "floor60_lead03": Condition(floor_dbfs=-60.0, lead_seconds=0.3, tail_seconds=0.5),
    "floor70_lead1": Condition(floor_dbfs=-70.0, lead_seconds=1.0, tail_seconds=0.5),
    "floor60_lead1": Condition(floor_dbfs=-60.0, lead_seconds=1.0, tail_seconds=0.5),
    "floor50_lead1": Condition(floor_dbfs=-50.0, lead_seconds=1.0, tail_seconds=0.5),
    **_noise_conditions(),
    "reverb_rt05": Condition(rt60=0.5),
}


def apply_condition(
    waveform,
    condition: Condition,
    seed: int,
    babble_voices: list[np.ndarray] | None = None,
    sample_rate: int = SAMPLE_RATE,
) -> np.ndarray:
    """One utterance under `condition`: reverberated, padded, noise, floor.

    In that order: the room reverberates the speaker; the recording runs
    `lead_seconds` before and `tail_seconds` after the speech; the noise
    (scaled against the dry speech's active level) and the floor play under
    all of it.

    Args:
      waveform: float32 `[samples]` in [-1, 1], clean speech.
      condition: the condition.
      seed: any int; the same seed gives the same output.
      babble_voices: other utterances, for `noise="babble"`.
      sample_rate: samples per second.

    Returns:
      float32 `[round(lead * rate) + samples + round(tail * rate)]` in [-1, 1].

    Raises:
      ValueError: babble without `babble_voices`.

    Example:
      >>> speech = np.sin(np.arange(16000) * 0.3).astype(np.float32) * 0.1
      >>> apply_condition(speech, CONDITIONS["floor60_lead1"], seed=3).shape
      (40000,)
    """
    seeds = tf.random.split(tf.constant([seed & 0x7FFFFFFF, 0x526F6F6D], tf.int64), 3)
    speech = tf.convert_to_tensor(np.asarray(waveform, np.float32))
    if condition.rt60 is not None:
        rt60 = (condition.rt60, condition.rt60)
        drr = (ROOM_DRR_DB, ROOM_DRR_DB)
        speech = reverberate(speech, None, seeds[0], sample_rate, rt60, drr)
    lead = int(round(condition.lead_seconds * sample_rate))
    tail = int(round(condition.tail_seconds * sample_rate))
    recording = tf.pad(speech, [[lead, tail]])
    total = lead + int(speech.shape[0]) + tail
    if condition.noise == "babble":
        if not babble_voices:
            raise ValueError("a babble condition needs babble_voices (other utterances).")
        flat = np.concatenate([np.asarray(voice, np.float32) for voice in babble_voices])
        voices = tf.RaggedTensor.from_row_lengths(flat, [len(voice) for voice in babble_voices])
        noise = babble(voices, total)
    elif condition.noise is not None:
        noise = generated_noise(condition.noise, total, seeds[1], sample_rate)
    if condition.noise is not None:
        recording += scale_to_snr(speech, noise, condition.snr_db, sample_rate)
    if condition.floor_dbfs is not None:
        floor = tf.random.stateless_normal([total], seeds[2]) * 10.0 ** (condition.floor_dbfs / 20)
        recording += floor
    return clip_to_unit_range(recording).numpy()
