"""The SavedModel export: signature, saved_model_cli, loading without t2t-lite,
equality with in-process decoding, over-long and malformed requests, the CLI.

Two tiny runs are made the way the trainer makes them (hparams.json,
flags.json, a checkpoint of model + optimizer + step) after a few dozen
training steps on a fixed batch: a speech model on a synthesized tone and
noise burst (and, for equality checks, real LibriSpeech audio) and a text
model on algorithmic_reverse_binary40.
"""

from __future__ import annotations

import json
import os
import re
import sys
import textwrap

import numpy as np
import pytest
import soundfile
import tensorflow as tf

from t2t_lite import registry, run_dir
from t2t_lite.data.audio_io import read_audio
from t2t_lite.data.feature_config import FeatureConfig
from t2t_lite.data.speech_features import featurize, featurize_batch
from t2t_lite.data.text_encoders import SentencePieceEncoder, train_sentencepiece
from t2t_lite.decoding.audio.long_form import split_recordings
from t2t_lite.decoding.checkpoints import trained_model
from t2t_lite.decoding.decode_config import DEFAULT_CTC_WEIGHT, DecodeConfig
from t2t_lite.decoding.search.model_search import BatchDecoder
from t2t_lite.export_manifest import SAVED_MODEL_MANIFEST
from t2t_lite.serving import export
from t2t_lite.serving.serving_module import ServingModule
from tests.helpers import (
    CTC_BEAM_DECODE,
    DEGENERATE_WAVEFORMS,
    assert_quiet_output,
    full_lengths,
    run_command,
)
from tests.serving.runs import (
    SAMPLE_RATE,
    SPEECH_HPARAMS,
    Run,
    export_version,
    pad_rows,
    reference_decode,
    speech_features,
    text_features,
    tone_and_noise,
    train_speech_run,
)

# Real utterances of tests/conftest.py's librispeech_mini.
FLACS = [
    "test-clean/1089/134691/1089-134691-0000.flac",  # 2.09 s
    "train-clean-100/1034/121119/1034-121119-0046.flac",  # 2.46 s
    "test-other/2033/164915/2033-164915-0001.flac",  # 8.94 s: over-long
]


@pytest.fixture(scope="module")
def speech_export(speech_run, tmp_path_factory) -> Run:
    """speech_run, exported as version 1 (library call)."""
    return export_version(speech_run, str(tmp_path_factory.mktemp("speech_export")), 1)


@pytest.fixture(scope="module")
def fused_export(speech_run, no_lm_run, tmp_path_factory) -> Run:
    """speech_run with `no_lm_run` fused in (`fused_decode`), exported."""
    directory = str(tmp_path_factory.mktemp("fused_export"))
    return export_version(speech_run, directory, 1, fused_decode(no_lm_run.output_dir))


@pytest.fixture(scope="module")
def fused_ngram_export(speech_run, no_ngram_dir, tmp_path_factory) -> Run:
    """speech_run with the word n-gram `no_ngram_dir` fused in, exported."""
    directory = str(tmp_path_factory.mktemp("fused_ngram_export"))
    return export_version(speech_run, directory, 1, fused_decode(no_ngram_dir))


def fused_decode(lm_dir: str) -> str:
    """Decode hparams that fuse the LM in `lm_dir` strongly enough to change the tone's text."""
    return f"lm_dir={lm_dir},lm_weight=1.0"


@pytest.fixture(scope="module")
def text_export(text_run, tmp_path_factory) -> Run:
    """text_run, exported as version 3 (library call)."""
    return export_version(text_run, str(tmp_path_factory.mktemp("text_export")), 3)


def saved_model_cli(*args: str):
    result = run_command("saved_model_cli", *args)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def cli_outputs(stdout: str) -> dict[str, str]:
    """saved_model_cli run's printed results: output key -> printed value."""
    results, key = {}, None
    for line in stdout.splitlines():
        if line.startswith("Result for output key "):
            key = line.removeprefix("Result for output key ").rstrip(":")
            results[key] = ""
        elif key is not None:
            results[key] += line
    return results


# -- checkpoints and featurization ---------------------------------------------------


