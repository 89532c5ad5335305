"""Exports a trained run as a versioned SavedModel that TF Serving loads.

    run = TrainedRun.of("/runs/asr", registry.problem("librispeech"))
    path = export_run(run, "/exports/asr", DecodeConfig.parse("beam_size=4,alpha=0.6"))
    # -> "/exports/asr/1767225600", holding saved_model.pb + variables/

The model is rebuilt from the run's hparams.json the way the trainer builds
it, every model weight is restored from the checkpoint (the optimizer's
slots are not needed), and `ServingModule` wraps it with
featurization, tokenization, beam search and detokenization (see
serving_module.py for the signature).

The version directory is written under a hidden temporary name in
`export_dir` and renamed into place only when complete, so TF Serving (which
loads every numeric subdirectory) never sees a half-written version.
"""

from __future__ import annotations

import os
import time

import tensorflow as tf

from t2t_lite.data.problem import Problem
from t2t_lite.data.text_encoders import SentencePieceEncoder, TextEncoder
from t2t_lite.decoding.checkpoints import trained_model
from t2t_lite.decoding.checkpoints.run_decode_config import decode_config_for_run
from t2t_lite.decoding.checkpoints.trained_model import TrainedRun
from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.export_manifest import SAVED_MODEL_MANIFEST, SavedModelManifest
from t2t_lite.serving.serving_module import ServingModule


class ExportError(ValueError):
    """The run cannot be exported; the message says why and what to do."""


def check_exportable(problem: Problem, encoders: dict[str, TextEncoder]) -> None:
    """Refuses problems whose input cannot be processed in the graph.

    Every target vocabulary detokenizes in the graph (`TextEncoder.tf_decode`);
    text inputs must also tokenize there.

    Raises:
        ExportError: a language model (no inputs), or text inputs whose
            encoder has no graph ops (SentencePiece).
    """
    if problem.input_modality not in ("speech", "symbol"):
        raise ExportError(
            f"problem {problem.name} has no inputs (a language model); the exporter "
            "serves problems with speech or text inputs."
        )
    if problem.input_modality == "symbol" and not encoders["inputs"].supports_tf_encode:
        detail = (
            "a SentencePiece vocabulary, whose tokenizer needs tensorflow-text's custom ops "
            "inside the graph, and saved_model_cli and a stock TF Serving cannot load those"
            if isinstance(encoders["inputs"], SentencePieceEncoder)
            else f"the encoder {type(encoders['inputs']).__name__}, which has no in-graph tf_encode"
        )
        raise ExportError(
            f"problem {problem.name}'s text inputs use {detail}; export a problem with "
            "speech, byte or integer inputs instead."
        )


def _existing_versions(export_dir: str) -> list[int]:
    if not tf.io.gfile.isdir(export_dir):
        return []
    names = [name.strip("/") for name in tf.io.gfile.listdir(export_dir)]
    return sorted(int(name) for name in names if name.isdigit())


def next_version(export_dir: str) -> int:
    """A timestamp (seconds), or one more than the newest existing version."""
    return max([int(time.time())] + [v + 1 for v in _existing_versions(export_dir)])


def check_version(export_dir: str, version: int | None) -> int:
    """`version`, or `next_version`, if `export_dir/<version>` is free.

    Raises:
        ExportError: the version is negative or exists already.
    """
    if version is None:
        return next_version(export_dir)
    if version < 0:
        raise ExportError(f"--export_version must be >= 0, got {version}.")
    final = os.path.join(export_dir, str(version))
    if tf.io.gfile.exists(final):
        raise ExportError(
            f"{final} already exists; pass another --export_version or omit it to get a new one."
        )
    return version


def save_versioned(
    module: tf.Module,
    signatures: dict,
    export_dir: str,
    version: int | None = None,
    manifest: SavedModelManifest | None = None,
) -> str:
    """Saves `module` as `export_dir/<version>/`, atomically.

    Args:
        module: what to save.
        signatures: `{"serving_default": concrete_function}`.
        export_dir: the model's base directory (TF Serving's `model_base_path`).
        version: the version number; default `next_version(export_dir)`.
        manifest: the export's manifest, written to
            `assets.extra/t2t_lite_export.json` (which TF Serving ignores).

    Returns:
        The version directory.

    Raises:
        ExportError: `version` exists already or is negative.

    Example:
    >>> signatures = {"serving_default": module.signature()}  # doctest: +SKIP
    >>> save_versioned(module, signatures, "/exports/asr")  # doctest: +SKIP
    '/exports/asr/1767225600'
    """
    version = check_version(export_dir, version)
    final = os.path.join(export_dir, str(version))
    tf.io.gfile.makedirs(export_dir)
    # A dot name: TF Serving only loads numeric directories.
    temporary = os.path.join(export_dir, f".tmp-{version}-{os.getpid()}")
    try:
        tf.saved_model.save(module, temporary, signatures=signatures)
        if manifest is not None:
            extra = os.path.join(temporary, "assets.extra")
            tf.io.gfile.makedirs(extra)
            with tf.io.gfile.GFile(os.path.join(extra, SAVED_MODEL_MANIFEST), "w") as handle:
                handle.write(manifest.to_json() + "\n")
        tf.io.gfile.rename(temporary, final)
    finally:
        if tf.io.gfile.exists(temporary):
            tf.io.gfile.rmtree(temporary)
    return final


def restored_model(run: TrainedRun):
    """`run.restored_model()`, its failures as `ExportError` (the exporters' one error).

    Raises:
        ExportError: no checkpoint, or one that does not fit the model.
    """
    try:
        return run.restored_model()
    except (
        trained_model.CheckpointNotFoundError,
        trained_model.CheckpointMismatchError,
    ) as error:
        raise ExportError(str(error)) from error


def export_run(
    run: TrainedRun, export_dir: str, decode_config: DecodeConfig, version: int | None = None
) -> str:
    """Exports `run` as `export_dir/<version>/`.

    Args:
        run: the trained run.
        export_dir: where versions go.
        decode_config: `DecodeConfig`.
        version: the version number; default a timestamp.

    Returns:
        The written version directory.

    Raises:
        ExportError: the run cannot be exported (the message says why).
    """
    version = check_version(export_dir, version)  # before the slow part
    problem = run.problem
    encoders = problem.feature_encoders(run.data_dir)
    check_exportable(problem, encoders)
    model, checkpoint = restored_model(run)
    # Word confidences as calibrated for this checkpoint (decode_hparams records it).
    try:
        decode_config, note = decode_config_for_run(
            decode_config, model, run.output_dir, checkpoint
        )
        if note:
            print(note)
        module = ServingModule(model, problem, run.run_config, decode_config, encoders)
    except ValueError as error:  # a bad calibration, or decode hparams the model cannot honour
        raise ExportError(str(error)) from error
    signatures = module.signatures()
    sample_rate = None
    if problem.input_modality == "speech":  # what a server resamples requests to
        sample_rate = run.run_config.features.sample_rate
    limits = ("max_input_frames", "segment_seconds", "max_input_tokens")
    manifest = SavedModelManifest(
        problem=problem.name,
        model=run.model_name,
        checkpoint=checkpoint,
        decode_hparams=module.decode_settings,
        max_decode_length=module.max_decode_length,
        signatures=sorted(signatures),
        sample_rate=sample_rate,
        **{
            name: getattr(module, name)
            for name in (*limits, "stream_chunk_frames", "stream_frame_seconds")
            if hasattr(module, name)
        },
    )
    return save_versioned(module, signatures, export_dir, version, manifest)
