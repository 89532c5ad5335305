"""T2T's Adafactor (training/adafactor.py): finite where Keras's Adafactor is NaN,
and the values of T2T's update formulas, recomputed by hand in NumPy."""

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.training.adafactor import Adafactor


def apply_steps(optimizer, initial, gradients, dtype="float32"):
    """Applies each gradient in turn to a variable starting at `initial`."""
    import keras

    variable = keras.Variable(np.asarray(initial, np.float32), dtype=dtype)
    for gradient in gradients:
        optimizer.apply([tf.constant(np.asarray(gradient, np.float32), dtype=dtype)], [variable])
    return np.asarray(variable.numpy(), np.float32), optimizer


def rms(x):
    return np.sqrt(np.mean(np.square(x)))


def t2t_reference(w, gradients, lr, beta1=0.0, clip=1.0, exponent=0.8, scale_by_param=True):
    """T2T's `_resource_apply_dense` step by step, in float64 NumPy."""
    w = np.asarray(w, np.float64)
    factored = w.ndim >= 2
    vr = np.zeros(w.shape[:-1]) if factored else None
    vc = np.zeros(w.shape[:-2] + w.shape[-1:]) if factored else None
    v = None if factored else np.zeros(w.shape)
    m = np.zeros(w.shape)
    for step, g in enumerate(gradients):
        g = np.asarray(g, np.float64)
        decay = 1.0 - (step + 1.0) ** -exponent
        g2 = g**2 + 1e-30
        if factored:
            vr = decay * vr + (1 - decay) * g2.mean(-1)
            vc = decay * vc + (1 - decay) * g2.mean(-2)
            r_factor = 1 / np.sqrt(vr / vr.mean(-1, keepdims=True))
            c_factor = 1 / np.sqrt(vc)
            x = g * r_factor[..., :, None] * c_factor[..., None, :]
        else:
            v = decay * v + (1 - decay) * g2
            x = g / np.sqrt(v)
        if clip:
            x = x / max(1.0, rms(x) / clip)
        update_scale = lr * max(rms(w), 1e-3) if scale_by_param else lr
        subtrahend = update_scale * x
        if beta1:
            m = beta1 * m + (1 - beta1) * subtrahend
            subtrahend = m
        w = w - subtrahend
    return w


def zero_row_and_column(shape=(3, 3)):
    rng = np.random.default_rng(0)
    gradient = rng.normal(size=shape).astype(np.float32)
    gradient[..., 1, :] = 0.0
    gradient[..., :, 2] = 0.0
    return gradient


def test_zero_row_and_column_leaves_every_weight_finite():
    initial = np.random.default_rng(1).normal(size=(3, 3))
    gradient = zero_row_and_column()
    updated, _ = apply_steps(Adafactor(0.01), initial, [gradient])
    assert np.all(np.isfinite(updated))
    # The zero row and column do not move (grad 0 -> update 0); the rest does.
    np.testing.assert_array_equal(updated[1], initial[1].astype(np.float32))
    np.testing.assert_array_equal(updated[:, 2], initial[:, 2].astype(np.float32))
    assert not np.allclose(updated[0, 0], initial[0, 0])
    # Two more steps, and a rank-3 variable (factored over its last two dims).
    updated, _ = apply_steps(Adafactor(0.01), initial, [gradient] * 3)
    assert np.all(np.isfinite(updated))
    updated, _ = apply_steps(
        Adafactor(0.01), np.ones((2, 3, 4)), [zero_row_and_column((2, 3, 4))] * 2
    )
    assert np.all(np.isfinite(updated))


@pytest.mark.parametrize("shape", [(3, 4), (5,)])
def test_all_zero_gradients_change_nothing_and_stay_finite(shape):
    initial = np.random.default_rng(2).normal(size=shape)
    updated, _ = apply_steps(Adafactor(0.01, beta1=0.9), initial, [np.zeros(shape)] * 2)
    np.testing.assert_array_equal(updated, initial.astype(np.float32))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_variables_get_finite_float32_computed_updates(dtype):
    initial = np.random.default_rng(3).normal(size=(4, 6))
    gradients = [zero_row_and_column((4, 6)), np.full((4, 6), 1e-4)]
    updated, optimizer = apply_steps(Adafactor(0.01), initial, gradients, dtype=dtype)
    assert np.all(np.isfinite(updated))
    assert not np.allclose(updated, initial.astype(dtype).astype(np.float32))
    # float16 cannot hold epsilon1 (1e-30): the state is float32 whatever the variable.
    assert all(v.dtype == "float32" for v in optimizer.variables if "_v" in v.path)
    expected = t2t_reference(initial.astype(dtype).astype(np.float32), gradients, 0.01)
    tolerance = 1e-2 if dtype == "bfloat16" else 2e-3
    np.testing.assert_allclose(updated, expected, atol=tolerance * 4, rtol=tolerance)


