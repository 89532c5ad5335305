"""The interface of one term of the beam search's score, and beam helpers.

ESPnet's search (`espnet/nets/beam_search.py`) ranks a hypothesis by a
weighted sum of scorers: the attention decoder, the CTC prefix scorer, a
language model. t2t-lite's `BeamSearch` does the same with these
objects; each holds its own per-beam state, and the search only adds
weighted scores and tells each scorer which extensions were kept.

A *full* scorer scores every token of the vocabulary (the decoder, an LM);
a *partial* scorer only the few candidates the full scorers' weighted sum
ranks best (CTC: scoring a token costs a pass over the frames).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import tensorflow as tf


def shape_list(tensor: tf.Tensor) -> list:
    """Static dimensions where known, dynamic ones elsewhere (keeps shapes static)."""
    dynamic = tf.shape(tensor)
    return [dim if dim is not None else dynamic[i] for i, dim in enumerate(tensor.shape)]


def expand_to_beam_size(tensor: tf.Tensor, beam_size: int) -> tf.Tensor:
    """`[batch, ...]` -> `[batch, beam_size, ...]`, each item repeated."""
    tensor = tf.expand_dims(tensor, 1)
    return tf.tile(tensor, [1, beam_size] + [1] * (tensor.shape.rank - 2))


def merge_beam_dim(tensor: tf.Tensor) -> tf.Tensor:
    """`[batch, beam, ...]` -> `[batch * beam, ...]` (batch-major)."""
    shape = shape_list(tensor)
    return tf.reshape(tensor, [shape[0] * shape[1]] + shape[2:])


def unmerge_beam_dim(tensor: tf.Tensor, batch_size, beam_size: int) -> tf.Tensor:
    """`[batch * beam, ...]` -> `[batch, beam, ...]`."""
    return tf.reshape(tensor, [batch_size, beam_size] + shape_list(tensor)[1:])


def gather_beams(tensor: tf.Tensor, indices: tf.Tensor) -> tf.Tensor:
    """`tensor[b, indices[b, j], ...]` for `tensor [batch, n, ...]`, `indices [batch, k]`."""
    return tf.gather(tensor, indices, batch_dims=1)


def gather_candidates(tensor: tf.Tensor, parents: tf.Tensor, columns: tf.Tensor) -> tf.Tensor:
    """`tensor[b, parents[b, j], columns[b, j], ...]` for `tensor [batch, beam, n, ...]`."""
    shape = shape_list(tensor)
    flat = tf.reshape(tensor, [shape[0], shape[1] * shape[2]] + shape[3:])
    return gather_beams(flat, parents * shape[2] + columns)


class Scorer:
    """One term of the search's score (subclass it).

    A scorer's state is a nested structure of tensors, each
    `[batch, beam, ...]`: what it needs to score the next token of each alive
    hypothesis (a decoder cache, CTC forward variables, a node of a phrase
    graph).

    Class attributes:
        partial: False for a full scorer (`score` gets `candidates=None` and
            scores all `vocab_size` tokens); True for a partial one (`score`
            gets the `[batch, beam, k]` candidate tokens).
    """

    partial = False
    # True for a scorer whose bonus a later step may take back (a running
    # phrase match): the search then keeps extra beams for its hypotheses
    # (`provisional`, `failed`; `provisional_ranking.py`).
    takes_back = False

    def initial_state(self, beam_size: int) -> Any:
        """The state of the empty hypothesis, `[batch, beam_size, ...]` per tensor."""
        raise NotImplementedError(f"{type(self).__name__} must implement initial_state")

    def score(self, state, alive_seq: tf.Tensor, step, candidates=None) -> tuple[tf.Tensor, Any]:
        """Scores one-token extensions of the alive hypotheses.

        Args:
            state: this scorer's state of the alive hypotheses.
            alive_seq: int32 `[batch, beam, length]`, the hypotheses (start
                token first; see `BeamState` for `length`).
            step: scalar int32, the position being decoded (0 first).
            candidates: None, or (a partial scorer) int32 `[batch, beam, k]`.

        Returns:
            `(scores, new_state)`: float32 log-domain step scores
            `[batch, beam, vocab]` (full) or `[batch, beam, k]` (partial), and
            whatever `select` needs to make the kept extensions' state.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement score")

    def select(self, state, new_state, parents: tf.Tensor, columns: tf.Tensor, tokens: tf.Tensor):
        """The state of the kept extensions, `[batch, beam, ...]`.

        Args:
            state: the state `score` was given.
            new_state: what `score` returned.
            parents: int32 `[batch, beam]`, the alive hypothesis each kept
                extension extends.
            columns: int32 `[batch, beam]`, its column in `score`'s output
                (the token for a full scorer, the candidate's index for a
                partial one).
            tokens: int32 `[batch, beam]`, the token it appends.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement select")

    def provisional(self, new_state) -> tf.Tensor:
        """The part of each extension's summed score that a later step may take back.

        A `takes_back` full scorer only.

        Args:
            new_state: what `score` returned.

        Returns:
            float32 `[batch, beam, vocab]`, unweighted, >= 0.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement provisional")

    def failed(self, new_state) -> tf.Tensor:
        """Where an extension takes back every provisional bonus its hypothesis held.

        It keeps none of it: a match failed with no phrase complete. A
        `takes_back` full scorer only.

        Args:
            new_state: what `score` returned.

        Returns:
            bool `[batch, beam, vocab]`.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement failed")

    def shape_invariants(self, state) -> Any:
        """The loop shapes of `state` for a dynamic search.

        By default, a dimension of size 0 at the start grows (a cache of the
        steps so far).
        """
        return tf.nest.map_structure(
            lambda s: tf.TensorShape([None if dim == 0 else dim for dim in s.shape]), state
        )


class WeightedScorer(NamedTuple):
    """A scorer and its weight in the search's sum (ESPnet's `weights`)."""

    scorer: Scorer
    weight: float
