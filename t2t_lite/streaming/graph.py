"""Streaming as TF functions with explicit state: the SavedModel's signatures.

    state = serve.signatures["stream_start"]()
    for chunk in chunks:                                 # float32 [1, samples]
        out = serve.signatures["stream_step"](waveform=chunk, **state)
        print(out.pop("partial"))                       # the partial transcript
        out.pop("trailing_blank_frames")                # for endpointing
        state = out                                      # everything else
    final = serve.signatures["stream_final"](**state)
    final["outputs"], final["words"], final["starts"]  # its text and timed words

A serving process keeps one `state` per connection and needs nothing of
t2t-lite. The state is plain tensors (`STATE`): the audio so far (the
featurization is computed again over it, as `StreamingRecognizer` does),
the encoder frames emitted, every encoder layer's keys, values and causal
convolution inputs, stacked, and the encoder output so far. Each step
encodes the chunks of `chunk_frames` encoder frames the stable audio
completes (`encoder.StreamingEncoder.encode_chunk`, in a `tf.while_loop`);
the partial is the CTC head's best path over the encoder output so far
(in-graph; the Python recognizer's partial is the CTC prefix search's), and
`trailing_blank_frames` the encoder frames since its last label (what a
server endpoints on, WeNet's rule: `streaming/endpoint.py`).
`stream_final` encodes the rest and runs the joint CTC/attention beam search
over the streamed encoder output (`stream_final="search"`); given a
`WordTimer`, it times the final's words as the decoder and the Python
recognizer do (the CTC alignment over the streamed encoder output, refined
by the word boundary head over the utterance's features where the model has
one), in the utterance's clock.
"""

from __future__ import annotations

import tensorflow as tf

from t2t_lite.data.audio_features import zero_non_finite
from t2t_lite.data.feature_config import FeatureConfig
from t2t_lite.data.reserved_ids import is_label
from t2t_lite.decoding.audio.transcriber import encoded_word_times, piece_features, timing_inputs
from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.decoding.search.ctc_greedy import ctc_greedy_decode
from t2t_lite.decoding.search.model_search import decode_cap, model_search
from t2t_lite.decoding.timing.word_times import WordTimer, WordTimes
from t2t_lite.hparam import HParams
from t2t_lite.layers.speech_front_end import SpeechFrontEnd
from t2t_lite.streaming.encoder import StreamingEncoder, front_end_outputs_ready
from t2t_lite.streaming.recognizer import feature_lookahead_frames

# The state tensors, in signature order.
STATE = ("samples", "frames_done", "keys", "values", "conv_inputs", "memory")


