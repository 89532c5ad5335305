"""What a `tf.train.Checkpoint` saves of a Keras 3 model: every weight, by path.

Keras 3's own TF-checkpoint tracking misses sublayers held in Python lists
and some built in `build()` (a checkpoint of the Transformer held one
variable of seventy), so checkpoints name each weight by its path inside the
model instead: `encoder_layer_0/self_attention/query/kernel`. The paths come
from explicit layer names, so they are the same in every process.
"""

from __future__ import annotations

import tensorflow as tf


def model_weights(model) -> tf.Module:
    """A trackable holding `model`'s weights keyed by their model-relative path.

    Use it as `tf.train.Checkpoint(model=model_weights(model), ...)`; the model
    must be built.

    Raises:
        ValueError: the model is not built, or two weights share a path.
    """
    if not model.weights:
        raise ValueError(f"model {model.name} has no weights yet: call it once first.")
    by_path = {}
    for weight in model.weights:
        path = weight.path.split("/", 1)[1] if "/" in weight.path else weight.path
        if path in by_path:
            raise ValueError(f"two weights of {model.name} share the path {path!r}.")
        by_path[path] = weight
    module = tf.Module(name="model_weights")
    module.weights_by_path = by_path
    return module
