"""A streaming model as two `.tflite`s of builtin ops: a chunk step and a final.

    files, stream_manifest = stream_files(model, run_config, decode_config, convert, "int8")

gives what `tflite_export.export_tflite` writes beside `model.tflite` for a
streaming model, and `litert.stream` runs without TensorFlow:

- `stream_step.tflite`: the SavedModel's `stream_step` graph
  (`StreamingGraph.step`: incremental featurization, the encoder's chunks
  with their caches, the CTC prefix beam search over the new frames) at
  fixed shapes. Inputs: `waveform` float32 `[1, chunk_samples]` of which the
  first `valid_samples` (int32 `[]`) are audio, and the state; outputs: the
  state, the partial's ids (`partial_ids` `[1, max_frames]`, the first
  `partial_length` real) and `trailing_blank_frames` (what the endpoint
  rules read).
- `stream_final.tflite`: the state -> the rest encoded, and the joint
  CTC/attention search over the utterance's encoder output at fixed shapes
  (`model_search(fixed_shapes=True)`, as `model.tflite`'s): `ids` `[1, cap]`
  and `score` `[1]`.
- `stream_state.npz`: the state before an utterance's first sample.

The state is `state.FixedSizeState`'s: every tensor a fixed size, each
growing one padded to what the longest utterance holds (the decode hparam
`endpoint_max_utterance_seconds`, plus one chunk); the runner ends an
utterance there, as the endpoint rules do. The chunk is the decode hparam
`chunk_frames` (default 16 encoder frames, 640 ms), the left context
`left_chunks`, as the SavedModel's.
"""

from __future__ import annotations

import io

import numpy as np
import tensorflow as tf

from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.decoding.run_config import RunConfig
from t2t_lite.decoding.search.model_search import model_search
from t2t_lite.decoding.timing.word_times import encoder_frame_seconds
from t2t_lite.export_manifest import FINAL_FILE, STATE_FILE, STEP_FILE, StreamManifest
from t2t_lite.serving.serving_module import DEFAULT_CHUNK_FRAMES
from t2t_lite.streaming.graph import StreamingGraph, check_exported_final
from t2t_lite.streaming.state import FixedSizeState


def stream_graphs(model, run_config: RunConfig, decode_config: DecodeConfig):
    """The two fixed-shape streaming `tf.function`s, their state and the chunk's fields.

    `(step, final, fixed, chunk fields)`: the two `tf.function`s, their
    `FixedSizeState`, and the chunk's `StreamManifest` fields (what the
    runner needs to know).

    Raises:
        ValueError: see `check_exported_final`.
    """
    check_exported_final(decode_config)
    chunk_frames = decode_config.chunk_frames or DEFAULT_CHUNK_FRAMES
    graph = StreamingGraph(model, run_config, decode_config, chunk_frames)
    chunk_samples = graph.chunk_samples
    fixed = FixedSizeState(graph)
    spec, names = fixed.spec(), fixed.names
    frames = graph.max_encoder_frames  # (the most labels a partial has)

    def state_of(values):
        return fixed.unpad(dict(zip(names, values, strict=True)))

    @tf.function(
        input_signature=[
            tf.TensorSpec([1, chunk_samples], tf.float32, name="waveform"),
            tf.TensorSpec([], tf.int32, name="valid_samples"),
            *spec.values(),
        ]
    )
    def step(waveform, valid_samples, *values):
        ids, blanks, state = graph.step(waveform[:, :valid_samples], state_of(values))
        length = tf.shape(ids)[1]
        ids = tf.pad(ids, [[0, 0], [0, frames - length]])
        return {
            "partial_ids": tf.reshape(ids, [1, frames]),
            "partial_length": length,
            "trailing_blank_frames": blanks,
            **fixed.pad(state, checked=False),
        }

    @tf.function(input_signature=list(spec.values()))
    def final(*values):
        state, _ = graph.advance(tf.zeros([1, 0]), state_of(values), final=True)
        memory = state["memory"]
        length = tf.shape(memory)[1:2]
        memory = tf.pad(memory, [[0, 0], [0, frames - length[0]], [0, 0]])
        memory = tf.reshape(memory, [1, frames, model.hidden_size])
        mask = tf.sequence_mask(length, frames, tf.float32)
        ids, scores = model_search(
            model, {"inputs_length": length}, decode_config, graph.cap,
            encoded=(memory, mask), fixed_shapes=True,
        )  # fmt: skip
        return {"ids": ids[:, 0], "score": scores[:, 0]}

    frame_seconds = encoder_frame_seconds(run_config.features)[0]
    chunk_fields = {
        "chunk_frames": chunk_frames,
        "chunk_samples": chunk_samples,
        "chunk_seconds": chunk_frames * frame_seconds,
        "frame_seconds": frame_seconds,
        "max_utterance_samples": fixed.max_samples,
    }
    return step, final, fixed, chunk_fields


def initial_state_npz(fixed: FixedSizeState) -> bytes:
    """`stream_state.npz`'s bytes: the padded state before a first sample."""
    state = fixed.pad(fixed.graph.start(), checked=False)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **{name: np.asarray(state[name]) for name in fixed.names})
    return buffer.getvalue()


def stream_files(model, run_config: RunConfig, decode_config: DecodeConfig, convert, quantization):
    """`({file name: bytes}, StreamManifest)`: a streaming model's streaming files.

    Each is converted by `convert(function, quantization)`.
    """
    step, final, fixed, chunk_fields = stream_graphs(model, run_config, decode_config)
    files = {
        STEP_FILE: convert(step, quantization),
        FINAL_FILE: convert(final, quantization),
        STATE_FILE: initial_state_npz(fixed),
    }
    return files, StreamManifest(
        # The converter names outputs Identity, Identity_1, ... in the order a
        # dict flattens: by key.
        step_outputs=sorted(step.get_concrete_function().structured_outputs),
        final_outputs=sorted(final.get_concrete_function().structured_outputs),
        bytes={name: len(blob) for name, blob in files.items()},
        **chunk_fields,
    )