class StreamingGraph:
    """`start`, `step` and `final` of a streaming model as graph-friendly functions.

    Args:
        model: a speech `Transformer` trained with `use_dynamic_chunk`, with a CTC head.
        hparams: its hparams.
        decode_config: resolved decode hparams (the final search's).
        chunk_frames: encoder frames per chunk.
        word_timer: times the final's words, or None (no word times).
    """

    def __init__(
        self,
        model,
        hparams: HParams,
        decode_config: DecodeConfig,
        chunk_frames: int,
        word_timer: WordTimer | None = None,
    ):
        self.encoder = StreamingEncoder(model, chunk_frames, decode_config.left_chunks)
        self.word_timer = word_timer
        self.sample_rate = FeatureConfig.from_hparams(hparams).sample_rate
        self.model, self.hparams, self.decode_config = model, hparams, decode_config
        self.chunk_frames = chunk_frames
        self.cap = decode_cap(hparams, decode_config)
        self.lookahead = feature_lookahead_frames(hparams)
        layer = model.encoder_layers[0]
        self._layers = len(model.encoder_layers)
        self._heads = layer.num_heads
        self._key_depth = layer.key_channels // layer.num_heads
        self._value_depth = layer.value_channels // layer.num_heads
        self._conv = layer.conv_first_kernel - 1 if layer.ffn_layer == "conv_relu_conv" else 0

    def state_spec(self) -> dict[str, tf.TensorSpec]:
        """The state's shapes: time axes grow, the rest is fixed."""
        hidden, layers, heads = self.model.hidden_size, self._layers, self._heads
        return {
            "samples": tf.TensorSpec([1, None], tf.float32, name="samples"),
            "frames_done": tf.TensorSpec([], tf.int32, name="frames_done"),
            "keys": tf.TensorSpec([layers, 1, heads, None, self._key_depth], tf.float32, "keys"),
            "values": tf.TensorSpec(
                [layers, 1, heads, None, self._value_depth], tf.float32, "values"
            ),
            "conv_inputs": tf.TensorSpec(
                [layers, 1, self._conv, hidden], tf.float32, "conv_inputs"
            ),
            "memory": tf.TensorSpec([1, None, hidden], tf.float32, name="memory"),
        }

    def start(self) -> dict[str, tf.Tensor]:
        """The state before the first chunk."""
        spec = self.state_spec()
        return {
            name: tf.zeros([0 if d is None else d for d in s.shape], s.dtype)
            for name, s in spec.items()
        }

    def _caches(self, state) -> list[dict]:
        caches = []
        for i in range(self._layers):
            cache = {"keys": state["keys"][i], "values": state["values"][i]}
            if self._conv:
                cache["ffn"] = state["conv_inputs"][i]
            caches.append(cache)
        return caches

    def _advance(self, state: dict, final: bool) -> tuple[dict, dict, tf.Tensor]:
        """`(state, features, cut)`: the state after encoding what the audio so
        far makes ready, the audio's features and the leading zero samples
        cut before featurizing (`piece_features`)."""
        samples = state["samples"]
        features, cut = piece_features(
            samples, tf.shape(samples)[1:2], self.hparams, self.decode_config
        )
        frames = features["inputs_length"][0]
        inputs = features["inputs"][:, :frames]
        if final:
            ready = SpeechFrontEnd.output_length(frames)
        else:
            ready = front_end_outputs_ready(tf.maximum(frames - self.lookahead, 0))
        chunk = self.chunk_frames

        def more(done, caches, memory):
            left = ready - done
            return left > 0 if final else left >= chunk

        def encode(done, caches, memory):
            size = tf.minimum(chunk, ready - done)
            new, caches = self.encoder.encode_chunk(inputs, done, size, frames, caches)
            return done + size, caches, tf.concat([memory, new], axis=1)

        caches = self._caches(state)
        # Keys and values grow along time; the convolution's inputs keep their
        # length, but a chunk of dynamic size hides it from the slice.
        growing = [
            {name: tf.TensorShape([1, self._heads, None, c.shape[-1]]) if name != "ffn"
             else tf.TensorShape([1, None, c.shape[-1]]) for name, c in cache.items()}
            for cache in caches
        ]  # fmt: skip
        done, caches, memory = tf.while_loop(
            more,
            encode,
            (state["frames_done"], caches, state["memory"]),
            shape_invariants=(
                tf.TensorShape([]),
                growing,
                tf.TensorShape([1, None, self.model.hidden_size]),
            ),
        )
        state = {
            "samples": samples,
            "frames_done": done,
            "keys": tf.stack([c["keys"] for c in caches]),
            "values": tf.stack([c["values"] for c in caches]),
            "conv_inputs": (
                tf.ensure_shape(tf.stack([c["ffn"] for c in caches]), state["conv_inputs"].shape)
                if self._conv
                else state["conv_inputs"]
            ),
            "memory": memory,
        }
        return state, features, cut

    def _nonempty(self, memory):
        """`(memory, frames)`: an empty memory as one zero frame of length 0
        (the searches need a frame; length 0 decodes to nothing)."""
        frames = tf.shape(memory)[1:2]
        padded = tf.pad(memory, [[0, 0], [0, tf.maximum(1 - frames[0], 0)], [0, 0]])
        return padded, frames

    def step(self, waveform, state: dict) -> tuple[tf.Tensor, tf.Tensor, dict]:
        """`(partial ids [1, frames], trailing blank frames [], state)` after
        `waveform` `[1, samples]`."""
        waveform = zero_non_finite(waveform)  # where a client's audio enters
        state = dict(state, samples=tf.concat([state["samples"], waveform], axis=1))
        state, _, _ = self._advance(state, final=False)
        memory, frames = self._nonempty(state["memory"])
        log_probs = self.model.ctc_log_probs(memory)
        ids, _ = ctc_greedy_decode(log_probs, frames)
        return ids, trailing_blank_frames(log_probs[0], frames[0]), state

    def final(self, state: dict) -> tuple[tf.Tensor, tf.Tensor, WordTimes | None]:
        """`(ids [1, length], score [1], word times)`: the final transcript
        of the utterance, and its words' times given a `word_timer` (else None)."""
        state, features, cut = self._advance(state, final=True)
        memory, frames = self._nonempty(state["memory"])
        ids, scores = model_search(
            self.model, {"inputs_length": frames}, self.decode_config, self.cap,
            encoded=(memory, tf.sequence_mask(frames, tf.shape(memory)[1], tf.float32)),
        )  # fmt: skip
        ids, scores = ids[:, 0], scores[:, 0]
        if self.word_timer is None:
            return ids, scores, None
        timing = timing_inputs(self.model, features, memory)
        # The frames the final search read: every one the stream emitted.
        timing["encoded_lengths"] = frames
        offsets = tf.cast(cut, tf.float32) / self.sample_rate
        return ids, scores, encoded_word_times(timing, self.word_timer, ids, offsets)


