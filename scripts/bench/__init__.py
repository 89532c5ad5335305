"""t2t-lite's benchmarks (`scripts/bench.py`): one process per contender, both ends of its pipe.

Standard library only: a worker sets its environment and pins its cores before numeric imports.
"""

import importlib
import multiprocessing
import os
import resource
import time
import traceback
from pathlib import Path


def serve(conn, kind: str, params: dict, sizes, cores, env: dict, log: str, warmup) -> None:
    """The worker: environment and cores first, then build `kind` ("module.Class"), `run(**kwargs)`
    it `sizes.warmup` times per `warmup` kwargs, reply `ready`, and answer `(method, kwargs)` until
    None ("memory": peak and after-imports RSS, MiB); an exception goes back as `{"error": ...}`."""
    with open(log, "ab", buffering=0) as file:  # library logs and stray prints
        os.dup2(file.fileno(), 1)
        os.dup2(file.fileno(), 2)
    os.environ.update(env)
    if cores:
        os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:cores])
    try:
        module, name = kind.split(".")
        factory = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        with open("/proc/self/status", encoding="ascii") as status:
            baseline = next(int(line.split()[1]) / 1024 for line in status if "VmRSS" in line)
        contender = factory(sizes, **params, **({"cores": cores} if cores else {}))
        for kwargs in list(warmup) * sizes.warmup:
            contender.run(**kwargs)
        conn.send({"ready": True})
        for method, kwargs in iter(conn.recv, None):  # until None
            if method == "memory":
                peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
                conn.send({"peak_rss_mb": peak, "baseline_rss_mb": baseline})
            else:  # timed whole (its result is ready on return) unless it gives "seconds"
                start = time.perf_counter()
                reply = getattr(contender, method)(**kwargs)
                conn.send({"seconds": time.perf_counter() - start, **reply})
    except EOFError:  # the parent closed the pipe (or was killed): nothing to answer
        return
    except Exception:  # noqa: BLE001 - the parent reports it
        conn.send({"error": traceback.format_exc()})


class Worker:
    """The parent's end: starts `serve` in a spawned process; `call` is one request and reply."""

    def __init__(self, name, kind, sizes, log_dir, say, cores=None, env=None, warmup=(), **params):
        context = multiprocessing.get_context("spawn")
        self.name, self.say, self.error = name, say, None
        self.log = f"{log_dir}/{name.replace('/', '-')}.log"
        self.conn, child = context.Pipe()
        self.process = context.Process(
            target=serve, args=(child, kind, params, sizes, cores, env or {}, self.log, warmup))
        self.process.start()
        child.close()  # a worker that dies is then an EOFError here

    def call(self, method=None, **kwargs) -> dict | None:
        """Sends `(method, kwargs)` (None: only waits for `ready`) and returns the reply; None once
        the worker has failed, which it says once (`error`: the traceback, or the log's tail)."""
        if self.error:
            return None
        try:
            self.conn.send((method, kwargs)) if method else None
            reply = self.conn.recv()
        except (EOFError, OSError):
            self.process.join(5)
            tail = Path(self.log).read_text(errors="replace").splitlines()[-20:]
            reply = {"error": "\n".join([f"exit code {self.process.exitcode}", *tail])}
        if "error" not in reply:
            return reply
        self.error = reply["error"]
        lines = [line.strip() for line in self.error.splitlines() if line.strip()]
        self.say(f"  FAILED {self.name}: {lines[-1] if lines else 'failed'}")
