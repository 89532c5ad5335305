"""Keras contenders: what a Keras user writes in an afternoon (`MultiHeadAttention`, `Dense`),
and the same in keras-hub's layers, decoded by its `BeamSampler` as `BartSeq2SeqLM.generate_step`
does. Both: `compile()` + `train_on_batch()` (no XLA on a CPU, Keras's default), Adam(0.9, 0.997,
1e-9), sparse cross-entropy ignoring padding (no label smoothing in Keras); T2T's speech front end.
"""

import keras
import tensorflow as tf
from keras import layers, ops

from . import common

EPS = 1e-6


def front_end(sizes) -> keras.Sequential:
    stack = [layer for _ in range(2) for layer in (  # 2 x (pad 2 frames, conv, norm, ReLU)
        layers.ZeroPadding2D(((0, 2), (0, 0))),
        layers.Conv2D(sizes.front_end_filters, 3, strides=2, use_bias=False),
        layers.LayerNormalization(epsilon=EPS), layers.ReLU())]  # fmt: skip
    bins = common._strided(common._strided(sizes.mel_bins))
    return keras.Sequential(stack + [
        layers.ZeroPadding2D(((1, 1), (0, 0))),
        layers.Conv2D(sizes.hidden, (3, bins), use_bias=False),
        layers.Reshape((-1, sizes.hidden))])  # fmt: skip


class Block(layers.Layer):
    """Pre-norm self-attention (with `cross`: causal, then encoder attention) + feed-forward."""

    def __init__(self, sizes, cross: bool = False, **kwargs):
        super().__init__(**kwargs)
        attention = lambda: layers.MultiHeadAttention(
            sizes.heads, sizes.hidden // sizes.heads, dropout=sizes.dropout)
        self.norms = [layers.LayerNormalization(epsilon=EPS) for _ in range(2 + cross)]
        self.attention, self.cross = attention(), attention() if cross else None
        self.ffn = [layers.Dense(sizes.filter, activation="relu"), layers.Dense(sizes.hidden)]
        self.dropout = layers.Dropout(sizes.dropout)

    # keras-hub's argument names (Keras fills an argument `<input>_mask` itself: none here).
    def call(self, x, memory=None, padding_mask=None, encoder_padding_mask=None, training=None):
        drop = lambda h: self.dropout(h, training=training)
        mask = lambda padding: None if padding is None else ops.expand_dims(padding, 1)
        h = self.norms[0](x)
        if self.cross is None:
            x = x + drop(self.attention(h, h, attention_mask=mask(padding_mask), training=training))
        else:
            x = x + drop(self.attention(h, h, use_causal_mask=True, training=training))
            x = x + drop(self.cross(self.norms[2](x), memory, training=training,
                                    attention_mask=mask(encoder_padding_mask)))
        return x + drop(self.ffn[1](drop(self.ffn[0](self.norms[1](x)))))


class Seq2Seq(keras.Model):
    """Shared embedding (and softmax), sinusoids, pre-norm stacks ending in a norm:
    `flavour="plain"` in Keras's own layers, "hub" in keras-hub's."""

    def __init__(self, sizes, speech: bool, flavour: str = "plain", **kwargs):
        super().__init__(**kwargs)
        self.hidden, self.hub = sizes.hidden, flavour == "hub"
        init = keras.initializers.RandomNormal(stddev=sizes.hidden**-0.5)
        if self.hub:
            from keras_hub import layers as hub  # only here: the plain model runs without it

            self.embedding = hub.ReversibleEmbedding(sizes.vocab, sizes.hidden,
                                                     embeddings_initializer=init)
            self.position = hub.SinePositionEncoding()
            block = dict(intermediate_dim=sizes.filter, num_heads=sizes.heads, activation="relu",
                         dropout=sizes.dropout, layer_norm_epsilon=EPS, normalize_first=True)
            self.encoder = [hub.TransformerEncoder(**block) for _ in range(sizes.encoder_layers)]
            self.decoder = [hub.TransformerDecoder(**block) for _ in range(sizes.decoder_layers)]
        else:
            self.embedding = layers.Embedding(sizes.vocab, sizes.hidden,
                                              embeddings_initializer=init)
            table = common.sinusoids(max(sizes.source_length, sizes.target_length,
                                         sizes.speech_frames), sizes.hidden)  # fmt: skip
            self.position = lambda x, start_index=0: table[start_index : start_index + x.shape[1]]
            self.encoder = [Block(sizes) for _ in range(sizes.encoder_layers)]
            self.decoder = [Block(sizes, cross=True) for _ in range(sizes.decoder_layers)]
        self.front_end = front_end(sizes) if speech else None
        self.dropout = layers.Dropout(sizes.dropout)
        self.norms = [layers.LayerNormalization(epsilon=EPS) for _ in range(2)]

    def _embed(self, ids, start_index=0, training=None):
        x = self.embedding(ids) * self.hidden**0.5
        return self.dropout(x + self.position(x, start_index=start_index), training=training)

    def encode(self, inputs, training=None):
        """`(memory, padding mask or None)`."""
        x, padding = ((self.front_end(inputs), None) if self.front_end is not None
                      else (self.embedding(inputs) * self.hidden**0.5, ops.not_equal(inputs, 0)))
        x = self.dropout(x + self.position(x), training=training)  # as `_embed`
        for block in self.encoder:
            x = block(x, padding_mask=padding, training=training)
        return self.norms[0](x), padding

    def call(self, batch, training=None):
        memory, padding = self.encode(batch["inputs"], training=training)
        y = self._embed(batch["decoder_inputs"], training=training)
        for block in self.decoder:
            y = block(y, memory, encoder_padding_mask=padding, training=training)
        y = self.norms[1](y)
        return self.embedding(y, reverse=True) if self.hub else ops.matmul(
            y, ops.transpose(self.embedding.embeddings))

    def call_decoder_with_cache(self, memory, padding, ids, cache, index, cross, cross_index):
        """BART's `call_decoder_with_cache`: (logits, self-attention cache, cross cache)."""
        y = self._embed(ids, start_index=0 if index is None else index)
        caches, crosses = [], []
        for i, block in enumerate(self.decoder):
            y, next_cache, next_cross = block(
                decoder_sequence=y, encoder_sequence=memory, encoder_padding_mask=padding,
                self_attention_cache=cache[:, i, ...], self_attention_cache_update_index=index,
                cross_attention_cache=cross[:, i, ...],
                cross_attention_cache_update_index=cross_index)  # fmt: skip
            caches.append(next_cache)
            crosses.append(next_cross)
        cross = cross if cross_index is None else ops.stack(crosses, axis=1)
        return self.embedding(self.norms[1](y), reverse=True), ops.stack(caches, axis=1), cross


class Training:
    """`steps` calls of `train_on_batch` per repetition (`flavour`: "plain" or "hub")."""

    def __init__(self, sizes, flavour: str, modality: str):
        keras.utils.set_random_seed(0)
        self.sizes, self.speech = sizes, modality == "speech"
        batch = common.batch(sizes, modality)
        self.x = {"inputs": ops.convert_to_tensor(batch["inputs"]),
                  "decoder_inputs": ops.pad(batch["targets"][:, :-1], [[0, 0], [1, 0]])}  # 0 first
        self.y = ops.convert_to_tensor(batch["targets"])
        self.target_tokens = 0 if self.speech else float((batch["targets"] != 0).sum())
        self.model = Seq2Seq(sizes, self.speech, flavour)
        self.model(self.x)  # every weight exists before compiling
        self.model.compile(
            optimizer=keras.optimizers.Adam(1e-4, beta_1=0.9, beta_2=0.997, epsilon=1e-9),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0))

    def run(self) -> dict:
        for _ in range(self.sizes.steps):
            logs = self.model.train_on_batch(self.x, self.y, return_dict=True)
        per_step = self.target_tokens or self.sizes.batch * self.sizes.speech_seconds
        return {"units": per_step * self.sizes.steps, "loss": float(logs["loss"])}


