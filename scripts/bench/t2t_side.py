"""t2t-lite's contenders: the trainer's real step, and cached vs uncached beam search.

Training runs `make_replica_step` inside `make_train_loop` under the
default strategy, exactly as `Trainer.train` does: one `tf.function` call
runs `steps` optimizer steps (`xla_compile=True` compiles the step with XLA,
the trainer's `--xla_compile`). The optimizer comes from `make_optimizer`
with `transformer_base`'s Adam(0.9, 0.997, 1e-9).

Decoding uses `BatchDecoder` (cached beam search in a `tf.function`) and,
as the reference, the same `beam_search` with a `symbols_to_logits_fn` that
recomputes the decoder over the whole prefix each step (as
`tests/decoding/test_beam_search.py` writes it).
"""

from __future__ import annotations

import time

import numpy as np
import tensorflow as tf

from t2t_lite import registry
from t2t_lite.data.text_encoders import EOS_ID
from t2t_lite.decoding.beam_search import beam_search
from t2t_lite.decoding.decode import BatchDecoder, decode_hparams
from t2t_lite.models.transformer import Transformer
from t2t_lite.training.optimizers import make_optimizer
from t2t_lite.training.train_step import StepSettings, make_replica_step, make_train_loop

from . import data
from .sizes import Sizes

LEARNING_RATE = 1e-4  # the same constant for every contender


def make_hparams(sizes: Sizes):
    """`transformer_base` at the benchmark's dimensions (dropout included)."""
    hparams = registry.hparams("transformer_base")
    return hparams.override_from_dict(
        {
            "hidden_size": sizes.hidden,
            "filter_size": sizes.filter,
            "num_heads": sizes.heads,
            "num_encoder_layers": sizes.encoder_layers,
            "num_decoder_layers": sizes.decoder_layers,
            "layer_prepostprocess_dropout": sizes.dropout,
            "attention_dropout": sizes.dropout,
            "relu_dropout": sizes.dropout,
        }
    )


def make_model(sizes: Sizes, hparams, input_modality: str) -> Transformer:
    kwargs = {"input_vocab_size": sizes.vocab} if input_modality == "symbol" else {}
    return Transformer.from_hparams(
        hparams, input_modality=input_modality, target_vocab_size=sizes.vocab, **kwargs
    )


class T2TTraining:
    """One `loop(iterator, steps)` call of the trainer per repetition.

    Args:
        sizes: shared sizes.
        modality: "symbol" (text) or "speech".
        xla: compile the step with XLA (`--xla_compile`).
    """

    def __init__(self, sizes: Sizes, modality: str, xla: bool):
        self.sizes = sizes
        hparams = make_hparams(sizes)
        batch = data.speech_batch(sizes) if modality == "speech" else data.text_batch(sizes)
        features = {name: tf.constant(value) for name, value in batch.items()}
        self.model = make_model(sizes, hparams, modality)
        self.model(features)
        self.optimizer = make_optimizer(hparams, LEARNING_RATE)
        self.optimizer.build(self.model.trainable_variables)
        settings = StepSettings(
            label_smoothing=hparams.label_smoothing,
            clip_grad_norm=0.0,
            l2_weight_decay=0.0,
            frame_seconds=0.01,
        )
        strategy = tf.distribute.get_strategy()
        self.loop = make_train_loop(
            strategy, make_replica_step(self.model, self.optimizer, settings), xla
        )
        dataset = strategy.distribute_datasets_from_function(
            lambda context: tf.data.Dataset.from_tensors(features).repeat()
        )
        self.iterator = iter(dataset)
        self.speech = modality == "speech"
        for _ in range(sizes.warmup):
            self.run()

    def run(self) -> dict:
        steps = self.sizes.steps
        start = time.perf_counter()
        totals = self.loop(self.iterator, tf.constant(steps))
        loss = float(totals["loss"].numpy())
        seconds = time.perf_counter() - start
        if int(totals["steps"]) != steps or int(totals["bad_step"]) >= 0:
            raise RuntimeError(f"training loop ran {int(totals['steps'])} steps, loss {loss}")
        unit = "audio_seconds" if self.speech else "target_tokens"
        return {"seconds": seconds, "units": float(totals[unit]), "loss": loss / steps}


class T2TDecoding:
    """Cached (`BatchDecoder`) and uncached beam search on one model.

    The model is untrained, so its EOS row is zeroed: the EOS logit is then
    always 0 while the best of the vocabulary's logits are well above it, so
    no beam finishes early and every search decodes its full length (each
    run checks this and reports `eos_seen`).

    Call `run(mode="cached"|"uncached", length=L)`.
    """

    def __init__(self, sizes: Sizes):
        self.sizes = sizes
        self.hparams = make_hparams(sizes)
        self.model = make_model(sizes, self.hparams, "symbol")
        self.features = {"inputs": tf.constant(data.decode_inputs(sizes))}
        self.model({"inputs": self.features["inputs"], "targets": self.features["inputs"]})
        embeddings = self.model.target_embedding.embeddings
        embeddings.assign(tf.tensor_scatter_nd_update(
            embeddings, [[EOS_ID]], tf.zeros([1, sizes.hidden])
        ))  # fmt: skip
        self.cached = {}
        for length in sizes.decode_lengths:
            overrides = (
                f"beam_size={sizes.beam},alpha={sizes.alpha},"
                f"extra_length={length},max_decode_length={length}"
            )
            self.cached[length] = BatchDecoder(self.model, self.hparams, decode_hparams(overrides))
            for _ in range(sizes.warmup):
                self.run("cached", length)
        # The uncached search has no cache to size, so one trace (the length
        # is a tensor) serves every length; warm it up on the shortest.
        self.uncached = tf.function(
            self._uncached_search,
            input_signature=[
                {"inputs": tf.TensorSpec([None, None], tf.int32)},
                tf.TensorSpec([], tf.int32),
            ],
        )
        for _ in range(sizes.warmup):
            self.run("uncached", min(sizes.decode_lengths))

    def _uncached_search(self, features, length):
        """Beam search recomputing the decoder over the whole prefix each step."""
        model, sizes = self.model, self.sizes
        memory, memory_mask = model.encode(features, training=False)

        def fn(ids, step, states):
            # `decode` shifts its targets right (prepending the start token),
            # so the prefix without the start token plus one dummy position
            # gives the logits of position `step` last.
            targets = tf.pad(ids[:, 1:], [[0, 0], [0, 1]])
            logits = model.decode(targets, states["memory"], states["memory_mask"])
            return logits[:, -1], states

        batch = tf.shape(features["inputs"])[0]
        return beam_search(
            fn, tf.zeros([batch], tf.int32), sizes.beam, length, sizes.vocab, sizes.alpha,
            states={"memory": memory, "memory_mask": memory_mask},
        )  # fmt: skip

    def run(self, mode: str, length: int) -> dict:
        start = time.perf_counter()
        if mode == "cached":
            ids, _ = self.cached[length](self.features)
        else:
            ids, _ = self.uncached(self.features, tf.constant(length))
            ids = ids.numpy()
        seconds = time.perf_counter() - start
        eos_seen = bool(np.any(ids == EOS_ID))
        return {
            "seconds": seconds,
            "units": float(self.sizes.decode_batch * length),
            "eos_seen": eos_seen,
        }
