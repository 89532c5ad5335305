"""Speech recognition problems: int16 PCM + transcript in, log-mel frames out.

Stored records hold `waveform` (16 kHz int16 PCM bytes), `transcript`
(UTF-8), `utterance_id` and `targets` (the encoded transcript + EOS).
Featurization happens in the input pipeline, in the TF graph: T2T's log-mel
filterbank (80 bins, 25 ms / 10 ms frames, pre-emphasis 0.97, 20-8000 Hz,
dither 1/32767 in training only) with delta-deltas, per-utterance
normalization and, in training, SpecAugment when its hparams ask for it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np
import tensorflow as tf

from t2t_lite.data import audio_features
from t2t_lite.data.audio_io import to_int16_pcm
from t2t_lite.data.problem import TRAIN, Problem, SplitReport
from t2t_lite.data.text_encoders import EOS_ID, ByteTextEncoder, TextEncoder
from t2t_lite.hparam import HParams

SAMPLE_RATE = 16000
PCM_SCALE = 32767.0  # T2T's AudioEncoder scale; see audio_io.to_int16_pcm

# T2T's SpeechRecognitionProblem.hparams, plus SpecAugment (off by default,
# as in T2T; an hparams set or --hparams turns it on).
AUDIO_HPARAMS = {
    "audio_sample_rate": SAMPLE_RATE,
    "audio_preemphasis": 0.97,
    "audio_dither": 1.0 / np.iinfo(np.int16).max,
    "audio_frame_length": 25.0,
    "audio_frame_step": 10.0,
    "audio_lower_edge_hertz": 20.0,
    "audio_upper_edge_hertz": 8000.0,
    "audio_num_mel_bins": 80,
    "audio_add_delta_deltas": True,
    "specaugment_freq_masks": 0,
    "specaugment_freq_mask_width": 27,
    "specaugment_time_masks": 0,
    "specaugment_time_mask_width": 100,
    "specaugment_time_mask_max_fraction": 1.0,
}


@dataclasses.dataclass
class Utterance:
    """One utterance as a reader yields it: 16 kHz float32 mono in [-1, 1]."""

    utterance_id: str
    waveform: np.ndarray
    transcript: str


def log_mel_features(waveforms, waveform_lengths, hparams: HParams, dither=0.0, seed=None):
    """`[batch, samples]` -> T2T's log-mel (+ delta-delta) `[batch, frames, bins, channels]`.

    Frames past each waveform's length are zero; normalization is left to
    the caller (per utterance, over its real frames).
    """
    features = audio_features.compute_mel_filterbank_features(
        waveforms,
        sample_rate=hparams.audio_sample_rate,
        dither=dither,
        preemphasis=hparams.audio_preemphasis,
        frame_length=hparams.audio_frame_length,
        frame_step=hparams.audio_frame_step,
        lower_edge_hertz=hparams.audio_lower_edge_hertz,
        upper_edge_hertz=hparams.audio_upper_edge_hertz,
        num_mel_bins=hparams.audio_num_mel_bins,
        waveform_lengths=waveform_lengths,
        seed=seed,
    )
    if hparams.audio_add_delta_deltas:
        features = audio_features.add_delta_deltas(features)
    return features


def featurize(waveform, hparams: HParams, training: bool, seed=None):
    """A float32 `[samples]` waveform -> `[frames, mel_bins, channels]` features.

    The graph half of speech featurization, used by the input pipeline and
    decode_from_file (the SavedModel export uses its batch twin,
    `serving_module.featurize_batch`, which must give the same values).
    """
    waveform = tf.convert_to_tensor(waveform, tf.float32)
    dither = hparams.audio_dither if training else 0.0
    features = log_mel_features(waveform[None], tf.shape(waveform)[:1], hparams, dither, seed)
    features = audio_features.normalize_per_utterance(features)[0]
    if training and (hparams.specaugment_freq_masks or hparams.specaugment_time_masks):
        features = audio_features.spec_augment(
            features,
            num_freq_masks=hparams.specaugment_freq_masks,
            freq_mask_width=hparams.specaugment_freq_mask_width,
            num_time_masks=hparams.specaugment_time_masks,
            time_mask_width=hparams.specaugment_time_mask_width,
            time_mask_max_fraction=hparams.specaugment_time_mask_max_fraction,
            seed=None if seed is None else seed + 1,
        )
    return features


class SpeechRecognitionProblem(Problem):
    """Base of speech problems: subclasses implement `utterances`.

    Targets are bytes (T2T's speech choice) unless `feature_encoders` is
    overridden (the SentencePiece variants).
    """

    input_modality = "speech"
    shuffle_buffer_size = 128  # a buffered utterance is up to ~1 MB of PCM
    eval_metrics = ("wer", "cer", "accuracy", "accuracy_per_sequence", "neg_log_perplexity")

    def utterances(
        self, data_dir: str, tmp_dir: str, split: str, report: SplitReport
    ) -> Iterator[Utterance]:
        """Yields the split's utterances, counting skipped ones in `report`."""
        raise NotImplementedError(f"{type(self).__name__} must implement utterances")

    def feature_encoders(self, data_dir: str) -> dict[str, TextEncoder]:
        return {"targets": ByteTextEncoder()}

    def generate_examples(
        self, data_dir: str, tmp_dir: str, split: str, report: SplitReport
    ) -> Iterator[dict]:
        encoder = self.feature_encoders(data_dir)["targets"]
        for utterance in self.utterances(data_dir, tmp_dir, split, report):
            targets = encoder.encode(utterance.transcript)
            if not targets:
                report.skip("empty transcript")
                continue
            if utterance.waveform.size == 0:
                report.skip("empty audio")
                continue
            report.audio_seconds += utterance.waveform.size / SAMPLE_RATE
            yield {
                "waveform": to_int16_pcm(utterance.waveform).astype("<i2").tobytes(),
                "targets": targets + [EOS_ID],
                "transcript": utterance.transcript,
                "utterance_id": utterance.utterance_id,
            }

    def example_spec(self) -> dict:
        return {
            "waveform": tf.io.FixedLenFeature([], tf.string),
            "targets": tf.io.VarLenFeature(tf.int64),
            "transcript": tf.io.FixedLenFeature([], tf.string),
            "utterance_id": tf.io.FixedLenFeature([], tf.string),
        }

    def decode_example(self, serialized):
        example = super().decode_example(serialized)
        pcm = tf.io.decode_raw(example.pop("waveform"), tf.int16, little_endian=True)
        example["waveform"] = tf.cast(pcm, tf.float32) / PCM_SCALE
        return example

    def add_hparams(self, hparams: HParams) -> HParams:
        for name, value in AUDIO_HPARAMS.items():
            if name not in hparams:  # an hparams set may choose its own
                hparams.add_hparam(name, value)
        return hparams

    def hparams_read(self) -> tuple[str, ...]:
        return tuple(AUDIO_HPARAMS)

    def preprocess_example(self, example, mode, hparams, seed=None):
        features = featurize(example["waveform"], hparams, training=mode == TRAIN, seed=seed)
        return {
            "inputs": features,
            "inputs_length": tf.shape(features)[0],
            "targets": example["targets"],
        }

    def batch_spec(self, hparams: HParams) -> dict:
        channels = 3 if hparams.audio_add_delta_deltas else 1
        return {
            "inputs": tf.TensorSpec([None, None, hparams.audio_num_mel_bins, channels], tf.float32),
            "inputs_length": tf.TensorSpec([None], tf.int32),
            "targets": tf.TensorSpec([None, None], tf.int32),
        }

    def batch_length(self, lengths: dict, hparams: HParams):
        """T2T's speech batching length: frames x mel bins (or targets, if longer)."""
        return tf.maximum(lengths["inputs"] * hparams.audio_num_mel_bins, lengths["targets"])

    def record_lengths(self, example: dict) -> dict[str, int]:
        return {"samples": len(example["waveform"]) // 2, "targets": len(example["targets"])}

    def sequence_lengths_of_records(self, recorded: dict, hparams: HParams) -> dict:
        return {
            "inputs": audio_features.num_feature_frames(
                recorded["samples"],
                sample_rate=hparams.audio_sample_rate,
                frame_step=hparams.audio_frame_step,
                preemphasis=hparams.audio_preemphasis,
            ),
            "targets": tf.cast(recorded["targets"], tf.int32),
        }

    def record_seconds(self, recorded: dict):
        return np.asarray(recorded["samples"], np.float64) / SAMPLE_RATE

    def padded_shapes(self, limit, hparams: HParams) -> dict:
        frames = limit // hparams.audio_num_mel_bins  # lengths count frames x bins
        targets = hparams.max_target_seq_length or limit
        return {"inputs": [frames, None, None], "targets": [targets]}
