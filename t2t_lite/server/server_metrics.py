"""What `GET /metrics` reports, in Prometheus' text exposition format (0.0.4).

Counters of requests by route and status, a latency histogram, the audio
seconds transcribed and the seconds spent on them (their ratio is the
real-time factor), the batches run, and for WebSocket streams the streams
open and opened, the seconds streamed and the stream steps' compute (their
real-time factor). Plain Python: the server is the
only writer, on its event loop.
"""

from __future__ import annotations

import bisect
import collections

# Seconds: a short utterance on a loaded CPU to a long recording.
LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
PREFIX = "t2t_lite_"


class ServerMetrics:
    """The server's counters.

    Example:
    >>> metrics = ServerMetrics()
    >>> metrics.request("/v1/transcribe", 200, seconds=0.3)
    >>> metrics.transcribed(audio_seconds=3.0, compute_seconds=0.3)
    >>> 't2t_lite_requests_total{route="/v1/transcribe",status="200"} 1' in metrics.render()
    True
    """

    def __init__(self):
        self.requests = collections.Counter()  # (route, status) -> count
        self.latency_counts = collections.Counter()  # (route, bucket index) -> count
        self.latency_sums = collections.Counter()  # route -> seconds
        self.latency_totals = collections.Counter()  # route -> count
        self.audio_seconds = 0.0
        self.compute_seconds = 0.0
        self.batches = 0
        self.batched_requests = 0
        self.active_streams = 0
        self.streams_opened = 0
        self.stream_audio_seconds = 0.0
        self.stream_compute_seconds = 0.0

    def request(self, route: str, status: int, seconds: float) -> None:
        """One answered request and how long it took."""
        self.requests[(route, status)] += 1
        self.latency_counts[(route, bisect.bisect_left(LATENCY_BUCKETS, seconds))] += 1
        self.latency_sums[route] += seconds
        self.latency_totals[route] += 1

    def transcribed(self, audio_seconds: float, compute_seconds: float) -> None:
        """Audio transcribed, and the wall seconds its batch took."""
        self.audio_seconds += audio_seconds
        self.compute_seconds += compute_seconds

    def streams(self, active: int, opened: bool) -> None:
        """A stream opened (`opened`) or closed; `active` open now."""
        self.active_streams = active
        self.streams_opened += int(opened)

    def streamed(self, audio_seconds: float, compute_seconds: float) -> None:
        """One stream step: the audio it took and its wall seconds."""
        self.stream_audio_seconds += audio_seconds
        self.stream_compute_seconds += compute_seconds

    def batch(self, size: int) -> None:
        self.batches += 1
        self.batched_requests += size

    def render(self) -> str:
        """The exposition text."""
        lines = [
            f"# HELP {PREFIX}requests_total HTTP requests answered, by route and status.",
            f"# TYPE {PREFIX}requests_total counter",
        ]
        for (route, status), count in sorted(self.requests.items()):
            lines.append(f'{PREFIX}requests_total{{route="{route}",status="{status}"}} {count}')
        name = f"{PREFIX}request_seconds"
        lines += [
            f"# HELP {name} Time from a request's arrival to its answer.",
            f"# TYPE {name} histogram",
        ]
        for route in sorted(self.latency_totals):
            cumulative = 0
            for index, bound in enumerate(LATENCY_BUCKETS):
                cumulative += self.latency_counts[(route, index)]
                lines.append(f'{name}_bucket{{route="{route}",le="{bound}"}} {cumulative}')
            total = self.latency_totals[route]
            lines.append(f'{name}_bucket{{route="{route}",le="+Inf"}} {total}')
            lines.append(f'{name}_sum{{route="{route}"}} {self.latency_sums[route]:.6f}')
            lines.append(f'{name}_count{{route="{route}"}} {total}')
        factor = self.compute_seconds / self.audio_seconds if self.audio_seconds else 0.0
        stream_audio, stream_compute = self.stream_audio_seconds, self.stream_compute_seconds
        stream_factor = stream_compute / stream_audio if stream_audio else 0.0
        for metric, kind, value, help_text in (
            ("audio_seconds_total", "counter", self.audio_seconds, "Seconds of audio transcribed."),
            ("compute_seconds_total", "counter", self.compute_seconds,
             "Wall seconds the model spent on them."),
            ("real_time_factor", "gauge", factor,
             "compute_seconds_total / audio_seconds_total (below 1: faster than real time)."),
            ("batches_total", "counter", self.batches, "Model batches run."),
            ("batched_requests_total", "counter", self.batched_requests,
             "Requests in those batches (over batches_total: the mean batch size)."),
            ("active_streams", "gauge", self.active_streams, "WebSocket streams open now."),
            ("streams_total", "counter", self.streams_opened, "WebSocket streams opened."),
            ("stream_audio_seconds_total", "counter", stream_audio, "Seconds of audio streamed."),
            ("stream_compute_seconds_total", "counter", stream_compute,
             "Wall seconds of the stream steps (partials; finals count as transcribed)."),
            ("stream_real_time_factor", "gauge", stream_factor,
             "stream_compute_seconds_total / stream_audio_seconds_total."),
        ):  # fmt: skip
            lines += [
                f"# HELP {PREFIX}{metric} {help_text}",
                f"# TYPE {PREFIX}{metric} {kind}",
                f"{PREFIX}{metric} {value:g}" if isinstance(value, int) else
                f"{PREFIX}{metric} {value:.6f}",
            ]  # fmt: skip
        return "\n".join(lines) + "\n"
