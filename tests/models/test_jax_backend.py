"""The layers and the model are backend-agnostic Keras 3 (math in `keras.ops`):
under the JAX backend the Transformer runs forward, its loss differentiates,
and a gradient step changes the loss. Run in a subprocess, since Keras fixes
its backend at import."""

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import os
    os.environ["KERAS_BACKEND"] = "jax"
    import jax
    import keras
    import numpy as np
    from keras import ops

    assert keras.backend.backend() == "jax"
    from t2t_lite.models.transformer import Transformer
    from t2t_lite.models.transformer_config import TransformerConfig

    # Seeded: the weights' initialization too (CI once drew weights where a
    # fixed step of 0.5 overshot: 2.7772 -> 2.7788).
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    targets = rng.integers(2, 12, size=(2, 5)).astype("int32")
    targets[:, -1] = 1
    cases = {
        "speech": {"inputs": rng.normal(size=(2, 24, 80, 3)).astype("float32"),
                   "inputs_length": np.array([24, 17], "int32")},
        "symbol": {"inputs": rng.integers(2, 12, size=(2, 6)).astype("int32")},
    }
    for modality, inputs in cases.items():
        config = TransformerConfig(
            target_vocab_size=12, input_modality=modality, input_vocab_size=12,
            hidden_size=16, filter_size=32, num_heads=2, num_encoder_layers=1,
            num_decoder_layers=1, speech_front_end_filters=4, ffn_layer="conv_relu_conv",
            ctc_head=modality == "speech",
        )
        model = Transformer(config)
        features = {**inputs, "targets": targets}
        logits = model(features, training=False)
        assert isinstance(logits, jax.Array), type(logits)
        assert logits.shape == (2, 5, 12), logits.shape

        trainable = [v.value for v in model.trainable_variables]
        fixed = [v.value for v in model.non_trainable_variables]

        def loss_fn(trainable):
            out, _ = model.stateless_call(trainable, fixed, features, training=False)
            return ops.mean(ops.sparse_categorical_crossentropy(targets, out, from_logits=True))

        loss, grads = jax.value_and_grad(loss_fn)(trainable)
        norms = [float(ops.sum(g * g)) for g in grads]
        assert all(np.isfinite(norms)) and sum(n > 0 for n in norms) > len(norms) // 2, norms
        stepped = [w - 0.05 * g for w, g in zip(trainable, grads)]  # small: descent holds
        assert float(loss_fn(stepped)) < float(loss), (float(loss_fn(stepped)), float(loss))
        print(modality, "ok", float(loss))
    """
)


def test_transformer_forward_and_backward_under_jax():
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "speech ok" in result.stdout and "symbol ok" in result.stdout, result.stdout
