"""t2t-lite against its peers, side by side in one run: Markdown tables, and --output.

    pip install -e ".[bench]"
    python scripts/bench.py                  # default sizes: 8-20 min on 2 cores
    python scripts/bench.py --size=smallest  # every code path, quickly (the test)
    python scripts/bench.py --sections=training --profile

Each contender builds and warms up in its own process (scripts/bench/), then a comparison's
contenders take turns, repetition by repetition (A B C A B C ...); every ratio is within one run.
Training (text, speech): t2t-lite (tf.function, XLA, bfloat16) vs PyTorch (two OpenMP settings,
bfloat16), plain Keras 3, keras-hub: rate, loss, GFLOP/s (hand-counted; limit: TF's matmul), peak
memory. Decoding: cached/uncached beam search, keras-hub. Featurization: t2t-lite vs librosa.
"""

import argparse
import datetime
import importlib.metadata
import importlib.util
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import Worker  # noqa: E402 - the standard library only: each worker imports this file

PACKAGES = ("tensorflow", "keras", "t2t-lite", "torch", "keras-hub", "librosa", "numpy")
PASSIVE = {"OMP_WAIT_POLICY": "PASSIVE"}  # libgomp's spinning loses ~10x on a shared core
# The instruction sets that decide float32 and bfloat16 speed, as /proc/cpuinfo names them.
ISA_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16")
BFC = "TF_CPU_ALLOCATOR_USE_BFC"  # importing t2t_lite sets it; Keras users can too
T2T, TORCH, KERAS = "t2t.Training", "torch_peer.Training", "keras_peer.Training"
TRAINING = [  # (key, label, worker kind, required module, worker kwargs)
    ("t2t", "t2t-lite transformer (tf.function)", T2T, None, {}),
    ("t2t_xla", "t2t-lite transformer (--xla_compile)", T2T, None, {"xla": True}),
    ("torch", "PyTorch nn.Transformer (norm_first)", TORCH, "torch", {}),
    ("torch_passive", "PyTorch nn.Transformer, OMP_WAIT_POLICY=PASSIVE", TORCH, "torch",
     {"env": PASSIVE}),
    ("keras", "plain Keras 3 (MultiHeadAttention + Dense)", KERAS, None, {"flavour": "plain"}),
    ("hub", "keras-hub TransformerEncoder/Decoder", KERAS, "keras_hub", {"flavour": "hub"}),
    ("hub_bfc", f"keras-hub, {BFC} (t2t-lite's allocator)", KERAS, "keras_hub",
     {"flavour": "hub", "env": {BFC: "true"}}),
    ("t2t_bf16", "t2t-lite transformer, activation_dtype=bfloat16", T2T, None,
     {"dtype": "bfloat16"}),
    ("torch_bf16", "PyTorch nn.Transformer, autocast bfloat16", TORCH, "torch", {"bf16": True}),
]  # fmt: skip


def stats(values) -> dict | None:
    if values:
        return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def compare(specs, cases, reps, sizes, log_dir, say, after=None) -> list:
    """Starts a worker per spec `(name, kind, required module, kwargs)` whose module is installed;
    once all are ready, runs `reps` rounds of every case `(group, key, label, worker name, run
    kwargs)` in turn; `after(workers)` runs before they exit. A row per case, with its memory."""
    workers = {}
    for name, kind, requires, kwargs in specs:
        if not requires or importlib.util.find_spec(requires):
            say(f"  starting {name}")
            warmup = [case[4] for case in cases if case[3] == name]  # every case it runs
            workers[name] = Worker(name, kind, sizes, log_dir, say, warmup=warmup, **kwargs)
    results = {case[:2]: [] for case in cases}
    for worker in workers.values():  # a failure is said, and reported in the rows
        worker.call()
    for rep in range(reps):
        for group, key, _, name, kwargs in cases:
            if name in workers and (reply := workers[name].call("run", **kwargs)):
                results[group, key].append(reply)
        say(f"  round {rep + 1}/{reps} done")
    memory = {name: worker.call("memory") for name, worker in workers.items()}
    after(workers) if after else None
    for worker in workers.values():  # its temporary files are in log_dir (TMPDIR)
        worker.process.kill()
        worker.process.join()
    rows = []
    for group, key, label, name, _ in cases:
        measured, worker = results[group, key], workers.get(name)
        rows.append({"group": group, "key": key, "label": label, "reps": len(measured),
                     "rate": stats([r["units"] / r["seconds"] for r in measured]),
                     "seconds": [r["seconds"] for r in measured], "memory": memory.get(name),
                     **{k: [r[k] for r in measured] for k in ("loss", "eos_seen")
                        if measured and k in measured[0]}})  # fmt: skip
        if worker is None or worker.error:
            rows[-1].update({"error": worker.error} if worker else
                            {"skipped": "not installed; pip install -e .[bench]"})
    return rows


