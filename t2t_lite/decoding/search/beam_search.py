"""Beam search with T2T's length penalty, in a `tf.while_loop`.

    ids, scores = beam_search(fn, tf.zeros([batch], tf.int32), beam_size=4,
                              decode_length=50, vocab_size=vocab, alpha=0.6,
                              states=model.initial_decode_cache(features, 50))

Tensor2Tensor's algorithm (`tensor2tensor/utils/beam_search.py`, after
https://arxiv.org/abs/1609.08144), with its phases' names. The loop carries
one `BeamState`; each step (`inner_loop`) grows the `beam_size` *alive*
sequences into their `2 * beam_size` best one-token extensions (`grow_topk`,
the `Candidates`), keeps the best `beam_size` of those that did not emit EOS
as the new alive set (`grow_alive`), and merges those that did into the
`beam_size` best *finished* sequences (`grow_finished`), ranked by
`log_prob / ((5 + length) / 6) ** alpha`, until `is_not_finished` says no
alive beam can still win. Two representations of the growing
sequences give the same results:

- dynamic (default, T2T's CPU/GPU path): the sequences grow by one column a
  step and `symbols_to_logits_fn` sees the whole prefix;
- fixed shapes (`use_fixed_shapes=True`, the representation of T2T's
  `use_tpu` path): a `[batch, beam, decode_length + 1]` buffer written at the
  step index, so every loop variable has a static shape and the search
  compiles with XLA (`tf.function(jit_compile=True)`; tests check both give
  the same result). t2t-lite's own commands (decoder, trainer's evaluation,
  SavedModel) run `decode.model_search`, which uses the dynamic path with a
  per-batch decode length; a TPU run evaluates on its host. No t2t-lite
  command decodes on a TPU yet.

With a `ctc_scorer` (joint CTC/attention decoding, `ctc_prefix_score.py`),
each beam's `2 * beam_size` best tokens by the decoder are the candidates,
and a candidate's score is `(1 - ctc_weight) * attention log probability +
ctc_weight * CTC prefix log probability`, accumulated along the hypothesis
like the log probability it replaces; the CTC forward variables are carried
and reordered with the beams. The `2 * beam_size` candidates per beam are
exactly the ones the plain search can keep, so with `ctc_weight=0` it returns
the plain search's result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import tensorflow as tf

from t2t_lite.data.text_encoders import EOS_ID

# T2T's "infinity": large enough to rank a sequence last, small enough that
# adding it to a log probability stays finite (no inf - inf = NaN).
INF = 1.0e7

SymbolsToLogitsFn = Callable[[tf.Tensor, tf.Tensor, Any], "tuple[tf.Tensor, Any]"]


class BeamState(NamedTuple):
    """The search's loop variables, `[batch, beam, ...]` unless said.

    `alive_*` are the beams still growing, best first; `finished_*` the best
    sequences that emitted EOS, ranked by length-penalized score. A sequence
    holds the start token first; its length is `step + 1` (dynamic) or
    `decode_length + 1` (fixed shapes, zeros past `step`).
    """

    step: tf.Tensor  # scalar int32: the position being decoded
    alive_seq: tf.Tensor  # int32 `[batch, beam, length]`
    alive_log_probs: tf.Tensor  # float32 `[batch, beam]`, no length penalty
    finished_seq: tf.Tensor  # int32 `[batch, beam, length]`
    finished_scores: tf.Tensor  # float32 `[batch, beam]`, -INF for an empty slot
    finished_flags: tf.Tensor  # bool `[batch, beam]`, True for a filled slot
    states: Any  # the fn's states, each `[batch, beam, ...]`
    ctc_state: Any  # the CTC prefix scorer's variables of each alive beam ({} without)


class Candidates(NamedTuple):
    """A step's `2 * beam_size` best one-token extensions of the alive beams
    (`grow_topk`), `[batch, 2 * beam, ...]`, best first."""

    seq: tf.Tensor  # int32: the parent's sequence with the new token
    log_probs: tf.Tensor  # float32: the sequence's log probability (or joint score)
    scores: tf.Tensor  # float32: `log_probs` length-penalized
    finished: tf.Tensor  # bool: the new token is EOS
    parents: tf.Tensor  # int32: the alive beam each extends
    states: Any  # the fn's new states, still in the old beams' order
    ctc_state: Any  # the CTC prefix scorer's variables of each candidate ({} without)

    @property
    def eos_mask(self) -> tf.Tensor:
        """float32: 1 where the candidate is finished, else 0."""
        return tf.cast(self.finished, tf.float32)


def length_penalty(length, alpha) -> tf.Tensor:
    """GNMT's length penalty `((5 + length) / 6) ** alpha` as float32."""
    return tf.pow((5.0 + tf.cast(length, tf.float32)) / 6.0, tf.cast(alpha, tf.float32))


