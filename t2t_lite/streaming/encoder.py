"""A streaming model's encoder, one chunk at a time, with caches.

    encoder = StreamingEncoder(model, chunk_frames=16)
    state = encoder.initial_state()
    memory, state = encoder.advance(features, stable_frames, state)  # new chunks' outputs
    memory, state = encoder.advance(features, total_frames, state, final=True)

`features` are the input features of the audio so far, `[1, frames, bins,
channels]`, of which the first `stable_frames` will not change when more
audio arrives. The encoder emits a chunk of `chunk_frames` output frames as
soon as the features its front end reads are stable, and at the end the
rest. Its outputs equal `model.encode(features, chunk_frames=chunk_frames)`
of the whole utterance (a test checks it):

- the front end (T2T's strided convolutions) is run again on a window of
  features from the chunk's first frame: output frame `t` reads input
  frames `4t .. 4t+14` and nothing else (`SpeechFrontEnd.input_frames_seen`),
  so a window starting at frame `4 t0` gives outputs `t0..` exactly; the
  features before the window are the "leftover frames" it no longer needs;
- each encoder layer keeps the keys and values of every earlier chunk (or,
  with `left_chunks`, of the last `left_chunks` chunks: the model's
  `encode(..., left_chunks=...)`) and its causal convolution's last inputs
  (`TransformerEncoderLayer.stream`).
"""

from __future__ import annotations

import dataclasses

import tensorflow as tf
from keras import ops

from t2t_lite.layers.speech_front_end import SpeechFrontEnd


def front_end_outputs_ready(stable_frames):
    """How many front-end outputs stable input frames determine (int or tensor).

    Output `t` is ready when its last input frame (`input_frames_seen(t)[1]`,
    which grows by a fixed stride) is stable.
    """
    last_of_first = SpeechFrontEnd.input_frames_seen(0)[1]
    stride = SpeechFrontEnd.input_frames_seen(1)[1] - last_of_first
    return ops.maximum((stable_frames - last_of_first + stride - 1) // stride, 0)


@dataclasses.dataclass
class EncoderState:
    """What the encoder carries between chunks: output frames emitted and layer caches.

    The output frames emitted, and every layer's `stream` cache.
    """

    frames_done: int
    layer_caches: list


class StreamingEncoder:
    """Chunk-by-chunk encoding with a model trained with `use_dynamic_chunk`.

    Args:
        model: a speech `Transformer` whose config has `use_dynamic_chunk`.
        chunk_frames: encoder output frames per chunk (40 ms each).
        left_chunks: chunks before its own each chunk attends to; 0: all.

    Raises:
        ValueError: a model without causal encoder layers, a chunk < 1 or
            left chunks < 0.
    """

    def __init__(self, model, chunk_frames: int, left_chunks: int = 0):
        if not model.config.use_dynamic_chunk:
            raise ValueError(
                "streaming needs a model trained with hparam use_dynamic_chunk=True "
                "(its encoder convolutions are causal and it has seen chunk masks)."
            )
        if chunk_frames < 1:
            raise ValueError(f"chunk_frames must be >= 1, got {chunk_frames}.")
        if left_chunks < 0:
            raise ValueError(f"left_chunks must be >= 0, got {left_chunks}.")
        self.model = model
        self.chunk_frames = chunk_frames
        # Keys and values a layer keeps between chunks (0: every one).
        self.cached_frames = left_chunks * chunk_frames
        # `advance` runs each chunk as a graph: eagerly, op dispatch would
        # cost more than a chunk's arithmetic. The caches grow by
        # a chunk a call, so the trace generalizes their length.
        self._compiled_chunk = tf.function(self.encode_chunk, reduce_retracing=True)

    def initial_state(self) -> EncoderState:
        layers = self.model.encoder_layers
        return EncoderState(0, [layer.initial_stream_cache(1) for layer in layers])

    def encode_chunk(self, features, first_output, size, total_frames, caches: list, offset=0):
        """One chunk of `size` output frames from `first_output` on.

        The frame numbers are ints or scalar tensors: eager and in a graph
        alike.

        Args:
            features: float32 `[1, frames, bins, channels]`: the utterance's
                feature frames from frame `offset` on (at least from the
                chunk's window on).
            first_output: the chunk's first encoder frame.
            size: its encoder frames (all ready: their inputs are stable).
            total_frames: the features' real frames (the front end pads after
                them, as it pads a whole utterance).
            caches: every layer's `stream` cache.
            offset: the utterance's frame that is `features`' first.

        Returns:
            `(memory [1, size, hidden] float32, caches)`.
        """
        model = self.model
        # The front end again on a window from the chunk's first input frame
        # to the last its outputs read (or the utterance's end).
        first_frame = SpeechFrontEnd.input_frames_seen(first_output)[0]
        needed = SpeechFrontEnd.input_frames_seen(first_output + size - 1)[1] + 1
        window = features[:, first_frame - offset : ops.minimum(total_frames, needed) - offset]
        x, _ = model.speech_front_end(window, ops.ones(ops.shape(window)[:2]))
        x = model.add_position(x[:, :size], start_index=first_output)
        new_caches = []
        for layer, cache in zip(model.encoder_layers, caches, strict=True):
            x, cache = layer.stream(x, cache, self.cached_frames)
            new_caches.append(cache)
        return ops.cast(model.encoder_norm(x), "float32"), new_caches

    def advance(self, features, stable_frames: int, state: EncoderState, final: bool = False):
        """Encodes every chunk the stable features complete (all that is left when `final`).

        Args:
            features: float32 `[1, frames, bins, channels]`, the audio so far.
            stable_frames: how many leading frames are final (all of them
                when `final`).
            state: from `initial_state` or the previous call.
            final: the utterance has ended: encode the last, shorter chunk.

        Returns:
            `(memory [1, new_frames, hidden], state)`; `new_frames` may be 0.
        """
        total = int(features.shape[1])
        ready = (
            SpeechFrontEnd.output_length(total)
            if final
            else int(front_end_outputs_ready(stable_frames))
        )
        outputs = []
        while state.frames_done < ready:
            size = min(self.chunk_frames, ready - state.frames_done)
            if size < self.chunk_frames and not final:
                break
            memory, caches = self._compiled_chunk(
                features, *(tf.constant(n) for n in (state.frames_done, size, total)),
                state.layer_caches,
            )  # fmt: skip
            state = EncoderState(state.frames_done + size, caches)
            outputs.append(memory)
        if not outputs:
            return ops.zeros((1, 0, self.model.hidden_size)), state
        return ops.concatenate(outputs, axis=1), state
