"""The four comparisons: which contenders, in which workers, alternated how.

Each function starts its workers, alternates repetitions, closes the
workers and returns plain data (rows of median/min/max rates) for
`report.py`. A contender whose library is not installed is listed as
skipped; one that fails is listed with its error.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import statistics
from pathlib import Path

from . import flops
from .runner import Case, Worker, WorkerError, alternate, close_all, last_line, start_workers
from .sizes import Sizes


@dataclasses.dataclass(frozen=True)
class Contender:
    """One training contender: its key, table label, worker kind and parameters."""

    key: str
    label: str
    kind: str
    params: dict
    requires: str | None = None  # a module that must be importable
    env: dict | None = None  # worker environment (a user's own setting wins)


# PyTorch runs twice: with its defaults, and with passive OpenMP waiting.
# libgomp's default spin-waiting is ~20% faster on an idle machine, but makes
# a step ~10x slower while another process holds one of the cores (measured on
# a shared 2-core machine: 200 vs 2,600 tokens/s). Goals compare against the
# faster of the two, so a busy machine cannot flatter t2t-lite.
TORCH_PASSIVE = {"OMP_WAIT_POLICY": "PASSIVE"}


def training_contenders(modality: str) -> list[Contender]:
    """t2t-lite (tf.function and XLA), PyTorch, plain Keras and keras-hub."""
    return [
        Contender("t2t", "t2t-lite transformer (tf.function)", "t2t_train",
                  {"modality": modality, "xla": False}),
        Contender("t2t_xla", "t2t-lite transformer (--xla_compile)", "t2t_train",
                  {"modality": modality, "xla": True}),
        Contender("torch", "PyTorch nn.Transformer (norm_first)", "torch_train",
                  {"modality": modality}, "torch"),
        Contender("torch_passive", "PyTorch nn.Transformer, OMP_WAIT_POLICY=PASSIVE",
                  "torch_train", {"modality": modality}, "torch", TORCH_PASSIVE),
        Contender("keras", "plain Keras 3 (MultiHeadAttention + Dense)", "keras_train",
                  {"flavour": "plain", "modality": modality}),
        Contender("hub", "keras-hub TransformerEncoder/Decoder", "keras_train",
                  {"flavour": "hub", "modality": modality}, "keras_hub"),
    ]  # fmt: skip


def installed(module: str | None) -> bool:
    return module is None or importlib.util.find_spec(module) is not None


def stats(values: list[float]) -> dict | None:
    """Median, min and max (None when nothing was measured)."""
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def _row(key: str, label: str, worker: Worker | None, results: list[dict], **extra) -> dict:
    row = {"key": key, "label": label, "reps": len(results)}
    if worker is None:
        row["skipped"] = "not installed (pip install -e .[bench])"
    elif worker.error:
        row["error"] = worker.error
    row["rate"] = stats([r["units"] / r["seconds"] for r in results])
    row["seconds"] = [r["seconds"] for r in results]
    row.update(extra)
    return row


def training(sizes: Sizes, log_dir: Path, say=print) -> dict:
    """Throughput, GFLOP/s and peak memory of training steps, text and speech."""
    section = {}
    for modality, title in (("symbol", "text"), ("speech", "speech")):
        say(f"training ({title}):")
        step_flops = flops.training_step_flops(sizes, speech=modality == "speech")
        workers, cases, rows = [], [], []
        contenders = training_contenders(modality)
        for contender in contenders:
            if not installed(contender.requires):
                continue
            worker = Worker(
                f"train-{title}-{contender.key}",
                {contender.key: {"kind": contender.kind, "params": contender.params}},
                sizes,
                log_dir,
                env=contender.env,
            )
            workers.append(worker)
            cases.append(Case(contender.key, worker, contender.key))
        if modality == "symbol":
            matmul = Worker("matmul", {"matmul": {"kind": "matmul"}}, sizes, log_dir)
            workers.append(matmul)
            cases.append(Case("matmul", matmul, "matmul"))
        start_workers(workers, sizes.jobs, say)
        results = alternate(cases, sizes.reps, say)
        by_key = {case.key: case.worker for case in cases}
        for contender in contenders:
            worker = by_key.get(contender.key)
            measured = results.get(contender.key, [])
            gflops = [step_flops * sizes.steps / r["seconds"] / 1e9 for r in measured]
            memory = None
            if worker is not None and not worker.error:
                try:
                    memory = worker.memory()
                    memory["baseline_rss_mb"] = memory["baseline_rss_mb"][contender.key]
                except WorkerError as error:
                    say(f"  {worker.name} FAILED: {last_line(str(error))}")
            rows.append(
                _row(contender.key, contender.label, worker, measured,
                     gflops=stats(gflops), memory=memory,
                     loss=[r.get("loss") for r in measured])
            )  # fmt: skip
        if modality == "symbol":
            measured = results.get("matmul", [])
            limit = _row("matmul", f"TF float32 matmul {sizes.matmul_size}^3 (limit)",
                         matmul, measured)  # fmt: skip
            limit["gflops"] = stats([r["units"] / r["seconds"] / 1e9 for r in measured])
            section["matmul"] = limit
        close_all(workers)
        section[title] = {
            "unit": "audio-s/s" if modality == "speech" else "target tokens/s",
            "flops_per_step": step_flops,
            "rows": rows,
        }
    return section


def decoding(sizes: Sizes, log_dir: Path, say=print) -> dict:
    """Tokens/s of cached vs uncached beam search vs keras-hub, per target length."""
    say("decoding:")
    t2t = Worker("decode-t2t", {"t2t": {"kind": "t2t_decode"}}, sizes, log_dir)
    hub = None
    if installed("keras_hub"):
        hub = Worker("decode-keras-hub", {"hub": {"kind": "hub_decode"}}, sizes, log_dir)
    start_workers([w for w in (t2t, hub) if w], sizes.jobs, say)
    cases = []
    for length in sizes.decode_lengths:
        cases.append(Case(f"cached/{length}", t2t, "t2t", {"mode": "cached", "length": length}))
        cases.append(Case(f"uncached/{length}", t2t, "t2t", {"mode": "uncached", "length": length}))
        if hub:
            cases.append(Case(f"hub/{length}", hub, "hub", {"length": length}))
    results = alternate(cases, sizes.decode_reps, say)
    close_all([w for w in (t2t, hub) if w])
    labels = {
        "cached": ("t2t-lite cached beam search (BatchDecoder)", t2t),
        "uncached": ("t2t-lite uncached (recompute the prefix)", t2t),
        "hub": ("keras-hub BeamSampler + cached decoder", hub),
    }
    rows = []
    for length in sizes.decode_lengths:
        for key, (label, worker) in labels.items():
            measured = results.get(f"{key}/{length}", [])
            eos_seen = any(r.get("eos_seen") for r in measured)
            rows.append(_row(key, label, worker, measured, length=length, eos_seen=eos_seen))
    return {"unit": "tokens/s", "beam": sizes.beam, "batch": sizes.decode_batch, "rows": rows}


def featurization(sizes: Sizes, log_dir: Path, say=print) -> dict:
    """Audio seconds featurized per second: t2t-lite's pipeline vs librosa, per core count."""
    say("input pipeline:")
    workers, cases = [], []
    has_librosa = installed("librosa")
    for cores in sizes.pipeline_cores:
        t2t = Worker(f"featurize-t2t-{cores}core", {"t2t": {
            "kind": "t2t_featurize", "params": {"cores": cores}}},
            sizes, log_dir, cores=cores, threads=cores)  # fmt: skip
        workers.append(t2t)
        cases.append(Case(f"t2t/{cores}", t2t, "t2t"))
        if has_librosa:
            librosa = Worker(f"featurize-librosa-{cores}core", {
                "logmel": {"kind": "librosa_featurize",
                           "params": {"cores": cores, "deltas": False}},
                "deltas": {"kind": "librosa_featurize",
                           "params": {"cores": cores, "deltas": True}},
            }, sizes, log_dir, cores=cores, threads=1)  # fmt: skip
            workers.append(librosa)
            cases.append(Case(f"logmel/{cores}", librosa, "logmel"))
            cases.append(Case(f"deltas/{cores}", librosa, "deltas"))
    start_workers(workers, sizes.jobs, say)
    results = alternate(cases, sizes.reps, say)
    close_all(workers)
    by_key = {case.key: case.worker for case in cases}
    labels = {
        "t2t": "t2t-lite training pipeline (log-mel + deltas + CMVN + SpecAugment)",
        "logmel": "librosa log-mel",
        "deltas": "librosa log-mel + delta-deltas + CMVN",
    }
    rows = []
    for cores in sizes.pipeline_cores:
        for key, label in labels.items():
            worker = by_key.get(f"{key}/{cores}")
            rows.append(_row(key, label, worker, results.get(f"{key}/{cores}", []), cores=cores))
    return {"unit": "audio-s/s", "rows": rows}
