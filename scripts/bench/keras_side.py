"""Keras contenders: a plain Keras 3 encoder-decoder, and keras-hub's layers.

- "plain": what a Keras user writes in an afternoon: pre-norm blocks of
  `keras.layers.MultiHeadAttention`, `Dense` and `LayerNormalization`, one
  shared `Embedding` (also the softmax), T2T's sinusoids, trained with
  `compile()` + `train_on_batch()`.
- "hub": keras-hub's `TransformerEncoder` / `TransformerDecoder`
  (`normalize_first=True`), `ReversibleEmbedding` and `SinePositionEncoding`,
  trained the same way; decoded with `BeamSampler` and keras-hub's cached
  decoder layers, seeded and stepped exactly as `BartSeq2SeqLM.generate_step`
  does.

Both use Adam(0.9, 0.997, 1e-9) and sparse cross-entropy ignoring padding
(Keras's sparse loss has no label smoothing). `compile()` leaves XLA off on
a CPU-only machine, as Keras does by default. Speech inputs go through T2T's
front end written with `Conv2D` / `LayerNormalization`.
"""

from __future__ import annotations

import time

import keras
import tensorflow as tf
from keras import layers, ops

from . import data
from .sizes import Sizes

LEARNING_RATE = 1e-4
_EPSILON = 1e-6


def _strided(size: int) -> int:
    return (size - 3) // 2 + 1


def front_end(sizes: Sizes) -> keras.Sequential:
    """T2T's speech front end as a Keras `Sequential`."""
    stack = []
    for _ in range(2):
        stack += [
            layers.ZeroPadding2D(((0, 2), (0, 0))),
            layers.Conv2D(sizes.front_end_filters, 3, strides=2, use_bias=False),
            layers.LayerNormalization(epsilon=_EPSILON),
            layers.ReLU(),
        ]
    folded_bins = _strided(_strided(sizes.mel_bins))
    stack += [
        layers.ZeroPadding2D(((1, 1), (0, 0))),
        layers.Conv2D(sizes.hidden, (3, folded_bins), use_bias=False),
        layers.Reshape((-1, sizes.hidden)),
    ]
    return keras.Sequential(stack, name="front_end")


class PlainEncoderBlock(layers.Layer):
    """Pre-norm self-attention + feed-forward, residuals around both."""

    def __init__(self, sizes: Sizes, **kwargs):
        super().__init__(**kwargs)
        self.attention_norm = layers.LayerNormalization(epsilon=_EPSILON)
        self.attention = layers.MultiHeadAttention(
            sizes.heads, sizes.hidden // sizes.heads, dropout=sizes.dropout
        )
        self.ffn_norm = layers.LayerNormalization(epsilon=_EPSILON)
        self.ffn_in = layers.Dense(sizes.filter, activation="relu")
        self.ffn_out = layers.Dense(sizes.hidden)
        self.dropout = layers.Dropout(sizes.dropout)

    def feed_forward(self, x, training):
        h = self.ffn_out(self.dropout(self.ffn_in(self.ffn_norm(x)), training=training))
        return x + self.dropout(h, training=training)

    # Masks are named `*_padding`: Keras fills arguments named `<input>_mask` itself.
    def call(self, x, padding=None, training=None):
        h = self.attention_norm(x)
        h = self.attention(h, h, attention_mask=padding, training=training)
        return self.feed_forward(x + self.dropout(h, training=training), training)


class PlainDecoderBlock(PlainEncoderBlock):
    """Pre-norm causal self-attention, encoder attention and feed-forward."""

    def __init__(self, sizes: Sizes, **kwargs):
        super().__init__(sizes, **kwargs)
        self.cross_norm = layers.LayerNormalization(epsilon=_EPSILON)
        self.cross_attention = layers.MultiHeadAttention(
            sizes.heads, sizes.hidden // sizes.heads, dropout=sizes.dropout
        )

    def call(self, y, memory, memory_padding=None, training=None):
        h = self.attention_norm(y)
        h = self.attention(h, h, use_causal_mask=True, training=training)
        y = y + self.dropout(h, training=training)
        h = self.cross_attention(
            self.cross_norm(y), memory, attention_mask=memory_padding, training=training
        )
        return self.feed_forward(y + self.dropout(h, training=training), training)


