"""An on-device export loaded into LiteRT's interpreter: what the speech and text runners share.

The files, the vocabulary, one run of the model.
"""

from __future__ import annotations

import os

import numpy as np

from t2t_lite.export_manifest import TFLITE_MODEL_FILE, VOCABULARY_FILE, TfliteManifest
from t2t_lite.litert.vocabulary import Vocabulary
from t2t_lite.native_stderr import filtered_native_stderr

XNNPACK_NOTICE = "INFO: Created TensorFlow Lite XNNPACK delegate"


def load_interpreter(path: str, num_threads: int):
    """LiteRT's interpreter of the `.tflite` at `path`, its tensors allocated."""
    from ai_edge_litert.interpreter import Interpreter

    # LiteRT announces its CPU delegate on stderr at every load.
    with filtered_native_stderr(lambda line: line.startswith(XNNPACK_NOTICE)):
        interpreter = Interpreter(model_path=path, num_threads=num_threads)
        interpreter.allocate_tensors()
    return interpreter


class ExportedModel:
    """A `serving.tflite_export` directory in LiteRT.

    Args:
        directory: where `export_tflite` wrote the model.
        num_threads: the interpreter's CPU threads.

    Raises:
        OSError: a file of the export is missing or unreadable.
        ValueError: the export is of another input than the class runs, or
            its manifest cannot be read (`ManifestError`).
    """

    input_kind = ""  # `tflite.json`'s "input" that a subclass runs

    def __init__(self, directory: str, num_threads: int = 1):
        self.manifest = TfliteManifest.read(directory)
        if self.manifest.input != self.input_kind:
            raise ValueError(
                f"{directory} holds a model of {self.manifest.input!r} inputs; "
                f"{type(self).__name__} runs {self.input_kind!r} models."
            )
        self.vocabulary = Vocabulary.load(os.path.join(directory, VOCABULARY_FILE))
        self._model_path = os.path.join(directory, TFLITE_MODEL_FILE)
        self._num_threads = num_threads
        self._interpreter = None  # made at the first run (LiteRT logs when it loads)

    def _loaded(self):
        if self._interpreter is None:
            interpreter = load_interpreter(self._model_path, self._num_threads)
            outputs = interpreter.get_output_details()
            self._input = interpreter.get_input_details()[0]["index"]
            self._ids = next(d["index"] for d in outputs if d["dtype"] == np.int32)
            self._score = next(d["index"] for d in outputs if d["dtype"] == np.float32)
            self._interpreter = interpreter
        return self._interpreter

    def run(self, inputs: np.ndarray) -> tuple[np.ndarray, float]:
        """One invocation: the model's full-size input -> `(ids [cap], score)`."""
        interpreter = self._loaded()
        interpreter.set_tensor(self._input, inputs)
        interpreter.invoke()
        return interpreter.get_tensor(self._ids)[0], float(interpreter.get_tensor(self._score)[0])
