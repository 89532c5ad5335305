import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.layers import SpeechFrontEnd

BINS = 80
CHANNELS = 3
HIDDEN = 16


@pytest.fixture(scope="module")
def front_end():
    layer = SpeechFrontEnd(HIDDEN, num_filters=8)
    layer(np.zeros((1, 8, BINS, CHANNELS), "float32"))
    # Non-zero norm biases: padded positions then differ from zero after the
    # norm, which the invariance tests must survive.
    for norm in layer._block_norms:
        norm.beta.assign(np.linspace(-1, 1, 8).astype("float32"))
    layer._fold_norm.beta.assign(np.linspace(-1, 1, HIDDEN).astype("float32"))
    return layer


def features(frames, seed=0):
    return np.random.default_rng(seed).normal(size=(2, frames, BINS, CHANNELS)).astype("float32")


@pytest.mark.parametrize("frames", [13, 16, 17])
def test_reduces_time_4x(front_end, frames):
    outputs, mask = front_end(features(frames), np.ones((2, frames), "float32"))
    reduced = -(-frames // 4)
    assert outputs.shape == (2, reduced, HIDDEN)
    assert mask.shape == (2, reduced)


def numpy_conv2d(x, kernel, stride):
    """VALID 2-D convolution `[batch, time, freq, in]` -> `[batch, time', freq', out]`."""
    kt, kf = kernel.shape[:2]
    times = range(0, x.shape[1] - kt + 1, stride)
    freqs = range(0, x.shape[2] - kf + 1, stride)
    return np.stack(
        [
            np.stack(
                [np.einsum("btfc,tfco->bo", x[:, t : t + kt, f : f + kf], kernel) for f in freqs],
                axis=1,
            )
            for t in times
        ],
        axis=1,
    )


def t2t_layer_norm_relu(x, gamma, beta):
    """T2T's `layer_norm` (last axis, epsilon 1e-6) followed by a ReLU."""
    mean = x.mean(-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(-1, keepdims=True)
    return np.maximum((x - mean) / np.sqrt(variance + 1e-6) * gamma + beta, 0.0)


def test_matches_t2t_formula():
    # Every block, the last included: conv -> layer_norm -> relu.
    layer = SpeechFrontEnd(HIDDEN, num_filters=4)
    data = np.random.default_rng(7).normal(size=(2, 9, 20, 1)).astype("float32")
    layer(data)
    rng = np.random.default_rng(8)
    norms = [*layer._block_norms, layer._fold_norm]
    for norm in norms:
        norm.gamma.assign(rng.uniform(0.5, 1.5, norm.gamma.shape).astype("float32"))
        norm.beta.assign(rng.normal(size=norm.beta.shape).astype("float32"))
    x = data
    for conv, norm in zip(layer._block_convs, layer._block_norms, strict=True):
        x = np.pad(x, [[0, 0], [0, 2], [0, 0], [0, 0]])
        x = numpy_conv2d(x, conv.kernel.numpy(), 2)
        x = t2t_layer_norm_relu(x, norm.gamma.numpy(), norm.beta.numpy())
    x = np.pad(x, [[0, 0], [0, 2], [0, 0], [0, 0]])  # T2T's: output t sees t .. t+2
    x = numpy_conv2d(x, layer._fold_conv.kernel.numpy(), 1)[:, :, 0]
    fold_norm = layer._fold_norm
    expected = t2t_layer_norm_relu(x, fold_norm.gamma.numpy(), fold_norm.beta.numpy())
    outputs, _ = layer(data)
    assert expected.shape == (2, 3, HIDDEN)
    np.testing.assert_allclose(outputs.numpy(), expected, atol=1e-4)


def test_output_is_relu_of_a_layer_norm(front_end):
    # Padded positions stay exactly zero even though relu(norm bias) is not.
    mask = np.zeros((2, 16), "float32")
    mask[:, :10] = 1.0
    outputs, reduced = front_end(features(16), mask)
    outputs = outputs.numpy()
    assert (outputs >= 0).all()
    assert outputs[:, :3].any(axis=-1).all()
    assert not outputs[:, 3:].any()
    np.testing.assert_array_equal(reduced.numpy(), mask[:, ::4])


def test_folds_frequency_80_39_19(front_end):
    kernel = front_end._fold_conv.kernel
    assert tuple(kernel.shape) == (3, 19, 8, HIDDEN)


def test_padding_changes_no_real_output(front_end):
    real = 10  # -> 3 real outputs of 4
    mask = np.zeros((2, 16), "float32")
    mask[:, :real] = 1.0
    clean = features(16)
    clean[:, real:] = 0.0
    noisy = clean.copy()
    noisy[:, real:] = 100.0
    clean_out, reduced = front_end(clean, mask)
    noisy_out, _ = front_end(noisy, mask)
    np.testing.assert_array_equal(reduced.numpy(), mask[:, ::4])
    np.testing.assert_allclose(noisy_out.numpy()[:, :3], clean_out.numpy()[:, :3], atol=1e-5)
    assert not noisy_out.numpy()[:, 3:].any()


def test_more_padding_gives_same_real_outputs(front_end):
    utterance = features(10)
    exact, _ = front_end(utterance, np.ones((2, 10), "float32"))
    for total in (11, 12, 17):
        padded = np.concatenate([utterance, features(total - 10, seed=total)], axis=1)
        mask = (np.arange(total) < 10).astype("float32")[None].repeat(2, 0)
        outputs, reduced = front_end(padded, mask)
        np.testing.assert_allclose(outputs.numpy()[:, :3], exact.numpy(), atol=1e-5)
        assert reduced.numpy().sum(axis=1).tolist() == [3.0, 3.0]


def test_per_example_lengths(front_end):
    data = features(12)
    mask = np.zeros((2, 12), "float32")
    mask[0, :12] = 1.0
    mask[1, :5] = 1.0
    outputs, _ = front_end(data, mask)
    alone, _ = front_end(data[1:, :5], mask[1:, :5])
    np.testing.assert_allclose(outputs.numpy()[1:, :2], alone.numpy(), atol=1e-5)


def test_dynamic_frames_in_graph(front_end):
    @tf.function(
        input_signature=[
            tf.TensorSpec([None, None, BINS, CHANNELS], tf.float32),
            tf.TensorSpec([None, None], tf.float32),
        ]
    )
    def run(data, mask):
        return front_end(data, mask)

    data = features(13)
    mask = np.ones((2, 13), "float32")
    graph_out, graph_mask = run(data, mask)
    eager_out, eager_mask = front_end(data, mask)
    np.testing.assert_allclose(graph_out.numpy(), eager_out.numpy(), atol=1e-5)
    np.testing.assert_array_equal(graph_mask.numpy(), eager_mask.numpy())


def test_no_mask_means_all_real(front_end):
    data = features(9)
    outputs, mask = front_end(data)
    expected, _ = front_end(data, np.ones((2, 9), "float32"))
    np.testing.assert_allclose(outputs.numpy(), expected.numpy(), atol=1e-6)
    assert mask.numpy().tolist() == [[1.0, 1.0, 1.0]] * 2


def test_too_few_bins_raise():
    with pytest.raises(ValueError, match="at least 7 frequency bins"):
        SpeechFrontEnd(HIDDEN, num_filters=4)(np.zeros((1, 8, 6, 1), "float32"))


def test_layer_contract(run_layer_test):
    # 20 bins -> 9 -> 4 after the two stride-2 blocks; 9 frames -> 5 -> 3.
    data = np.random.default_rng(5).normal(size=(2, 9, 20, 1)).astype("float32")
    mask = np.ones((2, 9), "float32")
    mask[1, 6:] = 0.0
    run_layer_test(
        SpeechFrontEnd,
        dict(hidden_size=HIDDEN, num_filters=4, kernel_initializer="he_uniform"),
        dict(features=data, nonpadding_mask=mask),
        expected_output_shape=[(2, 3, HIDDEN), (2, 3)],
        # 3 kernels (no biases), a gamma and a beta in each of the 3 LayerNorms.
        expected_num_trainable_weights=9,
        # conv1 3 * 3 * 1 * 4 + norm 2 * 4, conv2 3 * 3 * 4 * 4 + norm 2 * 4,
        # fold conv 3 * 4 * 4 * 16 + norm 2 * 16: 36 + 8 + 144 + 8 + 768 + 32
        expected_trainable_params=996,
    )
