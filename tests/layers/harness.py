"""The contract every t2t_lite layer keeps, checked in one call (as keras-hub's
`TestCase.run_layer_test`); each layer's test file adds its behaviour tests.

Test modules get `run_layer_test` from the fixture of the same name
(`conftest.py`): in pytest's importlib mode they cannot import this module.
"""

import tempfile

import keras
import numpy as np


def _call(layer, inputs, call_kwargs, **extra):
    """`layer(first_input, **other_inputs, **call_kwargs, **extra)`."""
    (_, first), *others = inputs.items()
    return layer(first, **dict(others), **call_kwargs, **extra)


def _arrays(outputs):
    return [np.asarray(keras.ops.convert_to_numpy(o)) for o in keras.tree.flatten(outputs)]


def _assert_outputs_equal(actual, expected, atol=0.0, what="outputs"):
    for got, want in zip(_arrays(actual), _arrays(expected), strict=True):
        np.testing.assert_allclose(
            got.astype("float32"), want.astype("float32"), atol=atol, rtol=0, err_msg=what
        )


def run_layer_test(
    layer_cls,
    init_kwargs,
    inputs,
    *,
    expected_output_shape,
    expected_num_trainable_weights,
    expected_trainable_params,
    expected_num_non_trainable_weights=0,
    call_kwargs=None,
    supports_dropout=False,
    run_mixed_precision=True,
    mixed_precision_tolerance=2**-5,
    run_saving=True,
):
    """Checks the contract of a layer; returns the (float32, built) layer.

    Args:
        layer_cls: the layer class.
        init_kwargs: constructor arguments; use non-default values, so that
            the config round trip means something. Every one must appear in
            `get_config()` (with the same value, for numbers, strings and
            sequences).
        inputs: one array, or a dict of call argument name -> array (the
            first passed positionally, the others by keyword).
        expected_output_shape: the output's shape; a list of shapes for a
            layer that returns several tensors.
        expected_num_trainable_weights: number of trainable variables.
        expected_trainable_params: number of trainable scalars.
        expected_num_non_trainable_weights: number of non-trainable variables.
        call_kwargs: non-tensor call arguments, passed to every call.
        supports_dropout: `init_kwargs` set dropout, high enough (e.g. 0.5)
            that `training=True` surely changes the output: it must, and
            the default call must equal `training=False`, deterministically.
        run_mixed_precision: build the layer with `dtype="mixed_bfloat16"`
            (as the models pass their policy to every layer), copy the
            weights in: floating outputs are bfloat16, variables float32, and
            outputs within `mixed_precision_tolerance * max(1, |float32 outputs|)`
            of the float32 ones (bfloat16 keeps 8 significant bits: 2**-8).
        mixed_precision_tolerance: see `run_mixed_precision`.
        run_saving: save a functional model around the layer (length axis 1
            dynamic) to `.keras`, load it: outputs equal within 1e-6.
    """
    inputs = dict(inputs) if isinstance(inputs, dict) else {"inputs": inputs}
    call_kwargs = dict(call_kwargs or {})
    keras.utils.set_random_seed(0)  # the same weights and dropout masks every run
    layer = layer_cls(**init_kwargs)
    _call(layer, inputs, call_kwargs)
    # Move every variable off its initial value (biases 0, norm scales 1), so
    # that a variable that is not copied, saved or restored is noticed.
    rng = np.random.default_rng(0)
    for weight in layer.weights:
        weight.assign(weight.numpy() + rng.normal(scale=0.1, size=weight.shape))
    output = _call(layer, inputs, call_kwargs)

    shapes = [tuple(o.shape) for o in keras.tree.flatten(output)]
    multi = isinstance(expected_output_shape, list)
    assert shapes == (expected_output_shape if multi else [tuple(expected_output_shape)])

    # Weight counts.
    assert len(layer.trainable_weights) == expected_num_trainable_weights
    assert len(layer.non_trainable_weights) == expected_num_non_trainable_weights
    params = sum(int(np.prod(w.shape)) for w in layer.trainable_weights)
    assert params == expected_trainable_params

    # Config round trip: the same config, the same outputs with the same weights.
    config = layer.get_config()
    for key, value in init_kwargs.items():
        assert key in config, f"get_config() lacks {key!r}"
        if isinstance(config[key], int | float | str | list):
            assert config[key] == (list(value) if isinstance(value, tuple) else value), key
    clone = layer_cls.from_config(config)
    assert clone.get_config() == config
    assert isinstance(keras.layers.deserialize(keras.layers.serialize(layer)), layer_cls)
    _call(clone, inputs, call_kwargs)
    clone.set_weights(layer.get_weights())
    _assert_outputs_equal(_call(clone, inputs, call_kwargs), output, 1e-6, "from_config")

    if supports_dropout:
        inference = _call(layer, inputs, call_kwargs, training=False)
        _assert_outputs_equal(inference, output, what="training=False")
        _assert_outputs_equal(_call(layer, inputs, call_kwargs), output, what="deterministic")
        trained = _arrays(_call(layer, inputs, call_kwargs, training=True))
        assert not np.allclose(trained[0], _arrays(output)[0]), "dropout had no effect"

    if run_saving:
        symbolic = {
            name: keras.Input(
                (None,) * (array.ndim > 1) + array.shape[2:], dtype=array.dtype, name=name
            )
            for name, array in inputs.items()
        }
        model = keras.Model(symbolic, _call(layer, symbolic, call_kwargs))
        with tempfile.TemporaryDirectory() as directory:
            path = f"{directory}/{layer_cls.__name__}.keras"
            model.save(path)
            restored = keras.models.load_model(path)
        _assert_outputs_equal(restored(inputs), model(inputs), 1e-6, ".keras round trip")
        _assert_outputs_equal(model(inputs), output, 1e-6, "functional model")

    if run_mixed_precision:
        mixed = layer_cls(**{**init_kwargs, "dtype": "mixed_bfloat16"})
        _call(mixed, inputs, call_kwargs)
        mixed.set_weights(layer.get_weights())
        assert all(w.dtype == "float32" for w in mixed.weights)
        mixed_output = _call(mixed, inputs, call_kwargs)
        for got in keras.tree.flatten(mixed_output):
            if keras.backend.is_float_dtype(got.dtype):
                assert keras.backend.standardize_dtype(got.dtype) == "bfloat16"
        scale = max(1.0, max(float(np.abs(a).max()) for a in _arrays(output)))
        _assert_outputs_equal(
            mixed_output, output, mixed_precision_tolerance * scale, "mixed_bfloat16"
        )
    return layer