def _shape_list(tensor: tf.Tensor) -> list:
    """Static dimensions where known, dynamic ones elsewhere (keeps shapes static)."""
    dynamic = tf.shape(tensor)
    return [dim if dim is not None else dynamic[i] for i, dim in enumerate(tensor.shape)]


def _expand_to_beam_size(tensor: tf.Tensor, beam_size: int) -> tf.Tensor:
    """`[batch, ...]` -> `[batch, beam_size, ...]`, each item repeated."""
    tensor = tf.expand_dims(tensor, 1)
    return tf.tile(tensor, [1, beam_size] + [1] * (tensor.shape.rank - 2))


def _merge_beam_dim(tensor: tf.Tensor) -> tf.Tensor:
    """`[batch, beam, ...]` -> `[batch * beam, ...]` (batch-major)."""
    shape = _shape_list(tensor)
    return tf.reshape(tensor, [shape[0] * shape[1]] + shape[2:])


def _unmerge_beam_dim(tensor: tf.Tensor, batch_size, beam_size: int) -> tf.Tensor:
    """`[batch * beam, ...]` -> `[batch, beam, ...]`."""
    return tf.reshape(tensor, [batch_size, beam_size] + _shape_list(tensor)[1:])


def _growing_shape(state: tf.Tensor) -> tf.TensorShape:
    """A state's loop shape: dimensions of size 0 at the start grow (unknown)."""
    return tf.TensorShape([None if dim == 0 else dim for dim in state.shape])


def _gather_beams(tensor: tf.Tensor, indices: tf.Tensor) -> tf.Tensor:
    """`tensor[b, indices[b, j], ...]` for `tensor [batch, n, ...]`, `indices [batch, k]`."""
    return tf.gather(tensor, indices, batch_dims=1)


