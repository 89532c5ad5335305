"""A next-token model as a full scorer: the attention decoder, or a language model."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow as tf

from t2t_lite.decoding.search.scorer import (
    Scorer,
    expand_to_beam_size,
    gather_beams,
    merge_beam_dim,
    shape_list,
    unmerge_beam_dim,
)

SymbolsToLogitsFn = Callable[[tf.Tensor, tf.Tensor, Any], "tuple[tf.Tensor, Any]"]


class DecoderScorer(Scorer):
    """Scores every token by `log_softmax` of a model's next-token logits.

    Args:
        symbols_to_logits_fn: T2T's `fn(ids, step, states) -> (logits,
            new_states)`. `step` is the scalar int32 position being decoded;
            `logits` are `[batch * beam, vocab]`; `states` is `states`
            merged to `batch * beam` rows, reordered with the beams. `ids`
            (int32, `batch * beam` rows, batch-major) is:
            - dynamic: the prefix `[.., step + 1]`, the start token first;
            - fixed shapes with states (T2T's `use_tpu`): `[.., 1]`, the last
              token only, as a cached model needs nothing else;
            - fixed shapes without states: the whole buffer
              `[.., decode_length + 1]`, zeros after position `step`.
            So `ids[:, -1]` is the previous token whenever states are given.
        states: optional nested structure of tensors, each `[batch, ...]`
            (e.g. `Transformer.initial_decode_cache`). Their shapes must not
            change between steps, except along a dimension of size 0 at the
            start, along which a state grows (not with fixed shapes). A state
            the fn returns as given (the same tensor) is never reordered:
            every beam of an item holds the copy tiled at the start (the
            encoder's keys and values).
        use_fixed_shapes: the search's buffer is fixed-size (see `ids`).

    Example:
    ```python
    cache = model.initial_decode_cache(features, None)
    decoder = DecoderScorer(lambda ids, step, c: model.decode_step(ids[:, -1], step, c), cache)
    ```
    """

    def __init__(
        self, symbols_to_logits_fn: SymbolsToLogitsFn, states=None, use_fixed_shapes=False
    ):
        self.fn = symbols_to_logits_fn
        self.states = {} if states is None else states
        self.has_states = bool(tf.nest.flatten(self.states))
        self.use_fixed_shapes = use_fixed_shapes
        if use_fixed_shapes and any(0 in s.shape for s in tf.nest.flatten(self.states)):
            raise ValueError(
                "use_fixed_shapes=True needs states of fixed shapes; a state with a "
                "dimension of size 0 grows (pass a fixed-length cache instead)."
            )

    def initial_state(self, beam_size: int):
        return tf.nest.map_structure(lambda s: expand_to_beam_size(s, beam_size), self.states)

    def _ids(self, alive_seq: tf.Tensor, step) -> tf.Tensor:
        if self.use_fixed_shapes and self.has_states:
            # tf.gather keeps a static [.., 1] shape at a dynamic index under XLA.
            batch, beam = shape_list(alive_seq)[:2]
            return tf.reshape(tf.gather(alive_seq, step[None], axis=2), [batch * beam, 1])
        return merge_beam_dim(alive_seq)

    def score(self, state, alive_seq, step, candidates=None):
        batch, beam = shape_list(alive_seq)[:2]
        given = tf.nest.map_structure(merge_beam_dim, state)
        flat_logits, returned = self.fn(self._ids(alive_seq, step), step, given)
        logits = tf.reshape(tf.cast(flat_logits, tf.float32), [batch, beam, -1])
        # New states are in the old beams' order; one returned untouched keeps
        # its (tiled) old tensor, which `select` then leaves as it is.
        new_state = tf.nest.map_structure(
            lambda old, given, new: old if new is given else unmerge_beam_dim(new, batch, beam),
            state,
            given,
            returned,
        )
        return tf.nn.log_softmax(logits), new_state

    def select(self, state, new_state, parents, columns, tokens):
        # One gather by parent beam; a state left untouched is equal in every
        # beam of an item, so reordering it would only copy it.
        return tf.nest.map_structure(
            lambda old, new: new if new is old else gather_beams(new, parents), state, new_state
        )
