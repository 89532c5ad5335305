"""One WebSocket stream: its messages, its audio format, and the driver that recognizes it.

    session = StreamSession(model, EndpointRules())
    ready = session.start({"type": "start", "sample_rate": 48000, "format": "f32le"})
    session.add(pcm_bytes)                   # any number of times
    while session.ready():
        step = session.step()                # blocking: run it in a thread
        ...step.partial...
        if step.endpoint is Endpoint.FINAL:
            utterance = session.take_utterance()   # its audio, for the final
    session.end()                            # the client's end: steps what is left

The client's audio is read as `PcmFormat` says and resampled to the model's
rate as it arrives (`StreamResampler`: the same samples as resampling the
whole stream); the recognition, endpointing included, is the one streaming
loop every backend is driven by (`streaming.driver.StreamDriver`). What is
left here is the protocol: the order of messages and what they may carry.
"""

from __future__ import annotations

import numpy as np

from t2t_lite.data.audio_io import StreamResampler
from t2t_lite.server.audio_request import BadAudio, PcmFormat
from t2t_lite.server.full_context_stream import FullContextStream
from t2t_lite.server.request_hotwords import BadHotwords, Phrases, refuse_unbiased, request_phrases
from t2t_lite.streaming.driver import DriverStep, EndedUtterance, StreamBackend, StreamDriver
from t2t_lite.streaming.endpoint import EndpointRules

# Sample rates a stream may declare: telephone audio to studio audio.
STREAM_RATES = (8000, 192000)


class BadStream(ValueError):
    """A message the protocol does not allow; the text is one sentence for the client."""


class BadStreamAudio(BadStream):
    """Audio, or an audio format, the server cannot read."""


class StreamSession:
    """The protocol of one stream (see the module docstring).

    Args:
        model: the export, with `streams` true (a `StreamBackend`).
        rules: where utterances end.
    """

    def __init__(self, model: StreamBackend, rules: EndpointRules):
        self.model = model
        self.driver = StreamDriver(model, rules)
        self.rate = model.sample_rate
        self._format: PcmFormat | None = None
        self._resampler: StreamResampler | None = None
        # The start message's hotwords: they bias the finals (and a full-context
        # stream's partials; a streaming export's steps are not biased).
        self.phrases: Phrases = ()

    @property
    def started(self) -> bool:
        return self._format is not None

    @property
    def ended(self) -> bool:
        """Whether the client sent its end message."""
        return self.driver.ended

    def start(self, message: dict) -> dict:
        """Reads the start message; returns the `ready` message.

        Raises:
            BadStream: a second start, or a format this server cannot read.
        """
        if self.started:
            raise BadStream('the stream has already started; send audio, or {"type": "end"}.')
        parameters = {
            "rate": message.get("sample_rate"),
            "encoding": message.get("format", "s16le"),
            "channels": message.get("channels", 1),
        }
        try:
            pcm = PcmFormat.parse("audio/pcm", parameters)
        except BadAudio as error:
            raise BadStreamAudio(
                f"the start message's audio format is not usable: {error} "
                'Send e.g. {"type": "start", "sample_rate": 16000, "format": "s16le"}.'
            ) from error
        low, high = STREAM_RATES
        if not low <= pcm.rate <= high or isinstance(message.get("sample_rate"), bool):
            raise BadStreamAudio(f"sample_rate must be an integer from {low} to {high} Hz.")
        try:
            phrases = request_phrases(message.get("hotwords", []), message.get("boost"))
            refuse_unbiased(self.model, phrases)
        except BadHotwords as error:
            raise BadStream(str(error)) from error
        self.phrases = phrases
        if isinstance(self.model, FullContextStream):
            self.model.phrases = phrases
        self._format = pcm
        self._resampler = StreamResampler(pcm.rate, self.rate)
        return {
            "type": "ready",
            "sample_rate": self.rate,
            "chunk_seconds": round(self.model.chunk_seconds, 4),
            "model_version": self.model.version,
            "hotwords": len(phrases),
        }

    def add(self, data: bytes) -> None:
        """Takes a binary message of PCM.

        Raises:
            BadStream: audio before the start message or after the end, or
                bytes that are not whole samples.
        """
        if not self.started or self.ended:
            raise BadStream(
                "audio came before the start message; send "
                '{"type": "start", "sample_rate": ..., "format": ...} first.'
                if not self.started
                else "audio came after the end message."
            )
        try:
            samples = self._format.samples(data)
        except BadAudio as error:
            raise BadStreamAudio(str(error)) from error
        samples = np.nan_to_num(samples.mean(axis=1), nan=0.0, posinf=0.0, neginf=0.0)
        self._queue(self._resampler(samples))

    def _queue(self, samples: np.ndarray) -> None:
        self.driver.feed(np.clip(samples, -1.0, 1.0))

    def end(self) -> None:
        """The client's end of audio: what is left becomes steppable."""
        if not self.started:
            raise BadStream("the stream ended before its start message.")
        if not self.ended:
            self._queue(self._resampler(np.zeros(0, np.float32), final=True))
            self.driver.end()

    def ready(self) -> bool:
        """Whether `step` has audio to run."""
        return self.driver.ready()

    def step(self) -> DriverStep:
        """The driver's next step (`StreamDriver.step`)."""
        return self.driver.step()

    def take_utterance(self, whole: bool = False) -> EndedUtterance:
        """The current utterance's audio, for its final (`StreamDriver.take_utterance`)."""
        return self.driver.take_utterance(whole)
