"""A trained model as a `.tflite` of builtin ops only, for LiteRT on a device.

    export_tflite(model, run_config, DecodeConfig(), target_encoder, "out/", "int8")

writes three files to the directory: `model.tflite`, `vocabulary.json`
(`litert.vocabulary`) and `tflite.json` (what the model takes). Between
input and output is the SavedModel's graph at fixed shapes, ending in
`decode.model_search` with `fixed_shapes=True` (the joint CTC/attention
search XLA and a TPU run: `cap` steps, a fixed-length cache). Every op is a
TFLite builtin: no Flex delegate, no custom ops (the tests convert with
`TFLITE_BUILTINS` alone). Outputs: the best hypothesis' token ids, int32
`[1, cap]`, and its score, float32 `[1]`.

- speech: one waveform, float32 `[1, max_samples]` at the training sample
  rate, zero padded (exact zeros after the audio are cut off before
  framing, so the padding changes nothing), featurized in the model
  (`transcriber.piece_features`: log-mel, deltas, per-utterance
  normalization, the no-speech test). `max_samples` is the longest piece
  the long-form rules cut for `segment_seconds` (`pause_split`), by default
  the model's own segment length (`input_limits.segment_seconds`): the
  longest input the SavedModel decodes at once. A longer recording is split
  at pauses by `litert.litert_transcriber` with the same rules, so the `.tflite`
  decodes the SavedModel's pieces.
- text: ids, int32 `[1, max_input_tokens]`: the input encoder's ids with
  EOS appended, zero padded (`litert.text_model` appends and pads).

Quantization: "float32"; "float16" (weights stored as float16); "int8"
(dynamic range: int8 weights, float activations; no representative set).
"""

from __future__ import annotations

import os
import tempfile

import tensorflow as tf
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

from t2t_lite.data.audio_features import zero_non_finite
from t2t_lite.data.speech_features import num_frames
from t2t_lite.decoding.audio.input_limits import segment_seconds
from t2t_lite.decoding.audio.pause_split import max_piece_samples
from t2t_lite.decoding.audio.transcriber import piece_features
from t2t_lite.decoding.checkpoints.run_decode_config import decode_config_for_run
from t2t_lite.decoding.checkpoints.trained_model import TrainedRun
from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.decoding.run_config import RunConfig
from t2t_lite.decoding.search.model_search import decode_cap, model_search
from t2t_lite.export_manifest import (
    TFLITE_MANIFEST,
    TFLITE_MODEL_FILE,
    VOCABULARY_FILE,
    TfliteManifest,
)
from t2t_lite.litert.vocabulary import Vocabulary
from t2t_lite.ngram.ngram_tables import has_ngram
from t2t_lite.serving.export import ExportError, restored_model
from t2t_lite.serving.tflite_stream_export import stream_files
from t2t_lite.streaming.graph import can_stream, check_exported_final

QUANTIZATIONS = ("float32", "float16", "int8")


def transcribe_function(
    model, run_config: RunConfig, decode_config: DecodeConfig, max_samples: int
):
    """The fixed-shape speech graph (a `tf.function` of one `[1, max_samples]`
    waveform -> `{"ids": [1, cap], "score": [1]}`); `decode_config` resolved."""
    cap = decode_cap(run_config, decode_config)
    frames = int(num_frames(tf.constant([max_samples]), run_config.features)[0])

    @tf.function(input_signature=[tf.TensorSpec([1, max_samples], tf.float32, name="waveform")])
    def transcribe(waveform):
        waveform = zero_non_finite(waveform)
        features, _ = piece_features(
            waveform, tf.constant([max_samples]), run_config, decode_config
        )
        inputs = features["inputs"]  # [1, <= frames, bins, channels]: static from here on
        inputs = tf.pad(inputs, [[0, 0], [0, frames - tf.shape(inputs)[1]], [0, 0], [0, 0]])
        features["inputs"] = tf.reshape(inputs, [1, frames, *inputs.shape[2:]])
        ids, scores = model_search(model, features, decode_config, cap, fixed_shapes=True)
        return {"ids": ids[:, 0], "score": scores[:, 0]}

    return transcribe


def translate_function(model, run_config: RunConfig, decode_config: DecodeConfig, max_tokens: int):
    """The fixed-shape text graph (a `tf.function` of one `[1, max_tokens]`
    row of ids, EOS included, zero padded -> `{"ids": [1, cap], "score": [1]}`)."""
    cap = decode_cap(run_config, decode_config)

    @tf.function(input_signature=[tf.TensorSpec([1, max_tokens], tf.int32, name="inputs")])
    def translate(inputs):
        ids, scores = model_search(model, {"inputs": inputs}, decode_config, cap, fixed_shapes=True)
        return {"ids": ids[:, 0], "score": scores[:, 0]}

    return translate


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


