"""t2t-lite-serve's WebSocket stream on a tiny trained streaming model, as a
client uses it: a stream of two tones with silence between (at 48 kHz, so
the server resamples) gives partials and two "hi" finals in the stream's
clock; every malformed message is answered and closes only its stream; too
many streams get 503; and the page in a real browser (headless Chromium,
its fake microphone playing a WAV) shows the transcript.

The rules underneath (endpoints, the stream resampler) are tested beside,
without a model.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import tempfile
import time

import aiohttp
import numpy as np
import pytest
import soundfile

from t2t_lite.data.audio_io import StreamResampler, resample
from t2t_lite.decoding.audio.transcriber import WaveformTranscriber
from t2t_lite.decoding.checkpoints.trained_model import TrainedRun
from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.decoding.search.model_search import decode_cap
from t2t_lite.decoding.timing.subtitles import TimedWord
from t2t_lite.server.app_state import ServerConfig
from t2t_lite.server.full_context_stream import FullContextStream
from t2t_lite.server.speech_model import Transcript
from t2t_lite.serving import export
from t2t_lite.streaming.driver import stream_recording
from t2t_lite.streaming.endpoint import Endpoint, EndpointRules
from t2t_lite.streaming.recognizer import StreamingRecognizer
from tests.helpers import CTC_BEAM_DECODE
from tests.server.served import free_port, metric, request, serving
from tests.serving.runs import (
    SAMPLE_RATE,
    STREAMING_HPARAMS,
    quiet_room,
    tone_and_noise,
    tones_over_floors,
    train_speech_run,
)

CLIENT_RATE = 48000  # what a browser's microphone gives


# -- without a model ---------------------------------------------------------------


def test_endpoint_rules_are_wenets_three():
    rules = EndpointRules(silence_before_speech=5, silence_after_speech=1, max_utterance=20)
    assert rules.check(spoke=False, trailing_silence=4.9, utterance=4.9) is Endpoint.NONE
    assert rules.check(spoke=False, trailing_silence=5.0, utterance=5.0) is Endpoint.DISCARD
    assert rules.check(spoke=True, trailing_silence=0.9, utterance=6.0) is Endpoint.NONE
    assert rules.check(spoke=True, trailing_silence=1.0, utterance=6.0) is Endpoint.FINAL
    assert rules.check(spoke=True, trailing_silence=0.0, utterance=20.0) is Endpoint.FINAL
    with pytest.raises(ValueError, match="max_utterance must be positive"):
        EndpointRules(max_utterance=0)


def test_endpoint_rules_are_decode_hparams_a_server_flag_overrides():
    exported = EndpointRules.of(DecodeConfig.parse("endpoint_silence_seconds=0.6"))
    assert exported == EndpointRules(silence_after_speech=0.6)
    assert EndpointRules.from_settings({}) == EndpointRules()  # an export from before them
    overridden = ServerConfig(endpoint={"endpoint_max_utterance_seconds": 9.0})
    assert overridden.endpoint_rules(exported) == EndpointRules(
        silence_after_speech=0.6, max_utterance=9.0
    )
    with pytest.raises(ValueError, match="endpoint_silence_seconds must be > 0"):
        DecodeConfig.parse("endpoint_silence_seconds=0")


@pytest.mark.parametrize("from_rate", [48000, 44100, 8000, 16000])
def test_a_stream_resampled_piece_by_piece_is_the_whole_resampled(from_rate):
    rng = np.random.default_rng(from_rate)
    audio = rng.uniform(-1, 1, 2 * from_rate).astype(np.float32)
    stream, pieces, start = StreamResampler(from_rate, SAMPLE_RATE), [], 0
    while start < audio.size:
        size = int(rng.integers(1, from_rate // 5))
        pieces.append(stream(audio[start : start + size]))
        start += size
    pieces.append(stream(np.zeros(0, np.float32), final=True))
    np.testing.assert_allclose(
        np.concatenate(pieces), resample(audio, from_rate, SAMPLE_RATE), atol=1e-6
    )


class _BlockModel:
    """A stand-in export: a "w" word for each run of samples over 0.1 (the
    floor under it is quieter), timed to the sample; records what it heard."""

    sample_rate, version, timed = SAMPLE_RATE, "fake", True
    endpoint_rules = EndpointRules(silence_after_speech=0.5)

    def __init__(self):
        self.heard = []

    def transcribe(self, waveforms):
        transcripts = []
        for waveform in waveforms:
            self.heard.append(waveform.size)
            loud = np.concatenate([[False], np.abs(waveform) > 0.1, [False]]).astype(int)
            starts, ends = np.flatnonzero(np.diff(loud) == 1), np.flatnonzero(np.diff(loud) == -1)
            words = tuple(TimedWord("w", s / SAMPLE_RATE, e / SAMPLE_RATE, 1.0)
                          for s, e in zip(starts, ends, strict=True))  # fmt: skip
            transcripts.append(Transcript(" ".join(w.word for w in words), 0.0, words))
        return transcripts


def test_full_context_steps_end_utterances_on_the_last_words_end_over_a_floor():
    floor = np.random.default_rng(0).normal(0, 0.001, 6 * SAMPLE_RATE).astype(np.float32)
    audio = floor.copy()
    for begin in (0.5, 3.0):  # two words of a second, 1.5 s of floor between
        audio[int(begin * SAMPLE_RATE) : int((begin + 1) * SAMPLE_RATE)] += 0.5
    model = _BlockModel()
    stream = FullContextStream(model)
    steps = []
    finals = stream_recording(stream, audio, on_step=lambda step, _: steps.append(step))
    # One word each (no cut inside a word, none lost), then the floor after
    # the second, which says nothing (the server sends no final for it).
    assert finals == ["w", "w", ""]
    ended = [s for s in steps if s.endpoint is Endpoint.FINAL]
    # The first utterance ends at the first step with 0.5 s after its word
    # (1.5 s + 0.5 s, rounded up to a 0.64 s step: 2.56 s).
    assert len(ended) == 2 and ended[0].end == pytest.approx(2.56)
    # Each step transcribed the utterance so far, whole: 0.64 s more each time.
    chunk = int(0.64 * SAMPLE_RATE)
    assert model.heard[:4] == [chunk, 2 * chunk, 3 * chunk, 4 * chunk]


# -- the command, streaming a real export -------------------------------------------


def _stream_audio() -> tuple[np.ndarray, list[tuple[float, float]]]:
    """Two tones with a quiet room around them, at the model's rate, and where the tones are."""
    tone = tone_and_noise()["hi"]
    quiet = [quiet_room(seconds, seed) for seed, seconds in enumerate((0.3, 1.2, 0.3))]
    audio = np.concatenate([quiet[0], tone, quiet[1], tone, quiet[2]])
    first = len(quiet[0]) / SAMPLE_RATE
    second = first + (len(tone) + len(quiet[1])) / SAMPLE_RATE
    return audio, [(first, first + 1.0), (second, second + 1.0)]


