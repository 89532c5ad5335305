"""What T2T's encoder and decoder layers share: arguments and sublayer factories.

Each T2T sublayer is `y = layer_postprocess(x, fn(layer_preprocess(x)))`:
with transformer_base's sequences, a pre-norm residual block
`x + dropout(fn(norm(x)))`.
"""

from collections.abc import Sequence

import keras

from t2t_lite.layers._utils import clone_initializer
from t2t_lite.layers.conv_relu_conv import ConvReluConv
from t2t_lite.layers.dense_relu_dense import DenseReluDense
from t2t_lite.layers.layer_prepostprocess import LayerPrePostProcess
from t2t_lite.layers.multi_head_attention import MultiHeadAttention

FFN_LAYERS = ("dense_relu_dense", "conv_relu_conv")


class TransformerLayerBase(keras.layers.Layer):
    """Holds the hyperparameters of one encoder or decoder layer.

    Args:
        hidden_size: model width.
        filter_size: width of the feed-forward hidden layer.
        num_heads: attention heads.
        key_channels: total attention key depth; 0 means `hidden_size`.
        value_channels: total attention value depth; 0 means `hidden_size`.
        ffn_layer: `"dense_relu_dense"` or `"conv_relu_conv"`.
        conv_first_kernel: first kernel width of `conv_relu_conv`.
        attention_dropout: dropout on attention weights.
        relu_dropout: dropout after the feed-forward ReLU.
        layer_prepostprocess_dropout: dropout of the `d` steps.
        preprocess_sequence: T2T's `layer_preprocess_sequence`, e.g. `"n"`.
        postprocess_sequence: T2T's `layer_postprocess_sequence`, e.g. `"da"`.
        norm_type: `"layer"`, `"rms"` or `"none"`.
        norm_epsilon: epsilon of the norms.
        attention_dropout_broadcast_dims: broadcast dims of attention dropout.
        relu_dropout_broadcast_dims: broadcast dims of the ReLU dropout
            (`dense_relu_dense` only, as in T2T).
        layer_prepostprocess_dropout_broadcast_dims: broadcast dims of `d`.
        kernel_initializer: initializer of every kernel.
        max_relative_position: 0, or the clipping distance of T2T's relative
            self-attention (`self_attention_type="dot_product_relative"`);
            encoder-decoder attention is never relative.
    """

    def __init__(
        self,
        hidden_size: int,
        filter_size: int,
        num_heads: int,
        key_channels: int = 0,
        value_channels: int = 0,
        ffn_layer: str = "dense_relu_dense",
        conv_first_kernel: int = 3,
        attention_dropout: float = 0.0,
        relu_dropout: float = 0.0,
        layer_prepostprocess_dropout: float = 0.0,
        preprocess_sequence: str = "n",
        postprocess_sequence: str = "da",
        norm_type: str = "layer",
        norm_epsilon: float = 1e-6,
        attention_dropout_broadcast_dims: Sequence[int] = (),
        relu_dropout_broadcast_dims: Sequence[int] = (),
        layer_prepostprocess_dropout_broadcast_dims: Sequence[int] = (),
        kernel_initializer="glorot_uniform",
        max_relative_position: int = 0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if ffn_layer not in FFN_LAYERS:
            raise ValueError(
                f"{type(self).__name__}: unknown ffn_layer {ffn_layer!r}; "
                f"use one of {', '.join(FFN_LAYERS)}."
            )
        self.hidden_size = hidden_size
        self.filter_size = filter_size
        self.num_heads = num_heads
        self.key_channels = key_channels or hidden_size
        self.value_channels = value_channels or hidden_size
        self.ffn_layer = ffn_layer
        self.conv_first_kernel = conv_first_kernel
        self.attention_dropout = attention_dropout
        self.relu_dropout = relu_dropout
        self.layer_prepostprocess_dropout = layer_prepostprocess_dropout
        self.preprocess_sequence = preprocess_sequence
        self.postprocess_sequence = postprocess_sequence
        self.norm_type = norm_type
        self.norm_epsilon = norm_epsilon
        self.attention_dropout_broadcast_dims = tuple(attention_dropout_broadcast_dims)
        self.relu_dropout_broadcast_dims = tuple(relu_dropout_broadcast_dims)
        self.layer_prepostprocess_dropout_broadcast_dims = tuple(
            layer_prepostprocess_dropout_broadcast_dims
        )
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.max_relative_position = max_relative_position

    # -- sublayer factories (called from build) ---------------------------------

    def _prepostprocess(self, sequence: str, name: str) -> LayerPrePostProcess:
        return LayerPrePostProcess(
            sequence,
            dropout=self.layer_prepostprocess_dropout,
            norm_type=self.norm_type,
            norm_epsilon=self.norm_epsilon,
            dropout_broadcast_dims=self.layer_prepostprocess_dropout_broadcast_dims,
            dtype=self.dtype_policy,
            name=name,
        )

    def _sublayer_wrappers(self, name: str, input_shape) -> tuple:
        """The built (preprocess, postprocess) pair around sublayer `name`."""
        pre = self._prepostprocess(self.preprocess_sequence, f"{name}_preprocess")
        post = self._prepostprocess(self.postprocess_sequence, f"{name}_postprocess")
        pre.build(input_shape)
        post.build(input_shape)
        return pre, post

    def _attention(self, name: str, self_attention: bool) -> MultiHeadAttention:
        return MultiHeadAttention(
            self.num_heads,
            self.key_channels,
            self.value_channels,
            self.hidden_size,
            dropout=self.attention_dropout,
            dropout_broadcast_dims=self.attention_dropout_broadcast_dims,
            kernel_initializer=clone_initializer(self.kernel_initializer),
            max_relative_position=self.max_relative_position if self_attention else 0,
            dtype=self.dtype_policy,
            name=name,
        )

    def _feed_forward(self, padding: str, input_shape):
        if self.ffn_layer == "conv_relu_conv":
            ffn = ConvReluConv(
                self.filter_size,
                self.hidden_size,
                first_kernel_size=self.conv_first_kernel,
                second_kernel_size=1,
                padding=padding,
                # T2T's conv_relu_conv ignores relu_dropout_broadcast_dims.
                dropout=self.relu_dropout,
                kernel_initializer=clone_initializer(self.kernel_initializer),
                dtype=self.dtype_policy,
                name="ffn",
            )
        else:
            ffn = DenseReluDense(
                self.filter_size,
                self.hidden_size,
                dropout=self.relu_dropout,
                dropout_broadcast_dims=self.relu_dropout_broadcast_dims,
                kernel_initializer=clone_initializer(self.kernel_initializer),
                dtype=self.dtype_policy,
                name="ffn",
            )
        ffn.build(input_shape)
        return ffn

    def get_config(self):
        config = super().get_config()
        config.update(
            hidden_size=self.hidden_size,
            filter_size=self.filter_size,
            num_heads=self.num_heads,
            key_channels=self.key_channels,
            value_channels=self.value_channels,
            ffn_layer=self.ffn_layer,
            conv_first_kernel=self.conv_first_kernel,
            attention_dropout=self.attention_dropout,
            relu_dropout=self.relu_dropout,
            layer_prepostprocess_dropout=self.layer_prepostprocess_dropout,
            preprocess_sequence=self.preprocess_sequence,
            postprocess_sequence=self.postprocess_sequence,
            norm_type=self.norm_type,
            norm_epsilon=self.norm_epsilon,
            attention_dropout_broadcast_dims=list(self.attention_dropout_broadcast_dims),
            relu_dropout_broadcast_dims=list(self.relu_dropout_broadcast_dims),
            layer_prepostprocess_dropout_broadcast_dims=list(
                self.layer_prepostprocess_dropout_broadcast_dims
            ),
            kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
            max_relative_position=self.max_relative_position,
        )
        return config
