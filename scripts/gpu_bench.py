"""Training speed on one GPU in bfloat16: t2t-lite's model on Keras' JAX backend against PyTorch.

    python scripts/gpu_bench.py [--preset=gpu] [--steps=20] [--out=gpu_bench.json]

No TensorFlow is needed (t2t-lite's model is `keras.ops` throughout): the GPU machine has JAX and
PyTorch for CUDA 13, and TensorFlow's CUDA wheels are not installed there. Each contender runs in
its own process (JAX and PyTorch would both claim the GPU's memory):

- `keras_jax`: t2t-lite's `Transformer` under `mixed_bfloat16` (float32 weights, bfloat16
  compute), one `jax.jit` step (forward, label-smoothed cross-entropy, gradient, Keras' Adam),
  buffers donated;
- `torch`, `torch_compile`: `bench/torch_peer.py`'s `nn.Transformer` model under CUDA bfloat16
  autocast with fused Adam, eager and `torch.compile`d;
- `matmul_torch`, `matmul_jax`: 8192 x 8192 x 8192 bfloat16 products, the GPU's measured limit.

Both models are the same shape (dense feed-forward, pre-norm, shared embedding/softmax, the
speech model behind T2T's front end), and every figure is the same FLOP count
(`bench/common.training_step_flops`: matmuls and convolutions, backward = 2 x forward) divided by
the time, so "fraction of the limit" compares like with like (XLA's own cost analysis is no
help on a GPU: it does not count the matmuls it hands to cuBLAS). `--device=cpu` runs the same code
at the `smallest` preset on the CPU (the test does), so the script cannot rot.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # t2t_lite, without installing it

from bench import common  # noqa: E402

MODELS = ("text", "speech")
MODALITIES = {"text": "symbol", "speech": "speech"}  # `common.batch`'s names
CONTENDERS = ("keras_jax", "torch", "torch_compile")
MATMUL_SIZE = 8192
# NVIDIA's dense bfloat16 figure for the H100 / H200 SXM (the same chip, "989.4 TFLOPS").
HOPPER_SPEC_TFLOPS = 989.4


def sizes_for(preset: str, model: str):
    """The benchmark's sizes: `gpu_text` / `gpu_speech` (`bench/common.py`), or `smallest`."""
    return common.make_sizes(f"gpu_{model}" if preset == "gpu" else preset)


def _seconds_per_step(step, steps: int, sync) -> float:
    for _ in range(3):  # compile / autotune, then steady state
        step()
    sync()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    sync()
    return (time.perf_counter() - start) / steps


def keras_jax(sizes, model_kind: str, steps: int, device: str) -> dict:
    os.environ["KERAS_BACKEND"] = "jax"
    import jax
    import keras
    from keras import ops

    from t2t_lite.models.transformer import Transformer
    from t2t_lite.models.transformer_config import TransformerConfig

    speech = model_kind == "speech"
    config = TransformerConfig(
        target_vocab_size=sizes.vocab, input_modality="speech" if speech else "symbol",
        input_vocab_size=0 if speech else sizes.vocab, hidden_size=sizes.hidden,
        filter_size=sizes.filter, num_heads=sizes.heads, num_encoder_layers=sizes.encoder_layers,
        num_decoder_layers=sizes.decoder_layers, attention_dropout=sizes.dropout,
        relu_dropout=sizes.dropout, layer_prepostprocess_dropout=sizes.dropout,
        speech_front_end_filters=sizes.front_end_filters)  # fmt: skip
    model = Transformer(config, dtype="mixed_bfloat16")
    batch = {k: jax.device_put(v) for k, v in common.batch(sizes, MODALITIES[model_kind]).items()}
    model(batch, training=False)
    optimizer = keras.optimizers.Adam(1e-4, beta_1=0.9, beta_2=0.997, epsilon=1e-9)
    optimizer.build(model.trainable_variables)
    targets = batch["targets"]

    def loss_fn(trainable, non_trainable, batch):
        logits, non_trainable = model.stateless_call(trainable, non_trainable, batch, training=True)
        smoothed = 0.9 * ops.one_hot(targets, sizes.vocab) + 0.1 / sizes.vocab
        losses = -ops.sum(smoothed * ops.log_softmax(logits, axis=-1), axis=-1)
        weights = ops.cast(targets != 0, "float32")
        return ops.sum(losses * weights) / ops.sum(weights), non_trainable

    def train_step(state, batch):
        trainable, non_trainable, optimizer_vars = state
        (loss, non_trainable), grads = jax.value_and_grad(loss_fn, has_aux=True)(
            trainable, non_trainable, batch)  # fmt: skip
        trainable, optimizer_vars = optimizer.stateless_apply(optimizer_vars, grads, trainable)
        return (trainable, non_trainable, optimizer_vars), loss

    jitted = jax.jit(train_step, donate_argnums=0)
    state = ([v.value for v in model.trainable_variables],
             [v.value for v in model.non_trainable_variables],
             [v.value for v in optimizer.variables])  # fmt: skip
    compiled = jitted.lower(state, batch).compile()
    holder = {"state": state}

    def step():
        holder["state"], holder["loss"] = compiled(holder["state"], batch)

    seconds = _seconds_per_step(step, steps, lambda: jax.block_until_ready(holder["loss"]))
    return {"seconds_per_step": seconds, "loss": float(holder["loss"]),
            "versions": {"jax": jax.__version__, "keras": keras.__version__}}  # fmt: skip