def test_export_restores_every_trained_weight(speech_run):
    """The rebuilt model gets the checkpoint's weights, all of them (a partial
    restore would still decode, just badly)."""
    hparams = run_dir.load_hparams(speech_run.output_dir)
    model = trained_model.build_model(speech_run.problem, hparams, "transformer", None)
    trained_model.restore_weights(model, trained_model.resolve_checkpoint(speech_run.output_dir))
    trained = {weight.path.split("/", 1)[1]: weight.numpy() for weight in speech_run.model.weights}
    restored = {weight.path.split("/", 1)[1]: weight.numpy() for weight in model.weights}
    assert trained.keys() == restored.keys()
    for path, value in trained.items():
        np.testing.assert_array_equal(restored[path], value, err_msg=path)


def test_checkpoint_of_another_model_is_refused(speech_run, text_run):
    hparams = run_dir.load_hparams(speech_run.output_dir)
    model = trained_model.build_model(speech_run.problem, hparams, "transformer", None)
    with pytest.raises(trained_model.CheckpointMismatchError, match="does not match"):
        trained_model.restore_weights(model, trained_model.resolve_checkpoint(text_run.output_dir))


def test_batch_featurization_equals_per_utterance_featurize(speech_run, flacs):
    waveforms = flacs[:2] + [tone_and_noise()["no"]]
    lengths = np.array([len(w) for w in waveforms], np.int32)
    config = FeatureConfig.from_hparams(speech_run.hparams)
    batch, frame_lengths = featurize_batch(pad_rows(waveforms, np.float32), lengths, config)
    for row, waveform in enumerate(waveforms):
        alone = featurize(waveform, config, training=False).numpy()
        assert frame_lengths[row] == len(alone)
        np.testing.assert_allclose(batch[row, : len(alone)], alone, atol=2e-4)
        assert not np.any(batch[row, len(alone) :])
    assert batch.shape[1] == max(frame_lengths)


# -- the SavedModel through saved_model_cli ------------------------------------------


def signature_tensors(show_output: str) -> dict[str, tuple[str, str]]:
    """`inputs['x']`/`outputs['y']` of serving_default -> (dtype, shape)."""
    block = show_output.split("signature_def['serving_default']:")[-1]
    block = block.split("signature_def[")[0]
    pattern = r"((?:in|out)puts\['\w+'\]) tensor_info:\s*dtype: (\w+)\s*shape: (.+)"
    return {name: (dtype, shape.strip()) for name, dtype, shape in re.findall(pattern, block)}


def test_saved_model_cli_shows_the_serving_signature(speech_export, text_export):
    speech = saved_model_cli("show", "--dir", speech_export.export_path, "--all").stdout
    assert signature_tensors(speech) == {
        "inputs['waveform']": ("DT_FLOAT", "(-1, -1)"),
        "inputs['waveform_length']": ("DT_INT32", "(-1)"),
        "outputs['outputs']": ("DT_STRING", "(-1)"),
        "outputs['scores']": ("DT_FLOAT", "(-1)"),
    }
    text = saved_model_cli("show", "--dir", text_export.export_path, "--all").stdout
    assert signature_tensors(text) == {
        "inputs['inputs']": ("DT_STRING", "(-1)"),
        "outputs['outputs']": ("DT_STRING", "(-1)"),
        "outputs['scores']": ("DT_FLOAT", "(-1)"),
    }


def test_saved_model_cli_shows_the_timed_signature(speech_export, text_export):
    shown = saved_model_cli(
        "show", "--dir", speech_export.export_path, "--tag_set", "serve",
        "--signature_def", "transcribe_timed",
    ).stdout  # fmt: skip
    for name in ("words", "starts", "ends", "confidences", "num_words", "outputs"):
        assert f"outputs['{name}']" in shown, shown
    text = saved_model_cli("show", "--dir", text_export.export_path, "--tag_set", "serve").stdout
    assert "transcribe_timed" not in text  # text models have no word times


