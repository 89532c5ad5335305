"""The Transformer of "Attention Is All You Need", with T2T's numerics.

    features = {"inputs": ids or log-mel frames, "targets": ids}
    logits = model(features, training=True)        # [batch, targets, vocab], float32
    cache = model.initial_decode_cache(features, max_length=50)
    logits, cache = model.decode_step(previous_ids, step, cache)

Inputs are text ids (`input_modality="symbol"`), speech features
`[batch, frames, mel_bins, channels]` with an optional `inputs_length`
(`"speech"`, reduced 4x in time by T2T's convolutional front end), or absent
(`None`: a decoder-only language model). Targets are ids ending in EOS (1),
padded with 0; the decoder sees them shifted right.

Decoding is incremental: `decode_step` embeds one token, attends through a
cache (self-attention keys/values growing a step at a time, or written at the
step index into a fixed-length buffer for XLA; encoder keys/values computed
once) and returns the next logits; the searches
(`decoding/`) loop over it. The math is `keras.ops` throughout, so the model
runs its forward and backward passes on any Keras 3 backend.

This file builds the layers and runs the encoder and the teacher-forced
decoder; two mixins hold the rest: `AuxiliaryHeads` (`auxiliary_heads.py`:
the training forward pass with the CTC, phoneme and word boundary heads) and
`IncrementalDecoding` (`incremental_decoding.py`: the decode cache and step).
"""

from __future__ import annotations

import keras
from keras import ops

from t2t_lite import registry
from t2t_lite.data.phoneme_ctc_hparams import PHONEME_VOCAB_SIZE
from t2t_lite.data.reserved_ids import PAD_ID
from t2t_lite.hparam import HParams
from t2t_lite.layers.layer_prepostprocess import LayerPrePostProcess
from t2t_lite.layers.speech_front_end import SpeechFrontEnd
from t2t_lite.layers.symbol_embedding import SymbolEmbedding
from t2t_lite.layers.timing_signal import TimingSignal
from t2t_lite.layers.transformer_decoder_layer import TransformerDecoderLayer
from t2t_lite.layers.transformer_encoder_layer import TransformerEncoderLayer
from t2t_lite.layers.word_boundary_head import WordBoundaryHead
from t2t_lite.models.auxiliary_heads import AuxiliaryHeads
from t2t_lite.models.chunk_attention import (
    chunk_attention_mask,
    draw_chunk_frames,
    draw_left_chunks,
)
from t2t_lite.models.incremental_decoding import IncrementalDecoding
from t2t_lite.models.initializers import make_initializer
from t2t_lite.models.transformer_config import (
    MODEL_HPARAMS,
    TransformerConfig,
    dtype_policy,
)


def shift_right(targets):
    """Decoder inputs: `targets` shifted one position right, padded with 0."""
    return ops.pad(targets, [[0, 0], [1, 0]])[:, :-1]


