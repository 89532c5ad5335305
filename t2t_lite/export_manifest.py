"""The export contract: the files an export holds and its typed, versioned manifest.

The exporters (`serving.export`, `serving.tflite_export`) write a manifest;
the runtimes (`server`, `litert`) read it, here and nowhere else, so a field
is named once. No TensorFlow: LiteRT's runner imports this module on a
device without it.

- A SavedModel version directory holds `assets.extra/t2t_lite_export.json`
  (TF Serving ignores `assets.extra`): `SavedModelManifest`.
- An on-device export holds `model.tflite`, `vocabulary.json` and
  `tflite.json` (`TfliteManifest`), and for a streaming model the chunk-step
  and final models and the initial state beside them (`StreamManifest`).

A manifest records `manifest_version`. Exports written before it had one
are version 1 and load as they are; a newer version than this code reads
fails with one sentence naming both.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

MANIFEST_VERSION = 1

SAVED_MODEL_MANIFEST = "t2t_lite_export.json"  # in a version directory's assets.extra/
TFLITE_MODEL_FILE = "model.tflite"
VOCABULARY_FILE = "vocabulary.json"
TFLITE_MANIFEST = "tflite.json"
# A streaming model's files, beside the others.
STEP_FILE = "stream_step.tflite"
FINAL_FILE = "stream_final.tflite"
STATE_FILE = "stream_state.npz"


class ManifestError(ValueError):
    """A manifest that cannot be read; the message names the file."""


def _from_dict(cls, values: dict, path: str):
    """`cls` from a manifest's JSON object: its fields, other keys ignored."""
    version = values.get("manifest_version", 1)
    if not isinstance(version, int) or version > MANIFEST_VERSION:
        raise ManifestError(
            f"{path} is an export manifest of version {version!r}; this t2t-lite reads "
            f"versions up to {MANIFEST_VERSION}: upgrade t2t-lite or export the model again."
        )
    names = {field.name for field in dataclasses.fields(cls)}
    missing = [
        field.name
        for field in dataclasses.fields(cls)
        if field.name not in values
        and field.default is dataclasses.MISSING
        and field.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise ManifestError(f"{path} lacks {', '.join(missing)}: export the model again.")
    return cls(**{key: value for key, value in values.items() if key in names})


def _read_json(path: str) -> dict:
    """The JSON object in `path` (OSError when it cannot be opened)."""
    with open(path, encoding="utf-8") as handle:
        try:
            values = json.load(handle)
        except json.JSONDecodeError as error:
            raise ManifestError(f"{path} is not JSON ({error}): export the model again.") from error
    if not isinstance(values, dict):
        raise ManifestError(f"{path} is not a JSON object: export the model again.")
    return values


class _Manifest:
    """What every manifest does: its JSON text, version included."""

    def to_json(self) -> str:
        values = {k: v for k, v in dataclasses.asdict(self).items() if v is not None}
        return json.dumps(
            {**values, "manifest_version": MANIFEST_VERSION}, indent=2, sort_keys=True
        )


@dataclasses.dataclass(frozen=True)
class SavedModelManifest(_Manifest):
    """A SavedModel version's manifest (`serving.export.export_run`).

    Attributes:
      problem / model / checkpoint: what was exported.
      decode_hparams: the search in the graph (`DecodeConfig.values()`),
        endpoint rules included.
      max_decode_length: the longest output.
      signatures: the signature names.
      sample_rate: a speech model's waveform rate.
      max_input_frames / segment_seconds / max_input_tokens: input limits
        the model has (speech frames, its long-form piece; text tokens).
      stream_chunk_frames / stream_frame_seconds: a streaming model's chunk
        and encoder frame.
    """

    # Defaults for what exports from before a field existed lack (the
    # runtimes read only sample_rate, decode_hparams and the stream's).
    problem: str | None = None
    model: str | None = None
    checkpoint: str | None = None
    decode_hparams: dict = dataclasses.field(default_factory=dict)
    max_decode_length: int | None = None
    signatures: list = dataclasses.field(default_factory=list)
    sample_rate: int | None = None
    max_input_frames: int | None = None
    segment_seconds: float | None = None
    max_input_tokens: int | None = None
    stream_chunk_frames: int | None = None
    stream_frame_seconds: float | None = None

    @classmethod
    def read(cls, version_dir: str) -> SavedModelManifest | None:
        """The manifest of a SavedModel version directory; None for a SavedModel without one.

        One without was not written by t2t-lite.

        Raises:
            ManifestError: a manifest this code cannot read.
        """
        path = os.path.join(version_dir, "assets.extra", SAVED_MODEL_MANIFEST)
        if not os.path.isfile(path):
            return None
        return _from_dict(cls, _read_json(path), path)


@dataclasses.dataclass(frozen=True)
class StreamManifest:
    """A streaming `.tflite` pair's (`serving.tflite_stream_export`).

    Attributes:
      chunk_frames / chunk_samples / chunk_seconds: one chunk the step model takes.
      frame_seconds: one encoder frame.
      max_utterance_samples: the longest utterance the state holds.
      step_outputs / final_outputs: the two models' output names, in the
        order the converter numbers them.
      bytes: each streaming file's size.
    """

    chunk_frames: int
    chunk_samples: int
    chunk_seconds: float
    frame_seconds: float
    max_utterance_samples: int
    step_outputs: list
    final_outputs: list
    bytes: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class TfliteManifest(_Manifest):
    """An on-device export's `tflite.json` (`serving.tflite_export`).

    Attributes:
      input: "waveform" (speech) or "ids" (text).
      quantization: how the weights are stored.
      decode_hparams: the search in the model (`DecodeConfig.values()`).
      bytes: `model.tflite`'s size.
      max_samples / sample_rate / segment_seconds: a speech model's input.
      max_input_tokens: a text model's input.
      stream: a streaming model's, or None.
    """

    input: str
    quantization: str = "float32"
    decode_hparams: dict = dataclasses.field(default_factory=dict)
    bytes: int | None = None
    max_samples: int | None = None
    sample_rate: int | None = None
    segment_seconds: float | None = None
    max_input_tokens: int | None = None
    stream: StreamManifest | None = None

    def __post_init__(self):
        if isinstance(self.stream, dict):  # read from JSON
            object.__setattr__(self, "stream", StreamManifest(**self.stream))

    @classmethod
    def read(cls, directory: str) -> TfliteManifest:
        """The manifest of an on-device export directory.

        Raises:
            OSError: no manifest there.
            ManifestError: a manifest this code cannot read.
        """
        path = os.path.join(directory, TFLITE_MANIFEST)
        values: dict[str, Any] = _read_json(path)
        try:
            return _from_dict(cls, values, path)
        except TypeError as error:  # a stream entry with other fields
            raise ManifestError(f"{path}: {error}; export the model again.") from error
