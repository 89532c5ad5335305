"""Load on t2t-lite-serve: concurrent real-time streams, then HTTP throughput.

    python scripts/load_test.py --export_dir=t2t_stream/export \
        --librispeech=t2t_stream/tmp/spoken_synth --subset=test \
        --streams=4,8,12 --seconds=300 --output=load.json

Starts `t2t-lite-serve` on a free port of 127.0.0.1 (the command a user
runs) and, for each `--streams` value N, opens N WebSocket streams at once.
Each plays held-out utterances (a LibriSpeech-layout split: audio and
`*.trans.txt`) one after another with `--pause_seconds` of a quiet room
between them, in real time: one chunk of the model's streaming chunk
(`ready`'s `chunk_seconds`) every chunk's duration, for `--seconds`. A
chunk's partial latency is from its sending to the arrival of the first
partial whose `end` reaches the chunk's end; a final's latency is from the
sending of the last chunk heard when it arrives. Per N: partial latency
p50/p95/max, final latency p50/p95,
errors, the finals' WER against the utterances played, and the server's
resident memory at the start and the end.

Then HTTP: `--http_requests` utterances posted as WAV one at a time and
`--concurrency` at a time (the server batching them), and the same
concurrency against a server started with `--max_batch=1` (batching off):
requests and audio seconds per second.

Bounded: every stream stops after `--seconds`, every wait has a timeout,
and the server is stopped however the script ends.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import platform
import socket
import subprocess
import sys
import time
import urllib.request

import aiohttp
import jiwer
import numpy as np
import soundfile

from t2t_lite.data.audio_io import read_audio, to_int16_pcm
from t2t_lite.data.librispeech_reader import SplitReport, list_utterances

SAMPLE_RATE = 16000
# The streams start spread over this many seconds (about one streaming
# chunk), so their chunks do not all arrive in the same instant.
START_SPREAD_SECONDS = 0.64


def cpu_name() -> str:
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def resident_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def percentile_ms(values: list[float], p: float) -> float | None:
    return round(1000.0 * float(np.percentile(values, p)), 1) if values else None


@contextlib.contextmanager
def served(export_dir: str, *flags: str):
    """(url, pid) of t2t-lite-serve once /healthz answers 200."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = open(os.devnull, "w")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        ["t2t-lite-serve", f"--export_dir={export_dir}", f"--port={port}", *flags],
        stdout=log, stderr=log,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 600
        while time.time() < deadline:
            if process.poll() is not None:
                raise SystemExit(f"load_test: t2t-lite-serve exited ({process.returncode}).")
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(f"{url}/healthz", timeout=5) as reply:
                    if reply.status == 200:
                        break
            time.sleep(1)
        else:
            raise SystemExit("load_test: the server did not come up in 10 minutes.")
        yield url, process.pid
    finally:
        process.terminate()
        process.wait(timeout=60)
        log.close()


def load_utterances(root: str, subset: str, limit: int) -> list[tuple[np.ndarray, str]]:
    items = list_utterances(root, [subset], SplitReport())[:limit]
    if not items:
        raise SystemExit(f"load_test: no utterances in {root} subset {subset}.")
    return [(read_audio(path, SAMPLE_RATE, strict=False), text.lower()) for _, path, text in items]


def stream_program(utterances, first: int, seconds: float, pause: float, seed: int):
    """Audio of `seconds`: utterances from `first` on, a quiet room between."""
    rng = np.random.default_rng(seed)
    pieces, texts, total, index = [], [], 0, first
    while total < seconds * SAMPLE_RATE:
        audio, text = utterances[index % len(utterances)]
        quiet = rng.uniform(-1e-3, 1e-3, int(pause * SAMPLE_RATE)).astype(np.float32)
        pieces += [audio, quiet]
        texts.append(text)
        total += audio.size + quiet.size
        index += 1
    return np.concatenate(pieces)[: int(seconds * SAMPLE_RATE)], texts