# The streaming fixture's export: 80 ms chunks; utterances end at 1.92 s (the
# first 80 ms step past 1.9 s): the rule every model meets, as the tiny
# model's CTC head is not peaky enough to give blanks. That rule comes with
# the export; the silence rule from the server's flag.
STREAM_DECODE = f"{CTC_BEAM_DECODE},chunk_frames=2,endpoint_max_utterance_seconds=1.9"
STREAM_SILENCE_SECONDS = 0.5
SEEDS_TRIED = (1, 2, 3, 4, 5, 6)


def _tones_around_digital_silence() -> np.ndarray:
    """A tone, 0.8 s of exact zeros, a tone."""
    tone = tone_and_noise()["hi"]
    return np.concatenate([tone, np.zeros(int(0.8 * SAMPLE_RATE), np.float32), tone])


def _streams_as_served(run) -> list[tuple[list[str], set[int]]]:
    """What the server's streams of the tests' two-tone recordings would give
    with `run`, stepped in-process as the export steps them (the Python
    recognizer, the same driver and endpoint rules): each one's finals and
    the utterances with a partial that said something."""
    config = DecodeConfig.parse(
        f"{STREAM_DECODE},endpoint_silence_seconds={STREAM_SILENCE_SECONDS}"
    )
    encoder = run.encoders["targets"]
    transcriber = WaveformTranscriber(
        run.model, run.run_config, config, decode_cap(run.run_config, config), encoder
    )
    recognizer = StreamingRecognizer(run.model, run.run_config, config, encoder, 2, transcriber)

    def streamed(audio):
        steps = []
        finals = stream_recording(recognizer, audio, on_step=lambda step, _: steps.append(step))
        return finals, {step.utterance for step in steps if step.partial}

    return [streamed(audio) for audio in (_stream_audio()[0], _tones_around_digital_silence())]


