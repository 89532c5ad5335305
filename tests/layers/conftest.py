"""Shared fixtures for the layer tests."""

import keras
import numpy as np
import pytest


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
