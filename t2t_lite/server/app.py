"""The aiohttp application of t2t-lite-serve (docs/serving.md).

    app = make_app(lambda: ExportedSpeechModel("/exports/asr"), ServerConfig())
    aiohttp.web.run_app(app, host="127.0.0.1", port=8000)

Routes: `POST /v1/transcribe` (audio in, JSON out), `GET /healthz` (200 once
the model is loaded, 503 before), `GET /metrics` (Prometheus). The model
loads in a thread after the server starts listening, so an orchestrator's
health check sees it come up. Every error is JSON `{"error": sentence}`:
400 for audio that cannot be read, 413 for a body or recording over the
limit, 503 (with Retry-After) while loading, 500 if the model fails; a
client that leaves mid-request is counted under 499 (nginx's "client closed").
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable

from absl import logging
from aiohttp import web

from t2t_lite.server.audio_request import BadAudio, parse_content_type, request_audio
from t2t_lite.server.batcher import DynamicBatcher
from t2t_lite.server.metrics import ServerMetrics

# The most bytes one second of an upload can take: 48 kHz stereo float32.
MAX_BYTES_PER_SECOND = 48000 * 2 * 4
MODEL = web.AppKey("model", object)
BATCHER = web.AppKey("batcher", DynamicBatcher)
METRICS = web.AppKey("metrics", ServerMetrics)
CONFIG = web.AppKey("config", object)
# nginx's status for a request whose client left before the answer (counted, never sent).
CLIENT_CLOSED = 499
LOAD_ERROR = web.AppKey("load_error", str)
LOADING = web.AppKey("loading", asyncio.Task)


@dataclasses.dataclass(frozen=True)
class ServerConfig:
    """The server's limits and batching (t2t-lite-serve's flags).

    Attributes:
        max_seconds: the longest recording accepted (413 past it).
        max_batch: the most requests in one model batch.
        max_wait_ms: how long a request waits for others to batch with.
    """

    max_seconds: float = 600.0
    max_batch: int = 8
    max_wait_ms: float = 10.0

    @property
    def max_body_bytes(self) -> int:
        return int(self.max_seconds * MAX_BYTES_PER_SECOND) + (1 << 20)


def _error(status: int, message: str, **headers) -> web.Response:
    return web.json_response({"error": message}, status=status, headers=headers or None)


def _not_ready(app: web.Application) -> web.Response:
    """503 while the model loads; 500 with the reason if loading failed."""
    if app.get(LOAD_ERROR):
        return _error(500, f"the model could not be loaded: {app[LOAD_ERROR]}")
    return _error(503, "the model is still loading; try again shortly.", **{"Retry-After": "5"})


@web.middleware
async def _count_and_explain(request: web.Request, handler):
    """Counts every answer; aiohttp's own errors (404, 405, 413) answered in JSON."""
    start = time.perf_counter()
    try:
        response = await handler(request)
    except web.HTTPRequestEntityTooLarge:
        limit = request.app[CONFIG].max_seconds
        response = _error(413, f"the request is larger than this server takes ({limit:g} s).")
    except web.HTTPException as error:
        response = _error(error.status, f"{error.reason}: {request.method} {request.path}")
    except ConnectionResetError:  # the client left mid-request: nobody reads an answer
        response = _error(CLIENT_CLOSED, "the client closed the connection.")
    request.app[METRICS].request(request.path, response.status, time.perf_counter() - start)
    return response


async def _body_audio(request: web.Request, sample_rate: int):
    """The request's audio: the body, or the multipart field `file`."""
    media_type, parameters = parse_content_type(request.headers.get("Content-Type"))
    if media_type == "multipart/form-data":
        reader = await request.multipart()
        async for part in reader:
            if part.name == "file":
                body = bytes(await part.read())
                media_type, parameters = parse_content_type(
                    part.headers.get("Content-Type") or "application/octet-stream"
                )
                break
        else:
            raise BadAudio("the multipart request has no field 'file' holding the audio.")
    else:
        body = await request.read()
    return await asyncio.to_thread(request_audio, body, media_type, parameters, sample_rate)


async def transcribe(request: web.Request) -> web.Response:
    """`POST /v1/transcribe`: the recording's text, score, words and duration."""
    app = request.app
    model = app.get(MODEL)
    if model is None:
        return _not_ready(app)
    try:
        waveform = await _body_audio(request, model.sample_rate)
    except BadAudio as error:
        return _error(400, str(error))
    duration = waveform.size / model.sample_rate
    limit = app[CONFIG].max_seconds
    if duration > limit:
        return _error(
            413, f"the recording is {duration:.1f} s; this server takes at most {limit:g} s."
        )
    start = time.perf_counter()
    try:
        transcript = await app[BATCHER].submit(waveform, waveform.size)
    except Exception as error:  # noqa: BLE001 - the model failed: the client gets a sentence
        return _error(500, f"the model failed on this request ({type(error).__name__}).")
    app[METRICS].transcribed(duration, time.perf_counter() - start)
    words = None
    if transcript.words is not None:
        words = [dataclasses.asdict(word) for word in transcript.words]
    return web.json_response(
        {
            "text": transcript.text,
            "score": transcript.score,
            "words": words,
            "duration": round(duration, 4),
            "model_version": model.version,
        }
    )


async def healthz(request: web.Request) -> web.Response:
    model = request.app.get(MODEL)
    if model is None:
        return _not_ready(request.app)
    return web.json_response({"status": "ok", "model_version": model.version})


async def metrics(request: web.Request) -> web.Response:
    return web.Response(
        text=request.app[METRICS].render(), content_type="text/plain", charset="utf-8"
    )


def make_app(load_model: Callable[[], object], config: ServerConfig) -> web.Application:
    """The application; `load_model()` runs in a thread once the server listens.

    Args:
        load_model: returns an `ExportedSpeechModel` (or anything with
            `sample_rate`, `version` and `transcribe(waveforms)`).
        config: limits and batching.
    """
    app = web.Application(middlewares=[_count_and_explain], client_max_size=config.max_body_bytes)
    app[CONFIG] = config
    app[METRICS] = ServerMetrics()

    async def load(app: web.Application) -> None:
        try:
            model = await asyncio.to_thread(load_model)
        except Exception as error:  # noqa: BLE001 - reported by /healthz and every request
            app[LOAD_ERROR] = str(error)
            logging.error("t2t-lite-serve: the model could not be loaded: %s", error)
            return

        def run_batch(waveforms):
            app[METRICS].batch(len(waveforms))
            return model.transcribe(waveforms)

        batcher = DynamicBatcher(run_batch, config.max_batch, config.max_wait_ms / 1000.0)
        await batcher.start()
        app[BATCHER] = batcher
        app[MODEL] = model

    async def start_loading(app: web.Application) -> None:
        app[LOADING] = asyncio.get_running_loop().create_task(load(app))

    async def stop(app: web.Application) -> None:
        app[LOADING].cancel()
        await asyncio.gather(app[LOADING], return_exceptions=True)
        if BATCHER in app:
            await app[BATCHER].stop()

    app.on_startup.append(start_loading)
    app.on_cleanup.append(stop)
    app.router.add_post("/v1/transcribe", transcribe)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics)
    return app