@pytest.fixture(scope="module")
def streaming(tmp_path_factory):
    """t2t-lite-serve on an export (80 ms chunks) of a tiny streaming model.

    A 200-step model's CTC head is barely peaky, and whether its streamed
    partial hears a tone that starts a stream depends on its initial
    weights and the CPU's numerics: on an EPYC (2026-12-03) only seed 1 of
    seeds 1-6 passes the check below, at 200 or 600 steps, with or without
    a bare tone in training (and seed 1 of 1-3 with 64 units, 2 layers).
    At make_run's Adam(1e-2) seed 3 never fits its two clips (the loss stays
    at 1.6, "no" for both); at 3e-3 and 400 steps all six fit them, but the
    streamed partials say "hi" at each utterance's start or nothing. The
    server's tests test the server, so the fixture serves the first seed
    whose model streams both tests' recordings as "hi", "hi" in-process,
    each utterance with a partial, and fails once, saying what each seed
    heard, if none does (rather than as four tests' server-side symptoms).
    """
    directory = tmp_path_factory.mktemp("stream_serve")
    wanted, tried = [(["hi", "hi"], {0, 1})] * 2, {}
    for seed in SEEDS_TRIED:
        run = train_speech_run(
            directory / f"run{seed}", STREAMING_HPARAMS, steps=200, silence=0.5, seed=seed
        )
        tried[seed] = _streams_as_served(run)
        if tried[seed] == wanted:
            break
    else:
        pytest.fail(
            f"no tiny streaming model streamed two tones as {wanted} per recording: {tried}"
        )
    trained = TrainedRun.of(run.output_dir, run.problem)
    export_dir = str(directory / "export")
    export.export_run(trained, export_dir, DecodeConfig.parse(STREAM_DECODE), 1)
    silence = f"--endpoint_silence_seconds={STREAM_SILENCE_SECONDS}"
    flags = (silence, "--max_streams=2", "--max_wait_ms=50")
    with serving(export_dir, *flags) as url:
        yield url


async def _converse(url: str, start: dict | str | None, messages: list, close: bool = True):
    """Sends `start` then `messages` (bytes: audio; dict: JSON) on one stream;
    returns (every JSON message received, the close code)."""
    received = []
    async with aiohttp.ClientSession() as session:
        async with session.ws_connect(f"{url.replace('http', 'ws')}/v1/stream") as ws:
            for message in ([start] if start is not None else []) + messages:
                if isinstance(message, bytes):
                    await ws.send_bytes(message)
                elif isinstance(message, str):
                    await ws.send_str(message)
                else:
                    await ws.send_json(message)
            if not close:  # the client leaves without a close frame
                ws._response.connection.transport.abort()  # noqa: SLF001
                return received, None
            async for reply in ws:
                if reply.type == aiohttp.WSMsgType.TEXT:
                    received.append(json.loads(reply.data))
            return received, ws.close_code


def _pcm_chunks(audio: np.ndarray, seconds: float = 0.1) -> list[bytes]:
    """`audio` at the client's rate as float32 messages of `seconds`."""
    client = resample(audio, SAMPLE_RATE, CLIENT_RATE)
    size = int(seconds * CLIENT_RATE)
    return [client[i : i + size].astype("<f4").tobytes() for i in range(0, client.size, size)]


def test_a_stream_gives_partials_and_a_final_per_utterance_in_the_streams_clock(streaming):
    audio, tones = _stream_audio()
    start = {"type": "start", "sample_rate": CLIENT_RATE, "format": "f32le"}
    chunks = _pcm_chunks(audio)  # 100 ms each: every one completes an 80 ms chunk
    messages, code = asyncio.run(_converse(streaming, start, [*chunks, {"type": "end"}]))
    assert code == 1000
    ready, *rest = messages
    assert ready == {"type": "ready", "sample_rate": SAMPLE_RATE, "chunk_seconds": 0.08,
                     "model_version": "1", "hotwords": 0}  # fmt: skip
    partials = [m for m in rest if m["type"] == "partial"]
    finals = [m for m in rest if m["type"] == "final"]
    assert {m["type"] for m in rest} == {"partial", "final"}
    assert len(chunks) - 1 <= len(partials) <= len(chunks) + 1  # a partial per step
    for utterance in (0, 1):  # the tiny model's partials say something in each
        assert any(p["text"] for p in partials if p["utterance"] == utterance)
    assert [(f["utterance"], f["text"]) for f in finals] == [(0, "hi"), (1, "hi")]
    # The first utterance reached its longest (1.9 s, to the step) and ended at most
    # there (audio its encoder had not read goes to the next); the second starts there.
    assert finals[0]["start"] == 0.0 and 1.3 <= finals[0]["end"] <= 1.9 + 0.08
    assert finals[1]["start"] == finals[0]["end"]
    assert finals[1]["end"] == pytest.approx(audio.size / SAMPLE_RATE, abs=0.01)
    for final, (begin, end) in zip(finals, tones, strict=True):
        (word,) = final["words"]  # in the stream's clock, inside its utterance
        assert word["word"] == "hi" and 0 <= word["confidence"] <= 1
        assert final["start"] <= word["start"] < (begin + end) / 2 < word["end"] <= final["end"]


