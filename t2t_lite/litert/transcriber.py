"""Transcribes audio with an on-device export, importing no TensorFlow.

    transcriber = LiteRtTranscriber("export_dir", num_threads=1)
    text, score = transcriber.transcribe(waveform)  # float32 samples at its rate

Only LiteRT's interpreter (`ai_edge_litert`), NumPy and, for files,
soundfile are needed: what a phone, a board or a slim container carries.
"""

from __future__ import annotations

import json
import os

import numpy as np

from t2t_lite.litert.model_files import METADATA_FILE, MODEL_FILE, VOCABULARY_FILE
from t2t_lite.litert.vocabulary import Vocabulary


class LiteRtTranscriber:
    """A `serving.tflite_export` directory, loaded into LiteRT's interpreter.

    Args:
        directory: where `export_tflite` wrote the model.
        num_threads: the interpreter's CPU threads.
    """

    def __init__(self, directory: str, num_threads: int = 1):
        with open(os.path.join(directory, METADATA_FILE), encoding="utf-8") as handle:
            self.metadata = json.load(handle)
        self.vocabulary = Vocabulary.load(os.path.join(directory, VOCABULARY_FILE))
        self.max_samples = int(self.metadata["max_samples"])
        self.sample_rate = int(self.metadata["sample_rate"])
        self._model_path = os.path.join(directory, MODEL_FILE)
        self._num_threads = num_threads
        self._interpreter = None  # made at the first waveform (LiteRT logs when it loads)

    def _loaded(self):
        if self._interpreter is None:
            from ai_edge_litert.interpreter import Interpreter

            interpreter = Interpreter(model_path=self._model_path, num_threads=self._num_threads)
            interpreter.allocate_tensors()
            outputs = interpreter.get_output_details()
            self._input = interpreter.get_input_details()[0]["index"]
            self._ids = next(d["index"] for d in outputs if d["dtype"] == np.int32)
            self._score = next(d["index"] for d in outputs if d["dtype"] == np.float32)
            self._interpreter = interpreter
        return self._interpreter

    def check_fits(self, waveform: np.ndarray) -> None:
        """Raises ValueError for a waveform longer than the model's `max_samples`."""
        samples = np.asarray(waveform).size
        if samples > self.max_samples:
            raise ValueError(
                f"the waveform has {samples} samples; this model takes at most "
                f"{self.max_samples} ({self.max_samples / self.sample_rate:g} s): split it "
                "at pauses, or export with a larger --tflite_max_seconds."
            )

    def ids(self, waveform: np.ndarray) -> tuple[np.ndarray, float]:
        """The best hypothesis' ids `[cap]` and its score, for one waveform.

        Raises:
            ValueError: a waveform longer than the model's `max_samples`.
        """
        waveform = np.asarray(waveform, np.float32).reshape(-1)
        self.check_fits(waveform)
        padded = np.zeros([1, self.max_samples], np.float32)
        padded[0, : waveform.size] = waveform
        interpreter = self._loaded()
        interpreter.set_tensor(self._input, padded)
        interpreter.invoke()
        return interpreter.get_tensor(self._ids)[0], float(interpreter.get_tensor(self._score)[0])

    def transcribe(self, waveform: np.ndarray) -> tuple[str, float]:
        """The text of one waveform and its score."""
        ids, score = self.ids(waveform)
        return self.vocabulary.decode(ids), score
