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
t2t-lite. The state is plain tensors (`StreamingGraph.state_names`): the
incremental featurizer's (`featurizer.STATE`: each step featurizes only its
new audio), the feature frames still to be read (`features`, from frame
`features_start`: the encoder's next window and the word boundary head's
next frames), the boundary head's (`streaming_boundary_head.STATE`, for a model with
one), the encoder frames emitted, every encoder layer's keys, values and
causal convolution inputs, stacked, and the encoder output so far. The
signatures carry it at fixed shapes (`state.FixedSizeState`: the growing
tensors padded to the longest utterance, decode hparam
`endpoint_max_utterance_seconds` plus one chunk, each with a `<name>_length`),
so a client's request is the same size every chunk. Each step
encodes the chunks of `chunk_frames` encoder frames the features so far
complete (`encoder.StreamingEncoder.encode_chunk`, in a `tf.while_loop`);
the partial is the CTC prefix beam search's over the new encoder frames
(`ctc_prefix_beam_search`, its beams in the state: the Python recognizer's
partial), and `trailing_blank_frames` the encoder frames since the CTC
head's best path's last label (what a server endpoints on, WeNet's rule:
`streaming/endpoint.py`).
`stream_final` encodes the rest and runs the joint CTC/attention beam search
over the streamed encoder output (`stream_final="search"`); given a
`WordTimer`, it times the final's words as the decoder and the Python
recognizer do (the CTC alignment over the streamed encoder output, refined
by the word boundary head's probabilities, computed as the frames arrived,
where the model has one), in the utterance's clock. `StreamingRecognizer`
is a loop over the same `advance`, `search` and `word_times`, and the
on-device `stream_step.tflite` is `step` at fixed shapes
(`serving/tflite_stream_export.py`, `state.FixedSizeState`).
"""

from __future__ import annotations

import tensorflow as tf

from t2t_lite.data.audio_features import zero_non_finite
from t2t_lite.data.speech_features import num_frames
from t2t_lite.decoding.audio.transcriber import encoded_word_times
from t2t_lite.decoding.decode_config import DecodeConfig, has_ctc_head
from t2t_lite.decoding.run_config import RunConfig
from t2t_lite.decoding.search.model_search import decode_cap, model_search
from t2t_lite.decoding.timing.word_times import WordTimer, WordTimes
from t2t_lite.layers.speech_front_end import SpeechFrontEnd
from t2t_lite.streaming import ctc_prefix_beam_search as prefix_search
from t2t_lite.streaming import featurizer as incremental
from t2t_lite.streaming import streaming_boundary_head
from t2t_lite.streaming.ctc_prefix_beam_search import CtcPrefixBeamSearch
from t2t_lite.streaming.encoder import StreamingEncoder, front_end_outputs_ready
from t2t_lite.streaming.state import FixedSizeState, empty_state, with_shape

# The encoder's state tensors, after the featurizer's and the boundary head's.
ENCODER_STATE = ("frames_done", "keys", "values", "conv_inputs", "memory")


def can_stream(model) -> bool:
    """Whether an export of `model` streams.

    It does for a speech model trained with `use_dynamic_chunk`, with a CTC
    head (partials, endpoints).
    """
    return (
        model.input_modality == "speech"
        and has_ctc_head(model)
        and bool(model.config.use_dynamic_chunk)
    )


class StreamingGraph:
    """`start`, `step` and `final` of a streaming model as graph-friendly functions.

    Args:
        model: a speech `Transformer` trained with `use_dynamic_chunk`, with a CTC head.
        run_config: the run's `RunConfig` (audio front end, length limits).
        decode_config: resolved decode hparams (the final search's).
        chunk_frames: encoder frames per chunk.
        word_timer: times the final's words, or None (no word times).
        target_surfaces: the targets' `token_surfaces()` (a word n-gram LM
            in the final search spells with them).
    """

    def __init__(
        self,
        model,
        run_config: RunConfig,
        decode_config: DecodeConfig,
        chunk_frames: int,
        word_timer: WordTimer | None = None,
        target_surfaces: list[bytes] | None = None,
    ):
        self.encoder = StreamingEncoder(model, chunk_frames, decode_config.left_chunks)
        self.word_timer = word_timer
        self.target_surfaces = target_surfaces
        self.featurizer = incremental.IncrementalFeaturizer(run_config.features)
        self.sample_rate = self.featurizer.config.sample_rate
        self.model, self.decode_config = model, decode_config
        self.chunk_frames = chunk_frames
        # A chunk's samples: 4 feature frames an encoder frame.
        step_samples = self.featurizer.config.frame_step_samples
        self.chunk_samples = chunk_frames * SpeechFrontEnd.frames_per_output()[0] * step_samples
        self.cap = decode_cap(run_config, decode_config)
        # The longest utterance a stream's state holds: the endpoint rules'
        # (`endpoint_max_utterance_seconds`) and the chunk that crosses it.
        self.max_utterance_samples = (
            int(decode_config.endpoint_max_utterance_seconds * self.sample_rate)
            + self.chunk_samples
        )
        self.max_feature_frames = int(
            num_frames(tf.constant(self.max_utterance_samples), self.featurizer.config)
        )
        self.max_encoder_frames = SpeechFrontEnd.output_length(self.max_feature_frames)
        # The partial's search (a CTC path has no more labels than frames).
        self.prefix_search = CtcPrefixBeamSearch(decode_config.beam_size, self.max_encoder_frames)
        layer = model.encoder_layers[0]
        self._layers = len(model.encoder_layers)
        self._heads = layer.num_heads
        self._key_depth = layer.key_channels // layer.num_heads
        self._value_depth = layer.value_channels // layer.num_heads
        self._conv = layer.conv_first_kernel - 1 if layer.ffn_layer == "conv_relu_conv" else 0
        head = getattr(model, "word_boundary_head", None)
        self.boundary = (
            streaming_boundary_head.StreamingBoundaryHead(head)
            if head is not None and word_timer is not None
            else None
        )
        # The state tensors, in signature order.
        self.state_names = (
            *incremental.STATE,
            "features",
            "features_start",
            *(streaming_boundary_head.STATE if self.boundary else ()),
            *ENCODER_STATE,
            *prefix_search.STATE,
        )

    def state_spec(self) -> dict[str, tf.TensorSpec]:
        """The state's shapes: time axes grow, the rest is fixed."""
        hidden, layers, heads = self.model.hidden_size, self._layers, self._heads
        bins, channels = self.featurizer.bins, self.featurizer.channels
        return {
            **self.featurizer.state_spec(),
            "features": tf.TensorSpec([1, None, bins, channels], tf.float32, name="features"),
            "features_start": tf.TensorSpec([], tf.int32, name="features_start"),
            **(self.boundary.state_spec() if self.boundary else {}),
            "frames_done": tf.TensorSpec([], tf.int32, name="frames_done"),
            "keys": tf.TensorSpec([layers, 1, heads, None, self._key_depth], tf.float32, "keys"),
            "values": tf.TensorSpec(
                [layers, 1, heads, None, self._value_depth], tf.float32, "values"
            ),
            "conv_inputs": tf.TensorSpec(
                [layers, 1, self._conv, hidden], tf.float32, "conv_inputs"
            ),
            "memory": tf.TensorSpec([1, None, hidden], tf.float32, name="memory"),
            **self.prefix_search.state_spec(),
        }

    def start(self) -> dict[str, tf.Tensor]:
        """The state before the first chunk."""
        # The featurizer's totals start at its prior, the search at one
        # empty prefix; all else is empty or zero.
        return {
            **empty_state(self.state_spec()),
            **self.featurizer.initial_state(),
            **self.prefix_search.initial_state(),
        }

    def _caches(self, state) -> list[dict]:
        caches = []
        for i in range(self._layers):
            cache = {"keys": state["keys"][i], "values": state["values"][i]}
            if self._conv:
                cache["ffn"] = state["conv_inputs"][i]
            caches.append(cache)
        return caches

    def advance(self, waveform, state: dict, final: bool = False) -> tuple[dict, tf.Tensor]:
        """`(state, frames)`: the state after `waveform`, and the utterance's feature frames.

        The state after featurizing `waveform`, encoding what the features so
        far make ready (with `final`: all of it) and the CTC prefix search
        over the new encoder frames (the partial's); the frames are 0 while
        the utterance has no speech.

        Args:
            waveform: float32 `[1, samples]`, finite.
            state: `start()` or the previous step's.
            final: the utterance ends after `waveform`.
        """
        previous = state
        new, feature_state = self.featurizer.step(
            waveform, {name: state[name] for name in incremental.STATE}, final
        )
        buffer = tf.concat([state["features"], new], axis=1)  # frames from `start` on
        start = state["features_start"]
        # As the decoder decodes nothing of audio without speech (its frames wait).
        no_speech = (
            self.featurizer.level_dbfs(feature_state) < self.decode_config.silence_dbfs
        ) | (feature_state["samples"] < self.featurizer.config.frame_length_samples)
        frames = tf.where(no_speech, 0, start + tf.shape(buffer)[1])
        if final:
            ready = SpeechFrontEnd.output_length(frames)
        else:
            ready = front_end_outputs_ready(frames)
        chunk = self.chunk_frames

        def more(done, caches, memory):
            left = ready - done
            return left > 0 if final else left >= chunk

        def encode(done, caches, memory):
            size = tf.minimum(chunk, ready - done)
            new, caches = self.encoder.encode_chunk(buffer, done, size, frames, caches, start)
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
        # The partial's CTC prefix search over the new encoder frames.
        new_memory = memory[:, previous["frames_done"] :]
        searched = self.prefix_search.advance(
            self.model.ctc_log_probs(new_memory),
            tf.shape(new_memory)[1],
            {name: previous[name] for name in prefix_search.STATE},
        )
        state = {
            **feature_state,
            **searched,
            "frames_done": done,
            "keys": tf.stack([c["keys"] for c in caches]),
            "values": tf.stack([c["values"] for c in caches]),
            "conv_inputs": (
                with_shape(tf.stack([c["ffn"] for c in caches]), state["conv_inputs"].shape)
                if self._conv
                else state["conv_inputs"]
            ),
            "memory": memory,
        }
        # The frames the encoder's next window and the boundary head still read.
        keep = SpeechFrontEnd.input_frames_seen(done)[0]
        if self.boundary:
            heard = tf.maximum(frames - start, 0)  # (the buffer's frames with speech)
            probs_state = {name: previous[name] for name in streaming_boundary_head.STATE}
            begin = tf.minimum(probs_state["boundary_frames"] - start, heard)
            _, probs_state = self.boundary.step(buffer[:, begin:heard], memory, probs_state, final)
            state.update(probs_state)
            keep = tf.minimum(keep, probs_state["boundary_frames"])
        keep = tf.clip_by_value(keep, start, start + tf.shape(buffer)[1])
        state["features"] = buffer[:, keep - start :]
        state["features_start"] = keep
        return state, frames

    def _nonempty(self, memory):
        """`(memory, frames)`: an empty memory as one zero frame of length 0.

        The searches need a frame; length 0 decodes to nothing.
        """
        frames = tf.shape(memory)[1:2]
        padded = tf.pad(memory, [[0, 0], [0, tf.maximum(1 - frames[0], 0)], [0, 0]])
        return padded, frames

    def step(self, waveform, state: dict) -> tuple[tf.Tensor, tf.Tensor, dict]:
        """`(partial ids [1, labels], trailing blank frames [], state)` after `waveform`.

        `waveform` is `[1, samples]`. The partial is the CTC prefix search's
        best prefix; the trailing blank frames, the frames since the CTC
        head's best path's last label.
        """
        waveform = zero_non_finite(waveform)  # where a client's audio enters
        state, _ = self.advance(waveform, state)
        search = self.prefix_search
        return search.best(state), search.trailing_blank_frames(state), state

    def final(self, state: dict) -> tuple[tf.Tensor, tf.Tensor, WordTimes | None]:
        """`(ids [1, length], score [1], word times)`: the utterance's final transcript.

        Its words' times given a `word_timer`, else None.
        """
        state, frames = self.advance(tf.zeros([1, 0]), state, final=True)
        ids, scores = self.search(state["memory"])
        return ids, scores, self.word_times(state, frames, ids)

    def search(self, memory) -> tuple[tf.Tensor, tf.Tensor]:
        """`(ids [1, length], score [1])`: the joint search over the streamed encoder output.

        The output is `memory` `[1, frames, hidden]`.
        """
        memory, frames = self._nonempty(memory)
        ids, scores = model_search(
            self.model, {"inputs_length": frames}, self.decode_config, self.cap,
            encoded=(memory, tf.sequence_mask(frames, tf.shape(memory)[1], tf.float32)),
            target_surfaces=self.target_surfaces,
        )  # fmt: skip
        return ids[:, 0], scores[:, 0]

    def word_times(self, state: dict, feature_frames, ids) -> WordTimes | None:
        """The times of `ids` `[1, length]`'s words in the ended utterance.

        `state` is after `advance(..., final=True)`, which gave
        `feature_frames`. The words are timed as the decoder times them; None
        without a `word_timer`.
        """
        if self.word_timer is None:
            return None
        memory, frames = self._nonempty(state["memory"])
        timing = {
            "ctc_log_probs": self.model.ctc_log_probs(memory),
            # The frames the final search read: every one the stream emitted.
            "encoded_lengths": frames,
            "frame_lengths": tf.reshape(feature_frames, [1]),  # where the audio ends
        }
        if self.boundary:
            timing["boundary_probs"] = state["boundary_probs"]
        offsets = tf.cast(state["cut"][None], tf.float32) / self.sample_rate
        return encoded_word_times(timing, self.word_timer, ids, offsets)


