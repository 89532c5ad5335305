"""The word boundary head over a stream: each frame's probabilities once its inputs are in.

    head = StreamingBoundaryHead(model.word_boundary_head)
    state = head.initial_state()
    # after each chunk: the features from frame `state["boundary_frames"]` on,
    # and the encoder output so far
    probs, state = head.step(features, memory, state)          # [1, new frames, 2]
    probs, state = head.step(features, memory, state, final=True)

`WordBoundaryHead` reads, for feature frame `j`, the features of frame `j`
and the encoder frame nearest it, through a projection and two "same"
convolutions of `kernel_size` frames. Over a stream a frame's input is
complete once its nearest encoder frame has been emitted, and its output
once the `2 * (kernel_size // 2)` frames after it are in (at the end, the
convolutions' zero padding). What a step keeps for the next is the last
inputs of each convolution (`boundary_inputs`, `boundary_hidden`) and the
probabilities so far; the concatenated probabilities are the head's over
the whole utterance (a test checks it), so a stream's final is timed
without keeping its features.
"""

from __future__ import annotations

import tensorflow as tf
from keras import ops

from t2t_lite.layers.word_boundary_head import WordBoundaryHead
from t2t_lite.streaming.state import empty_state, with_shape

# The state tensors, in signature order.
STATE = ("boundary_frames", "boundary_inputs", "boundary_hidden", "boundary_probs")


class StreamingBoundaryHead:
    """`WordBoundaryHead` step by step (see the module docstring).

    Args:
        head: the model's trained `WordBoundaryHead`.
    """

    def __init__(self, head: WordBoundaryHead):
        self.head = head
        self.reach = head.kernel_size // 2  # frames each convolution reads on each side

    def state_spec(self) -> dict[str, tf.TensorSpec]:
        tail, hidden = 2 * self.reach, self.head.hidden
        shapes = {
            "boundary_frames": [],
            "boundary_inputs": [1, tail, hidden],
            "boundary_hidden": [1, tail, hidden],
            "boundary_probs": [1, None, 2],
        }
        dtypes = {"boundary_frames": tf.int32}
        return {
            name: tf.TensorSpec(shapes[name], dtypes.get(name, tf.float32), name=name)
            for name in STATE
        }

    def initial_state(self) -> dict[str, tf.Tensor]:
        return empty_state(self.state_spec())

    def ready_frames(self, feature_frames, encoder_frames):
        """Feature frames whose nearest encoder frame is among the first `encoder_frames`.

        More encoder frames cannot change it.
        """
        head = self.head
        # encoder_frame_of: floor((j - first_middle) / step + 0.5) <= T - 1.
        bound = (tf.cast(encoder_frames, tf.float32) - 0.5) * head.frames_per_step
        ready = tf.cast(tf.math.ceil(bound + head.first_middle), tf.int32)
        # (With no encoder frame, none: the first frames' nearest is frame 0.)
        ready = tf.where(encoder_frames > 0, ready, 0)
        return tf.clip_by_value(ready, 0, feature_frames)

    def step(self, features, memory, state: dict, final: bool = False):
        """The probabilities of the frames this step completes.

        Args:
            features: float32 `[1, frames, bins, channels]`: the utterance's
                feature frames from `state["boundary_frames"]` on (all that
                exist so far).
            memory: float32 `[1, encoder_frames, hidden]`, the encoder output
                of the utterance so far.
            state: `initial_state()` or the previous step's.
            final: the utterance has ended: every frame left.

        Returns:
            `(probs [1, frames, 2], state)`: sigmoid of the head's logits
            (word start, word end) for the frames completed, in order.
        """
        head, reach = self.head, self.reach
        done = state["boundary_frames"]
        available = done + tf.shape(features)[1]
        encoder_frames = tf.shape(memory)[1]
        if final:  # every frame left (none without an encoder frame: no speech)
            end = tf.where(encoder_frames > 0, available, done)
        else:
            end = self.ready_frames(available, encoder_frames)
        new = end - done
        # The head's input for frames done..end-1, as `WordBoundaryHead.call` builds it.
        flat = tf.reshape(features[:, :new], [1, new, features.shape[2] * features.shape[3]])
        index = head.encoder_frame_of(end, encoder_frames)[done:]
        nearest = ops.take(memory, index, axis=1)
        x = head.input_projection(ops.concatenate([ops.cast(flat, nearest.dtype), nearest], -1))
        x = ops.cast(x, "float32")
        # Window position p is frame done - 2 reach + p; positions before
        # frame 0 are the convolutions' zero padding.
        inputs = tf.concat([state["boundary_inputs"], x], axis=1)
        padded = tf.pad(inputs, [[0, 0], [0, reach if final else 0], [0, 0]])
        hidden = self._conv(head.conv_1, padded)  # frames done - reach ..
        first = done - reach
        hidden *= _from_frame_zero(first, tf.shape(hidden)[1])
        hiddens = tf.concat([state["boundary_hidden"], hidden], axis=1)  # from done - 3 reach
        padded = tf.pad(hiddens, [[0, 0], [0, reach if final else 0], [0, 0]])
        outputs = self._conv(head.conv_2, padded)  # frames done - 2 reach ..
        skip = tf.maximum(2 * reach - done, 0)  # positions before frame 0
        outputs = outputs[:, skip:]
        probs = tf.sigmoid(ops.cast(head.output_projection(outputs), "float32"))
        tail = 2 * reach
        new_state = {
            "boundary_frames": end,
            "boundary_inputs": with_shape(inputs[:, -tail:], state["boundary_inputs"].shape),
            "boundary_hidden": with_shape(hiddens[:, -tail:], state["boundary_hidden"].shape),
            "boundary_probs": tf.concat([state["boundary_probs"], probs], axis=1),
        }
        return probs, new_state

    @staticmethod
    def _conv(layer, inputs):
        """A "same" `Conv1D` layer's kernel, bias and activation, without its padding.

        The window carries the frames either side. TF's convolution, not
        `ops.conv`: a step that completes no frame has a window shorter than
        the kernel, whose empty output `ops.conv` refuses in eager mode.
        """
        outputs = tf.nn.convolution(
            ops.cast(inputs, layer.compute_dtype), layer.kernel, padding="VALID"
        )
        return ops.cast(layer.activation(ops.add(outputs, layer.bias)), "float32")


def _from_frame_zero(first, count):
    """float32 `[1, count, 1]`: 0 for window positions before frame 0, 1 after.

    `first` is position 0's frame.
    """
    frames = first + tf.range(count)
    return tf.cast(frames >= 0, tf.float32)[None, :, None]
