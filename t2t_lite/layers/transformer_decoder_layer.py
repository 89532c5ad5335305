"""One layer of T2T's Transformer decoder, with an incremental-decoding cache."""

import keras
from keras import ops

from t2t_lite.layers._transformer_layer_base import TransformerLayerBase

# The cache entry of the self-attention keys/values: a fixed-length buffer or
# a growing one, both written at the step index.
FIXED, GROWING = "self_attention", "self_attention_growing"


@keras.saving.register_keras_serializable(package="t2t_lite")
class TransformerDecoderLayer(TransformerLayerBase):
    """T2T's `transformer_decoder` body for one layer.

    Causal self-attention, then (when `has_encoder_attention`) attention to
    the encoder output, then the feed-forward, each wrapped in the layer
    pre/post-processing sequences. A `conv_relu_conv` feed-forward pads on
    the LEFT so no position sees the future.

    Incremental decoding passes one position and a cache, a dict of tensors
    made by `initial_cache`: the self-attention `(keys, values)` written at
    `cache_update_index`, either `self_attention` `[batch, heads, max_length,
    depth]` each (a fixed length: what XLA needs) or `self_attention_growing`
    (as long as the steps so far need, in blocks; what t2t-lite's own decoding
    uses, see `MultiHeadAttention`); `memory` `(keys, values)`, `[batch,
    heads, memory_length, depth]` each (computed once) and, for
    `conv_relu_conv`, `ffn` `[batch, conv_first_kernel - 1, hidden]` (the
    last inputs).

    Args:
        has_encoder_attention: False for a decoder-only (language) model.
        Others: see `TransformerLayerBase`.

    Call arguments:
        x: `[batch, length, hidden_size]` (length 1 with a cache).
        memory: encoder output `[batch, memory_length, hidden]`, or None
            (with a cache, the memory keys/values come from the cache).
        memory_mask: `[batch, memory_length]`, 1 for real encoder positions.
        self_attention_mask: broadcastable to `[batch, length, keys]`;
            defaults to the causal mask (without a cache) or to the
            positions up to `cache_update_index` (with one; a growing cache
            takes no other).
        cache: dict from `initial_cache`, or None.
        cache_update_index: scalar int, the position being decoded.
        training: whether dropout is active.

    Returns:
        `[batch, length, hidden_size]`, or `(output, new_cache)` with a cache.

    Example:
    >>> import numpy as np
    >>> layer = TransformerDecoderLayer(hidden_size=16, filter_size=32, num_heads=2)
    >>> x, memory = np.zeros((2, 4, 16), "float32"), np.ones((2, 6, 16), "float32")
    >>> layer(x, memory, np.ones((2, 6))).shape
    TensorShape([2, 4, 16])
    """

    def __init__(self, *args, has_encoder_attention: bool = True, **kwargs):
        super().__init__(*args, **kwargs)
        self.has_encoder_attention = bool(has_encoder_attention)

    def build(self, input_shape):
        self._self_pre, self._self_post = self._sublayer_wrappers("self_attention", input_shape)
        self._self_attention = self._attention("self_attention", self_attention=True)
        self._self_attention.build(input_shape)
        if self.has_encoder_attention:
            self._memory_pre, self._memory_post = self._sublayer_wrappers(
                "encoder_attention", input_shape
            )
            self._encoder_attention = self._attention("encoder_attention", self_attention=False)
            # The model's encoder output has the decoder's width.
            memory_shape = tuple(input_shape[:-1]) + (self.hidden_size,)
            self._encoder_attention.build(input_shape, memory_shape)
        self._ffn_pre, self._ffn_post = self._sublayer_wrappers("ffn", input_shape)
        self._ffn = self._feed_forward("LEFT", input_shape)
        self.built = True

    def initial_cache(self, batch_size, max_length: int | None, memory=None) -> dict:
        """The cache for decoding against `memory`.

        It holds `max_length` positions at most in a fixed-length buffer, or
        (None) one that grows as the steps need.
        """
        if max_length is None:
            cache = {GROWING: self._self_attention.initial_cache(batch_size, 0)}
        else:
            cache = {FIXED: self._self_attention.initial_cache(batch_size, max_length)}
        if self.has_encoder_attention:
            cache["memory"] = self._encoder_attention.compute_memory_cache(memory)
        if self.ffn_layer == "conv_relu_conv":
            cache["ffn"] = self._ffn.initial_cache(batch_size, self.hidden_size)
        return cache

    def call(
        self,
        x,
        memory=None,
        memory_mask=None,
        self_attention_mask=None,
        cache=None,
        cache_update_index=None,
        training=None,
    ):
        new_cache = {} if cache is not None else None
        if cache is None:
            if self_attention_mask is None:
                length = ops.shape(x)[1]
                self_attention_mask = ops.tril(ops.ones((length, length), "bool"))[None]
            y = self._self_attention(
                self._self_pre(x, training=training),
                attention_mask=self_attention_mask,
                training=training,
            )
        else:
            entry = GROWING if GROWING in cache else FIXED
            y, new_cache[entry] = self._self_attention(
                self._self_pre(x, training=training),
                attention_mask=self_attention_mask,
                cache=cache[entry],
                cache_update_index=cache_update_index,
                grow_cache=entry == GROWING,
                training=training,
            )
        x = self._self_post(y, previous=x, training=training)

        if self.has_encoder_attention:
            memory_attention_mask = None
            if memory_mask is not None:
                memory_attention_mask = ops.expand_dims(memory_mask, 1)
            query = self._memory_pre(x, training=training)
            if cache is None:
                y = self._encoder_attention(
                    query, memory, attention_mask=memory_attention_mask, training=training
                )
            else:
                y, new_cache["memory"] = self._encoder_attention(
                    query,
                    attention_mask=memory_attention_mask,
                    cache=cache["memory"],
                    training=training,
                )
            x = self._memory_post(y, previous=x, training=training)

        y = self._ffn_pre(x, training=training)
        if cache is not None and self.ffn_layer == "conv_relu_conv":
            y, new_cache["ffn"] = self._ffn(y, cache=cache["ffn"], training=training)
        else:
            y = self._ffn(y, training=training)
        x = self._ffn_post(y, previous=x, training=training)
        return x if cache is None else (x, new_cache)

    def get_config(self):
        config = super().get_config()
        config["has_encoder_attention"] = self.has_encoder_attention
        return config
