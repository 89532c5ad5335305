"""padded_cross_entropy equals T2T's formula, computed by hand."""

import math

import numpy as np
import pytest

from t2t_lite.training.losses import padded_cross_entropy, smoothing_entropy_constant


def test_loss_equals_hand_computed_value_with_smoothing_and_padding():
    vocab = 4
    logits = np.array(
        [[[2.0, 0.5, -1.0, 0.0], [0.1, 0.2, 0.3, 0.4], [9.0, 9.0, 9.0, 9.0]]], np.float32
    )
    labels = np.array([[2, 1, 0]])  # the last position is padding
    smoothing = 0.1

    def log_softmax(row):
        row = np.asarray(row, np.float64)
        return row - math.log(np.exp(row).sum())

    on, off = 0.9, 0.1 / 3
    constant = -(on * math.log(on) + 3 * off * math.log(off))
    expected = 0.0
    for position, label in enumerate([2, 1]):
        targets = np.full(vocab, off)
        targets[label] = on
        expected += -(targets * log_softmax(logits[0, position])).sum() - constant
    expected /= 2

    loss, tokens = padded_cross_entropy(logits, labels, smoothing)
    assert float(tokens) == 2.0
    assert float(loss) == pytest.approx(expected, abs=1e-5)
    assert loss.dtype.name == "float32"
    assert smoothing_entropy_constant(vocab, smoothing) == pytest.approx(constant)


def test_perfect_smoothed_prediction_costs_zero_and_no_smoothing_is_plain_xent():
    vocab = 5
    on, off = 0.9, 0.1 / 4
    probs = np.full(vocab, off)
    probs[3] = on
    logits = np.log(probs)[None, None].astype(np.float32)
    loss, _ = padded_cross_entropy(logits, [[3]], 0.1)
    assert float(loss) == pytest.approx(0.0, abs=1e-5)
    plain, _ = padded_cross_entropy(logits, [[3]], 0.0)
    assert float(plain) == pytest.approx(-math.log(on), abs=1e-5)


def test_all_padding_gives_zero_not_nan():
    loss, tokens = padded_cross_entropy(np.zeros((1, 2, 3), np.float32), [[0, 0]], 0.1)
    assert float(tokens) == 0.0 and float(loss) == 0.0