def training(sizes, log_dir, say, profile=False) -> dict:
    from bench.common import training_step_flops

    section = {"rows": []}
    for title, modality in (("text", "symbol"), ("speech", "speech")):
        say(f"training ({title}):")
        speech = title == "speech"
        contenders = [c for c in TRAINING if speech or "bf16" not in c[0]]  # bfloat16: speech
        specs = [(f"{title}/{key}", kind, requires, {"modality": modality, **kwargs})
                 for key, _, kind, requires, kwargs in contenders]  # fmt: skip
        cases = [(title, key, label, f"{title}/{key}", {}) for key, label, *_ in contenders]
        if not speech:
            specs.append(("matmul", "t2t.Matmul", None, {}))
            cases.append(("text", "matmul", f"TF float32 matmul {sizes.matmul_size}³ (the "
                          "machine's limit)", "matmul", {}))
        profiled = lambda workers: section.update(profile=workers["speech/t2t"].call("profile"))
        flops = training_step_flops(sizes, speech)
        for row in compare(specs, cases, sizes.reps, sizes, log_dir, say,
                           profiled if profile and speech else None):
            if row["key"] == "matmul":  # whose rate is GFLOP/s
                row["gflops"], row["rate"] = row["rate"], None
            else:
                row["gflops"] = stats([flops * sizes.steps / s / 1e9 for s in row["seconds"]])
            section["rows"].append(row)
        unit = "audio-s/s" if speech else "target tokens/s"
        section[title] = {"unit": unit, "flops_per_step": flops}
    return section


def decoding(sizes, log_dir, say) -> dict:
    say("decoding:")
    specs = [("t2t", "t2t.Decoding", None, {}), ("hub", "keras_peer.HubDecoding", "keras_hub", {})]
    kinds = (("cached", "t2t-lite cached beam search (BatchDecoder)", "t2t", {"mode": "cached"}),
             ("uncached", "t2t-lite uncached (recompute the prefix)", "t2t", {"mode": "uncached"}),
             ("hub", "keras-hub BeamSampler + cached decoder", "hub", {}))  # fmt: skip
    cases = [(length, key, label, name, {**mode, "length": length})
             for length in sizes.decode_lengths for key, label, name, mode in kinds]  # fmt: skip
    return {"rows": compare(specs, cases, sizes.decode_reps, sizes, log_dir, say)}


def pipeline(sizes, log_dir, say) -> dict:
    say("input pipeline:")
    threads = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
    kinds = (  # (key, label, worker, run kwargs)
        ("t2t", "t2t-lite training pipeline (log-mel + deltas + CMVN + SpecAugment)", "t2t", {}),
        ("logmel", "librosa log-mel", "librosa", {"deltas": False}),
        ("deltas", "librosa log-mel + delta-deltas + CMVN", "librosa", {"deltas": True}))
    specs, cases = [], []
    for cores in sizes.pipeline_cores:  # each worker pinned to its first `cores` CPUs
        specs += [(f"t2t/{cores}", "t2t.Featurize", None,
                   {"cores": cores, "env": dict.fromkeys(threads, str(cores))}),
                  (f"librosa/{cores}", "common.Librosa", "librosa",
                   {"cores": cores, "env": dict.fromkeys(threads, "1")})]  # fmt: skip
        cases += [(cores, key, label, f"{name}/{cores}", run) for key, label, name, run in kinds]
    return {"rows": compare(specs, cases, sizes.reps, sizes, log_dir, say)}


