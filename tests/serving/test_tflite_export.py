"""The on-device export: a tiny trained speech model as a `.tflite` of builtin
ops only, run by LiteRT's interpreter in a process where TensorFlow cannot be
imported, gives the transcripts the SavedModel's graph gives in process."""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import soundfile

from t2t_lite import registry
from t2t_lite.data.audio_io import read_audio
from t2t_lite.decoding.decode import decode_cap, decode_hparams
from t2t_lite.decoding.transcriber import WaveformTranscriber
from t2t_lite.hparam import create_hparams
from t2t_lite.litert.model_files import METADATA_FILE, MODEL_FILE
from t2t_lite.litert.transcriber import LiteRtTranscriber
from t2t_lite.serving.tflite_export import export_tflite
from tests.helpers import BLOCK_TENSORFLOW, CTC_BEAM_DECODE, run_command
from tests.serving.test_export import (
    SPEECH_HPARAMS,
    make_run,
    pad_rows,
    speech_features,
    tone_and_noise,
)

SECONDS = 2.0
RUNNER = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from t2t_lite.litert.transcriber import LiteRtTranscriber

    transcriber = LiteRtTranscriber(sys.argv[1])
    waves = np.load(sys.argv[2])
    lengths = np.load(sys.argv[3])
    print(json.dumps([transcriber.transcribe(w[:n])[0] for w, n in zip(waves, lengths)]))
    assert "tensorflow" not in sys.modules
    """
)


@pytest.fixture(scope="module")
def speech_run(tmp_path_factory):
    clips = tone_and_noise()
    problem = registry.problem("librispeech")
    hparams = create_hparams("transformer_tiny", SPEECH_HPARAMS, problem)
    features = speech_features(list(clips.values()), hparams)
    encoder = problem.feature_encoders(None)["targets"]
    features["targets"] = pad_rows([np.array(encoder.encode(t) + [1]) for t in clips], np.int32)
    return make_run(tmp_path_factory.mktemp("run"), "librispeech", SPEECH_HPARAMS, features, 80)


def test_builtins_only_tflite_transcribes_as_the_savedmodel_graph_without_tensorflow(
    speech_run, tmp_path, librispeech_flac
):
    run, decode_hp = speech_run, decode_hparams(CTC_BEAM_DECODE)
    directory = tmp_path / "tflite"
    encoder = run.encoders["targets"]
    export_tflite(run.model, run.hparams, decode_hp, encoder, str(directory), max_seconds=SECONDS)
    metadata = json.loads((directory / METADATA_FILE).read_text())
    assert metadata["max_samples"] == int(SECONDS * 16000)
    assert metadata["decode_hparams"]["ctc_weight"] == 0.3

    clips = tone_and_noise()
    flac = read_audio(librispeech_flac)[: int(SECONDS * 16000)]
    waves = [clips["hi"], flac, clips["no"], np.zeros(0, np.float32), np.zeros(7, np.float32)]
    lengths = np.array([len(w) for w in waves], np.int32)
    padded = pad_rows(waves, np.float32)
    transcriber = WaveformTranscriber(
        run.model, run.hparams, decode_hp, decode_cap(run.hparams, decode_hp), encoder
    )
    expected = [beams[0] for beams, _ in transcriber(padded, lengths)]
    assert expected[0] and expected[3] == expected[4] == ""  # the tone was trained to "hi"

    np.save(tmp_path / "waves.npy", padded)
    np.save(tmp_path / "lengths.npy", lengths)
    runner = tmp_path / "runner.py"
    runner.write_text(RUNNER)
    command = [sys.executable, "-c", BLOCK_TENSORFLOW, str(runner), str(directory),
               str(tmp_path / "waves.npy"), str(tmp_path / "lengths.npy")]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == expected

    float_bytes = os.path.getsize(directory / MODEL_FILE)
    int8 = tmp_path / "int8"
    export_tflite(run.model, run.hparams, decode_hp, encoder, str(int8), "int8", SECONDS)
    assert 0 < os.path.getsize(int8 / MODEL_FILE) < float_bytes


def test_too_long_a_waveform_is_refused_with_the_limit(speech_run, tmp_path):
    run = speech_run
    export_tflite(run.model, run.hparams, decode_hparams(CTC_BEAM_DECODE),
                  run.encoders["targets"], str(tmp_path), max_seconds=0.5)  # fmt: skip
    with pytest.raises(ValueError, match=r"at most 8000 \(0.5 s\)"):
        LiteRtTranscriber(str(tmp_path)).transcribe(np.ones(8001, np.float32) * 0.1)


def test_exporter_and_runner_commands_transcribe_a_wav_without_tensorflow(
    speech_run, tmp_path, librispeech_flac
):
    run, export_dir = speech_run, tmp_path / "export"
    exported = run_command(
        "t2t-lite-exporter", f"--output_dir={run.output_dir}", f"--export_dir={export_dir}",
        "--format=tflite", "--tflite_quantization=int8", f"--tflite_max_seconds={SECONDS}",
        f"--decode_hparams={CTC_BEAM_DECODE}",
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr[-3000:]
    assert json.loads((export_dir / METADATA_FILE).read_text())["quantization"] == "int8"

    wave = read_audio(librispeech_flac)[: int(SECONDS * 16000)]
    wav = tmp_path / "clip.wav"
    soundfile.write(wav, wave, 16000)
    expected = LiteRtTranscriber(str(export_dir)).transcribe(wave)[0]
    runner = shutil.which("t2t-lite-tflite-transcribe")
    done = run_command(sys.executable, "-c", BLOCK_TENSORFLOW, runner, export_dir, wav, wav)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == [expected, expected]

    narrow = tmp_path / "8k.wav"
    soundfile.write(narrow, wave[::2], 8000)
    for bad, message in ((narrow, "8000 Hz, but the model takes 16000 Hz"),
                         (tmp_path / "missing.wav", "cannot read it as audio")):  # fmt: skip
        refused = run_command(sys.executable, "-c", BLOCK_TENSORFLOW, runner, export_dir, wav, bad)
        assert refused.returncode == 1 and refused.stdout == ""
        assert len(refused.stderr.strip().splitlines()) == 1 and message in refused.stderr
        assert str(bad) in refused.stderr


def test_exporter_refuses_a_bad_quantization_in_one_line(speech_run, tmp_path):
    refused = run_command(
        "t2t-lite-exporter", f"--output_dir={speech_run.output_dir}",
        f"--export_dir={tmp_path / 'x'}", "--format=tflite", "--tflite_quantization=int4",
    )  # fmt: skip
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    last = refused.stderr.strip().splitlines()[-1]  # after TensorFlow's start-up lines
    assert last.startswith("t2t-lite-exporter: error:") and "float32, float16, int8" in last
    assert not (tmp_path / "x").exists()
