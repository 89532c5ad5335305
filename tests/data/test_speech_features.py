"""Tests for t2t_lite.data.speech_features: the one featurization of training and inference."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from t2t_lite import registry
from t2t_lite.data import audio_features, audio_io, digital_silence
from t2t_lite.data.feature_config import AUDIO_HPARAMS, FeatureConfig
from t2t_lite.data.problem import EVAL
from t2t_lite.data.speech_features import featurize, featurize_batch
from t2t_lite.data.utterance_level import quiet_frames_of_utterance
from t2t_lite.decoding.audio.long_form import split_recordings
from t2t_lite.hparam import HParams

ZEROS = np.zeros(4000, np.float32)  # 0.25 s of exact digital silence
STEP = 160


@pytest.fixture(scope="module")
def config():
    return FeatureConfig()


@pytest.fixture(scope="module")
def speech(librispeech_flac):
    return audio_io.read_audio(librispeech_flac)[:48000]


def inner(features, trim=6):
    """The frames whose delta-deltas see no frame outside the utterance."""
    return features[trim:-trim]


def test_exact_zeros_around_an_utterance_leave_its_features(config, speech):
    alone = featurize(speech, config, training=False).numpy()
    padded = featurize(np.concatenate([ZEROS, speech, ZEROS]), config, training=False).numpy()
    # Cut off before framing: the same frames, the same values.
    np.testing.assert_allclose(padded, alone, atol=1e-5)
    # T2T's front end (no cut, statistics over every frame) moves them a lot:
    # the check above can fail.
    offset = len(ZEROS) // STEP
    t2t = t2t_features(np.concatenate([ZEROS, speech, ZEROS]))
    t2t_difference = np.abs(inner(t2t[offset : offset + len(alone)]) - inner(t2t_features(speech)))
    assert t2t_difference[..., 0].mean() > 0.1


def t2t_features(waveform):
    log_mel = audio_features.compute_mel_filterbank_features(
        waveform[None], dither=0.0, lower_edge_hertz=20.0, upper_edge_hertz=8000.0
    )
    return audio_features.normalize_per_utterance(audio_features.add_delta_deltas(log_mel))[0]


def test_trim_cuts_each_rows_edge_zeros_and_keeps_inner_ones():
    row = np.array([0.0, 0.0, 0.5, 0.0, -0.25, 0.0, 0.0, 9.0], np.float32)  # 9 is past the length
    batch = np.stack([row, np.zeros(8, np.float32), np.full(8, 0.5, np.float32)])
    trimmed, lengths = digital_silence.trim_digital_silence(batch, [7, 8, 5])
    np.testing.assert_array_equal(lengths, [3, 0, 5])
    np.testing.assert_array_equal(trimmed[0], [0.5, 0.0, -0.25, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(trimmed[1], np.zeros(8))
    np.testing.assert_array_equal(trimmed[2], [0.5] * 5 + [0.0] * 3)
    starts, lengths = digital_silence.sounding_span(batch, [7, 8, 5])
    np.testing.assert_array_equal(starts, [2, 0, 0])
    np.testing.assert_array_equal(lengths, [3, 0, 5])


def test_an_exact_zero_pause_inside_speech_is_a_quiet_pause(config, speech):
    half = len(speech) // 2
    gapped = np.concatenate([speech[:half], np.zeros(8000, np.float32), speech[half:]])
    features = featurize(gapped, config, training=False).numpy()
    assert np.isfinite(features).all()
    gap = features[half // STEP + 5 : (half + 8000) // STEP - 5, :, 0]
    assert np.ptp(gap, axis=0).max() < 1e-5  # one level per bin: the fill
    # Filled at each bin's 10th percentile: inside the range of real frames,
    # not the log floor far below them.
    sounding = np.concatenate(
        [features[: half // STEP - 3, :, 0], features[(half + 8000) // STEP + 3 :, :, 0]]
    )
    low, high = np.percentile(sounding, [5, 20], axis=0)
    assert np.all((gap >= low - 1e-4) & (gap <= high + 1e-4))


@pytest.mark.parametrize("samples", [0, 1, 100, 400])
def test_requests_shorter_than_a_frame_give_finite_features(config, samples):
    waveforms = np.full([2, samples], 0.25, np.float32)
    features, lengths = featurize_batch(waveforms, [samples, samples], config)
    assert features.shape[1] >= 1
    assert np.isfinite(features.numpy()).all()
    expected = 0 if samples <= 1 else -(-(samples - 1) // STEP)
    np.testing.assert_array_equal(lengths, [expected, expected])


def test_all_nan_rows_read_as_silence(config, speech):
    batch = np.stack([np.full(len(speech), np.nan, np.float32), speech])
    features, lengths = featurize_batch(batch, [len(speech)] * 2, config)
    assert np.isfinite(features.numpy()).all() and lengths[0] == 0
    alone = featurize(speech, config, training=False).numpy()
    np.testing.assert_allclose(features[1, : len(alone)], alone, atol=2e-4)


def test_pipeline_decoder_and_export_featurize_alike(config, speech):
    """The input pipeline (not training), and the pieces the decoder and the
    SavedModel featurize (`transcriber.search_pieces`), give the same
    features for the same audio: one featurization."""
    problem = registry.problem("librispeech")
    run_hparams = problem.add_hparams(HParams(**AUDIO_HPARAMS))
    example = {"waveform": speech, "targets": np.array([5, 1])}
    pipeline = problem.preprocess_example(example, EVAL, run_hparams)["inputs"].numpy()
    batch = np.stack([speech, np.zeros_like(speech)])
    pieces, piece_lengths, _ = split_recordings(batch, [len(speech), 8000], 16000, 30.0)
    served, frames = featurize_batch(pieces, piece_lengths, FeatureConfig.from_hparams(run_hparams))
    assert frames[0] == len(pipeline)
    np.testing.assert_allclose(served[0, : len(pipeline)], pipeline, atol=1e-5)


def test_a_floor_keeps_a_lead_of_quiet_out_of_the_utterances_statistics(config, speech):
    """A second of a -60 dBFS room floor before a real utterance: with the
    statistics leaving out frames 20 dB under the utterance's loud frames,
    its speech frames normalize as they do alone; counted, the quiet moves
    every one of them (by about half a standard deviation)."""
    floor = np.random.default_rng(0).uniform(-1.0, 1.0, 16000) * 10 ** (-60 / 20) * np.sqrt(3)
    led = np.concatenate([floor.astype(np.float32), speech])
    for floor_db, moved in ((0.0, True), (20.0, False)):
        floored = dataclasses.replace(config, statistics_floor_db=floor_db)
        alone = featurize(speech, floored, training=False).numpy()
        after = featurize(led, floored, training=False).numpy()[100 : 100 + len(alone)]
        gap = np.abs(inner(after)[..., 0] - inner(alone)[..., 0]).mean()
        assert (gap > 0.2) if moved else (gap < 0.05), (floor_db, gap)


def test_the_loud_frames_are_the_utterances_own_and_padding_is_never_quiet():
    energies = np.array([[0.0, -5.0, -0.5, 0.0], [0.0, -5.0, 9.0, 9.0]], np.float32)
    features = np.repeat(energies[:, :, None, None], 80, axis=2)  # [2, 4, 80, 1]
    real = np.array([[True, True, True, True], [True, True, False, False]])
    quiet = quiet_frames_of_utterance(features, real, floor_db=20.0).numpy()
    # 20 dB is 2.3 nats of log-mel magnitude: -5 is quiet, -0.5 is not;
    # the second row's padding, loud or not, is neither counted nor quiet.
    assert quiet.tolist() == [[False, True, False, False], [False, True, False, False]]
