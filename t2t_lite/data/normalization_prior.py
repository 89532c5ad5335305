"""The training set's feature statistics, the prior of causal normalization.

A streaming model normalizes each frame by the running statistics of the
frames before it (`causal_normalization.py`). Started from nothing, the first
second of every utterance is normalized by a handful of frames; started from
the training set's statistics worth `audio_normalization_prior_frames`
frames, it is not. This module computes those statistics the way the
featurization uses them (`speech_features.unnormalized_features`: after the
digital-silence fill and delta-deltas, over the sounding real frames) from
`PRIOR_UTTERANCES` training utterances spread evenly over the training split
in datagen's order (readers yield a corpus speaker by speaker, so the first
400 would be one voice), and keeps them in the run's hparams. WeNet
computes its global CMVN at data preparation (`compute_cmvn_stats.py`);
here the trainer does it at its start, so data made by any datagen serves,
and a resumed run reads the statistics it saved rather than computing them
again. Finding the spread utterances reads the whole training split once
(no featurization: seconds for the built-in corpus, minutes for all of
LibriSpeech).

Example:
>>> prior = add_training_prior(hparams, problem, data_dir, output_dir)  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import tensorflow as tf

from t2t_lite import run_dir
from t2t_lite.data import feature_config
from t2t_lite.data.dataset_options import without_autotuning
from t2t_lite.data.feature_config import FeatureConfig
from t2t_lite.data.problem import TRAIN, Problem
from t2t_lite.data.speech_features import clean_waveforms, unnormalized_features
from t2t_lite.hparam import HParams

# Utterances the statistics are taken from (WeNet takes every one; a few
# hundred already fix them to well within the running statistics' noise, and
# cost seconds at the trainer's start rather than a pass over the data).
PRIOR_UTTERANCES = 400


@dataclasses.dataclass(frozen=True)
class FeatureStatistics:
    """Mean and mean square of unnormalized features, `[mel_bins, channels]`."""

    mean: np.ndarray
    mean_square: np.ndarray
    utterances: int
    frames: int


def feature_statistics(waveforms, config: FeatureConfig) -> FeatureStatistics:
    """Statistics of the sounding real frames of `waveforms`.

    Args:
        waveforms: float32 arrays at the model's sample rate.
        config: the run's front end (featurized without dither).

    Returns:
        Their `FeatureStatistics`.

    Raises:
        ValueError: no waveform has a sounding frame.
    """
    signature = [tf.TensorSpec([None], tf.float32)]

    @tf.function(input_signature=signature)
    def sums(waveform):
        waveforms, lengths, _ = clean_waveforms(waveform[None], tf.shape(waveform)[:1])
        features, real, silent = unnormalized_features(waveforms, lengths, config)
        weights = tf.cast(real & ~silent, tf.float64)[0, :, None, None]
        values = tf.cast(features[0], tf.float64)
        return (
            tf.reduce_sum(weights),
            tf.reduce_sum(values * weights, axis=0),
            tf.reduce_sum(tf.square(values) * weights, axis=0),
        )

    frames, total, total_square, utterances = 0.0, 0.0, 0.0, 0
    for waveform in waveforms:
        count, values, squares = sums(np.asarray(waveform, np.float32))
        frames += float(count)
        total += values.numpy()
        total_square += squares.numpy()
        utterances += 1
    if frames == 0:
        raise ValueError(
            f"no sounding audio in the {utterances} utterances read for the "
            "normalization prior: check the training data."
        )
    return FeatureStatistics(
        mean=(total / frames).astype(np.float32),
        mean_square=(total_square / frames).astype(np.float32),
        utterances=utterances,
        frames=int(frames),
    )


def training_waveforms(problem: Problem, data_dir: str, count: int = PRIOR_UTTERANCES):
    """`count` training waveforms spread evenly over the training split.

    Args:
        problem: a speech problem whose training shards are in `data_dir`.
        data_dir: where they are.
        count: how many (all of them if the split has fewer).

    Yields:
        float32 waveforms: every `records // count`-th utterance in the
        order datagen wrote them (`shards.write_shards` deals them round
        robin, so reading one record of each shard in turn restores it).
    """
    paths = problem.require_data(data_dir, TRAIN)
    records = without_autotuning(
        tf.data.Dataset.from_tensor_slices(paths).interleave(
            tf.data.TFRecordDataset, cycle_length=len(paths), block_length=1
        )
    )
    lengths = problem.manifest_lengths(data_dir, TRAIN)
    if lengths:
        total = len(next(iter(lengths.values())))
    else:  # no manifest: count them (one more read)
        total = int(records.reduce(0, lambda n, _: n + 1))
    for record in records.shard(max(1, total // count), 0).take(count):
        yield problem.decode_example(record)["waveform"].numpy()


def _saved_prior(output_dir: str) -> tuple[list, list] | None:
    """The prior's statistics a run in `output_dir` saved, if it saved any."""
    if not tf.io.gfile.exists(os.path.join(output_dir, run_dir.HPARAMS_FILE)):
        return None
    return feature_config.saved_prior(run_dir.load_hparams(output_dir))


def add_training_prior(
    hparams: HParams, problem: Problem, data_dir: str, output_dir: str
) -> FeatureStatistics | None:
    """Puts the training set's statistics into `hparams` when they ask for a prior.

    `FeatureConfig.wants_prior` says whether they do. A run resumed in
    `output_dir` takes the statistics it saved; a new run computes them from
    `data_dir`'s training split.

    Returns:
        The statistics computed, or None (none wanted, or taken from the saved run).
    """
    config = FeatureConfig.from_hparams(hparams)
    if not config.wants_prior:
        return None
    saved = _saved_prior(output_dir)
    if saved is not None:
        feature_config.store_prior(hparams, *saved)
        return None
    statistics = feature_statistics(training_waveforms(problem, data_dir), config)
    feature_config.store_prior(hparams, statistics.mean, statistics.mean_square)
    return statistics
