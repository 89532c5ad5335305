"""The parent side: start workers, alternate their repetitions, collect results.

Every contender lives in its own subprocess (`worker.py`), so its imports,
thread pools and peak memory are its own. Workers set up (import, build,
trace or compile, warm up) a few at a time; then each repetition round runs
every case once, in a fixed order (A B C A B C ...), and only one worker
computes at any moment.
"""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from . import worker as worker_module
from .sizes import Sizes

BENCH_SCRIPT = Path(__file__).resolve().parent.parent / "bench.py"


class WorkerError(RuntimeError):
    """A worker failed to set up or to run a case; the message has its log's tail."""


def last_line(text: str) -> str:
    """The last non-blank line of an error (the exception, in a traceback)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else text


class Worker:
    """One benchmark subprocess hosting one or more contenders.

    Args:
        name: a label, also the name of its log file in `log_dir`.
        contenders: `{contender_id: {"kind": ..., "params": {...}}}`.
        sizes: the shared sizes.
        log_dir: where the worker's stderr goes.
        cores: pin the worker to this many cores (None: all).
        threads: value for OMP/MKL/OpenBLAS thread variables (None: leave).
        env: more environment variables, unless already set by the user.
    """

    def __init__(
        self,
        name: str,
        contenders: dict,
        sizes: Sizes,
        log_dir: Path,
        cores: int | None = None,
        threads: int | None = None,
        env: dict | None = None,
    ):
        self.name = name
        self.contenders = contenders
        self.sizes = sizes
        self.cores = cores
        self.threads = threads
        self.env = env or {}
        self.log_path = log_dir / f"{name}.log"
        self.process: subprocess.Popen | None = None
        self.error: str | None = None
        self.setup_seconds = 0.0

    def start(self) -> None:
        env = dict(self.env, TF_CPP_MIN_LOG_LEVEL="2", PYTHONUNBUFFERED="1")
        env.update(os.environ)
        if self.threads:
            for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
                env[variable] = str(self.threads)
        spec = worker_module.spec_for(self.sizes, self.contenders, self.cores)
        with open(self.log_path, "w", encoding="utf-8") as log:
            self.process = subprocess.Popen(
                [sys.executable, str(BENCH_SCRIPT), "--worker", spec],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                env=env,
                text=True,
                bufsize=1,
            )

    def _log_tail(self, lines: int = 25) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def _request(self, command: dict | None) -> dict:
        if self.error:
            raise WorkerError(self.error)
        try:
            if command is not None:
                self.process.stdin.write(json.dumps(command) + "\n")
                self.process.stdin.flush()
            line = self.process.stdout.readline()
        except (BrokenPipeError, OSError):
            line = ""
        if not line:
            code = self.process.wait()
            self.error = f"worker {self.name} exited with code {code}:\n{self._log_tail()}"
            raise WorkerError(self.error)
        message = json.loads(line)
        if "error" in message:
            self.error = f"worker {self.name} failed:\n{message['error']}"
            self.close()
            raise WorkerError(self.error)
        return message

    def wait_ready(self) -> None:
        self.setup_seconds = self._request(None)["setup_seconds"]

    def run(self, contender: str, **case) -> dict:
        return self._request({"cmd": "run", "contender": contender, "case": case})

    def memory(self) -> dict:
        return self._request({"cmd": "memory"})

    def request_exit(self) -> None:
        """Asks the worker to exit (without waiting)."""
        if self.process is None or self.process.poll() is not None or self.process.stdin.closed:
            return
        try:
            self.process.stdin.write(json.dumps({"cmd": "exit"}) + "\n")
            self.process.stdin.close()
        except (BrokenPipeError, OSError):
            pass

    def close(self, timeout: float = 20.0) -> None:
        """Ends the worker: asks it to exit, kills it if it has not within `timeout`."""
        self.request_exit()
        if self.process is None:
            return
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def close_all(workers: list[Worker]) -> None:
    """Ends every worker, all at once (a TF process can take seconds to exit)."""
    for worker in workers:
        worker.request_exit()
    for worker in workers:
        worker.close()


@dataclasses.dataclass
class Case:
    """One timed thing: a contender in a worker, with its `run` arguments."""

    key: str  # unique label, e.g. "training/text/pytorch"
    worker: Worker
    contender: str
    arguments: dict = dataclasses.field(default_factory=dict)


def start_workers(workers: list[Worker], jobs: int, say=print) -> None:
    """Starts every worker, at most `jobs` setting up at once; records failures."""
    pending, active = list(workers), []
    while pending or active:
        while pending and len(active) < jobs:
            worker = pending.pop(0)
            say(f"  setting up {worker.name}")
            worker.start()
            active.append(worker)
        worker = active.pop(0)
        try:
            worker.wait_ready()
            say(f"  {worker.name} ready ({worker.setup_seconds:.0f} s)")
        except WorkerError as error:
            say(f"  {worker.name} FAILED: {last_line(str(error))}")


def alternate(cases: list[Case], reps: int, say=print) -> dict[str, list[dict]]:
    """Runs `reps` rounds of every case in order; returns each case's results.

    A case whose worker failed is skipped from then on (its error is kept on
    the worker).
    """
    results = {case.key: [] for case in cases}
    for rep in range(reps):
        for case in cases:
            if case.worker.error:
                continue
            try:
                results[case.key].append(case.worker.run(case.contender, **case.arguments))
            except WorkerError as error:
                say(f"  {case.key} FAILED: {last_line(str(error))}")
        say(f"  round {rep + 1}/{reps} done")
    return results


def summarize(results: list[dict], scale: float = 1.0) -> dict | None:
    """Median, min and max of `units / seconds * scale` over repetitions."""
    if not results:
        return None
    rates = [r["units"] / r["seconds"] * scale for r in results]
    return {
        "median": statistics.median(rates),
        "min": min(rates),
        "max": max(rates),
        "reps": len(rates),
        "seconds": [r["seconds"] for r in results],
    }
