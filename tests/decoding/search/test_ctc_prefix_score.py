"""CTC prefix scores against a brute-force sum over every alignment."""

import itertools

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.decoding.search.ctc_prefix_scorer import LOG_ZERO, CtcPrefixScorer

BLANK, EOS = 0, 1


def collapse(alignment):
    """CTC's many-to-one map: merge repeats, then drop blanks."""
    labels = [token for i, token in enumerate(alignment) if i == 0 or token != alignment[i - 1]]
    return tuple(token for token in labels if token != BLANK)


def brute_force(log_probs, prefix, whole=False):
    """log P(the labels start with `prefix`) (or equal it, `whole`) by enumeration.

    The prefix probability of `g + c` is the probability that the output
    starts with it: the sum over alignments whose collapsed labels do.
    """
    frames, vocab = log_probs.shape
    total = 0.0
    for alignment in itertools.product(range(vocab), repeat=frames):
        labels = collapse(alignment)
        if (labels == prefix) if whole else (labels[: len(prefix)] == prefix):
            total += np.exp(sum(log_probs[t, a] for t, a in enumerate(alignment)))
    return np.log(total) if total > 0 else -np.inf


def random_log_probs(rng, frames, vocab):
    logits = rng.normal(size=(frames, vocab)) * 2.0
    return logits - np.log(np.exp(logits).sum(-1, keepdims=True))


def score_sequence(scorer, tokens, beam=1):
    """Extends the empty prefix token by token; returns every step's psi for every token."""
    state = scorer.initial_state(beam)
    batch = int(scorer.lengths.shape[0])
    vocab = int(scorer.log_probs.shape[2])
    candidates = tf.tile(tf.range(vocab)[None, None], [batch, beam, 1])
    scores = []
    for step in range(len(tokens) + 1):
        psi, r = scorer.extend(state, candidates, step)
        scores.append(psi.numpy())
        if step == len(tokens):
            break
        token = tokens[step]
        state = {
            "r": r[:, :, token],
            "score": psi[:, :, token],
            "last": tf.fill([batch, beam], token),
        }
    return scores


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_prefix_scores_equal_a_brute_force_sum_over_alignments(seed):
    rng = np.random.default_rng(seed)
    frames, vocab = 5, 4  # blank, EOS (never emitted), two labels
    log_probs = random_log_probs(rng, frames, vocab)
    scorer = CtcPrefixScorer(log_probs[None], [frames], blank_id=BLANK, eos_id=EOS)
    # A repeated label (2, 2) exercises the blank-separated phi rule.
    tokens = [2, 2, 3]
    scores = score_sequence(scorer, tokens)
    for step, psi in enumerate(scores):
        prefix = tuple(tokens[:step])
        for token in (2, 3):
            expected = brute_force(log_probs, prefix + (token,))
            got = psi[0, 0, token]
            if np.isinf(expected):
                assert got < -1e3
            else:
                np.testing.assert_allclose(got, expected, atol=1e-4)
        # EOS: exactly the prefix, every frame consumed.
        np.testing.assert_allclose(psi[0, 0, EOS], brute_force(log_probs, prefix, whole=True), 1e-4)
        assert psi[0, 0, BLANK] == LOG_ZERO


def test_padded_frames_change_nothing_and_no_frames_only_fits_the_empty_sequence():
    rng = np.random.default_rng(3)
    short = random_log_probs(rng, 4, 4)
    padded = np.concatenate([short, random_log_probs(rng, 3, 4)])  # garbage past the end
    batch = np.stack([padded, padded])
    scorer = CtcPrefixScorer(batch, [4, 0], blank_id=BLANK, eos_id=EOS)
    reference = CtcPrefixScorer(short[None], [4], blank_id=BLANK, eos_id=EOS)
    tokens = [3, 2]
    got, expected = score_sequence(scorer, tokens), score_sequence(reference, tokens)
    for step in range(len(tokens) + 1):
        np.testing.assert_allclose(got[step][0], expected[step][0], atol=1e-5)
    empty = got[0][1, 0]
    assert empty[EOS] == 0.0  # log 1: with no frames the transcript is ""
    assert np.all(empty[2:] <= LOG_ZERO / 2)


def test_beams_and_candidates_are_independent_rows():
    rng = np.random.default_rng(4)
    log_probs = random_log_probs(rng, 6, 5)
    scorer = CtcPrefixScorer(log_probs[None], [6], blank_id=BLANK, eos_id=EOS)
    state = scorer.initial_state(2)
    psi, r = scorer.extend(state, tf.constant([[[2, 3, 4], [4, 3, 2]]]), 0)
    np.testing.assert_allclose(psi[0, 0].numpy(), psi[0, 1].numpy()[::-1], atol=1e-6)
    # One more step from two different prefixes, each equal to its brute force.
    state = {"r": r[:, :, 0], "score": psi[:, :, 0], "last": tf.constant([[2, 4]])}
    psi2, _ = scorer.extend(state, tf.constant([[[3], [3]]]), 1)
    np.testing.assert_allclose(psi2[0, 0, 0], brute_force(log_probs, (2, 3)), atol=1e-4)
    np.testing.assert_allclose(psi2[0, 1, 0], brute_force(log_probs, (4, 3)), atol=1e-4)


def test_scores_compile_with_xla():
    rng = np.random.default_rng(5)
    log_probs = tf.constant(random_log_probs(rng, 5, 4)[None], tf.float32)

    def first_scores(x):
        scorer = CtcPrefixScorer(x, [5], blank_id=BLANK, eos_id=EOS)
        return scorer.extend(scorer.initial_state(1), tf.constant([[[2, 3]]]), 0)[0]

    eager = first_scores(log_probs)
    compiled = tf.function(first_scores, jit_compile=True)(log_probs)
    np.testing.assert_allclose(compiled.numpy(), eager.numpy(), atol=1e-5)


def test_static_length_log_cumsum_exp_equals_tfs_op():
    # The doubling scan (element-wise ops, for TFLite) against TF's op, over
    # values spanning thousands of nats and ESPnet's finite log zero.
    from t2t_lite.decoding.search.ctc_prefix_scorer import _log_cumsum_exp

    rng = np.random.default_rng(0)
    for length in (1, 2, 7, 64, 250):
        x = rng.normal(scale=300.0, size=(2, 3, length)).astype(np.float32)
        x[0, 0, : length // 2] = LOG_ZERO
        expected = tf.math.cumulative_logsumexp(x, axis=-1).numpy()
        scanned = _log_cumsum_exp(tf.constant(x)).numpy()  # static length: the scan
        np.testing.assert_allclose(scanned, expected, rtol=1e-6, atol=1e-3)
        dynamic = tf.function(_log_cumsum_exp, input_signature=[tf.TensorSpec([2, 3, None])])
        np.testing.assert_allclose(dynamic(x).numpy(), expected, rtol=1e-6, atol=1e-3)
