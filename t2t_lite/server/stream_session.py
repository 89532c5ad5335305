"""One WebSocket stream's recognition: its audio format, state and utterances.

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
whole stream). Once a streaming chunk of it is waiting, `step` hands it to
the export's `stream_step`, and the endpoint rules decide from the partial
and the trailing blank whether the utterance goes on, ends (its audio is
taken for the final) or was silence (dropped). Either way the next
utterance starts with a fresh state, so what a stream holds is bounded by
`EndpointRules.max_utterance` however long it runs. Every time is in the
stream's clock: seconds of audio since the start message.
"""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING

import numpy as np

from t2t_lite.data.audio_io import StreamResampler
from t2t_lite.server.audio_request import BadAudio, PcmFormat
from t2t_lite.streaming.endpoint import Endpoint, EndpointRules

if TYPE_CHECKING:  # (a session needs no TensorFlow: it steps any model with these calls)
    from t2t_lite.server.speech_model import ExportedSpeechModel

# Sample rates a stream may declare: telephone audio to studio audio.
STREAM_RATES = (8000, 192000)


class BadStream(ValueError):
    """A message the protocol does not allow; the text is one sentence for the client."""


class BadStreamAudio(BadStream):
    """Audio, or an audio format, the server cannot read."""


@dataclasses.dataclass(frozen=True)
class SessionStep:
    """One `step`: the partial of the current utterance and what the rules decided."""

    utterance: int
    partial: str
    endpoint: Endpoint
    audio_seconds: float  # the audio the step took
    end: float  # where the audio heard so far ends, in the stream's clock


@dataclasses.dataclass(frozen=True)
class Utterance:
    """An ended utterance: its audio at the model's rate and where it starts."""

    index: int
    audio: np.ndarray
    start: float


