"""Speech recognition problems: int16 PCM + transcript in, log-mel frames out.

Stored records hold `waveform` (16 kHz int16 PCM bytes), `transcript`
(UTF-8), `utterance_id` and `targets` (the encoded transcript + EOS), and,
where the corpus says who speaks, `speaker_id`, `speaker_age` (years, -1
unknown) and `speaker_gender` ("" unknown), so that results can be broken
down by speaker (`decoding/evaluation/speaker_groups.py`).
Featurization happens in the input pipeline, in the TF graph
(`speech_features.featurize`, the one featurization the decoder and the
SavedModel use too) and, in training, SpecAugment when its hparams ask for it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np
import tensorflow as tf

from t2t_lite.data import feature_config, speech_features
from t2t_lite.data.audio_augment import AUGMENT_HPARAMS
from t2t_lite.data.audio_io import to_int16_pcm
from t2t_lite.data.feature_config import AUDIO_HPARAMS, FeatureConfig
from t2t_lite.data.phoneme_ctc_hparams import phoneme_ctc_wanted
from t2t_lite.data.phoneme_targets import phoneme_targets
from t2t_lite.data.problem import TRAIN, Problem, SplitReport
from t2t_lite.data.speech_features import PCM_SCALE, SAMPLE_RATE, featurize
from t2t_lite.data.text_encoders import EOS_ID, ByteTextEncoder, TextEncoder
from t2t_lite.data.word_boundary_targets import boundary_targets
from t2t_lite.data.word_boundary_weight import word_boundaries_wanted
from t2t_lite.hparam import HParams

__all__ = [
    "AUDIO_HPARAMS",
    "SAMPLE_RATE",
    "Speaker",
    "SpeechRecognitionProblem",
    "Utterance",
    "featurize",
]

UNKNOWN_AGE = -1  # a record's speaker_age when the corpus does not say


@dataclasses.dataclass(frozen=True)
class Speaker:
    """Who speaks an utterance, as far as the corpus says."""

    speaker_id: str
    age: int | None = None
    gender: str | None = None  # the corpus's code, e.g. "m" / "f"


@dataclasses.dataclass
class Utterance:
    """One utterance as a reader yields it: 16 kHz float32 mono in [-1, 1]."""

    utterance_id: str
    waveform: np.ndarray
    transcript: str
    speaker: Speaker | None = None
    # (start, end) seconds of each word, where the corpus knows them.
    word_times: tuple[tuple[float, float], ...] | None = None


def _speaker_fields(speaker: Speaker | None) -> dict:
    """The record's speaker fields; none for a corpus that does not name speakers."""
    if speaker is None:
        return {}
    return {
        "speaker_id": speaker.speaker_id,
        "speaker_age": [UNKNOWN_AGE if speaker.age is None else int(speaker.age)],
        "speaker_gender": speaker.gender or "",
    }


