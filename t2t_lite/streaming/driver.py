"""The one loop that streams audio through a recognizer and cuts it into utterances.

    driver = StreamDriver(backend, backend.endpoint_rules)
    driver.feed(samples)                    # float32 at backend.sample_rate, any length
    while driver.ready():
        step = driver.step()                # its partial and the rules' decision
        if step.endpoint is Endpoint.FINAL:
            utterance = driver.take_utterance()   # its audio, for the final
    driver.end()                            # the end of audio: what is left steps too

WeNet's runtime has one decoder loop over a model interface with several
backends, and the loop calls the endpointer. This is that loop for
t2t-lite; a backend is anything with `StreamBackend`'s calls: an export's
signatures (`server.speech_model.ExportedSpeechModel`), the Python
recognizer (`streaming.recognizer.StreamingRecognizer`), the on-device one
(`litert.stream.LiteRtStreamingRecognizer`), or a non-streaming export
stepped in full context (`server.full_context_stream.FullContextStream`).
The server's WebSocket session, the LiteRT runner's `--stream`,
`scripts/long_stream.py` and the decoder's streaming simulation all drive
their backend with it, so a stream is cut the same way whatever runs it.

Once a chunk of audio is waiting, `step` hands it to `stream_step`, and
the endpoint rules decide from the partial and the trailing blank whether
the utterance goes on, ends (its audio is taken for the final) or was
silence (dropped). Either way the next utterance starts with a fresh
state, so what a stream holds is bounded by `EndpointRules.max_utterance`
however long it runs. Without rules a recording is one utterance (the
decoder's simulation). Every time is in the stream's clock: seconds of
audio since it began.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Protocol

import numpy as np

from t2t_lite.decoding.result import Decoded
from t2t_lite.streaming.endpoint import Endpoint, EndpointRules, StreamStep


class StreamBackend(Protocol):
    """What the driver steps: a recognizer's streaming calls and its clock."""

    sample_rate: int
    chunk_seconds: float  # the audio one step takes
    frame_seconds: float  # what one of the state's `frames_done` stands for
    version: int  # what a server reports as the model's version
    endpoint_rules: EndpointRules  # the rules it was made with

    def start_stream(self) -> dict:
        """A fresh utterance's state (`frames_done`: frames read so far)."""

    def stream_step(self, state: dict, samples: np.ndarray) -> StreamStep:
        """The state moved on by `samples`; the partial and trailing blank."""

    def finish_stream(self, state: dict) -> Decoded:
        """The streamed utterance's final (`stream_final`)."""

    def transcribe(self, waveforms: list[np.ndarray]) -> list[Decoded]:
        """Each whole waveform's transcript (an ended utterance's audio)."""


@dataclasses.dataclass(frozen=True)
class DriverStep:
    """One `step`: the partial of the current utterance and what the rules decided."""

    utterance: int
    partial: str
    endpoint: Endpoint
    audio_seconds: float  # the audio the step took
    end: float  # where the audio heard so far ends, in the stream's clock


@dataclasses.dataclass(frozen=True)
class EndedUtterance:
    """An ended utterance: its audio at the backend's rate and where it starts.

    `streamed`: the backend's `finish_stream` of it, when asked.
    """

    index: int
    audio: np.ndarray
    start: float
    streamed: Decoded | None = None


