"""Tests for t2t_lite.decoding.timing.word_times: tokens grouped into timed words."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.data.feature_config import AUDIO_HPARAMS, FeatureConfig
from t2t_lite.data.text_encoders import EOS_ID, ByteTextEncoder
from t2t_lite.decoding.timing.word_times import (
    WordTimer,
    encoder_frame_seconds,
    word_boundary_tables,
)
from t2t_lite.hparam import HParams

FEATURES = FeatureConfig.from_hparams(HParams(**AUDIO_HPARAMS))


def peaky_log_probs(frame_symbols, vocab, p=0.9):
    """Posteriors whose best symbol at frame t is `frame_symbols[t]` with probability p."""
    probs = np.full((len(frame_symbols), vocab), (1 - p) / (vocab - 1))
    probs[np.arange(len(frame_symbols)), frame_symbols] = p
    return np.log(probs).astype(np.float32)


def test_encoder_frames_are_40_ms_centred_on_what_they_see():
    step, middle = encoder_frame_seconds(FEATURES)
    assert step == pytest.approx(0.04)
    # Frame 0 sees feature frames 0..14: samples 0 .. 14 * 160 + 400.
    assert middle == pytest.approx((14 * 160 + 400) / 2 / 16000)


def test_byte_words_get_their_tokens_frames_and_confidence():
    encoder = ByteTextEncoder()
    ids = encoder.encode("hi yo") + [EOS_ID, 0, 0]
    h, i, space, y, o = ids[:5]
    # Frames: _ h h i _ space _ y _ o o _ (blank 0)
    frames = [0, h, h, i, 0, space, 0, y, 0, o, o, 0]
    log_probs = peaky_log_probs(frames, encoder.vocab_size)[None]
    timer = WordTimer(encoder.token_surfaces(), FEATURES)
    times = timer(log_probs, [len(frames)], [ids], offsets=[1.0])
    assert times.num_words.numpy().tolist() == [2]
    assert times.words.numpy().tolist() == [[b"hi", b"yo"]]
    step, middle = encoder_frame_seconds(FEATURES)
    expected_starts = [1.0 + middle + 1 * step - step / 2, 1.0 + middle + 7 * step - step / 2]
    expected_ends = [1.0 + middle + 3 * step + step / 2, 1.0 + middle + 10 * step + step / 2]
    np.testing.assert_allclose(times.starts[0], expected_starts, rtol=1e-6)
    np.testing.assert_allclose(times.ends[0], expected_ends, rtol=1e-6)
    np.testing.assert_allclose(times.confidences[0], [0.9, 0.9], rtol=1e-5)
    calibrated = WordTimer(encoder.token_surfaces(), FEATURES, confidence_exponent=0.25)
    times = calibrated(log_probs, [len(frames)], [ids], offsets=[1.0])
    np.testing.assert_allclose(times.confidences[0], [0.9**0.25] * 2, rtol=1e-5)


def test_the_alignments_times_stay_inside_the_audio():
    """The last encoder frame's 40 ms may end past the audio: given the
    feature frames, no time falls after the last one's middle."""
    encoder = ByteTextEncoder()
    ids = encoder.encode("hi") + [EOS_ID]
    h, i = ids[:2]
    frames = [0, h, 0, i]  # "hi" ends with the last encoder frame
    log_probs = peaky_log_probs(frames, encoder.vocab_size)[None]
    timer = WordTimer(encoder.token_surfaces(), FEATURES)
    unclipped = timer(log_probs, [len(frames)], [ids], [1.0])
    step, middle = encoder_frame_seconds(FEATURES)
    assert float(unclipped.ends[0, 0]) == pytest.approx(1.0 + middle + 3.5 * step)
    audio_end = 1.0 + 0.0125 + 0.01 * (20 - 1)  # 20 feature frames
    assert float(unclipped.ends[0, 0]) > audio_end
    clipped = timer(log_probs, [len(frames)], [ids], [1.0], frame_lengths=[20])
    assert float(clipped.ends[0, 0]) == pytest.approx(audio_end)
    assert float(clipped.starts[0, 0]) == float(unclipped.starts[0, 0])