def test_a_streams_hotwords_bias_its_finals_not_its_streamed_steps(streaming):
    """The start message's hotwords reach the finals (the export's
    `transcribe_biased` over each utterance); a streaming export's steps
    run its streamed search, which knows no hotwords, so the partials are
    the unbiased stream's."""
    audio, _ = _stream_audio()
    start = {"type": "start", "sample_rate": CLIENT_RATE, "format": "f32le"}
    chunks = [*_pcm_chunks(audio), {"type": "end"}]
    plain, _ = asyncio.run(_converse(streaming, start, chunks))
    # The tiny model is sure of its "hi" (-0.03): only a boost this large
    # turns it (in-process, "no" at 20 per byte still reads "hi" on a tone
    # with a quiet room around it; at 100, "no no no no").
    biased, code = asyncio.run(_converse(streaming, {**start, "hotwords": ["no :100"]}, chunks))
    assert code == 1000 and biased[0]["hotwords"] == 1

    def texts(messages, kind):
        return [(m["utterance"], m["text"]) for m in messages if m["type"] == kind]

    assert texts(plain, "final") == [(0, "hi"), (1, "hi")]
    finals = texts(biased, "final")
    assert [u for u, _ in finals] == [0, 1], biased
    assert all(set(text.lower().split()) == {"no"} for _, text in finals), biased
    assert texts(biased, "partial") == texts(plain, "partial")


@pytest.fixture(scope="module")
def full_context(tmp_path_factory):
    """t2t-lite-serve on the export of a tiny model that does not stream (no
    dynamic chunks, as the quick start's), trained on tones over floors."""
    directory = tmp_path_factory.mktemp("full_context_serve")
    run = train_speech_run(directory / "run", steps=200, clips=tones_over_floors())
    trained = TrainedRun.of(run.output_dir, run.problem)
    export_dir = str(directory / "export")
    export.export_run(trained, export_dir, DecodeConfig.parse(CTC_BEAM_DECODE), 1)
    with serving(export_dir, "--endpoint_silence_seconds=0.5", "--max_wait_ms=50") as url:
        yield url


def test_an_export_that_does_not_stream_is_streamed_in_full_context(full_context):
    """Each step transcribes the utterance so far whole; its last word's end
    (not zeros: the silence is a -60 dBFS floor) ends each utterance."""
    audio, tones = _stream_audio()
    start = {"type": "start", "sample_rate": CLIENT_RATE, "format": "f32le"}
    messages, code = asyncio.run(
        _converse(full_context, start, [*_pcm_chunks(audio), {"type": "end"}])
    )
    assert code == 1000
    ready, *rest = messages
    assert ready["type"] == "ready" and ready["chunk_seconds"] == 0.64
    partials = [m for m in rest if m["type"] == "partial"]
    finals = [m for m in rest if m["type"] == "final"]
    assert {p["utterance"] for p in partials if p["text"]} == {0, 1}, rest
    assert [(f["utterance"], f["text"]) for f in finals] == [(0, "hi"), (1, "hi")], rest
    # The first utterance ended in the quiet between the tones (the tiny
    # model's words are not where the tones are: no finer check of times).
    assert tones[0][1] < finals[0]["end"] < tones[1][0]
    assert finals[1]["start"] == finals[0]["end"]
    # The second ends with the stream, or, where its word ended half a second
    # before the stream did, there; what follows is the floor: no words, no final.
    audio_end = audio.size / SAMPLE_RATE
    if {p["utterance"] for p in partials} == {0, 1}:
        assert finals[1]["end"] == pytest.approx(audio_end, abs=0.01)
    else:
        assert {p["utterance"] for p in partials} == {0, 1, 2}, rest
        assert tones[1][0] < finals[1]["end"] < audio_end


