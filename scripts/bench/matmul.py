"""The machine's limit: dense float32 matmul GFLOP/s, measured by TensorFlow."""

from __future__ import annotations

import time

import numpy as np
import tensorflow as tf

from .flops import matmul_flops
from .sizes import Sizes


class Matmul:
    """`matmul_repeats` chained `N x N` matmuls in one `tf.function` per repetition.

    The right-hand matrix is scaled by `1 / sqrt(N)` so values stay finite
    however long the chain.
    """

    def __init__(self, sizes: Sizes):
        size = sizes.matmul_size
        rng = np.random.default_rng(0)
        self.left = tf.constant(rng.standard_normal((size, size), dtype=np.float32))
        right = rng.standard_normal((size, size)) / np.sqrt(size)
        self.right = tf.constant(right.astype(np.float32))
        self.repeats = sizes.matmul_repeats
        self.flops = matmul_flops(size)

        @tf.function
        def chain(left, right, repeats):
            for _ in tf.range(repeats):
                left = tf.matmul(left, right)
            return tf.reduce_sum(left)

        self.chain = chain
        for _ in range(sizes.warmup):
            self.run()

    def run(self) -> dict:
        start = time.perf_counter()
        self.chain(self.left, self.right, tf.constant(self.repeats)).numpy()
        seconds = time.perf_counter() - start
        return {"seconds": seconds, "units": float(self.flops * self.repeats)}