CASES = {
    # (shape, beta1): clipping is active in every case (see below).
    "factored": ((3, 4), 0.0),
    "factored_beta1": ((3, 4), 0.9),
    "unfactored": ((5,), 0.0),
    "unfactored_beta1": ((5,), 0.9),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_two_steps_match_t2ts_formulas(case):
    shape, beta1 = CASES[case]
    rng = np.random.default_rng(4)
    initial = rng.normal(size=shape)
    # An outlier (factored: rms(x) > 1 at step 1), then a 10x larger
    # gradient (rms(x) > 1 at step 2): clipping acts.
    first = rng.normal(size=shape)
    first.flat[0] = 100.0
    gradients = [first, 10.0 * rng.normal(size=shape)]
    optimizer = Adafactor(0.01, beta1=beta1, clipping_threshold=1.0)
    updated, _ = apply_steps(optimizer, initial, gradients)
    expected = t2t_reference(initial, gradients, 0.01, beta1=beta1)
    np.testing.assert_allclose(updated, expected, rtol=1e-5, atol=1e-6)
    unclipped = t2t_reference(initial, gradients, 0.01, beta1=beta1, clip=0.0)
    assert not np.allclose(expected, unclipped, rtol=1e-4)  # clipping was active


def test_without_parameter_scale_the_step_is_the_learning_rate():
    rng = np.random.default_rng(5)
    initial, gradient = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
    optimizer = Adafactor(0.05, multiply_by_parameter_scale=False, clipping_threshold=0.0)
    updated, _ = apply_steps(optimizer, initial, [gradient])
    expected = t2t_reference(initial, [gradient], 0.05, clip=0.0, scale_by_param=False)
    np.testing.assert_allclose(updated, expected, rtol=1e-5, atol=1e-6)


def test_adam_decay_type_and_unfactored_matrix():
    """decay_type "Adam": decay = beta2 (1 - beta2^t) / (1 - beta2^(t+1)); the
    first step's decay is 0, the second's beta2 / (1 + beta2)."""
    rng = np.random.default_rng(6)
    initial = rng.normal(size=(2, 3))
    g1, g2 = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
    optimizer = Adafactor(0.01, decay_type="Adam", beta2=0.9, factored=False)
    updated, _ = apply_steps(optimizer, initial, [g1, g2])
    w = initial.copy()
    decay = 0.9 / 1.9
    v1 = g1**2 + 1e-30
    v2 = decay * v1 + (1 - decay) * (g2**2 + 1e-30)
    for g, v in ((g1, v1), (g2, v2)):
        x = g / np.sqrt(v)
        x = x / max(1.0, rms(x))
        w = w - 0.01 * max(rms(w), 1e-3) * x
    np.testing.assert_allclose(updated, w, rtol=1e-5, atol=1e-6)


def test_state_is_mirrored_and_checkpointed(tmp_path):
    """Built under a strategy's scope, as the trainer builds it; the slots
    round-trip through tf.train.Checkpoint."""
    import keras

    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    with strategy.scope():
        variable = keras.Variable(np.ones((3, 4), np.float32), name="kernel")
        optimizer = Adafactor(0.01, beta1=0.5)
        optimizer.build([variable])
    names = sorted(v.path for v in optimizer.variables)
    assert [n for n in names if n.endswith(("_vr", "_vc", "_m"))] == [
        "adafactor/kernel_m",
        "adafactor/kernel_vc",
        "adafactor/kernel_vr",
    ]
    assert all(isinstance(v.value, tf.distribute.DistributedValues) for v in optimizer.variables)
    gradient = tf.constant(zero_row_and_column((3, 4)))
    strategy.run(tf.function(lambda: optimizer.apply([gradient], [variable])))
    saved = {v.path: v.numpy().copy() for v in optimizer.variables}
    path = tf.train.Checkpoint(optimizer=optimizer).save(str(tmp_path / "ckpt"))
    for v in optimizer.variables:
        v.assign(tf.zeros_like(v))
    tf.train.Checkpoint(optimizer=optimizer).restore(path).assert_consumed()
    for v in optimizer.variables:
        np.testing.assert_array_equal(v.numpy(), saved[v.path])
    assert np.all(np.isfinite(variable.numpy()))