async def one_stream(url: str, audio: np.ndarray, start_delay: float) -> dict:
    """Plays `audio` in real time on one stream; the timings and finals."""
    sent_at: list[float] = []
    partials: list[float] = []
    finals: list[float] = []
    texts: list[str] = []
    errors: list[str] = []
    await asyncio.sleep(start_delay)
    async with aiohttp.ClientSession() as session:
        async with session.ws_connect(f"{url.replace('http', 'ws')}/v1/stream") as ws:
            await ws.send_json({"type": "start", "sample_rate": SAMPLE_RATE, "format": "s16le"})
            ready = await ws.receive_json(timeout=60)
            chunk = int(round(ready["chunk_seconds"] * SAMPLE_RATE))
            pcm = to_int16_pcm(audio).astype("<i2")

            async def send():
                begin = time.perf_counter()
                for k, offset in enumerate(range(0, pcm.size, chunk)):
                    delay = begin + k * chunk / SAMPLE_RATE - time.perf_counter()
                    if delay > 0:
                        await asyncio.sleep(delay)
                    sent_at.append(time.perf_counter())
                    await ws.send_bytes(pcm[offset : offset + chunk].tobytes())
                await ws.send_json({"type": "end"})

            async def receive():
                last_heard = 0
                async for message in ws:
                    if message.type != aiohttp.WSMsgType.TEXT:
                        continue
                    reply, now = json.loads(message.data), time.perf_counter()
                    if reply["type"] == "partial":
                        # The first partial to hear to the end of chunk k answers it.
                        heard = int(round(reply["end"] * SAMPLE_RATE)) // chunk
                        while len(partials) < min(heard, len(sent_at)):
                            partials.append(now - sent_at[len(partials)])
                        last_heard = len(partials) - 1
                    elif reply["type"] == "final":
                        # The final follows the partial of the step that ended it.
                        finals.append(now - sent_at[max(last_heard, 0)])
                        texts.append(reply["text"])
                    elif reply["type"] == "error":
                        errors.append(reply["error"])

            sender = asyncio.create_task(send())
            await asyncio.wait_for(receive(), timeout=audio.size / SAMPLE_RATE + 300)
            await sender
            if ws.close_code not in (1000, None):
                errors.append(f"closed with {ws.close_code}")
    return {"partials": partials, "finals": finals, "texts": texts, "errors": errors}


async def run_streams(url: str, programs: list) -> list[dict]:
    n = len(programs)
    tasks = [
        one_stream(url, audio, start_delay=i * START_SPREAD_SECONDS / n)
        for i, (audio, _) in enumerate(programs)
    ]
    return await asyncio.gather(*tasks, return_exceptions=True)


def stream_load(url: str, pid: int, utterances, n: int, args) -> dict:
    programs = [
        stream_program(utterances, i * 7, args.seconds, args.pause_seconds, seed=i)
        for i in range(n)
    ]
    memory_start = resident_mib(pid)
    results = asyncio.run(run_streams(url, programs))
    memory_end = resident_mib(pid)
    partials, finals, errors, wers = [], [], [], []
    for result, (_, references) in zip(results, programs, strict=True):
        if isinstance(result, BaseException):
            errors.append(f"{type(result).__name__}: {result}")
            continue
        partials += result["partials"]
        finals += result["finals"]
        errors += result["errors"]
        # The last utterance may be cut by the end of the stream: compare what was played.
        hypothesis = " ".join(result["texts"]).split()
        reference = " ".join(references).split()[: max(len(hypothesis), 1)]
        if reference:
            wers.append(jiwer.wer(" ".join(reference), " ".join(hypothesis) or "<empty>"))
    return {
        "streams": n,
        "seconds": args.seconds,
        "partials": len(partials),
        "partial_latency_ms": {p: percentile_ms(partials, q)
                               for p, q in (("p50", 50), ("p95", 95), ("max", 100))},
        "finals": len(finals),
        "final_latency_ms": {"p50": percentile_ms(finals, 50), "p95": percentile_ms(finals, 95)},
        "errors": errors[:10],
        "error_count": len(errors),
        "wer_percent": round(100.0 * float(np.mean(wers)), 1) if wers else None,
        "server_rss_mib": {"start": round(memory_start, 1), "end": round(memory_end, 1)},
    }  # fmt: skip


