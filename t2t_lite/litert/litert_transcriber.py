"""Transcribes audio with an on-device export, importing no TensorFlow.

    transcriber = LiteRtTranscriber("export_dir", num_threads=1)
    decoded = transcriber.transcribe(waveform)  # float32 samples at its rate
    decoded.text, decoded.score

Only LiteRT's interpreter (`ai_edge_litert`), NumPy and, for files,
soundfile are needed: what a phone, a board or a slim container carries.
A recording longer than the model's input is split at pauses by the
long-form rules (`decoding.audio.pause_split`, the SavedModel's rules in NumPy)
and each recording's text is its pieces' texts joined with spaces, as the
SavedModel joins them. The result is the decoder's `Decoded` (one best
beam; no word times: the export has no CTC alignment), so code written
against `t2t-lite-decoder`'s results reads these too.
"""

from __future__ import annotations

import numpy as np

from t2t_lite.data.audio_io import finite_samples
from t2t_lite.decoding.audio.pause_split import numpy_piece_ends
from t2t_lite.decoding.result import Decoded
from t2t_lite.litert.exported_model import ExportedModel


class LiteRtTranscriber(ExportedModel):
    """A speech export (`input` "waveform") in LiteRT.

    Args:
        directory: where `export_tflite` wrote the model.
        num_threads: the interpreter's CPU threads.
    """

    input_kind = "waveform"

    def __init__(self, directory: str, num_threads: int = 1):
        super().__init__(directory, num_threads)
        self.max_samples = int(self.manifest.max_samples)
        self.sample_rate = int(self.manifest.sample_rate)
        self.segment_seconds = float(self.manifest.segment_seconds)

    def check_fits(self, waveform: np.ndarray) -> None:
        """Raises ValueError for a waveform longer than the model's `max_samples`."""
        samples = np.asarray(waveform).size
        if samples > self.max_samples:
            raise ValueError(
                f"the waveform has {samples} samples; this model takes at most "
                f"{self.max_samples} ({self.max_samples / self.sample_rate:g} s) at once: "
                "transcribe() splits longer recordings at pauses."
            )

    def ids(self, waveform: np.ndarray) -> tuple[np.ndarray, float]:
        """The best hypothesis' ids `[cap]` and its score, for one piece.

        Raises:
            ValueError: a waveform longer than the model's `max_samples`.
        """
        waveform = np.asarray(waveform, np.float32).reshape(-1)
        self.check_fits(waveform)
        padded = np.zeros([1, self.max_samples], np.float32)
        padded[0, : waveform.size] = waveform
        return self.run(padded)

    def pieces(self, waveform: np.ndarray) -> list[np.ndarray]:
        """The recording cut at pauses into pieces the model takes, in order."""
        waveform = finite_samples(np.asarray(waveform, np.float32).reshape(-1))
        ends = numpy_piece_ends(waveform, self.sample_rate, self.segment_seconds)
        return np.split(waveform, ends[:-1])

    def transcribe(self, waveform: np.ndarray) -> Decoded:
        """One recording of any length: its text and score.

        A split recording's score is the sum over its pieces, as the
        SavedModel's.
        """
        texts, score = [], 0.0
        for piece in self.pieces(waveform):
            ids, piece_score = self.ids(piece)
            texts.append(self.vocabulary.decode(ids))
            score += piece_score
        return Decoded(beams=(" ".join(text for text in texts if text),), scores=(score,))