class PlainSeq2Seq(keras.Model):
    """The afternoon model. Call with `{"inputs", "decoder_inputs"}`."""

    def __init__(self, sizes: Sizes, speech: bool, **kwargs):
        super().__init__(**kwargs)
        self.hidden = sizes.hidden
        self.embedding = layers.Embedding(
            sizes.vocab,
            sizes.hidden,
            embeddings_initializer=keras.initializers.RandomNormal(stddev=sizes.hidden**-0.5),
        )
        longest = max(sizes.source_length, sizes.target_length, sizes.speech_frames)
        self.positions = data.sinusoids(longest, sizes.hidden)
        self.front_end = front_end(sizes) if speech else None
        self.dropout = layers.Dropout(sizes.dropout)
        self.encoder_blocks = [PlainEncoderBlock(sizes) for _ in range(sizes.encoder_layers)]
        self.decoder_blocks = [PlainDecoderBlock(sizes) for _ in range(sizes.decoder_layers)]
        self.encoder_norm = layers.LayerNormalization(epsilon=_EPSILON)
        self.decoder_norm = layers.LayerNormalization(epsilon=_EPSILON)

    def _add_positions(self, x, training):
        return self.dropout(x + self.positions[: x.shape[1]], training=training)

    def call(self, batch, training=None):
        inputs = batch["inputs"]
        if self.front_end is not None:
            x, padding = self.front_end(inputs), None
        else:
            x = self.embedding(inputs) * self.hidden**0.5
            padding = ops.expand_dims(ops.not_equal(inputs, 0), 1)  # [batch, 1, source]
        x = self._add_positions(x, training)
        for block in self.encoder_blocks:
            x = block(x, padding=padding, training=training)
        memory = self.encoder_norm(x)
        y = self.embedding(batch["decoder_inputs"]) * self.hidden**0.5
        y = self._add_positions(y, training)
        for block in self.decoder_blocks:
            y = block(y, memory, memory_padding=padding, training=training)
        return ops.matmul(self.decoder_norm(y), ops.transpose(self.embedding.embeddings))


class HubSeq2Seq(keras.Model):
    """keras-hub's layers as an encoder-decoder, with BART's cached decoder call."""

    def __init__(self, sizes: Sizes, speech: bool, **kwargs):
        import keras_hub  # only here: the plain contender must run without it

        super().__init__(**kwargs)
        self.hidden = sizes.hidden
        self.embedding = keras_hub.layers.ReversibleEmbedding(
            sizes.vocab,
            sizes.hidden,
            embeddings_initializer=keras.initializers.RandomNormal(stddev=sizes.hidden**-0.5),
        )
        self.position_encoding = keras_hub.layers.SinePositionEncoding()
        self.front_end = front_end(sizes) if speech else None
        self.dropout = layers.Dropout(sizes.dropout)
        block_args = dict(
            intermediate_dim=sizes.filter,
            num_heads=sizes.heads,
            dropout=sizes.dropout,
            activation="relu",
            layer_norm_epsilon=_EPSILON,
            normalize_first=True,
        )
        self.encoder_blocks = [
            keras_hub.layers.TransformerEncoder(**block_args) for _ in range(sizes.encoder_layers)
        ]
        self.decoder_blocks = [
            keras_hub.layers.TransformerDecoder(**block_args) for _ in range(sizes.decoder_layers)
        ]
        self.encoder_norm = layers.LayerNormalization(epsilon=_EPSILON)
        self.decoder_norm = layers.LayerNormalization(epsilon=_EPSILON)

    def _embed(self, ids, start_index=0, training=None):
        x = self.embedding(ids) * self.hidden**0.5
        x = x + self.position_encoding(x, start_index=start_index)
        return self.dropout(x, training=training)

    def encode(self, inputs, training=None):
        """`(memory, padding_mask or None)`."""
        if self.front_end is not None:
            x, padding = self.front_end(inputs), None
            x = self.dropout(x + self.position_encoding(x), training=training)
        else:
            padding = ops.not_equal(inputs, 0)
            x = self._embed(inputs, training=training)
        for block in self.encoder_blocks:
            x = block(x, padding_mask=padding, training=training)
        return self.encoder_norm(x), padding

    def call(self, batch, training=None):
        memory, padding = self.encode(batch["inputs"], training=training)
        y = self._embed(batch["decoder_inputs"], training=training)
        for block in self.decoder_blocks:
            y = block(y, memory, encoder_padding_mask=padding, training=training)
        return self.embedding(self.decoder_norm(y), reverse=True)

    def call_decoder_with_cache(
        self, memory, padding, token_ids, self_cache, self_index, cross_cache, cross_index
    ):
        """BART's `call_decoder_with_cache`: `(logits, self_cache, cross_cache)`."""
        y = self._embed(token_ids, start_index=0 if self_index is None else self_index)
        self_caches, cross_caches = [], []
        for i, block in enumerate(self.decoder_blocks):
            y, next_self, next_cross = block(
                decoder_sequence=y,
                encoder_sequence=memory,
                encoder_padding_mask=padding,
                self_attention_cache=self_cache[:, i, ...],
                self_attention_cache_update_index=self_index,
                cross_attention_cache=cross_cache[:, i, ...],
                cross_attention_cache_update_index=cross_index,
            )
            self_caches.append(next_self)
            cross_caches.append(next_cross)
        self_cache = ops.stack(self_caches, axis=1)
        if cross_index is not None:
            cross_cache = ops.stack(cross_caches, axis=1)
        logits = self.embedding(self.decoder_norm(y), reverse=True)
        return logits, self_cache, cross_cache


