"""A speech model as a `.tflite` of builtin ops only, for LiteRT on a device.

    export_tflite(model, hparams, decode_hparams(), target_encoder, "out/", "int8")

writes three files to the directory: `model.tflite`, `vocabulary.json`
(`litert.vocabulary`) and `tflite.json` (what the model takes). The model
takes one waveform, float32 `[1, max_samples]` at the training sample rate,
zero padded (exact zeros after the audio are cut off before framing, so the
padding changes nothing), and returns the best hypothesis' token ids, int32
`[1, cap]`, and its score, float32 `[1]`. In between is the SavedModel's
graph at fixed shapes: featurization (`transcriber.piece_features`: log-mel,
deltas, per-utterance normalization, the no-speech test), the encoder, and
`decode.model_search` with `fixed_shapes=True` (the joint CTC/attention
search XLA and a TPU run: `cap` steps, a fixed-length cache). Every op is a
TFLite builtin: no Flex delegate, no custom ops (the test converts with
`TFLITE_BUILTINS` alone).

Quantization: "float32"; "float16" (weights stored as float16); "int8"
(dynamic range: int8 weights, float activations; no representative set).
"""

from __future__ import annotations

import json
import os
import tempfile

import tensorflow as tf
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

from t2t_lite.data.problem import Problem
from t2t_lite.data.speech_features import num_frames
from t2t_lite.decoding.decode import decode_cap, model_search, resolve_decode_hparams
from t2t_lite.decoding.transcriber import piece_features
from t2t_lite.hparam import HParams
from t2t_lite.litert.model_files import METADATA_FILE, MODEL_FILE, VOCABULARY_FILE
from t2t_lite.litert.vocabulary import Vocabulary
from t2t_lite.serving.export import ExportError, restored_model

QUANTIZATIONS = ("float32", "float16", "int8")
DEFAULT_MAX_SECONDS = 15.0


def transcribe_function(model, hparams: HParams, decode_hp: HParams, max_samples: int):
    """The fixed-shape graph the `.tflite` holds (a `tf.function` of one
    `[1, max_samples]` waveform -> `(ids [1, cap], score [1])`)."""
    decode_hp = resolve_decode_hparams(model, decode_hp)
    cap = decode_cap(hparams, decode_hp)
    frames = int(num_frames(tf.constant([max_samples]), hparams)[0])

    @tf.function(input_signature=[tf.TensorSpec([1, max_samples], tf.float32, name="waveform")])
    def transcribe(waveform):
        waveform = tf.where(tf.math.is_finite(waveform), waveform, 0.0)
        features, _ = piece_features(waveform, tf.constant([max_samples]), hparams, decode_hp)
        inputs = features["inputs"]  # [1, <= frames, bins, channels]: static from here on
        inputs = tf.pad(inputs, [[0, 0], [0, frames - tf.shape(inputs)[1]], [0, 0], [0, 0]])
        features["inputs"] = tf.reshape(inputs, [1, frames, *inputs.shape[2:]])
        ids, scores = model_search(model, features, decode_hp, cap, fixed_shapes=True)
        return {"ids": ids[:, 0], "score": scores[:, 0]}

    return transcribe


def check_quantization(quantization: str) -> None:
    """Raises ValueError for a quantization other than `QUANTIZATIONS`."""
    if quantization not in QUANTIZATIONS:
        raise ValueError(
            f"the TFLite quantization must be one of {', '.join(QUANTIZATIONS)}, "
            f"got {quantization!r}."
        )


def convert(function, quantization: str = "float32") -> bytes:
    """A `tf.function` with an input signature -> `.tflite` bytes, builtin ops only.

    Raises:
        ValueError: an unknown quantization.
    """
    check_quantization(quantization)
    # Weights frozen into constants: TFLite cannot read variables a WHILE body captures.
    frozen = convert_variables_to_constants_v2(function.get_concrete_function())
    converter = tf.lite.TFLiteConverter.from_concrete_functions([frozen])
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    if quantization != "float32":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if quantization == "float16":
        converter.target_spec.supported_types = [tf.float16]
    return converter.convert()


def export_tflite(
    model,
    hparams: HParams,
    decode_hp: HParams,
    target_encoder,
    directory: str,
    quantization: str = "float32",
    max_seconds: float = DEFAULT_MAX_SECONDS,
) -> str:
    """Writes `model.tflite`, `vocabulary.json` and `tflite.json` to `directory`.

    Returns:
        The path of `model.tflite`.
    """
    if model.input_modality != "speech":
        raise ValueError("the TFLite export takes speech models (a waveform in, text out).")
    sample_rate = int(hparams.audio_sample_rate)
    max_samples = int(round(max_seconds * sample_rate))
    blob = convert(transcribe_function(model, hparams, decode_hp, max_samples), quantization)
    resolved = resolve_decode_hparams(model, decode_hp)
    metadata = {
        "max_samples": max_samples,
        "sample_rate": sample_rate,
        "quantization": quantization,
        "decode_hparams": resolved.values(),
        "bytes": len(blob),
    }
    os.makedirs(directory, exist_ok=True)
    files = {
        MODEL_FILE: blob,
        VOCABULARY_FILE: Vocabulary.from_encoder(target_encoder).to_json().encode("utf-8"),
        METADATA_FILE: json.dumps(metadata, indent=2, sort_keys=True).encode("utf-8"),
    }
    for name, content in files.items():  # each file whole or not at all
        with tempfile.NamedTemporaryFile(dir=directory, delete=False) as handle:
            handle.write(content)
        os.replace(handle.name, os.path.join(directory, name))
    return os.path.join(directory, MODEL_FILE)


def export_tflite_run(
    output_dir: str,
    export_dir: str,
    problem: Problem,
    decode_hp: HParams,
    hparams: HParams,
    model_name: str = "transformer",
    data_dir: str | None = None,
    checkpoint_path: str | None = None,
    quantization: str = "float32",
    max_seconds: float = DEFAULT_MAX_SECONDS,
) -> str:
    """`export_tflite` of the run in `output_dir` (its latest checkpoint, or
    `checkpoint_path`), into `export_dir`.

    Raises:
        ExportError: the run cannot be exported this way (the message says why).
    """
    if problem.input_modality != "speech":
        raise ExportError(
            f"--format=tflite exports speech models; {problem.name} takes "
            f"{problem.input_modality or 'no'} inputs (export it as a SavedModel)."
        )
    try:
        check_quantization(quantization)
    except ValueError as error:
        raise ExportError(str(error)) from error
    problem.add_hparams(hparams)  # runs saved before the problem had an hparam
    model, _ = restored_model(output_dir, problem, hparams, model_name, data_dir, checkpoint_path)
    encoder = problem.feature_encoders(data_dir)["targets"]
    try:
        return export_tflite(
            model, hparams, decode_hp, encoder, export_dir, quantization, max_seconds
        )
    except ValueError as error:  # decode hparams the model cannot honour
        raise ExportError(str(error)) from error