def _word_time_fields(word_times) -> dict:
    """The record's word times (the word boundary head's targets); none where unknown."""
    if not word_times:
        return {}
    return {
        "word_starts": [float(start) for start, _ in word_times],
        "word_ends": [float(end) for _, end in word_times],
    }


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
                **_speaker_fields(utterance.speaker),
                **_word_time_fields(utterance.word_times),
            }

    def example_spec(self) -> dict:
        return {
            "waveform": tf.io.FixedLenFeature([], tf.string),
            "targets": tf.io.VarLenFeature(tf.int64),
            "transcript": tf.io.FixedLenFeature([], tf.string),
            "utterance_id": tf.io.FixedLenFeature([], tf.string),
            # Defaults: records of corpora without speakers, and older shards.
            "speaker_id": tf.io.FixedLenFeature([], tf.string, default_value=""),
            "speaker_age": tf.io.FixedLenFeature([], tf.int64, default_value=UNKNOWN_AGE),
            "speaker_gender": tf.io.FixedLenFeature([], tf.string, default_value=""),
            # Empty for corpora without word times, and older shards.
            "word_starts": tf.io.VarLenFeature(tf.float32),
            "word_ends": tf.io.VarLenFeature(tf.float32),
        }

    def decode_example(self, serialized):
        example = super().decode_example(serialized)
        pcm = tf.io.decode_raw(example.pop("waveform"), tf.int16, little_endian=True)
        example["waveform"] = tf.cast(pcm, tf.float32) / PCM_SCALE
        return example

    def add_hparams(self, hparams: HParams) -> HParams:
        for name, value in {**AUDIO_HPARAMS, **AUGMENT_HPARAMS}.items():
            if name not in hparams:  # an hparams set may choose its own
                hparams.add_hparam(name, value)
        return hparams

    def hparams_read(self) -> tuple[str, ...]:
        prior = (feature_config.PRIOR_MEAN, feature_config.PRIOR_MEAN_SQUARE)
        return (*AUDIO_HPARAMS, *AUGMENT_HPARAMS, *prior)

    def preprocess_example(self, example, mode, hparams, seed=None, others=None):
        config = FeatureConfig.from_hparams(hparams)
        voices = None if others is None else others["waveform"]  # babble's
        timed = word_boundaries_wanted(hparams)  # the word boundary head's targets
        starts, ends = (
            (example["word_starts"], example["word_ends"]) if timed else (tf.zeros([0]),) * 2
        )
        features, positions = speech_features.featurize_with_times(
            example["waveform"], tf.concat([starts, ends], 0), config, mode == TRAIN, seed, voices
        )
        model_features = {
            "inputs": features,
            "inputs_length": tf.shape(features)[0],
            "targets": example["targets"],
        }
        if timed:
            words = tf.size(starts)
            model_features["word_boundaries"] = boundary_targets(
                positions[:words], positions[words:], tf.shape(features)[0]
            )
        if phoneme_ctc_wanted(hparams) and mode == TRAIN:  # the phoneme CTC head's targets
            phonemes, known = phoneme_targets(example["transcript"])
            # Within the targets' static size, which a batch pads them to
            # (`padded_shapes`): max_target_seq_length, else the targets'
            # own length (nearly always enough for bytes: English spells a
            # phoneme with a letter or more; not for pieces, which are fewer).
            room = hparams.max_target_seq_length or tf.size(example["targets"])
            fits = tf.size(phonemes) <= room
            model_features["phonemes"] = phonemes[: tf.where(fits, tf.size(phonemes), 0)]
            model_features["phonemes_known"] = known * tf.cast(fits, tf.int32)
        return model_features

    def others_wanted(self, hparams: HParams) -> int:
        """Other training utterances for babble (`aug_babble_*`), or 0."""
        return FeatureConfig.from_hparams(hparams).augment.voices_wanted

    def batch_spec(self, hparams: HParams) -> dict:
        config = FeatureConfig.from_hparams(hparams)
        spec = {
            "inputs": tf.TensorSpec([None, None, config.num_mel_bins, config.channels], tf.float32),
            "inputs_length": tf.TensorSpec([None], tf.int32),
            "targets": tf.TensorSpec([None, None], tf.int32),
        }
        if word_boundaries_wanted(hparams):
            spec["word_boundaries"] = tf.TensorSpec([None, None, 2], tf.float32)
        if phoneme_ctc_wanted(hparams):  # (training batches only)
            spec["phonemes"] = tf.TensorSpec([None, None], tf.int32)
            spec["phonemes_known"] = tf.TensorSpec([None], tf.int32)
        return spec

    def batching_length(self, model_lengths: dict, hparams: HParams):
        """T2T's speech batching length: frames x mel bins (or targets, if longer)."""
        return tf.maximum(
            model_lengths["inputs"] * FeatureConfig.from_hparams(hparams).num_mel_bins,
            model_lengths["targets"],
        )

    def stored_lengths(self, example: dict) -> dict[str, int]:
        """PCM samples of the waveform (2 bytes each) and target tokens."""
        return {"samples": len(example["waveform"]) // 2, "targets": len(example["targets"])}

    def model_lengths_of_stored(self, stored_lengths: dict, hparams: HParams) -> dict:
        """Frames the featurization makes of each waveform's samples, and target tokens."""
        return {
            "inputs": speech_features.num_frames(
                stored_lengths["samples"], FeatureConfig.from_hparams(hparams)
            ),
            "targets": tf.cast(stored_lengths["targets"], tf.int32),
        }

    def stored_seconds(self, stored_lengths: dict):
        return np.asarray(stored_lengths["samples"], np.float64) / SAMPLE_RATE

    def padded_shapes(self, limit, hparams: HParams) -> dict:
        frames = limit // FeatureConfig.from_hparams(hparams).num_mel_bins  # frames x bins
        targets = hparams.max_target_seq_length or limit
        shapes = {"inputs": [frames, None, None], "targets": [targets]}
        if word_boundaries_wanted(hparams):
            shapes["word_boundaries"] = [frames, None]
        if phoneme_ctc_wanted(hparams):
            shapes["phonemes"] = [targets]  # (preprocess_example keeps them within)
            shapes["phonemes_known"] = []
        return shapes
