"""A long stream through an export's streaming signatures, as the server runs it.

    python scripts/long_stream.py --export_dir=t2t_stream/export \
        --data_dir=t2t_stream/data [--minutes=30] [--pause_seconds=1.5]
    python scripts/long_stream.py --output_dir=t2t_stream/train \
        --data_dir=t2t_stream/data --decode_hparams=chunk_frames=16,left_chunks=4

Joins a split's utterances (default test: the held-out voice), cycling
through them in a seeded order, with `--pause_seconds` of quiet noise
between them, into one stream of `--minutes`, and feeds it chunk by chunk
to the streaming loop the server runs (`streaming.driver.StreamDriver` over
the export's `stream_start`/`stream_step`, in process: no network), whose
endpoint rules (the export's decode hparams) cut it into utterances; each
utterance's final is the server's (`transcribe_timed` over its audio).
With `--output_dir` (a trained run) instead, the same loop drives the
Python recognizer (`streaming.recognizer.StreamingRecognizer`: its
chunk, left context, endpoint rules and final search from
`--decode_hparams`); with `--tflite_dir` (`t2t-lite-exporter --format=tflite`
of a streaming model), the on-device one (`litert.stream`, one thread; its
finals by `model.tflite`). Prints one JSON object:

- `step_ms`: each `stream_step`'s compute, p50 / p90 over the stream's first
  and last `--window_minutes` of audio, and their ratio (a state that grows
  with the stream shows as a ratio above 1);
- `rss_mb`: the process's resident memory after each minute of audio
  (first, last and peak; flat means the stream holds nothing it does not
  free);
- `wer`: the endpointed finals, joined, against the references, joined
  (utterances may be cut differently from the references: the stream is
  scored as one text), beside the same utterances decoded one by one by
  the same signature (`one_by_one`) and, streamed one by one through
  `stream_start`/`stream_step`/`stream_final` at the same chunk size
  (`one_by_one_streamed`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from t2t_lite import registry
from t2t_lite.decoding.audio.transcriber import WaveformTranscriber
from t2t_lite.decoding.checkpoints.trained_model import TrainedRun
from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.decoding.evaluation import scoring
from t2t_lite.decoding.input_batches import record_waveform_batches
from t2t_lite.decoding.search.model_search import decode_cap
from t2t_lite.litert.stream import LiteRtStreamingRecognizer
from t2t_lite.server.speech_model import ExportedSpeechModel, newest_version
from t2t_lite.streaming.driver import chunk_samples, stream_recording
from t2t_lite.streaming.recognizer import StreamingRecognizer

# The percentiles are streaming_latency's.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from streaming_latency import percentiles  # noqa: E402

# Peak amplitude of the pauses' noise: a quiet room, about -65 dBFS RMS.
PAUSE_NOISE = 0.001


def split_utterances(problem, data_dir: str, split: str) -> list[tuple[np.ndarray, str]]:
    """`(waveform, reference)` of every utterance of `split`."""
    encoder = problem.feature_encoders(data_dir)["targets"]
    utterances = []
    for batch in record_waveform_batches(problem, data_dir, split, 16):
        samples, lengths, targets = batch[:3]
        for row, length in enumerate(lengths):
            utterances.append((samples[row, :length], encoder.decode(targets[row])))
    return utterances


def long_stream(utterances, seconds: float, pause: float, rate: int, seed: int):
    """`(stream, order)`: utterances in a seeded cycling order (their
    indices), each followed by `pause` seconds of quiet noise, until
    `seconds` are reached."""
    rng = np.random.default_rng(seed)
    pieces, order, total = [], [], 0
    while total < seconds * rate:
        for index in rng.permutation(len(utterances)):
            waveform = utterances[index][0]
            noise = rng.uniform(-PAUSE_NOISE, PAUSE_NOISE, int(pause * rate)).astype(np.float32)
            pieces += [waveform, noise]
            order.append(int(index))
            total += waveform.size + noise.size
            if total >= seconds * rate:
                break
    return np.concatenate(pieces), order


def resident_mb() -> float:
    """The process's resident memory now (Linux `/proc`)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    raise RuntimeError("no VmRSS in /proc/self/status")


