"""The export contract: manifests written and read back typed, exports from
before the version field still load, a newer manifest fails with one sentence."""

import json

import pytest

from t2t_lite.export_manifest import (
    MANIFEST_VERSION,
    SAVED_MODEL_MANIFEST,
    TFLITE_MANIFEST,
    ManifestError,
    SavedModelManifest,
    StreamManifest,
    TfliteManifest,
)
from t2t_lite.litert import cli as litert_cli

STREAM = StreamManifest(
    chunk_frames=2,
    chunk_samples=1280,
    chunk_seconds=0.08,
    frame_seconds=0.04,
    max_utterance_samples=480000,
    step_outputs=["blank_frames", "ids"],
    final_outputs=["ids", "score"],
    bytes={"stream_step.tflite": 10},
)
SPEECH = TfliteManifest(
    input="waveform",
    quantization="int8",
    decode_hparams={"beam_size": 4},
    bytes=1234,
    max_samples=160000,
    sample_rate=16000,
    segment_seconds=10.0,
    stream=STREAM,
)


def write_tflite_manifest(directory, values: dict):
    (directory / TFLITE_MANIFEST).write_text(json.dumps(values))


def test_a_tflite_manifest_reads_back_as_written(tmp_path):
    (tmp_path / TFLITE_MANIFEST).write_text(SPEECH.to_json())
    assert TfliteManifest.read(str(tmp_path)) == SPEECH
    values = json.loads((tmp_path / TFLITE_MANIFEST).read_text())
    assert values["manifest_version"] == MANIFEST_VERSION
    assert "max_input_tokens" not in values  # a field the model has not: absent, as before


def test_an_export_from_before_the_version_field_loads(tmp_path):
    """The keys an export wrote before the manifest was typed, no version."""
    old = json.loads(SPEECH.to_json())
    del old["manifest_version"]
    write_tflite_manifest(tmp_path, old)
    manifest = TfliteManifest.read(str(tmp_path))
    assert manifest.stream.chunk_samples == 1280 and manifest.sample_rate == 16000


def test_a_newer_manifest_fails_with_one_sentence_naming_the_version(tmp_path):
    write_tflite_manifest(tmp_path, {**json.loads(SPEECH.to_json()), "manifest_version": 7})
    with pytest.raises(ManifestError, match=r"version 7; this t2t-lite reads versions up to 1"):
        TfliteManifest.read(str(tmp_path))


@pytest.mark.parametrize(
    "values, message",
    [
        ({"quantization": "float32", "bytes": 1}, "lacks input"),
        ([1, 2], "not a JSON object"),
    ],
)
def test_a_broken_manifest_names_its_file(tmp_path, values, message):
    write_tflite_manifest(tmp_path, values)
    with pytest.raises(ManifestError, match=message) as error:
        TfliteManifest.read(str(tmp_path))
    assert str(tmp_path / TFLITE_MANIFEST) in str(error.value)


def test_a_saved_model_manifest_from_before_its_signatures_loads(tmp_path):
    """An early export's keys: no signatures, no version."""
    (tmp_path / "assets.extra").mkdir()
    early = {"problem": "spoken_synth", "decode_hparams": {"beam_size": 4}, "sample_rate": 16000}
    (tmp_path / "assets.extra" / SAVED_MODEL_MANIFEST).write_text(json.dumps(early))
    manifest = SavedModelManifest.read(str(tmp_path))
    assert manifest.sample_rate == 16000 and manifest.signatures == []
    assert manifest.stream_frame_seconds is None


def test_a_saved_model_manifest_is_optional_and_typed(tmp_path):
    assert SavedModelManifest.read(str(tmp_path)) is None  # not written by t2t-lite
    manifest = SavedModelManifest(
        problem="spoken_synth",
        model="transformer",
        checkpoint="/runs/asr/ckpt-10",
        decode_hparams={"beam_size": 4},
        max_decode_length=200,
        signatures=["serving_default"],
        sample_rate=16000,
        stream_chunk_frames=4,
        stream_frame_seconds=0.04,
    )
    (tmp_path / "assets.extra").mkdir()
    (tmp_path / "assets.extra" / SAVED_MODEL_MANIFEST).write_text(manifest.to_json())
    assert SavedModelManifest.read(str(tmp_path)) == manifest


def test_the_litert_runner_refuses_a_newer_export_in_one_line(tmp_path, capsys):
    write_tflite_manifest(tmp_path, {**json.loads(SPEECH.to_json()), "manifest_version": 2})
    assert litert_cli.main([str(tmp_path), "nothing.wav"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "export the model again" in err
