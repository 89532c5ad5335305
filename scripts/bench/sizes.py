"""The sizes every contender shares, as flags with two presets.

`--size=default` is sized to finish all four comparisons in under ten
minutes on two CPU cores (6-8 measured); `--size=smallest` runs every code
path in seconds per contender, about two minutes in all, mostly the
workers' start-up (the test uses it). Any single flag overrides the preset.
"""

from __future__ import annotations

import argparse
import dataclasses


@dataclasses.dataclass
class Sizes:
    """Dimensions, batch shapes and repetition counts of one benchmark run."""

    # The model (all contenders).
    hidden: int = 256
    filter: int = 1024
    heads: int = 4
    encoder_layers: int = 2
    decoder_layers: int = 2
    vocab: int = 1000
    dropout: float = 0.1
    # Text training batches.
    batch: int = 16
    source_length: int = 64
    target_length: int = 64
    # Speech training batches: utterances of `speech_seconds` at 10 ms frames.
    speech_seconds: float = 2.0
    mel_bins: int = 80
    speech_channels: int = 3
    speech_target_length: int = 32
    front_end_filters: int = 128
    # Repetitions: each timed repetition runs `steps` optimizer steps.
    steps: int = 5
    reps: int = 5
    warmup: int = 1
    # The machine's limit: an N x N x N float32 matmul, `matmul_repeats` per rep.
    matmul_size: int = 1024
    matmul_repeats: int = 10
    # Decoding.
    beam: int = 4
    alpha: float = 0.6
    decode_batch: int = 4
    decode_lengths: tuple[int, ...] = (32, 128, 256)
    decode_reps: int = 3
    # Input pipeline: `pipeline_batches` batches of `batch` utterances per rep.
    pipeline_batches: int = 16
    pipeline_cores: tuple[int, ...] = (1, 2)
    # How many workers may set up (import, build, compile) at once.
    jobs: int = 2

    @property
    def speech_frames(self) -> int:
        """Feature frames of one utterance (T2T's 10 ms frame step)."""
        return round(self.speech_seconds * 100)


SMALLEST = dict(
    hidden=32,
    filter=64,
    heads=2,
    encoder_layers=1,
    decoder_layers=1,
    vocab=40,
    batch=2,
    source_length=8,
    target_length=8,
    speech_seconds=0.25,
    speech_target_length=8,
    front_end_filters=8,
    steps=1,
    reps=2,
    warmup=2,
    matmul_size=64,
    matmul_repeats=2,
    decode_batch=1,
    decode_lengths=(4, 8),
    decode_reps=2,
    pipeline_batches=1,
)
PRESETS = {"default": {}, "smallest": SMALLEST}


def _tuple_of_ints(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(",") if part.strip())


_FLAG_TYPES = {"int": int, "float": float, "tuple[int, ...]": _tuple_of_ints}


def add_flags(parser: argparse.ArgumentParser) -> None:
    """One `--name` flag per `Sizes` field (default: the preset's value)."""
    group = parser.add_argument_group("sizes (override the --size preset)")
    for field in dataclasses.fields(Sizes):
        kind = _FLAG_TYPES[field.type]
        metavar = "N,N,..." if kind is _tuple_of_ints else field.type.upper()
        group.add_argument(f"--{field.name}", type=kind, default=None, metavar=metavar)


def from_args(args: argparse.Namespace) -> Sizes:
    """The `--size` preset with every flag given on the command line applied."""
    values = dict(PRESETS[args.size])
    for field in dataclasses.fields(Sizes):
        given = getattr(args, field.name)
        if given is not None:
            values[field.name] = given
    sizes = Sizes(**values)
    validate(sizes)
    return sizes


def validate(sizes: Sizes) -> None:
    """Rejects sizes no contender can run, with one sentence naming the flag."""
    if sizes.hidden % sizes.heads:
        raise ValueError(f"--hidden={sizes.hidden} must be divisible by --heads={sizes.heads}.")
    if sizes.hidden % 2:
        raise ValueError("--hidden must be even (sinusoidal positions use sin and cos halves).")
    if sizes.vocab <= 2 * sizes.beam:
        raise ValueError(f"--vocab must exceed 2 x --beam ({2 * sizes.beam}).")
    if sizes.mel_bins < 7:
        raise ValueError("--mel_bins must be at least 7 (the speech front end strides twice).")
    for name in ("reps", "steps", "decode_reps", "batch", "decode_batch", "pipeline_batches"):
        if getattr(sizes, name) < 1:
            raise ValueError(f"--{name} must be at least 1.")
    if not sizes.decode_lengths:
        raise ValueError("--decode_lengths needs at least one length.")
