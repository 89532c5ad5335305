"""CTC prefix beam search: exact CTC probabilities with a wide beam, the same
beams fed in pieces of any size or at once at fixed shapes, repeats that
need a blank, and the trailing blank frames endpointing reads."""

import itertools

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.streaming.ctc_prefix_beam_search import BLANK_ID, CtcPrefixBeamSearch


def brute_force(log_probs: np.ndarray) -> dict[tuple, float]:
    """Every labelling's CTC probability, summed over all alignments."""
    frames, vocab = log_probs.shape
    totals: dict[tuple, float] = {}
    for path in itertools.product(range(vocab), repeat=frames):
        labels, previous = [], None
        for token in path:
            if token != previous and token != BLANK_ID:
                labels.append(token)
            previous = token
        probability = np.exp(sum(log_probs[t, s] for t, s in enumerate(path)))
        totals[tuple(labels)] = totals.get(tuple(labels), 0.0) + probability
    return totals


def random_log_probs(frames, vocab, seed, scale=2.0):
    logits = np.random.default_rng(seed).normal(size=(frames, vocab)) * scale
    return (logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))).astype(np.float32)


def searched(search, log_probs, pieces=None):
    """The state after `log_probs` `[frames, vocab]`, fed in `pieces`
    (frame counts; default all at once); asserts the shapes never change."""
    state = search.initial_state()
    shapes = {name: value.shape for name, value in state.items()}
    start = 0
    for size in pieces or [len(log_probs)]:
        piece = tf.constant(log_probs[None, start : start + size])
        state = search.advance(piece, size, state)
        assert {name: value.shape for name, value in state.items()} == shapes
        start += size
    return state


def test_a_wide_beam_gives_every_labellings_exact_ctc_probability():
    for seed in range(3):
        log_probs = random_log_probs(5, 4, seed)
        exact = brute_force(log_probs.astype(np.float64))
        search = CtcPrefixBeamSearch(beam_size=400, max_labels=5)  # every labelling (364)
        state = searched(search, log_probs)
        found = {tuple(ids): np.exp(score) for ids, score in search.nbest(state)}
        assert found.keys() == exact.keys()
        for labels, probability in exact.items():
            np.testing.assert_allclose(found[labels], probability, rtol=1e-4)
        assert tuple(search.best(state).numpy()[0]) == max(exact, key=exact.get)


@pytest.mark.parametrize("seed", range(6))
def test_pieces_of_any_size_give_the_beams_of_all_at_once(seed):
    """Peaked or flat posteriors, vocabularies from smaller than the beam up,
    pieces of any size (0 too): the same beams, and a narrow beam keeps its
    size."""
    rng = np.random.default_rng(seed)
    vocab, frames, beam = int(rng.integers(3, 9)), int(rng.integers(8, 30)), int(rng.integers(1, 6))
    log_probs = random_log_probs(frames, vocab, seed, scale=rng.uniform(0.5, 4.0))
    search = CtcPrefixBeamSearch(beam, max_labels=frames)
    whole = search.nbest(searched(search, log_probs))
    cuts = sorted(int(c) for c in rng.integers(0, frames + 1, 3))
    pieces = np.diff([0, *cuts, frames]).tolist()
    by_pieces = search.nbest(searched(search, log_probs, pieces))
    assert [ids for ids, _ in by_pieces] == [ids for ids, _ in whole]
    np.testing.assert_allclose([s for _, s in by_pieces], [s for _, s in whole], rtol=1e-5)
    assert len(whole) == min(beam, len(whole)) and len(whole) >= 1


def test_repeats_need_a_blank_between():
    # Frames say "2 2" with a blank between them, then "3 3" without.
    probable = [2, BLANK_ID, 2, 3, 3]
    log_probs = np.full((5, 4), np.log(0.01), np.float32)
    log_probs[np.arange(5), probable] = np.log(0.97)
    search = CtcPrefixBeamSearch(beam_size=4, max_labels=5)
    assert search.best(searched(search, log_probs)).numpy()[0].tolist() == [2, 2, 3]


def test_trailing_blank_frames_count_from_the_best_paths_last_label():
    def count(best_labels, frames, pieces=None):
        log_probs = np.log(np.eye(5, dtype=np.float32)[best_labels] * 0.9 + 0.02)
        search = CtcPrefixBeamSearch(beam_size=2, max_labels=6)
        state = searched(search, log_probs[:frames], pieces)
        return int(search.trailing_blank_frames(state))

    assert count([0, 3, 0, 0, 1, 0], 6) == 4  # EOS is no label either
    assert count([0, 3, 0, 0, 1, 0], 6, [2, 0, 3, 1]) == 4  # the label in an earlier piece
    # Frames after `frames` (padding) are not read.
    log_probs = np.log(np.eye(5, dtype=np.float32)[[0, 3, 0, 0, 4, 4]] * 0.9 + 0.02)
    search = CtcPrefixBeamSearch(beam_size=2, max_labels=6)
    state = search.advance(tf.constant(log_probs[None]), 4, search.initial_state())
    assert int(search.trailing_blank_frames(state)) == 2
    assert count([0, 0, 0], 3) == 3 and count([0], 0) == 0
