"""The streaming state's tensors: empty ones from a spec, and the state at fixed shapes.

Fixed shapes serve a client that needs every call the same size.

    fixed = FixedSizeState(graph, max_samples=20 * 16000 + 10240)
    padded = fixed.pad(graph.start())       # every tensor at `fixed.spec()`'s shape
    state = fixed.unpad(padded)             # the graph's own state again

Six of `StreamingGraph`'s state tensors grow along time (`TIME_AXES`): the
samples of the frame not yet complete, the feature frames still to be read,
the word boundary probabilities, the encoder's keys and values and its
output. Each is bounded by what one utterance holds: the endpoint rules end
an utterance at `max_utterance` seconds, and a limited left context
(`left_chunks`) bounds the keys and values by itself. `FixedSizeState` pads
each to that bound along its time axis and carries its length in
`<name>_length`, so a `.tflite` (fixed shapes in and out) and a TF Serving
client (the same request every chunk) hold the same state.
"""

from __future__ import annotations

import tensorflow as tf

# The state tensors that grow along time, and which axis is time.
TIME_AXES = {"pending": 1, "features": 1, "boundary_probs": 1, "keys": 3, "values": 3,
             "memory": 1}  # fmt: skip
LENGTH_SUFFIX = "_length"


def with_shape(tensor: tf.Tensor, shape) -> tf.Tensor:
    """`tensor` with its static shape set to `shape` (checked eagerly).

    What `tf.ensure_shape` does, without the op TFLite's builtins lack.
    """
    tensor.set_shape(shape)
    return tensor


def empty_state(spec: dict[str, tf.TensorSpec]) -> dict[str, tf.Tensor]:
    """Zeros of each spec's shape, a time axis (None) of length 0."""
    return {
        name: tf.zeros([0 if d is None else d for d in s.shape], s.dtype)
        for name, s in spec.items()
    }


class FixedSizeState:
    """A `StreamingGraph`'s state with its growing tensors padded to fixed sizes.

    Args:
        graph: the `StreamingGraph` (its `max_utterance_samples`: the longest
            utterance, by the endpoint rules, and the chunk that crosses it).
    """

    def __init__(self, graph):
        self.graph, self.max_samples = graph, graph.max_utterance_samples
        feature_frames, encoder_frames = graph.max_feature_frames, graph.max_encoder_frames
        capacities = {
            "pending": graph.featurizer.span,  # under one frame's samples
            "features": feature_frames,  # (before speech, every frame waits)
            "boundary_probs": feature_frames,
            "keys": graph.encoder.cached_frames or encoder_frames,
            "values": graph.encoder.cached_frames or encoder_frames,
            "memory": encoder_frames,
        }
        self._spec = graph.state_spec()
        self.capacities = {name: size for name, size in capacities.items() if name in self._spec}
        self.names = (
            *graph.state_names,
            *(name + LENGTH_SUFFIX for name in self.capacities),
        )

    def spec(self) -> dict[str, tf.TensorSpec]:
        """Every tensor's shape, all fixed."""
        spec = {}
        for name, s in self._spec.items():
            shape = list(s.shape)
            if name in self.capacities:
                shape[TIME_AXES[name]] = self.capacities[name]
            spec[name] = tf.TensorSpec(shape, s.dtype, name=name)
        for name in self.capacities:
            spec[name + LENGTH_SUFFIX] = tf.TensorSpec([], tf.int32, name=name + LENGTH_SUFFIX)
        return {name: spec[name] for name in self.names}

    def pad(self, state: dict, checked: bool = True) -> dict[str, tf.Tensor]:
        """`state` with each growing tensor zero padded to its capacity.

        Args:
            state: the graph's state.
            checked: a tensor longer than its capacity (an utterance past
                the longest) fails with a sentence saying so; without (TFLite
                has no assertion op), the padding fails.
        """
        fixed, spec = dict(state), self.spec()
        for name, capacity in self.capacities.items():
            value, axis = state[name], TIME_AXES[name]
            length = tf.shape(value)[axis]
            if checked:
                seconds = self.max_samples / self.graph.sample_rate
                check = tf.debugging.assert_less_equal(length, capacity, message=(
                    f"the utterance is longer than the streaming state holds ({seconds:g} s: "
                    "endpoint_max_utterance_seconds and one chunk); call stream_final "
                    "before, and send at most a chunk a step."
                ))  # fmt: skip
                # In a graph the padding does not wait for the check unless told
                # to, and would fail first with TF's own message.
                with tf.control_dependencies([] if check is None else [check]):
                    length = tf.identity(length)
            paddings = [[0, 0]] * value.shape.rank
            paddings[axis] = [0, capacity - length]
            fixed[name] = tf.reshape(tf.pad(value, paddings), spec[name].shape)
            fixed[name + LENGTH_SUFFIX] = length
        return fixed

    def unpad(self, fixed: dict) -> dict[str, tf.Tensor]:
        """The graph's state from `pad`'s."""
        state = {name: fixed[name] for name in self.graph.state_names}
        for name in self.capacities:
            value, axis = fixed[name], TIME_AXES[name]
            size = [-1] * value.shape.rank
            size[axis] = fixed[name + LENGTH_SUFFIX]
            state[name] = with_shape(
                tf.slice(value, [0] * value.shape.rank, tf.stack(size)), self._spec[name].shape
            )
        return state