class StreamSession:
    """The state of one stream (see the module docstring).

    Args:
        model: the export, with `streams` true.
        rules: where utterances end.
    """

    def __init__(self, model: ExportedSpeechModel, rules: EndpointRules):
        self.model, self.rules = model, rules
        self.rate = model.sample_rate
        self.chunk = max(int(round(model.chunk_seconds * self.rate)), 1)
        self._format: PcmFormat | None = None
        self._resampler: StreamResampler | None = None
        self._pending: list[np.ndarray] = []  # model-rate audio not yet stepped
        self._pending_samples = 0
        self._ended = False
        self.utterances = 0  # utterances started before the current one
        self._begin_utterance(start_sample=0)

    def _begin_utterance(self, start_sample: int) -> None:
        self._state = self.model.start_stream()
        self._audio: list[np.ndarray] = []
        self._samples = 0
        self._start_sample = start_sample
        self._spoke = False
        self._speech_end = self._silence_from = 0.0
        self._zero_run = 0  # exact zeros at the end of its audio
        self._leading_zeros = 0  # and before its first sound

    @property
    def started(self) -> bool:
        return self._format is not None

    @property
    def ended(self) -> bool:
        """Whether the client sent its end message."""
        return self._ended

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
        self._format = pcm
        self._resampler = StreamResampler(pcm.rate, self.rate)
        return {
            "type": "ready",
            "sample_rate": self.rate,
            "chunk_seconds": round(self.model.chunk_seconds, 4),
            "model_version": self.model.version,
        }

    def add(self, data: bytes) -> None:
        """Takes a binary message of PCM.

        Raises:
            BadStream: audio before the start message or after the end, or
                bytes that are not whole samples.
        """
        if not self.started or self._ended:
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
        if samples.size:
            self._pending.append(np.clip(samples, -1.0, 1.0))
            self._pending_samples += samples.size

    def end(self) -> None:
        """The client's end of audio: what is left becomes steppable."""
        if not self.started:
            raise BadStream("the stream ended before its start message.")
        if not self._ended:
            self._ended = True
            self._queue(self._resampler(np.zeros(0, np.float32), final=True))

    def ready(self) -> bool:
        """Whether `step` has a chunk to run (or, after `end`, any audio)."""
        return self._pending_samples >= self.chunk or (self._ended and self._pending_samples > 0)

    def step(self) -> SessionStep:
        """Runs the waiting audio through `stream_step` and the endpoint rules."""
        waiting = np.concatenate(self._pending)
        # No step carries an utterance past its longest (a client may send
        # minutes in one message).
        room = int(np.ceil(self.rules.max_utterance * self.rate)) - self._samples
        samples, rest = np.split(waiting, [max(room, self.chunk)])
        self._pending, self._pending_samples = ([rest] if rest.size else []), rest.size
        result = self.model.stream_step(self._state, samples)
        self._state = result.state
        self._audio.append(samples)
        self._samples += samples.size
        self._spoke = self._spoke or bool(result.partial.strip())
        self._track_zeros(samples)
        silence = self._silence(result.trailing_silence, result.state["frames_done"])
        endpoint = self.rules.check(self._spoke, silence, self._samples / self.rate)
        end = (self._start_sample + self._samples) / self.rate
        step = SessionStep(self.utterances, result.partial, endpoint, samples.size / self.rate, end)
        if endpoint is Endpoint.DISCARD:  # keep what the encoder has not read yet
            self._next_utterance(self._cut(self._silence_from))
        return step

    def _track_zeros(self, samples: np.ndarray) -> None:
        """Counts the exact zeros at the utterance's end and before its first sound."""
        self._zero_run = _trailing_zeros(samples, self._zero_run)
        if self._zero_run == self._samples:  # nothing but zeros yet
            self._leading_zeros = self._samples
        elif self._leading_zeros == self._samples - samples.size:  # the first sound
            self._leading_zeros += int(np.flatnonzero(samples)[0])

    def _silence(self, blank_seconds: float, frames_done) -> float:
        """The utterance's trailing silence, in seconds; sets `_speech_end`
        (where its last label ends) and `_silence_from` (where a silent
        utterance may be cut without losing speech).

        The encoder's frames end behind the audio (its look-ahead and
        chunk); silence is what its CTC head calls blank since the last
        label. Digital silence (exact zeros) at the end is known to be
        silence as soon as it arrives, before the encoder has read it:
        there the zeros are the silence, and the speech ends where they
        begin.
        """
        # The featurization cuts leading zeros: the frames start after them.
        encoded_end = self._leading_zeros / self.rate + int(frames_done) * self.model.frame_seconds
        zeros = self._zero_run / self.rate
        if zeros > blank_seconds:
            self._speech_end = self._samples / self.rate - zeros
            self._silence_from = self._samples / self.rate - self._margin
            return zeros
        self._speech_end = encoded_end - blank_seconds
        self._silence_from = encoded_end - self._margin
        return blank_seconds

    @property
    def _margin(self) -> float:
        """Seconds of silence kept either side of a cut: half the endpoint's."""
        return self.rules.silence_after_speech / 2

    def _cut(self, seconds: float) -> int:
        """The sample of this utterance `seconds` in; at least a chunk in, so
        the stream always moves on (whatever the rules' settings)."""
        least = min(self.chunk, self._samples)
        return int(np.clip(round(seconds * self.rate), least, self._samples))

    def take_utterance(self, whole: bool = False) -> Utterance:
        """The current utterance's audio, and a fresh state for the next.

        At an endpoint the utterance ends `_margin` after its last label: the
        audio the encoder had not read when the rule fired (a next utterance
        may have begun in it) goes to the next utterance. `whole`: all of
        it (the client's end).
        """
        audio = np.concatenate(self._audio) if self._audio else np.zeros(0, np.float32)
        cut = self._samples if whole else self._cut(self._speech_end + self._margin)
        utterance = Utterance(self.utterances, audio[:cut], self._start_sample / self.rate)
        self._next_utterance(cut)
        return utterance

    def _next_utterance(self, cut: int) -> None:
        """Starts the next utterance at sample `cut` of this one; the audio
        after it is stepped again, in the new state."""
        carry = np.concatenate(self._audio)[cut:] if self._audio else np.zeros(0, np.float32)
        self.utterances += 1
        self._begin_utterance(self._start_sample + cut)
        if carry.size:
            self._pending.insert(0, carry)
            self._pending_samples += carry.size


def _trailing_zeros(samples: np.ndarray, run: int) -> int:
    """The run of exact zeros ending `samples`, continuing a run of `run` before them."""
    nonzero = np.flatnonzero(samples)
    return run + samples.size if nonzero.size == 0 else samples.size - 1 - int(nonzero[-1])


def stream_recording(model, waveform: np.ndarray, on_step=None) -> list[str]:
    """A recording through a session as a client streams it: chunk by chunk
    at the model's rate, then its end; the texts of its endpointed
    utterances' finals (`model.transcribe` of each one's audio, as the
    server gives them), in order.

    Args:
        model: what a session steps (an export, `RecognizerStream`, the
            on-device `LiteRtStreamingRecognizer`).
        waveform: float32 mono samples at `model.sample_rate`.
        on_step: called with each `SessionStep` and the seconds it computed.
    """
    session = StreamSession(model, model.endpoint_rules)
    session.start({"type": "start", "sample_rate": model.sample_rate, "format": "f32le"})
    chunk = session.chunk  # the model's chunk, as a client sends it
    finals = []

    def final(whole=False):
        utterance = session.take_utterance(whole)
        if utterance.audio.size:
            finals.append(model.transcribe([utterance.audio])[0].text)

    for start in range(0, max(waveform.size, 1), chunk):
        session.add(waveform[start : start + chunk].astype("<f4").tobytes())
        if start + chunk >= waveform.size:
            session.end()
        while session.ready():
            begin = time.perf_counter()
            step = session.step()
            if on_step is not None:
                on_step(step, time.perf_counter() - begin)
            if step.endpoint is Endpoint.FINAL:
                final()
    final(whole=True)
    return finals
