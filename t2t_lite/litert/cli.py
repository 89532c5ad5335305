"""t2t-lite-tflite-transcribe: transcribes audio files with an on-device export.

    t2t-lite-tflite-transcribe $EXPORT audio.wav [more.flac ...] [--num_threads=1]

`$EXPORT` is what `t2t-lite-exporter --format=tflite` wrote. One line per file
on stdout: its transcript. Runs with LiteRT, NumPy and soundfile only (no
TensorFlow). A recording longer than the model's input is split at pauses
and transcribed whole (`litert.transcriber`). A file it cannot use
(unreadable, another sample rate) is one line on stderr and exit status 1,
before any transcript is printed.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np


def _read(path: str, sample_rate: int) -> np.ndarray:
    import soundfile

    try:
        samples, rate = soundfile.read(path, dtype="float32", always_2d=True)
    except (OSError, RuntimeError) as error:  # soundfile raises LibsndfileError (a RuntimeError)
        raise ValueError(f"{path}: cannot read it as audio ({error}).") from error
    if rate != sample_rate:
        raise ValueError(
            f"{path}: {rate} Hz, but the model takes {sample_rate} Hz; resample it first "
            f"(for example: sox {path} -r {sample_rate} out.wav)."
        )
    return samples.mean(axis=1)  # channels mixed to mono


def main(argv: list[str] | None = None) -> int:
    from t2t_lite.litert.transcriber import LiteRtTranscriber

    parser = argparse.ArgumentParser(prog="t2t-lite-tflite-transcribe", description=__doc__)
    parser.add_argument("export_dir", help="what t2t-lite-exporter --format=tflite wrote")
    parser.add_argument("audio", nargs="+", help="WAV or FLAC files at the model's sample rate")
    parser.add_argument("--num_threads", type=int, default=1)
    args = parser.parse_args(argv)
    try:
        transcriber = LiteRtTranscriber(args.export_dir, num_threads=args.num_threads)
    except (OSError, ValueError, KeyError) as error:
        print(f"t2t-lite-tflite-transcribe: error: {args.export_dir}: {error}", file=sys.stderr)
        return 1
    try:
        waveforms = [_read(path, transcriber.sample_rate) for path in args.audio]
    except ValueError as error:
        print(f"t2t-lite-tflite-transcribe: error: {error}", file=sys.stderr)
        return 1
    for waveform in waveforms:
        print(transcriber.transcribe(waveform)[0], flush=True)
    return 0


def run() -> None:
    sys.exit(main())


if __name__ == "__main__":
    run()
