"""T2T's symbol modality: scaled token embedding and (shared) softmax weights."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="t2t_lite")
class SymbolEmbedding(keras.layers.Layer):
    """Token embedding that zeroes padding, plus a float32 logits projection.

    As T2T's symbol modality: weights `[vocab_size, hidden_size]` drawn from
    `N(0, hidden_size ** -0.5)`; `call` gathers rows, multiplies them by
    `sqrt(hidden_size)` and zeroes the embeddings of id 0 (padding); `logits`
    computes `hidden_states @ weights^T`. One instance used for both gives
    T2T's shared embedding/softmax; a second instance gives an unshared
    softmax.

    The table is never autocast: under mixed precision embeddings are
    gathered from the float32 table and then cast to the compute dtype, and
    logits are computed and returned in float32 (a bfloat16 softmax over a
    large vocabulary loses too much precision).

    Args:
        vocab_size: number of token ids.
        hidden_size: embedding depth.
        scale_by_sqrt_depth: multiply embeddings by `sqrt(hidden_size)`.
        embeddings_initializer: overrides T2T's `N(0, hidden_size ** -0.5)`.
        **kwargs: base `keras.layers.Layer` arguments (`name`, `dtype`, ...).

    Call arguments:
        ids: int tensor of token ids, any shape.

    Returns:
        `ids.shape + [hidden_size]` in the compute dtype.

    Example:
    >>> import numpy as np
    >>> embedding = SymbolEmbedding(vocab_size=10, hidden_size=8)
    >>> vectors = embedding(np.array([[3, 4, 0]]))    # [1, 3, 8], last is 0
    >>> embedding.logits(vectors).shape               # float32 [1, 3, 10]
    TensorShape([1, 3, 10])
    """

    def __init__(
        self,
        vocab_size: int,
        hidden_size: int,
        scale_by_sqrt_depth: bool = True,
        embeddings_initializer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        name = type(self).__name__
        for arg, value in (("vocab_size", vocab_size), ("hidden_size", hidden_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}: {arg} must be a positive int, got {value!r}.")
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.scale_by_sqrt_depth = bool(scale_by_sqrt_depth)
        if embeddings_initializer is None:
            embeddings_initializer = keras.initializers.RandomNormal(
                mean=0.0, stddev=hidden_size**-0.5
            )
        self.embeddings_initializer = keras.initializers.get(embeddings_initializer)

    def build(self, input_shape=None):
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=(self.vocab_size, self.hidden_size),
            initializer=self.embeddings_initializer,
            # Cast rows after the gather, and keep float32 for `logits`, even
            # inside an outer layer's bfloat16 autocast scope.
            autocast=False,
        )
        self.built = True

    def call(self, ids):
        ids = ops.cast(ids, "int32")
        vectors = ops.take(self.embeddings, ids, axis=0)
        if self.scale_by_sqrt_depth:
            vectors = vectors * self.hidden_size**0.5
        nonpadding = ops.cast(ops.not_equal(ids, 0), vectors.dtype)
        vectors = vectors * ops.expand_dims(nonpadding, -1)
        return ops.cast(vectors, self.compute_dtype)

    def logits(self, hidden_states):
        """Returns float32 logits `hidden_states @ embeddings^T`.

        Args:
            hidden_states: `[..., hidden_size]`, any float dtype.

        Returns:
            float32 `[..., vocab_size]`.
        """
        if not self.built:
            self.build()
        hidden_states = ops.cast(hidden_states, "float32")
        weights = ops.cast(self.embeddings, "float32")
        return ops.matmul(hidden_states, ops.transpose(weights))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape) + (self.hidden_size,)

    def get_config(self):
        config = super().get_config()
        config.update(
            vocab_size=self.vocab_size,
            hidden_size=self.hidden_size,
            scale_by_sqrt_depth=self.scale_by_sqrt_depth,
            embeddings_initializer=keras.initializers.serialize(self.embeddings_initializer),
        )
        return config
