"""One layer of T2T's Transformer encoder: self-attention, then feed-forward."""

import keras
from keras import ops

from t2t_lite.layers._transformer_layer_base import TransformerLayerBase
from t2t_lite.layers.conformer_convolution import ConformerConvolution


@keras.saving.register_keras_serializable(package="t2t_lite")
class TransformerEncoderLayer(TransformerLayerBase):
    """T2T's `transformer_encoder` body for one layer.

    `x = post(x, self_attention(pre(x)))`, then `x = post(x, ffn(pre(x)))`,
    where `pre`/`post` are the layer pre/post-processing sequences. With
    `conv_module_kernel > 0`, `x = post(x, conv_module(pre(x)))` runs
    between the two, Conformer's order (`ConformerConvolution`; the
    paper's macaron half-step feed-forwards are not used). Padded
    positions never influence real ones: attention masks them as keys, and a
    `conv_relu_conv` feed-forward (SAME padding) zeroes them before each conv.

    With `causal=True` (streaming) the `conv_relu_conv` window ends at the
    frame itself (LEFT padding), and `stream` runs the layer one chunk at a
    time with the earlier chunks' keys, values and feed-forward inputs
    cached: the outputs the layer gives with a chunk attention mask
    (`models/chunk_attention.py`) over the whole sequence.

    Args:
        See `TransformerLayerBase`: hidden_size, filter_size, num_heads,
        key/value channels, ffn_layer, conv_first_kernel, the dropouts and
        their broadcast dims, the pre/post sequences, norm type/epsilon,
        kernel_initializer.
        causal: a causal `conv_relu_conv` (no effect on `dense_relu_dense`).
        conv_module_kernel: 0, or the kernel width of a Conformer convolution
            module (odd; not with `causal`: it does not stream yet).

    Call arguments:
        x: `[batch, length, hidden_size]`.
        nonpadding_mask: `[batch, length]`, 1 for real positions, or None.
        training: whether dropout is active.
        attention_mask: optional bool `[batch, length, length]` (query, key)
            in place of the one `nonpadding_mask` gives (a chunk mask).

    Returns:
        `[batch, length, hidden_size]`.

    Example:
    >>> import numpy as np
    >>> layer = TransformerEncoderLayer(hidden_size=16, filter_size=32, num_heads=2)
    >>> layer(np.zeros((2, 5, 16), "float32"), np.ones((2, 5))).shape
    TensorShape([2, 5, 16])
    """

    def __init__(self, *args, causal: bool = False, conv_module_kernel: int = 0, **kwargs):
        super().__init__(*args, **kwargs)
        if conv_module_kernel and causal:
            raise ValueError(
                f"{type(self).__name__}: conv_module_kernel={conv_module_kernel} with "
                "causal=True: the convolution module does not stream yet; use one or the other."
            )
        self.causal = causal
        self.conv_module_kernel = conv_module_kernel
        self._conv_module = None
        if conv_module_kernel:  # made here: a bad kernel is refused at once
            self._conv_module = ConformerConvolution(
                conv_module_kernel,
                norm_epsilon=self.norm_epsilon,
                kernel_initializer=self.kernel_initializer,
                dtype=self.dtype_policy,
                name="conv_module",
            )

    def build(self, input_shape):
        self._attention_pre, self._attention_post = self._sublayer_wrappers(
            "self_attention", input_shape
        )
        self._self_attention = self._attention("self_attention", self_attention=True)
        self._self_attention.build(input_shape)
        if self._conv_module is not None:
            self._conv_pre, self._conv_post = self._sublayer_wrappers("conv_module", input_shape)
            self._conv_module.build(input_shape)
        self._ffn_pre, self._ffn_post = self._sublayer_wrappers("ffn", input_shape)
        self._ffn = self._feed_forward("LEFT" if self.causal else "SAME", input_shape)
        self.built = True

    def call(self, x, nonpadding_mask=None, training=None, attention_mask=None):
        if attention_mask is None and nonpadding_mask is not None:
            attention_mask = ops.expand_dims(nonpadding_mask, 1)  # [batch, 1, keys]
        y = self._self_attention(
            self._attention_pre(x, training=training),
            attention_mask=attention_mask,
            training=training,
        )
        x = self._attention_post(y, previous=x, training=training)
        if self._conv_module is not None:
            y = self._conv_module(
                self._conv_pre(x, training=training), nonpadding_mask=nonpadding_mask
            )
            x = self._conv_post(y, previous=x, training=training)
        y = self._ffn_pre(x, training=training)
        if self.ffn_layer == "conv_relu_conv":
            y = self._ffn(y, nonpadding_mask=nonpadding_mask, training=training)
        else:
            y = self._ffn(y, training=training)
        return self._ffn_post(y, previous=x, training=training)

    def initial_stream_cache(self, batch_size) -> dict:
        """`stream`'s cache before the first chunk.

        It has no keys or values yet, and zeros for the causal convolution's
        left padding.
        """
        heads = self.num_heads
        cache = {
            "keys": ops.zeros((batch_size, heads, 0, self.key_channels // heads)),
            "values": ops.zeros((batch_size, heads, 0, self.value_channels // heads)),
        }
        if self.ffn_layer == "conv_relu_conv":
            cache["ffn"] = self._ffn.initial_cache(batch_size, self.hidden_size, "float32")
        return cache

    def stream(self, x, cache: dict, cached_frames=0):
        """One chunk, every frame real, after the chunks `cache` holds.

        Args:
            x: `[batch, chunk, hidden_size]`, the chunk's inputs.
            cache: `initial_stream_cache(...)` or the previous chunk's.
            cached_frames: > 0: the new cache keeps only the last this many
                frames' keys and values (a limited left context: the next
                chunk sees no more); 0: every chunk's.

        Returns:
            `(outputs [batch, chunk, hidden_size], new_cache)`.
        """
        if not self.causal:
            raise ValueError(f"{self.name}: stream() needs a layer built with causal=True.")
        h = self._attention_pre(x)
        keys, values = self._self_attention.project_key_values(h)
        keys = ops.concatenate([ops.cast(cache["keys"], keys.dtype), keys], axis=2)
        values = ops.concatenate([ops.cast(cache["values"], values.dtype), values], axis=2)
        # Every query sees its whole chunk and all before it: the chunk mask.
        y, _ = self._self_attention(h, cache=(keys, values))
        x = self._attention_post(y, previous=x)
        if cached_frames:
            first = ops.maximum(ops.shape(keys)[2] - cached_frames, 0)
            keys, values = keys[:, :, first:], values[:, :, first:]
        new_cache = {"keys": ops.cast(keys, "float32"), "values": ops.cast(values, "float32")}
        y = self._ffn_pre(x)
        if self.ffn_layer == "conv_relu_conv":
            y, new_cache["ffn"] = self._ffn(y, cache=cache["ffn"])
        else:
            y = self._ffn(y)
        return self._ffn_post(y, previous=x), new_cache

    def get_config(self):
        config = super().get_config()
        config["causal"] = self.causal
        config["conv_module_kernel"] = self.conv_module_kernel
        return config
