"""Speech featurization: waveforms in, the model's input features out.

One function, `featurize_batch`, serves the input pipeline (a batch of one
utterance, `featurize`), `t2t-lite-decoder --decode_from_file` and the
exported SavedModel, so training and inference cannot drift apart. Its
steps, T2T's front end with two additions for real recordings:

1. lengths clipped to the samples given; non-finite samples read as 0 and
   exact zeros before the first and after the last nonzero sample cut off
   (`clean_waveforms`; the trim is not in T2T). A caller that cleaned the
   audio where it entered (the transcriber) passes `cleaned=True`;
2. T2T's log-mel filterbank (80 bins, 25 ms / 10 ms frames, pre-emphasis
   0.97, 20-8000 Hz; triangular dither of 1/32767 in training only; in
   training with `vtlp_warp` > 0, a random warp of the frequency axis,
   `vocal_tract_warp.py`, and with `envelope_db` > 0, a random spectral
   envelope, `spectral_envelope.py`);
3. frames of exact digital silence take the utterance's own quiet level
   (`digital_silence.fill_digital_silence`; not in T2T);
4. delta-deltas (T2T's);
5. per-utterance mean/variance normalization, its statistics taken over the
   real frames that are not digital silence (T2T took them over every frame),
   and with `statistics_floor_db` > 0 not more than that far under the
   utterance's loud frames (`utterance_level.py`: a lead of quiet does not
   move them).

With `FeatureConfig.causal_normalization` (streaming models), steps 3 and 5
use running statistics of the frames so far instead of the whole
utterance's (`causal_normalization.py`), so no frame reads ahead more than
the delta-deltas' 4 frames; with `prior_frames` > 0 the running
statistics start from the training set's, kept in the hparams, and with
`statistics_floor_db` > 0 they leave out frames that far under the
training set's level (`causal_normalization.quiet_frames`).
`unnormalized_features` stops before step 5 (what the prior is computed on).

Step 1 makes an utterance featurize exactly as it does alone with exact
zeros around it; steps 3 and 5 make its frames nearly the same with runs of
exact zeros inside it (docs/design.md, "Digital
silence").
"""

from __future__ import annotations

import tensorflow as tf

from t2t_lite.data import (
    audio_augment,
    audio_features,
    causal_normalization,
    digital_silence,
)
from t2t_lite.data.feature_augment import spec_augment, spectral_envelope, vocal_tract_warp
from t2t_lite.data.feature_config import FeatureConfig
from t2t_lite.data.utterance_level import quiet_frames_of_utterance

SAMPLE_RATE = 16000
PCM_SCALE = 32767.0  # T2T's AudioEncoder scale; see audio_io.to_int16_pcm


def num_frames(waveform_lengths, config: FeatureConfig):
    """Feature frames of waveforms of `waveform_lengths` samples (int32, same shape)."""
    return audio_features.num_feature_frames(
        waveform_lengths,
        sample_rate=config.sample_rate,
        frame_step=config.frame_step_ms,
        preemphasis=config.preemphasis,
    )


def clean_waveforms(waveforms, lengths) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """Step 1, where audio enters in TensorFlow: non-finite samples zeroed, edges trimmed.

    Non-finite samples read as 0, and the exact zeros before the first and
    after the last nonzero sample are cut off.

    Args:
        waveforms: float32 `[batch, samples]`, zero padded.
        lengths: int32 `[batch]` real samples (within `samples`).

    Returns:
        `(waveforms, lengths, cut)`: the trimmed batch, its lengths, and how
        many leading samples of each row were cut (to keep times in the
        recording's clock).
    """
    return trim_edges(audio_features.zero_non_finite(waveforms), lengths)


def trim_edges(waveforms, lengths) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """`clean_waveforms`' cut alone, for audio whose non-finite samples were already zeroed.

    They were zeroed where it entered (`audio_features.zero_non_finite`): a
    recording split into pieces has each piece's edges cut, not its samples
    read again.

    Returns: as `clean_waveforms`.
    """
    cut, _ = digital_silence.sounding_span(waveforms, lengths)
    waveforms, lengths = digital_silence.trim_digital_silence(waveforms, lengths)
    return waveforms, lengths, cut


