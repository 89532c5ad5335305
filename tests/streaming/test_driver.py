"""The one streaming loop (`streaming.driver`) over a backend made of NumPy:
where it cuts, what it carries to the next utterance, and whose final it asks."""

import numpy as np
import pytest

from t2t_lite.decoding.result import Decoded
from t2t_lite.streaming.driver import StreamDriver, chunk_samples, stream_recording
from t2t_lite.streaming.endpoint import Endpoint, EndpointRules
from t2t_lite.streaming.stateful_backend import StatefulBackend

RATE = 100  # samples a second: a chunk of 0.1 s is 10 samples


class LoudBackend(StatefulBackend):
    """Says "w" for each loud sample run it has read; its silence is the
    quiet samples since the last loud one. It keeps its state itself, as the
    Python and on-device recognizers do."""

    sample_rate, chunk_seconds, frame_seconds, version = RATE, 0.1, 1 / RATE, 0
    endpoint_rules = EndpointRules(0.5, 0.3, 10.0)

    def __init__(self):
        self.resets, self.finalized, self.transcribed = 0, [], []

    def reset(self):
        self.resets += 1
        self.audio = np.zeros(0, np.float32)
        self.final_words = ()

    def _words(self, audio) -> str:
        loud = np.concatenate([[0], (np.abs(audio) > 0.1).astype(int)])
        return " ".join(["w"] * int(np.sum(np.diff(loud) == 1)))

    def accept_waveform(self, samples):
        self.audio = np.concatenate([self.audio, samples])
        return self._words(self.audio)

    @property
    def trailing_blank_frames(self) -> int:
        loud = np.flatnonzero(np.abs(self.audio) > 0.1)
        return self.audio.size - (int(loud[-1]) + 1 if loud.size else 0)

    @property
    def encoded_frames(self) -> int:
        return self.audio.size

    def finalize(self) -> str:
        self.finalized.append(self.audio.size)
        return "streamed " + self._words(self.audio)

    def transcribe(self, waveforms):
        self.transcribed.extend(w.size for w in waveforms)
        return [Decoded((self._words(w),), (0.0,)) for w in waveforms]


def two_words() -> np.ndarray:
    """A floor, a loud 0.2 s, 1 s of floor, a loud 0.2 s, 0.2 s of floor."""
    audio = np.full(int(1.8 * RATE), 0.01, np.float32)
    audio[20:40] = audio[140:160] = 0.5
    return audio


def test_the_rules_cut_two_utterances_each_transcribed_from_its_own_audio():
    backend = LoudBackend()
    steps = []
    finals = stream_recording(backend, two_words(), on_step=lambda s, _: steps.append(s))
    assert finals == ["w", "w"]
    cut = next(s for s in steps if s.endpoint is Endpoint.FINAL)
    # The first word ends at 0.4 s; 0.3 s of silence after it ends it at the next step.
    assert cut.utterance == 0 and cut.end == pytest.approx(0.7)
    # The first utterance ends half the endpoint's silence after its word;
    # the rest is stepped again as the next's, where 0.5 s of floor alone is
    # dropped, and the second word is an utterance of its own.
    assert backend.transcribed[0] == 40 + 15 and len(backend.transcribed) == 2
    assert any(s.endpoint is Endpoint.DISCARD for s in steps)
    assert backend.finalized == []  # the server's finals: the audio, transcribed whole


def test_streamed_finals_are_asked_before_the_next_utterance_resets_the_state():
    backend = LoudBackend()
    finals = stream_recording(backend, two_words(), streamed_finals=True)
    assert finals == ["streamed w", "streamed w"] and backend.transcribed == []
    # Each final read everything its utterance stepped, before the reset.
    assert backend.finalized[0] == 70
    assert backend.resets == 4  # the start, two finals and the floor dropped between


def test_without_rules_a_recording_is_one_utterance_stepped_chunk_by_chunk():
    backend = LoudBackend()
    ends = []
    finals = stream_recording(
        backend, two_words(), lambda step, _: ends.append(step.end), endpointed=False,
        streamed_finals=True,
    )  # fmt: skip
    assert finals == ["streamed w w"]
    assert ends == pytest.approx([0.1 * (k + 1) for k in range(18)])
    assert chunk_samples(backend) == 10


def test_silence_alone_is_dropped_and_no_final_is_given():
    backend = LoudBackend()
    driver = StreamDriver(backend, backend.endpoint_rules)
    driver.feed(np.full(RATE, 0.01, np.float32))
    decisions = []
    while driver.ready():
        decisions.append(driver.step().endpoint)
    assert Endpoint.DISCARD in decisions and Endpoint.FINAL not in decisions
    assert driver.utterances >= 1  # the silence began a new utterance
    assert stream_recording(backend, np.zeros(0, np.float32)) == []