def run_stream(model, stream: np.ndarray):
    """`(finals, steps, rss)`: the endpointed finals' texts, each step's
    `(audio end in seconds, compute seconds)`, and `(minute, MB)` after each
    minute of audio."""
    steps, rss = [], []

    def timed(step, seconds):
        steps.append((step.end, seconds))
        minute = int(step.end // 60)
        if minute > len(rss):
            rss.append((minute, resident_mb()))

    finals = stream_recording(model, stream, timed)
    return finals, steps, rss


def recognizer_stream(problem, output_dir: str, data_dir: str, decode_hparams: str):
    """The run's Python recognizer as `run_stream` drives an export."""
    run = TrainedRun.of(output_dir, problem, data_dir=data_dir)
    model, _ = run.restored_model()
    config = DecodeConfig.parse(decode_hparams).for_model(model)
    encoder = problem.feature_encoders(data_dir)["targets"]
    chunk = config.chunk_frames
    transcriber = WaveformTranscriber(
        model, run.run_config, config, decode_cap(run.run_config, config), encoder
    )
    return StreamingRecognizer(model, run.run_config, config, encoder, chunk, transcriber)


def streamed_one_by_one(model, waveform: np.ndarray) -> str:
    """`waveform` streamed alone at `model`'s chunk (an export's three
    signatures, or the recognizer's `accept_waveform` and `finalize`)."""
    chunk = chunk_samples(model)
    state = model.start_stream()
    for start in range(0, waveform.size, chunk):
        state = model.stream_step(state, waveform[start : start + chunk]).state
    return model.finish_stream(state).text


def window_ms(steps, first: float, last: float) -> dict:
    """p50 / p90 step compute (ms) of the steps whose audio ends in `[first, last)` s."""
    return percentiles([seconds for end, seconds in steps if first <= end < last])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    given = parser.add_mutually_exclusive_group(required=True)
    given.add_argument("--export_dir", help="a streaming export (the server's signatures)")
    given.add_argument("--output_dir", help="a trained run (the Python recognizer)")
    given.add_argument(
        "--tflite_dir", help="an on-device export of a streaming model (LiteRT, one thread)"
    )
    parser.add_argument(
        "--decode_hparams",
        default="beam_size=4,ctc_weight=0.3,chunk_frames=16",
        help="with --output_dir: the recognizer's chunk, left context, rules and search",
    )
    parser.add_argument("--data_dir", required=True)
    parser.add_argument("--problem", default="spoken_synth")
    parser.add_argument("--split", default="test")
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--pause_seconds", type=float, default=1.5)
    parser.add_argument("--window_minutes", type=float, default=5.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    problem = registry.problem(args.problem)
    if args.export_dir:
        model = ExportedSpeechModel(newest_version(args.export_dir))
        if not model.streams:
            raise SystemExit(f"{args.export_dir} is not a streaming export (use_dynamic_chunk).")
        model.warm_up()
        source = model.path
    elif args.tflite_dir:
        model = LiteRtStreamingRecognizer(args.tflite_dir, num_threads=1)
        source = f"{args.tflite_dir} (LiteRT, one thread)"
    else:
        model = recognizer_stream(problem, args.output_dir, args.data_dir, args.decode_hparams)
        source = f"{args.output_dir} (Python recognizer, {args.decode_hparams})"
    utterances = split_utterances(problem, args.data_dir, args.split)
    seconds = args.minutes * 60.0
    stream, order = long_stream(
        utterances, seconds, args.pause_seconds, model.sample_rate, args.seed
    )
    references = [utterances[i][1] for i in order]
    begin = time.perf_counter()
    finals, steps, rss = run_stream(model, stream)
    stream_seconds = time.perf_counter() - begin
    window = args.window_minutes * 60.0
    first, last = window_ms(steps, 0.0, window), window_ms(steps, seconds - window, seconds + 60)
    # Each utterance decoded once, alone, both ways.
    alone = {i: model.transcribe([utterances[i][0]])[0].text for i in set(order)}
    streamed_alone = {i: streamed_one_by_one(model, utterances[i][0]) for i in set(order)}
    one_by_one = [alone[i] for i in order]
    streamed = [streamed_alone[i] for i in order]
    joined = [" ".join(references)]
    result = {
        "model": source,
        "stream_minutes": round(stream.size / model.sample_rate / 60.0, 2),
        "utterances": len(references),
        "endpointed_finals": len(finals),
        "endpoint_rules": vars(model.endpoint_rules),
        "compute_seconds": round(stream_seconds, 1),
        "step_ms": {
            "first": first,
            "last": last,
            "last_over_first_p50": round(last["p50"] / first["p50"], 3) if first else None,
        },
        "rss_mb": {
            "first": round(rss[0][1], 1) if rss else None,
            "last": round(rss[-1][1], 1) if rss else None,
            "peak": round(max(mb for _, mb in rss), 1) if rss else None,
            "by_minute": [round(mb, 1) for _, mb in rss],
        },
        "wer": {
            "endpointed": round(100 * scoring.score(["wer"], [" ".join(finals)], joined)["wer"], 2),
            "one_by_one": round(100 * scoring.score(["wer"], one_by_one, references)["wer"], 2),
            "one_by_one_streamed": round(
                100 * scoring.score(["wer"], streamed, references)["wer"], 2
            ),
        },
    }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
