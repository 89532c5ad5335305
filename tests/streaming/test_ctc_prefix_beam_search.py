"""CTC prefix beam search: exact CTC probabilities with a wide beam, the same
result fed frame by frame or at once, and a partial that only grows."""

import itertools

import numpy as np

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


def random_log_probs(frames, vocab, seed):
    logits = np.random.default_rng(seed).normal(size=(frames, vocab)) * 2.0
    return logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))


def test_a_wide_beam_gives_every_labellings_exact_ctc_probability():
    for seed in range(3):
        log_probs = random_log_probs(5, 4, seed)
        exact = brute_force(log_probs)
        search = CtcPrefixBeamSearch(beam_size=1000)
        search.advance(log_probs)
        found = {tuple(ids): np.exp(score) for ids, score in search.nbest()}
        assert found.keys() == exact.keys()
        for labels, probability in exact.items():
            np.testing.assert_allclose(found[labels], probability, rtol=1e-9)
        assert tuple(search.best()) == max(exact, key=exact.get)


def test_frame_by_frame_equals_all_at_once_and_a_narrow_beam_keeps_the_best():
    log_probs = random_log_probs(30, 6, 7)
    whole = CtcPrefixBeamSearch(beam_size=3)
    whole.advance(log_probs)
    pieces = CtcPrefixBeamSearch(beam_size=3)
    for start in range(0, 30, 4):
        pieces.advance(log_probs[start : start + 4])
    assert pieces.nbest() == whole.nbest() and len(whole.nbest()) == 3
    assert whole.frames == 30


def test_repeats_need_a_blank_between():
    # Frames say "2 2" with a blank between them, then "3 3" without.
    probable = [2, BLANK_ID, 2, 3, 3]
    log_probs = np.full((5, 4), np.log(0.01))
    log_probs[np.arange(5), probable] = np.log(0.97)
    search = CtcPrefixBeamSearch(beam_size=4)
    search.advance(log_probs)
    assert search.best() == [2, 2, 3]