def test_a_full_context_streams_hotwords_bias_its_partials_too(full_context):
    """Its steps are whole transcriptions, so the start message's hotwords
    bias every partial as well as the final (in any case: a phrase is
    listed in three, and the tiny model barely tells "NO" from "no")."""
    audio = np.concatenate([quiet_room(0.3), tone_and_noise()["hi"], quiet_room(0.7, seed=2)])
    start = {"type": "start", "sample_rate": CLIENT_RATE, "format": "f32le",
             "hotwords": ["no"], "boost": 100}  # fmt: skip
    messages, code = asyncio.run(
        _converse(full_context, start, [*_pcm_chunks(audio), {"type": "end"}])
    )
    assert code == 1000 and messages[0]["hotwords"] == 1
    said = {m["text"].lower() for m in messages if m["type"] in ("partial", "final")}
    assert {word for text in said for word in text.split()} == {"no"}, messages
    # At this boost the floor after the tone says "no" too (a second utterance).
    assert [m for m in messages if m["type"] == "final"], messages


def test_digital_silence_after_speech_ends_the_utterance(streaming):
    """Exact zeros never reach the encoder (the featurization trims them), so
    they count as the endpoint's silence directly; the cut falls a quarter
    second (half the endpoint's 0.5 s) after the speech."""
    audio = _tones_around_digital_silence()
    start = {"type": "start", "sample_rate": SAMPLE_RATE, "format": "f32le"}
    chunks = [audio[i : i + 1600].astype("<f4").tobytes() for i in range(0, audio.size, 1600)]
    received, closed = asyncio.run(_converse(streaming, start, [*chunks, {"type": "end"}]))
    finals = [(m["text"], m["start"], m["end"]) for m in received if m["type"] == "final"]
    assert closed == 1000 and finals == [("hi", 0.0, 1.25), ("hi", 1.25, 2.8)]


BAD_STREAMS = {  # (start message, messages after it) -> words of the error, close code
    "audio before start": (None, [b"\x00\x00"], "before the start message", 1008),
    "text not JSON": ("hello", [], "must be JSON", 1008),
    "unknown type": ({"type": "pause"}, [], "must be JSON", 1008),
    "no sample rate": ({"type": "start"}, [], "sample rate and channels", 1003),
    "rate too low": ({"type": "start", "sample_rate": 100}, [], "8000 to 192000", 1003),
    "unknown format": (
        {"type": "start", "sample_rate": 16000, "format": "mulaw"}, [], "'mulaw'", 1003
    ),
    "half a sample": ({"type": "start", "sample_rate": 16000}, [b"\x00\x01\x02"], "whole", 1003),
    "hotwords not a list": (
        {"type": "start", "sample_rate": 16000, "hotwords": "layla"}, [],
        "hotwords must be a list of phrases", 1008,
    ),
    "a bad hotword boost": (
        {"type": "start", "sample_rate": 16000, "hotwords": ["layla"], "boost": 0}, [],
        "boost must be a number > 0", 1008,
    ),
    "second start": (
        {"type": "start", "sample_rate": 16000}, [{"type": "start", "sample_rate": 16000}],
        "already started", 1008,
    ),
}  # fmt: skip


def test_malformed_streams_get_one_sentence_and_the_server_keeps_serving(streaming):
    for name, (start, messages, words, code) in BAD_STREAMS.items():
        received, closed = asyncio.run(_converse(streaming, start, messages))
        errors = [m for m in received if m["type"] == "error"]
        assert len(errors) == 1 and words in errors[0]["error"], (name, received)
        assert "\n" not in errors[0]["error"] and closed == code, (name, closed)
    # Random bytes as float32 (NaN and infinities among them), and a client
    # that leaves mid-stream, cost nothing but their own streams.
    noise = np.random.default_rng(5).integers(0, 256, 64000, np.uint8).tobytes()
    start = {"type": "start", "sample_rate": 16000, "format": "f32le"}
    received, closed = asyncio.run(_converse(streaming, start, [noise, {"type": "end"}]))
    assert closed == 1000 and not [m for m in received if m["type"] == "error"]
    asyncio.run(_converse(streaming, start, [noise[:32000]], close=False))
    audio, _ = _stream_audio()  # in one message: still cut at the longest utterance
    received, closed = asyncio.run(_converse(streaming, start, [
        audio.astype("<f4").tobytes(), {"type": "end"}
    ]))  # fmt: skip
    finals = [m for m in received if m["type"] == "final"]
    assert [m["text"] for m in finals] == ["hi", "hi"] and finals[0]["end"] <= 1.9 + 0.08
    deadline = time.time() + 30  # the server notices the client that left
    while metric(request(f"{streaming}/metrics")[1], "t2t_lite_active_streams ") and (
        time.time() < deadline
    ):
        time.sleep(0.2)
    text = request(f"{streaming}/metrics")[1]
    assert metric(text, "t2t_lite_active_streams ") == 0
    assert metric(text, "t2t_lite_streams_total") >= len(BAD_STREAMS) + 3
    assert metric(text, "t2t_lite_stream_real_time_factor") > 0