def wav_bytes(audio: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    soundfile.write(buffer, audio, SAMPLE_RATE, format="WAV", subtype="PCM_16")
    return buffer.getvalue()


async def post_all(url: str, bodies: list[bytes], concurrency: int) -> float:
    """Seconds to post every body, `concurrency` at a time."""
    queue = list(bodies)
    async with aiohttp.ClientSession() as session:

        async def worker():
            while queue:
                body = queue.pop()
                headers = {"Content-Type": "audio/wav"}
                async with session.post(
                    f"{url}/v1/transcribe", data=body, headers=headers
                ) as reply:
                    if reply.status != 200:
                        raise RuntimeError(f"HTTP {reply.status}: {await reply.text()}")
                    await reply.json()

        begin = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return time.perf_counter() - begin


def http_throughput(url: str, utterances, args) -> dict:
    clips = [audio for audio, _ in utterances[: args.http_requests]]
    bodies, audio_seconds = [wav_bytes(c) for c in clips], sum(c.size for c in clips) / SAMPLE_RATE
    asyncio.run(post_all(url, bodies[:4], 1))  # warm the batch shapes
    rows = {}
    settings = (("one at a time", 1), (f"{args.concurrency} at a time", args.concurrency))
    for name, concurrency in settings:
        before = batch_counts(url)
        seconds = asyncio.run(post_all(url, bodies, concurrency))
        after = batch_counts(url)
        batches, batched = (a - b for a, b in zip(after, before, strict=True))
        rows[name] = {"requests_per_second": round(len(bodies) / seconds, 2),
                      "audio_seconds_per_second": round(audio_seconds / seconds, 2),
                      "mean_batch": round(batched / max(batches, 1), 2)}  # fmt: skip
    return rows


def batch_counts(url: str) -> tuple[float, float]:
    """The server's (batches, batched requests) so far, from /metrics."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=30) as reply:
        values = dict(
            line.split() for line in reply.read().decode().splitlines()
            if line.startswith(("t2t_lite_batches_total ", "t2t_lite_batched_requests_total "))
        )  # fmt: skip
    return float(values["t2t_lite_batches_total"]), float(values["t2t_lite_batched_requests_total"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--export_dir", required=True)
    parser.add_argument("--librispeech", required=True, help="holds LibriSpeech/<subset>/")
    parser.add_argument("--subset", default="test")
    parser.add_argument("--streams", default="4,8,12", help="stream counts to try, in order")
    parser.add_argument("--seconds", type=float, default=300.0, help="per stream count")
    parser.add_argument("--pause_seconds", type=float, default=1.5)
    parser.add_argument("--utterances", type=int, default=200, help="held-out utterances read")
    parser.add_argument("--http_requests", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--output", default="")
    args = parser.parse_args()
    utterances = load_utterances(args.librispeech, args.subset, args.utterances)
    report = {"cpu": cpu_name(), "cores": os.cpu_count(), "export_dir": args.export_dir,
              "streams": [], "http": {}}  # fmt: skip
    with served(args.export_dir, "--max_streams=64") as (url, pid):
        for n in (int(v) for v in args.streams.split(",") if v):
            row = stream_load(url, pid, utterances, n, args)
            print(json.dumps(row), flush=True)
            report["streams"].append(row)
        if args.http_requests:
            report["http"]["batched"] = http_throughput(url, utterances, args)
            print(json.dumps(report["http"]["batched"]), flush=True)
    if args.http_requests:
        with served(args.export_dir, "--max_batch=1") as (url, _):
            rows = http_throughput(url, utterances, args)
            report["http"]["max_batch=1"] = rows
            print(json.dumps(rows), flush=True)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=2)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    sys.exit(main())
