"""PyTorch's contender: `nn.Transformer` (pre-norm) with the same sizes, and Adam.

The model a PyTorch user writes: one embedding shared by source, target and
softmax (scaled by sqrt(hidden), T2T's sinusoids added), `nn.Transformer`
with `norm_first=True` (so each stack ends with a LayerNorm, as T2T's),
label-smoothed cross-entropy, and the canonical eager step
`zero_grad / forward / backward / step`. For speech, T2T's front end in
`nn.Conv2d` / `nn.LayerNorm`. Timing runs on the CPU build with PyTorch's
default thread count (`sections.py` also runs it with passive OpenMP
waiting, which a shared machine needs).
"""

from __future__ import annotations

import time

import torch
import torch.nn.functional as F
from torch import nn

from . import data
from .sizes import Sizes

LEARNING_RATE = 1e-4


def _strided(size: int) -> int:
    return (size - 3) // 2 + 1


class FrontEnd(nn.Module):
    """T2T's speech front end: 2 x (3x3 stride-2 conv, LayerNorm, ReLU), fold conv."""

    def __init__(self, sizes: Sizes):
        super().__init__()
        filters, bins = sizes.front_end_filters, sizes.mel_bins
        self.convs = nn.ModuleList(
            [
                nn.Conv2d(sizes.speech_channels, filters, 3, stride=2, bias=False),
                nn.Conv2d(filters, filters, 3, stride=2, bias=False),
            ]
        )
        self.norms = nn.ModuleList([nn.LayerNorm(filters, eps=1e-6) for _ in range(2)])
        folded_bins = _strided(_strided(bins))
        self.fold = nn.Conv2d(filters, sizes.hidden, (3, folded_bins), padding=(1, 0), bias=False)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        x = features.permute(0, 3, 1, 2)  # [batch, channels, frames, bins]
        for conv, norm in zip(self.convs, self.norms, strict=True):
            x = conv(F.pad(x, (0, 0, 0, 2)))  # 2 zero frames on the right
            x = F.relu(norm(x.permute(0, 2, 3, 1))).permute(0, 3, 1, 2)
        return self.fold(x).squeeze(-1).transpose(1, 2)  # [batch, frames / 4, hidden]


class TorchSeq2Seq(nn.Module):
    """Shared embedding + `nn.Transformer(norm_first=True)` + tied softmax."""

    def __init__(self, sizes: Sizes, speech: bool):
        super().__init__()
        self.hidden = sizes.hidden
        self.embedding = nn.Embedding(sizes.vocab, sizes.hidden, padding_idx=0)
        nn.init.normal_(self.embedding.weight, std=sizes.hidden**-0.5)
        self.transformer = nn.Transformer(
            d_model=sizes.hidden,
            nhead=sizes.heads,
            num_encoder_layers=sizes.encoder_layers,
            num_decoder_layers=sizes.decoder_layers,
            dim_feedforward=sizes.filter,
            dropout=sizes.dropout,
            batch_first=True,
            norm_first=True,
        )
        longest = max(sizes.source_length, sizes.target_length, sizes.speech_frames)
        self.register_buffer("positions", torch.from_numpy(data.sinusoids(longest, sizes.hidden)))
        self.front_end = FrontEnd(sizes) if speech else None

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        return self.embedding(ids) * self.hidden**0.5

    def forward(self, inputs: torch.Tensor, decoder_inputs: torch.Tensor) -> torch.Tensor:
        if self.front_end is not None:
            source, source_padding = self.front_end(inputs), None
        else:
            source, source_padding = self.embed(inputs), inputs == 0
        source = source + self.positions[: source.shape[1]]
        length = decoder_inputs.shape[1]
        target = self.embed(decoder_inputs) + self.positions[:length]
        causal = torch.triu(torch.ones(length, length, dtype=torch.bool), diagonal=1)
        outputs = self.transformer(
            source,
            target,
            tgt_mask=causal,
            src_key_padding_mask=source_padding,
            memory_key_padding_mask=source_padding,
            tgt_is_causal=True,
        )
        return outputs @ self.embedding.weight.T


class TorchTraining:
    """`steps` eager optimizer steps per repetition.

    Args:
        sizes: shared sizes.
        modality: "symbol" (text) or "speech".
    """

    def __init__(self, sizes: Sizes, modality: str):
        torch.manual_seed(0)
        self.sizes = sizes
        self.speech = modality == "speech"
        batch = data.speech_batch(sizes) if self.speech else data.text_batch(sizes)
        self.inputs = torch.from_numpy(batch["inputs"])
        if not self.speech:
            self.inputs = self.inputs.long()
        self.targets = torch.from_numpy(batch["targets"]).long()
        self.decoder_inputs = torch.from_numpy(data.shift_right(batch["targets"])).long()
        self.model = TorchSeq2Seq(sizes, self.speech)
        self.model.train()
        self.optimizer = torch.optim.Adam(
            self.model.parameters(), lr=LEARNING_RATE, betas=(0.9, 0.997), eps=1e-9
        )
        for _ in range(sizes.warmup):
            self.run()

    def step(self) -> float:
        self.optimizer.zero_grad(set_to_none=True)
        logits = self.model(self.inputs, self.decoder_inputs)
        loss = F.cross_entropy(
            logits.reshape(-1, self.sizes.vocab),
            self.targets.reshape(-1),
            ignore_index=0,
            label_smoothing=0.1,
        )
        loss.backward()
        self.optimizer.step()
        return float(loss.detach())

    def run(self) -> dict:
        start = time.perf_counter()
        losses = [self.step() for _ in range(self.sizes.steps)]
        seconds = time.perf_counter() - start
        if self.speech:
            per_step = self.sizes.batch * self.sizes.speech_seconds
        else:
            per_step = float((self.targets != 0).sum())
        return {
            "seconds": seconds,
            "units": per_step * self.sizes.steps,
            "loss": sum(losses) / len(losses),
        }
