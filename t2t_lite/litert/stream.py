"""Streaming recognition with an on-device export, importing no TensorFlow.

    recognizer = LiteRtStreamingRecognizer("export_dir", num_threads=1)
    for chunk in microphone_chunks:            # float32 samples, any length
        print(recognizer.accept_waveform(chunk))   # the partial transcript
    text = recognizer.finalize()               # the final transcript
    recognizer.reset()                         # ready for the next utterance

The export's `stream_step.tflite` runs the SavedModel's state machine on
each chunk (`serving.tflite_stream_export`: featurization, the encoder's
chunks, the CTC prefix beam search whose best prefix is the partial, as in
the SavedModel and the Python recognizer); `stream_final.tflite` gives the
final: the joint CTC/attention search over the utterance. Only LiteRT's
interpreter and NumPy are needed.

An utterance holds at most the export's longest (its decode hparam
`endpoint_max_utterance_seconds`, plus one chunk): `accept_waveform`
refuses more, as the endpoint rules end an utterance there. The recognizer
is also a `StreamBackend`, so the one streaming loop
(`streaming.driver.stream_recording`) cuts a long recording into
utterances by the same rules, in the same code, as the server cuts a
stream through the SavedModel.
"""

from __future__ import annotations

import os

import numpy as np

from t2t_lite.data.audio_io import finite_samples
from t2t_lite.decoding.result import Decoded
from t2t_lite.export_manifest import (
    FINAL_FILE,
    STATE_FILE,
    STEP_FILE,
    VOCABULARY_FILE,
    TfliteManifest,
)
from t2t_lite.litert.exported_model import load_interpreter
from t2t_lite.litert.litert_transcriber import LiteRtTranscriber
from t2t_lite.litert.vocabulary import Vocabulary
from t2t_lite.streaming.endpoint import EndpointRules
from t2t_lite.streaming.stateful_backend import StatefulBackend


class _Graph:
    """One `.tflite` run by name: inputs by their names, outputs by the export's `outputs` list.

    The converter names the outputs Identity, Identity_1, ...
    """

    def __init__(self, path: str, output_names: list[str], num_threads: int):
        self._interpreter = load_interpreter(path, num_threads)
        self._inputs = {d["name"]: d["index"] for d in self._interpreter.get_input_details()}
        details = self._interpreter.get_output_details()
        self._outputs = dict(zip(output_names, (d["index"] for d in details), strict=True))

    def __call__(self, **inputs) -> dict[str, np.ndarray]:
        interpreter = self._interpreter
        for name, index in self._inputs.items():
            interpreter.set_tensor(index, inputs[name])
        interpreter.invoke()
        return {name: interpreter.get_tensor(index) for name, index in self._outputs.items()}


class LiteRtStreamingRecognizer(StatefulBackend):
    """A streaming export in LiteRT: partials while the audio arrives, a final at the end.

    Args:
        directory: where `t2t-lite-exporter --format=tflite` wrote a streaming model.
        num_threads: the interpreters' CPU threads.

    Raises:
        OSError: a file of the export is missing or unreadable.
        ValueError: the export holds no streaming model.
    """

    def __init__(self, directory: str, num_threads: int = 1):
        manifest = TfliteManifest.read(directory)
        stream = manifest.stream
        if stream is None:
            raise ValueError(
                f"{directory} holds no streaming model (export a model trained with "
                "use_dynamic_chunk=True with --format=tflite)."
            )
        self.sample_rate = int(manifest.sample_rate)
        self.chunk_samples = int(stream.chunk_samples)
        self.frame_seconds = float(stream.frame_seconds)
        self.chunk_seconds = float(stream.chunk_seconds)
        self.max_utterance_samples = int(stream.max_utterance_samples)
        self.endpoint_rules = EndpointRules.from_settings(manifest.decode_hparams)
        self.vocabulary = Vocabulary.load(os.path.join(directory, VOCABULARY_FILE))
        with np.load(os.path.join(directory, STATE_FILE)) as initial:
            self._initial = {name: initial[name] for name in initial.files}
        self._step = _Graph(os.path.join(directory, STEP_FILE), stream.step_outputs, num_threads)
        self._final = _Graph(os.path.join(directory, FINAL_FILE), stream.final_outputs, num_threads)
        self.version = 0  # what a session reports
        self._directory, self._num_threads = directory, num_threads
        self._transcriber = None
        self.reset()

    def reset(self) -> None:
        """Forgets the utterance: the next chunk starts a new one."""
        self._state = dict(self._initial)
        self._partial = np.zeros(0, np.int32)
        # Encoder frames after the last label of the CTC head's best path,
        # all of them before one: what endpointing reads.
        self.trailing_blank_frames = 0
        self.utterance_samples = 0
        self.final_words = ()  # the export times no words

    @property
    def encoded_frames(self) -> int:
        """Encoder frames emitted so far in the utterance."""
        return int(self._state["frames_done"])

    def accept_waveform(self, samples) -> str:
        """Takes the next samples (float32, the model's rate); returns the partial transcript.

        The partial covers everything so far.

        Raises:
            ValueError: the utterance would pass the export's longest.
        """
        samples = finite_samples(np.asarray(samples, np.float32).reshape(-1))
        if self.utterance_samples + samples.size > self.max_utterance_samples:
            raise ValueError(
                f"an utterance of more than {self.max_utterance_samples} samples "
                f"({self.max_utterance_samples / self.sample_rate:g} s): this export holds "
                "no longer one; finalize() it before (the endpoint rules end it at "
                "max_utterance)."
            )
        self.utterance_samples += samples.size
        for start in range(0, samples.size, self.chunk_samples):
            self._advance(samples[start : start + self.chunk_samples])
        return self.vocabulary.decode(self._partial)

    def _advance(self, piece: np.ndarray) -> None:
        waveform = np.zeros([1, self.chunk_samples], np.float32)
        waveform[0, : piece.size] = piece
        out = self._step(waveform=waveform, valid_samples=np.int32(piece.size), **self._state)
        self._partial = out.pop("partial_ids")[0, : int(out.pop("partial_length"))]
        self.trailing_blank_frames = int(out.pop("trailing_blank_frames"))
        self._state = out

    def finalize(self) -> str:
        """The final transcript (the rest encoded, then the joint search).
        Call `reset` before the next utterance."""
        out = self._final(**self._state)
        return self.vocabulary.decode(out["ids"][0])

    def transcribe(self, waveforms: list[np.ndarray]) -> list[Decoded]:
        """Each whole recording's `Decoded`, by the export's `model.tflite`
        (what a session's endpointed finals are, as the SavedModel's)."""
        if self._transcriber is None:
            self._transcriber = LiteRtTranscriber(self._directory, self._num_threads)
        return [self._transcriber.transcribe(waveform) for waveform in waveforms]