MODELS = {"plain": PlainSeq2Seq, "hub": HubSeq2Seq}


class KerasTraining:
    """`steps` calls of `train_on_batch` per repetition.

    Args:
        sizes: shared sizes.
        flavour: "plain" or "hub".
        modality: "symbol" (text) or "speech".
    """

    def __init__(self, sizes: Sizes, flavour: str, modality: str):
        keras.utils.set_random_seed(0)
        self.sizes = sizes
        self.speech = modality == "speech"
        batch = data.speech_batch(sizes) if self.speech else data.text_batch(sizes)
        self.x = {
            "inputs": ops.convert_to_tensor(batch["inputs"]),
            "decoder_inputs": ops.convert_to_tensor(data.shift_right(batch["targets"])),
        }
        self.y = ops.convert_to_tensor(batch["targets"])
        self.target_tokens = float((batch["targets"] != 0).sum())
        self.model = MODELS[flavour](sizes, self.speech)
        self.model(self.x)  # build every weight before compiling
        self.model.compile(
            optimizer=keras.optimizers.Adam(LEARNING_RATE, beta_1=0.9, beta_2=0.997, epsilon=1e-9),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0),
        )
        for _ in range(sizes.warmup):
            self.run()

    def run(self) -> dict:
        start = time.perf_counter()
        for _ in range(self.sizes.steps):
            logs = self.model.train_on_batch(self.x, self.y, return_dict=True)
        loss = float(logs["loss"])
        seconds = time.perf_counter() - start
        per_step = (
            self.sizes.batch * self.sizes.speech_seconds if self.speech else self.target_tokens
        )
        return {"seconds": seconds, "units": per_step * self.sizes.steps, "loss": loss}


class HubDecoding:
    """keras-hub's `BeamSampler` over its cached decoder, `run(length=L)`.

    A `[batch, L + 1]` prompt holding only the start token (0) is extended
    to its end (no stop token, so exactly L tokens per sequence), inside a
    `tf.function` as keras-hub's `generate()` compiles it on a CPU.
    """

    def __init__(self, sizes: Sizes):
        import keras_hub

        keras.utils.set_random_seed(0)
        self.sizes = sizes
        self.model = HubSeq2Seq(sizes, speech=False)
        self.inputs = ops.convert_to_tensor(data.decode_inputs(sizes))
        self.model({"inputs": self.inputs, "decoder_inputs": self.inputs})
        self.sampler = keras_hub.samplers.BeamSampler(num_beams=sizes.beam)
        self.generate = {}
        for length in sizes.decode_lengths:
            self.generate[length] = tf.function(self._generate_fn(length))
            for _ in range(sizes.warmup):
                self.run(length)

    def _generate_fn(self, length: int):
        model, sizes = self.model, self.sizes
        depth = sizes.hidden // sizes.heads

        def generate(inputs):
            batch = ops.shape(inputs)[0]
            memory, padding = model.encode(inputs, training=False)
            prompt = ops.zeros((batch, length + 1), "int32")
            mask = ops.broadcast_to(ops.arange(length + 1) < 1, (batch, length + 1))
            shape = (batch, sizes.decoder_layers, 2, length + 1, sizes.heads, depth)
            self_cache = ops.zeros(shape)
            cross_shape = (batch, sizes.decoder_layers, 2, ops.shape(inputs)[1], sizes.heads, depth)
            cross_cache = ops.zeros(cross_shape)
            # Seed both caches with one pass over the prompt (BART's _build_cache).
            _, self_cache, cross_cache = model.call_decoder_with_cache(
                memory, padding, prompt, self_cache, 0, cross_cache, 0
            )

            def next_logits(prompt, cache, index):
                cache_index = index - 1
                tokens = ops.slice(prompt, [0, cache_index], [ops.shape(prompt)[0], 1])
                self_cache, memory, padding, cross_cache = cache
                logits, self_cache, _ = model.call_decoder_with_cache(
                    memory, padding, tokens, self_cache, cache_index, cross_cache, None
                )
                return ops.squeeze(logits, axis=1), None, (self_cache, memory, padding, cross_cache)

            return self.sampler(
                next=next_logits,
                prompt=prompt,
                cache=(self_cache, memory, padding, cross_cache),
                index=1,
                mask=mask,
            )

        return generate

    def run(self, length: int) -> dict:
        start = time.perf_counter()
        self.generate[length](self.inputs).numpy()
        seconds = time.perf_counter() - start
        return {"seconds": seconds, "units": float(self.sizes.decode_batch * length)}
