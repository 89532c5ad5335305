"""T2T's weight initializers by name."""

from __future__ import annotations

import keras


def make_initializer(name: str, gain: float) -> keras.initializers.Initializer:
    """T2T's `initializer`/`initializer_gain` hparams as a Keras initializer."""
    if name == "uniform_unit_scaling":  # T2T: variance scaling, fan_avg, uniform
        return keras.initializers.VarianceScaling(gain, "fan_avg", "uniform")
    if name == "normal_unit_scaling":
        return keras.initializers.VarianceScaling(gain, "fan_avg", "truncated_normal")
    if name == "xavier":
        return keras.initializers.GlorotUniform()
    return keras.initializers.Orthogonal(gain)  # "orthogonal"; the config checks the name