def pytorch(sizes, model_kind: str, steps: int, device: str, compiled: bool) -> dict:
    import torch
    import torch.nn.functional as F
    from bench.torch_peer import Seq2Seq

    torch.manual_seed(0)
    speech = model_kind == "speech"
    batch = {
        k: torch.from_numpy(v).to(device)
        for k, v in common.batch(sizes, MODALITIES[model_kind]).items()
    }
    inputs = batch["inputs"] if speech else batch["inputs"].long()
    targets = batch["targets"].long()
    decoder_inputs = F.pad(targets[:, :-1], (1, 0))
    model = Seq2Seq(sizes, speech).to(device).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.997), eps=1e-9,
                                 fused=device == "cuda")  # fmt: skip
    forward = torch.compile(model) if compiled else model
    holder = {}

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device, dtype=torch.bfloat16):
            logits = forward(inputs, decoder_inputs)
        loss = F.cross_entropy(logits.float().reshape(-1, sizes.vocab), targets.reshape(-1),
                               ignore_index=0, label_smoothing=0.1)  # fmt: skip
        loss.backward()
        optimizer.step()
        holder["loss"] = loss

    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    seconds = _seconds_per_step(step, steps, sync)
    return {"seconds_per_step": seconds, "loss": float(holder["loss"]),
            "versions": {"torch": torch.__version__}}  # fmt: skip


def matmul(framework: str, size: int, device: str) -> dict:
    """Seconds for one `size`^3 bfloat16 product (mean of 20 after warm-ups), on random data."""
    if framework == "torch":
        import torch

        a, b = (torch.randn(size, size, device=device, dtype=torch.bfloat16) for _ in range(2))
        sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
        seconds = _seconds_per_step(lambda: torch.mm(a, b), 20, sync)
        name = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    else:
        import jax
        import jax.numpy as jnp

        keys = jax.random.split(jax.random.key(0))
        a, b = (jax.random.normal(k, (size, size), jnp.bfloat16) for k in keys)
        product = jax.jit(jnp.matmul)
        holder = {}

        def step():
            holder["c"] = product(a, b)

        seconds = _seconds_per_step(step, 20, lambda: jax.block_until_ready(holder["c"]))
        name = str(jax.devices()[0].device_kind)
    return {"seconds_per_step": seconds, "flops": 2 * size**3, "device_name": name}


def run_one(args) -> dict:
    """One contender in this process: its result, with the FLOPs it is measured by."""
    if args.contender.startswith("matmul_"):
        size = MATMUL_SIZE if args.preset == "gpu" else 256
        return matmul(args.contender.removeprefix("matmul_"), size, args.device)
    sizes = sizes_for(args.preset, args.model)
    if args.contender == "keras_jax":
        result = keras_jax(sizes, args.model, args.steps, args.device)
    else:
        result = pytorch(sizes, args.model, args.steps, args.device,
                         args.contender == "torch_compile")  # fmt: skip
    return {**result, "flops": common.training_step_flops(sizes, args.model == "speech")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="gpu", choices=("gpu", "smallest"))
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--contenders", default=",".join(CONTENDERS))
    parser.add_argument("--timeout", type=int, default=240, help="seconds per contender")
    parser.add_argument("--out", default="gpu_bench.json")
    parser.add_argument("--contender", help=argparse.SUPPRESS)  # a child: run this one
    parser.add_argument("--model", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.contender:
        print(json.dumps(run_one(args)))
        return 0

    env = {**os.environ, "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
    if args.device == "cpu":
        env["JAX_PLATFORMS"] = "cpu"
    jobs = [("matmul_torch", None), ("matmul_jax", None)] + [
        (contender, model) for model in args.models.split(",")
        for contender in args.contenders.split(",")]  # fmt: skip
    results = []
    for contender, model in jobs:
        flags = dict(contender=contender, model=model, preset=args.preset, device=args.device,
                     steps=args.steps)  # fmt: skip
        command = [sys.executable, __file__] + [f"--{k}={v}" for k, v in flags.items()]
        try:
            done = subprocess.run(command, env=env, capture_output=True, text=True,
                                  timeout=args.timeout)  # fmt: skip
            row = (json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0
                   else {"error": done.stderr.strip().splitlines()[-1:]})  # fmt: skip
            if done.returncode != 0:
                print(done.stderr[-2000:], file=sys.stderr)
        except subprocess.TimeoutExpired:
            row = {"error": f"over {args.timeout} s"}
        row.update(contender=contender, model=model)
        if "seconds_per_step" in row:
            row["tflops"] = row["flops"] / row["seconds_per_step"] / 1e12
        results.append(row)
        print(json.dumps(row), flush=True)
        Path(args.out).write_text(json.dumps(results, indent=1))
    print(table(results))
    return 0 if all("error" not in row for row in results) else 1


def table(results: list) -> str:
    """Markdown: TFLOP/s per contender, as a fraction of the measured matmul limit and the spec."""
    limit = max((r["tflops"] for r in results if r["contender"].startswith("matmul_")
                 and "tflops" in r), default=None)  # fmt: skip
    lines = ["| model | contender | ms / step | TFLOP/s | of measured matmul | of spec |",
             "|---|---|---:|---:|---:|---:|"]  # fmt: skip
    for r in results:
        if "tflops" not in r:
            lines.append(f"| {r['model']} | {r['contender']} | failed: {r.get('error')} | | | |")
            continue
        share = f"{r['tflops'] / limit:.1%}" if limit else "-"
        lines.append(f"| {r['model'] or '-'} | {r['contender']} | "
                     f"{r['seconds_per_step'] * 1e3:.2f} | {r['tflops']:.1f} | {share} | "
                     f"{r['tflops'] / HOPPER_SPEC_TFLOPS:.1%} |")  # fmt: skip
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
