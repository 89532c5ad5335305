"""Trains the same global batches under the default strategy and under
MirroredStrategy over two logical CPUs; prints both loss curves as JSON.

Run as a subprocess: logical devices must be configured before TF starts.
"""

import json
import sys

import numpy as np
import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

from t2t_lite import registry  # noqa: E402
from t2t_lite.models.transformer import Transformer  # noqa: E402
from t2t_lite.training.optimizers import make_optimizer  # noqa: E402
from t2t_lite.training.train_step import (  # noqa: E402
    StepSettings,
    make_replica_step,
    make_train_loop,
)

STEPS = 6


def batches():
    rng = np.random.default_rng(0)
    data = []
    for _ in range(STEPS):
        targets = np.zeros((8, 9), np.int32)
        inputs = np.zeros((8, 7), np.int32)
        for row in range(8):
            n = rng.integers(2, 9)
            targets[row, : n - 1] = rng.integers(2, 12, n - 1)
            targets[row, n - 1] = 1
            m = rng.integers(2, 7)
            inputs[row, :m] = rng.integers(2, 12, m)
        data.append({"inputs": inputs, "targets": targets})
    return data


def curve(strategy):
    tf.keras.utils.set_random_seed(1)
    hparams = registry.hparams("transformer_tiny").parse(
        "hidden_size=32,filter_size=64,num_heads=4,layer_prepostprocess_dropout=0.0,"
        "attention_dropout=0.0,relu_dropout=0.0,clip_grad_norm=1.0"
    )
    data = batches()
    with strategy.scope():
        model = Transformer.from_hparams(
            hparams, input_modality="symbol", input_vocab_size=12, target_vocab_size=12
        )
        model({k: v[:1] for k, v in data[0].items()})
        optimizer = make_optimizer(hparams, 1e-3)
        optimizer.build(model.trainable_variables)
    settings = StepSettings(0.1, hparams.clip_grad_norm, 0.0, 0.01)
    loop = make_train_loop(strategy, make_replica_step(model, optimizer, settings), False)
    dataset = tf.data.Dataset.from_generator(
        lambda: iter(data),
        output_signature={
            "inputs": tf.TensorSpec([8, 7], tf.int32),
            "targets": tf.TensorSpec([8, 9], tf.int32),
        },
    )
    iterator = iter(strategy.experimental_distribute_dataset(dataset))
    losses = [float(loop(iterator, tf.constant(1))["loss"]) for _ in range(STEPS)]
    checksum = float(sum(np.sum(w.numpy(), dtype=np.float64) for w in model.weights))
    return {"losses": losses, "checksum": checksum}


if __name__ == "__main__":
    mirrored = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    assert mirrored.num_replicas_in_sync == 2
    result = {"default": curve(tf.distribute.get_strategy()), "mirrored": curve(mirrored)}
    json.dump(result, sys.stdout)