def featurize_batch(
    waveforms,
    waveform_lengths,
    config: FeatureConfig,
    training: bool = False,
    seed=None,
    cleaned: bool = False,
) -> tuple[tf.Tensor, tf.Tensor]:
    """A zero-padded batch of waveforms -> normalized log-mel features.

    Args:
        waveforms: float32 `[batch, samples]` at `audio_sample_rate`, in
            [-1, 1]; non-finite samples are read as 0.
        waveform_lengths: int `[batch]` real samples (clipped to `[0, samples]`).
        config: the front end's settings (`FeatureConfig.from_hparams`).
        training: dither (`config.dither`) when True.
        seed: optional int `[2]` seed of the dither.
        cleaned: the caller already read non-finite samples as 0 and cut
            the digital silence at the ends (`clean_waveforms`), as the
            transcriber does where a request enters; step 1 is then skipped.

    Returns:
        `(features [batch, frames, mel_bins, channels], frame_lengths [batch])`:
        `channels` is 3 with delta-deltas, else 1; frames past a row's length
        are zero, and `frames` is the longest row's count (at least 1).

    Example:
    >>> waveforms = tf.fill([2, 16000], 0.1)
    >>> features, lengths = featurize_batch(waveforms, [16000, 8000], FeatureConfig())
    >>> features.shape, lengths.numpy()
    (TensorShape([2, 100, 80, 3]), array([100,  50], dtype=int32))
    """
    waveforms = tf.convert_to_tensor(waveforms, tf.float32)
    lengths = tf.clip_by_value(tf.cast(waveform_lengths, tf.int32), 0, tf.shape(waveforms)[1])
    if not cleaned:
        waveforms, lengths, _ = clean_waveforms(waveforms, lengths)
    features, real, silent = unnormalized_features(
        waveforms, lengths, config, training=training, seed=seed
    )
    if config.causal_normalization:
        prior = config.required_prior()
        counted = ~silent
        if config.statistics_floor_db > 0:
            quiet = causal_normalization.quiet_frames(features, prior, config.statistics_floor_db)
            counted &= ~quiet
        features = causal_normalization.normalize_causally(features, real, counted, prior)
    else:
        counted = ~silent
        if config.statistics_floor_db > 0:  # against the utterance's own loud frames
            counted &= ~quiet_frames_of_utterance(features, real, config.statistics_floor_db)
        features = audio_features.normalize_per_utterance(features, real, statistics_mask=counted)
    return features, tf.reduce_sum(tf.cast(real, tf.int32), axis=1)


def unnormalized_features(
    waveforms, lengths, config: FeatureConfig, training: bool = False, seed=None
) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """`featurize_batch`'s steps 2-4: the features before normalization.

    Args: as `featurize_batch`'s, of audio already cleaned (`clean_waveforms`),
    `lengths` within the samples given.

    Returns:
        `(features [batch, frames, mel_bins, channels], real [batch, frames],
        silent [batch, frames])`: the masks of real frames and of frames of
        exact digital silence (whose values normalization does not count).
    """
    frame_lengths = num_frames(lengths, config)
    frames = tf.maximum(tf.reduce_max(frame_lengths), 1)
    # The batch is cut to its longest row, as the input pipeline pads it, so
    # the decode length (and the work) ignores a client's extra padding.
    log_mel, silent = log_mel_frames(waveforms, lengths, frames, config, training, seed)
    if training and config.vtlp_warp > 0:  # the voice first, then the microphone
        log_mel = vocal_tract_warp.warp_log_mel(
            log_mel,
            config.vtlp_warp,
            config.sample_rate,
            config.lower_edge_hertz,
            config.upper_edge_hertz,
            seed,
        )
    if training and config.envelope_db > 0:
        log_mel = spectral_envelope.perturb_envelope(log_mel, config.envelope_db, seed)
    real = tf.sequence_mask(frame_lengths, frames)
    if config.causal_normalization:  # streaming: nothing read ahead
        features = causal_normalization.fill_digital_silence_causally(log_mel, silent, real)
    else:
        features = digital_silence.fill_digital_silence(log_mel, silent, real)
    if config.add_delta_deltas:
        features = audio_features.add_delta_deltas(features)
    return features, real, silent


