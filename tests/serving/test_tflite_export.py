"""The on-device export: tiny trained speech and text models as `.tflite`s of
builtin ops only, run by LiteRT's interpreter in a process where TensorFlow
cannot be imported, give what the SavedModel's graph gives in process:
speech transcripts (a long recording split at pauses by the same rules)
and text ids."""

import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import soundfile
import tensorflow as tf

from t2t_lite.data.audio_io import read_audio
from t2t_lite.data.reserved_ids import ids_before_eos
from t2t_lite.decoding.audio.pause_split import max_piece_samples
from t2t_lite.decoding.audio.transcriber import WaveformTranscriber
from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.decoding.search.model_search import BatchDecoder, decode_cap
from t2t_lite.export_manifest import TFLITE_MANIFEST, TFLITE_MODEL_FILE
from t2t_lite.litert.litert_transcriber import LiteRtTranscriber
from t2t_lite.serving.tflite_export import export_tflite
from tests.helpers import (
    BEAM_DECODE,
    BLOCK_TENSORFLOW,
    CTC_BEAM_DECODE,
    assert_quiet_output,
    run_command,
)
from tests.serving.runs import pad_rows, text_features, tone_and_noise

SECONDS = 2.0  # the exports' longest piece where a test sets it
LONG_FLAC = "LibriSpeech/test-other/2033/164915/2033-164915-0001.flac"  # 8.94 s
SPEECH_RUNNER = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from t2t_lite.litert.litert_transcriber import LiteRtTranscriber

    transcriber = LiteRtTranscriber(sys.argv[1])
    waves = np.load(sys.argv[2])
    lengths = np.load(sys.argv[3])
    print(json.dumps([transcriber.transcribe(w[:n]).text for w, n in zip(waves, lengths)]))
    assert "tensorflow" not in sys.modules
    """
)
TEXT_RUNNER = textwrap.dedent(
    """
    import json, sys
    from t2t_lite.litert.text_model import LiteRtTextModel

    model = LiteRtTextModel(sys.argv[1])
    rows = json.loads(sys.argv[2])
    print(json.dumps([[int(i) for i in model.ids(row)[0]] for row in rows]))
    assert "tensorflow" not in sys.modules
    """
)


def run_without_tensorflow(script_path, *args) -> list:
    """Runs a script where `import tensorflow` fails; its last line, as JSON."""
    command = [sys.executable, "-c", BLOCK_TENSORFLOW, str(script_path), *map(str, args)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_builtins_only_tflite_transcribes_as_the_savedmodel_graph_without_tensorflow(
    speech_run, tmp_path, librispeech_flac, librispeech_mini
):
    """At the default length (the model's 3 s segment) the `.tflite` decodes
    what the SavedModel's graph decodes, an 8.9 s recording split at the
    same pauses included."""
    run, decode_config = speech_run, DecodeConfig.parse(CTC_BEAM_DECODE)
    directory = tmp_path / "tflite"
    encoder = run.encoders["targets"]
    export_tflite(run.model, run.run_config, decode_config, encoder, str(directory))
    metadata = json.loads((directory / TFLITE_MANIFEST).read_text())
    assert metadata["segment_seconds"] == 3.0  # max_input_seq_length=300 frames
    assert metadata["max_samples"] == max_piece_samples(16000, 3.0)
    assert metadata["decode_hparams"]["ctc_weight"] == 0.3

    clips = tone_and_noise()
    long = read_audio(str(librispeech_mini / LONG_FLAC))
    waves = [clips["hi"], read_audio(librispeech_flac), long, clips["no"],
             np.zeros(0, np.float32), np.zeros(7, np.float32)]  # fmt: skip
    lengths = np.array([len(w) for w in waves], np.int32)
    padded = pad_rows(waves, np.float32)
    transcriber = WaveformTranscriber(
        run.model, run.run_config, decode_config, decode_cap(run.run_config, decode_config), encoder
    )
    expected = [result.text for result in transcriber(padded, lengths)]
    assert expected[0] and expected[4] == expected[5] == ""  # the tone was trained to "hi"
    assert len(LiteRtTranscriber(str(directory)).pieces(long)) >= 3

    np.save(tmp_path / "waves.npy", padded)
    np.save(tmp_path / "lengths.npy", lengths)
    runner = tmp_path / "runner.py"
    runner.write_text(SPEECH_RUNNER)
    got = run_without_tensorflow(
        runner, directory, tmp_path / "waves.npy", tmp_path / "lengths.npy"
    )
    assert got == expected

    float_bytes = os.path.getsize(directory / TFLITE_MODEL_FILE)
    int8 = tmp_path / "int8"
    export_tflite(run.model, run.run_config, decode_config, encoder, str(int8), "int8", SECONDS)
    assert 0 < os.path.getsize(int8 / TFLITE_MODEL_FILE) < float_bytes


def test_text_tflite_gives_the_savedmodel_searchs_ids_without_tensorflow(text_run, tmp_path):
    run, decode_config = text_run, DecodeConfig.parse(BEAM_DECODE)
    encoders = run.encoders
    export_tflite(run.model, run.run_config, decode_config, encoders["targets"], str(tmp_path))
    metadata = json.loads((tmp_path / TFLITE_MANIFEST).read_text())
    assert metadata["input"] == "ids" and metadata["max_input_tokens"] == 12

    sentences = ["1 1 0", "0 1", "1 0 0 1 1 0 1", ""]
    features = text_features(sentences, encoders["inputs"])
    ids, _ = BatchDecoder(run.model, run.run_config, decode_config)(
        {"inputs": tf.constant(features["inputs"])}
    )
    expected = [ids_before_eos(row[0]) for row in ids]
    assert encoders["targets"].decode(expected[0]) == "0 1 1"  # trained to reverse

    runner = tmp_path / "runner.py"
    runner.write_text(TEXT_RUNNER)
    rows = json.dumps([encoders["inputs"].encode(s) for s in sentences])
    got = run_without_tensorflow(runner, tmp_path, rows)
    assert [ids_before_eos(row) for row in got] == expected


def test_one_piece_too_long_is_refused_and_a_recording_is_split(speech_run, tmp_path):
    run = speech_run
    export_tflite(run.model, run.run_config, DecodeConfig.parse(CTC_BEAM_DECODE),
                  run.encoders["targets"], str(tmp_path), max_seconds=0.5)  # fmt: skip
    transcriber = LiteRtTranscriber(str(tmp_path))
    with pytest.raises(ValueError, match=r"at most 8159 \(0.5099.* s\) at once"):
        transcriber.ids(np.ones(8160, np.float32) * 0.1)
    long = tone_and_noise()["hi"][:12000]
    lengths = [len(piece) for piece in transcriber.pieces(long)]
    assert len(lengths) == 2 and sum(lengths) == 12000 and max(lengths) <= 8159
    assert isinstance(transcriber.transcribe(long).text, str)


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
    assert_quiet_output(exported)
    assert json.loads((export_dir / TFLITE_MANIFEST).read_text())["quantization"] == "int8"

    wave = read_audio(librispeech_flac)  # 2.09 s: longer than the model's 2 s, split
    assert len(LiteRtTranscriber(str(export_dir)).pieces(wave)) == 2
    wav = tmp_path / "clip.wav"
    soundfile.write(wav, wave, 16000)
    expected = LiteRtTranscriber(str(export_dir)).transcribe(wave).text
    runner = shutil.which("t2t-lite-tflite-transcribe")
    done = run_command(sys.executable, "-c", BLOCK_TENSORFLOW, runner, export_dir, wav, wav)
    assert done.returncode == 0, done.stderr[-3000:]
    assert_quiet_output(done)
    assert done.stdout.splitlines() == [expected, expected]

    # Files as the decoder reads them: 44.1 kHz stereo gives the 16 kHz mono
    # recording's transcript.
    stereo = tmp_path / "44k_stereo.wav"
    soundfile.write(stereo, np.stack([read_audio(wav, 44100)] * 2, axis=1), 44100)
    assert LiteRtTranscriber(str(export_dir)).transcribe(read_audio(stereo)).text == expected
    # A bad file is one line on stderr and a blank line; the rest are transcribed.
    missing = tmp_path / "missing.wav"
    mixed = run_command(
        sys.executable, "-c", BLOCK_TENSORFLOW, runner, export_dir, stereo, missing, wav
    )
    assert mixed.returncode == 1
    assert mixed.stdout.splitlines() == [expected, "", expected]
    # LiteRT's own "INFO: Created TensorFlow Lite XNNPACK delegate" aside.
    errors = [line for line in mixed.stderr.splitlines() if not line.startswith("INFO: ")]
    assert len(errors) == 2 and str(missing) in errors[0]
    assert "1 of 3 files could not be read" in errors[1]
    written = [export_dir / name for name in os.listdir(export_dir)]
    umask = os.umask(0)
    os.umask(umask)
    assert {stat.S_IMODE(os.stat(path).st_mode) for path in written} == {0o666 & ~umask}


def test_exporter_refuses_a_bad_quantization_in_one_line(speech_run, tmp_path):
    refused = run_command(
        "t2t-lite-exporter", f"--output_dir={speech_run.output_dir}",
        f"--export_dir={tmp_path / 'x'}", "--format=tflite", "--tflite_quantization=int4",
    )  # fmt: skip
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    last = refused.stderr.strip().splitlines()[-1]  # after TensorFlow's start-up lines
    assert last.startswith("t2t-lite-exporter: error:") and "float32, float16, int8" in last
    assert not (tmp_path / "x").exists()


def test_a_word_ngram_lm_is_refused_before_converting(speech_run, no_ngram_dir, tmp_path):
    """Its table lookups have no TFLite builtin: one sentence, and no files."""
    run = speech_run
    fused = DecodeConfig.parse(f"{CTC_BEAM_DECODE},lm_dir={no_ngram_dir},lm_weight=0.5")
    with pytest.raises(ValueError, match=r"is a word n-gram, whose table lookups have no TFLite"):
        export_tflite(run.model, run.run_config, fused, run.encoders["targets"], str(tmp_path))
    assert not list(tmp_path.iterdir())
