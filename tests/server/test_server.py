"""t2t-lite-serve as a user runs it: the command serving a real export on a
port of 127.0.0.1, asked over HTTP in every way the protocol allows, with
bad requests between good ones, and concurrent requests batched.

The unit rules (length groups, PCM parsing, the batcher, the metrics text)
are tested beside, without a model.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import io
import json
import os
import socket

import numpy as np
import pytest
import soundfile

from t2t_lite.data.audio_io import resample, to_int16_pcm
from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.export_manifest import MANIFEST_VERSION, SAVED_MODEL_MANIFEST
from t2t_lite.litert.litert_transcriber import LiteRtTranscriber
from t2t_lite.server.audio_request import BadAudio, parse_content_type, request_audio
from t2t_lite.server.batcher import DynamicBatcher, length_groups
from t2t_lite.server.request_hotwords import MAX_HOTWORDS, BadHotwords, request_phrases
from t2t_lite.server.server_metrics import ServerMetrics
from t2t_lite.server.speech_model import ExportedSpeechModel
from t2t_lite.serving.tflite_export import export_tflite
from tests.helpers import CTC_BEAM_DECODE, run_command
from tests.server.served import metric, request, serving
from tests.serving.runs import SAMPLE_RATE, export_version, tone_and_noise

MAX_SECONDS = 6.0  # the served limit, so a 413 is cheap to provoke
NOISE_BYTES = np.random.default_rng(3).integers(0, 256, 5000, np.uint8).tobytes()


# -- without a model ---------------------------------------------------------------


def test_length_groups_keep_like_lengths_together():
    groups = length_groups([100, 900, 120, 1000, 110, 95], max_batch=3, max_length_ratio=2.0)
    assert groups == [[5, 0, 4], [2], [1, 3]]
    assert sorted(i for g in groups for i in g) == list(range(6))


def test_the_batcher_runs_concurrent_requests_as_one_batch_and_hands_back_errors():
    seen = []

    def run_batch(items, key):
        seen.append((list(items), key))
        if "boom" in items:
            raise RuntimeError("model failed")
        return [item.upper() + (key or "") for item in items]

    async def scenario():
        batcher = DynamicBatcher(run_batch, max_batch=4, max_wait_seconds=0.2)
        await batcher.start()
        words = ["ab", "cd", "ef"]
        results = await asyncio.gather(*(batcher.submit(w, len(w)) for w in words))
        with pytest.raises(RuntimeError, match="model failed"):
            await batcher.submit("boom", 4)
        # Only equal keys (a request's hotwords) share a batch, whatever their lengths.
        keyed = await asyncio.gather(
            *(batcher.submit(w, len(w), key=k) for w, k in
              [("gh", "+"), ("ij", None), ("kl", "+"), ("mn", "-")])
        )  # fmt: skip
        await batcher.stop()
        return results, keyed

    assert asyncio.run(scenario()) == (["AB", "CD", "EF"], ["GH+", "IJ", "KL+", "MN-"])
    assert seen == [
        (["ab", "cd", "ef"], None), (["boom"], None),
        (["gh", "kl"], "+"), (["ij"], None), (["mn"], "-"),
    ]  # fmt: skip


def test_a_requests_hotwords_read_as_a_hotwords_file():
    lines = ["Layla", "  new   york :3.5", "", "billy :0.5\nbob"]  # a form field's lines
    assert request_phrases(lines, "1.5") == (
        ("Layla", 1.5), ("new york", 3.5), ("billy", 0.5), ("bob", 1.5),
    )  # fmt: skip
    assert request_phrases(["layla"]) == (("layla", 0.5),)  # the decoder's default boost
    assert request_phrases([]) == ()
    bad = {
        "hotword 1: the boost after ' :' must be a number > 0, got 'lots'": (["a :lots"], None),
        "hotword 2: the boost after ' :' must be a number > 0, got 'inf'": (["a", "b :inf"], None),
        "boost must be a number > 0, got '-1'": (["a"], "-1"),
        "boost must be a number > 0, got True": (["a"], True),
        "hotwords must be a list of phrases": ("layla", None),
        "hotwords must be a list of phrases (strings)": ([3], None),
        "hotwords must be a list of phrases (strings), e.g.": (5, None),
        f"lists {MAX_HOTWORDS + 1} hotwords; this server takes at most {MAX_HOTWORDS}": (
            [f"w{i}" for i in range(MAX_HOTWORDS + 1)], None,
        ),
    }  # fmt: skip
    for message, (hotwords, boost) in bad.items():
        with pytest.raises(BadHotwords) as error:
            request_phrases(hotwords, boost)
        assert message in str(error.value) and "\n" not in str(error.value)


def test_raw_pcm_reads_as_the_same_samples_in_each_encoding():
    wave = np.sin(np.linspace(0, 60, 1600)).astype(np.float32) * 0.5
    pcm = to_int16_pcm(wave)
    little = request_audio(pcm.astype("<i2").tobytes(), "audio/pcm", {"rate": "16000"}, 16000)
    big = request_audio(pcm.astype(">i2").tobytes(), "audio/l16", {"rate": "16000"}, 16000)
    floats = request_audio(
        wave.astype("<f4").tobytes(), "audio/pcm", {"rate": "16000", "encoding": "f32le"}, 16000
    )
    np.testing.assert_array_equal(little, big)
    np.testing.assert_allclose(floats, little, atol=1 / 32767)
    stereo = np.stack([pcm, pcm], axis=1).astype("<i2").tobytes()
    both = request_audio(stereo, "audio/pcm", {"rate": "16000", "channels": "2"}, 16000)
    np.testing.assert_array_equal(both, little)


@pytest.mark.parametrize(
    "body, content_type, message",
    [
        (b"", "audio/wav", "has no audio"),
        (b"\x00\x01\x02", "audio/pcm", "sample rate and channels"),
        (b"\x00\x01\x02", "audio/pcm;rate=16000", "not whole 16-bit samples"),
        (b"\x00\x01", "audio/pcm;rate=16000;encoding=mulaw", "encoding 'mulaw'"),
        (b"hello", "text/plain", "Content-Type text/plain is not audio"),
        (NOISE_BYTES, "audio/wav", "could not be decoded as FLAC or WAV"),
    ],
    ids=["empty", "pcm without rate", "partial sample", "unknown encoding", "text", "noise"],
)
def test_bad_audio_is_one_sentence(body, content_type, message):
    media_type, parameters = parse_content_type(content_type)
    with pytest.raises(BadAudio, match=message) as error:
        request_audio(body, media_type, parameters, 16000)
    assert "\n" not in str(error.value)


def test_metrics_text_is_prometheus_exposition():
    metrics = ServerMetrics()
    metrics.request("/v1/transcribe", 200, 0.3)
    metrics.request("/v1/transcribe", 400, 0.01)
    metrics.transcribed(audio_seconds=4.0, compute_seconds=1.0)
    text = metrics.render()
    assert 't2t_lite_request_seconds_bucket{route="/v1/transcribe",le="0.5"} 2' in text
    assert 't2t_lite_request_seconds_bucket{route="/v1/transcribe",le="0.05"} 1' in text
    assert "t2t_lite_real_time_factor 0.250000" in text
    assert all(line.startswith("#") or len(line.split()) == 2 for line in text.splitlines())


# -- the command, serving a real export ---------------------------------------------


def _wav(waveform: np.ndarray, rate: int, channels: int = 1) -> bytes:
    buffer = io.BytesIO()
    data = np.stack([waveform] * channels, axis=1) if channels > 1 else waveform
    soundfile.write(buffer, data, rate, format="WAV", subtype="PCM_16")
    return buffer.getvalue()


def _form(fields: dict[str, tuple[str | None, bytes, str]]) -> tuple[bytes, str]:
    """A multipart/form-data body of `name -> (filename or None, data, type)`."""
    boundary = "t2t-lite-test-boundary"
    body = b""
    for name, (filename, data, content_type) in fields.items():
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        body += (
            (
                f"--{boundary}\r\nContent-Disposition: {disposition}\r\n"
                f"Content-Type: {content_type}\r\n\r\n"
            ).encode()
            + data
            + b"\r\n"
        )
    return body + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def _multipart(field: str, filename: str, data: bytes, content_type: str) -> tuple[bytes, str]:
    return _form({field: (filename, data, content_type)})


@pytest.fixture(scope="module")
def server(speech_run, tmp_path_factory, librispeech_flac):
    """t2t-lite-serve on the export of the tests' tiny speech run."""
    clip = soundfile.read(librispeech_flac, dtype="float32")[0][: 2 * SAMPLE_RATE]
    run = export_version(speech_run, str(tmp_path_factory.mktemp("serve_export")), 1)
    flags = (f"--max_seconds={MAX_SECONDS}", "--max_wait_ms=300", "--max_batch=8")
    with serving(os.path.dirname(run.export_path), *flags) as url:
        yield {"url": url, "export": run.export_path, "clip": clip}


