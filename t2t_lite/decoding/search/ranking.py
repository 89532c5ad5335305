"""How the beam search ranks a step's extensions and keeps its alive beams: T2T's rule.

`BeamSearch` (`beam_search.py`) asks its ranking which of a step's
extensions are candidates (`top_candidates`), which of those stay alive
(`pick_alive`) and what score each alive beam is sure to keep (`kept_scores`,
for the stop bound and the alive fallback). `Ranking` is T2T's: the
`2 * beam_size` best extensions by score, the best `beam_size` of them that
did not emit EOS kept alive. A search with a scorer that `takes_back` ranks
with `ProvisionalRanking` (`provisional_ranking.py`) instead.
"""

from __future__ import annotations

from typing import NamedTuple

import tensorflow as tf

from t2t_lite.decoding.search.scorer import gather_beams

# T2T's "infinity": large enough to rank a sequence last, small enough that
# adding it to a log probability stays finite (no inf - inf = NaN).
INF = 1.0e7


class Ranked(NamedTuple):
    """A step's candidates as a ranking chose them, `[batch, candidates]`, best first."""

    ids: tf.Tensor  # int32: the index among all beams' columns
    log_probs: tf.Tensor  # float32: the weighted score, no length penalty
    scores: tf.Tensor  # float32: `log_probs` length-penalized; -INF where not kept
    may_finish: tf.Tensor  # bool: an EOS here may join the finished sequences
    extra: tuple = ()  # what the ranking's `pick_alive` needs besides


class Ranking:
    """T2T's ranking: `beam_size` alive beams, `2 * beam_size` candidates a step.

    Two beam's worth of candidates, because up to `beam_size` of them may end
    in EOS and the rest must still refill the alive set (needs a vocabulary
    larger than the beam).

    Args:
        beam_size: the beams the search returns.
    """

    def __init__(self, beam_size: int):
        self.beam_size = beam_size
        self.width = beam_size  # the alive beams the search carries

    def initial_state(self, batch_size) -> tuple:
        """What the ranking carries per alive beam besides its score: nothing."""
        return ()

    def step_terms(self, new_states: dict) -> tuple:
        """`[batch, width, vocab]` terms a step's scorers report for ranking: none."""
        return ()

    def top_candidates(self, flat_log_probs, terms, state, penalty) -> Ranked:
        """The `2 * width` best of `flat_log_probs` `[batch, width * columns]`."""
        scores, ids = tf.math.top_k(flat_log_probs / penalty, k=2 * self.width)
        log_probs = tf.gather(flat_log_probs, ids, batch_dims=1)
        return Ranked(ids, log_probs, scores, may_finish=tf.constant(True))

    def pick_alive(self, ranked: Ranked, eos: tf.Tensor) -> tuple:
        """The candidates kept alive: the best that did not emit EOS.

        Their indices `[batch, width]`, their scores and the ranking's state
        of them.
        """
        _, pick = tf.math.top_k(ranked.scores - INF * tf.cast(eos, tf.float32), k=self.beam_size)
        return pick, gather_beams(ranked.log_probs, pick), ()

    def kept_scores(self, alive_log_probs, state) -> tf.Tensor:
        """`[batch, beam_size]`: the score each alive beam is sure to keep (-INF: none)."""
        return alive_log_probs
