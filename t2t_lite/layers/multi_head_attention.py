"""T2T's multi-head dot-product attention with an incremental-decoding cache.

Optionally with T2T's `dot_product_relative` self-attention (Shaw et al.
2018): learned embeddings of the clipped key-minus-query distance, added to
the keys when scoring and to the values when combining.
"""

from collections.abc import Sequence

import keras
import numpy as np
from keras import ops

from t2t_lite.layers._utils import (
    clone_initializer,
    make_dropout,
    validate_broadcast_dims,
    validate_rate,
)
from t2t_lite.layers.attention_matmul import attention_matmul

# T2T's `large_compatible_negative` for float32: added to the logits of keys a
# query may not attend to. The logits are float32 here, so it never overflows.
_MASK_NEGATIVE = -1e9

# Positions a growing decode cache gains when full.
CACHE_BLOCK = 16


@keras.saving.register_keras_serializable(package="t2t_lite")
class MultiHeadAttention(keras.layers.Layer):
    """Multi-head scaled dot-product attention, as T2T's `multihead_attention`.

    Queries, keys and values are projected without bias, split into
    `num_heads` heads, the queries scaled by `depth_per_head ** -0.5`, the
    logits masked and softmaxed in float32, the weights dropped out (with
    T2T's broadcast dims over `[batch, heads, query, key]`), and the combined
    heads projected to `output_channels` without bias.

    Incremental decoding uses an explicit cache, the pair `(keys, values)`,
    each `[batch, num_heads, length, depth_per_head]`: heads before positions,
    the layout the two attention matmuls read, so a decode step never
    transposes the cache (at 256 steps those copies were two thirds of a
    step). Three ways to use one, each returning `(output, new_cache)`:

    - self-attention, fixed length (XLA, T2T's TPU path): pass `cache` from
      `initial_cache(batch, max_length)` and the scalar int
      `cache_update_index`; the new keys/values of `query` are written at that
      index and the query attends to the positions up to it (or as
      `attention_mask` says).
    - self-attention, growing (CPU/GPU decoding): the same from
      `initial_cache(batch, 0)` with `grow_cache=True`: a cache with no room
      at the index first grows by `CACHE_BLOCK` positions, so a step costs
      what the prefix holds, not what a fixed length allows. (Growing by one
      position a step, as T2T's concatenation did, allocates a new size
      every step; in blocks the buffers of consecutive steps are reused.)
    - encoder-decoder attention: pass the `cache` returned by
      `compute_memory_cache(memory)` and no index; it is used as the keys and
      values as is.

    With `max_relative_position > 0` the layer is T2T's relative
    self-attention (`self_attention_type="dot_product_relative"`): two tables
    of `2 * max_relative_position + 1` embeddings of depth `depth_per_head`,
    shared by the heads, indexed by the key position minus the query position
    clipped to `[-max_relative_position, max_relative_position]`; the key
    table is added to the keys in the logits and the value table to the
    values in the output. With a cache, the query's position is
    `cache_update_index`, so decoding step by step gives the same outputs as
    the teacher-forced call.

    The key/value projections are built for the channels of the first
    `memory` seen (of `query` for self-attention), so use one instance either
    for self-attention or for attention over one kind of memory.

    Args:
        num_heads: number of attention heads.
        key_channels: total depth of queries and keys; divisible by `num_heads`.
        value_channels: total depth of values; divisible by `num_heads`.
        output_channels: depth of the output projection.
        dropout: dropout rate on the attention weights (training only).
        dropout_broadcast_dims: dimensions of `[batch, heads, query, key]`
            along which one dropout mask is shared (T2T's
            `attention_dropout_broadcast_dims`).
        kernel_initializer: initializer of the four projection kernels (and
            of the relative-position tables).
        max_relative_position: 0 for plain attention; > 0 for relative
            self-attention clipped at this distance (then `memory` must be
            None).
        **kwargs: base `keras.layers.Layer` arguments (`name`, `dtype`, ...).

    Call arguments:
        query: `[batch, query_length, channels]`.
        memory: `[batch, memory_length, memory_channels]` to attend to, or
            `None` for self-attention.
        attention_mask: bool/int, broadcastable to `[batch, query_length,
            key_length]`; 1 where the query may attend to the key.
        cache: optional `(keys, values)` cache, see above.
        cache_update_index: scalar int, where to write this step's keys and
            values into a self-attention `cache` (the one query's position).
        grow_cache: True for a growing self-attention `cache`: extended by
            `CACHE_BLOCK` positions when `cache_update_index` is past its end
            (the layer then masks the positions after the index itself).
        training: whether dropout is active.

    Returns:
        `[batch, query_length, output_channels]`, or `(output, cache)` when a
        cache is given.

    Example:
    >>> import numpy as np
    >>> layer = MultiHeadAttention(2, 8, 8, 8)
    >>> x = np.random.rand(1, 3, 8).astype("float32")
    >>> causal = np.tril(np.ones((3, 3), "bool"))[None]
    >>> layer(x, attention_mask=causal).shape
    TensorShape([1, 3, 8])
    >>> cache = layer.initial_cache(1, 3)
    >>> step, cache = layer(x[:, :1], attention_mask=causal[:, :1],
    ...                     cache=cache, cache_update_index=0)
    """

    def __init__(
        self,
        num_heads: int,
        key_channels: int,
        value_channels: int,
        output_channels: int,
        dropout: float = 0.0,
        dropout_broadcast_dims: Sequence[int] = (),
        kernel_initializer="glorot_uniform",
        max_relative_position: int = 0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        name = type(self).__name__
        if (
            isinstance(max_relative_position, bool)
            or not isinstance(max_relative_position, int)
            or max_relative_position < 0
        ):
            raise ValueError(
                f"{name}: max_relative_position must be an int >= 0 (0 turns relative "
                f"attention off), got {max_relative_position!r}."
            )
        self.max_relative_position = max_relative_position
        for arg, value in (
            ("num_heads", num_heads),
            ("key_channels", key_channels),
            ("value_channels", value_channels),
            ("output_channels", output_channels),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}: {arg} must be a positive int, got {value!r}.")
        for arg, value in (("key_channels", key_channels), ("value_channels", value_channels)):
            if value % num_heads:
                raise ValueError(
                    f"{name}: {arg}={value} is not divisible by num_heads={num_heads}."
                )
        self.num_heads = num_heads
        self.key_channels = key_channels
        self.value_channels = value_channels
        self.output_channels = output_channels
        self.dropout = validate_rate(dropout, name)
        self.dropout_broadcast_dims = validate_broadcast_dims(dropout_broadcast_dims, 4, name)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.key_depth_per_head = key_channels // num_heads
        self.value_depth_per_head = value_channels // num_heads

    def build(self, query_shape, memory_shape=None):
        source_shape = query_shape if memory_shape is None else memory_shape

        def dense(units, name):
            return keras.layers.Dense(
                units,
                use_bias=False,
                kernel_initializer=clone_initializer(self.kernel_initializer),
                dtype=self.dtype_policy,
                name=name,
            )

        self._query_dense = dense(self.key_channels, "query")
        self._query_dense.build(query_shape)
        self._key_dense = dense(self.key_channels, "key")
        self._key_dense.build(source_shape)
        self._value_dense = dense(self.value_channels, "value")
        self._value_dense.build(source_shape)
        self._output_dense = dense(self.output_channels, "output")
        self._output_dense.build(tuple(query_shape[:-1]) + (self.value_channels,))
        if self.max_relative_position:
            if memory_shape is not None:
                self._refuse_memory()
            vocab = 2 * self.max_relative_position + 1
            # T2T's `relative_positions_keys` / `relative_positions_values`.
            self.relative_key_embeddings = self.add_weight(
                shape=(vocab, self.key_depth_per_head),
                initializer=clone_initializer(self.kernel_initializer),
                name="relative_key_embeddings",
            )
            self.relative_value_embeddings = self.add_weight(
                shape=(vocab, self.value_depth_per_head),
                initializer=clone_initializer(self.kernel_initializer),
                name="relative_value_embeddings",
            )
        self._dropout_layer = make_dropout(
            self.dropout,
            self.dropout_broadcast_dims,
            4,
            self.dtype_policy,
            "attention_dropout",
        )
        self.built = True

    def _split_heads(self, x):
        """`[batch, length, channels]` -> `[batch, heads, length, depth]`."""
        shape = ops.shape(x)
        x = ops.reshape(x, tuple(shape[:-1]) + (self.num_heads, shape[-1] // self.num_heads))
        return ops.transpose(x, (0, 2, 1, 3))

    def _refuse_memory(self):
        raise ValueError(
            f"{type(self).__name__}: relative attention (max_relative_position="
            f"{self.max_relative_position}) is self-attention; pass memory=None."
        )

    def _relative_indices(self, query_length, key_length, first_query_position):
        """`[query, key]` table rows: key minus query position, clipped, shifted to >= 0."""
        limit = self.max_relative_position
        queries = ops.arange(query_length, dtype="int32") + first_query_position
        keys = ops.arange(key_length, dtype="int32")
        return ops.clip(keys[None, :] - queries[:, None], -limit, limit) + limit

    def _relative_embeddings(self, table, indices):
        """`[query, key, depth]`: the rows of `table` at `indices`."""
        return ops.cast(ops.take(table, indices, axis=0), self.compute_dtype)

    def initial_cache(self, batch_size, max_length: int, dtype=None):
        """Returns an all-zero self-attention cache.

        Args:
            batch_size: int or scalar int tensor.
            max_length: the number of decode steps the cache holds (static),
                or 0 for a cache that grows (`grow_cache=True`).
            dtype: cache dtype; defaults to the layer's compute dtype.

        Returns:
            `(keys, values)`, `[batch_size, num_heads, max_length, depth]` zeros
            each (`depth` of the keys and of the values per head).
        """
        dtype = dtype or self.compute_dtype
        return tuple(
            ops.zeros((batch_size, self.num_heads, max_length, depth), dtype=dtype)
            for depth in (self.key_depth_per_head, self.value_depth_per_head)
        )

    def compute_memory_cache(self, memory):
        """Projects `memory` once into the keys/values of encoder-decoder attention.

        Args:
            memory: `[batch, memory_length, memory_channels]`.

        Returns:
            `(keys, values)`, `[batch, num_heads, memory_length, depth]` each,
            in the layer's compute dtype, to pass as `cache` with no
            `cache_update_index`.
        """
        if not self.built:
            # Decoding may start before any teacher-forced call. Assume the
            # queries have the memory's channels, as in the Transformer; if
            # they do not, the query projection rejects them on the first call.
            self.build(tuple(memory.shape), tuple(memory.shape))
        keys, values = self._project(memory, self._key_dense, self._value_dense)
        return self._split_heads(keys), self._split_heads(values)

    def _project(self, x, *denses):
        """`x` through several bias-free projections as one matmul.

        Their kernels sit side by side: fewer, larger matmuls, and one input
        gradient instead of a sum of three. The Dense layers still own the
        kernels.
        """
        kernels = [ops.cast(dense.kernel, self.compute_dtype) for dense in denses]
        fused = ops.matmul(ops.cast(x, self.compute_dtype), ops.concatenate(kernels, axis=-1))
        ends = np.cumsum([kernel.shape[-1] for kernel in kernels])
        return ops.split(fused, [int(end) for end in ends[:-1]], axis=-1)

    def project_key_values(self, memory):
        """Keys and values of `memory` `[batch, length, channels]`, split into heads.

        Each is `[batch, heads, length, depth]` (what `cache` takes, precomputed).
        """
        keys, values = self._project(memory, self._key_dense, self._value_dense)
        return self._split_heads(keys), self._split_heads(values)

    def call(
        self,
        query,
        memory=None,
        attention_mask=None,
        cache=None,
        cache_update_index=None,
        grow_cache=False,
        training=None,
    ):
        if grow_cache and (cache_update_index is None or attention_mask is not None):
            raise ValueError(
                f"{type(self).__name__}: grow_cache=True writes at cache_update_index "
                "and masks the positions after it itself; pass the index and no "
                "attention_mask."
            )
        if cache_update_index is not None:
            if cache is None:
                raise ValueError(f"{type(self).__name__}: cache_update_index needs a cache.")
            if memory is not None:
                raise ValueError(
                    f"{type(self).__name__}: a written or growing cache is for "
                    "self-attention; pass memory=None."
                )
        if self.max_relative_position and memory is not None:
            self._refuse_memory()

        # [batch, heads, length, depth] from here on.
        precomputed = cache is not None and cache_update_index is None
        if memory is None and not precomputed:
            # Self-attention: queries, keys and values in one matmul.
            projections = (self._query_dense, self._key_dense, self._value_dense)
            queries, keys, values = map(self._split_heads, self._project(query, *projections))
        else:
            queries = self._split_heads(self._query_dense(query))
            if precomputed:
                # Encoder-decoder attention: keys/values precomputed from memory.
                keys, values = cache
            else:
                projections = self._project(memory, self._key_dense, self._value_dense)
                keys, values = map(self._split_heads, projections)
        first_query = 0  # the position of the first query
        if cache_update_index is not None:
            first_query = ops.cast(cache_update_index, "int32")
            if grow_cache:
                cache = ops.cond(
                    first_query < ops.shape(cache[0])[2],
                    lambda: tuple(cache),
                    lambda: tuple(
                        ops.pad(c, [[0, 0], [0, 0], [0, CACHE_BLOCK], [0, 0]]) for c in cache
                    ),
                )
            if attention_mask is None:  # the positions up to the query's
                attention_mask = (ops.arange(ops.shape(cache[0])[2]) <= first_query)[None, None]
            zero = ops.zeros((), "int32")
            start = ops.stack([zero, zero, first_query, zero])
            cache = tuple(
                ops.slice_update(cached, start, ops.cast(new, cached.dtype))
                for cached, new in zip(cache, (keys, values), strict=True)
            )
            keys, values = cache
        keys = ops.cast(keys, self.compute_dtype)
        values = ops.cast(values, self.compute_dtype)

        queries = queries * ops.cast(self.key_depth_per_head**-0.5, self.compute_dtype)
        logits = attention_matmul(queries, keys, transpose_b=True)
        if self.max_relative_position:
            relative_indices = self._relative_indices(
                ops.shape(queries)[2], ops.shape(keys)[2], first_query
            )
            relative_keys = self._relative_embeddings(
                self.relative_key_embeddings, relative_indices
            )
            logits = logits + ops.einsum("bhqd,qkd->bhqk", queries, relative_keys)
        logits = ops.cast(logits, "float32")
        if attention_mask is not None:
            # [batch, query, key] -> [batch, 1 (heads), query, key].
            mask = ops.expand_dims(ops.cast(attention_mask, "bool"), -3)
            logits = ops.where(mask, logits, logits + _MASK_NEGATIVE)
        weights = ops.cast(ops.softmax(logits, axis=-1), self.compute_dtype)
        if self._dropout_layer is not None:
            weights = self._dropout_layer(weights, training=training)
        attended = attention_matmul(weights, values)
        if self.max_relative_position:
            relative_values = self._relative_embeddings(
                self.relative_value_embeddings, relative_indices
            )
            attended = attended + ops.einsum("bhqk,qkd->bhqd", weights, relative_values)
        attended = ops.transpose(attended, (0, 2, 1, 3))  # [batch, query, heads, depth]
        shape = ops.shape(attended)
        attended = ops.reshape(attended, tuple(shape[:2]) + (self.value_channels,))
        output = self._output_dense(attended)
        if cache is not None:
            return output, cache
        return output

    def get_config(self):
        config = super().get_config()
        config.update(
            num_heads=self.num_heads,
            key_channels=self.key_channels,
            value_channels=self.value_channels,
            output_channels=self.output_channels,
            dropout=self.dropout,
            dropout_broadcast_dims=list(self.dropout_broadcast_dims),
            kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
            max_relative_position=self.max_relative_position,
        )
        return config
