"""`GET /v1/stream`: live audio over a WebSocket, partials and finals back.

The protocol (docs/serving.md, "Streaming"):

    client: {"type": "start", "sample_rate": 16000, "format": "s16le"}
    server: {"type": "ready", "sample_rate": 16000, "chunk_seconds": 0.64, ...}
    client: <binary PCM> ...
    server: {"type": "partial", "utterance": 0, "text": "the quick", "end": 1.28}
            (per chunk; `end`: where the audio it heard ends)
    server: {"type": "final", "utterance": 0, "text": ..., "score": ...,
             "start": 0.0, "end": 2.9, "words": [{"word", "start", "end", "confidence"}]}
    client: {"type": "end"}
    server: the last final, then closes the connection (1000)

A stream's utterances end where the endpoint rules say (`EndpointRules`):
the final is the export's `transcribe_timed` over the utterance's audio, run
through the server's batcher with the HTTP requests (full context: better
than the streamed encoder's output, and timed words), its times in the
stream's clock. Finals with no words are not sent. A message the protocol
does not allow gets `{"type": "error", "error": sentence}` and the
connection is closed (1003 for audio that cannot be read, 1008 for
anything else out of protocol, 1011 if the model fails). One stream's
state lives in its handler and is freed when the client leaves. An export
that does not stream but gives timed words (a CTC head) is streamed in
full context (`full_context_stream.py`): each partial is the utterance so
far transcribed whole.
"""

from __future__ import annotations

import asyncio
import json
import time

import aiohttp
from absl import logging
from aiohttp import web

from t2t_lite.server.app_state import (
    BATCHER,
    CONFIG,
    METRICS,
    MODEL,
    error_response,
    not_ready,
    words_json,
)
from t2t_lite.server.full_context_stream import FullContextStream, can_stream_in_full_context
from t2t_lite.server.stream_session import BadStream, BadStreamAudio, StreamSession
from t2t_lite.streaming.endpoint import Endpoint

# WebSocket close codes (RFC 6455, 7.4.1).
UNSUPPORTED_DATA, POLICY_VIOLATION, INTERNAL_ERROR = 1003, 1008, 1011
ACTIVE_STREAMS = web.AppKey("active_streams", int)


def _control(session: StreamSession, text: str) -> dict | None:
    """A text message: `start` (returns the ready message) or `end`."""
    try:
        message = json.loads(text)
    except ValueError:
        message = None
    if not isinstance(message, dict) or message.get("type") not in ("start", "end"):
        raise BadStream(
            'a text message must be JSON with "type" "start" or "end"; audio goes in '
            "binary messages."
        )
    if message["type"] == "start":
        return session.start(message)
    session.end()
    return None


async def _final(request: web.Request, session: StreamSession, ws, whole: bool = False) -> None:
    """Transcribes the current utterance (batched) and sends its final.

    With `whole`, all its audio; else up to its endpoint.
    """
    utterance = session.take_utterance(whole)
    if not utterance.audio.size:
        return
    app = request.app
    begin = time.perf_counter()
    transcript = await app[BATCHER].submit(
        utterance.audio, utterance.audio.size, key=session.phrases
    )
    duration = utterance.audio.size / session.rate
    app[METRICS].transcribed(duration, time.perf_counter() - begin)
    if transcript.text.strip():
        await ws.send_json({
            "type": "final",
            "utterance": utterance.index,
            "text": transcript.text,
            "score": transcript.score,
            "start": round(utterance.start, 3),
            "end": round(utterance.start + duration, 3),
            "words": words_json(transcript.words, utterance.start, duration),
        })  # fmt: skip


async def _run_steps(request: web.Request, session: StreamSession, ws) -> None:
    """Every chunk waiting: a partial each, a final at each endpoint."""
    metrics = request.app[METRICS]
    while session.ready():
        begin = time.perf_counter()
        step = await asyncio.to_thread(session.step)
        metrics.streamed(step.audio_seconds, time.perf_counter() - begin)
        await ws.send_json({
            "type": "partial", "utterance": step.utterance, "text": step.partial,
            "end": round(step.end, 3),
        })  # fmt: skip
        if step.endpoint is Endpoint.FINAL:
            await _final(request, session, ws)


async def _converse(request: web.Request, session: StreamSession, ws) -> None:
    async for message in ws:
        if message.type == aiohttp.WSMsgType.TEXT:
            reply = _control(session, message.data)
            if reply is not None:
                await ws.send_json(reply)
        elif message.type == aiohttp.WSMsgType.BINARY:
            session.add(message.data)
        else:  # an error frame (e.g. a message over the size limit)
            raise BadStream(f"the stream failed: {ws.exception()}.")
        await _run_steps(request, session, ws)
        if session.ended:  # the client's end: the last utterance's final, then goodbye
            await _final(request, session, ws, whole=True)
            await ws.close()


async def stream(request: web.Request) -> web.StreamResponse:
    """The WebSocket handler (see the module docstring)."""
    app = request.app
    model = app.get(MODEL)
    if model is None:
        return not_ready(app)
    if not model.streams and not can_stream_in_full_context(model):
        return error_response(
            400, f"this server's model ({model.version}) does not stream: streaming needs a "
            "SavedModel export of a model with a CTC head; POST files to /v1/transcribe.",
        )  # fmt: skip
    limit = app[CONFIG].max_streams
    if app.get(ACTIVE_STREAMS, 0) >= limit:
        return error_response(
            503, f"this server is serving its {limit} streams; try again shortly.",
            **{"Retry-After": "2"},
        )  # fmt: skip
    ws = web.WebSocketResponse(heartbeat=30.0)
    await ws.prepare(request)
    app[ACTIVE_STREAMS] = app.get(ACTIVE_STREAMS, 0) + 1
    app[METRICS].streams(app[ACTIVE_STREAMS], opened=True)
    try:
        stepped = model if model.streams else FullContextStream(model)
        session = StreamSession(stepped, app[CONFIG].endpoint_rules(model.endpoint_rules))
        await _converse(request, session, ws)
    except BadStreamAudio as error:
        await _close_with(ws, str(error), UNSUPPORTED_DATA)
    except BadStream as error:
        await _close_with(ws, str(error), POLICY_VIOLATION)
    except ConnectionResetError:  # the client left mid-answer: nobody to tell
        logging.info("t2t-lite-serve: a stream's client left without closing it.")
    except Exception as error:  # noqa: BLE001 - the model failed: the client gets a sentence
        await _close_with(ws, f"the model failed on this stream ({type(error).__name__}).",
                          INTERNAL_ERROR)  # fmt: skip
    finally:
        app[ACTIVE_STREAMS] -= 1
        app[METRICS].streams(app[ACTIVE_STREAMS], opened=False)
    return ws


async def _close_with(ws: web.WebSocketResponse, message: str, code: int) -> None:
    """Tells the client why, then closes (a close frame's reason holds 123 bytes)."""
    if ws.closed:
        return
    try:
        await ws.send_json({"type": "error", "error": message})
    except ConnectionResetError:
        logging.info("t2t-lite-serve: a stream's client left before its error: %s", message)
    await ws.close(code=code, message=message.encode("utf-8")[:120])
