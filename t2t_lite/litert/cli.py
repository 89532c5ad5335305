"""t2t-lite-tflite-transcribe: transcribes audio files with an on-device export.

    t2t-lite-tflite-transcribe $EXPORT audio.wav [more.flac ...] [--num_threads=1] [--stream]

`$EXPORT` is what `t2t-lite-exporter --format=tflite` wrote. One line per file
on stdout: its transcript. Runs with LiteRT, NumPy, SciPy and soundfile only
(no TensorFlow). Files are read as the decoder reads them
(`data.audio_io.read_audio`: any sample rate resampled to the model's,
channels mixed to mono). A recording longer than the model's input is split
at pauses and transcribed whole (`litert.litert_transcriber`). A file it cannot read
is one line on stderr and an empty line on stdout (so line i still answers
file i); the other files are transcribed, and the exit status is 1.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np


def _read(path: str, sample_rate: int) -> np.ndarray:
    from t2t_lite.data.audio_io import read_audio  # NumPy, SciPy and soundfile only

    # Not strict: a file with no samples transcribes to "", as the decoder's does.
    return read_audio(path, sample_rate=sample_rate, strict=False)


def _streamed(recognizer, waveform: np.ndarray) -> list[str]:
    """The finals of `waveform` streamed and cut by the export's endpoint rules.

    The server's loop (`streaming.driver`), each final the streamed state's
    (`stream_final.tflite`); each changed partial and each final on stderr as
    they come.
    """
    from t2t_lite.streaming.driver import stream_recording

    last = ""

    def partial(step, _seconds):
        nonlocal last
        if step.partial != last:
            print(f"partial: {step.partial}", file=sys.stderr, flush=True)
        last = step.partial

    def final(decoded, _seconds):
        nonlocal last
        print(f"final: {decoded.text}", file=sys.stderr, flush=True)
        last = ""

    return stream_recording(recognizer, waveform, partial, final, streamed_finals=True)


def main(argv: list[str] | None = None) -> int:
    from t2t_lite.litert.litert_transcriber import LiteRtTranscriber
    from t2t_lite.litert.stream import LiteRtStreamingRecognizer

    parser = argparse.ArgumentParser(prog="t2t-lite-tflite-transcribe", description=__doc__)
    parser.add_argument("export_dir", help="what t2t-lite-exporter --format=tflite wrote")
    parser.add_argument("audio", nargs="+", help="WAV or FLAC files, any sample rate")
    parser.add_argument("--num_threads", type=int, default=1)
    parser.add_argument(
        "--stream", action="store_true", help="stream each file: partials on stderr"
    )
    args = parser.parse_args(argv)
    try:
        if args.stream:
            transcriber = LiteRtStreamingRecognizer(args.export_dir, args.num_threads)
        else:
            transcriber = LiteRtTranscriber(args.export_dir, num_threads=args.num_threads)
    except (OSError, ValueError, KeyError) as error:
        print(f"t2t-lite-tflite-transcribe: error: {args.export_dir}: {error}", file=sys.stderr)
        return 1
    failed = 0
    for path in args.audio:
        try:
            waveform = _read(path, transcriber.sample_rate)
        except ValueError as error:  # AudioError: one sentence naming the file
            print(f"t2t-lite-tflite-transcribe: error: {error}", file=sys.stderr, flush=True)
            print(flush=True)
            failed += 1
            continue
        if args.stream:
            print(" ".join(text for text in _streamed(transcriber, waveform) if text), flush=True)
        else:
            print(transcriber.transcribe(waveform).text, flush=True)
    if failed:
        print(
            f"t2t-lite-tflite-transcribe: {failed} of {len(args.audio)} files could not be "
            "read (blank lines above); the others were transcribed.",
            file=sys.stderr,
        )
    return 1 if failed else 0


def run() -> None:
    sys.exit(main())


if __name__ == "__main__":
    run()
