"""Shared fixtures for the layer tests."""

import importlib.util
import pathlib

import keras
import numpy as np
import pytest

# Importlib mode (pyproject.toml) keeps this folder off sys.path: load by path.
_spec = importlib.util.spec_from_file_location(
    "layer_test_harness", pathlib.Path(__file__).with_name("harness.py")
)
harness = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(harness)


@pytest.fixture
def mixed_bfloat16():
    """Runs a test under the global mixed_bfloat16 policy, then restores it."""
    previous = keras.mixed_precision.dtype_policy()
    keras.mixed_precision.set_dtype_policy("mixed_bfloat16")
    try:
        yield
    finally:
        keras.mixed_precision.set_dtype_policy(previous)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture(name="run_layer_test")
def run_layer_test_fixture():
    """`harness.run_layer_test`: the contract every layer keeps (see its docstring)."""
    return harness.run_layer_test