@registry.register_model
@keras.saving.register_keras_serializable(package="t2t_lite")
class Transformer(AuxiliaryHeads, IncrementalDecoding, keras.Model):
    """Encoder-decoder (or decoder-only) Transformer with a decode cache.

    Build one from hparams with `Transformer.from_hparams`, or from a
    `TransformerConfig` (every field is documented there).

    Args:
        config: a `TransformerConfig` (or its `to_dict()`, as `get_config`
            stores it).
        **kwargs: base `keras.Model` arguments (`name`, `dtype`, ...).

    Call arguments:
        features: dict with "targets" `[batch, length]` ids and, unless
            decoder-only, "inputs" (plus optional "inputs_length" for speech).
        training: whether dropout is active.

    Returns:
        float32 logits `[batch, length, target_vocab_size]`.

    Example:
    >>> import numpy as np
    >>> hparams = registry.hparams("transformer_tiny")
    >>> model = Transformer.from_hparams(hparams, input_modality="symbol",
    ...                                  input_vocab_size=20, target_vocab_size=20)
    >>> ids = np.array([[5, 6, 1, 0]])
    >>> model({"inputs": ids, "targets": ids}).shape
    TensorShape([1, 4, 20])
    """

    # What `from_hparams` reads (the trainer warns about set hparams outside it).
    HPARAMS = MODEL_HPARAMS

    def __init__(self, config: TransformerConfig | dict, **kwargs):
        super().__init__(**kwargs)
        if isinstance(config, dict):
            config = TransformerConfig(**config)
        self.config = c = config
        self.target_vocab_size = c.target_vocab_size
        self.input_modality = c.input_modality
        self.hidden_size = c.hidden_size
        self.pos = c.pos

        policy = self.dtype_policy
        kernel_init = make_initializer(c.initializer, c.initializer_gain)
        block_args = dict(
            hidden_size=c.hidden_size,
            filter_size=c.filter_size,
            num_heads=c.num_heads,
            key_channels=c.attention_key_channels,
            value_channels=c.attention_value_channels,
            ffn_layer=c.ffn_layer,
            conv_first_kernel=c.conv_first_kernel,
            attention_dropout=c.attention_dropout,
            relu_dropout=c.relu_dropout,
            layer_prepostprocess_dropout=c.layer_prepostprocess_dropout,
            preprocess_sequence=c.layer_preprocess_sequence,
            postprocess_sequence=c.layer_postprocess_sequence,
            norm_type=c.norm_type,
            norm_epsilon=c.norm_epsilon,
            attention_dropout_broadcast_dims=list(c.attention_dropout_broadcast_dims),
            relu_dropout_broadcast_dims=list(c.relu_dropout_broadcast_dims),
            layer_prepostprocess_dropout_broadcast_dims=list(
                c.layer_prepostprocess_dropout_broadcast_dims
            ),
            kernel_initializer=kernel_init,
            max_relative_position=(
                c.max_relative_position if c.self_attention_type == "dot_product_relative" else 0
            ),
            dtype=policy,
        )

        def stack_end(name):
            # T2T ends each stack with layer_preprocess: the final norm.
            return LayerPrePostProcess(
                c.layer_preprocess_sequence,
                norm_type=c.norm_type,
                norm_epsilon=c.norm_epsilon,
                dtype=policy,
                name=name,
            )

        def embedding_dropout(name):
            # T2T's input dropout is a plain tf.nn.dropout: no broadcast dims.
            return LayerPrePostProcess(
                "d", dropout=c.layer_prepostprocess_dropout, dtype=policy, name=name
            )

        scale = c.multiply_embedding_mode == "sqrt_depth"
        self.target_embedding = SymbolEmbedding(
            c.target_vocab_size, c.hidden_size, scale, dtype=policy, name="target_embedding"
        )
        self.softmax = (
            self.target_embedding
            if c.shared_embedding_and_softmax_weights
            else SymbolEmbedding(c.target_vocab_size, c.hidden_size, dtype=policy, name="softmax")
        )
        self.timing_signal = TimingSignal(dtype=policy, name="timing_signal")

        if c.input_modality == "symbol":
            share_inputs = (
                c.shared_embedding_and_softmax_weights and c.input_vocab_size == c.target_vocab_size
            )
            self.input_embedding = (
                self.target_embedding
                if share_inputs
                else SymbolEmbedding(
                    c.input_vocab_size, c.hidden_size, scale, dtype=policy, name="input_embedding"
                )
            )
        elif c.input_modality == "speech":
            self.speech_front_end = SpeechFrontEnd(
                c.hidden_size,
                num_filters=c.speech_front_end_filters,
                kernel_initializer=kernel_init,
                dtype=policy,
                name="speech_front_end",
            )
        if c.input_modality is not None:
            self.encoder_dropout = embedding_dropout("encoder_input_dropout")
            self.encoder_layers = [
                TransformerEncoderLayer(
                    **block_args,
                    causal=c.use_dynamic_chunk,
                    conv_module_kernel=c.conformer_conv_kernel,
                    name=f"encoder_layer_{i}",
                )
                for i in range(c.num_encoder_layers)
            ]
            if c.use_dynamic_chunk:
                self.chunk_seed = keras.random.SeedGenerator(name="chunk_seed")
            self.encoder_norm = stack_end("encoder_norm")
        self.ctc_projection = None
        if c.ctc_head:
            self.ctc_projection = keras.layers.Dense(
                c.target_vocab_size,
                kernel_initializer=kernel_init,
                dtype=policy,
                name="ctc_projection",
            )
            # Built now so checkpoints hold it even before the first CTC step.
            self.ctc_projection.build((None, None, c.hidden_size))
        self.phoneme_projection = None
        if c.phoneme_ctc_layer:
            self.phoneme_projection = keras.layers.Dense(
                PHONEME_VOCAB_SIZE,
                kernel_initializer=kernel_init,
                dtype=policy,
                name="phoneme_ctc_projection",
            )  # built in build(): its weights' paths then start with its name
        self.word_boundary_head = None
        if c.word_boundary_head:
            self.word_boundary_head = WordBoundaryHead(
                kernel_initializer=kernel_init,
                dtype=policy,
                name="word_boundary_head",
            )
        self.decoder_dropout = embedding_dropout("decoder_input_dropout")
        self.decoder_layers = [
            TransformerDecoderLayer(
                **block_args,
                has_encoder_attention=c.input_modality is not None,
                name=f"decoder_layer_{i}",
            )
            for i in range(c.num_decoder_layers)
        ]
        self.decoder_norm = stack_end("decoder_norm")

    @classmethod
    def from_hparams(cls, hparams: HParams, **problem_values) -> Transformer:
        """Builds the model T2T's hparams describe (reads `MODEL_HPARAMS`).

        Args:
            hparams: the run's hparams.
            **problem_values: `input_modality`, `target_vocab_size` and
                `input_vocab_size`, as `Problem.model_kwargs` gives them.
        """
        policy = dtype_policy(hparams)
        return cls(
            TransformerConfig.from_hparams(hparams, **problem_values),
            **({"dtype": policy} if policy else {}),
        )

    def build(self, features_shape=None):
        """Creates every weight, so the model is whole before its first call.

        Args:
            features_shape: the shapes of the first call's features (a dict);
                only the speech front end reads one, `features_shape["inputs"]`
                `[batch, frames, bins, channels]`.
        """
        hidden = (None, None, self.hidden_size)
        shapes = [(self.target_embedding, None), (self.softmax, None)]
        if self.input_modality == "symbol":
            shapes.append((self.input_embedding, None))
        elif self.input_modality == "speech":
            shapes.append((self.speech_front_end, tuple(features_shape["inputs"])))
            if self.word_boundary_head is not None and not self.word_boundary_head.built:
                self.word_boundary_head.build(tuple(features_shape["inputs"]), hidden)
            if self.phoneme_projection is not None:
                shapes.append((self.phoneme_projection, hidden))
        if self.has_inputs:
            shapes.append((self.encoder_dropout, hidden))
            shapes += [(layer, hidden) for layer in self.encoder_layers]
            shapes.append((self.encoder_norm, hidden))
        shapes.append((self.decoder_dropout, hidden))
        shapes += [(layer, hidden) for layer in self.decoder_layers]
        shapes.append((self.decoder_norm, hidden))
        for layer, shape in shapes:
            # Shared embeddings appear twice; `encode` or `call_with_ctc`
            # called directly may have built some sublayers already.
            if layer.built:
                continue
            if shape is None:
                layer.build()
            else:
                layer.build(shape)
        self.built = True

    @property
    def has_inputs(self) -> bool:
        return self.input_modality is not None

    def encoded_length(self, input_length):
        """The encoder output's length for `input_length` input positions.

        The positions are frames for speech, which the front end reduces, and
        tokens for text.
        """
        if self.input_modality == "speech":
            return self.speech_front_end.output_length(input_length)
        return input_length

    # -- training-time computation --------------------------------------------------

    def add_position(self, x, start_index=0):
        """`x` with the timing signal of positions `start_index..` added.

        `x` is `[batch, length, hidden]`; the signal is added with
        `pos="timing"`, else `x` is unchanged. The encoder, the decoder, one
        decode step and a streamed chunk all position this way.
        """
        return self.timing_signal(x, start_index=start_index) if self.pos == "timing" else x

    def encode(self, features: dict, training=None, chunk_frames=None, left_chunks=0):
        """Returns `(encoder_output [batch, length, hidden], nonpadding [batch, length])`.

        `chunk_frames` (int or scalar tensor): self-attention sees each
        frame's chunk and the chunks before it (streaming's outputs, computed
        at once), at most `left_chunks` of them if that is above 0; None:
        full context, except in training with `use_dynamic_chunk`, where each
        batch draws its chunk size (and with `use_dynamic_left_chunk` its
        left context).
        """
        memory, nonpadding, _ = self._encode(features, training, chunk_frames, left_chunks)
        return memory, nonpadding

    def _encode(self, features, training, chunk_frames=None, left_chunks=0, keep_layers=()):
        """`encode`'s outputs, plus the outputs of the layers in `keep_layers`.

        Those are {layer: its output through the encoder's final norm} for
        each 1-based encoder layer in `keep_layers`.
        """
        inputs = features["inputs"]
        if self.input_modality == "symbol":
            inputs = ops.cast(inputs, "int32")
            nonpadding = ops.cast(ops.not_equal(inputs, PAD_ID), "float32")
            x = self.input_embedding(inputs)
        else:
            frames = ops.shape(inputs)[1]
            lengths = features.get("inputs_length")
            if lengths is None:
                nonpadding = ops.ones(ops.shape(inputs)[:2], "float32")
            else:
                positions = ops.arange(frames, dtype="int32")[None, :]
                lengths = ops.cast(ops.reshape(lengths, (-1, 1)), "int32")
                nonpadding = ops.cast(positions < lengths, "float32")
            x, nonpadding = self.speech_front_end(inputs, nonpadding)
        x = self.encoder_dropout(self.add_position(x), training=training)
        if chunk_frames is None and training and self.config.use_dynamic_chunk:
            chunk_frames = draw_chunk_frames(ops.shape(x)[1], self.chunk_seed)
            if self.config.use_dynamic_left_chunk:
                left_chunks = draw_left_chunks(ops.shape(x)[1], chunk_frames, self.chunk_seed)
        attention_mask = None
        if chunk_frames is not None:  # [batch, query, key]: real keys of chunks so far
            chunks = chunk_attention_mask(ops.shape(x)[1], chunk_frames, left_chunks)
            attention_mask = ops.logical_and(
                ops.expand_dims(ops.cast(nonpadding, "bool"), 1), ops.expand_dims(chunks, 0)
            )
        kept = {}
        for index, layer in enumerate(self.encoder_layers, start=1):
            x = layer(x, nonpadding, training=training, attention_mask=attention_mask)
            if index in keep_layers:
                kept[index] = self.encoder_norm(x)
        return self.encoder_norm(x), nonpadding, kept

    def decode(self, targets, memory=None, memory_mask=None, training=None):
        """Teacher-forced decoder: float32 logits for every target position."""
        decoder_inputs = shift_right(ops.cast(targets, "int32"))
        y = self.target_embedding(decoder_inputs)
        y = self.decoder_dropout(self.add_position(y), training=training)
        for layer in self.decoder_layers:
            y = layer(y, memory, memory_mask, training=training)
        return self.softmax.logits(self.decoder_norm(y))

    def call(self, features, training=None):
        memory, memory_mask = (None, None)
        if self.has_inputs:
            memory, memory_mask = self.encode(features, training=training)
        return self.decode(features["targets"], memory, memory_mask, training=training)

    def get_config(self):
        config = super().get_config()
        config["config"] = self.config.to_dict()
        return config
