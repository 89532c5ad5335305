"""The ranking of a search whose scorer may take a bonus back.

No bonus that is taken back ever displaces a beam.

A scorer that `takes_back` (a phrase bias: a running match's bonus is
subtracted again if the match fails) reports each extension's
*provisional* bonus and whether its match `failed`. Taking a bonus back
restores a hypothesis's score, not the hypothesis it pushed out of the
beam, so this ranking keeps two sets of alive beams:

- the first `beam_size`, the best by the score kept for sure (provisional
  bonuses left out): until a phrase completes, the beams the search without
  the scorer keeps, and the only ones the stop bound and the alive fallback
  read;
- up to `beam_size` more, the best of the rest holding a provisional bonus,
  ranked with it (hypotheses in the middle of a match). An extension of one
  of them joins the first set once it keeps its bonus for sure (a phrase
  completed) and is dropped when its match fails with nothing completed.

A step's candidates are `3 * beam_size` by the score kept for sure (EOS can
come from all `2 * beam_size` parents, and `beam_size` must be left to keep
alive; only the first `2 * beam_size`, the search's without the scorer, may
finish) and `2 * beam_size` holding a provisional bonus. An empty beam
(none held it) is never extended.
"""

from __future__ import annotations

from collections.abc import Sequence

import tensorflow as tf

from t2t_lite.decoding.search.ranking import INF, Ranked, Ranking
from t2t_lite.decoding.search.scorer import WeightedScorer, gather_beams


class ProvisionalRanking(Ranking):
    """`Ranking` with `beam_size` more beams for provisional bonuses (module docstring).

    Args:
        beam_size: the beams the search returns.
        scorers: the search's `WeightedScorer`s whose scorer `takes_back`.
        num_columns: candidate tokens per beam (the vocabulary, or the pre-beam).
    """

    def __init__(self, beam_size: int, scorers: Sequence[WeightedScorer], num_columns: int):
        super().__init__(beam_size)
        self.width = 2 * beam_size
        self.scorers = list(scorers)
        self.num_columns = num_columns

    def initial_state(self, batch_size) -> tuple:
        """Per alive beam: whether it holds a hypothesis, and its provisional bonus."""
        held_hypothesis = tf.range(self.width) == 0  # only beam 0 starts alive
        return (
            tf.tile(held_hypothesis[None, :], [batch_size, 1]),
            tf.zeros([batch_size, self.width], tf.float32),
        )

    def step_terms(self, new_states: dict) -> tuple:
        """`(held, failed)` `[batch, width, vocab]`: provisional bonuses and failed matches.

        `held` is the weighted provisional bonus; `failed`, whether a match
        failed with nothing completed.
        """
        held = sum(
            weight * scorer.provisional(new_states[scorer]) for scorer, weight in self.scorers
        )
        failed = [scorer.failed(new_states[scorer]) for scorer, _ in self.scorers]
        return held, tf.reduce_any(failed, axis=0)

    def top_candidates(self, flat_log_probs, terms, state, penalty) -> Ranked:
        held, failed = (tf.reshape(t, tf.shape(flat_log_probs)) for t in terms)
        parents = tf.range(self.width * self.num_columns) // self.num_columns
        live = tf.gather(state[0], parents, axis=1)
        of_extra_beam = parents >= self.beam_size
        dropped = tf.logical_and(of_extra_beam, failed)
        holding = live & (held > 0) & ~dropped
        # An extra beam's extension ranks for sure only once it holds nothing provisional.
        for_sure = live & ~dropped & ~(of_extra_beam & (held > 0))
        sure, sure_ids = tf.math.top_k(
            tf.where(for_sure, flat_log_probs - held, -INF), k=3 * self.beam_size
        )
        _, holding_ids = tf.math.top_k(
            tf.where(holding, flat_log_probs, -INF), k=2 * self.beam_size
        )
        ids = tf.concat([sure_ids, holding_ids], 1)
        kept = tf.concat([gather_beams(for_sure, sure_ids), gather_beams(holding, holding_ids)], 1)
        log_probs = gather_beams(flat_log_probs, ids)
        first = tf.range(5 * self.beam_size) < 2 * self.beam_size
        return Ranked(
            ids=ids,
            log_probs=log_probs,
            scores=tf.where(kept, log_probs / penalty, -INF),
            may_finish=first & kept,
            extra=(
                tf.concat([sure, tf.fill(tf.shape(holding_ids), -INF)], 1),
                kept,
                gather_beams(held, ids),
            ),
        )

    def pick_alive(self, ranked: Ranked, eos: tf.Tensor) -> tuple:
        """The alive beams: the best by the score kept for sure, then provisional holders.

        The best `beam_size` by the score kept for sure that did not emit EOS,
        then the best holders of a provisional bonus not already kept.
        """
        sure, kept, held = ranked.extra
        in_sure_half = tf.range(5 * self.beam_size) < 3 * self.beam_size
        eligible = in_sure_half & kept & ~eos
        _, sure_pick = tf.math.top_k(tf.where(eligible, sure, -INF), k=self.beam_size)
        sure_kept = gather_beams(eligible, sure_pick)
        # The holders' half may list a candidate the first half already kept.
        kept_ids = tf.where(sure_kept, gather_beams(ranked.ids, sure_pick), -1)
        again = tf.reduce_any(ranked.ids[:, :, None] == kept_ids[:, None, :], axis=2)
        holding = ~in_sure_half & kept & ~eos & ~again
        _, holders = tf.math.top_k(
            tf.where(holding, ranked.scores, -INF), k=self.width - self.beam_size
        )
        pick = tf.concat([sure_pick, holders], 1)
        alive = tf.concat([sure_kept, gather_beams(holding, holders)], 1)
        log_probs = tf.where(alive, gather_beams(ranked.log_probs, pick), -INF)
        return pick, log_probs, (alive, tf.where(alive, gather_beams(held, pick), 0.0))

    def kept_scores(self, alive_log_probs, state) -> tf.Tensor:
        """The first `beam_size` beams' scores without their provisional bonus."""
        alive, held = (t[:, : self.beam_size] for t in state)
        return tf.where(alive, alive_log_probs[:, : self.beam_size] - held, -INF)
