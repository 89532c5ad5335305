"""Tensor2Tensor's building blocks as Keras 3 layers."""

from t2t_lite.layers.conformer_convolution import ConformerConvolution
from t2t_lite.layers.conv_relu_conv import ConvReluConv
from t2t_lite.layers.dense_relu_dense import DenseReluDense
from t2t_lite.layers.dropout import Dropout
from t2t_lite.layers.layer_norm import LayerNorm
from t2t_lite.layers.layer_prepostprocess import LayerPrePostProcess
from t2t_lite.layers.multi_head_attention import MultiHeadAttention
from t2t_lite.layers.speech_front_end import SpeechFrontEnd
from t2t_lite.layers.symbol_embedding import SymbolEmbedding
from t2t_lite.layers.timing_signal import (
    TimingSignal,
    add_timing_signal_1d,
    get_timing_signal_1d,
)
from t2t_lite.layers.transformer_decoder_layer import TransformerDecoderLayer
from t2t_lite.layers.transformer_encoder_layer import TransformerEncoderLayer
from t2t_lite.layers.word_boundary_head import WordBoundaryHead

__all__ = [
    "ConformerConvolution",
    "ConvReluConv",
    "DenseReluDense",
    "Dropout",
    "LayerNorm",
    "LayerPrePostProcess",
    "MultiHeadAttention",
    "SpeechFrontEnd",
    "SymbolEmbedding",
    "TimingSignal",
    "TransformerDecoderLayer",
    "TransformerEncoderLayer",
    "WordBoundaryHead",
    "add_timing_signal_1d",
    "get_timing_signal_1d",
]
