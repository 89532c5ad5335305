"""One layer of T2T's Transformer encoder: self-attention, then feed-forward."""

import keras
from keras import ops

from t2t_lite.layers._transformer_layer_base import TransformerLayerBase


@keras.saving.register_keras_serializable(package="t2t_lite")
class TransformerEncoderLayer(TransformerLayerBase):
    """T2T's `transformer_encoder` body for one layer.

    `x = post(x, self_attention(pre(x)))`, then `x = post(x, ffn(pre(x)))`,
    where `pre`/`post` are the layer pre/post-processing sequences. Padded
    positions never influence real ones: attention masks them as keys, and a
    `conv_relu_conv` feed-forward (SAME padding) zeroes them before each conv.

    Args:
        See `TransformerLayerBase`: hidden_size, filter_size, num_heads,
        key/value channels, ffn_layer, conv_first_kernel, the dropouts and
        their broadcast dims, the pre/post sequences, norm type/epsilon,
        kernel_initializer.

    Call arguments:
        x: `[batch, length, hidden_size]`.
        nonpadding_mask: `[batch, length]`, 1 for real positions, or None.
        training: whether dropout is active.

    Returns:
        `[batch, length, hidden_size]`.

    Example:
    >>> import numpy as np
    >>> layer = TransformerEncoderLayer(hidden_size=16, filter_size=32, num_heads=2)
    >>> layer(np.zeros((2, 5, 16), "float32"), np.ones((2, 5))).shape
    TensorShape([2, 5, 16])
    """

    def build(self, input_shape):
        self._attention_pre, self._attention_post = self._sublayer_wrappers(
            "self_attention", input_shape
        )
        self._self_attention = self._attention("self_attention", self_attention=True)
        self._self_attention.build(input_shape)
        self._ffn_pre, self._ffn_post = self._sublayer_wrappers("ffn", input_shape)
        self._ffn = self._feed_forward("SAME", input_shape)
        self.built = True

    def call(self, x, nonpadding_mask=None, training=None):
        attention_mask = None
        if nonpadding_mask is not None:
            attention_mask = ops.expand_dims(nonpadding_mask, 1)  # [batch, 1, keys]
        y = self._self_attention(
            self._attention_pre(x, training=training),
            attention_mask=attention_mask,
            training=training,
        )
        x = self._attention_post(y, previous=x, training=training)
        y = self._ffn_pre(x, training=training)
        if self.ffn_layer == "conv_relu_conv":
            y = self._ffn(y, nonpadding_mask=nonpadding_mask, training=training)
        else:
            y = self._ffn(y, training=training)
        return self._ffn_post(y, previous=x, training=training)