def test_saved_model_cli_transcribes_a_wav_file(speech_export, tmp_path):
    tone = tone_and_noise()["hi"]
    wav = tmp_path / "tone.wav"
    soundfile.write(wav, tone, SAMPLE_RATE, subtype="PCM_16")
    waveform = read_audio(wav)
    np.save(tmp_path / "waveform.npy", waveform[None])
    np.save(tmp_path / "length.npy", np.array([len(waveform)], np.int32))
    result = saved_model_cli(
        "run",
        "--dir",
        speech_export.export_path,
        "--tag_set",
        "serve",
        "--signature_def",
        "serving_default",
        "--inputs",
        f"waveform={tmp_path / 'waveform.npy'};waveform_length={tmp_path / 'length.npy'}",
    )
    expected, _ = reference_decode(
        speech_export, speech_features([waveform], speech_export.hparams)
    )
    assert expected == ["hi"]  # 80 steps are enough to learn the tone's "transcript"
    assert cli_outputs(result.stdout)["outputs"] == "[b'hi']"


def test_saved_model_cli_decodes_a_sentence(text_export):
    result = saved_model_cli(
        "run",
        "--dir",
        text_export.export_path,
        "--tag_set",
        "serve",
        "--signature_def",
        "serving_default",
        "--input_exprs",
        'inputs=["1 1 0"]',
    )
    expected, _ = reference_decode(
        text_export, text_features(["1 1 0"], text_export.encoders["inputs"])
    )
    assert expected == ["0 1 1"]
    assert cli_outputs(result.stdout)["outputs"] == "[b'0 1 1']"


# -- loading without t2t-lite -----------------------------------------------------------

# Loads exports with t2t_lite and keras made unimportable, runs each request
# and writes outputs/scores (or the error) as JSON.
_LOADER = textwrap.dedent(
    """
    import json, sys
    sys.modules["t2t_lite"] = None  # `import t2t_lite` now raises ImportError
    sys.modules["keras"] = None
    import numpy as np
    import tensorflow as tf

    requests = np.load(sys.argv[1])
    plan = json.load(open(sys.argv[2]))
    results = {}
    def plain(value):
        if value.dtype == tf.string:
            decode = np.vectorize(lambda b: b.decode("utf-8"), otypes=[object])
            return decode(value.numpy()).tolist()
        return value.numpy().tolist()

    for name, (export_path, keys, signature) in plan.items():
        serve = tf.saved_model.load(export_path).signatures[signature]
        try:
            out = serve(**{key: tf.constant(requests[name + ":" + key]) for key in keys})
            results[name] = {key: plain(value) for key, value in out.items()}
        except Exception as error:
            results[name] = {"error": type(error).__name__, "message": str(error)[:2000]}
    json.dump(results, open(sys.argv[3], "w"))
    """
)


@pytest.fixture(scope="module")
def flacs(librispeech_mini) -> list[np.ndarray]:
    """The waveforms of FLACS."""
    return [read_audio(librispeech_mini / "LibriSpeech" / path) for path in FLACS]


