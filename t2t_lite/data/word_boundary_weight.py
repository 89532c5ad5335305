"""Whether a run trains a word boundary head, and how much its loss weighs.

The one owner of hparam `word_boundary_loss_weight`, read by the model's
config (`TransformerConfig`: the head is built), the train step (its loss
is added) and the input pipeline (`word_boundary_targets`: its targets are
made). No TensorFlow here: the model's config is read without it (the GPU
benchmark runs the model on Keras' JAX backend).
"""

from __future__ import annotations

from t2t_lite.hparam import HParams

WEIGHT_HPARAM = "word_boundary_loss_weight"


def boundary_loss_weight(hparams: HParams) -> float:
    """The word boundary head's loss weight (0: no head).

    A run saved before the head existed has no such hparam and trained none.
    """
    return hparams.get(WEIGHT_HPARAM, 0.0)


def word_boundaries_wanted(hparams: HParams) -> bool:
    """Whether the run trains a word boundary head."""
    return boundary_loss_weight(hparams) > 0
