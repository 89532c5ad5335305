"""Word boundaries refined on the feature frames: the best path through the
boundary head's output (the same as trying every placement), which takes the
head's peaks however late the CTC alignment is, and never leaves the
neighbours' CTC spans or the audio, nor comes out of order."""

import itertools

import numpy as np
import pytest

from t2t_lite.decoding.timing.boundary_refinement import (
    MIN_WORD_FRAMES,
    PROBABILITY_FLOOR,
    PULL_PER_FRAME,
    refine_word_boundaries,
)
from t2t_lite.layers.speech_front_end import SpeechFrontEnd

STEP, MIDDLE = SpeechFrontEnd.frames_per_output()  # encoder frame t: feature frames 5+4t .. 8+4t


def frame_start(t):
    return MIDDLE - STEP // 2 + STEP * t


def frame_end(t):
    return MIDDLE + STEP // 2 + STEP * t


def refine(probs, lengths, first, last, timed):
    probs = np.asarray(probs, np.float32)
    starts, ends = refine_word_boundaries(probs, lengths, first, last, timed)
    return starts.numpy(), ends.numpy()


def test_the_heads_peaks_are_taken_however_late_the_alignment_is():
    frames = 120
    probs = np.zeros([1, frames, 2], np.float32)
    # A lagging CTC head: each word's tokens fire 120-160 ms after it began.
    first, last = np.array([[8, 16]]), np.array([[11, 20]])
    probs[0, frame_start(8) - 16, 0] = 0.9  # 160 ms before its first frame
    probs[0, frame_start(16) - 12, 1] = 0.8  # ends where the next word starts
    probs[0, frame_start(16) - 12, 0] = 0.7
    probs[0, frame_end(20) - 10, 1] = 0.9
    starts, ends = refine(probs, [frames], first, last, np.ones([1, 2], bool))
    assert starts[0].tolist() == [frame_start(8) - 16, frame_start(16) - 12]
    assert ends[0].tolist() == [frame_start(16) - 12, frame_end(20) - 10]
    # Before the previous word's first encoder frame is out of a start's reach.
    probs[0, frame_start(16) - 12, 0] = 0.0
    probs[0, frame_start(8) - 2, 0] = 0.3  # the second word would take it
    starts, _ = refine(probs, [frames], first, last, np.ones([1, 2], bool))
    assert starts[0, 0] == frame_start(8) - 16 and starts[0, 1] >= frame_start(8)


def test_of_two_equal_peaks_the_one_nearer_the_alignment_is_taken():
    frames = 80
    probs = np.full([1, frames, 2], 0.0, np.float32)
    first, last = np.array([[5]]), np.array([[9]])
    probs[0, [frame_start(5) - 10, frame_start(5) - 2], 0] = 0.9
    probs[0, [frame_end(9) - 3, frame_end(9) + 7], 1] = 0.9
    starts, ends = refine(probs, [frames], first, last, np.ones([1, 1], bool))
    assert (starts[0, 0], ends[0, 0]) == (frame_start(5) - 2, frame_end(9) - 3)


def brute_force(probs, length, first, last):
    """The best placement of one row's boundaries, by trying every one."""
    words = len(first)
    score = np.log(probs + PROBABILITY_FLOOR)
    anchors = [(frame_start(a), frame_end(b)) for a, b in zip(first, last, strict=True)]
    best, best_path = -np.inf, None
    for path in itertools.combinations_with_replacement(range(length), 2 * words):
        total = 0.0
        for word in range(words):
            start, end = path[2 * word], path[2 * word + 1]
            floor = frame_start(first[word - 1]) if word else 0
            ceiling = frame_end(last[word + 1]) if word + 1 < words else length - 1
            if start < floor or start > frame_end(last[word]) or end > ceiling:
                break
            if end - start < MIN_WORD_FRAMES:
                break
            total += score[start, 0] + score[end, 1]
            total -= PULL_PER_FRAME * (abs(start - anchors[word][0]) + abs(end - anchors[word][1]))
        else:
            if total > best + 1e-4:
                best, best_path = total, path
    return best_path


@pytest.mark.parametrize("seed", range(6))
def test_the_path_is_the_best_placement_of_every_boundary(seed):
    rng = np.random.default_rng(seed)
    length = 26
    first, last = np.array([0, 2]), np.array([1, 3])
    probs = rng.random([length, 2]).astype(np.float32) ** 3
    starts, ends = refine(probs[None], [length], first[None], last[None], np.ones([1, 2], bool))
    path = np.stack([starts[0], ends[0]], axis=1).reshape(-1)
    assert tuple(path) == brute_force(probs, length, first, last)


@pytest.mark.parametrize("seed", range(20))
def test_refined_boundaries_keep_to_the_neighbours_spans_order_and_audio(seed):
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
            floor = frame_start(first[row, word - 1]) if word else 0
            ceiling = frame_end(last[row, word + 1]) if word + 1 < count else frames
            assert floor <= starts[row, word] <= frame_end(last[row, word])
            assert ends[row, word] <= ceiling


def test_words_said_without_a_pause_share_a_boundary():
    frames = 60
    probs = np.zeros([1, frames, 2], np.float32)
    first, last = np.array([[2, 5]]), np.array([[4, 8]])
    probs[0, frame_end(4) + 1, :] = 1.0  # the first word ends where the second starts
    starts, ends = refine(probs, [frames], first, last, np.ones([1, 2], bool))
    assert starts[0, 1] == ends[0, 0] == frame_end(4) + 1


def test_untimed_words_and_rows_without_words_leave_the_rest_alone():
    empty = np.zeros([2, 0], np.int32)
    starts, ends = refine(np.zeros([2, 30, 2]), [30, 0], empty, empty, np.zeros([2, 0], bool))
    assert starts.shape == ends.shape == (2, 0)
    frames = 60
    probs = np.zeros([2, frames, 2], np.float32)
    probs[:, 12, 0] = probs[:, 30, 1] = 1.0
    first, last = np.array([[2, 0], [2, 0]]), np.array([[6, 0], [6, 0]])
    timed = np.array([[True, False], [True, False]])
    starts, ends = refine(probs, [frames, 40], first, last, timed)
    assert starts[:, 0].tolist() == [12, 12] and ends[:, 0].tolist() == [30, 30]
