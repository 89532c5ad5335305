"""Streaming for a speech export that does not stream: the utterance so far, transcribed whole.

A model trained without dynamic chunks (the quick start's) has no
`stream_step`, yet a person talking to the page expects words as they
speak. `FullContextStream` gives a `StreamSession` the calls a streaming
export has (`start_stream`, `stream_step`, `chunk_seconds`, ...) over
`transcribe` alone: every chunk (`CHUNK_SECONDS` of audio) the utterance's
audio so far is transcribed in full context; its text is the partial, and
the silence since its last word's end (the CTC head's word times, which a
floor of noise does not move as it moves an energy threshold) is what the
endpoint rules read, as they read a streaming model's trailing blanks. The
final is the same transcription of the ended utterance, as for a streaming
export.

A step costs a transcription of everything since the utterance began, so
an utterance's cost grows with the square of its length; the endpoint
rules' `max_utterance` bounds it. It needs timed words (an export with a
CTC head, `model.timed`); without them nothing could end an utterance but
its length.
"""

from __future__ import annotations

import numpy as np

from t2t_lite.streaming.endpoint import StreamStep

# How much audio each step adds: a streaming export's usual chunk (16 frames
# of 40 ms), often enough for partials to follow speech.
CHUNK_SECONDS = 0.64


def can_stream_in_full_context(model) -> bool:
    """Whether `model` (an export the server loaded) gives timed words."""
    return bool(getattr(model, "timed", False))


class FullContextStream:
    """A non-streaming speech export, stepped as a stream (see the module docstring).

    Args:
      model: an export with `transcribe` giving timed words, `sample_rate`,
        `version` and `endpoint_rules`.

    Example:
      >>> stream = FullContextStream(model)  # doctest: +SKIP
      >>> step = stream.stream_step(stream.start_stream(), samples)  # doctest: +SKIP
      >>> step.partial, step.trailing_silence  # doctest: +SKIP
      ('the quick', 0.12)
    """

    streams = True

    def __init__(self, model):
        self.model = model
        self.biases = getattr(model, "biases", False)
        # The stream's hotwords (its start message's), biasing partials and finals.
        self.phrases: tuple[tuple[str, float], ...] = ()
        self.sample_rate = model.sample_rate
        self.version = model.version
        self.endpoint_rules = model.endpoint_rules
        self.chunk_seconds = CHUNK_SECONDS
        # The session counts the heard audio in these "frames": samples.
        self.frame_seconds = 1.0 / self.sample_rate

    def start_stream(self) -> dict:
        return {"audio": np.zeros(0, np.float32), "frames_done": 0}

    def stream_step(self, state: dict, samples: np.ndarray) -> StreamStep:
        """The utterance with `samples` added, transcribed whole."""
        audio = np.concatenate([state["audio"], np.asarray(samples, np.float32)])
        sounding = np.flatnonzero(audio)
        # The featurization cuts leading exact zeros; the session adds them back.
        heard = audio.size - (int(sounding[0]) if sounding.size else audio.size)
        transcript = self.transcribe([audio])[0]
        duration = audio.size / self.sample_rate
        words = transcript.words or ()
        silence = duration - words[-1].end if words else duration
        state = {"audio": audio, "frames_done": heard}
        return StreamStep(transcript.text, max(silence, 0.0), state)

    def transcribe(self, waveforms: list[np.ndarray]):
        if self.phrases:
            return self.model.transcribe(waveforms, self.phrases)
        return self.model.transcribe(waveforms)
