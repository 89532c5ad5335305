"""The Python recognizer behind the calls a server's stream session makes.

`server.stream_session.StreamSession` cuts a stream into utterances by
calling an export's `start_stream` and `stream_step` and reading each step's
partial and blank frames (`endpoint.EndpointRules`); an ended utterance's
final is `transcribe` of its audio. `RecognizerStream` answers the same
calls from a `StreamingRecognizer` and a `WaveformTranscriber`, so a stream
through the Python recognizer is endpointed by the same rules, in the same
code, as one through the SavedModel's signatures:

    streams = RecognizerStream(recognizer, transcriber)
    session = StreamSession(streams, streams.endpoint_rules)

Its state is the recognizer's own, so it serves one stream at a time.
"""

from __future__ import annotations

import numpy as np

from t2t_lite.data.audio_io import padded_batch
from t2t_lite.decoding.result import Decoded
from t2t_lite.decoding.timing.word_times import encoder_frame_seconds
from t2t_lite.streaming.endpoint import EndpointRules, StreamStep
from t2t_lite.streaming.recognizer import StreamingRecognizer


class RecognizerStream:
    """An export's `start_stream` / `stream_step` / `finish_stream` /
    `transcribe` and `endpoint_rules` (the decode hparams'), from Python.

    Args:
        recognizer: the streaming recognizer (its chunk, rate and rules are the stream's).
        transcriber: what gives an ended utterance's final
            (`WaveformTranscriber`, as an export's `transcribe`).
        version: what a session reports as the model's version.
    """

    def __init__(self, recognizer: StreamingRecognizer, transcriber, version: int = 0):
        self.recognizer, self.transcriber, self.version = recognizer, transcriber, version
        self.sample_rate = recognizer.featurizer.config.sample_rate
        self.frame_seconds = encoder_frame_seconds(recognizer.hparams)[0]
        self.chunk_seconds = recognizer.encoder.chunk_frames * self.frame_seconds
        self.endpoint_rules = EndpointRules.of(recognizer.decode_config)

    def start_stream(self) -> dict:
        """A new utterance: the recognizer reset."""
        self.recognizer.reset()
        return {"frames_done": 0}

    def stream_step(self, state: dict, samples: np.ndarray) -> StreamStep:
        """The recognizer fed `samples`; its partial and the seconds since its last label."""
        del state  # the recognizer's own
        partial = self.recognizer.accept_waveform(samples)
        silence = self.recognizer.trailing_blank_frames * self.frame_seconds
        return StreamStep(partial, silence, {"frames_done": self.recognizer.encoded_frames})

    def finish_stream(self, state: dict) -> Decoded:
        """The utterance's streamed final (`StreamingRecognizer.finalize`), its words timed."""
        del state
        text = self.recognizer.finalize()
        return Decoded((text,), (0.0,), words=self.recognizer.final_words)

    def transcribe(self, waveforms: list[np.ndarray]) -> list:
        """Each waveform's `Decoded` (its `.text`), transcribed as one batch."""
        return self.transcriber.transcribe(*padded_batch(waveforms))
