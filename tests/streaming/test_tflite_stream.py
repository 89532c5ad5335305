"""The streaming `.tflite`: chunk by chunk in LiteRT, in a process where
`import tensorflow` fails, it gives the SavedModel's streamed finals and the
Python recognizer's partials, with state of fixed shapes; the runner command
streams a file into endpointed utterances as the server's session does."""

import json
import shutil
import sys
import textwrap

import numpy as np
import pytest
import soundfile

from t2t_lite.data.audio_io import read_audio
from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.export_manifest import FINAL_FILE, STATE_FILE, STEP_FILE, TFLITE_MANIFEST
from t2t_lite.server.speech_model import ExportedSpeechModel
from t2t_lite.serving.tflite_export import export_tflite
from t2t_lite.streaming.driver import stream_recording
from t2t_lite.streaming.recognizer import StreamingRecognizer
from tests.helpers import BLOCK_TENSORFLOW, load_script, run_command
from tests.serving.runs import STREAM_EXPORT_DECODE, quiet_room, tone_and_noise
from tests.serving.test_tflite_export import run_without_tensorflow

STREAM_RUNNER = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from t2t_lite.litert.stream import LiteRtStreamingRecognizer

    directory, waves, chunk = sys.argv[1], np.load(sys.argv[2], allow_pickle=True), 1280
    recognizer = LiteRtStreamingRecognizer(directory)
    initial = {name: value.shape for name, value in recognizer._state.items()}
    results = []
    for wave in waves:
        recognizer.reset()
        partials, fixed = [], True
        for start in range(0, wave.size, chunk):
            partials.append(recognizer.accept_waveform(wave[start : start + chunk]))
            shapes = {name: value.shape for name, value in recognizer._state.items()}
            fixed &= shapes == initial
        results.append({"partials": partials, "final": recognizer.finalize(), "fixed": fixed})
    recognizer.reset()
    try:  # an utterance longer than the export holds
        recognizer.accept_waveform(np.zeros(recognizer.max_utterance_samples + 1, np.float32))
        refused = ""
    except ValueError as error:
        refused = str(error)
    assert "tensorflow" not in sys.modules
    print(json.dumps({"results": results, "refused": refused}))
    """
)


@pytest.fixture(scope="module")
def stream_tflite(run, tmp_path_factory):
    """The run's `.tflite` export, float32 and int8, at the SavedModel's chunk
    and left context."""
    decode_config = DecodeConfig.parse(STREAM_EXPORT_DECODE)
    directories = {}
    for quantization in ("float32", "int8"):
        directory = tmp_path_factory.mktemp(f"stream_tflite_{quantization}")
        export_tflite(run.model, run.run_config, decode_config, run.encoders["targets"],
                      str(directory), quantization)  # fmt: skip
        directories[quantization] = directory
    return directories


def test_streaming_tflite_gives_the_savedmodels_finals_without_tensorflow(
    run, exported, stream_tflite, tmp_path, librispeech_flac
):
    directory = stream_tflite["float32"]
    metadata = json.loads((directory / TFLITE_MANIFEST).read_text())
    assert metadata["stream"]["chunk_samples"] == 1280  # 2 encoder frames of 40 ms
    for name in (STEP_FILE, FINAL_FILE, STATE_FILE):
        assert (directory / name).stat().st_size > 0
    clips = tone_and_noise()
    waves = [clips["hi"], read_audio(librispeech_flac), clips["no"], quiet_room(1.0)]

    # The SavedModel's three signatures, and the Python recognizer's
    # partials, at the same chunk and left context.
    script, savedmodel = load_script("long_stream.py"), ExportedSpeechModel(exported)
    assert savedmodel.chunk_seconds * savedmodel.sample_rate == 1280
    finals = [script.streamed_one_by_one(savedmodel, wave) for wave in waves]
    assert finals[0] == "hi" and finals[3] == ""
    recognizer = StreamingRecognizer(run.model, run.run_config, DecodeConfig.parse(
        STREAM_EXPORT_DECODE), run.encoders["targets"], 2)  # fmt: skip
    partials = []
    for wave in waves:
        recognizer.reset()
        partials.append(
            [recognizer.accept_waveform(wave[s : s + 1280]) for s in range(0, wave.size, 1280)]
        )
        assert recognizer.finalize() == finals[len(partials) - 1]

    waves_file = tmp_path / "waves.npy"
    np.save(waves_file, np.array(waves, dtype=object), allow_pickle=True)
    runner = tmp_path / "runner.py"
    runner.write_text(STREAM_RUNNER)
    for quantization, path in stream_tflite.items():
        got = run_without_tensorflow(runner, path, waves_file)
        assert [r["final"] for r in got["results"]] == finals, quantization
        assert all(r["fixed"] for r in got["results"])  # every state tensor keeps its shape
        assert "finalize() it before" in got["refused"]
        if quantization == "float32":
            assert [r["partials"] for r in got["results"]] == partials


def test_runner_streams_a_file_into_the_sessions_utterances_without_tensorflow(
    exported, stream_tflite, tmp_path
):
    """`t2t-lite-tflite-transcribe --stream`: partials on stderr as they come,
    the finals of the utterances the export's endpoint rules cut (a second
    of pause ends one) on stdout, as the server's session cuts the same
    recording through the SavedModel."""
    tone = tone_and_noise()["hi"]
    recording = np.concatenate([quiet_room(0.5), tone, quiet_room(1.5), tone, quiet_room(0.5)])
    wav = tmp_path / "two.wav"
    soundfile.write(wav, recording, 16000)
    expected = stream_recording(ExportedSpeechModel(exported), recording)
    assert expected == ["hi", "hi"]

    runner = shutil.which("t2t-lite-tflite-transcribe")
    for quantization, path in stream_tflite.items():
        done = run_command(sys.executable, "-c", BLOCK_TENSORFLOW, runner, path, wav, "--stream")
        assert done.returncode == 0, done.stderr[-3000:]
        assert done.stdout.splitlines() == [" ".join(expected)], quantization
        lines = [line for line in done.stderr.splitlines() if not line.startswith("INFO: ")]
        assert [line for line in lines if line.startswith("final: ")] == ["final: hi"] * 2
        partials = [line for line in lines if line.startswith("partial: ")]
        assert len(partials) >= 2  # one an utterance at least, as the tone is heard
        assert all("hi".startswith(line.removeprefix("partial: ")) for line in partials)

    refused = run_command(sys.executable, "-c", BLOCK_TENSORFLOW, runner, exported, wav,
                          "--stream")  # fmt: skip
    assert refused.returncode == 1 and "t2t-lite-tflite-transcribe: error:" in refused.stderr