def fmt(value) -> str:
    digits = 0 if value is None or abs(value) >= 100 else 1 if abs(value) >= 10 else 2
    return "—" if value is None else f"{value:,.{digits}f}"


def median(rows, key, group, field="rate"):
    row = next((r for r in rows if (r["group"], r["key"]) == (group, key)), {})
    return (row.get(field) or {}).get("median")


def ratio(numerator, denominator):
    return numerator / denominator if numerator is not None and denominator else None


def table(title, head, lines, align) -> list:
    return [title, "", "| " + " | ".join(head) + " |",
            "|" + "|".join("---" if a == "l" else "---:" for a in align) + "|",
            *("| " + " | ".join(line) + " |" for line in lines)]  # fmt: skip


def rate_table(title, head, rows, reference, extra=lambda row: [], group=True) -> list:
    """A line per row: [group,] label, median, min and max rate, `extra`, reference ÷ row."""
    lines = []
    for row in rows:
        note = f" ({row['skipped']})" if "skipped" in row else " (FAILED)" if "error" in row else ""
        rate = row["rate"] or {}
        lines.append([str(row["group"])] * group + [row["label"] + note] + [
            fmt(rate.get(k)) for k in ("median", "min", "max")] + extra(row) + [
            fmt(ratio(median(rows, reference, row["group"]), rate.get("median")))])  # fmt: skip
    return table(title, head, lines, "r" * group + "l" + "r" * (len(head) - 1 - group))


def goals(results) -> list:
    """Every ratio of t2t-lite's median rate to a peer's, with issue #13's goal (None: none)."""
    found, rows = [], results.get("training", {}).get("rows", [])

    def add(name, goal, ours, peer, ours_xla=None):
        value = ratio(ours, peer)
        met = None if goal is None or value is None else value >= goal
        found.append({"name": name, "goal": goal, "value": value,
                      "value_xla": ratio(ours_xla, peer), "met": met})  # fmt: skip

    for title in ("text", "speech") if rows else ():
        rate = lambda key, field="rate", title=title: median(rows, key, title, field)
        torch = max(filter(None, (rate("torch"), rate("torch_passive"))), default=None)
        for name, peer, goal, field in (
            ("t2t-lite / PyTorch (faster OpenMP setting)", torch, 1.3, "rate"),
            ("t2t-lite / plain Keras", rate("keras"), 1.0, "rate"),
            ("t2t-lite / keras-hub", rate("hub"), 1.2, "rate"),
            (f"t2t-lite / keras-hub with {BFC}", rate("hub_bfc"), None, "rate"),
            ("t2t-lite GFLOP/s / matmul limit", median(rows, "matmul", "text", "gflops"), 0.5,
             "gflops"),
        ):  # fmt: skip
            add(f"training {title}: {name}", goal, rate("t2t", field), peer, rate("t2t_xla", field))
        for name, ours, peer in (("t2t-lite bfloat16 / float32", "t2t_bf16", "t2t"),
                                 ("PyTorch autocast bfloat16 / float32", "torch_bf16", "torch"),
                                 ("bfloat16, t2t-lite / PyTorch", "t2t_bf16", "torch_bf16")
                                 ) if title == "speech" else ():  # fmt: skip
            add(f"training speech: {name}", None, rate(ours), rate(peer))
    lengths = results["sizes"]["decode_lengths"] if "decoding" in results else ()
    for length in lengths:
        rate = lambda key, length=length: median(results["decoding"]["rows"], key, length)
        add(f"decoding {length}: cached / uncached", 10.0 if length == lengths[-1] else None,
            rate("cached"), rate("uncached"))
        add(f"decoding {length}: cached / keras-hub", 1.0, rate("cached"), rate("hub"))
    for cores in results["sizes"]["pipeline_cores"] if "pipeline" in results else ():
        rate = lambda key, cores=cores: median(results["pipeline"]["rows"], key, cores)
        name = f"featurization {cores} core(s): t2t-lite / librosa log-mel"
        add(name, 1.0, rate("t2t"), rate("logmel"))
        add(f"{name} + deltas + CMVN", None, rate("t2t"), rate("deltas"))
    return found


