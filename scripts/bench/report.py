"""Tables (Markdown, ready for the README), ratios and the goals of issue #7."""

from __future__ import annotations

# Issue #7's goals: each ratio is t2t-lite's rate over the peer's.
GOALS = {
    "train_vs_torch": 1.3,
    "train_vs_keras": 1.0,
    "matmul_fraction": 0.6,
    "cached_vs_uncached_longest": 10.0,
    "cached_vs_hub": 1.0,
    "featurize_vs_librosa": 1.0,
}


def fmt(value: float | None) -> str:
    if value is None:
        return "—"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def _median(row: dict | None, field: str = "rate") -> float | None:
    if row is None or not row.get(field):
        return None
    return row[field]["median"]


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def _status(row: dict) -> str:
    if row.get("skipped"):
        return f" ({row['skipped']})"
    if row.get("error"):
        return " (FAILED, see the log)"
    return ""


def _find(rows: list[dict], key: str, **match) -> dict | None:
    for row in rows:
        if row["key"] == key and all(row.get(k) == v for k, v in match.items()):
            return row
    return None


# -- tables ------------------------------------------------------------------------------


def training_table(results: dict, title: str) -> list[str]:
    section = results["training"][title]
    sizes = results["sizes"]
    rows = section["rows"]
    reference = _median(_find(rows, "t2t"))
    if title == "text":
        shape = f"batch {sizes['batch']}, source {sizes['source_length']}, " \
                f"target {sizes['target_length']}"  # fmt: skip
    else:
        shape = f"batch {sizes['batch']} x {sizes['speech_seconds']:g} s at " \
                f"{sizes['mel_bins']}x{sizes['speech_channels']} features, " \
                f"target {sizes['speech_target_length']}"  # fmt: skip
    lines = [
        f"Training, {title} inputs ({shape}; {section['flops_per_step'] / 1e9:.2f} GFLOP "
        f"per step, {sizes['steps']} steps per repetition, {sizes['reps']} repetitions):",
        "",
        f"| contender | {section['unit']} (median) | min | max | GFLOP/s | t2t-lite ÷ row |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        rate = row["rate"] or {}
        lines.append(
            f"| {row['label']}{_status(row)} | {fmt(rate.get('median'))} | "
            f"{fmt(rate.get('min'))} | {fmt(rate.get('max'))} | "
            f"{fmt(_median(row, 'gflops'))} | {fmt(_ratio(reference, rate.get('median')))} |"
        )
    limit = _median(results["training"].get("matmul"), "gflops")
    if limit:
        matmul = results["training"]["matmul"]["gflops"]
        fractions = [
            f"{100 * _median(_find(rows, key), 'gflops') / limit:.0f}% ({name})"
            for key, name in (("t2t", "tf.function"), ("t2t_xla", "XLA"))
            if _median(_find(rows, key), "gflops")
        ]
        lines += [
            "",
            f"Machine limit, TF float32 matmul {sizes['matmul_size']}³: {fmt(limit)} GFLOP/s "
            f"(min {fmt(matmul['min'])}, max {fmt(matmul['max'])}); t2t-lite reaches "
            + ", ".join(fractions)
            + " of it.",
        ]
    return lines


def decoding_table(results: dict) -> list[str]:
    section = results["decoding"]
    lines = [
        f"Decoding, beam {section['beam']}, batch {section['batch']}, source "
        f"{results['sizes']['source_length']} ({results['sizes']['decode_reps']} repetitions):",
        "",
        "| target length | contender | tokens/s (median) | min | max | cached ÷ row |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    for row in section["rows"]:
        cached = _median(_find(section["rows"], "cached", length=row["length"]))
        rate = row["rate"] or {}
        note = " (EOS seen: stopped early)" if row.get("eos_seen") else ""
        lines.append(
            f"| {row['length']} | {row['label']}{_status(row)}{note} | {fmt(rate.get('median'))} "
            f"| {fmt(rate.get('min'))} | {fmt(rate.get('max'))} "
            f"| {fmt(_ratio(cached, rate.get('median')))} |"
        )
    return lines


def featurization_table(results: dict) -> list[str]:
    section = results["pipeline"]
    sizes = results["sizes"]
    lines = [
        f"Input pipeline, {sizes['pipeline_batches'] * sizes['batch']} utterances of "
        f"{sizes['speech_seconds']:g} s per repetition:",
        "",
        "| cores | featurizer | audio-s/s (median) | min | max | t2t-lite ÷ row |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    for row in section["rows"]:
        reference = _median(_find(section["rows"], "t2t", cores=row["cores"]))
        rate = row["rate"] or {}
        lines.append(
            f"| {row['cores']} | {row['label']}{_status(row)} | {fmt(rate.get('median'))} "
            f"| {fmt(rate.get('min'))} | {fmt(rate.get('max'))} "
            f"| {fmt(_ratio(reference, rate.get('median')))} |"
        )
    return lines


def memory_table(results: dict) -> list[str]:
    lines = [
        "Peak resident memory of each training contender's process (one process each):",
        "",
        "| inputs | contender | peak RSS (MiB) | after imports (MiB) | peak − after imports |",
        "|---|---|---:|---:|---:|",
    ]
    for title in ("text", "speech"):
        for row in results["training"].get(title, {}).get("rows", []):
            memory = row.get("memory")
            if not memory:
                continue
            peak, base = memory["peak_rss_mb"], memory["baseline_rss_mb"]
            lines.append(
                f"| {title} | {row['label']} | {peak:,.0f} | {base:,.0f} | {peak - base:,.0f} |"
            )
    return lines


# -- goals -------------------------------------------------------------------------------


def goals(results: dict) -> list[dict]:
    """Every ratio of t2t-lite to a peer: value (training: tf.function), XLA
    value, issue #7's goal for it (None: reported only) and whether it is met."""
    found = []

    def add(name: str, goal: float | None, value: float | None, xla: float | None = None):
        met = None if goal is None or value is None else value >= goal
        found.append({"name": name, "goal": goal, "value": value, "value_xla": xla, "met": met})

    training = results.get("training")
    if training and "text" in training:
        limit = _median(training.get("matmul"), "gflops")
        for title in ("text", "speech"):
            rows = training[title]["rows"]
            ours, ours_xla = _median(_find(rows, "t2t")), _median(_find(rows, "t2t_xla"))
            torch_rates = [_median(_find(rows, key)) for key in ("torch", "torch_passive")]
            peers = (
                ("PyTorch (faster OpenMP setting)", max(filter(None, torch_rates), default=None),
                 GOALS["train_vs_torch"]),
                ("plain Keras", _median(_find(rows, "keras")), GOALS["train_vs_keras"]),
                ("keras-hub", _median(_find(rows, "hub")), None),
            )  # fmt: skip
            for name, peer, goal in peers:
                add(f"training {title}: t2t-lite / {name}", goal,
                    _ratio(ours, peer), _ratio(ours_xla, peer))  # fmt: skip
            add(f"training {title}: t2t-lite GFLOP/s / matmul limit", GOALS["matmul_fraction"],
                _ratio(_median(_find(rows, "t2t"), "gflops"), limit),
                _ratio(_median(_find(rows, "t2t_xla"), "gflops"), limit))  # fmt: skip
    decoding = results.get("decoding")
    if decoding:
        rows = decoding["rows"]
        lengths = sorted({row["length"] for row in rows})
        for length in lengths:
            cached = _median(_find(rows, "cached", length=length))
            uncached = _median(_find(rows, "uncached", length=length))
            goal = GOALS["cached_vs_uncached_longest"] if length == lengths[-1] else None
            add(f"decoding {length}: cached / uncached", goal, _ratio(cached, uncached))
            add(f"decoding {length}: cached / keras-hub", GOALS["cached_vs_hub"],
                _ratio(cached, _median(_find(rows, "hub", length=length))))  # fmt: skip
    pipeline = results.get("pipeline")
    if pipeline:
        rows = pipeline["rows"]
        for cores in sorted({row["cores"] for row in rows}):
            ours = _median(_find(rows, "t2t", cores=cores))
            for key, name, goal in (
                ("logmel", "librosa log-mel", GOALS["featurize_vs_librosa"]),
                ("deltas", "librosa log-mel + deltas + CMVN", None),
            ):
                peer = _median(_find(rows, key, cores=cores))
                add(f"featurization {cores} core(s): t2t-lite / {name}", goal, _ratio(ours, peer))
    return found


def goals_table(found: list[dict]) -> list[str]:
    if not found:
        return []
    lines = [
        "Ratios (t2t-lite's rate over the peer's; training: trainer default tf.function, "
        "XLA in brackets):",
        "",
        "| ratio | value | goal | met |",
        "|---|---:|---:|---|",
    ]
    for goal in found:
        value = fmt(goal["value"])
        if goal.get("value_xla") is not None:
            value += f" ({fmt(goal['value_xla'])})"
        target = "—" if goal["goal"] is None else f"≥ {goal['goal']:g}"
        met = {True: "yes", False: "**no**", None: "—"}[goal["met"]]
        lines.append(f"| {goal['name']} | {value} | {target} | {met} |")
    return lines


def faster_variant(results: dict) -> list[str]:
    """Which t2t-lite training variant is faster, per input kind."""
    lines = []
    for title in ("text", "speech"):
        rows = results.get("training", {}).get(title, {}).get("rows", [])
        plain, xla = _median(_find(rows, "t2t")), _median(_find(rows, "t2t_xla"))
        if plain and xla:
            winner = "XLA (--xla_compile)" if xla > plain else "tf.function"
            lines.append(
                f"Faster t2t-lite training variant on this CPU, {title}: {winner} "
                f"(XLA ÷ tf.function = {xla / plain:.2f})."
            )
    return lines


def header(results: dict) -> list[str]:
    """When, where and with what the numbers were measured."""
    machine, versions = results["machine"], results["versions"]
    installed = ", ".join(f"{name} {version}" for name, version in versions.items() if version)
    load = ""
    if "load_average_end" in machine:
        load = (
            f", 1-minute load average {machine['load_average_start']:g} at the start and "
            f"{machine['load_average_end']:g} at the end"
        )
    return [
        f"Measured {results['date']} with `{results['command']}` on {machine['cpu']} "
        f"({machine['cores']} cores, {machine['memory_gib']:g} GiB{load}); {installed}."
    ]


def render(results: dict) -> str:
    """The whole report as Markdown."""
    blocks = [header(results)]
    if "training" in results:
        blocks += [training_table(results, "text"), training_table(results, "speech")]
        blocks += [faster_variant(results), memory_table(results)]
    if "decoding" in results:
        blocks.append(decoding_table(results))
    if "pipeline" in results:
        blocks.append(featurization_table(results))
    blocks.append(goals_table(results["goals"]))
    return "\n\n".join("\n".join(block) for block in blocks if block)