class StreamDriver:
    """A stream's recognition, cut into utterances (see the module docstring).

    Args:
        backend: what steps the audio (`StreamBackend`).
        rules: where utterances end; None: never (one utterance, ended by `end`).
    """

    def __init__(self, backend: StreamBackend, rules: EndpointRules | None):
        self.backend, self.rules = backend, rules
        self.rate = backend.sample_rate
        self.chunk = chunk_samples(backend)
        self._pending: list[np.ndarray] = []  # audio not yet stepped
        self._pending_samples = 0
        self._ended = False
        self.utterances = 0  # utterances started before the current one
        self._begin_utterance(start_sample=0)

    def _begin_utterance(self, start_sample: int) -> None:
        self._state = self.backend.start_stream()
        self._audio: list[np.ndarray] = []
        self._samples = 0
        self._start_sample = start_sample
        self._spoke = False
        self._speech_end = self._silence_from = 0.0
        self._zero_run = 0  # exact zeros at the end of its audio
        self._leading_zeros = 0  # and before its first sound

    @property
    def ended(self) -> bool:
        """Whether the end of audio came."""
        return self._ended

    def feed(self, samples: np.ndarray) -> None:
        """Queues float32 samples at the backend's rate."""
        if samples.size:
            self._pending.append(samples)
            self._pending_samples += samples.size

    def end(self) -> None:
        """The end of audio: what is left becomes steppable."""
        self._ended = True

    def ready(self) -> bool:
        """Whether `step` has a chunk to run (or, after `end`, any audio)."""
        return self._pending_samples >= self.chunk or (self._ended and self._pending_samples > 0)

    def step(self) -> DriverStep:
        """Runs the waiting audio through `stream_step` and the endpoint rules."""
        waiting = np.concatenate(self._pending)
        # No step carries an utterance past its longest (a client may send
        # minutes in one message).
        room = self._room()
        samples, rest = np.split(waiting, [max(room, self.chunk)])
        self._pending, self._pending_samples = ([rest] if rest.size else []), rest.size
        result = self.backend.stream_step(self._state, samples)
        self._state = result.state
        self._audio.append(samples)
        self._samples += samples.size
        self._spoke = self._spoke or bool(result.partial.strip())
        self._track_zeros(samples)
        silence = self._silence(result.trailing_silence, result.state["frames_done"])
        endpoint = (
            Endpoint.NONE
            if self.rules is None
            else self.rules.check(self._spoke, silence, self._samples / self.rate)
        )
        end = (self._start_sample + self._samples) / self.rate
        step = DriverStep(self.utterances, result.partial, endpoint, samples.size / self.rate, end)
        if endpoint is Endpoint.DISCARD:  # keep what the encoder has not read yet
            self._next_utterance(self._cut(self._silence_from))
        return step

    def _room(self) -> int:
        """Samples the current utterance may still take (all without rules)."""
        if self.rules is None:
            return self._pending_samples
        return int(np.ceil(self.rules.max_utterance * self.rate)) - self._samples

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
        frame_seconds = self.backend.frame_seconds
        encoded_end = self._leading_zeros / self.rate + int(frames_done) * frame_seconds
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
        return 0.0 if self.rules is None else self.rules.silence_after_speech / 2

    def _cut(self, seconds: float) -> int:
        """The sample of this utterance `seconds` in, at least a chunk in.

        At least a chunk, so the stream always moves on (whatever the rules'
        settings).
        """
        least = min(self.chunk, self._samples)
        return int(np.clip(round(seconds * self.rate), least, self._samples))

    def take_utterance(self, whole: bool = False, streamed: bool = False) -> EndedUtterance:
        """The current utterance's audio, and a fresh state for the next.

        At an endpoint the utterance ends `_margin` after its last label: the
        audio the encoder had not read when the rule fired (a next utterance
        may have begun in it) goes to the next utterance.

        Args:
            whole: all of its audio (the end of the stream).
            streamed: also its `finish_stream` (the streamed state's final),
                asked before the next utterance's state begins.
        """
        audio = np.concatenate(self._audio) if self._audio else np.zeros(0, np.float32)
        cut = self._samples if whole else self._cut(self._speech_end + self._margin)
        final = self.backend.finish_stream(self._state) if streamed and self._samples else None
        start = self._start_sample / self.rate
        utterance = EndedUtterance(self.utterances, audio[:cut], start, final)
        self._next_utterance(cut)
        return utterance

    def _next_utterance(self, cut: int) -> None:
        """Starts the next utterance at sample `cut` of this one.

        The audio after it is stepped again, in the new state.
        """
        carry = np.concatenate(self._audio)[cut:] if self._audio else np.zeros(0, np.float32)
        self.utterances += 1
        self._begin_utterance(self._start_sample + cut)
        if carry.size:
            self._pending.insert(0, carry)
            self._pending_samples += carry.size


def chunk_samples(backend: StreamBackend) -> int:
    """The samples of one streaming step of `backend` (at least one)."""
    return max(int(round(backend.chunk_seconds * backend.sample_rate)), 1)


def _trailing_zeros(samples: np.ndarray, run: int) -> int:
    """The run of exact zeros ending `samples`, continuing a run of `run` before them."""
    nonzero = np.flatnonzero(samples)
    return run + samples.size if nonzero.size == 0 else samples.size - 1 - int(nonzero[-1])


def stream_recording(
    backend: StreamBackend,
    waveform: np.ndarray,
    on_step=None,
    on_final=None,
    endpointed: bool = True,
    streamed_finals: bool = False,
) -> list[str]:
    """A recording streamed as a client streams it; the texts of its utterances' finals.

    It is sent chunk by chunk at the backend's rate, then its end; the finals
    come in order.

    Args:
        backend: what steps it (`StreamBackend`).
        waveform: float32 mono samples at `backend.sample_rate`.
        on_step: called with each `DriverStep` and the seconds it computed.
        on_final: called with each final and the seconds it computed.
        endpointed: cut where the backend's endpoint rules say; else the
            recording is one utterance.
        streamed_finals: each final is the backend's `finish_stream` of the
            streamed state (U2's second pass); else `transcribe` of the
            utterance's audio, as the server gives it. An utterance with no
            audio has none.
    """
    driver = StreamDriver(backend, backend.endpoint_rules if endpointed else None)
    chunk = driver.chunk  # the backend's chunk, as a client sends it
    finals: list[str] = []

    def final(whole=False):
        begin = time.perf_counter()
        utterance = driver.take_utterance(whole, streamed=streamed_finals)
        if not utterance.audio.size:
            return
        decoded = utterance.streamed
        if decoded is None:
            decoded = backend.transcribe([utterance.audio])[0]
        finals.append(decoded.text)
        if on_final is not None:
            on_final(decoded, time.perf_counter() - begin)

    for start in range(0, max(waveform.size, 1), chunk):
        driver.feed(waveform[start : start + chunk])
        if start + chunk >= waveform.size:
            driver.end()
        while driver.ready():
            begin = time.perf_counter()
            step = driver.step()
            if on_step is not None:
                on_step(step, time.perf_counter() - begin)
            if step.endpoint is Endpoint.FINAL:
                final()
    final(whole=True)
    return finals