def render(results) -> str:
    m, s, rows = results["machine"], results["sizes"], results.get("training", {}).get("rows", [])
    isa = "/".join(m.get("isa", [])) or "no AVX2"
    blocks = [[f"Measured {results['date']} with `{results['command']}` on {m['cpu']} with {isa}"
               f" ({m['cores']} cores, {m['memory_gib']:g} GiB; 1-minute load average"
               f" {m['load_average_start']:g} at the start, {m['load_average_end']:g} at the end); "
               + ", ".join(
                   f"{k} {v}" for k, v in results["versions"].items() if v) + "."]]  # fmt: skip
    shapes = {"text": f"source {s['source_length']}, target {s['target_length']}",
              "speech": f"{s['speech_seconds']:g} s at {s['mel_bins']}x{s['speech_channels']} "
                        f"features, target {s['speech_target_length']}"}  # fmt: skip
    memory = lambda m: f"{m['peak_rss_mb']:,.0f} ({m['baseline_rss_mb']:,.0f})" if m else "—"
    for title in shapes if rows else ():
        section = results["training"][title]
        blocks.append(rate_table(
            f"Training, {title} inputs (batch {s['batch']}, {shapes[title]}; "
            f"{section['flops_per_step'] / 1e9:.2f} GFLOP per step, {s['steps']} steps per "
            f"repetition, {s['reps']} repetitions):",
            ["contender", f"{section['unit']} (median)", "min", "max", "GFLOP/s", "loss",
             "peak RSS, MiB (after imports)", "t2t-lite ÷ row"],
            [r for r in rows if r["group"] == title or r["key"] == "matmul"], "t2t",
            lambda r: [fmt((r["gflops"] or {}).get("median")), fmt((r.get("loss") or [None])[-1]),
                       memory(r["memory"])], group=False))  # fmt: skip
    for name, title, head, reference in (
        ("decoding", f"Decoding, beam {s['beam']}, batch {s['decode_batch']}, source "
         f"{s['source_length']} ({s['decode_reps']} repetitions):", ["target length", "contender",
         "tokens/s (median)", "min", "max", "cached ÷ row"], "cached"),
        ("pipeline", f"Input pipeline, {s['pipeline_batches'] * s['batch']} utterances of "
         f"{s['speech_seconds']:g} s per repetition:", ["cores", "featurizer",
         "audio-s/s (median)", "min", "max", "t2t-lite ÷ row"], "t2t"),
    ):  # fmt: skip
        if name in results:
            blocks.append(rate_table(title, head, results[name]["rows"], reference))
    xla = lambda g: "" if g["value_xla"] is None else f" ({fmt(g['value_xla'])})"
    blocks.append(table(
        "Ratios (t2t-lite's rate over the peer's; training: the trainer's default tf.function, "
        "XLA in brackets):", ["ratio", "value", "goal", "met"],
        [[g["name"], fmt(g["value"]) + xla(g), "—" if g["goal"] is None else f"≥ {g['goal']:g}",
          {True: "yes", False: "**no**", None: "—"}[g["met"]]] for g in results["goals"]], "lrrl"))
    if "profile" in results:
        ops = results["profile"]["op_seconds"]
        total = sum(ops.values()) or 1.0
        matmul = sum(v for k, v in ops.items()
                     if any(name in k for name in ("MatMul", "Einsum", "Conv2D")))
        blocks.append(table(
            f"Profile of one t2t-lite speech training repetition (tf.function): "
            f"{results['profile']['profiled_seconds']:.2f} s wall, {total:.2f} s of op self time, "
            f"{100 * matmul / total:.0f}% of it in matmuls and convolutions (fused, oneDNN too):",
            ["op type", "self time (s)", "share"],
            [[k, f"{v:.3f}", f"{100 * v / total:.1f}%"] for k, v in list(ops.items())[:12]], "lrr"))
    return "\n\n".join("\n".join(block) for block in blocks)