def test_streams_past_the_limit_get_503_with_retry_after(streaming):
    async def scenario():
        start = {"type": "start", "sample_rate": 16000}
        ws_url = f"{streaming.replace('http', 'ws')}/v1/stream"
        async with aiohttp.ClientSession() as session:
            held = [await session.ws_connect(ws_url) for _ in range(2)]
            for ws in held:
                await ws.send_json(start)
                assert (await ws.receive_json())["type"] == "ready"
            upgrade = {"Upgrade": "websocket", "Connection": "Upgrade"}
            async with session.get(ws_url, headers=upgrade) as refused:
                status, retry = refused.status, refused.headers.get("Retry-After")
                reply = await refused.json()
            for ws in held:
                await ws.close()
            return status, retry, reply

    status, retry, reply = asyncio.run(scenario())
    assert status == 503 and retry == "2" and "its 2 streams" in reply["error"]


# -- the page, in a real browser --------------------------------------------------------


async def _devtools_pages(session: aiohttp.ClientSession, port: int) -> list[dict]:
    """The browser's open pages; none while its DevTools endpoint is not up yet."""
    try:
        async with session.get(f"http://127.0.0.1:{port}/json/list") as reply:
            return [target for target in await reply.json() if target["type"] == "page"]
    except aiohttp.ClientError:  # not listening yet
        return []