def beam_search(
    symbols_to_logits_fn: SymbolsToLogitsFn,
    initial_ids: tf.Tensor,
    beam_size: int,
    decode_length: int,
    vocab_size: int,
    alpha: float,
    states: Any = None,
    eos_id: int = EOS_ID,
    stop_early: bool = True,
    use_fixed_shapes: bool = False,
    ctc_scorer=None,
    ctc_weight: float = 0.0,
    stop_length=None,
) -> tuple[tf.Tensor, tf.Tensor]:
    """Beam search with length penalty; T2T's signature and semantics.

    Args:
        symbols_to_logits_fn: `fn(ids, step, states) -> (logits, new_states)`.
            `step` is the scalar int32 position being decoded (0 first);
            `logits` are `[batch * beam_size, vocab_size]` for that position;
            `states` is the `states` structure, merged to `batch * beam_size`
            rows and reordered along with the beams. `ids` (int32,
            `batch * beam_size` rows, batch-major) is:
            - dynamic: the prefix `[.., step + 1]`, `initial_ids` first;
            - fixed shapes with states (T2T's `use_tpu`): `[.., 1]`, the last
              token only, as a cached model needs nothing else;
            - fixed shapes without states: the whole buffer
              `[.., decode_length + 1]`, zeros after position `step`.
            So `ids[:, -1]` is the previous token whenever states are given.
        initial_ids: `[batch]` int, the start token of each sequence (PAD 0).
        beam_size: number of beams (1 follows the greedy path).
        decode_length: maximum number of tokens to decode; a Python int for
            fixed shapes, otherwise an int or a scalar tensor.
        vocab_size: size of the logits' last dimension.
        alpha: length penalty exponent; 0 ranks by raw log probability.
        states: optional nested structure of tensors, each `[batch, ...]`
            (e.g. `Transformer.initial_decode_cache`). Their shapes must not
            change between steps, except along a dimension of size 0 at the
            start: such a state grows along it (a cache of the steps so far;
            not with fixed shapes). A state the fn returns as given (the same
            tensor) is not reordered: every beam of an item holds the copy
            tiled at the start.
        eos_id: the end-of-sequence id.
        stop_early: stop as soon as no alive beam can beat the best finished
            one (only the first beam is then guaranteed complete); False keeps
            going until no alive beam can beat any finished one.
        use_fixed_shapes: decode into a static-shape buffer (XLA/TPU).
        ctc_scorer: optional `CtcPrefixScorer` of the same batch: joint
            CTC/attention scoring (see the module docstring).
        ctc_weight: the CTC share of the score, in [0, 1).
        stop_length: a scalar int tensor in `[1, decode_length]`: the search
            stops after this many steps and its length penalty bound uses it,
            as a dynamic search with this `decode_length` would (a per-batch
            decode length inside a fixed-shape buffer); None: `decode_length`.

    Returns:
        `(ids, scores)`: int32 `[batch, beam_size, decode_length]` decoded
        tokens (without the start token) up to and including EOS, then 0;
        float32 `[batch, beam_size]` scores, best first: length-penalized log
        probabilities (joint scores with a CTC scorer) of finished sequences
        (-1e7 for an empty finished slot).
        A batch item where no beam ever emitted EOS gets its alive beams and
        their unpenalized log probabilities instead, as in T2T.

    Example:
    >>> log_probs = tf.math.log([[0.1, 0.3, 0.6]])  # same distribution each step
    >>> fn = lambda ids, step, states: (tf.tile(log_probs, [tf.shape(ids)[0], 1]), states)
    >>> ids, scores = beam_search(fn, tf.zeros([1], tf.int32), beam_size=2,
    ...                           decode_length=3, vocab_size=3, alpha=0.0)
    >>> ids.numpy().tolist()
    [[[1, 0, 0], [2, 1, 0]]]
    """
    if beam_size < 1:
        raise ValueError(f"beam_size must be >= 1, got {beam_size}.")
    if use_fixed_shapes and not isinstance(decode_length, int):
        raise ValueError(
            "use_fixed_shapes=True needs decode_length as a Python int (a static "
            f"buffer length), got {decode_length!r}."
        )
    if use_fixed_shapes and any(0 in s.shape for s in tf.nest.flatten(states or {})):
        raise ValueError(
            "use_fixed_shapes=True needs states of fixed shapes; a state with a "
            "dimension of size 0 grows (pass a fixed-length cache instead)."
        )
    if isinstance(decode_length, int) and decode_length < 1:
        raise ValueError(f"decode_length must be >= 1, got {decode_length}.")
    if ctc_scorer is not None and not 0.0 <= ctc_weight < 1.0:
        raise ValueError(
            f"ctc_weight must be in [0, 1) for joint decoding, got {ctc_weight} "
            "(1 is CTC greedy decoding, which needs no beam search)."
        )

    initial_ids = tf.cast(initial_ids, tf.int32)
    if stop_length is None:
        stop_length = decode_length
    # Static when known, so every reshape below keeps a static batch dimension
    # (a while_loop variable must not lose static dimensions between steps).
    batch_size = _shape_list(initial_ids)[0]
    states = {} if states is None else states
    has_states = bool(tf.nest.flatten(states))
    num_candidates = vocab_size if ctc_scorer is None else min(vocab_size, 2 * beam_size)

    def ids_for_fn(alive_seq, step):
        if use_fixed_shapes and has_states:
            # tf.gather keeps a static [.., 1] shape at a dynamic index under XLA.
            return tf.reshape(tf.gather(alive_seq, step[None], axis=2), [batch_size * beam_size, 1])
        return _merge_beam_dim(alive_seq)

    def append_tokens(sequences, tokens, step):
        """Writes `tokens [batch, k]` as position `step + 1` of `sequences`."""
        if use_fixed_shapes:
            column = tf.range(decode_length + 1) == step + 1
            return tf.where(column, tokens[:, :, None], sequences)
        return tf.concat([sequences, tokens[:, :, None]], axis=2)

    def score_candidates(step, log_probs, ctc_state):
        """Per-beam candidate tokens and their step scores, `[batch, beam, n]` each.

        Plain search: every token, its log probability. Joint: the decoder's
        `num_candidates` best, rescored with their CTC prefix scores.
        """
        if ctc_scorer is None:
            return tf.range(vocab_size)[None, None, :], log_probs, {}
        attention, candidates = tf.math.top_k(log_probs, k=num_candidates)
        prefix_scores, forward = ctc_scorer.extend(ctc_state, candidates, step)
        ctc_step = prefix_scores - ctc_state["score"][:, :, None]
        scores = (1.0 - ctc_weight) * attention + ctc_weight * ctc_step
        flat = [batch_size, beam_size * num_candidates]
        candidate_state = {
            "r": tf.reshape(forward, flat + _shape_list(forward)[3:]),
            "score": tf.reshape(prefix_scores, flat),
            "last": tf.reshape(candidates, flat),
        }
        return candidates, scores, candidate_state

    def grow_topk(state: BeamState) -> Candidates:
        """The 2 * beam_size best one-token extensions of the alive beams.

        Two beam's worth, because up to beam_size of them may end in EOS and
        the rest must still refill the alive set (needs vocab_size > beam_size).
        """
        given_states = tf.nest.map_structure(_merge_beam_dim, state.states)
        flat_logits, flat_states = symbols_to_logits_fn(
            ids_for_fn(state.alive_seq, state.step), state.step, given_states
        )
        logits = tf.reshape(tf.cast(flat_logits, tf.float32), [batch_size, beam_size, vocab_size])
        candidates, step_scores, candidate_state = score_candidates(
            state.step, tf.nn.log_softmax(logits), state.ctc_state
        )
        log_probs = step_scores + state.alive_log_probs[:, :, None]
        # All candidates have the same length here, so the penalty never
        # reorders them; it matters when they compete with finished sequences.
        penalty = length_penalty(state.step + 1, alpha)
        flat_log_probs = tf.reshape(log_probs, [batch_size, beam_size * num_candidates])
        topk_scores, topk_flat_ids = tf.math.top_k(flat_log_probs / penalty, k=2 * beam_size)
        topk_parents = topk_flat_ids // num_candidates  # which alive beam each extends
        if ctc_scorer is None:
            topk_ids = topk_flat_ids % vocab_size
        else:
            topk_ids = tf.gather(candidate_state["last"], topk_flat_ids, batch_dims=1)
        return Candidates(
            seq=append_tokens(_gather_beams(state.alive_seq, topk_parents), topk_ids, state.step),
            log_probs=tf.gather(flat_log_probs, topk_flat_ids, batch_dims=1),
            scores=topk_scores,
            finished=topk_ids == eos_id,
            parents=topk_parents,
            states=tf.nest.map_structure(
                lambda old, given, returned: (
                    old if returned is given else _unmerge_beam_dim(returned, batch_size, beam_size)
                ),
                state.states,
                given_states,
                flat_states,
            ),
            ctc_state=tf.nest.map_structure(
                lambda s: _gather_beams(s, topk_flat_ids), candidate_state
            ),
        )

    def grow_alive(state: BeamState, topk: Candidates) -> BeamState:
        """The new alive set: the best beam_size candidates that did not emit EOS."""
        _, alive_pick = tf.math.top_k(topk.scores - INF * topk.eos_mask, k=beam_size)
        # Reorder the states (computed for the old beams) to follow the new
        # beams: one gather by parent beam instead of T2T's two. A state the
        # fn returned untouched (the very tensor it was given, e.g. the
        # encoder's keys/values) is still the copy tiled at the start, equal
        # in every beam of an item, so reordering it would only copy it.
        parents = _gather_beams(topk.parents, alive_pick)
        return state._replace(
            alive_seq=_gather_beams(topk.seq, alive_pick),
            alive_log_probs=_gather_beams(topk.log_probs, alive_pick),
            states=tf.nest.map_structure(
                lambda old, new: new if new is old else _gather_beams(new, parents),
                state.states,
                topk.states,
            ),
            ctc_state=tf.nest.map_structure(lambda s: _gather_beams(s, alive_pick), topk.ctc_state),
        )

    def grow_finished(state: BeamState, topk: Candidates) -> BeamState:
        """The new finished set: the best beam_size of the finished sequences
        and the candidates that just emitted EOS (others ranked last by -INF)."""
        finished_seq = state.finished_seq
        if not use_fixed_shapes:  # keep old finished sequences as long as the new ones
            finished_seq = tf.pad(finished_seq, [[0, 0], [0, 0], [0, 1]])
        pool_scores = tf.concat(
            [state.finished_scores, topk.scores - INF * (1.0 - topk.eos_mask)], 1
        )
        _, finished_pick = tf.math.top_k(pool_scores, k=beam_size)
        pool_flags = tf.concat([state.finished_flags, topk.finished], 1)
        return state._replace(
            finished_seq=_gather_beams(tf.concat([finished_seq, topk.seq], 1), finished_pick),
            finished_scores=_gather_beams(pool_scores, finished_pick),
            finished_flags=_gather_beams(pool_flags, finished_pick),
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
        best_alive_bound = state.alive_log_probs[:, 0] / length_penalty(stop_length, alpha)
        # stop_early: the best finished beats every alive continuation; else the
        # worst one does (an empty slot's -INF keeps the search going). Per
        # batch item; T2T's global min in the second case gives the same output.
        reduce = tf.reduce_max if stop_early else tf.reduce_min
        bound_is_met = tf.reduce_all(reduce(state.finished_scores, axis=1) > best_alive_bound)
        return tf.logical_and(state.step < stop_length, tf.logical_not(bound_is_met))

    # Only beam 0 starts alive; the copies get -INF so the first step draws all
    # 2 * beam_size candidates from beam 0 (T2T: "initial_ids are prob 1.0").
    alive_log_probs = tf.tile(tf.constant([[0.0] + [-INF] * (beam_size - 1)]), [batch_size, 1])
    alive_seq = _expand_to_beam_size(initial_ids, beam_size)[:, :, None]
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
        states=tf.nest.map_structure(lambda s: _expand_to_beam_size(s, beam_size), states),
        ctc_state={} if ctc_scorer is None else ctc_scorer.initial_state(beam_size),
    )
    shape_invariants = None
    if not use_fixed_shapes:  # the sequences grow by one column per step
        growing = tf.TensorShape([initial_ids.shape[0], beam_size, None])
        shape_invariants = (
            tf.nest.map_structure(lambda t: t.shape, initial)._replace(
                alive_seq=growing,
                finished_seq=growing,
                states=tf.nest.map_structure(_growing_shape, initial.states),
            ),
        )
    (final,) = tf.while_loop(
        is_not_finished, inner_loop, (initial,), shape_invariants=shape_invariants
    )

    # T2T's corner case: a batch item where no beam ever emitted EOS returns
    # its alive beams (and their log probs) rather than empty finished slots.
    any_finished = tf.reduce_any(final.finished_flags, axis=1)
    ids = tf.where(any_finished[:, None, None], final.finished_seq, final.alive_seq)
    scores = tf.where(any_finished[:, None], final.finished_scores, final.alive_log_probs)
    if not use_fixed_shapes:  # stopped early: pad to the promised length
        ids = tf.pad(ids, [[0, 0], [0, 0], [0, decode_length + 1 - tf.shape(ids)[2]]])
    # Drop the start token: callers want the decoded tokens only.
    ids = ids[:, :, 1:]
    if isinstance(decode_length, int):
        ids = tf.ensure_shape(ids, [initial_ids.shape[0], beam_size, decode_length])
    return ids, scores
