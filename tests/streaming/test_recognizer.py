"""The streaming recognizer on a tiny trained streaming model: the whole
utterance at once gives the non-streaming transcript, small chunks give
partials as the audio arrives and the same final, silence gives "", and the
decoder streams files with `chunk_frames`."""

import json
import pathlib
import sys
import textwrap

import numpy as np
import pytest
import soundfile
import tensorflow as tf

from t2t_lite.decoding.audio.transcriber import WaveformTranscriber
from t2t_lite.decoding.checkpoints.trained_model import TrainedRun
from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.decoding.search.model_search import decode_cap
from t2t_lite.export_manifest import SAVED_MODEL_MANIFEST
from t2t_lite.server.speech_model import ExportedSpeechModel
from t2t_lite.serving import export, tflite_export
from t2t_lite.streaming.recognizer import StreamingRecognizer
from t2t_lite.streaming.simulation import StreamTiming
from tests.helpers import CTC_BEAM_DECODE, load_script, run_command
from tests.serving.runs import STREAM_EXPORT_DECODE, pad_rows, tone_and_noise


def recognizer(run, chunk_frames, final="search", left_chunks=0):
    decode_config = DecodeConfig.parse(
        f"{CTC_BEAM_DECODE},stream_final={final},left_chunks={left_chunks}"
    )
    return StreamingRecognizer(run.model, run.run_config, decode_config, run.encoders["targets"],
                               chunk_frames)  # fmt: skip


def test_the_whole_utterance_at_once_gives_the_non_streaming_transcript(run):
    clips = tone_and_noise()
    decode_config = DecodeConfig.parse(CTC_BEAM_DECODE)
    transcriber = WaveformTranscriber(
        run.model, run.run_config, decode_config, decode_cap(run.run_config, decode_config),
        run.encoders["targets"],
    )  # fmt: skip
    whole = recognizer(run, chunk_frames=1000)
    for text, clip in clips.items():
        expected = transcriber.timed(clip[None], np.array([len(clip)], np.int32))[0]
        whole.accept_waveform(clip)
        assert whole.finalize() == expected.text == text
        # Its words timed as the decoder times them: the same frames, the same times.
        assert [w.word for w in whole.final_words] == [w.word for w in expected.words] == [text]
        for streamed, decoded in zip(whole.final_words, expected.words, strict=True):
            assert streamed.start == pytest.approx(decoded.start, abs=1e-4)
            assert streamed.end == pytest.approx(decoded.end, abs=1e-4)
            assert streamed.confidence == pytest.approx(decoded.confidence, abs=1e-3)
        whole.reset()
        assert whole.final_words == ()


def test_small_chunks_give_partials_as_the_audio_arrives_and_the_same_final(run):
    tone = tone_and_noise()["hi"]
    streaming = recognizer(run, chunk_frames=2)  # 80 ms
    partials, frames = [], []
    for start in range(0, len(tone), 1600):  # 0.1 s at a time
        partials.append(streaming.accept_waveform(tone[start : start + 1600]))
        frames.append(streaming.encoded_frames)
    assert frames[0] == 0 and frames == sorted(frames) and frames[-1] > 0
    assert partials[0] == "" and partials[-1]  # nothing before the first chunk; words by the end
    assert streaming.finalize() == "hi"
    rescoring = recognizer(run, chunk_frames=2, final="rescore")  # U2's second pass
    for start in range(0, len(tone), 1600):
        rescoring.accept_waveform(tone[start : start + 1600])
    assert rescoring.finalize() == "hi"
    streaming.reset()
    assert streaming.accept_waveform(np.zeros(16000, np.float32)) == ""
    assert streaming.finalize() == ""  # digital silence: no speech