def _graph_and_input(
    model, run_config: RunConfig, decode_config: DecodeConfig, max_seconds: float | None
):
    """`(tf.function, its input's manifest fields)` for the model's modality."""
    if max_seconds is not None and not max_seconds > 0:
        raise ValueError(f"the TFLite model's max seconds must be above 0, got {max_seconds}.")
    if model.input_modality == "speech":
        seconds = max_seconds or segment_seconds(run_config, decode_config)
        sample_rate = run_config.features.sample_rate
        max_samples = max_piece_samples(sample_rate, seconds)
        function = transcribe_function(model, run_config, decode_config, max_samples)
        return function, {
            "input": "waveform",
            "max_samples": max_samples,
            "sample_rate": sample_rate,
            "segment_seconds": seconds,
        }
    if model.input_modality == "symbol":
        tokens = run_config.max_input_tokens
        function = translate_function(model, run_config, decode_config, tokens)
        return function, {"input": "ids", "max_input_tokens": tokens}
    raise ValueError("the TFLite export takes models with inputs (speech or text).")


def export_tflite(
    model,
    run_config: RunConfig,
    decode_config: DecodeConfig,
    target_encoder,
    directory: str,
    quantization: str = "float32",
    max_seconds: float | None = None,
) -> str:
    """Writes `model.tflite`, `vocabulary.json` and `tflite.json` to `directory`.

    Args:
        model: a trained `Transformer` with speech or text inputs.
        run_config: the run's `RunConfig` (audio front end, length limits).
        decode_config: `DecodeConfig` (the search in the model).
        target_encoder: the problem's targets `TextEncoder` (the vocabulary).
        directory: where the three files go (each written whole or not at all).
        quantization: one of `QUANTIZATIONS`.
        max_seconds: speech: the longest piece decoded at once; None: the
            model's segment length (`input_limits.segment_seconds`).

    Returns:
        The path of `model.tflite`.

    Raises:
        ValueError: a streaming model with decode hparams its streaming
            files cannot honour (`check_exported_final`), or a word n-gram LM.
    """
    decode_config = decode_config.for_model(model)
    if decode_config.lm_weight > 0 and has_ngram(decode_config.lm_dir):
        raise ValueError(
            f"decode hparam lm_dir={decode_config.lm_dir} is a word n-gram, whose table "
            "lookups have no TFLite builtin: fuse it in the SavedModel (--format=saved_model) "
            "or export the .tflite without it."
        )
    if decode_config.phoneme_weight > 0:
        raise ValueError(
            "decode hparam phoneme_weight looks words up in CMUdict, which has no TFLite "
            "builtin: score pronunciations in the SavedModel (--format=saved_model) or "
            "export the .tflite with phoneme_weight=0."
        )
    if can_stream(model):  # refused before the slow conversions
        check_exported_final(decode_config)
    function, input_fields = _graph_and_input(model, run_config, decode_config, max_seconds)
    blob = convert(function, quantization)
    files, stream = {TFLITE_MODEL_FILE: blob}, None
    if can_stream(model):  # the chunk-step and final models beside it
        stream_blobs, stream = stream_files(model, run_config, decode_config, convert, quantization)
        files.update(stream_blobs)
    manifest = TfliteManifest(
        quantization=quantization,
        decode_hparams=decode_config.values(),
        bytes=len(blob),
        stream=stream,
        **input_fields,
    )
    os.makedirs(directory, exist_ok=True)
    files.update({
        VOCABULARY_FILE: Vocabulary.from_encoder(target_encoder).to_json().encode("utf-8"),
        TFLITE_MANIFEST: manifest.to_json().encode("utf-8"),
    })  # fmt: skip
    mode = _default_file_mode()
    for name, content in files.items():  # each file whole or not at all
        with tempfile.NamedTemporaryFile(dir=directory, delete=False) as handle:
            handle.write(content)
        # NamedTemporaryFile makes its files 0600; readable as the
        # SavedModel's are, so a server running as another user can load them.
        os.chmod(handle.name, mode)
        os.replace(handle.name, os.path.join(directory, name))
    return os.path.join(directory, TFLITE_MODEL_FILE)


def _default_file_mode() -> int:
    """The mode `open()` gives a new file under this process's umask (0644 under 022)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def export_tflite_run(
    run: TrainedRun,
    export_dir: str,
    decode_config: DecodeConfig,
    *,
    quantization: str = "float32",
    max_seconds: float | None = None,
) -> str:
    """`export_tflite` of a trained run into `export_dir`.

    Raises:
        ExportError: the run cannot be exported this way (the message says why).
    """
    if run.problem.input_modality is None:
        raise ExportError(
            f"problem {run.problem.name} has no inputs (a language model); --format=tflite "
            "exports models with speech or text inputs."
        )
    try:
        check_quantization(quantization)
    except ValueError as error:
        raise ExportError(str(error)) from error
    model, checkpoint = restored_model(run)
    encoder = run.problem.feature_encoders(run.data_dir)["targets"]
    try:
        decode_config, _ = decode_config_for_run(decode_config, model, run.output_dir, checkpoint)
        return export_tflite(
            model, run.run_config, decode_config, encoder, export_dir, quantization, max_seconds
        )
    except ValueError as error:  # decode hparams the model cannot honour, an LM that cannot fuse
        raise ExportError(str(error)) from error