def log_mel_frames(
    waveforms, lengths, frames, config: FeatureConfig, training: bool = False, seed=None
) -> tuple[tf.Tensor, tf.Tensor]:
    """Step 2's log-mel filterbank (without the envelope) and which frames are silent.

    A frame is silent when it starts in exact digital silence. Both cover the
    first `frames` frames.

    Args:
        waveforms: float32 `[batch, samples]`, cleaned (`clean_waveforms`).
        lengths: int32 `[batch]` real samples (within `samples`).
        frames: how many frames to keep (a scalar, static or a tensor).
        config, training, seed: as `featurize_batch`'s.

    Returns:
        `(log_mel [batch, frames, mel_bins, 1], silent [batch, frames])`.
    """
    # Zeros past the end change no real frame (they are masked out) and give
    # even an empty request a frame to run the model on.
    waveforms = tf.pad(waveforms, [[0, 0], [0, config.frame_step_samples + 1]])
    log_mel = audio_features.compute_mel_filterbank_features(
        waveforms,
        sample_rate=config.sample_rate,
        dither=config.dither if training else 0.0,
        preemphasis=config.preemphasis,
        frame_length=config.frame_length_ms,
        frame_step=config.frame_step_ms,
        lower_edge_hertz=config.lower_edge_hertz,
        upper_edge_hertz=config.upper_edge_hertz,
        num_mel_bins=config.num_mel_bins,
        waveform_lengths=lengths,
        seed=seed,
    )
    silent = digital_silence.digital_silence_frames(
        waveforms,
        lengths,
        tf.maximum(frames, 1),  # (no frame: a reshape of nothing cannot infer its size)
        sample_rate=config.sample_rate,
        frame_length=config.frame_length_ms,
        frame_step=config.frame_step_ms,
        preemphasis=config.preemphasis,
    )
    return log_mel[:, :frames], silent[:, :frames]


def featurize(waveform, config: FeatureConfig, training: bool, seed=None) -> tf.Tensor:
    """One float32 `[samples]` waveform -> `[frames, mel_bins, channels]` features.

    `featurize_batch` of a batch of one; in training, the waveform
    augmentations the `aug_*` hparams turn on first (`audio_augment`) and
    SpecAugment after, when its hparams ask for it. The input pipeline's
    featurization.
    """
    return featurize_with_times(waveform, tf.zeros([0]), config, training, seed)[0]


def featurize_with_times(
    waveform, times, config: FeatureConfig, training: bool, seed=None, voices=None
):
    """`featurize`, and where moments of the waveform fall on its feature frames.

    Args:
        waveform: float32 `[samples]`.
        times: float `[n]` seconds in `waveform`'s clock (a corpus's word times).
        config, training, seed: as for `featurize`.
        voices: other utterances for babble, float32 ragged `[n, None]`
            (`audio_augment.augment_recording`); training only.

    Returns:
        `(features, positions)`: `featurize`'s features, and float32 `[n]`
        fractional frame indices (frame `j`'s window has its middle at `j`)
        of `times` after speed perturbation's stretch and the edge trim.
    """
    waveform = tf.convert_to_tensor(waveform, tf.float32)
    stretch, lead = tf.constant(1.0), tf.constant(0)
    if training:
        waveform, stretch, lead = audio_augment.augment_recording(
            waveform, config.augment, seed, voices
        )
    waveforms, lengths, cut = clean_waveforms(waveform[None], tf.shape(waveform)[:1])
    features, _ = featurize_batch(
        waveforms, lengths, config, training=training, seed=seed, cleaned=True
    )
    features = features[0]
    if training and config.spec_augment.enabled:
        features = spec_augment.spec_augment(
            features, config.spec_augment, seed=None if seed is None else seed + 1
        )
    samples = tf.cast(times, tf.float32) * config.sample_rate * stretch + tf.cast(
        lead - cut[0], tf.float32
    )
    positions = (samples - config.frame_length_samples / 2) / config.frame_step_samples
    return features, positions
