"""The aiohttp application of t2t-lite-serve (docs/serving.md).

    app = make_app(lambda: ExportedSpeechModel("/exports/asr"), ServerConfig())
    aiohttp.web.run_app(app, host="127.0.0.1", port=8000)

Routes: `POST /v1/transcribe` (audio in, JSON out), `GET /v1/stream` (a
WebSocket: PCM in, partials and finals out; `stream_route.py`), `GET /` (a
page with a microphone; `page/`), `GET /healthz` (200 once the model is
loaded, 503 before), `GET /metrics` (Prometheus). The model
loads in a thread after the server starts listening, so an orchestrator's
health check sees it come up. Every error is JSON `{"error": sentence}`:
400 for audio that cannot be read, 413 for a body or recording over the
limit, 503 (with Retry-After) while loading, 500 if the model fails; a
client that leaves mid-request is counted under 499 (nginx's "client closed").
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from absl import logging
from aiohttp import web

from t2t_lite.server.app_state import (
    BATCHER,
    CLIENT_CLOSED,
    CONFIG,
    LOAD_ERROR,
    LOADING,
    METRICS,
    MODEL,
    ServerConfig,
    error_response,
    not_ready,
    words_json,
)
from t2t_lite.server.audio_request import BadAudio, parse_content_type, request_audio
from t2t_lite.server.batcher import DynamicBatcher
from t2t_lite.server.page import add_page_routes
from t2t_lite.server.request_hotwords import BadHotwords, refuse_unbiased, request_phrases
from t2t_lite.server.server_metrics import ServerMetrics
from t2t_lite.server.stream_route import stream


@web.middleware
async def _count_and_explain(request: web.Request, handler):
    """Counts every answer; aiohttp's own errors (404, 405, 413) answered in JSON."""
    start = time.perf_counter()
    try:
        response = await handler(request)
    except web.HTTPRequestEntityTooLarge:
        limit = request.app[CONFIG].max_seconds
        response = error_response(
            413, f"the request is larger than this server takes ({limit:g} s)."
        )
    except web.HTTPException as error:
        response = error_response(error.status, f"{error.reason}: {request.method} {request.path}")
    except ConnectionResetError:  # the client left mid-request: nobody reads an answer
        response = error_response(CLIENT_CLOSED, "the client closed the connection.")
    request.app[METRICS].request(request.path, response.status, time.perf_counter() - start)
    return response


async def _body_audio_and_hotwords(request: web.Request, sample_rate: int):
    """The request's audio (the body, or the multipart field `file`) and its hotwords.

    The hotwords are the query's `hotwords` values, then a multipart field
    `hotwords`'s lines; their boost the query's or the multipart field's
    `boost`.
    """
    hotwords = request.query.getall("hotwords", [])
    boost = request.query.get("boost")
    media_type, parameters = parse_content_type(request.headers.get("Content-Type"))
    if media_type == "multipart/form-data":
        body = None
        reader = await request.multipart()
        async for part in reader:
            if part.name == "file" and body is None:
                body = bytes(await part.read())
                media_type, parameters = parse_content_type(
                    part.headers.get("Content-Type") or "application/octet-stream"
                )
            elif part.name == "hotwords":
                hotwords.append(await part.text())
            elif part.name == "boost":
                boost = await part.text()
        if body is None:
            raise BadAudio("the multipart request has no field 'file' holding the audio.")
    else:
        body = await request.read()
    waveform = await asyncio.to_thread(request_audio, body, media_type, parameters, sample_rate)
    return waveform, request_phrases(hotwords, boost)


async def transcribe(request: web.Request) -> web.Response:
    """`POST /v1/transcribe`: the recording's text, score, words and duration.

    Hotwords (`request_hotwords.py`) bias its search.
    """
    app = request.app
    model = app.get(MODEL)
    if model is None:
        return not_ready(app)
    try:
        waveform, phrases = await _body_audio_and_hotwords(request, model.sample_rate)
        refuse_unbiased(model, phrases)
    except (BadAudio, BadHotwords) as error:
        return error_response(400, str(error))
    duration = waveform.size / model.sample_rate
    limit = app[CONFIG].max_seconds
    if duration > limit:
        return error_response(
            413, f"the recording is {duration:.1f} s; this server takes at most {limit:g} s."
        )
    start = time.perf_counter()
    try:
        transcript = await app[BATCHER].submit(waveform, waveform.size, key=phrases)
    except Exception as error:  # noqa: BLE001 - the model failed: the client gets a sentence
        return error_response(500, f"the model failed on this request ({type(error).__name__}).")
    app[METRICS].transcribed(duration, time.perf_counter() - start)
    return web.json_response(
        {
            "text": transcript.text,
            "score": transcript.score,
            "words": words_json(transcript.words),
            "duration": round(duration, 4),
            "model_version": model.version,
        }
    )


async def healthz(request: web.Request) -> web.Response:
    model = request.app.get(MODEL)
    if model is None:
        return not_ready(request.app)
    return web.json_response({"status": "ok", "model_version": model.version})


async def metrics(request: web.Request) -> web.Response:
    return web.Response(
        text=request.app[METRICS].render(), content_type="text/plain", charset="utf-8"
    )


def make_app(load_model: Callable[[], object], config: ServerConfig) -> web.Application:
    """The application; `load_model()` runs in a thread once the server listens.

    Args:
        load_model: returns an `ExportedSpeechModel` (or anything with
            `sample_rate`, `version` and `transcribe(waveforms)`; with
            `biases`, `transcribe(waveforms, phrases)` too).
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

        def run_batch(waveforms, phrases):
            app[METRICS].batch(len(waveforms))
            if phrases:  # the batch's hotwords (the batcher keys batches by them)
                return model.transcribe(waveforms, phrases)
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
    app.router.add_get("/v1/stream", stream)
    add_page_routes(app)
    return app
