"""The Transformer's incremental decoding: one cached decoder step at a time.

`IncrementalDecoding` is mixed into `Transformer`; the searches
(`decoding/search/`) loop over `decode_step`. The cache holds each decoder
layer's self-attention keys/values (growing a step at a time, or written at the
step index into a fixed-length buffer for XLA) and its encoder keys/values,
computed once.
"""

from __future__ import annotations

from keras import ops


class IncrementalDecoding:
    """`Transformer`'s decode cache and cached step (a mixin)."""

    def initial_decode_cache(
        self, features: dict, max_length: int | None, batch_size=None, encoded=None
    ) -> dict:
        """Encodes the inputs once and returns the decode cache.

        `max_length`: a static number of steps (the fixed-length cache that
        XLA needs), or None: the self-attention cache grows as the steps
        need, so each step costs what the prefix holds, not the cap (what
        `decoding.search.model_search` uses). Every entry has batch as its first
        dimension, so beam search can tile and reorder it. `batch_size` is
        needed only for a decoder-only model; `encoded` is
        `encode(features)`'s result when the caller has it already (joint
        CTC decoding reads the encoder output too).
        """
        cache = {}
        memory = None
        if self.has_inputs:
            memory, cache["memory_mask"] = encoded or self.encode(features, training=False)
            batch_size = ops.shape(memory)[0]
        elif batch_size is None:
            raise ValueError("a decoder-only model needs batch_size to decode.")
        for i, layer in enumerate(self.decoder_layers):
            cache[f"layer_{i}"] = layer.initial_cache(batch_size, max_length, memory)
        return cache

    def decode_step(self, previous_ids, step, cache: dict):
        """One cached decoder step.

        Args:
            previous_ids: `[batch]` int, the token decoded at `step - 1`
                (PAD_ID at step 0).
            step: scalar int, the position being decoded.
            cache: from `initial_decode_cache` (or a previous step).

        Returns:
            `(logits [batch, vocab] float32, new_cache)`.
        """
        y = self.target_embedding(ops.cast(previous_ids, "int32")[:, None])
        y = self.add_position(y, start_index=step)
        new_cache = {}
        if "memory_mask" in cache:
            new_cache["memory_mask"] = cache["memory_mask"]
        for i, layer in enumerate(self.decoder_layers):
            y, new_cache[f"layer_{i}"] = layer(
                y,
                memory_mask=cache.get("memory_mask"),
                cache=cache[f"layer_{i}"],
                cache_update_index=step,
                training=False,
            )
        logits = self.softmax.logits(self.decoder_norm(y))
        return logits[:, 0], new_cache
