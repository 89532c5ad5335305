"""Splitting long recordings at pauses, and joining the pieces' texts."""

import numpy as np
import tensorflow as tf

from t2t_lite.data.audio_io import read_audio
from t2t_lite.decoding.audio.long_form import join_pieces, piece_ends, split_recordings
from t2t_lite.decoding.audio.pause_split import max_piece_samples, numpy_piece_ends

RATE = 16000


def speech(seconds, rng):
    return (0.3 * rng.normal(size=int(seconds * RATE))).astype(np.float32)


def pause(seconds, rng, level=3e-4):  # about 60 dB below the "speech"
    return (level * rng.normal(size=int(seconds * RATE))).astype(np.float32)


def test_a_recording_that_fits_is_one_piece():
    rng = np.random.default_rng(0)
    recording = np.concatenate([speech(1, rng), pause(0.5, rng), speech(1, rng)])
    ends = piece_ends(recording, len(recording), RATE, segment_seconds=5.0)
    assert ends.numpy().tolist() == [len(recording)]


def test_long_recordings_are_cut_in_the_middle_of_every_pause():
    rng = np.random.default_rng(1)
    parts = [speech(2, rng), pause(0.5, rng), speech(3, rng), pause(0.4, rng), speech(1.5, rng)]
    recording = np.concatenate(parts)
    ends = piece_ends(recording, len(recording), RATE, segment_seconds=4.0).numpy()
    assert ends.tolist() == [int(2.25 * RATE), int(5.7 * RATE), len(recording)]
    # A pause shorter than min_pause_seconds separates nothing: the cut falls
    # elsewhere (at the quietest 100 ms of the allowed window).
    short = np.concatenate([speech(2, rng), pause(0.1, rng), speech(3, rng)])
    ends = piece_ends(short, len(short), RATE, segment_seconds=4.0).numpy()
    assert len(ends) == 2 and abs(ends[0] - 2.05 * RATE) < 0.1 * RATE


def test_speech_with_no_pause_is_cut_within_the_segment_length():
    rng = np.random.default_rng(2)
    recording = speech(11, rng)
    ends = piece_ends(recording, len(recording), RATE, segment_seconds=4.0).numpy()
    lengths = np.diff(np.concatenate([[0], ends]))
    assert ends[-1] == len(recording) and np.all(lengths <= 4 * RATE)
    assert np.all(lengths[:-1] >= 2 * RATE)  # cuts in the last half of the window


def test_split_recordings_covers_every_sample_in_order():
    rng = np.random.default_rng(3)
    long = np.concatenate([speech(3, rng), pause(0.6, rng), speech(3, rng)])
    short = speech(1, rng)
    batch = np.zeros((3, len(long)), np.float32)
    batch[0], batch[1, : len(short)] = long, short  # row 2: empty
    pieces, lengths, rows = split_recordings(batch, [len(long), len(short), 0], RATE, 4.0)
    assert rows.numpy().tolist() == [0, 0, 1, 2]
    assert lengths.numpy().tolist() == [int(3.3 * RATE), len(long) - int(3.3 * RATE), RATE, 0]
    rejoined = np.concatenate([pieces[i, :n] for i, n in enumerate(lengths.numpy()[:2])])
    np.testing.assert_array_equal(rejoined, long)
    np.testing.assert_array_equal(pieces[2, : len(short)], short)
    assert not np.any(pieces[2, len(short) :]) and not np.any(pieces[3])


def test_join_pieces_skips_empty_texts_and_keeps_rows_apart():
    texts = tf.constant(["turn", "", "left", "", "stop"])
    joined = join_pieces(texts, tf.constant([0, 0, 0, 1, 2]), 4)
    assert joined.numpy().tolist() == [b"turn left", b"", b"stop", b""]


def test_numpy_split_cuts_where_the_graph_cuts(librispeech_mini):
    """`pause_split.numpy_piece_ends` (on-device runners, no TensorFlow) and
    the graph's `piece_ends` apply one set of rules: the same cuts on real
    speech joined by pauses of quiet noise, on unbroken speech (cut at the
    quietest 100 ms), on synthetic pauses, and on a recording that fits."""
    rng = np.random.default_rng(4)
    flacs = sorted(librispeech_mini.rglob("*.flac"))
    voices = [read_audio(str(path)) for path in flacs]
    joined = [voices[0], pause(0.6, rng), voices[1], pause(0.35, rng), voices[2], voices[3]]
    recordings = {
        "real speech and pauses": np.concatenate(joined),
        "real speech, no pause": np.concatenate(voices),
        "synthetic": np.concatenate([speech(2, rng), pause(0.5, rng), speech(6.5, rng)]),
        "fits": speech(2.5, rng),
    }
    for name, recording in recordings.items():
        for segment_seconds in (2.5, 4.0):
            expected = piece_ends(recording, len(recording), RATE, segment_seconds).numpy()
            got = numpy_piece_ends(recording, RATE, segment_seconds)
            assert got.tolist() == expected.tolist(), (name, segment_seconds)
            pieces = np.diff(np.concatenate([[0], got]))
            assert pieces.max() <= max_piece_samples(RATE, segment_seconds)