async def _page_transcript(
    devtools_port: int,
    seconds: float,
    finals: int = 1,
    until: str | None = None,
    hotwords: str = "",
) -> dict:
    """Types `hotwords` into the page's box and clicks its microphone button
    through Chromium's DevTools protocol; returns what the page shows once
    `finals` finals appear (or, with `until`, once a final reads `until`)."""
    async with aiohttp.ClientSession() as session:
        deadline = time.time() + 60
        while not (pages := await _devtools_pages(session, devtools_port)):
            if time.time() > deadline:
                raise AssertionError("Chromium's DevTools endpoint did not come up")
            await asyncio.sleep(0.3)
        async with session.ws_connect(pages[0]["webSocketDebuggerUrl"], max_msg_size=0) as cdp:
            calls = 0

            async def evaluate(expression: str):
                nonlocal calls
                calls += 1
                await cdp.send_json({"id": calls, "method": "Runtime.evaluate", "params": {
                    "expression": expression, "userGesture": True, "returnByValue": True,
                }})  # fmt: skip
                async for message in cdp:
                    answer = json.loads(message.data)
                    if answer.get("id") == calls:
                        result = answer["result"]
                        assert "exceptionDetails" not in result, result["exceptionDetails"]
                        return result["result"].get("value")
                raise AssertionError("Chromium closed its DevTools connection")

            loaded = "document.readyState == 'complete' && !!document.getElementById('mic')"
            while not await evaluate(loaded):  # (the first document is about:blank)
                await asyncio.sleep(0.2)
            await evaluate(f"document.getElementById('hotwords').value = {json.dumps(hotwords)}")
            await evaluate("document.getElementById('mic').click()")
            shown = {}
            end = time.time() + seconds
            while time.time() < end:
                shown = await evaluate(
                    "({finals: [...document.querySelectorAll('#finals .text')]"
                    ".map(e => e.textContent),"
                    " status: document.getElementById('status').textContent})"
                )
                if len(shown["finals"]) >= finals or until in shown["finals"]:
                    break
                await asyncio.sleep(0.5)
            return shown


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _page_with_microphone(
    url: str,
    microphone: np.ndarray,
    tmp_path,
    finals: int,
    until: str | None = None,
    hotwords: str = "",
) -> tuple:
    """Opens the page in headless Chromium, its fake microphone looping
    `microphone`, types `hotwords` in its box, clicks the button; returns
    (what the page shows once it has `finals` finals or one reading `until`,
    Chromium's stderr)."""
    fake_microphone = tmp_path / "microphone.wav"
    soundfile.write(fake_microphone, microphone, SAMPLE_RATE, subtype="PCM_16")
    devtools_port = free_port()
    with tempfile.TemporaryDirectory() as profile:
        browser = subprocess.Popen(
            [
                CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                f"--user-data-dir={profile}", f"--remote-debugging-port={devtools_port}",
                "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
                f"--use-file-for-fake-audio-capture={fake_microphone}",
                "--autoplay-policy=no-user-gesture-required", f"{url}/",
            ],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            shown = asyncio.run(_page_transcript(devtools_port, 60, finals, until, hotwords))
        finally:
            browser.terminate()
            errors = browser.communicate(timeout=30)[1]
    return shown, errors


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium here (Debian: apt-get install chromium)")
def test_the_page_in_chromium_shows_what_its_microphone_hears(streaming, tmp_path):
    tone = tone_and_noise()["hi"]
    assert 'id="mic"' in request(f"{streaming}/")[1]
    assert "registerProcessor" in request(f"{streaming}/page/pcm-worklet.js")[1]
    # Looped by Chromium: the tone in a quiet room's floor, 3 s in all. Not
    # digital silence: it is trimmed only while it stays exact zeros, and the
    # page's audio path (its echo canceller) need not keep it so; a bit or two
    # is far below any floor the model heard, and what it says there rests on
    # its training's numerics (CI once read 'hiooihi'). The tiny model's
    # utterances end only at 1.92 s (the fixture), and where the page's stream
    # starts in the loop depends on how soon the page is up, so the first cut
    # can split a tone; one of the first five 1.92 s windows holds a whole
    # tone whatever the start, and no window can hold a second with it (a
    # sweep of every start through the Python client read "hi" in one of the
    # first five).
    microphone = np.concatenate([quiet_room(0.5, seed=1), tone, quiet_room(1.5, seed=2)])
    shown, errors = _page_with_microphone(streaming, microphone, tmp_path, finals=5, until="hi")
    assert "hi" in shown.get("finals", [])[:5], (shown, errors[-2000:])
    assert "Listening" in shown["status"]


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium here (Debian: apt-get install chromium)")
def test_the_page_shows_finals_through_a_noisy_microphone(full_context, tmp_path):
    """A model that does not stream, a microphone with a -50 dBFS floor: 1.5 s
    of it before the first utterance and between the two; the page shows
    the finals its utterances end in over the floor (not digital silence).

    The tiny model (`tones_over_floors`) says "hi" for a tone or its start in
    a floor and nothing for the floor alone, so every final reads "hi"
    wherever the cuts fall (where the page's stream starts in the loop, how
    the browser's audio arrives): a final may hold only a tone's start.
    """
    tone = tone_and_noise()["hi"]
    quiet = [quiet_room(1.5, seed) for seed in range(3)]
    floor = [q * 10 ** (-50 / 20) / np.sqrt(np.mean(q**2)) for q in quiet]  # -50 dBFS RMS
    microphone = np.concatenate([floor[0], tone, floor[1], tone, floor[2]])
    shown, errors = _page_with_microphone(full_context, microphone, tmp_path, finals=3)
    assert len(shown.get("finals", [])) >= 3, (shown, errors[-2000:])
    assert set(shown["finals"]) == {"hi"}, shown
    assert "Listening" in shown["status"]


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium here (Debian: apt-get install chromium)")
def test_the_pages_hotwords_bias_what_its_microphone_hears(full_context, tmp_path):
    """Phrases typed in the page's box go in the stream's start message:
    "no" at a boost the tiny model cannot resist turns every final."""
    tone = tone_and_noise()["hi"]
    microphone = np.concatenate([quiet_room(1.0, seed=1), tone, quiet_room(1.0, seed=2)])
    shown, errors = _page_with_microphone(
        full_context, microphone, tmp_path, finals=2, hotwords="\n no :100 \n"
    )
    assert len(shown.get("finals", [])) >= 2, (shown, errors[-2000:])
    assert {word for text in shown["finals"] for word in text.lower().split()} == {"no"}, shown
    assert "1 hotword)" in shown["status"], shown
