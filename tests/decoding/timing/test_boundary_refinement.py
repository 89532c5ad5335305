"""Word boundaries refined on the feature frames: a clear peak near the
alignment's boundary is taken, and nothing leaves its word's CTC span,
crosses a neighbour, leaves the audio or comes out of order."""

import numpy as np
import pytest

from t2t_lite.decoding.timing.boundary_refinement import (
    END_WINDOW,
    START_WINDOW,
    refine_word_boundaries,
)

STEP, MIDDLE = 4, 7  # the speech front end's: encoder frame t is feature frames 5+4t .. 8+4t


def frame_start(t):
    return MIDDLE - STEP // 2 + STEP * t


def frame_end(t):
    return MIDDLE + STEP // 2 + STEP * t


def refine(probs, lengths, first, last, timed):
    starts, ends = refine_word_boundaries(
        np.asarray(probs, np.float32), lengths, first, last, timed, STEP, MIDDLE
    )
    return starts.numpy(), ends.numpy()


def test_a_clear_peak_in_the_window_is_taken_and_one_outside_is_not():
    frames = 80
    probs = np.zeros([1, frames, 2], np.float32)
    first, last = np.array([[4, 10]]), np.array([[6, 12]])
    # The first word may start well after its first frame (a CTC head fires an
    # utterance's first token at once): 60 ms after it here.
    probs[0, frame_start(4) + 6, 0] = 1.0
    probs[0, frame_end(6) + 2, 1] = 0.8  # its end, 20 ms after its last frame
    # The second word: a peak before the previous word's last encoder frame
    # (outside its span), one later than START_WINDOW[1] after its first frame,
    # and the weaker one between them, 80 ms early.
    probs[0, frame_start(6) - 1, 0] = 0.95
    probs[0, frame_start(10) + START_WINDOW[1] + 1, 0] = 0.9
    probs[0, frame_start(10) - 8, 0] = 0.5
    probs[0, frame_end(12) + 3, 1] = 0.7
    starts, ends = refine(probs, [frames], first, last, np.ones([1, 2], bool))
    assert starts[0, 0] == frame_start(4) + 6 and ends[0, 0] == frame_end(6) + 2
    assert starts[0, 1] == frame_start(10) - 8 and ends[0, 1] == frame_end(12) + 3


@pytest.mark.parametrize("seed", range(20))
def test_refined_boundaries_keep_to_spans_order_and_audio(seed):
    rng = np.random.default_rng(seed)
    batch, words = 3, 6
    first = np.zeros([batch, words], np.int32)
    last = np.zeros([batch, words], np.int32)
    timed = np.zeros([batch, words], bool)
    lengths = np.zeros([batch], np.int32)
    for row in range(batch):
        count = rng.integers(1, words + 1)
        frame = rng.integers(0, 4)
        for word in range(count):
            first[row, word] = frame
            last[row, word] = frame + rng.integers(0, 4)
            frame = last[row, word] + 1 + rng.integers(0, 3)  # words may touch
        timed[row, :count] = True
        lengths[row] = frame_end(last[row, count - 1]) + rng.integers(-3, 8)
    frames = int(lengths.max()) + 5
    probs = rng.random([batch, frames, 2]).astype(np.float32)
    starts, ends = refine(probs, lengths, first, last, timed)
    for row in range(batch):
        count = int(timed[row].sum())
        sequence = np.stack([starts[row, :count], ends[row, :count]], axis=1).reshape(-1)
        assert np.all(np.diff(sequence) >= 0), "out of order"
        assert sequence.min() >= 0 and sequence.max() <= lengths[row] - 1, "outside the audio"
        for word in range(count):
            start_floor = frame_start(last[row, word - 1]) if word else 0
            end_ceiling = frame_end(first[row, word + 1]) if word + 1 < count else frames
            audio_end = lengths[row] - 1  # the last encoder frame may reach past it
            assert min(start_floor, audio_end) <= starts[row, word] <= frame_end(last[row, word])
            assert min(frame_start(first[row, word]), audio_end) <= ends[row, word] <= end_ceiling
            assert ends[row, word] <= frame_end(last[row, word]) + END_WINDOW[1]


def test_a_start_found_before_the_previous_end_becomes_that_end():
    frames = 60
    probs = np.zeros([1, frames, 2], np.float32)
    first, last = np.array([[2, 5]]), np.array([[4, 8]])
    probs[0, frame_end(4) + 1, 1] = 1.0  # the first word ends in the second's first frame
    probs[0, frame_start(5) - 3, 0] = 1.0  # the second starts before that
    starts, ends = refine(probs, [frames], first, last, np.ones([1, 2], bool))
    assert starts[0, 1] == ends[0, 0] == frame_end(4) + 1


def test_rows_without_words_refine_to_nothing():
    empty = np.zeros([2, 0], np.int32)
    starts, ends = refine(np.zeros([2, 30, 2]), [30, 0], empty, empty, np.zeros([2, 0], bool))
    assert starts.shape == ends.shape == (2, 0)
