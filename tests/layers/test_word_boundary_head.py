"""WordBoundaryHead: the layer contract, which encoder frame each feature frame
reads, and that the encoder gets no gradient from it."""

import numpy as np
import tensorflow as tf

from t2t_lite.layers import WordBoundaryHead


def _inputs(frames=13, encoder_frames=3):
    rng = np.random.default_rng(0)
    return {
        "features": rng.normal(size=(2, frames, 6, 3)).astype("float32"),
        "memory": rng.normal(size=(2, encoder_frames, 8)).astype("float32"),
    }


def test_layer_contract(run_layer_test):
    run_layer_test(
        WordBoundaryHead,
        {"hidden": 4, "kernel_size": 3},
        _inputs(),
        expected_output_shape=(2, 13, 2),
        expected_num_trainable_weights=8,
        # (18 + 8) * 4 + 4, then two 3-wide convolutions 4 -> 4, then 4 -> 2.
        expected_trainable_params=(26 * 4 + 4) + 2 * (3 * 4 * 4 + 4) + (4 * 2 + 2),
    )


def test_each_feature_frame_reads_the_encoder_frame_centred_nearest_it():
    head = WordBoundaryHead()
    index = head.encoder_frame_of(20, 3).numpy().tolist()
    # Encoder frame t's window is centred on feature frame 7 + 4t, and its
    # 40 ms are frames 5 + 4t .. 8 + 4t; frames before the first or after
    # the last read the edge frame.
    assert index[:9] == [0] * 9 and index[9:13] == [1] * 4 and index[13:] == [2] * 7


def test_the_encoder_output_gets_no_gradient():
    head = WordBoundaryHead(hidden=4)
    inputs = {name: tf.constant(value) for name, value in _inputs().items()}
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(inputs["memory"])
        tape.watch(inputs["features"])
        total = tf.reduce_sum(head(inputs["features"], inputs["memory"]))
    assert tape.gradient(total, inputs["memory"]) is None
    assert tape.gradient(total, inputs["features"]) is not None
