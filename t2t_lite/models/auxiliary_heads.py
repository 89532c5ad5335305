"""The Transformer's training forward pass with its auxiliary heads.

`AuxiliaryHeads` is mixed into `Transformer`: the CTC head on the encoder
output (and, for intermediate CTC, on a lower encoder layer's), the phoneme CTC
head and the word boundary head, each optional. It uses the model's
`_encode`, `decode` and head layers; it holds no weights of its own.
"""

from __future__ import annotations

from keras import ops

from t2t_lite.models.training_outputs import TrainingOutputs


class AuxiliaryHeads:
    """`Transformer`'s forward passes through its auxiliary heads (a mixin)."""

    def call_with_heads(
        self, features, training=None, intermediate_ctc_layer: int = 0
    ) -> TrainingOutputs:
        """The training forward pass: the decoder's logits and each auxiliary head's.

        The decoder's logits are as `call` returns them; a head the model lacks
        gives None. `intermediate_ctc_layer` (1-based, below the last; 0: none)
        also runs the CTC head on that encoder layer's output, through the
        encoder's final norm (Lee & Watanabe's intermediate CTC, as ESPnet
        computes it: the same head, no new weights). The phoneme CTC head
        reads its layer (`phoneme_ctc_layer`) the same way.
        """
        if intermediate_ctc_layer and self.ctc_projection is None:
            raise ValueError("intermediate CTC needs a model built with ctc_head=True.")
        phoneme_layer = self.config.phoneme_ctc_layer
        memory = memory_mask = None
        kept = {}
        if self.has_inputs:
            memory, memory_mask, kept = self._encode(
                features, training, keep_layers=(intermediate_ctc_layer, phoneme_layer)
            )
        logits = self.decode(features["targets"], memory, memory_mask, training=training)
        ctc_logits = ctc_mask = boundary_logits = intermediate = phoneme_logits = None
        if self.ctc_projection is not None or self.phoneme_projection is not None:
            ctc_mask = memory_mask
        if self.ctc_projection is not None:
            ctc_logits = ops.cast(self.ctc_projection(memory), "float32")
        if intermediate_ctc_layer:
            intermediate = ops.cast(self.ctc_projection(kept[intermediate_ctc_layer]), "float32")
        if self.phoneme_projection is not None:
            phoneme_logits = ops.cast(self.phoneme_projection(kept[phoneme_layer]), "float32")
        if self.word_boundary_head is not None:
            boundary_logits = self.word_boundary_logits(features, memory)
        return TrainingOutputs(
            logits, ctc_logits, ctc_mask, boundary_logits, intermediate, phoneme_logits
        )

    def call_with_ctc(self, features, training=None):
        """The training forward pass with the CTC head.

        Returns:
            `(logits, ctc_logits, ctc_mask)`: the decoder's float32 logits as
            `call` returns them, float32 per-frame target logits of the
            encoder output `[batch, frames, target_vocab_size]` (blank is
            PAD_ID), and the encoder's nonpadding mask `[batch, frames]`.
        """
        if self.ctc_projection is None:
            raise ValueError("call_with_ctc needs a model built with ctc_head=True.")
        outputs = self.call_with_heads(features, training=training)
        return outputs.logits, outputs.ctc_logits, outputs.ctc_mask

    def word_boundary_logits(self, features, memory):
        """float32 `[batch, frames, 2]` logits of a word starting / ending at each frame.

        `WordBoundaryHead` gives them for each feature frame, from `encode`'s
        output.
        """
        if self.word_boundary_head is None:
            raise ValueError(
                "word_boundary_logits needs a model built with word_boundary_head=True."
            )
        return ops.cast(self.word_boundary_head(features["inputs"], memory), "float32")

    def ctc_log_probs(self, memory):
        """float32 per-frame log posteriors of the CTC head, `[batch, frames, vocab]`
        (blank is PAD_ID), from `encode`'s output."""
        if self.ctc_projection is None:
            raise ValueError("ctc_log_probs needs a model built with ctc_head=True.")
        return ops.log_softmax(ops.cast(self.ctc_projection(memory), "float32"), axis=-1)

    def hears_phonemes_at_the_end(self) -> bool:
        """Whether the model has a phoneme CTC head on its last encoder layer.

        Its posteriors then come from `encode`'s output (`phoneme_log_probs`).
        """
        layer = self.config.phoneme_ctc_layer
        return self.phoneme_projection is not None and layer == self.config.num_encoder_layers

    def phoneme_log_probs(self, memory):
        """float32 per-frame log posteriors of the phoneme CTC head `[batch, frames, phonemes]`
        (blank is PAD_ID; `phoneme_ctc_hparams.PHONEMES` after the reserved ids),
        from `encode`'s output."""
        if not self.hears_phonemes_at_the_end():
            raise ValueError(
                "phoneme_log_probs needs a model with a phoneme CTC head on its last encoder "
                "layer (hparams phoneme_ctc_weight > 0, phoneme_ctc_layer=0)."
            )
        return ops.log_softmax(ops.cast(self.phoneme_projection(memory), "float32"), axis=-1)