@pytest.fixture(scope="module")
def served(
    speech_export, text_export, fused_export, fused_ngram_export, tmp_path_factory, flacs
) -> dict:
    """Every request below, answered by the exports in a process without t2t-lite."""
    directory = tmp_path_factory.mktemp("requests")
    clips = tone_and_noise()
    speech_batch = [clips["hi"], flacs[0], clips["no"], flacs[1]]
    long_flac = flacs[2]
    limit = 3 * SAMPLE_RATE  # max_input_seq_length 300 frames
    assert len(long_flac) > limit
    requests = {
        "speech:waveform": pad_rows(speech_batch, np.float32),
        "speech:waveform_length": np.array([len(w) for w in speech_batch], np.int32),
        # Phrase lists per request: one that matches (written as a user might),
        # one that starts to match and fails, and none at all.
        **{
            f"{name}:{key}": value
            for name, phrases in (
                ("biased", ["  NO "]),
                ("biased_nope", ["nope"]),
                ("biased_empty", []),
            )
            for key, value in (
                ("waveform", pad_rows(speech_batch, np.float32)),
                ("waveform_length", np.array([len(w) for w in speech_batch], np.int32)),
                ("phrases", np.array([p.encode() for p in phrases], dtype=bytes)),
                ("phrase_boosts", np.ones(len(phrases), np.float32)),
            )
        },  # fmt: skip
        "fused:waveform": pad_rows(speech_batch, np.float32),
        "fused:waveform_length": np.array([len(w) for w in speech_batch], np.int32),
        "fused_ngram:waveform": pad_rows(speech_batch, np.float32),
        "fused_ngram:waveform_length": np.array([len(w) for w in speech_batch], np.int32),
        "timed:waveform": pad_rows(speech_batch, np.float32),
        "timed:waveform_length": np.array([len(w) for w in speech_batch], np.int32),
        "timed_long:waveform": long_flac[None],
        "timed_long:waveform_length": np.array([len(long_flac)], np.int32),
        "long:waveform": long_flac[None],
        "long:waveform_length": np.array([len(long_flac)], np.int32),
        "cut:waveform": long_flac[None, :limit],
        "cut:waveform_length": np.array([limit], np.int32),
        # All zero, zero length, NaN, a hiss at -70 dBFS, then real speech.
        "silence:waveform": pad_rows(
            [np.zeros(8000), np.zeros(0), np.full(8000, np.nan), hiss(8000), flacs[0]],
            np.float32,
        ),
        "silence:waveform_length": np.array([8000, 0, 8000, 8000, len(flacs[0])], np.int32),
        # Degenerate requests: no samples at all (a client's empty buffer),
        # one sample, fewer samples than one frame, all NaN.
        **degenerate_requests(),
        "int_waveform:waveform": np.zeros([1, 1600], np.int32),
        "int_waveform:waveform_length": np.array([1600], np.int32),
        "rank1_waveform:waveform": np.zeros([1600], np.float32),
        "rank1_waveform:waveform_length": np.array([1600], np.int32),
        "text:inputs": np.array(["1 1 0", "0 1", "1 0 1 1 0 0 1", ""]),
        "long_text:inputs": np.array([" ".join(["1", "0", "0"] * 10)]),
        "bad_symbol:inputs": np.array(["1 2"]),
        "int_text:inputs": np.array([1, 2], np.int32),
        "rank2_text:inputs": np.array([["1 0"]]),
    }
    plan = {
        name: (
            run.export_path,
            sorted(k.split(":")[1] for k in requests if k.startswith(name + ":")),
            "transcribe_timed"
            if name.startswith("timed")
            else "transcribe_biased"
            if name.startswith("biased")
            else "serving_default",
        )  # fmt: skip
        for name, run in [
            ("timed", speech_export),
            ("timed_long", speech_export),
            ("speech", speech_export),
            ("fused", fused_export),
            ("fused_ngram", fused_ngram_export),
            ("biased", speech_export),
            ("biased_nope", speech_export),
            ("biased_empty", speech_export),
            ("long", speech_export),
            ("cut", speech_export),
            ("silence", speech_export),
            *((name, speech_export) for name in DEGENERATE_WAVEFORMS),
            ("int_waveform", speech_export),
            ("rank1_waveform", speech_export),
            ("text", text_export),
            ("long_text", text_export),
            ("bad_symbol", text_export),
            ("int_text", text_export),
            ("rank2_text", text_export),
        ]
    }
    np.savez(directory / "requests.npz", **requests)
    (directory / "plan.json").write_text(json.dumps(plan))
    (directory / "loader.py").write_text(_LOADER)
    result = run_command(
        sys.executable,
        str(directory / "loader.py"),
        str(directory / "requests.npz"),
        str(directory / "plan.json"),
        str(directory / "results.json"),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    results = json.loads((directory / "results.json").read_text())
    results["_waveforms"] = {"speech": speech_batch, "long": long_flac, "limit": limit}
    return results


def test_export_without_t2t_lite_equals_in_process_speech_decoding(speech_run, served):
    waveforms = served["_waveforms"]["speech"]
    texts, scores = reference_decode(speech_run, speech_features(waveforms, speech_run.hparams))
    assert "error" not in served["speech"], served["speech"]
    assert served["speech"]["outputs"] == texts
    np.testing.assert_allclose(served["speech"]["scores"], scores, rtol=1e-4, atol=1e-4)
    assert texts[0] == "hi" and texts[2] == "no"


@pytest.mark.parametrize(
    "name, lm_dir_of", [("fused", lambda r: r.getfixturevalue("no_lm_run").output_dir),
                        ("fused_ngram", lambda r: r.getfixturevalue("no_ngram_dir"))],
)  # fmt: skip
def test_an_export_with_a_fused_lm_decodes_as_the_decoder_fuses_it(
    speech_run, served, request, name, lm_dir_of
):
    """The LM's weights and graph are inside the SavedModel (served without
    t2t-lite), and its answers are the in-process fused search's: a trained
    LM's, and a word n-gram's tables."""
    lm_dir = lm_dir_of(request)
    waveforms = served["_waveforms"]["speech"]
    features = speech_features(waveforms, speech_run.hparams)
    hparams = f"{CTC_BEAM_DECODE},{fused_decode(lm_dir)}"
    texts, scores = reference_decode(speech_run, features, hparams)
    assert "error" not in served[name], served[name]
    assert served[name]["outputs"] == texts
    np.testing.assert_allclose(served[name]["scores"], scores, rtol=1e-4, atol=1e-4)
    assert texts[0] == "no" != served["speech"]["outputs"][0]  # the LM changed the tone's text
    export = request.getfixturevalue(f"{name}_export")
    metadata_path = os.path.join(export.export_path, "assets.extra", SAVED_MODEL_MANIFEST)
    with open(metadata_path) as handle:
        metadata = json.load(handle)
    assert metadata["decode_hparams"]["lm_weight"] == 1.0


def test_the_biased_signature_takes_a_phrase_list_per_request(served):
    """Listing "no" turns the tone's close call (the tiny model hears "hi"),
    and the words are timed as `transcribe_timed` times them; a list that
    never matches whole ("nope"), or none, changes nothing."""
    plain = served["timed"]
    for name in ("biased", "biased_nope", "biased_empty"):
        assert "error" not in served[name], served[name]
    assert plain["outputs"][0] == "hi" and plain["outputs"][2] == "no"  # tone, noise
    assert served["biased"]["outputs"][0] == served["biased"]["outputs"][2] == "no"
    assert served["biased"]["words"][0][0] == "no"
    for name in ("biased_nope", "biased_empty"):
        assert served[name]["outputs"] == plain["outputs"]
        np.testing.assert_allclose(served[name]["scores"], plain["scores"], atol=1e-4)
        assert served[name]["starts"] == plain["starts"]


def test_timed_signature_gives_the_transcripts_words_in_order(served):
    """`transcribe_timed`, run without t2t-lite: the same text as
    serving_default, split into words with times inside each recording."""
    waveforms = served["_waveforms"]
    for name, reference, durations in [
        ("timed", "speech", [len(w) / SAMPLE_RATE for w in waveforms["speech"]]),
        ("timed_long", "long", [len(waveforms["long"]) / SAMPLE_RATE]),
    ]:
        timed = served[name]
        assert "error" not in timed, timed
        assert timed["outputs"] == served[reference]["outputs"]
        for row, text in enumerate(timed["outputs"]):
            count = timed["num_words"][row]
            assert timed["words"][row][:count] == text.split()
            assert all(word == "" for word in timed["words"][row][count:])
            starts, ends = timed["starts"][row][:count], timed["ends"][row][:count]
            aligned = [(s, e) for s, e in zip(starts, ends, strict=True) if s >= 0]
            assert all(s < e <= durations[row] + 0.2 for s, e in aligned)
            assert [s for s, _ in aligned] == sorted(s for s, _ in aligned)
    hi = served["timed"]
    assert hi["words"][0][: hi["num_words"][0]] == ["hi"] and hi["confidences"][0][0] > 0


def hiss(samples: int) -> np.ndarray:
    """White noise at an RMS level of -70 dBFS (below the -60 silence default)."""
    noise = np.random.default_rng(1).normal(size=samples)
    return noise / np.sqrt(np.mean(noise**2)) * 10 ** (-70 / 20)


def test_silence_empty_and_nan_waveforms_return_empty_text(speech_run, served, flacs):
    result = served["silence"]
    assert "error" not in result, result
    assert result["outputs"][:4] == ["", "", "", ""]
    assert result["scores"][:4] == [0.0, 0.0, 0.0, 0.0]
    speech = flacs[0]
    texts, _ = reference_decode(speech_run, speech_features([speech], speech_run.hparams))
    assert result["outputs"][4] == texts[0]  # a real utterance beside them is decoded


def degenerate_requests() -> dict:
    requests = {}
    for name, waveform in DEGENERATE_WAVEFORMS.items():
        requests[name + ":waveform"] = waveform.astype(np.float32)
        requests[name + ":waveform_length"] = full_lengths(waveform)
    return requests


@pytest.mark.parametrize("name", sorted(DEGENERATE_WAVEFORMS))
def test_degenerate_requests_return_empty_text_per_row(served, name):
    result = served[name]
    assert "error" not in result, result
    assert result["outputs"] == [""] * len(DEGENERATE_WAVEFORMS[name])
    assert result["scores"] == [0.0] * len(DEGENERATE_WAVEFORMS[name])


@pytest.mark.parametrize(
    "overrides, speech_weight, text_weight",
    [("", DEFAULT_CTC_WEIGHT, 0.0), ("ctc_weight=0", 0.0, 0.0), ("ctc_weight=0.5", 0.5, None)],
)
def test_ctc_weight_defaults_to_the_models_head(
    speech_run, text_run, overrides, speech_weight, text_weight
):
    """Joint decoding for a model with a CTC head, attention only without; an
    explicit value wins (and one the model cannot honour is refused)."""
    decode_config = DecodeConfig.parse(overrides)
    for run, weight in ((speech_run, speech_weight), (text_run, text_weight)):
        if weight is None:
            with pytest.raises(ValueError, match="needs a model with a CTC head"):
                BatchDecoder(run.model, run.run_config, decode_config)
            continue
        assert (
            BatchDecoder(run.model, run.run_config, decode_config).decode_config.ctc_weight
            == weight
        )
        module = ServingModule(run.model, run.problem, run.run_config, decode_config, run.encoders)
        assert module.decode_settings["ctc_weight"] == weight


def test_export_without_t2t_lite_equals_in_process_text_decoding(text_run, served):
    sentences = ["1 1 0", "0 1", "1 0 1 1 0 0 1", ""]
    texts, scores = reference_decode(
        text_run, text_features(sentences, text_run.encoders["inputs"])
    )
    assert "error" not in served["text"], served["text"]
    assert served["text"]["outputs"] == texts
    np.testing.assert_allclose(served["text"]["scores"], scores, rtol=1e-4, atol=1e-4)
    assert texts[:2] == ["0 1 1", "1 0"]


def test_wrong_dtype_or_rank_is_rejected_by_the_signature(served):
    for name, expected in [
        ("int_waveform", "expected to be a float tensor but is a int32 tensor"),
        ("int_text", "expected to be a string tensor but is a int32 tensor"),
        ("rank1_waveform", "is not compatible with expected shape [?,?]"),
        ("rank2_text", "is not compatible with expected shape [?]"),
    ]:
        result = served[name]
        assert result.get("error") == "InvalidArgumentError", (name, result)
        assert expected in result["message"], (name, result)


def test_bad_symbol_fails_the_request_with_a_clear_message(served):
    result = served["bad_symbol"]
    assert result.get("error") == "InvalidArgumentError", result
    assert "inputs must be space-separated symbols 0..1" in result["message"]


def test_over_long_waveform_is_split_into_pieces_and_transcribed_whole(speech_run, served):
    """Nothing is cut: a recording over the training limit (3 s here) is split
    (at its quietest points: this FLAC has no long pause), each piece is
    decoded as the decoder decodes an utterance, and the texts are joined."""
    assert "error" not in served["long"], served["long"]
    recording = served["_waveforms"]["long"]
    pieces, lengths, rows = split_recordings(recording[None], [len(recording)], SAMPLE_RATE, 3.0)
    assert len(rows) >= 3 and max(lengths) <= 3 * SAMPLE_RATE and sum(lengths) == len(recording)
    waveforms = [pieces[i, :n].numpy() for i, n in enumerate(lengths.numpy())]
    texts, scores = reference_decode(speech_run, speech_features(waveforms, speech_run.hparams))
    assert served["long"]["outputs"] == [" ".join(t for t in texts if t)]
    np.testing.assert_allclose(served["long"]["scores"], [scores.sum()], rtol=1e-4, atol=1e-4)
    assert served["cut"]["outputs"] != served["long"]["outputs"]  # the end is not dropped


def test_over_long_text_fails_the_request_naming_the_limit(served):
    result = served["long_text"]
    assert result.get("error") == "InvalidArgumentError", result
    assert "more tokens than this model takes (12 with EOS" in result["message"]


# -- the library's refusals and the versioned layout -----------------------------------


def test_versions_are_atomic_increasing_and_never_overwritten(text_export):
    export_dir = os.path.dirname(text_export.export_path)
    assert sorted(os.listdir(export_dir)) == ["3"]  # no temporary left behind
    assert os.path.exists(os.path.join(text_export.export_path, "saved_model.pb"))
    metadata = json.loads(
        open(os.path.join(text_export.export_path, "assets.extra", SAVED_MODEL_MANIFEST)).read()
    )
    assert metadata["max_decode_length"] == 24 and metadata["max_input_tokens"] == 12
    assert export.next_version(export_dir) > 3
    with pytest.raises(export.ExportError, match="already exists"):
        export.check_version(export_dir, 3)


def test_sentencepiece_inputs_are_refused_in_one_sentence():
    encoder = SentencePieceEncoder.__new__(SentencePieceEncoder)  # no model file needed
    problem = registry.problem("translate_ende_wmt32k")
    with pytest.raises(export.ExportError) as error:
        export.check_exportable(problem, {"inputs": encoder, "targets": encoder})
    message = str(error.value)
    assert "SentencePiece" in message and "tensorflow-text" in message
    assert message.count(". ") == 0 and message.endswith(".")


def test_sentencepiece_targets_export_and_detokenize_in_the_graph(tmp_path, no_ngram_dir):
    """A speech run with SentencePiece targets exports; its SavedModel, loaded
    without the vocabulary file, gives the decoder's transcripts, with the
    byte-counted word n-gram fused too (it spells the pieces), and takes a
    phrase list (phrases are bytes; the pieces spell them)."""
    problem = registry.problem("librispeech_sentencepiece")
    data_dir = str(tmp_path / "data")
    vocab = problem.vocab_path(data_dir, problem.vocab_filename)
    train_sentencepiece(["hi", "no", "hi no", "no hi"] * 20, vocab, problem.vocab_size)
    run = train_speech_run(tmp_path / "run", problem_name=problem.name, data_dir=data_dir)
    trained = trained_model.TrainedRun.of(run.output_dir, problem, data_dir=data_dir)
    fused = f"{CTC_BEAM_DECODE},lm_dir={no_ngram_dir},lm_weight=1.0"  # "no" 3x, "hi" once
    paths = {
        hparams: export.export_run(trained, str(tmp_path / name), DecodeConfig.parse(hparams))
        for name, hparams in [("export", CTC_BEAM_DECODE), ("fused", fused)]
    }
    os.remove(vocab)  # the graph holds the pieces' text itself

    waveforms = list(tone_and_noise().values())
    features = speech_features(waveforms, run.hparams)
    for hparams, expected in [(CTC_BEAM_DECODE, ["hi", "no"]), (fused, ["no", "no"])]:
        texts, scores = reference_decode(run, features, hparams)
        outputs = tf.saved_model.load(paths[hparams]).signatures["serving_default"](
            waveform=tf.constant(pad_rows(waveforms, np.float32)),
            waveform_length=tf.constant([len(w) for w in waveforms], tf.int32),
        )
        assert texts == expected  # pieces with a word's space before them: stripped
        assert [text.decode() for text in outputs["outputs"].numpy()] == texts
        np.testing.assert_allclose(outputs["scores"].numpy(), scores, rtol=1e-4, atol=1e-4)

    biased = tf.saved_model.load(paths[CTC_BEAM_DECODE]).signatures["transcribe_biased"]
    plain_texts, plain_scores = reference_decode(run, features, CTC_BEAM_DECODE)
    for phrase, expected in [("no", ["no", "no"]), ("nope", plain_texts)]:
        outputs = biased(
            waveform=tf.constant(pad_rows(waveforms, np.float32)),
            waveform_length=tf.constant([len(w) for w in waveforms], tf.int32),
            phrases=tf.constant([phrase]),
            phrase_boosts=tf.constant([5.0]),
        )
        assert [text.decode() for text in outputs["outputs"].numpy()] == expected, phrase
    np.testing.assert_allclose(outputs["scores"].numpy(), plain_scores, rtol=1e-4, atol=1e-4)


def test_the_pronunciation_rescorer_runs_in_the_savedmodel(tmp_path):
    """A run with a phoneme CTC head on its last layer exports with
    `phoneme_weight`: the SavedModel holds CMUdict's table and gives the
    decoder's rescored transcripts and scores (which the weight changes)."""
    run = train_speech_run(tmp_path / "run", f"{SPEECH_HPARAMS},phoneme_ctc_weight=0.3", steps=40)
    trained = trained_model.TrainedRun.of(run.output_dir, run.problem)
    rescored = f"{CTC_BEAM_DECODE},phoneme_weight=0.5"
    path = export.export_run(trained, str(tmp_path / "export"), DecodeConfig.parse(rescored))

    waveforms = list(tone_and_noise().values())
    features = speech_features(waveforms, run.hparams)
    texts, scores = reference_decode(run, features, rescored)
    _, plain_scores = reference_decode(run, features, CTC_BEAM_DECODE)
    assert np.all(np.abs(scores - plain_scores) > 1e-3)  # each best beam's sounds were scored
    outputs = tf.saved_model.load(path).signatures["serving_default"](
        waveform=tf.constant(pad_rows(waveforms, np.float32)),
        waveform_length=tf.constant([len(w) for w in waveforms], tf.int32),
    )
    assert [text.decode() for text in outputs["outputs"].numpy()] == texts
    np.testing.assert_allclose(outputs["scores"].numpy(), scores, rtol=1e-4, atol=1e-4)


# -- the command line -----------------------------------------------------------------


def exporter(*args: str):
    return run_command("t2t-lite-exporter", *args)


def test_cli_writes_a_version_directory(text_run, tmp_path):
    export_dir = tmp_path / "exports"
    result = exporter(
        f"--output_dir={text_run.output_dir}",
        f"--export_dir={export_dir}",
        "--decode_hparams=beam_size=1",
        "--export_version=5",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert_quiet_output(result)
    assert result.stdout.strip() == str(export_dir / "5")
    assert sorted(os.listdir(export_dir)) == ["5"]
    metadata = json.loads((export_dir / "5" / "assets.extra" / SAVED_MODEL_MANIFEST).read_text())
    assert metadata["problem"] == "algorithmic_reverse_binary40"  # from flags.json
    assert metadata["decode_hparams"]["beam_size"] == 1
    assert metadata["decode_hparams"]["ctc_weight"] == 0.0  # no CTC head: attention only
    assert metadata["checkpoint"].endswith("ckpt-60")


@pytest.mark.parametrize(
    "case, expected",
    [
        ("missing_output_dir", "does not exist; pass a t2t-lite-trainer output directory."),
        ("no_checkpoint", "holds no checkpoint"),
        ("no_export_dir", "--export_dir is required."),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_1(case, expected, text_run, tmp_path):
    output_dir = tmp_path / "run"
    if case == "no_checkpoint":
        output_dir.mkdir()
        for name in (run_dir.HPARAMS_FILE, run_dir.FLAGS_FILE):
            (output_dir / name).write_text(open(os.path.join(text_run.output_dir, name)).read())
    args = [f"--output_dir={output_dir}"]
    if case != "no_export_dir":
        args.append(f"--export_dir={tmp_path / 'exports'}")
    result = exporter(*args)
    assert result.returncode == 1, result.stderr[-3000:]
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("t2t-lite-exporter: error: ") and expected in last
    assert "Traceback" not in result.stderr
    assert not os.path.exists(tmp_path / "exports")
