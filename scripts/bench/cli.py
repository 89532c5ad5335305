"""`python scripts/bench.py`: flags, the run, the printed report and the JSON file."""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import importlib.metadata
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

from . import report, sections, worker
from . import sizes as sizes_module
from .runner import last_line

SECTIONS = {
    "training": sections.training,  # also gives the memory table
    "decoding": sections.decoding,
    "pipeline": sections.featurization,
}
PACKAGES = ("tensorflow", "keras", "t2t-lite", "torch", "keras-hub", "librosa", "numpy")


def machine() -> dict:
    """CPU model, cores and memory of this machine."""
    model = platform.processor()
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    memory_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {
        "cpu": model,
        "cores": len(os.sched_getaffinity(0)),
        "memory_gib": round(memory_gib, 1),
        "python": platform.python_version(),
        # Other tenants of the cores show up here, and in min/max spreads.
        "load_average_start": round(os.getloadavg()[0], 2),
    }


def versions() -> dict:
    found = {}
    for package in PACKAGES:
        try:
            found[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            found[package] = None
    return found


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python scripts/bench.py",
        description="t2t-lite against its peers, side by side in one run: training "
        "throughput, decoding, input pipeline and memory. Prints Markdown tables and "
        "writes every number to --output.",
    )
    parser.add_argument(
        "--size",
        choices=sorted(sizes_module.PRESETS),
        default="default",
        help="preset of every size below (default: about 10 min on 2 cores)",
    )
    parser.add_argument(
        "--sections",
        default=",".join(SECTIONS),
        help=f"comma-separated subset of {', '.join(SECTIONS)} (empty: only --profile)",
    )
    parser.add_argument("--output", default="bench_results.json", help="the JSON results")
    parser.add_argument(
        "--log_dir",
        default=None,
        help="keep each worker's log here (default: a temporary "
        "directory, removed when every contender succeeded)",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="also print a per-op profile of t2t-lite's training step",
    )
    sizes_module.add_flags(parser)
    args = parser.parse_args(argv)
    args.sections = [name for name in args.sections.split(",") if name]
    unknown = set(args.sections) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown --sections {', '.join(sorted(unknown))}; use {', '.join(SECTIONS)}.")
    try:
        args.sizes = sizes_module.from_args(args)
    except ValueError as error:
        parser.error(str(error))
    return args


def _errors(results: dict) -> list[str]:
    errors = []
    for name in SECTIONS:
        section = results.get(name) or {}
        groups = [section] + [v for v in section.values() if isinstance(v, dict)]
        for group in groups:
            for row in group.get("rows", []) + ([group] if "error" in group else []):
                if row.get("error"):
                    errors.append(f"{name}: {row['label']}: {last_line(row['error'])}")
    return sorted(set(errors))


def write_json(path: Path, results: dict) -> None:
    """Writes to a temporary name, then renames (never a half-written file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    temporary.replace(path)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        worker.main(argv[1])
        return 0
    args = parse_args(argv)
    sizes = args.sizes
    log_dir = Path(args.log_dir or tempfile.mkdtemp(prefix="t2t_lite_bench_logs_"))
    log_dir.mkdir(parents=True, exist_ok=True)
    started = time.time()

    def say(text: str) -> None:
        print(f"[{time.time() - started:4.0f} s] {text}", file=sys.stderr, flush=True)

    say(f"t2t-lite benchmark, --size={args.size}; worker logs in {log_dir}")
    results = {
        "date": datetime.date.today().isoformat(),
        "command": " ".join(["python scripts/bench.py", *argv]),
        "machine": machine(),
        "versions": versions(),
        "sizes": dataclasses.asdict(sizes),
    }
    for name in args.sections:
        results[name] = SECTIONS[name](sizes, log_dir, say)
    if args.profile:
        from . import profile

        results["profile"] = profile.run(sizes, log_dir, say)
    results["goals"] = report.goals(results)
    results["seconds"] = time.time() - started
    results["machine"]["load_average_end"] = round(os.getloadavg()[0], 2)
    write_json(Path(args.output), results)
    print(report.render(results))
    if "profile" in results:
        print("\n" + "\n".join(results["profile"]["lines"]))
    errors = _errors(results)
    say(f"wrote {args.output} in {results['seconds']:.0f} s")
    if errors:
        say("some contenders failed (logs kept in " + str(log_dir) + "):\n  " + "\n  ".join(errors))
        return 1
    if args.log_dir is None:
        shutil.rmtree(log_dir, ignore_errors=True)
    return 0
