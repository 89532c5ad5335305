"""An on-device export served behind the same routes, run by LiteRT's interpreter.

The export is `t2t-lite-exporter --format=tflite`'s directory.

    model = TfliteSpeechModel("/exports/asr_tflite")
    model.transcribe([waveform])   # -> [Transcript(text=..., score=..., words=None)]

What a server on a small board or a slim container runs: no TensorFlow in
the model's path (`litert.litert_transcriber`). The interpreter takes one piece at
a time, so a batch is transcribed recording by recording; its transcripts
have no word times (the `.tflite` has no CTC alignment) and it does not
stream (`streams` is False: `/v1/stream` answers 400).
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np

from t2t_lite.export_manifest import TFLITE_MANIFEST, TFLITE_MODEL_FILE, ManifestError
from t2t_lite.litert.litert_transcriber import LiteRtTranscriber
from t2t_lite.server.speech_model import ExportNotFoundError, Transcript


def is_tflite_export(directory: str) -> bool:
    """Whether `directory` holds an on-device export (its model and metadata)."""
    files = (TFLITE_MODEL_FILE, TFLITE_MANIFEST)
    return all(os.path.isfile(os.path.join(directory, name)) for name in files)


def litert_missing() -> str | None:
    """Why a `.tflite` cannot be served here (no LiteRT interpreter), or None."""
    if importlib.util.find_spec("ai_edge_litert") is None:
        return (
            "serving a .tflite export needs LiteRT's interpreter, which is not installed: "
            "pip install -e '.[litert]' (or serve the SavedModel export)."
        )
    return None


class TfliteSpeechModel:
    """A speech `.tflite` export, ready to transcribe.

    Args:
        directory: what `t2t-lite-exporter --format=tflite` wrote.
        num_threads: the interpreter's CPU threads (default: every core).

    Raises:
        ExportNotFoundError: the directory holds a text model's `.tflite`.
    """

    streams = False
    biases = False  # no hotwords: the `.tflite`'s search has no phrase scorer

    def __init__(self, directory: str, num_threads: int | None = None):
        try:
            self._transcriber = LiteRtTranscriber(directory, num_threads or os.cpu_count() or 1)
        except ManifestError:  # one sentence naming the file already
            raise
        except ValueError as error:  # a text model's export
            raise ExportNotFoundError(f"{error} t2t-lite-serve serves speech exports.") from error
        self.sample_rate = self._transcriber.sample_rate
        # The export has no version directory: name it by its format and quantization.
        self.version = f"tflite-{self._transcriber.manifest.quantization}"

    def warm_up(self) -> None:
        """Loads the interpreter and runs one second of quiet noise through it."""
        noise = np.random.default_rng(0).uniform(-0.05, 0.05, self.sample_rate)
        self.transcribe([noise.astype(np.float32)])

    def transcribe(self, waveforms: list[np.ndarray]) -> list[Transcript]:
        """Transcribes float32 mono waveforms at `sample_rate`, one by one."""
        results = [self._transcriber.transcribe(waveform) for waveform in waveforms]
        return [Transcript(result.text, result.score, None) for result in results]