class HubDecoding:
    """`run(length=L)`: `BeamSampler` fills a `[batch, L + 1]` start-token prompt (no stop token:
    L tokens each) in a `tf.function`, as keras-hub's `generate()` compiles it on a CPU."""

    def __init__(self, sizes):
        import keras_hub

        keras.utils.set_random_seed(0)
        self.sizes, self.model = sizes, Seq2Seq(sizes, speech=False, flavour="hub")
        self.inputs = ops.convert_to_tensor(common.batch(sizes, "decode")["inputs"])
        self.model({"inputs": self.inputs, "decoder_inputs": self.inputs})
        self.sampler = keras_hub.samplers.BeamSampler(num_beams=sizes.beam)

    @tf.function  # a trace per length (a Python int)
    def generate(self, inputs, length):
        model, sizes, batch = self.model, self.sizes, ops.shape(inputs)[0]
        memory, padding = model.encode(inputs, training=False)
        prompt = ops.zeros((batch, length + 1), "int32")
        mask = ops.broadcast_to(ops.arange(length + 1) < 1, (batch, length + 1))
        depth = sizes.hidden // sizes.heads
        cache = ops.zeros((batch, sizes.decoder_layers, 2, length + 1, sizes.heads, depth))
        cross = ops.zeros((batch, sizes.decoder_layers, 2, inputs.shape[1], sizes.heads, depth))
        # Seed both caches with one pass over the prompt (BART's _build_cache).
        _, cache, cross = model.call_decoder_with_cache(memory, padding, prompt, cache, 0, cross, 0)

        def next_logits(prompt, state, index):
            cache, memory, padding, cross = state
            ids = ops.slice(prompt, [0, index - 1], [ops.shape(prompt)[0], 1])
            logits, cache, _ = model.call_decoder_with_cache(
                memory, padding, ids, cache, index - 1, cross, None)
            return ops.squeeze(logits, axis=1), None, (cache, memory, padding, cross)

        return self.sampler(next=next_logits, prompt=prompt, index=1, mask=mask,
                            cache=(cache, memory, padding, cross))  # fmt: skip

    def run(self, length: int) -> dict:
        self.generate(self.inputs, length).numpy()
        return {"units": self.sizes.decode_batch * length}
