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
`BeamState`; each step (`inner_loop`) grows the `beam_size` *alive*
sequences into their `2 * beam_size` best one-token extensions (`grow_topk`,
the `Candidates`), keeps the best `beam_size` of those that did not emit EOS
as the new alive set (`grow_alive`, where each scorer makes the kept
extensions' state), and merges those that did into the `beam_size` best
*finished* sequences (`grow_finished`), ranked by `score / ((5 + length) /
6) ** alpha`, until `is_not_finished` says no alive beam can still win.

A full scorer scores the whole vocabulary; a partial one (CTC) only each
beam's `2 * beam_size` best tokens by the full scorers' weighted sum
(ESPnet's pre-beam). Those are exactly the candidates a search without the
partial scorer can keep, so a partial scorer of weight 0 changes nothing.

A scorer that `takes_back` (a phrase bias: a running match's bonus is
subtracted again if it fails) gets `beam_size` more alive beams, its
*provisional* ones: the first `beam_size` are the best by the score a
hypothesis keeps for sure (its provisional bonus left out), the others the
best of the rest that hold a provisional bonus, ranked with it. A
provisional beam's extension joins the first only once its bonus is kept
for sure (a phrase completed), and is dropped when the bonus falls (the
match failed); so a bonus that is taken back never displaced a beam the
search without it would have kept.

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
from t2t_lite.decoding.search.scorer import (
    WeightedScorer,
    expand_to_beam_size,
    gather_beams,
    gather_candidates,
    shape_list,
)

# T2T's "infinity": large enough to rank a sequence last, small enough that
# adding it to a log probability stays finite (no inf - inf = NaN).
INF = 1.0e7


class BeamState(NamedTuple):
    """The search's loop variables, `[batch, beam, ...]` unless said.

    `alive_*` are the beams still growing, best first; `finished_*` the best
    sequences that emitted EOS, ranked by length-penalized score. A sequence
    holds the start token first; its length is `step + 1` (dynamic) or
    `decode_length + 1` (fixed shapes, zeros past `step`).
    """

    step: tf.Tensor  # scalar int32: the position being decoded
    alive_seq: tf.Tensor  # int32 `[batch, beam, length]`
    alive_log_probs: tf.Tensor  # float32 `[batch, beam]`: the weighted score, no length penalty
    finished_seq: tf.Tensor  # int32 `[batch, beam, length]`
    finished_scores: tf.Tensor  # float32 `[batch, beam]`, -INF for an empty slot
    finished_flags: tf.Tensor  # bool `[batch, beam]`, True for a filled slot
    scorer_states: tuple  # each scorer's state of the alive beams, in the scorers' order


class Candidates(NamedTuple):
    """A step's `2 * width` best one-token extensions of the alive beams
    (`grow_topk`), `[batch, 2 * width, ...]`, best first (with a provisional
    scorer, two halves ranked so: `rank_provisional`)."""

    seq: tf.Tensor  # int32: the parent's sequence with the new token
    log_probs: tf.Tensor  # float32: the sequence's weighted score
    scores: tf.Tensor  # float32: `log_probs` length-penalized (-INF: not kept)
    sure: tf.Tensor  # float32: the score kept for sure (-INF: not ranked by it)
    ids: tf.Tensor  # int32: the index among all beams' columns
    finished: tf.Tensor  # bool: the new token is EOS
    parents: tf.Tensor  # int32: the alive beam each extends
    columns: tf.Tensor  # int32: its column among its parent's candidates
    tokens: tf.Tensor  # int32: the token it appends
    scorer_states: tuple  # what each scorer's `score` returned, for `select`

    @property
    def eos_mask(self) -> tf.Tensor:
        """float32: 1 where the candidate is finished, else 0."""
        return tf.cast(self.finished, tf.float32)


def length_penalty(length, alpha) -> tf.Tensor:
    """GNMT's length penalty `((5 + length) / 6) ** alpha` as float32."""
    return tf.pow((5.0 + tf.cast(length, tf.float32)) / 6.0, tf.cast(alpha, tf.float32))


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

    `scored_beam_search` with one `DecoderScorer(symbols_to_logits_fn,
    states)` of weight 1: the arguments are documented there and in
    `DecoderScorer`; `options` are `scored_beam_search`'s keywords
    (`eos_id`, `stop_early`, `use_fixed_shapes`, `stop_length`).

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
    decode_length: int,
    vocab_size: int,
    alpha: float,
    eos_id: int = EOS_ID,
    stop_early: bool = True,
    use_fixed_shapes: bool = False,
    stop_length=None,
) -> tuple[tf.Tensor, tf.Tensor]:
    """Beam search ranking each extension by a weighted sum of scorers.

    Args:
        scorers: `WeightedScorer`s of the same batch; at least one full
            scorer (a partial one only rescores the full ones' candidates).
        initial_ids: `[batch]` int, the start token of each sequence (PAD 0).
        beam_size: number of beams (1 follows the greedy path).
        decode_length: maximum number of tokens to decode; a Python int for
            fixed shapes, otherwise an int or a scalar tensor.
        vocab_size: size of a full scorer's last dimension (> beam_size).
        alpha: length penalty exponent; 0 ranks by raw score.
        eos_id: the end-of-sequence id.
        stop_early: stop as soon as no alive beam can beat the best finished
            one (only the first beam is then guaranteed complete); False keeps
            going until no alive beam can beat any finished one. The bound
            assumes scores only fall as a sequence grows (log probabilities);
            a scorer that adds bonuses may end the search before a bonus.
        use_fixed_shapes: decode into a static-shape buffer (XLA/TPU); the
            scorers' states must then have static shapes too.
        stop_length: a scalar int tensor in `[1, decode_length]`: the search
            stops after this many steps and its length penalty bound uses it,
            as a dynamic search with this `decode_length` would (a per-batch
            decode length inside a fixed-shape buffer); None: `decode_length`.

    Returns:
        `(ids, scores)`: int32 `[batch, beam_size, decode_length]` decoded
        tokens (without the start token) up to and including EOS, then 0;
        float32 `[batch, beam_size]` scores, best first: length-penalized
        weighted scores of finished sequences (-1e7 for an empty slot).
        A batch item where no beam ever emitted EOS gets its alive beams and
        their unpenalized scores instead, as in T2T.
    """
    if beam_size < 1:
        raise ValueError(f"beam_size must be >= 1, got {beam_size}.")
    if use_fixed_shapes and not isinstance(decode_length, int):
        raise ValueError(
            "use_fixed_shapes=True needs decode_length as a Python int (a static "
            f"buffer length), got {decode_length!r}."
        )
    if isinstance(decode_length, int) and decode_length < 1:
        raise ValueError(f"decode_length must be >= 1, got {decode_length}.")
    full = [(s, w) for s, w in scorers if not s.partial]
    partial = [(s, w) for s, w in scorers if s.partial]
    if not full:
        raise ValueError("scored_beam_search needs a full scorer (a decoder or an LM).")
    provisional = [(s, w) for s, w in full if s.takes_back]
    # The alive beams: beam_size ranked by the score kept for sure, then as
    # many for hypotheses holding a bonus that may be taken back.
    width = 2 * beam_size if provisional else beam_size

    initial_ids = tf.cast(initial_ids, tf.int32)
    if stop_length is None:
        stop_length = decode_length
    # Static when known, so every reshape below keeps a static batch dimension
    # (a while_loop variable must not lose static dimensions between steps).
    batch_size = shape_list(initial_ids)[0]
    # Columns of each beam's candidates: every token, or the pre-beam.
    num_columns = min(vocab_size, 2 * beam_size) if partial else vocab_size
    order = [scorer for scorer, _ in full + partial]  # the order of the states

    def append_tokens(sequences, tokens, step):
        """Writes `tokens [batch, k]` as position `step + 1` of `sequences`."""
        if use_fixed_shapes:
            column = tf.range(decode_length + 1) == step + 1
            return tf.where(column, tokens[:, :, None], sequences)
        return tf.concat([sequences, tokens[:, :, None]], axis=2)

    def score_columns(state: BeamState):
        """Every beam's candidate tokens, their weighted step scores and
        provisional bonuses `[batch, beam, columns]` each, and each scorer's
        new state."""
        states = dict(zip(order, state.scorer_states, strict=True))
        new_states = {}
        total, held, fell = 0.0, 0.0, False
        for scorer, weight in full:
            scores, new_states[scorer] = scorer.score(states[scorer], state.alive_seq, state.step)
            scores = weight * tf.reshape(scores, [batch_size, width, vocab_size])
            total += scores
            if scorer.takes_back:
                held += weight * scorer.provisional(new_states[scorer])
                fell = tf.logical_or(fell, scores < 0)  # a bonus taken back
        if not partial:
            return tf.range(vocab_size)[None, None, :], total, (held, fell), new_states
        _, tokens = tf.math.top_k(total, k=num_columns)  # ESPnet's pre-beam
        total = tf.gather(total, tokens, batch_dims=2)
        if provisional:
            held, fell = (tf.gather(t, tokens, batch_dims=2) for t in (held, fell))
        for scorer, weight in partial:
            scores, new_states[scorer] = scorer.score(
                states[scorer], state.alive_seq, state.step, candidates=tokens
            )
            total += weight * scores
        return tokens, total, (held, fell), new_states

    def rank_provisional(flat_log_probs, provisional_terms):
        """With a provisional scorer: the candidates (flat indices `[batch,
        4 * beam_size]`), the `2 * beam_size` best by the score kept for sure
        then the `2 * beam_size` best of those holding a provisional bonus,
        and the score kept for sure of the first (-INF: not ranked there).

        A provisional beam's extension ranks among the first only once its
        phrase is complete, and is dropped when its bonus falls (its match
        failed): the beams kept for sure never held it."""
        held, fell = (tf.reshape(t, tf.shape(flat_log_probs)) for t in provisional_terms)
        of_provisional_beam = tf.range(width * num_columns) // num_columns >= beam_size
        dropped = tf.logical_and(of_provisional_beam, fell)
        holding = tf.logical_and(held > 0, tf.logical_not(dropped))
        held_back = tf.logical_or(dropped, tf.logical_and(of_provisional_beam, held > 0))
        sure = tf.where(held_back, -INF, flat_log_probs - held)
        sure_scores, sure_ids = tf.math.top_k(sure, k=2 * beam_size)
        _, holding_ids = tf.math.top_k(tf.where(holding, flat_log_probs, -INF), k=2 * beam_size)
        ids = tf.concat([sure_ids, holding_ids], 1)
        kept = tf.concat([sure_scores > -INF, gather_beams(holding, holding_ids)], 1)
        return ids, kept, tf.concat([sure_scores, tf.fill(tf.shape(sure_scores), -INF)], 1)

    def grow_topk(state: BeamState) -> Candidates:
        """The 2 * width best one-token extensions of the alive beams
        (with a provisional scorer, `rank_provisional`'s).

        Two beam's worth, because up to width of them may end in EOS and
        the rest must still refill the alive set (needs vocab_size > width).
        """
        tokens, step_scores, provisional_terms, new_states = score_columns(state)
        log_probs = step_scores + state.alive_log_probs[:, :, None]
        # All candidates have the same length here, so the penalty never
        # reorders them; it matters when they compete with finished sequences.
        penalty = length_penalty(state.step + 1, alpha)
        flat_log_probs = tf.reshape(log_probs, [batch_size, width * num_columns])
        if provisional:
            topk_flat_ids, kept, sure = rank_provisional(flat_log_probs, provisional_terms)
            topk_log_probs = tf.gather(flat_log_probs, topk_flat_ids, batch_dims=1)
            topk_scores = tf.where(kept, topk_log_probs / penalty, -INF)
            # EOS ends every match: a finished candidate is among the first.
            first = tf.range(2 * width) < 2 * beam_size
        else:
            topk_scores, topk_flat_ids = tf.math.top_k(flat_log_probs / penalty, k=2 * width)
            topk_log_probs = tf.gather(flat_log_probs, topk_flat_ids, batch_dims=1)
            sure, first = topk_log_probs, True
        parents = topk_flat_ids // num_columns  # which alive beam each extends
        columns = topk_flat_ids % num_columns
        if partial:
            topk_tokens = gather_candidates(tokens, parents, columns)
        else:
            topk_tokens = columns
        return Candidates(
            seq=append_tokens(gather_beams(state.alive_seq, parents), topk_tokens, state.step),
            log_probs=topk_log_probs,
            scores=topk_scores,
            sure=sure,
            ids=topk_flat_ids,
            finished=tf.logical_and(topk_tokens == eos_id, first),
            parents=parents,
            columns=columns,
            tokens=topk_tokens,
            scorer_states=tuple(new_states[scorer] for scorer in order),
        )

    def pick_alive(topk: Candidates):
        """The candidates to keep alive (`[batch, width]` indices) and their
        scores: the best beam_size by the score kept for sure that did not
        emit EOS, then (with a provisional scorer) the best others that hold
        a provisional bonus, by their score."""
        if not provisional:
            _, pick = tf.math.top_k(topk.scores - INF * topk.eos_mask, k=beam_size)
            return pick, gather_beams(topk.log_probs, pick)
        sure_scores, sure = tf.math.top_k(topk.sure - INF * topk.eos_mask, k=beam_size)
        # The holders' half may list a candidate the first half already kept.
        kept_ids = gather_beams(topk.ids, sure)
        again = tf.reduce_any(topk.ids[:, :, None] == kept_ids[:, None, :], axis=2)
        second = tf.range(2 * width) >= 2 * beam_size
        holding = tf.logical_and(second, tf.logical_and(topk.scores > -INF, tf.logical_not(again)))
        _, holders = tf.math.top_k(tf.where(holding, topk.scores, -INF), k=width - beam_size)
        pick = tf.concat([sure, holders], 1)
        kept = tf.concat([sure_scores > -INF, gather_beams(holding, holders)], 1)
        # An empty beam stays out of the race, as T2T's initial copies.
        return pick, tf.where(kept, gather_beams(topk.log_probs, pick), -INF)

    def grow_alive(state: BeamState, topk: Candidates) -> BeamState:
        """The new alive set (`pick_alive`), and each scorer's state of it."""
        alive_pick, alive_log_probs = pick_alive(topk)
        parents, columns, tokens = (
            gather_beams(t, alive_pick) for t in (topk.parents, topk.columns, topk.tokens)
        )
        return state._replace(
            alive_seq=gather_beams(topk.seq, alive_pick),
            alive_log_probs=alive_log_probs,
            scorer_states=tuple(
                scorer.select(old, new, parents, columns, tokens)
                for scorer, old, new in zip(
                    order, state.scorer_states, topk.scorer_states, strict=True
                )
            ),
        )

    def grow_finished(state: BeamState, topk: Candidates) -> BeamState:
        """The new finished set: the best width of the finished sequences
        and the candidates that just emitted EOS (others ranked last by -INF)."""
        finished_seq = state.finished_seq
        if not use_fixed_shapes:  # keep old finished sequences as long as the new ones
            finished_seq = tf.pad(finished_seq, [[0, 0], [0, 0], [0, 1]])
        pool_scores = tf.concat(
            [state.finished_scores, topk.scores - INF * (1.0 - topk.eos_mask)], 1
        )
        _, finished_pick = tf.math.top_k(pool_scores, k=width)
        pool_flags = tf.concat([state.finished_flags, topk.finished], 1)
        return state._replace(
            finished_seq=gather_beams(tf.concat([finished_seq, topk.seq], 1), finished_pick),
            finished_scores=gather_beams(pool_scores, finished_pick),
            finished_flags=gather_beams(pool_flags, finished_pick),
        )

    def inner_loop(state: BeamState) -> tuple[BeamState]:
        """One step: grow the candidates, then the alive and finished sets from them."""
        topk = grow_topk(state)
        state = grow_finished(grow_alive(state, topk), topk)
        return (state._replace(step=state.step + 1),)

    def is_not_finished(state: BeamState):
        """Whether to go on: steps are left and some alive beam may still win."""
        # Log probs (and CTC prefix probabilities) only fall as a sequence
        # grows, and the penalty is largest at decode_length, so this bounds
        # every score the best alive beam can reach.
        best_alive = tf.reduce_max(state.alive_log_probs, axis=1)
        best_alive_bound = best_alive / length_penalty(stop_length, alpha)
        # stop_early: the best finished beats every alive continuation; else the
        # worst one does (an empty slot's -INF keeps the search going). Per
        # batch item; T2T's global min in the second case gives the same output.
        reduce = tf.reduce_max if stop_early else tf.reduce_min
        bound_is_met = tf.reduce_all(reduce(state.finished_scores, axis=1) > best_alive_bound)
        return tf.logical_and(state.step < stop_length, tf.logical_not(bound_is_met))

    # Only beam 0 starts alive; the copies get -INF so the first step draws all
    # 2 * width candidates from beam 0 (T2T: "initial_ids are prob 1.0").
    alive_log_probs = tf.tile(tf.constant([[0.0] + [-INF] * (width - 1)]), [batch_size, 1])
    alive_seq = expand_to_beam_size(initial_ids, width)[:, :, None]
    if use_fixed_shapes:
        # Zeros after the start token, so that unwritten positions read as PAD
        # exactly like the dynamic version's zero padding.
        alive_seq = tf.pad(alive_seq, [[0, 0], [0, 0], [0, decode_length]])
    initial = BeamState(
        step=tf.constant(0, tf.int32),
        alive_seq=alive_seq,
        alive_log_probs=alive_log_probs,
        finished_seq=tf.zeros_like(alive_seq),
        finished_scores=tf.fill(tf.shape(alive_log_probs), -INF),
        finished_flags=tf.zeros(tf.shape(alive_log_probs), tf.bool),
        scorer_states=tuple(scorer.initial_state(width) for scorer in order),
    )
    shape_invariants = None
    if not use_fixed_shapes:  # the sequences grow by one column per step
        growing = tf.TensorShape([initial_ids.shape[0], width, None])
        shape_invariants = (
            tf.nest.map_structure(lambda t: t.shape, initial)._replace(
                alive_seq=growing,
                finished_seq=growing,
                scorer_states=tuple(
                    scorer.shape_invariants(s)
                    for scorer, s in zip(order, initial.scorer_states, strict=True)
                ),
            ),
        )
    (final,) = tf.while_loop(
        is_not_finished, inner_loop, (initial,), shape_invariants=shape_invariants
    )

    # T2T's corner case: a batch item where no beam ever emitted EOS returns
    # its alive beams (and their scores) rather than empty finished slots.
    # (The first beam_size of each set: the finished best first, the alive
    # beams ranked by the score they keep.)
    any_finished = tf.reduce_any(final.finished_flags, axis=1)
    ids = tf.where(any_finished[:, None, None], final.finished_seq, final.alive_seq)
    scores = tf.where(any_finished[:, None], final.finished_scores, final.alive_log_probs)
    ids, scores = ids[:, :beam_size], scores[:, :beam_size]
    if not use_fixed_shapes:  # stopped early: pad to the promised length
        ids = tf.pad(ids, [[0, 0], [0, 0], [0, decode_length + 1 - tf.shape(ids)[2]]])
    # Drop the start token: callers want the decoded tokens only.
    ids = ids[:, :, 1:]
    if isinstance(decode_length, int):
        ids = tf.ensure_shape(ids, [initial_ids.shape[0], beam_size, decode_length])
    return ids, scores
