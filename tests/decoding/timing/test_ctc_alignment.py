"""Tests for t2t_lite.decoding.timing.ctc_alignment: Viterbi forced alignment vs brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.decoding.timing.ctc_alignment import ctc_forced_align

BLANK = 0


def collapse(path):
    """CTC's many-to-one map: merge repeats, drop blanks."""
    out, previous = [], None
    for symbol in path:
        if symbol != previous and symbol != BLANK:
            out.append(symbol)
        previous = symbol
    return out


def brute_force(log_probs, labels):
    """The best path that collapses to `labels`, by enumerating every path."""
    frames, vocab = log_probs.shape
    best, best_path = -np.inf, None
    for path in itertools.product(range(vocab), repeat=frames):
        if collapse(path) == list(labels):
            score = sum(log_probs[t, s] for t, s in enumerate(path))
            if score > best:
                best, best_path = score, path
    return best, best_path


def spans_of(path, labels):
    """First and last frame of each label along a best path."""
    spans, k, previous = [], -1, BLANK
    for t, symbol in enumerate(path):
        if symbol != BLANK and symbol != previous:
            k += 1
            spans.append([t, t])
        elif symbol != BLANK:
            spans[k][1] = t
        previous = symbol
    assert len(spans) == len(labels)
    return np.array(spans)


def log_softmax(x):
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


@pytest.mark.parametrize("seed", range(6))
def test_matches_brute_force_on_random_posteriors(seed):
    rng = np.random.default_rng(seed)
    frames, vocab = 6, 3
    labels_per_row = [[1, 2], [2, 2], [1], [1, 2, 1]]
    log_probs = log_softmax(rng.normal(size=(len(labels_per_row), frames, vocab)) * 2)
    width = max(map(len, labels_per_row))
    labels = np.array([row + [0] * (width - len(row)) for row in labels_per_row])
    spans = ctc_forced_align(
        log_probs, [frames] * len(labels_per_row), labels, [len(r) for r in labels_per_row]
    )
    for row, row_labels in enumerate(labels_per_row):
        best, path = brute_force(log_probs[row], row_labels)
        np.testing.assert_allclose(spans.path_log_prob[row], best, rtol=1e-5)
        expected = spans_of(path, row_labels)
        count = len(row_labels)
        np.testing.assert_array_equal(spans.first_frame[row, :count], expected[:, 0])
        np.testing.assert_array_equal(spans.last_frame[row, :count], expected[:, 1])
        for k, (first, last) in enumerate(expected):
            on = log_probs[row, first : last + 1, row_labels[k]]
            np.testing.assert_allclose(spans.mean_log_prob[row, k], on.mean(), rtol=1e-5)
            np.testing.assert_allclose(spans.min_log_prob[row, k], on.min(), rtol=1e-5)


def test_padding_frames_and_labels_change_nothing():
    rng = np.random.default_rng(7)
    log_probs = log_softmax(rng.normal(size=(1, 7, 4)) * 2)
    alone = ctc_forced_align(log_probs, [7], [[1, 3, 2]], [3])
    padded_log_probs = np.concatenate([log_probs, log_softmax(rng.normal(size=(1, 5, 4)))], 1)
    padded = ctc_forced_align(padded_log_probs, [7], [[1, 3, 2, 2, 1]], [3])
    for name in ("first_frame", "last_frame", "mean_log_prob", "min_log_prob"):
        np.testing.assert_allclose(getattr(padded, name)[:, :3], getattr(alone, name))
    np.testing.assert_array_equal(padded.first_frame[0, 3:], [0, 0])
    np.testing.assert_array_equal(padded.last_frame[0, 3:], [-1, -1])


def test_labels_that_cannot_fit_get_no_frames():
    log_probs = log_softmax(np.zeros((2, 3, 3)))
    # Two equal labels need a blank between them: 3 frames hold [1, 1] but
    # 2 frames do not; 3 labels never fit 2 frames.
    spans = ctc_forced_align(log_probs, [3, 2], [[1, 1, 0], [1, 2, 1]], [2, 3])
    np.testing.assert_array_equal(spans.first_frame, [[0, 2, 0], [0, 0, 0]])
    np.testing.assert_array_equal(spans.last_frame, [[0, 2, -1], [-1, -1, -1]])
    assert spans.path_log_prob[0] > -10 and spans.path_log_prob[1] < -1e29


def test_a_clear_path_is_found_and_runs_under_xla():
    # Frames say: blank, a, a, blank, b, blank (a=1, b=2), each with p=0.9.
    best = [0, 1, 1, 0, 2, 0]
    probs = np.full((1, 6, 3), 0.05)
    probs[0, np.arange(6), best] = 0.9
    align = tf.function(ctc_forced_align, jit_compile=True)
    spans = align(np.log(probs).astype(np.float32), [6], [[1, 2]], [2])
    np.testing.assert_array_equal(spans.first_frame, [[1, 4]])
    np.testing.assert_array_equal(spans.last_frame, [[2, 4]])
    np.testing.assert_allclose(spans.mean_log_prob, np.log([[0.9, 0.9]]), rtol=1e-5)