@pytest.fixture(scope="module")
def expected(server):
    """The export's own answer for the clip (the SavedModel called in process)."""
    model = ExportedSpeechModel(os.path.dirname(server["export"]))
    return model.transcribe([server["clip"]])[0]


def test_a_wav_body_gets_the_exports_transcript_with_word_times(server, expected):
    status, reply, _ = request(
        f"{server['url']}/v1/transcribe", _wav(server["clip"], SAMPLE_RATE), "audio/wav"
    )
    assert status == 200, reply
    assert reply["text"] == expected.text
    assert reply["score"] == pytest.approx(expected.score, abs=1e-4)
    assert reply["model_version"] == "1" and reply["duration"] == 2.0
    assert [w["word"] for w in reply["words"]] == reply["text"].split()
    for word in reply["words"]:
        assert 0 <= word["start"] <= word["end"] <= 2.0 and 0 <= word["confidence"] <= 1


def test_every_way_of_sending_audio_gets_the_same_transcript(server, expected):
    clip, url = server["clip"], f"{server['url']}/v1/transcribe"
    pcm = to_int16_pcm(clip)
    stereo_44k = _wav(resample(clip, SAMPLE_RATE, 44100), 44100, channels=2)
    ways = {
        "44.1 kHz stereo WAV": (stereo_44k, "audio/x-wav"),
        "multipart field": _multipart("file", "a.wav", _wav(clip, SAMPLE_RATE), "audio/wav"),
        "raw PCM": (pcm.astype("<i2").tobytes(), "audio/pcm; rate=16000"),
        "L16": (pcm.astype(">i2").tobytes(), "audio/L16;rate=16000"),
    }
    for name, (body, content_type) in ways.items():
        status, reply, _ = request(url, body, content_type)
        assert status == 200, (name, reply)
        assert reply["text"] == expected.text, name


