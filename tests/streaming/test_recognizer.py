"""The streaming recognizer on a tiny trained streaming model: the whole
utterance at once gives the non-streaming transcript, small chunks give
partials as the audio arrives and the same final, silence gives "", and the
decoder streams files with `chunk_frames`."""

import json

import numpy as np
import pytest
import soundfile

from t2t_lite.decoding.decode import decode_cap, decode_hparams
from t2t_lite.decoding.transcriber import WaveformTranscriber
from t2t_lite.streaming.recognizer import StreamingRecognizer, feature_lookahead_frames
from t2t_lite.streaming.simulation import StreamTiming
from tests.helpers import CTC_BEAM_DECODE, NO_DROPOUT, TINY_CTC_SPEECH, run_command
from tests.serving.runs import make_run, pad_rows, speech_features, tone_and_noise

STREAMING_HPARAMS = (
    f"{TINY_CTC_SPEECH},{NO_DROPOUT},ffn_layer=conv_relu_conv,use_dynamic_chunk=True,"
    "audio_causal_normalization=True,max_input_seq_length=300"
)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from t2t_lite import registry
    from t2t_lite.hparam import create_hparams

    clips = tone_and_noise()
    problem = registry.problem("librispeech")
    hparams = create_hparams("transformer_tiny", STREAMING_HPARAMS, problem)
    features = speech_features(list(clips.values()), hparams)
    encoder = problem.feature_encoders(None)["targets"]
    features["targets"] = pad_rows([np.array(encoder.encode(t) + [1]) for t in clips], np.int32)
    return make_run(tmp_path_factory.mktemp("stream"), "librispeech", STREAMING_HPARAMS,
                    features, steps=200)  # fmt: skip


def recognizer(run, chunk_frames, final="search"):
    decode_hp = decode_hparams(f"{CTC_BEAM_DECODE},stream_final={final}")
    return StreamingRecognizer(run.model, run.hparams, decode_hp, run.encoders["targets"],
                               chunk_frames)  # fmt: skip


def test_the_whole_utterance_at_once_gives_the_non_streaming_transcript(run):
    clips = tone_and_noise()
    decode_hp = decode_hparams(CTC_BEAM_DECODE)
    transcriber = WaveformTranscriber(
        run.model, run.hparams, decode_hp, decode_cap(run.hparams, decode_hp),
        run.encoders["targets"],
    )  # fmt: skip
    whole = recognizer(run, chunk_frames=1000)
    for text, clip in clips.items():
        expected = transcriber(clip[None], np.array([len(clip)], np.int32))[0][0][0]
        whole.accept_waveform(clip)
        assert whole.finalize() == expected == text
        whole.reset()


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


def test_lookahead_is_the_window_and_the_delta_deltas(run):
    assert feature_lookahead_frames(run.hparams) == 3 + 4


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