def test_decoder_streams_files_with_chunk_frames_and_reports_latency(run, tmp_path):
    clips = tone_and_noise()
    listing = tmp_path / "audio.txt"
    paths = []
    for name, clip in clips.items():
        soundfile.write(tmp_path / f"{name}.wav", clip, 16000)
        paths.append(str(tmp_path / f"{name}.wav"))
    listing.write_text("\n".join(paths) + "\n")
    out = tmp_path / "out.txt"
    done = run_command(
        "t2t-lite-decoder", f"--output_dir={run.output_dir}", f"--decode_from_file={listing}",
        f"--decode_to_file={out}", f"--decode_hparams={CTC_BEAM_DECODE},chunk_frames=4",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert out.read_text().splitlines() == ["hi", "no"]
    # The streamed finals' words, timed (as the decoder times them: the first test).
    records = [json.loads(line) for line in (tmp_path / "out.txt.words.jsonl").open()]
    assert [[w["word"] for w in r["words"]] for r in records] == [["hi"], ["no"]]
    for record, clip in zip(records, clips.values(), strict=True):
        word = record["words"][0]
        assert 0 <= word["start"] < min(word["end"], len(clip) / 16000)
    report = json.loads((tmp_path / "out.txt.streaming.json").read_text())
    assert report["chunk_ms"] == 160 and report["real_time_factor"] > 0
    assert "streamed in 160 ms chunks" in done.stdout


def test_decoder_refuses_to_stream_a_model_trained_without_chunks(speech_run, tmp_path):
    clip = tmp_path / "hi.wav"
    soundfile.write(clip, tone_and_noise()["hi"], 16000)
    listing = tmp_path / "audio.txt"
    listing.write_text(f"{clip}\n")
    refused = run_command(
        "t2t-lite-decoder", f"--output_dir={speech_run.output_dir}",
        f"--decode_from_file={listing}", f"--decode_hparams={CTC_BEAM_DECODE},chunk_frames=4",
    )  # fmt: skip
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    last = refused.stderr.strip().splitlines()[-1]
    assert last.startswith("t2t-lite-decoder: error:") and "use_dynamic_chunk=True" in last


def test_latency_is_read_in_simulated_real_time():
    timing = StreamTiming(
        audio_ends=[0.2, 0.4, 0.6], computes=[0.05, 0.3, 0.05],
        partials=["", "a", "a b"], final="a b c", final_compute=0.1,
    )  # fmt: skip
    # Chunk 1 starts at 0.4 and ends at 0.7; chunk 2 waits for it: 0.75.
    np.testing.assert_allclose(timing.ready_times(), [0.25, 0.7, 0.75])
    assert timing.final_latency() == pytest.approx(0.25)
    # "a" ended at 0.1 (shown at 0.7), "b" at 0.5 (0.75), "c" at 0.55 (only the final, 0.85).
    np.testing.assert_allclose(timing.word_delays({0: 0.1, 1: 0.5, 2: 0.55}), [0.6, 0.25, 0.3])
    timing.partials = ["", "x", "x y"]  # the words emitted, misspelled
    np.testing.assert_allclose(timing.word_delays({0: 0.1, 1: 0.5}), [0.75, 0.35])
    np.testing.assert_allclose(timing.word_delays({0: 0.1, 1: 0.5}, exact=False), [0.6, 0.25])


STREAM_CLIENT = textwrap.dedent(
    """
    import json, sys
    sys.modules["t2t_lite"] = None  # `import t2t_lite` now raises ImportError
    sys.modules["keras"] = None
    import numpy as np
    import tensorflow as tf

    signatures = tf.saved_model.load(sys.argv[1]).signatures
    audio = np.load(sys.argv[2])
    results = []
    for waveform in audio:  # one connection per recording
        state = signatures["stream_start"]()
        shapes = {name: value.shape for name, value in state.items()}
        partials, blanks, cached, window, fixed = [], [], [], [], True
        for start in range(0, waveform.shape[0], 1600):  # 0.1 s at a time
            chunk = tf.constant(waveform[None, start : start + 1600])
            out = signatures["stream_step"](waveform=chunk, **state)
            partials.append(out.pop("partial").numpy()[0].decode())
            blanks.append([int(out.pop("trailing_blank_frames")), int(out["frames_done"])])
            cached.append(int(out["keys_length"]))  # the keys' frames kept
            window.append(int(out["features_length"]))  # feature frames not yet read
            fixed &= {name: value.shape for name, value in out.items()} == shapes
            state = out
        final = signatures["stream_final"](**state)
        count = int(final["num_words"][0])
        words = [
            [final["words"][0, i].numpy().decode(), float(final["starts"][0, i]),
             float(final["ends"][0, i]), float(final["confidences"][0, i])]
            for i in range(count)
        ]
        results.append({"partials": partials, "blanks": blanks,
                        "final": final["outputs"].numpy()[0].decode(), "words": words,
                        "cached": cached, "window": window, "fixed": fixed})
    print(json.dumps(results))
    """
)


def test_savedmodel_streams_with_explicit_state_without_t2t_lite(run, exported, tmp_path):
    """The export's stream_start/stream_step/stream_final, driven by a process
    without t2t-lite, give the recognizer's final (same chunks, joint search,
    the same left context limit) and its timed words; the state's keys stop
    growing at the limit."""
    path = exported
    metadata = json.loads((pathlib.Path(path) / "assets.extra" / SAVED_MODEL_MANIFEST).read_text())
    assert metadata["stream_chunk_frames"] == 2
    assert {"stream_start", "stream_step", "stream_final"} <= set(metadata["signatures"])

    clips = tone_and_noise()
    audio = pad_rows([clips["hi"], clips["hi"] * 0.0], np.float32)  # a tone, digital silence
    np.save(tmp_path / "audio.npy", audio)
    client = tmp_path / "client.py"
    client.write_text(STREAM_CLIENT)
    done = run_command(sys.executable, str(client), path, str(tmp_path / "audio.npy"))
    assert done.returncode == 0, done.stderr[-3000:]
    tone, silence = json.loads(done.stdout.strip().splitlines()[-1])

    # In process: the same chunks, the partials of the CTC prefix search.
    expected, partials, blanks = recognizer(run, chunk_frames=2, left_chunks=2), [], []
    for start in range(0, len(clips["hi"]), 1600):
        partials.append(expected.accept_waveform(clips["hi"][start : start + 1600]))
        blanks.append([expected.trailing_blank_frames, expected.encoded_frames])
    assert tone["final"] == expected.finalize() == "hi"
    assert tone["fixed"] and silence["fixed"]  # the request is the same size every chunk
    assert max(tone["cached"]) == 2 * 2 < tone["blanks"][-1][1]  # left chunks x chunk frames
    # The features kept: the encoder's next window at most (4 frames an
    # encoder frame, and the front end's 10 more), not the utterance's.
    assert max(tone["window"]) <= 4 * 2 + 10 < 4 * tone["blanks"][-1][1]
    assert [w[0] for w in tone["words"]] == [w.word for w in expected.final_words] == ["hi"]
    for (_, start, end, confidence), timed in zip(tone["words"], expected.final_words,
                                                  strict=True):  # fmt: skip
        assert start == pytest.approx(timed.start, abs=1e-4)
        assert end == pytest.approx(timed.end, abs=1e-4)
        assert confidence == pytest.approx(timed.confidence, abs=1e-3)
    assert 0 <= tone["words"][0][1] < tone["words"][0][2]
    assert tone["partials"] == partials and any(partials) and expected.encoded_frames > 0
    # Endpointing's input: frames since the best path's last label, all of them before one.
    assert tone["blanks"] == blanks and any(b < f for b, f in blanks)
    assert tone["blanks"][-1][0] < tone["blanks"][-1][1]
    assert silence["partials"] == [""] * 10 and silence["final"] == "" and silence["words"] == []
    assert all(b == f for b, f in silence["blanks"])  # (digital silence: no frames at all)
    # An utterance past the longest the state holds (20 s and a chunk) is refused.
    model = ExportedSpeechModel(exported)
    with pytest.raises(tf.errors.InvalidArgumentError, match="longer than the streaming state"):
        model.stream_step(model.start_stream(), np.tile(clips["hi"], 21))


def test_a_long_stream_is_endpointed_into_finals_with_flat_step_compute(exported):
    """scripts/long_stream.py's parts on the export: a stream of pauses and
    tones is cut into utterances whose finals say "hi"; each step is timed
    and the memory read every minute of audio."""
    script = load_script("long_stream.py")
    model = ExportedSpeechModel(exported)
    utterances = [(tone_and_noise()["hi"], "hi")]
    stream, order = script.long_stream(utterances, 70.0, 1.5, model.sample_rate, seed=0)
    assert stream.size >= 70 * model.sample_rate and order == [0] * len(order)
    finals, steps, rss = script.run_stream(model, stream)
    # At most 20 s an utterance (the export's default rule): 4 finals at least.
    assert len(finals) >= 4 and "hi" in " ".join(finals).split()
    assert len(steps) >= stream.size / (model.chunk_seconds * model.sample_rate)
    assert [minute for minute, _ in rss] == [1] and rss[0][1] > 0
    assert script.window_ms([(1.0, 0.002), (2.0, 0.004), (9.0, 1.0)], 0.0, 5.0)["p50"] == 3.0
    assert script.streamed_one_by_one(model, utterances[0][0]) == "hi"


def test_the_python_recognizer_is_endpointed_by_the_session_the_export_is(run, exported):
    """scripts/long_stream.py --output_dir: the server's streaming loop drives
    the Python recognizer (`StreamingRecognizer` as a backend) at the export's chunk, left
    context and rules, and cuts a stream where it cuts the export's."""
    script = load_script("long_stream.py")
    model = ExportedSpeechModel(exported)
    streams = script.recognizer_stream(run.problem, run.output_dir, None, STREAM_EXPORT_DECODE)
    assert streams.chunk_seconds == pytest.approx(model.chunk_seconds)
    assert streams.endpoint_rules == model.endpoint_rules
    tone = tone_and_noise()["hi"]
    stream, _ = script.long_stream([(tone, "hi")], 45.0, 1.5, model.sample_rate, seed=0)
    finals, steps, _ = script.run_stream(streams, stream)
    exported_finals, exported_steps, _ = script.run_stream(model, stream)
    assert len(finals) >= 2 and finals == exported_finals
    assert [end for end, _ in steps] == [end for end, _ in exported_steps]
    assert script.streamed_one_by_one(streams, tone) == "hi"


def test_exports_refuse_the_python_recognizers_rescoring_final(run, tmp_path):
    """stream_final=rescore runs in the Python recognizer only: both exporters
    refuse it in one sentence, writing nothing, rather than export another final."""
    trained = TrainedRun.of(run.output_dir, run.problem)
    config = DecodeConfig.parse(f"{STREAM_EXPORT_DECODE},stream_final=rescore")
    refusal = "stream_final=rescore is the Python recognizer's alone"
    with pytest.raises(export.ExportError, match=refusal):
        export.export_run(trained, str(tmp_path / "saved"), config, 1)
    with pytest.raises(export.ExportError, match=refusal):
        tflite_export.export_tflite_run(trained, str(tmp_path / "lite"), config)
    assert not list(tmp_path.iterdir())
