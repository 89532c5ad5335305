"""Analytic FLOPs of one training step: matmuls and convolutions only.

A matmul of `[m, k] x [k, n]` costs `2 * m * n * k`. Counted, per example:
the attention projections (queries, keys, values, output), the attention
scores and weighted sums, the feed-forward layers, the output softmax and
(speech) the convolutional front end. The backward pass is counted as twice
the forward one, so a step is `3 x forward`. Embedding lookups, norms,
softmaxes and the optimizer update are not counted (they are not matmuls),
so the achieved GFLOP/s is a lower bound on the work a contender does.
"""

from __future__ import annotations

from .sizes import Sizes


def _strided(size: int) -> int:
    """Output size of a VALID kernel-3, stride-2 convolution."""
    return (size - 3) // 2 + 1


def front_end_flops(sizes: Sizes) -> tuple[int, int]:
    """(forward FLOPs of T2T's speech front end for one utterance, output frames).

    Two 3x3 stride-2 convolutions (time padded by 2, frequency VALID), then a
    convolution spanning the remaining bins that projects to `hidden`.
    """
    frames, bins = sizes.speech_frames, sizes.mel_bins
    filters, channels = sizes.front_end_filters, sizes.speech_channels
    total = 0
    for _ in range(2):
        frames, bins = (frames + 2 - 3) // 2 + 1, _strided(bins)
        total += 2 * frames * bins * (3 * 3 * channels) * filters
        channels = filters
    total += 2 * frames * (3 * bins * channels) * sizes.hidden  # the fold conv
    return total, frames


def attention_flops(queries: int, keys: int, hidden: int, project_keys: bool = True) -> int:
    """One multi-head attention: Q and output projections, K/V projections of
    the `keys` positions, and the scores and weighted sums over all heads."""
    projections = 2 * 2 * queries * hidden * hidden
    if project_keys:
        projections += 2 * 2 * keys * hidden * hidden
    return projections + 2 * 2 * queries * keys * hidden


def forward_flops(sizes: Sizes, source_positions: int, target_positions: int) -> int:
    """Forward FLOPs of the encoder-decoder for one example."""
    hidden, filter_size = sizes.hidden, sizes.filter
    ffn = lambda positions: 2 * 2 * positions * hidden * filter_size
    encoder_layer = attention_flops(source_positions, source_positions, hidden) + ffn(
        source_positions
    )
    decoder_layer = (
        attention_flops(target_positions, target_positions, hidden)
        + attention_flops(target_positions, source_positions, hidden)
        + ffn(target_positions)
    )
    softmax = 2 * target_positions * hidden * sizes.vocab
    return sizes.encoder_layers * encoder_layer + sizes.decoder_layers * decoder_layer + softmax


def training_step_flops(sizes: Sizes, speech: bool) -> int:
    """FLOPs of one optimizer step on one batch (`3 x forward`)."""
    if speech:
        front_end, source_positions = front_end_flops(sizes)
        forward = front_end + forward_flops(sizes, source_positions, sizes.speech_target_length)
    else:
        forward = forward_flops(sizes, sizes.source_length, sizes.target_length)
    return 3 * sizes.batch * forward


def matmul_flops(size: int) -> int:
    """FLOPs of one `size x size x size` matmul."""
    return 2 * size**3
