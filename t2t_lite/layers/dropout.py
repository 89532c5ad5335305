"""Keras' Dropout with half the random-number work on TensorFlow."""

import keras

# Bits of randomness behind each keep-or-drop decision.
_MASK_BITS = 16


@keras.saving.register_keras_serializable(package="t2t_lite")
class Dropout(keras.layers.Dropout):
    """`keras.layers.Dropout`, drawing 16 random bits per decision on TensorFlow.

    TensorFlow's dropout draws a float32 uniform per element (32 Philox bits,
    then a conversion) and keeps it when it is >= `rate`: a measurable share
    of a Transformer's training step on a CPU (docs/benchmarks.md, "Figures
    behind choices in the code"). Here each 32-bit Philox word decides
    two elements: a 16-bit half is kept when it is >= `round(rate * 2**16)`,
    so an element is dropped with probability `rate` to within 2**-17, and
    kept values are scaled by `1 / (1 - rate)` as TensorFlow and T2T scale
    them. Masks broadcast along `noise_shape`'s 1s as Keras' do. On other
    backends, and outside training, this is Keras' own Dropout.

    Args:
        rate: fraction of the inputs to drop, in `[0, 1)`.
        noise_shape: as `keras.layers.Dropout`'s (None entries take the
            input's size, 1s share one decision along that axis).
        seed: as `keras.layers.Dropout`'s.
        **kwargs: base `keras.layers.Layer` arguments.

    Returns:
        The inputs with each element (or each mask cell) dropped with
        probability `rate` in training, unchanged otherwise.

    Example:
    >>> import numpy as np
    >>> layer = Dropout(0.5, seed=1)
    >>> outputs = layer(np.ones((2, 1000), "float32"), training=True)
    >>> sorted(set(np.asarray(outputs).ravel().tolist()))
    [0.0, 2.0]
    """

    def call(self, inputs, training=False):
        if not training or self.rate == 0 or keras.backend.backend() != "tensorflow":
            return super().call(inputs, training=training)
        import tensorflow as tf

        shape = tf.shape(inputs)
        if self.noise_shape is not None:
            shape = tf.stack(
                [shape[i] if size is None else size for i, size in enumerate(self.noise_shape)]
            )
        size = tf.reduce_prod(shape)
        # Stateless ops take int32 seeds under XLA; Keras keeps int64 state.
        seed = tf.cast(tf.math.floormod(self.seed_generator.next(), 2**31 - 1), tf.int32)
        words = tf.random.stateless_uniform(
            [(size + 1) // 2],
            seed=seed,
            minval=None,
            maxval=None,
            dtype=tf.uint32,
        )
        halves = tf.reshape(tf.bitcast(words, tf.uint16), [-1])[:size]  # [2 * words]
        threshold = min(round(self.rate * 2**_MASK_BITS), 2**_MASK_BITS - 1)
        threshold = tf.constant(threshold, tf.uint16)
        keep = tf.reshape(halves, shape) >= threshold
        scale = tf.constant(1.0 / (1.0 - self.rate), inputs.dtype)
        return tf.where(keep, inputs * scale, tf.zeros([], inputs.dtype))
