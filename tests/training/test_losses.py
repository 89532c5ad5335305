"""padded_cross_entropy equals T2T's formula and the CTC loss a brute-force sum, by hand."""

import itertools
import math

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.training.losses import (
    padded_cross_entropy,
    smoothing_entropy_constant,
    summed_ctc_loss,
)


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


def _brute_force_ctc(logits, labels):
    """-log of the summed probability of every frame path that collapses to `labels`."""
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    total = 0.0
    for path in itertools.product(range(logits.shape[1]), repeat=logits.shape[0]):
        collapsed = [s for i, s in enumerate(path) if s != 0 and (i == 0 or path[i - 1] != s)]
        if collapsed == labels:
            total += math.exp(sum(log_probs[t, s] for t, s in enumerate(path)))
    return -math.log(total)


def test_ctc_loss_equals_brute_force_sum_over_alignments_and_drops_eos_and_padding():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(2, 5, 4)).astype(np.float32)
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 1, 0]], np.float32)
    labels = np.array([[2, 3, 3, 1, 0], [3, 2, 1, 0, 0]])  # ids, EOS (1), padding
    expected = _brute_force_ctc(logits[0], [2, 3, 3]) + _brute_force_ctc(logits[1, :4], [3, 2])
    assert float(summed_ctc_loss(logits, mask, labels)) == pytest.approx(expected, rel=1e-5)


def test_ctc_example_too_long_for_its_frames_adds_zero_with_finite_gradients():
    logits = tf.Variable(np.random.default_rng(1).normal(size=(2, 3, 4)).astype(np.float32))
    mask = np.ones((2, 3), np.float32)
    # Row 0 needs 4 frames (3 labels + 1 repeated pair); row 1 fits.
    labels = np.array([[2, 2, 3, 1], [3, 1, 0, 0]])
    with tf.GradientTape() as tape:
        loss = summed_ctc_loss(logits, mask, labels)
    grads = tape.gradient(loss, logits).numpy()
    assert float(loss) == pytest.approx(_brute_force_ctc(logits.numpy()[1], [3]), rel=1e-5)
    assert np.isfinite(grads).all()
    assert not grads[0].any() and grads[1].any()


def test_ctc_kernel_path_equals_the_dense_path_xla_takes():
    """Outside XLA the loss runs on TensorFlow's CTC kernel; under XLA on the dense path."""
    logits = tf.Variable(np.random.default_rng(3).normal(size=(4, 30, 7)).astype(np.float32))
    mask = np.ones((4, 30), np.float32)
    mask[1, 20:] = 0  # padding
    mask[3, 5:] = 0  # row 3 needs 9 frames: infeasible
    labels = np.array(
        [
            [2, 3, 3, 4, 1, 0, 0, 0],
            [5, 6, 2, 1, 0, 0, 0, 0],
            [1, 0, 0, 0, 0, 0, 0, 0],  # an empty transcript: the all-blank path
            [2, 2, 2, 3, 4, 5, 6, 1],
        ]
    )

    def loss_and_gradient(compute):
        with tf.GradientTape() as tape:
            loss = compute()
        return float(loss), tape.gradient(loss, logits).numpy()

    kernel, kernel_grads = loss_and_gradient(lambda: summed_ctc_loss(logits, mask, labels))
    dense, dense_grads = loss_and_gradient(
        tf.function(lambda: summed_ctc_loss(logits, mask, labels), jit_compile=True)
    )
    assert kernel == pytest.approx(dense, rel=1e-5)
    np.testing.assert_allclose(kernel_grads, dense_grads, atol=1e-4)
    assert kernel_grads[2].any() and not kernel_grads[3].any()


def test_ctc_of_a_batch_without_a_label_is_the_all_blank_path():
    """A batch whose every label sequence was left out (labels `[batch, 0]`:
    no phoneme target fitted) costs each example its all-blank path, on the
    kernel as on the dense path."""
    logits = np.random.default_rng(4).normal(size=(2, 3, 4)).astype(np.float32)
    mask = np.array([[1, 1, 1], [1, 1, 0]], np.float32)
    blank = np.log(np.exp(logits).sum(-1)) - logits[:, :, 0]  # -log p(blank) per frame
    expected = float((blank * mask).sum())
    labels = np.zeros([2, 0], np.int32)
    assert float(summed_ctc_loss(logits, mask, labels)) == pytest.approx(expected, rel=1e-5)
    xla = tf.function(lambda: summed_ctc_loss(logits, mask, labels), jit_compile=True)
    assert float(xla()) == pytest.approx(expected, rel=1e-5)
