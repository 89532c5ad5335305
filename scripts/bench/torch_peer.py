"""PyTorch's contender: the model a PyTorch user writes, `nn.Transformer` (pre-norm).

One embedding shared by source, target and softmax (scaled by sqrt(hidden), T2T's sinusoids
added), `norm_first=True` (each stack ends with a LayerNorm, as T2T's), label-smoothed
cross-entropy, Adam(0.9, 0.997, 1e-9), the eager `zero_grad / forward / backward / step`; speech
goes through T2T's front end in `nn.Conv2d` / `nn.LayerNorm`; `bf16`: CPU bfloat16 autocast.
"""

import torch
import torch.nn.functional as F
from torch import nn

from . import common


class FrontEnd(nn.Module):
    """2 x (3x3 stride-2 conv, LayerNorm, ReLU), then a conv folding the bins."""

    def __init__(self, sizes):
        super().__init__()
        filters = sizes.front_end_filters
        self.convs = nn.ModuleList([nn.Conv2d(channels, filters, 3, stride=2, bias=False)
                                    for channels in (sizes.speech_channels, filters)])  # fmt: skip
        self.norms = nn.ModuleList([nn.LayerNorm(filters, eps=1e-6) for _ in range(2)])
        bins = common._strided(common._strided(sizes.mel_bins))
        self.fold = nn.Conv2d(filters, sizes.hidden, (3, bins), padding=(1, 0), bias=False)

    def forward(self, x):
        x = x.permute(0, 3, 1, 2)  # [batch, channels, frames, bins]
        for conv, norm in zip(self.convs, self.norms, strict=True):
            x = conv(F.pad(x, (0, 0, 0, 2)))  # 2 zero frames on the right
            x = F.relu(norm(x.permute(0, 2, 3, 1))).permute(0, 3, 1, 2)
        return self.fold(x).squeeze(-1).transpose(1, 2)  # [batch, frames / 4, hidden]


class Seq2Seq(nn.Module):
    def __init__(self, sizes, speech: bool):
        super().__init__()
        self.hidden = sizes.hidden
        self.embedding = nn.Embedding(sizes.vocab, sizes.hidden, padding_idx=0)
        nn.init.normal_(self.embedding.weight, std=sizes.hidden**-0.5)
        self.transformer = nn.Transformer(
            sizes.hidden, sizes.heads, sizes.encoder_layers, sizes.decoder_layers, sizes.filter,
            sizes.dropout, batch_first=True, norm_first=True)  # fmt: skip
        longest = max(sizes.source_length, sizes.target_length, sizes.speech_frames)
        self.register_buffer("positions", torch.from_numpy(common.sinusoids(longest, sizes.hidden)))
        self.front_end = FrontEnd(sizes) if speech else None

    def forward(self, inputs, decoder_inputs):
        source, padding = ((self.front_end(inputs), None) if self.front_end is not None
                           else (self.embedding(inputs) * self.hidden**0.5, inputs == 0))
        length = decoder_inputs.shape[1]
        target = self.embedding(decoder_inputs) * self.hidden**0.5 + self.positions[:length]
        causal = torch.triu(torch.ones(length, length, dtype=torch.bool,
                                       device=decoder_inputs.device), diagonal=1)
        outputs = self.transformer(
            source + self.positions[: source.shape[1]], target, tgt_mask=causal,
            src_key_padding_mask=padding, memory_key_padding_mask=padding, tgt_is_causal=True)
        return outputs @ self.embedding.weight.T


class Training:
    """`steps` eager optimizer steps per repetition."""

    def __init__(self, sizes, modality: str, bf16: bool = False):
        torch.manual_seed(0)
        self.sizes, self.speech, self.bf16 = sizes, modality == "speech", bf16
        batch = {k: torch.from_numpy(v) for k, v in common.batch(sizes, modality).items()}
        self.inputs = batch["inputs"] if self.speech else batch["inputs"].long()
        self.targets = batch["targets"].long()
        self.decoder_inputs = F.pad(self.targets[:, :-1], (1, 0))  # 0 (the start) first
        self.model = Seq2Seq(sizes, self.speech).train()
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=1e-4, betas=(0.9, 0.997),
                                          eps=1e-9)  # fmt: skip

    def step(self) -> float:
        self.optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bf16):
            logits = self.model(self.inputs, self.decoder_inputs)
        loss = F.cross_entropy(logits.float().reshape(-1, self.sizes.vocab),
                               self.targets.reshape(-1), ignore_index=0, label_smoothing=0.1)
        loss.backward()
        self.optimizer.step()
        return float(loss.detach())

    def run(self) -> dict:
        losses, sizes = [self.step() for _ in range(self.sizes.steps)], self.sizes
        per_step = sizes.batch * sizes.speech_seconds if self.speech else (self.targets != 0).sum()
        return {"units": float(per_step * sizes.steps), "loss": sum(losses) / len(losses)}
