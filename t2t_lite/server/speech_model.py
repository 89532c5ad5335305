"""A speech SavedModel, loaded once, transcribing batches of waveforms.

    model = ExportedSpeechModel("/exports/asr")   # its newest version
    model.transcribe([waveform_a, waveform_b])     # float32 mono at model.sample_rate
    # -> [Transcript(text=..., score=..., words=(TimedWord, ...)), ...]
    model.transcribe([waveform_a], phrases=(("layla", 0.5),))   # biased (hotwords)

It calls the export's `transcribe_timed` signature where there is one (a
model with a CTC head: words with times and confidence), else
`serving_default`: the graph t2t-lite-decoder runs, so the server gives the
decoder's transcripts. With a phrase list it calls `transcribe_biased`
(`biases`: the export has it), which answers as `transcribe_timed` does.
An export of a streaming model (`stream_start`, `stream_step`:
`streaming/graph.py`) also streams:

    state = model.start_stream()
    step = model.stream_step(state, samples)   # -> StreamStep(partial, ...)
    state = step.state
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import tensorflow as tf

from t2t_lite.data.audio_io import SAMPLE_RATE, padded_batch
from t2t_lite.decoding.timing.subtitles import TimedWord
from t2t_lite.export_manifest import SavedModelManifest
from t2t_lite.streaming.endpoint import EndpointRules, StreamStep

TIMED_SIGNATURE = "transcribe_timed"
BIASED_SIGNATURE = "transcribe_biased"  # takes a phrase list per batch (hotwords)


STREAM_SIGNATURES = ("stream_start", "stream_step")
FINAL_SIGNATURE = "stream_final"  # the streamed utterance's final (`finish_stream`)


class ExportNotFoundError(ValueError):
    """No loadable speech SavedModel where one was named."""


@dataclasses.dataclass(frozen=True)
class Transcript:
    """One recording's transcript: text, score, timed words (None: no CTC head)."""

    text: str
    score: float
    words: tuple[TimedWord, ...] | None


def newest_version(export_dir: str) -> str:
    """The newest numeric version directory under `export_dir`, or `export_dir` itself.

    `export_dir` is TF Serving's model base path, or itself a version.

    Raises:
        ExportNotFoundError: neither holds a saved_model.pb.
    """
    if os.path.isfile(os.path.join(export_dir, "saved_model.pb")):
        return export_dir
    versions = []
    if os.path.isdir(export_dir):
        versions = sorted(
            (int(name) for name in os.listdir(export_dir) if name.isdigit()), reverse=True
        )
    for version in versions:
        path = os.path.join(export_dir, str(version))
        if os.path.isfile(os.path.join(path, "saved_model.pb")):
            return path
    raise ExportNotFoundError(
        f"{export_dir} holds no SavedModel (no saved_model.pb in it or in a numbered "
        "version under it); pass what t2t-lite-exporter wrote as --export_dir."
    )