def main(argv=None) -> int:
    from bench.common import PRESETS, make_sizes

    sections = {"training": training, "decoding": decoding, "pipeline": pipeline}
    parser = argparse.ArgumentParser("python scripts/bench.py", description=__doc__.split("\n")[0])
    parser.add_argument("--size", choices=sorted(PRESETS), default="default",
                        help="default: 8-20 min on 2 cores; smallest: every code path, quickly")
    parser.add_argument("--sections", default=",".join(sections),
                        help=f"a comma-separated subset of {','.join(sections)}")
    parser.add_argument("--output", default="bench_results.json", help="every number, as JSON")
    parser.add_argument("--profile", action="store_true",
                        help="per-op self time of one t2t-lite speech training repetition")
    args = parser.parse_args(argv)
    chosen = [name for name in args.sections.split(",") if name]
    if not chosen or set(chosen) - set(sections):
        parser.error(f"--sections: a subset of {', '.join(sections)}")
    if args.profile and "training" not in chosen:
        parser.error("--profile profiles a training repetition: keep training in --sections")
    sizes, started = make_sizes(args.size), time.time()
    log_dir = tempfile.mkdtemp(prefix="t2t_lite_bench_")
    os.environ["TMPDIR"] = log_dir  # the workers' temporary files go with their logs
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    say = lambda text: print(f"[{time.time() - started:4.0f} s]", text, file=sys.stderr, flush=True)
    say(f"t2t-lite benchmark, --size={args.size}; worker logs in {log_dir}")
    with open("/proc/cpuinfo", encoding="ascii", errors="replace") as cpuinfo:
        first = {key.strip(): value.strip() for key, _, value in
                 (line.partition(":") for line in cpuinfo.read().split("\n\n")[0].splitlines())}
    isa = [flag for flag in ISA_FLAGS if flag in first.get("flags", "").split()]
    results = {
        "date": datetime.date.today().isoformat(), "sizes": vars(sizes),
        "command": " ".join(["python scripts/bench.py", *(sys.argv[1:] if argv is None else argv)]),
        "versions": {p: next((d.version for d in importlib.metadata.distributions(name=p)), None)
                     for p in PACKAGES},
        "machine": {"cpu": first.get("model name", "unknown"), "isa": isa,
                    "cores": len(os.sched_getaffinity(0)),
                    "memory_gib": round(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
                                        / 2**30, 1), "python": sys.version.split()[0],
                    "load_average_start": round(os.getloadavg()[0], 2)},
    }  # fmt: skip
    for name in chosen:
        profile = {"profile": args.profile} if name == "training" else {}
        results[name] = sections[name](sizes, log_dir, say, **profile)
    if profile := results.get("training", {}).pop("profile", None):  # None: the worker failed
        results["profile"] = profile
    results.update(goals=goals(results), seconds=round(time.time() - started, 1))
    results["machine"]["load_average_end"] = round(os.getloadavg()[0], 2)
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(render(results))
    errors = [f"{r['group']}: {r['label']}: {r['error'].strip().splitlines()[-1]}"
              for name in chosen for r in results[name]["rows"] if "error" in r]  # fmt: skip
    if args.profile and "profile" not in results:
        errors.append("--profile: the t2t-lite speech training worker failed")
    say(f"wrote {args.output} in {results['seconds']:.0f} s")
    if errors:
        say(f"some contenders failed (logs in {log_dir}):\n  " + "\n  ".join(errors))
        return 1
    shutil.rmtree(log_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
