"""Beam search with T2T's length penalty over a weighted sum of scorers, in a `tf.while_loop`.

    ids, scores = beam_search(fn, tf.zeros([batch], tf.int32), beam_size=4,
                              decode_length=50, vocab_size=vocab, alpha=0.6,
                              states=model.initial_decode_cache(features, 50))

Tensor2Tensor's algorithm (`tensor2tensor/utils/beam_search.py`, after
https://arxiv.org/abs/1609.08144), with its phases' names, scoring as
ESPnet's search does (`espnet/nets/beam_search.py`): an extension's step
score is `sum_i weight_i * score_i` over `Scorer`s (`scorer.py`): the
attention decoder or a language model (`DecoderScorer`), the CTC prefix
scorer (`CtcPrefixScorer`), a phrase bias. The loop carries one
`BeamState`; each step (`BeamSearch.step`) grows the alive sequences into
their best one-token extensions (`grow_topk`, the `Candidates`), keeps the
best of those that did not emit EOS as the new alive set (`grow_alive`,
where each scorer makes the kept extensions' state), and merges those that
did into the best *finished* sequences (`grow_finished`), ranked by
`score / ((5 + length) / 6) ** alpha`, until `is_not_finished` says no
alive beam can still win. Which extensions are candidates and which stay
alive is the search's `Ranking` (`ranking.py`: T2T's; with a scorer that
takes bonuses back, `provisional_ranking.py`).

A full scorer scores the whole vocabulary; a partial one (CTC) only each
beam's `2 * beam_size` best tokens by the full scorers' weighted sum
(ESPnet's pre-beam). Those are exactly the candidates a search without the
partial scorer can keep, so a partial scorer of weight 0 changes nothing.

`beam_search` is T2T's signature: one decoder scorer of weight 1.

Two representations of the growing sequences give the same results:

- dynamic (default, T2T's CPU/GPU path): the sequences grow by one column a
  step and a scorer sees the whole prefix;
- fixed shapes (`use_fixed_shapes=True`, the representation of T2T's
  `use_tpu` path): a `[batch, beam, decode_length + 1]` buffer written at the
  step index, so every loop variable has a static shape and the search
  compiles with XLA (`tf.function(jit_compile=True)`; tests check both give
  the same result). t2t-lite's own commands (decoder, trainer's evaluation,
  SavedModel) run `model_search`, which uses the dynamic path with a
  per-batch decode length; the `.tflite` export uses fixed shapes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import tensorflow as tf

from t2t_lite.data.text_encoders import EOS_ID
from t2t_lite.decoding.search.decoder_scorer import DecoderScorer, SymbolsToLogitsFn
from t2t_lite.decoding.search.provisional_ranking import ProvisionalRanking
from t2t_lite.decoding.search.ranking import INF, Ranked, Ranking
from t2t_lite.decoding.search.scorer import (
    WeightedScorer,
    expand_to_beam_size,
    gather_beams,
    gather_candidates,
    shape_list,
)


class BeamState(NamedTuple):
    """The search's loop variables, `[batch, width, ...]` unless said.

    `alive_*` are the beams still growing (`width` of them: the ranking's);
    `finished_*` the best sequences that emitted EOS, ranked by
    length-penalized score, best first. A sequence holds the start token
    first; its length is `step + 1` (dynamic) or `decode_length + 1` (fixed
    shapes, zeros past `step`).
    """

    step: tf.Tensor  # scalar int32: the position being decoded
    alive_seq: tf.Tensor  # int32 `[batch, width, length]`
    alive_log_probs: tf.Tensor  # float32 `[batch, width]`: the weighted score, -INF: empty
    finished_seq: tf.Tensor  # int32 `[batch, width, length]`
    finished_scores: tf.Tensor  # float32 `[batch, width]`, -INF for an empty slot
    finished_flags: tf.Tensor  # bool `[batch, width]`, True for a filled slot
    scorer_states: tuple  # each scorer's state of the alive beams, in the scorers' order
    ranking_state: tuple  # the ranking's per-beam state (`Ranking.initial_state`)


class Candidates(NamedTuple):
    """A step's best one-token extensions of the alive beams (`grow_topk`).

    `[batch, candidates, ...]`, in the ranking's order.
    """

    ranked: Ranked  # their ids, scores and what the ranking needs
    seq: tf.Tensor  # int32: the parent's sequence with the new token
    finished: tf.Tensor  # bool: the new token is EOS and may finish here
    eos: tf.Tensor  # bool: the new token is EOS
    parents: tf.Tensor  # int32: the alive beam each extends
    columns: tf.Tensor  # int32: its column among its parent's candidates
    tokens: tf.Tensor  # int32: the token it appends
    scorer_states: tuple  # what each scorer's `score` returned, for `select`


def length_penalty(length, alpha) -> tf.Tensor:
    """GNMT's length penalty `((5 + length) / 6) ** alpha` as float32."""
    return tf.pow((5.0 + tf.cast(length, tf.float32)) / 6.0, tf.cast(alpha, tf.float32))


class BeamSearch:
    """Beam search ranking each extension by a weighted sum of scorers.

    Args:
        scorers: `WeightedScorer`s of the same batch; at least one full
            scorer (a partial one only rescores the full ones' candidates).
        beam_size: number of beams (1 follows the greedy path).
        decode_length: maximum number of tokens to decode; a Python int for
            fixed shapes, otherwise an int or a scalar tensor.
        vocab_size: size of a full scorer's last dimension (> beam_size).
        alpha: length penalty exponent; 0 ranks by raw score.
        eos_id: the end-of-sequence id.
        stop_early: stop as soon as no alive beam can beat the best finished
            one (only the first beam is then guaranteed complete); False keeps
            going until no alive beam can beat any finished one. The bound
            assumes no bonus is still to come: a scorer that adds bonuses
            may end the search before one.
        use_fixed_shapes: decode into a static-shape buffer (XLA/TPU); the
            scorers' states must then have static shapes too.
        stop_length: a scalar int tensor in `[1, decode_length]`: the search
            stops after this many steps and its length penalty bound uses it,
            as a dynamic search with this `decode_length` would (a per-batch
            decode length inside a fixed-shape buffer); None: `decode_length`.

    Example:
    ```python
    search = BeamSearch([WeightedScorer(DecoderScorer(fn, cache), 1.0)],
                        beam_size=4, decode_length=50, vocab_size=vocab, alpha=0.6)
    ids, scores = search(tf.zeros([batch], tf.int32))
    ```
    """

    def __init__(
        self,
        scorers: Sequence[WeightedScorer],
        beam_size: int,
        decode_length,
        vocab_size: int,
        alpha: float,
        eos_id: int = EOS_ID,
        stop_early: bool = True,
        use_fixed_shapes: bool = False,
        stop_length=None,
    ):
        if beam_size < 1:
            raise ValueError(f"beam_size must be >= 1, got {beam_size}.")
        if use_fixed_shapes and not isinstance(decode_length, int):
            raise ValueError(
                "use_fixed_shapes=True needs decode_length as a Python int (a static "
                f"buffer length), got {decode_length!r}."
            )
        if isinstance(decode_length, int) and decode_length < 1:
            raise ValueError(f"decode_length must be >= 1, got {decode_length}.")
        self.full = [(s, w) for s, w in scorers if not s.partial]
        self.partial = [(s, w) for s, w in scorers if s.partial]
        if not self.full:
            raise ValueError("BeamSearch needs a full scorer (a decoder or an LM).")
        self.order = [scorer for scorer, _ in self.full + self.partial]  # the states' order
        self.beam_size = beam_size
        self.decode_length = decode_length
        self.stop_length = decode_length if stop_length is None else stop_length
        self.vocab_size = vocab_size
        self.alpha = alpha
        self.eos_id = eos_id
        self.stop_early = stop_early
        self.use_fixed_shapes = use_fixed_shapes
        # Columns of each beam's candidates: every token, or the pre-beam.
        self.num_columns = min(vocab_size, 2 * beam_size) if self.partial else vocab_size
        taking_back = [(s, w) for s, w in self.full if s.takes_back]
        if taking_back:
            self.ranking = ProvisionalRanking(beam_size, taking_back, self.num_columns)
        else:
            self.ranking = Ranking(beam_size)
        self.width = self.ranking.width

    def __call__(self, initial_ids: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """Searches from `initial_ids` `[batch]` (start tokens, PAD 0).

        Returns:
            `(ids, scores)`: int32 `[batch, beam_size, decode_length]` decoded
            tokens (without the start token) up to and including EOS, then 0;
            float32 `[batch, beam_size]` scores, best first: length-penalized
            weighted scores of finished sequences (-1e7 for an empty slot).
            A batch item where no beam ever emitted EOS gets its alive beams
            and the scores they keep for sure, unpenalized, as in T2T.
        """
        initial_ids = tf.cast(initial_ids, tf.int32)
        final = self.run(self.initial_state(initial_ids))
        return self.result(final, initial_ids.shape[0])

    def initial_state(self, initial_ids: tf.Tensor) -> BeamState:
        """The loop's start: only beam 0 alive.

        The copies get -INF so the first step draws every candidate from beam
        0 (T2T: "initial_ids are prob 1.0").
        """
        batch_size = shape_list(initial_ids)[0]
        alive_log_probs = tf.tile(tf.constant([[0.0] + [-INF] * (self.width - 1)]), [batch_size, 1])
        alive_seq = expand_to_beam_size(initial_ids, self.width)[:, :, None]
        if self.use_fixed_shapes:
            # Zeros after the start token, so that unwritten positions read as
            # PAD exactly like the dynamic version's zero padding.
            alive_seq = tf.pad(alive_seq, [[0, 0], [0, 0], [0, self.decode_length]])
        return BeamState(
            step=tf.constant(0, tf.int32),
            alive_seq=alive_seq,
            alive_log_probs=alive_log_probs,
            finished_seq=tf.zeros_like(alive_seq),
            finished_scores=tf.fill(tf.shape(alive_log_probs), -INF),
            finished_flags=tf.zeros(tf.shape(alive_log_probs), tf.bool),
            scorer_states=tuple(scorer.initial_state(self.width) for scorer in self.order),
            ranking_state=self.ranking.initial_state(batch_size),
        )

    def run(self, initial: BeamState) -> BeamState:
        """`step` in a `tf.while_loop` until `is_not_finished` says stop."""
        shape_invariants = None
        if not self.use_fixed_shapes:  # the sequences grow by one column per step
            growing = tf.TensorShape([initial.alive_seq.shape[0], self.width, None])
            shape_invariants = (
                tf.nest.map_structure(lambda t: t.shape, initial)._replace(
                    alive_seq=growing,
                    finished_seq=growing,
                    scorer_states=tuple(
                        scorer.shape_invariants(s)
                        for scorer, s in zip(self.order, initial.scorer_states, strict=True)
                    ),
                ),
            )
        (final,) = tf.while_loop(
            lambda state: self.is_not_finished(state),
            lambda state: (self.step(state),),
            (initial,),
            shape_invariants=shape_invariants,
        )
        return final

    def step(self, state: BeamState) -> BeamState:
        """One step: grow the candidates, then the alive and finished sets from them."""
        topk = self.grow_topk(state)
        state = self.grow_finished(self.grow_alive(state, topk), topk)
        return state._replace(step=state.step + 1)

    def score_columns(self, state: BeamState):
        """Every beam's candidate tokens and weighted step scores, ranking terms and new states.

        The tokens and their weighted step scores are `[batch, width,
        columns]`; then the ranking's terms of them, and each scorer's new
        state.
        """
        states = dict(zip(self.order, state.scorer_states, strict=True))
        new_states, total = {}, 0.0
        batch_size = shape_list(state.alive_seq)[0]
        for scorer, weight in self.full:
            scores, new_states[scorer] = scorer.score(states[scorer], state.alive_seq, state.step)
            total += weight * tf.reshape(scores, [batch_size, self.width, self.vocab_size])
        terms = self.ranking.step_terms(new_states)
        if not self.partial:
            return tf.range(self.vocab_size)[None, None, :], total, terms, new_states
        _, tokens = tf.math.top_k(total, k=self.num_columns)  # ESPnet's pre-beam
        total = tf.gather(total, tokens, batch_dims=2)
        terms = tf.nest.map_structure(lambda t: tf.gather(t, tokens, batch_dims=2), terms)
        for scorer, weight in self.partial:
            scores, new_states[scorer] = scorer.score(
                states[scorer], state.alive_seq, state.step, candidates=tokens
            )
            total += weight * scores
        return tokens, total, terms, new_states

    def grow_topk(self, state: BeamState) -> Candidates:
        """The ranking's best one-token extensions of the alive beams."""
        tokens, step_scores, terms, new_states = self.score_columns(state)
        log_probs = step_scores + state.alive_log_probs[:, :, None]
        # All candidates have the same length here, so the penalty never
        # reorders them; it matters when they compete with finished sequences.
        penalty = length_penalty(state.step + 1, self.alpha)
        flat = tf.reshape(log_probs, [shape_list(log_probs)[0], self.width * self.num_columns])
        ranked = self.ranking.top_candidates(flat, terms, state.ranking_state, penalty)
        parents = ranked.ids // self.num_columns  # which alive beam each extends
        columns = ranked.ids % self.num_columns
        topk_tokens = gather_candidates(tokens, parents, columns) if self.partial else columns
        eos = topk_tokens == self.eos_id
        return Candidates(
            ranked=ranked,
            seq=self.append_tokens(gather_beams(state.alive_seq, parents), topk_tokens, state.step),
            finished=tf.logical_and(eos, ranked.may_finish),
            eos=eos,
            parents=parents,
            columns=columns,
            tokens=topk_tokens,
            scorer_states=tuple(new_states[scorer] for scorer in self.order),
        )

    def append_tokens(self, sequences, tokens, step):
        """Writes `tokens [batch, k]` as position `step + 1` of `sequences`."""
        if self.use_fixed_shapes:
            column = tf.range(self.decode_length + 1) == step + 1
            return tf.where(column, tokens[:, :, None], sequences)
        return tf.concat([sequences, tokens[:, :, None]], axis=2)

    def grow_alive(self, state: BeamState, topk: Candidates) -> BeamState:
        """The new alive set (the ranking's `pick_alive`), and each scorer's state of it."""
        pick, alive_log_probs, ranking_state = self.ranking.pick_alive(topk.ranked, topk.eos)
        parents, columns, tokens = (
            gather_beams(t, pick) for t in (topk.parents, topk.columns, topk.tokens)
        )
        return state._replace(
            alive_seq=gather_beams(topk.seq, pick),
            alive_log_probs=alive_log_probs,
            scorer_states=tuple(
                scorer.select(old, new, parents, columns, tokens)
                for scorer, old, new in zip(
                    self.order, state.scorer_states, topk.scorer_states, strict=True
                )
            ),
            ranking_state=ranking_state,
        )

    def grow_finished(self, state: BeamState, topk: Candidates) -> BeamState:
        """The new finished set: the best width of the finished and the newly ended sequences.

        The newly ended are the candidates that just emitted EOS (others are
        ranked last by -INF).
        """
        finished_seq = state.finished_seq
        if not self.use_fixed_shapes:  # keep old finished sequences as long as the new ones
            finished_seq = tf.pad(finished_seq, [[0, 0], [0, 0], [0, 1]])
        pool_scores = tf.concat(
            [state.finished_scores, tf.where(topk.finished, topk.ranked.scores, -INF)], 1
        )
        _, pick = tf.math.top_k(pool_scores, k=self.width)
        pool_flags = tf.concat([state.finished_flags, topk.finished], 1)
        return state._replace(
            finished_seq=gather_beams(tf.concat([finished_seq, topk.seq], 1), pick),
            finished_scores=gather_beams(pool_scores, pick),
            finished_flags=gather_beams(pool_flags, pick),
        )

    def is_not_finished(self, state: BeamState):
        """Whether to go on: steps are left and some alive beam may still win."""
        # Without a bonus to come, a score only falls as a sequence grows; at
        # any length from the next to `stop_length`, a score s <= 0 divided
        # by the penalty is largest at `stop_length`, one > 0 (a kept bonus)
        # at the next length: either bounds every score an alive beam reaches.
        best_alive = tf.reduce_max(
            self.ranking.kept_scores(state.alive_log_probs, state.ranking_state), axis=1
        )
        best_alive_bound = tf.maximum(
            best_alive / length_penalty(self.stop_length, self.alpha),
            best_alive / length_penalty(state.step + 1, self.alpha),
        )
        # stop_early: the best finished beats every alive continuation; else the
        # worst one that is returned does (an empty slot's -INF keeps the
        # search going). Per batch item; T2T's global min in the second case
        # gives the same output.
        reduce = tf.reduce_max if self.stop_early else tf.reduce_min
        finished = reduce(state.finished_scores[:, : self.beam_size], axis=1)
        bound_is_met = tf.reduce_all(finished > best_alive_bound)
        return tf.logical_and(state.step < self.stop_length, tf.logical_not(bound_is_met))

    def result(self, final: BeamState, static_batch_size) -> tuple[tf.Tensor, tf.Tensor]:
        """The first `beam_size` finished beams (`__call__`'s Returns)."""
        # T2T's corner case: a batch item where no beam ever emitted EOS returns
        # its alive beams rather than empty finished slots.
        any_finished = tf.reduce_any(final.finished_flags, axis=1)
        kept = self.ranking.kept_scores(final.alive_log_probs, final.ranking_state)
        ids = tf.where(
            any_finished[:, None, None],
            final.finished_seq[:, : self.beam_size],
            final.alive_seq[:, : self.beam_size],
        )
        scores = tf.where(any_finished[:, None], final.finished_scores[:, : self.beam_size], kept)
        if not self.use_fixed_shapes:  # stopped early: pad to the promised length
            ids = tf.pad(ids, [[0, 0], [0, 0], [0, self.decode_length + 1 - tf.shape(ids)[2]]])
        # Drop the start token: callers want the decoded tokens only.
        ids = ids[:, :, 1:]
        if isinstance(self.decode_length, int):
            ids = tf.ensure_shape(ids, [static_batch_size, self.beam_size, self.decode_length])
        return ids, scores


def beam_search(
    symbols_to_logits_fn: SymbolsToLogitsFn,
    initial_ids: tf.Tensor,
    beam_size: int,
    decode_length: int,
    vocab_size: int,
    alpha: float,
    states: Any = None,
    **options,
) -> tuple[tf.Tensor, tf.Tensor]:
    """Beam search with length penalty; T2T's signature and semantics.

    `BeamSearch` with one `DecoderScorer(symbols_to_logits_fn, states)` of
    weight 1: the arguments are documented there and in `DecoderScorer`;
    `options` are `BeamSearch`'s keywords (`eos_id`, `stop_early`,
    `use_fixed_shapes`, `stop_length`).

    Example:
    >>> log_probs = tf.math.log([[0.1, 0.3, 0.6]])  # same distribution each step
    >>> fn = lambda ids, step, states: (tf.tile(log_probs, [tf.shape(ids)[0], 1]), states)
    >>> ids, scores = beam_search(fn, tf.zeros([1], tf.int32), beam_size=2,
    ...                           decode_length=3, vocab_size=3, alpha=0.0)
    >>> ids.numpy().tolist()
    [[[1, 0, 0], [2, 1, 0]]]
    """
    decoder = DecoderScorer(symbols_to_logits_fn, states, options.get("use_fixed_shapes", False))
    scorers = [WeightedScorer(decoder, 1.0)]
    return scored_beam_search(
        scorers, initial_ids, beam_size, decode_length, vocab_size, alpha, **options
    )


def scored_beam_search(
    scorers: Sequence[WeightedScorer],
    initial_ids: tf.Tensor,
    beam_size: int,
    decode_length,
    vocab_size: int,
    alpha: float,
    **options,
) -> tuple[tf.Tensor, tf.Tensor]:
    """Runs `BeamSearch` from `initial_ids`: the search's ids and scores.

    `BeamSearch(scorers, beam_size, decode_length, vocab_size, alpha,
    **options)(initial_ids)`.
    """
    search = BeamSearch(scorers, beam_size, decode_length, vocab_size, alpha, **options)
    return search(initial_ids)
