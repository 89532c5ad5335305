"""What the training forward pass returns: the decoder's logits and each auxiliary head's."""

from __future__ import annotations

from typing import NamedTuple


class TrainingOutputs(NamedTuple):
    """`Transformer.call_with_heads`' result.

    Attributes:
        logits: float32 `[batch, length, vocab]`, the decoder's.
        ctc_logits: float32 `[batch, encoder_frames, vocab]` (blank is
            PAD_ID), or None without a CTC head.
        ctc_mask: the encoder's nonpadding mask `[batch, encoder_frames]`,
            or None without a CTC head (characters' or phonemes').
        boundary_logits: float32 `[batch, frames, 2]` (`WordBoundaryHead`),
            or None without one.
        intermediate_ctc_logits: float32 `[batch, encoder_frames, vocab]`, the
            CTC head on an intermediate encoder layer's output (intermediate
            CTC), or None when not asked for.
        phoneme_ctc_logits: float32 `[batch, encoder_frames, phonemes]`
            (blank is PAD_ID), or None without a phoneme CTC head.
    """

    logits: object
    ctc_logits: object
    ctc_mask: object
    boundary_logits: object
    intermediate_ctc_logits: object = None
    phoneme_ctc_logits: object = None