def trailing_blank_frames(log_probs, frames):
    """Frames at the end of `log_probs` `[frames, vocab]` (the first `frames`
    real) whose best label is no label (blank or EOS): all of them before the
    first label.

    Example:
    ```python
    # best labels 0 5 0 0 (blank = 0) -> 2
    ```
    """
    best = tf.argmax(log_probs[:frames], axis=-1, output_type=tf.int32)
    label = is_label(best)
    # -1 when no frame has a label (or there is no frame: max of nothing is not -1).
    last = tf.reduce_max(tf.concat([[-1], tf.where(label, tf.range(frames), -1)], axis=0))
    return frames - 1 - last


def streaming_functions(graph: StreamingGraph, target_encoder) -> dict:
    """The three signatures' `tf.function`s: `stream_start`, `stream_step`
    and `stream_final` (see the module docstring), text by `target_encoder`."""
    spec = graph.state_spec()
    state_signature = [spec[name] for name in STATE]
    waveform = tf.TensorSpec([1, None], tf.float32, name="waveform")

    @tf.function(input_signature=[])
    def stream_start():
        return graph.start()

    @tf.function(input_signature=[waveform, *state_signature])
    def stream_step(waveform, samples, frames_done, keys, values, conv_inputs, memory):
        state = dict(zip(STATE, (samples, frames_done, keys, values, conv_inputs, memory),
                         strict=True))  # fmt: skip
        ids, blanks, state = graph.step(waveform, state)
        return {
            "partial": target_encoder.tf_decode(ids), "trailing_blank_frames": blanks, **state
        }

    @tf.function(input_signature=state_signature)
    def stream_final(samples, frames_done, keys, values, conv_inputs, memory):
        state = dict(zip(STATE, (samples, frames_done, keys, values, conv_inputs, memory),
                         strict=True))  # fmt: skip
        ids, scores, times = graph.final(state)
        outputs = {"outputs": target_encoder.tf_decode(ids), "scores": scores}
        return outputs if times is None else {**outputs, **times._asdict()}

    return {"stream_start": stream_start, "stream_step": stream_step, "stream_final": stream_final}