def test_bad_requests_get_one_sentence_and_the_server_keeps_answering(server, expected):
    url = f"{server['url']}/v1/transcribe"
    wav = _wav(server["clip"], SAMPLE_RATE)
    long_pcm = np.zeros(int((MAX_SECONDS + 1) * SAMPLE_RATE), "<i2").tobytes()
    bad = {
        "random bytes": (NOISE_BYTES, "audio/wav", 400),
        "no rate": (b"\x00\x00" * 100, "audio/pcm", 400),
        "not audio": (b"hello", "text/plain", 400),
        "no file field": (*_multipart("other", "a.wav", wav, "audio/wav"), 400),
        "too long": (long_pcm, "audio/pcm;rate=16000", 413),
    }
    for name, (body, content_type, code) in bad.items():
        status, reply, _ = request(url, body, content_type)
        assert status == code, (name, reply)
        assert isinstance(reply, dict) and "\n" not in reply["error"], (name, reply)
    assert request(f"{server['url']}/nowhere")[0] == 404
    # A truncated file and a client that leaves mid-upload do not take it down.
    status, reply, _ = request(url, wav[: len(wav) // 2], "audio/wav")
    assert status in (200, 400), reply
    with socket.create_connection(("127.0.0.1", int(server["url"].rsplit(":", 1)[1]))) as sock:
        sock.sendall(
            b"POST /v1/transcribe HTTP/1.1\r\nHost: x\r\nContent-Type: audio/wav\r\n"
            b"Content-Length: 100000\r\n\r\n" + wav[:1000]
        )
    status, reply, _ = request(url, wav, "audio/wav")
    assert status == 200 and reply["text"] == expected.text
    counted = request(f"{server['url']}/metrics")[1]
    assert 't2t_lite_requests_total{route="/v1/transcribe",status="400"}' in counted


def test_concurrent_requests_are_batched(server, expected):
    url = f"{server['url']}/v1/transcribe"
    before = request(f"{server['url']}/metrics")[1]
    wav = _wav(server["clip"], SAMPLE_RATE)
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        replies = list(pool.map(lambda _: request(url, wav, "audio/wav"), range(6)))
    assert all(status == 200 and reply["text"] == expected.text for status, reply, _ in replies)
    after = request(f"{server['url']}/metrics")[1]

    batches = metric(after, "t2t_lite_batches_total") - metric(before, "t2t_lite_batches_total")
    requests = metric(after, "t2t_lite_batched_requests_total") - metric(
        before, "t2t_lite_batched_requests_total"
    )
    assert requests == 6 and batches < 6  # at least two requests shared a batch
    assert metric(after, "t2t_lite_real_time_factor") > 0


def test_a_requests_hotwords_bias_it_as_the_exports_biased_signature(server):
    """Listing "no" turns the tone's close call (the tiny model hears "hi"),
    sent in the query or a form's field; the answer is the export's
    `transcribe_biased` (called in process); concurrent requests with other
    lists, or none, get their own answers; a bad list is a 400."""
    url = f"{server['url']}/v1/transcribe"
    tone = tone_and_noise()["hi"]
    wav = _wav(tone, SAMPLE_RATE)
    model = ExportedSpeechModel(os.path.dirname(server["export"]))
    plain = model.transcribe([tone])[0]
    biased = model.transcribe([tone], (("no", 5.0),))[0]
    assert (plain.text, biased.text) == ("hi", "no")
    form = _form({
        "file": ("tone.wav", wav, "audio/wav"),
        "hotwords": (None, b"  NO \n", "text/plain"),
        "boost": (None, b"5", "text/plain"),
    })  # fmt: skip
    ways = {  # (URL, body, Content-Type) -> the text it should get
        "query": (f"{url}?hotwords=no&boost=5", wav, "audio/wav", "no"),
        "query, the phrase's own boost": (f"{url}?hotwords=no%20:5", wav, "audio/wav", "no"),
        "form fields": (url, *form, "no"),
        "never whole": (f"{url}?hotwords=nope&boost=5", wav, "audio/wav", "hi"),
        "none": (url, wav, "audio/wav", "hi"),
    }
    with concurrent.futures.ThreadPoolExecutor(len(ways)) as pool:
        answers = pool.map(lambda way: request(*way[:3]), ways.values())
        replies = dict(zip(ways, answers, strict=True))
    for name, (status, reply, _) in replies.items():
        assert status == 200 and reply["text"] == ways[name][3], (name, reply)
    # Batched with others, a recording's numbers move in the fourth digit.
    assert replies["query"][1]["score"] == pytest.approx(biased.score, rel=1e-3)
    assert replies["none"][1]["score"] == pytest.approx(plain.score, rel=1e-3)
    assert [w["word"] for w in replies["query"][1]["words"]] == ["no"]
    many = "\n".join(["a"] * (MAX_HOTWORDS + 1)).encode()
    for name, (address, body, content_type), words in [
        ("a bad boost", (f"{url}?hotwords=no%20:lots", wav, "audio/wav"),
         "hotword 1: the boost after ' :' must be a number > 0"),
        ("a bad default", (f"{url}?hotwords=no&boost=0", wav, "audio/wav"),
         "boost must be a number > 0, got '0'"),
        ("too many", (url, *_form({"file": ("tone.wav", wav, "audio/wav"),
                                   "hotwords": (None, many, "text/plain")})),
         f"at most {MAX_HOTWORDS}"),
    ]:  # fmt: skip
        status, reply, _ = request(address, body, content_type)
        assert status == 400 and words in reply["error"], (name, reply)


def test_the_page_and_its_scripts_are_served(server):
    status, page, headers = request(f"{server['url']}/")
    assert status == 200 and headers.get_content_type() == "text/html"
    assert 'id="mic"' in page and "/page/page.js" in page
    for script in ("page.js", "pcm-worklet.js"):
        status, _, headers = request(f"{server['url']}/page/{script}")
        assert status == 200 and headers.get_content_type() == "text/javascript"


def test_a_tflite_export_is_served_by_litert(speech_run, librispeech_flac, tmp_path):
    run = speech_run
    clip = soundfile.read(librispeech_flac, dtype="float32")[0][: 2 * SAMPLE_RATE]
    export_tflite(run.model, run.run_config, DecodeConfig.parse(CTC_BEAM_DECODE),
                  run.encoders["targets"], str(tmp_path))  # fmt: skip
    expected = LiteRtTranscriber(str(tmp_path)).transcribe(clip)
    with serving(str(tmp_path), "--max_wait_ms=0") as url:
        status, reply, _ = request(f"{url}/v1/transcribe", _wav(clip, SAMPLE_RATE), "audio/wav")
        assert status == 200, reply
        assert (reply["text"], reply["words"]) == (expected.text, None)
        assert reply["score"] == pytest.approx(expected.score, abs=1e-4)
        assert reply["model_version"] == "tflite-float32"
        status, reply, _ = request(
            f"{url}/v1/transcribe?hotwords=layla", _wav(clip, SAMPLE_RATE), "audio/wav"
        )
        assert status == 400 and "takes no hotwords" in reply["error"], reply
        status, reply, _ = request(f"{url}/v1/stream")
        assert status == 400 and "does not stream" in reply["error"]


def test_a_wrong_export_dir_is_one_line_and_exit_1(tmp_path):
    result = run_command("t2t-lite-serve", f"--export_dir={tmp_path}")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"t2t-lite-serve: error: {tmp_path} holds no SavedModel (no saved_model.pb in it or "
        "in a numbered version under it); pass what t2t-lite-exporter wrote as --export_dir."
    ]


def test_an_export_from_a_newer_t2t_lite_is_one_line_and_exit_1(tmp_path):
    version = tmp_path / "7"
    (version / "assets.extra").mkdir(parents=True)
    (version / "saved_model.pb").write_bytes(b"")
    manifest = version / "assets.extra" / SAVED_MODEL_MANIFEST
    manifest.write_text(json.dumps({"manifest_version": MANIFEST_VERSION + 1}))
    result = run_command("t2t-lite-serve", f"--export_dir={tmp_path}")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"t2t-lite-serve: error: {manifest} is an export manifest of version "
        f"{MANIFEST_VERSION + 1}; this t2t-lite reads versions up to {MANIFEST_VERSION}: "
        "upgrade t2t-lite or export the model again."
    ]
