"""Chunked self-attention for streaming: U2's dynamic chunk training.

A streaming encoder cannot wait for the end of the utterance. U2 (Zhang et
al. 2020, "Unified Streaming and Non-streaming Two-pass End-to-end Model",
WeNet) splits the encoder frames into chunks of `chunk_frames` and lets
every frame attend to its own chunk and every chunk before it, so a chunk's
outputs are final as soon as its frames have arrived. Trained with a chunk
size drawn anew for each batch (full context half of the time, otherwise
1 to 25 frames, as WeNet draws it), one model serves every chunk size at
decoding time, full context included.

A stream of any length needs a bounded left context too: U2++ (Wu et al.
2021) also lets a frame see only the `left_chunks` chunks before its own,
and draws that number per batch in training (`use_dynamic_left_chunk`), so
one model serves any limit (WeNet's `num_decoding_left_chunks`). Here
`left_chunks <= 0` is unlimited, as the decode hparam `left_chunks=0`.

Example:
>>> import numpy as np
>>> np.asarray(chunk_attention_mask(5, 2)).astype(int)
array([[1, 1, 0, 0, 0],
       [1, 1, 0, 0, 0],
       [1, 1, 1, 1, 0],
       [1, 1, 1, 1, 0],
       [1, 1, 1, 1, 1]])
"""

from __future__ import annotations

import keras
from keras import ops

# WeNet's draw: full context with probability 1/2, else a chunk of 1..25 frames.
FULL_CONTEXT_PROBABILITY = 0.5
MAX_DRAWN_CHUNK_FRAMES = 25


def chunk_attention_mask(length, chunk_frames, left_chunks=0):
    """bool `[length, length]`: which keys each query sees under chunked attention.

    Query `i` sees key `j` when `j`'s chunk is not after `i`'s
    (`j // chunk_frames <= i // chunk_frames`) and, with `left_chunks > 0`,
    at most `left_chunks` chunks before it.

    Args:
        length: frames (int or scalar tensor).
        chunk_frames: frames per chunk (int or scalar tensor, >= 1); the
            utterance's length or more is full context.
        left_chunks: chunks before its own a frame sees (int or scalar
            tensor); 0 or less: all of them.

    Example:
    >>> import numpy as np
    >>> np.asarray(chunk_attention_mask(6, 2, left_chunks=1)).astype(int)[-1]
    array([0, 0, 1, 1, 1, 1])
    """
    chunk = ops.arange(length, dtype="int32") // ops.cast(chunk_frames, "int32")
    query, key = ops.expand_dims(chunk, 1), ops.expand_dims(chunk, 0)
    left = ops.cast(left_chunks, "int32")
    return (key <= query) & ((left <= 0) | (key >= query - left))


def draw_chunk_frames(length, seed_generator: keras.random.SeedGenerator):
    """One training batch's chunk size (int32 scalar): full context or a drawn size.

    It is `length` (full context) with `FULL_CONTEXT_PROBABILITY`, else uniform
    in `1..MAX_DRAWN_CHUNK_FRAMES`.
    """
    full = keras.random.uniform((), seed=seed_generator) < FULL_CONTEXT_PROBABILITY
    drawn = keras.random.randint(
        (), 1, MAX_DRAWN_CHUNK_FRAMES + 1, dtype="int32", seed=seed_generator
    )
    return ops.where(full, ops.cast(length, "int32"), drawn)


def draw_left_chunks(length, chunk_frames, seed_generator: keras.random.SeedGenerator):
    """One training batch's left context in chunks (int32 scalar), U2++'s draw.

    It is uniform in `0 .. chunks - 1` for the `chunks` of `chunk_frames`
    that `length` frames hold, where 0 is unlimited (a chunk size of full
    context has one chunk: always unlimited).
    """
    chunks = (ops.cast(length, "int32") - 1) // ops.cast(chunk_frames, "int32") + 1
    uniform = keras.random.uniform((), seed=seed_generator)
    return ops.minimum(ops.cast(uniform * ops.cast(chunks, "float32"), "int32"), chunks - 1)
