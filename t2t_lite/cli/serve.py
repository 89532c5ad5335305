"""t2t-lite-serve: serves a speech SavedModel over HTTP and WebSocket.

    t2t-lite-serve --export_dir=$EXPORT [--host=127.0.0.1 --port=8000]
    curl --data-binary @audio.wav -H "Content-Type: audio/wav" \\
        http://127.0.0.1:8000/v1/transcribe
    # or open http://127.0.0.1:8000/ and press the microphone button

`$EXPORT` is what `t2t-lite-exporter` wrote: a SavedModel's versions (the
newest is served) or, with `--format=tflite`, an on-device export (LiteRT
runs it; files only, no word times, no streaming).
Routes, limits and batching: `t2t_lite/server/app.py` and docs/serving.md.
aiohttp serves it: a maintained asyncio server with HTTP/1.1, multipart and
WebSockets built in, so nothing of the protocol is written by hand here.
"""

from __future__ import annotations

from absl import flags
from aiohttp import web

from t2t_lite.cli import common
from t2t_lite.export_manifest import ManifestError, SavedModelManifest, TfliteManifest
from t2t_lite.server.app import ServerConfig, make_app
from t2t_lite.server.speech_model import ExportedSpeechModel, ExportNotFoundError, newest_version
from t2t_lite.server.tflite_model import TfliteSpeechModel, is_tflite_export, litert_missing
from t2t_lite.streaming.endpoint import ENDPOINT_HPARAMS

if "export_dir" not in flags.FLAGS:  # the exporter defines it too (one process, both CLIs)
    flags.DEFINE_string(
        "export_dir", None, "What t2t-lite-exporter wrote (a SavedModel or a .tflite export)."
    )
flags.DEFINE_string("host", "127.0.0.1", "Interface to listen on (0.0.0.0: every one).")
flags.DEFINE_integer("port", 8000, "Port to listen on.")
flags.DEFINE_float("max_seconds", ServerConfig.max_seconds, "Longest recording accepted.")
flags.DEFINE_integer("max_batch", ServerConfig.max_batch, "Most requests in one model batch.")
flags.DEFINE_float(
    "max_wait_ms", ServerConfig.max_wait_ms, "How long a request waits for others to batch with."
)
flags.DEFINE_integer("max_streams", ServerConfig.max_streams, "Most WebSocket streams at once.")
# Default: the export's decode hparams of the same names.
flags.DEFINE_float(
    "endpoint_silence_seconds", None,
    "A stream's utterance ends after this much silence (CTC blank) following speech.",
)  # fmt: skip
flags.DEFINE_float(
    "endpoint_max_utterance_seconds", None, "A stream's utterance ends when it is this long."
)  # fmt: skip
flags.DEFINE_float(
    "endpoint_no_speech_seconds", None, "A stream's audio with no speech for this long is dropped."
)  # fmt: skip

FLAGS = flags.FLAGS


def main(argv: list[str]) -> int:
    if common.setup(argv):
        return 0
    export_dir = common.require_flag("export_dir")
    endpoint = {name: getattr(FLAGS, name) for name in ENDPOINT_HPARAMS
                if getattr(FLAGS, name) is not None}  # fmt: skip
    for name in ("max_seconds", "max_batch", "port", "max_streams", *endpoint):
        if getattr(FLAGS, name) <= 0:
            raise common.CliError(f"--{name} must be positive, got {getattr(FLAGS, name)}.")
    if FLAGS.max_wait_ms < 0:
        raise common.CliError(f"--max_wait_ms must be >= 0, got {FLAGS.max_wait_ms}.")
    if is_tflite_export(export_dir):  # t2t-lite-exporter --format=tflite
        if litert_missing():
            raise common.CliError(litert_missing())
        path, model_class = export_dir, TfliteSpeechModel
    else:
        try:
            path = newest_version(export_dir)  # a wrong path fails now, not after start-up
        except ExportNotFoundError as error:
            raise common.CliError(str(error)) from error
        model_class = ExportedSpeechModel
    try:  # a manifest this version cannot read fails now, not after start-up
        manifest_class = TfliteManifest if model_class is TfliteSpeechModel else SavedModelManifest
        manifest_class.read(path)
    except ManifestError as error:
        raise common.CliError(str(error)) from error
    config = ServerConfig(
        FLAGS.max_seconds, FLAGS.max_batch, FLAGS.max_wait_ms, FLAGS.max_streams, endpoint
    )

    def load_model() -> ExportedSpeechModel | TfliteSpeechModel:
        model = model_class(path)
        model.warm_up()  # before /healthz says 200
        return model

    app = make_app(load_model, config)
    print(f"t2t-lite-serve: serving {path} on http://{FLAGS.host}:{FLAGS.port}/", flush=True)
    try:
        web.run_app(app, host=FLAGS.host, port=FLAGS.port, print=None)
    except OSError as error:  # the port is taken, or the host is not this machine's
        raise common.CliError(f"cannot listen on {FLAGS.host}:{FLAGS.port} ({error}).") from error
    return 0


def run() -> None:
    common.run(main)


if __name__ == "__main__":
    run()
