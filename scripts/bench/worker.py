"""The worker side: one subprocess that builds contenders and times them on request.

    python scripts/bench.py --worker '<json spec>'

The spec names the contenders to build (a kind from `KINDS` plus its
parameters), the shared sizes and, optionally, how many CPU cores the
process may use. The worker limits itself to those cores *before* importing
any numeric library, builds and warms up every contender, answers `ready`,
then serves one JSON command per line on stdin:

- `{"cmd": "run", "contender": id, "case": {...}}` -> the contender's
  `run(**case)` result (`seconds`, `units`, ...);
- `{"cmd": "memory"}` -> peak and baseline resident memory in MiB;
- `{"cmd": "exit"}`.

Replies go to the worker's original stdout, one JSON line each; anything a
library prints goes to stderr (the parent's log file) instead.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import resource
import sys
import time
import traceback

from .sizes import Sizes

# kind -> (module in this package, class). Each class takes `(sizes, **params)`,
# builds and warms up in `__init__`, and times one repetition in `run(**case)`.
KINDS = {
    "t2t_train": ("t2t_side", "T2TTraining"),
    "t2t_decode": ("t2t_side", "T2TDecoding"),
    "torch_train": ("torch_side", "TorchTraining"),
    "keras_train": ("keras_side", "KerasTraining"),
    "hub_decode": ("keras_side", "HubDecoding"),
    "matmul": ("matmul", "Matmul"),
    "t2t_featurize": ("featurize", "T2TFeaturize"),
    "librosa_featurize": ("featurize", "LibrosaFeaturize"),
    "profile": ("profile", "Profiled"),
}


def current_rss_mb() -> float:
    """This process's resident memory now (VmRSS), in MiB."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def peak_rss_mb() -> float:
    """This process's peak resident memory (ru_maxrss is in KiB on Linux), in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def limit_cores(cores: int | None) -> None:
    """Pins the process to its first `cores` CPUs (before numeric imports)."""
    if not cores:
        return
    available = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, available[:cores])


def serve(spec: dict) -> None:
    """Runs the worker described by `spec` until told to exit."""
    limit_cores(spec.get("cores"))
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints -> the log

    def reply(message: dict) -> None:
        replies.write(json.dumps(message) + "\n")

    sizes = Sizes(**{k: tuple(v) if isinstance(v, list) else v for k, v in spec["sizes"].items()})
    contenders, baseline = {}, {}
    try:
        started = time.perf_counter()
        for contender_id, contender in spec["contenders"].items():
            module_name, class_name = KINDS[contender["kind"]]
            module = importlib.import_module(f"{__package__}.{module_name}")
            baseline[contender_id] = current_rss_mb()
            factory = getattr(module, class_name)
            contenders[contender_id] = factory(sizes, **contender.get("params", {}))
        reply({"ready": True, "setup_seconds": time.perf_counter() - started})
    except Exception:  # noqa: BLE001 - reported to the parent, which decides
        reply({"error": traceback.format_exc()})
        return

    for line in sys.stdin:
        command = json.loads(line)
        try:
            if command["cmd"] == "exit":
                return
            if command["cmd"] == "memory":
                reply({"peak_rss_mb": peak_rss_mb(), "baseline_rss_mb": baseline})
            elif command["cmd"] == "run":
                contender = contenders[command["contender"]]
                reply(contender.run(**command.get("case", {})))
            else:
                reply({"error": f"unknown command {command['cmd']!r}"})
        except Exception:  # noqa: BLE001
            reply({"error": traceback.format_exc()})


def main(spec_json: str) -> None:
    serve(json.loads(spec_json))


def spec_for(sizes: Sizes, contenders: dict, cores: int | None) -> str:
    """The JSON spec `serve` reads."""
    return json.dumps(
        {"sizes": dataclasses.asdict(sizes), "contenders": contenders, "cores": cores}
    )
