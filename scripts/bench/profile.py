"""Where t2t-lite's time goes: a per-op profile of one repetition (`--profile`).

A worker builds a t2t-lite contender, warms it up, runs one repetition under
`tf.profiler`, and sums the *self* time of every TensorFlow op by op type
(from the trace's XPlane: events nested on the same thread are subtracted
from their parent; control-flow and function-call ops, which only wait for
their bodies, are left out). The result is a table of the op types that
dominate, with matmul-like ops (MatMul, BatchMatMul, Einsum, Conv2D and
their fused forms) summed separately: a measured answer to "what does the
time go to", not a guess.
"""

from __future__ import annotations

import collections
import glob
import importlib
import shutil
import tempfile

from .sizes import Sizes

# Ops whose time is their bodies' (run as separate events) or waiting.
CONTAINERS = {
    "While", "StatelessWhile", "PartitionedCall", "StatefulPartitionedCall", "If",
    "StatelessIf", "Case", "StatelessCase", "IteratorGetNext", "Identity", "NoOp",
    "_Recv", "_Send", "Enter", "Exit", "Merge", "Switch", "NextIteration", "LoopCond",
}  # fmt: skip
MATMUL_PREFIXES = ("MatMul", "BatchMatMul", "FusedMatMul", "Einsum", "Conv2D", "FusedConv2D")
TOP = 12


def op_type(name: str, display_name: str) -> str | None:
    """The op type of a trace event, or None for a non-op event."""
    if display_name and ":" not in display_name and "::" not in name:
        return display_name
    if ":" in name and "::" not in name:
        return name.rsplit(":", 1)[-1]
    return None


def self_times(log_dir: str) -> collections.Counter:
    """Seconds of self time per op type over every host thread of the trace."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    totals = collections.Counter()
    for path in glob.glob(f"{log_dir}/**/*.xplane.pb", recursive=True):
        space = xplane_pb2.XSpace()
        with open(path, "rb") as trace:
            space.ParseFromString(trace.read())
        for plane in space.planes:
            metadata = plane.event_metadata
            for line in plane.lines:
                if line.name == "python":
                    continue
                events = sorted(line.events, key=lambda e: (e.offset_ps, -e.duration_ps))
                stack: list[list] = []  # [end, type, child time]
                for event in events:
                    while stack and stack[-1][0] <= event.offset_ps:
                        end, kind, children, duration = stack.pop()
                        if kind:
                            totals[kind] += (duration - children) / 1e12
                    info = metadata[event.metadata_id]
                    kind = op_type(info.name, info.display_name)
                    if stack:
                        stack[-1][2] += event.duration_ps
                    stack.append([event.offset_ps + event.duration_ps, kind, 0, event.duration_ps])
                for _end, kind, children, duration in stack:
                    if kind:
                        totals[kind] += (duration - children) / 1e12
    for kind in CONTAINERS:
        totals.pop(kind, None)
    return totals


class Profiled:
    """A contender of another kind, whose `run` is profiled.

    Args:
        sizes: shared sizes.
        kind: the contender's kind (see `worker.KINDS`).
        params: its parameters.
        case: the `run` arguments to profile.
    """

    def __init__(self, sizes: Sizes, kind: str, params: dict, case: dict):
        from .worker import KINDS

        module_name, class_name = KINDS[kind]
        module = importlib.import_module(f"{__package__}.{module_name}")
        self.contender = getattr(module, class_name)(sizes, **params)
        self.case = case

    @staticmethod
    def _trace(function) -> tuple:
        """`(function(), op self times)` with `function` run under the profiler."""
        import tensorflow as tf

        log_dir = tempfile.mkdtemp(prefix="t2t_lite_profile_")
        try:
            tf.profiler.experimental.start(log_dir)
            try:
                result = function()
            finally:
                tf.profiler.experimental.stop()
            return result, self_times(log_dir)
        finally:
            shutil.rmtree(log_dir, ignore_errors=True)

    def run(self) -> dict:
        # Once untimed first: it pays the profiler's start-up, and any retracing
        # caused by contenders built later in this process (a Keras contender
        # resets the global seed, which retraces earlier `tf.function`s).
        self._trace(lambda: self.contender.run(**self.case))
        result, totals = self._trace(lambda: self.contender.run(**self.case))
        result["op_seconds"] = dict(totals.most_common())
        return result


def is_matmul(kind: str) -> bool:
    """MatMul, BatchMatMul, Einsum, Conv2D and their fused or oneDNN (_Mkl) forms."""
    base = kind.removeprefix("_MklNative").removeprefix("_Mkl").removeprefix("_")
    return base.startswith(MATMUL_PREFIXES)


def summarize(title: str, result: dict) -> list[str]:
    """A Markdown table of the op types with the most self time."""
    ops = result["op_seconds"]
    total = sum(ops.values()) or 1.0
    matmul = sum(v for k, v in ops.items() if is_matmul(k))
    lines = [
        f"Profile of {title}: {result['seconds']:.2f} s wall (profiled), "
        f"{total:.2f} s of op self time; matmul/conv ops {100 * matmul / total:.0f}%, "
        f"everything else {100 * (total - matmul) / total:.0f}%.",
        "",
        "| op type | self time (s) | share |",
        "|---|---:|---:|",
    ]
    for kind, seconds in sorted(ops.items(), key=lambda item: -item[1])[:TOP]:
        lines.append(f"| {kind} | {seconds:.3f} | {100 * seconds / total:.1f}% |")
    return lines


def targets(sizes: Sizes) -> list[tuple]:
    """(title, kind, params, case, cores) of every profiled contender."""
    longest = max(sizes.decode_lengths)
    return [
        ("t2t-lite training, text (tf.function)", "t2t_train",
         {"modality": "symbol", "xla": False}, {}, None),
        ("plain Keras training, text (for comparison)", "keras_train",
         {"flavour": "plain", "modality": "symbol"}, {}, None),
        ("t2t-lite training, speech (tf.function)", "t2t_train",
         {"modality": "speech", "xla": False}, {}, None),
        (f"t2t-lite cached decoding, {longest} tokens", "t2t_decode", {},
         {"mode": "cached", "length": longest}, None),
        ("t2t-lite input pipeline, 1 core", "t2t_featurize", {"cores": 1}, {}, 1),
        ("t2t-lite input pipeline, 2 cores", "t2t_featurize", {"cores": 2}, {}, 2),
    ]  # fmt: skip


def run(sizes: Sizes, log_dir, say=print) -> dict:
    """Profiles t2t-lite's training steps (and plain Keras's, to compare), its
    longest cached decode and its input pipeline: one worker per core count."""
    from .runner import Worker, WorkerError, close_all, start_workers

    say("profile:")
    by_cores: dict = {}
    for index, (_, kind, params, case, cores) in enumerate(targets(sizes)):
        contender = {"kind": "profile", "params": {"kind": kind, "params": params, "case": case}}
        by_cores.setdefault(cores, {})[str(index)] = contender
    workers = {
        cores: Worker(f"profile-{cores or 'all'}-cores", contenders, sizes, log_dir,
                      cores=cores, threads=cores)
        for cores, contenders in by_cores.items()
    }  # fmt: skip
    start_workers(list(workers.values()), sizes.jobs, say)
    section = {"lines": [], "results": {}}
    for index, (title, *_, cores) in enumerate(targets(sizes)):
        try:
            result = workers[cores].run(str(index))
        except WorkerError as error:
            section["lines"].append(f"Profile of {title} failed: {error}")
            continue
        section["results"][title] = result
        section["lines"] += summarize(title, result) + [""]
    close_all(list(workers.values()))
    return section