class ExportedSpeechModel:
    """A speech export of `t2t-lite-exporter`, ready to transcribe.

    Args:
        export_dir: the exporter's `--export_dir` (its newest version is
            loaded) or one version directory.

    Raises:
        ExportNotFoundError: no SavedModel there, or not a speech model.
    """

    def __init__(self, export_dir: str):
        self.path = newest_version(export_dir)
        self.version = os.path.basename(os.path.normpath(self.path))
        # None: a SavedModel not written by t2t-lite-exporter (the defaults hold).
        self.manifest = SavedModelManifest.read(self.path)
        manifest = self.manifest
        self.sample_rate = int(manifest and manifest.sample_rate or SAMPLE_RATE)
        self._loaded = tf.saved_model.load(self.path)
        signatures = self._loaded.signatures
        name = TIMED_SIGNATURE if TIMED_SIGNATURE in signatures else "serving_default"
        self._signature = signatures[name]
        if "waveform" not in self._signature.structured_input_signature[1]:
            raise ExportNotFoundError(
                f"{self.path} is not a speech model (its {name} takes no waveform); "
                "t2t-lite-serve serves speech exports."
            )
        self.timed = name == TIMED_SIGNATURE
        # Exports from before hotwords (or a text model's) have no biased signature.
        self.biases = BIASED_SIGNATURE in signatures
        # Streaming exports from before endpointing (no `stream_frame_seconds`)
        # cannot be endpointed: they are served as files only.
        self.streams = bool(manifest and manifest.stream_frame_seconds) and all(
            name in signatures for name in STREAM_SIGNATURES
        )
        if self.streams:  # one encoder frame, and one chunk of them, in seconds
            self.frame_seconds = float(manifest.stream_frame_seconds)
            self.chunk_seconds = manifest.stream_chunk_frames * self.frame_seconds
        # The endpoint rules exported with the model (an older export's: the defaults).
        self.endpoint_rules = EndpointRules.from_settings(
            manifest.decode_hparams if manifest else {}
        )

    def warm_up(self) -> None:
        """Runs one second of quiet noise through the graphs, so the first request need not wait.

        TensorFlow's first call of a loaded signature optimizes its graph
        (seconds), which otherwise the first request would wait for.
        """
        noise = np.random.default_rng(0).uniform(-0.05, 0.05, self.sample_rate)
        self.transcribe([noise.astype(np.float32)])
        if self.streams:
            self.stream_step(self.start_stream(), noise.astype(np.float32))

    def transcribe(
        self, waveforms: list[np.ndarray], phrases: tuple[tuple[str, float], ...] = ()
    ) -> list[Transcript]:
        """Transcribes float32 mono waveforms at `sample_rate` as one batch.

        Args:
            waveforms: the recordings.
            phrases: `(phrase, boost)` pairs to bias the search towards
                (`transcribe_biased`; needs `biases`), or none.
        """
        batch, lengths = padded_batch(waveforms)
        inputs = {"waveform": tf.constant(batch), "waveform_length": tf.constant(lengths)}
        signature = self._signature
        if phrases:
            signature = self._loaded.signatures[BIASED_SIGNATURE]
            inputs["phrases"] = tf.constant([text for text, _ in phrases], tf.string)
            inputs["phrase_boosts"] = tf.constant([boost for _, boost in phrases], tf.float32)
        out = signature(**inputs)
        out = {name: value.numpy() for name, value in out.items()}
        return [self._transcript(out, row) for row in range(len(waveforms))]

    def _transcript(self, out: dict, row: int) -> Transcript:
        words = None
        if self.timed:
            words = tuple(
                TimedWord(
                    out["words"][row, i].decode("utf-8", errors="replace"),
                    float(out["starts"][row, i]),
                    float(out["ends"][row, i]),
                    float(out["confidences"][row, i]),
                )
                for i in range(int(out["num_words"][row]))
            )
        text = out["outputs"][row].decode("utf-8", errors="replace")
        return Transcript(text, float(out["scores"][row]), words)

    def start_stream(self) -> dict:
        """A stream's state before its first audio (`stream_start`)."""
        return dict(self._loaded.signatures["stream_start"]())

    def stream_step(self, state: dict, samples: np.ndarray) -> StreamStep:
        """Advances a stream by float32 mono `samples` at `sample_rate`."""
        waveform = tf.constant(np.asarray(samples, np.float32)[None])
        out = dict(self._loaded.signatures["stream_step"](waveform=waveform, **state))
        partial = out.pop("partial").numpy()[0].decode("utf-8", errors="replace")
        silence = int(out.pop("trailing_blank_frames")) * self.frame_seconds
        return StreamStep(partial, silence, out)

    def finish_stream(self, state: dict) -> Transcript:
        """A stream's final transcript, with its timed words where the export has them.

        It is `stream_final`'s: the joint search over what it streamed.
        """
        out = self._loaded.signatures[FINAL_SIGNATURE](**state)
        out = {name: value.numpy() for name, value in out.items()}
        if "num_words" not in out:  # an export from before streamed finals were timed
            text = out["outputs"][0].decode("utf-8", errors="replace")
            return Transcript(text, float(out["scores"][0]), None)
        return self._transcript(out, 0)