def check_exported_final(decode_config: DecodeConfig) -> None:
    """Refuses decode hparams asking an export for a final it cannot give.

    An export's `stream_final` is the joint search; `stream_final="rescore"`
    (U2's second pass, `rescoring.rescore`) runs in NumPy, eagerly, in the
    Python recognizer only, so an export made with it would silently give
    another final than asked.

    Raises:
        ValueError: `stream_final` other than "search".
    """
    if decode_config.stream_final != "search":
        raise ValueError(
            f"decode hparam stream_final={decode_config.stream_final} is the Python "
            "recognizer's alone: an export's streamed final is the joint search; export "
            "with stream_final=search."
        )


def streaming_functions(graph: StreamingGraph, target_encoder) -> dict:
    """The three signatures' `tf.function`s: `stream_start`, `stream_step`
    and `stream_final` (see the module docstring), text by `target_encoder`,
    the state at fixed shapes (`state.FixedSizeState`, for the longest
    utterance of the decode hparam `endpoint_max_utterance_seconds`).

    Raises:
        ValueError: see `check_exported_final`.
    """
    check_exported_final(graph.decode_config)
    fixed = FixedSizeState(graph)
    spec, names = fixed.spec(), fixed.names
    state_signature = list(spec.values())
    waveform = tf.TensorSpec([1, None], tf.float32, name="waveform")

    def state_of(values) -> dict:
        return fixed.unpad(dict(zip(names, values, strict=True)))

    @tf.function(input_signature=[])
    def stream_start():
        return fixed.pad(graph.start())

    @tf.function(input_signature=[waveform, *state_signature])
    def stream_step(waveform, *values):
        ids, blanks, state = graph.step(waveform, state_of(values))
        return {
            "partial": target_encoder.tf_decode(ids),
            "trailing_blank_frames": blanks,
            **fixed.pad(state),
        }

    @tf.function(input_signature=state_signature)
    def stream_final(*values):
        ids, scores, times = graph.final(state_of(values))
        outputs = {"outputs": target_encoder.tf_decode(ids), "scores": scores}
        return outputs if times is None else {**outputs, **times._asdict()}

    return {"stream_start": stream_start, "stream_step": stream_step, "stream_final": stream_final}