def test_a_boundary_head_moves_times_to_its_feature_frames():
    encoder = ByteTextEncoder()
    ids = encoder.encode("hi yo") + [EOS_ID]
    h, i, space, y, o = ids[:5]
    frames = [0, h, h, i, 0, space, 0, y, 0, o, o, 0]
    log_probs = peaky_log_probs(frames, encoder.vocab_size)[None]
    feature_frames = 4 * len(frames)
    probs = np.zeros([1, feature_frames, 2], np.float32)
    # "hi" aligned to encoder frames 1-3 (feature frames 9 .. 20), "yo" to 7-10
    # (33 .. 48): the head puts "hi" at 4 .. 22 and "yo"'s start at 27.
    probs[0, [4, 27], 0] = 0.9
    probs[0, 22, 1] = 0.9
    timer = WordTimer(encoder.token_surfaces(), FEATURES)
    times = timer(log_probs, [len(frames)], [ids], [1.0], boundary_probs=probs, frame_lengths=[44])
    # Feature frame j's window is centred 12.5 ms + 10 ms * j into the audio.
    np.testing.assert_allclose(times.starts[0], [1.0125 + 0.04, 1.0125 + 0.27], rtol=1e-6)
    assert float(times.ends[0, 0]) == pytest.approx(1.0125 + 0.22)
    # No peak near "yo"'s end: the pull keeps it near the alignment's, inside
    # the audio's 44 frames.
    assert float(times.ends[0, 1]) <= 1.0125 + 0.43
    without = timer(log_probs, [len(frames)], [ids], [1.0])
    assert times.words.numpy().tolist() == without.words.numpy().tolist()
    np.testing.assert_array_equal(times.confidences, without.confidences)


def test_sentencepiece_style_pieces_start_words_at_their_leading_space():
    # ids: 0 pad, 1 eos, 2 " the", 3 " ca", 4 "t", 5 " ", 6 "s"
    surfaces = [b"", b"", b" the", b" ca", b"t", b" ", b"s"]
    tables = word_boundary_tables(surfaces)
    assert tables["content"].tolist() == [False, False, True, True, True, False, True]
    hypothesis = [2, 3, 4, 5, 6, EOS_ID]
    frames = [2, 0, 3, 4, 0, 5, 6, 0]
    log_probs = peaky_log_probs(frames, len(surfaces))[None]
    times = WordTimer(surfaces, FEATURES)(log_probs, [len(frames)], [hypothesis])
    assert times.words.numpy().tolist() == [[b"the", b"cat", b"s"]]
    step, middle = encoder_frame_seconds(FEATURES)
    np.testing.assert_allclose(times.starts[0], middle + step * np.array([0, 2, 6]) - step / 2)
    np.testing.assert_allclose(times.ends[0], middle + step * np.array([0, 3, 6]) + step / 2)


def test_batch_rows_pad_and_unalignable_words_are_marked():
    encoder = ByteTextEncoder()
    surfaces = encoder.token_surfaces()
    a, b = encoder.encode("ab")
    frames = [0, a, 0, b, 0]
    log_probs = peaky_log_probs(frames, encoder.vocab_size)
    batch = np.stack([log_probs, log_probs])
    # Row 0: "ab" in 5 frames; row 1: "a a a" needs 5 tokens + 2 blanks > 2 frames.
    ids = [encoder.encode("ab") + [EOS_ID, 0, 0, 0], encoder.encode("a a a") + [EOS_ID]]
    timer = tf.function(WordTimer(surfaces, FEATURES).__call__)
    times = timer(batch, [5, 2], ids)
    assert times.num_words.numpy().tolist() == [1, 3]
    assert times.words.numpy().tolist() == [[b"ab", b"", b""], [b"a", b"a", b"a"]]
    assert (times.starts[0, :1] > 0).numpy().all()
    np.testing.assert_array_equal(times.starts[1], [-1, -1, -1])
    np.testing.assert_array_equal(times.confidences[1], [0, 0, 0])


def test_tokens_fired_early_and_cut_off_from_their_word_do_not_move_its_start():
    # A CTC head fires an utterance's first tokens on its first frames: "go"
    # at frames 0-1, the rest of "good" at 9-10 after a run of blanks.
    encoder = ByteTextEncoder()
    g, o, d = encoder.encode("god")
    frames = [g, o, 0, 0, 0, 0, 0, 0, 0, o, d, 0]
    log_probs = peaky_log_probs(frames, encoder.vocab_size)[None]
    times = WordTimer(encoder.token_surfaces(), FEATURES)(
        log_probs, [len(frames)], [encoder.encode("good") + [EOS_ID]]
    )
    step, middle = encoder_frame_seconds(FEATURES)
    # From frame 9, one frame back for each of the two displaced tokens.
    np.testing.assert_allclose(times.starts[0], [middle + 7 * step - step / 2], rtol=1e-6)
    np.testing.assert_allclose(times.ends[0], [middle + 10 * step + step / 2], rtol=1e-6)
    # A short gap (three blank frames) is the word's own: its start stays.
    frames = [g, o, 0, 0, 0, o, d, 0]
    log_probs = peaky_log_probs(frames, encoder.vocab_size)[None]
    times = WordTimer(encoder.token_surfaces(), FEATURES)(
        log_probs, [len(frames)], [encoder.encode("good") + [EOS_ID]]
    )
    np.testing.assert_allclose(times.starts[0], [middle - step / 2], rtol=1e-6)
