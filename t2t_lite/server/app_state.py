"""What the server's routes share: the application's keys, its config, and JSON answers.

Every error is `{"error": sentence}`.
"""

from __future__ import annotations

import asyncio
import dataclasses

from aiohttp import web

from t2t_lite.decoding.timing.subtitles import TimedWord
from t2t_lite.server.batcher import DynamicBatcher
from t2t_lite.server.server_metrics import ServerMetrics
from t2t_lite.streaming.endpoint import ENDPOINT_HPARAMS, EndpointRules

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
        max_streams: the most WebSocket streams at once (503 past it).
        endpoint: where a stream's utterances end: decode hparams by name
            (`streaming.endpoint.ENDPOINT_HPARAMS`) that replace the
            export's rules; the rest stay the export's.
    """

    max_seconds: float = 600.0
    max_batch: int = 8
    max_wait_ms: float = 10.0
    max_streams: int = 16
    endpoint: dict = dataclasses.field(default_factory=dict)

    def endpoint_rules(self, exported: EndpointRules) -> EndpointRules:
        """The rules a stream of an export with `exported` rules ends by."""
        return dataclasses.replace(
            exported, **{ENDPOINT_HPARAMS[name]: value for name, value in self.endpoint.items()}
        )

    @property
    def max_body_bytes(self) -> int:
        return int(self.max_seconds * MAX_BYTES_PER_SECOND) + (1 << 20)


def error_response(status: int, message: str, **headers) -> web.Response:
    return web.json_response({"error": message}, status=status, headers=headers or None)


def not_ready(app: web.Application) -> web.Response:
    """503 while the model loads; 500 with the reason if loading failed."""
    if app.get(LOAD_ERROR):
        return error_response(500, f"the model could not be loaded: {app[LOAD_ERROR]}")
    return error_response(
        503, "the model is still loading; try again shortly.", **{"Retry-After": "5"}
    )


def words_json(
    words: tuple[TimedWord, ...] | None, offset: float = 0.0, duration: float | None = None
) -> list | None:
    """Timed words as JSON objects, their times moved by `offset` seconds.

    When `duration` is given, the times are kept within that many seconds of
    audio.
    """
    if words is None:
        return None
    limit = float("inf") if duration is None else duration

    def clock(seconds: float) -> float:
        return round(min(seconds, limit) + offset, 3)

    return [dict(dataclasses.asdict(w), start=clock(w.start), end=clock(w.end)) for w in words]
