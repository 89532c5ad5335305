"""In-process transcription of waveforms (`WaveformTranscriber`): the
SavedModel's speech path, run by the decoder CLI and scripts."""

from __future__ import annotations

import numpy as np

from t2t_lite import registry
from t2t_lite.decoding.decode import decode_cap, decode_hparams
from t2t_lite.decoding.transcriber import WaveformTranscriber
from t2t_lite.hparam import create_hparams
from t2t_lite.models.build import build_model

# A tiny model with a CTC head; 16 output bytes at most.
SPEECH_HPARAMS = (
    "hidden_size=16,filter_size=32,num_heads=2,num_hidden_layers=1,"
    "max_target_seq_length=16,ctc_loss_weight=0.3"
)
# Joint decoding with the CTC head, two beams.
SPEECH_DECODE_HPARAMS = "beam_size=2,alpha=0.6,extra_length=8,ctc_weight=0.3"

# Requests with no speech to find: no samples at all (a client's empty
# buffer), one sample, fewer samples than one frame, all NaN. What a model
# makes of them does not depend on its weights, so an untrained one serves.
DEGENERATE = {
    "empty_1": np.zeros([1, 0]),
    "empty_2": np.zeros([2, 0]),
    "one_sample": np.full([1, 1], 0.5),
    "under_a_frame": np.full([2, 100], 0.25),
    "all_nan": np.full([2, 4000], np.nan),
}


def test_degenerate_requests_return_empty_text_in_process():
    problem = registry.problem("librispeech")
    hparams = create_hparams("transformer_tiny", SPEECH_HPARAMS, problem)
    model = build_model(problem, hparams, "transformer", None)
    decode_hp = decode_hparams(SPEECH_DECODE_HPARAMS)
    transcriber = WaveformTranscriber(
        model,
        hparams,
        decode_hp,
        decode_cap(hparams, decode_hp),
        problem.feature_encoders(None)["targets"],
    )
    for name, waveform in DEGENERATE.items():
        lengths = np.full([len(waveform)], waveform.shape[1], np.int32)
        results = transcriber(waveform.astype(np.float32), lengths)
        assert [beams[0] for beams, _ in results] == [""] * len(waveform), name
        assert [scores for _, scores in results] == [[0.0, 0.0]] * len(waveform), name


def _transcriber(decode=SPEECH_DECODE_HPARAMS):
    problem = registry.problem("librispeech")
    hparams = create_hparams("transformer_tiny", SPEECH_HPARAMS, problem)
    model = build_model(problem, hparams, "transformer", None)
    decode_hp = decode_hparams(decode)
    return WaveformTranscriber(
        model, hparams, decode_hp, decode_cap(hparams, decode_hp),
        problem.feature_encoders(None)["targets"],
    )  # fmt: skip


def test_word_times_are_in_the_recordings_clock(librispeech_flac):
    from t2t_lite.data.audio_io import read_audio

    speech = read_audio(librispeech_flac)[:32000]
    lead = np.zeros(8000, np.float32)  # 0.5 s of exact zeros: cut, then added back
    batch = np.zeros([2, 40000], np.float32)
    batch[0, : len(speech)] = speech
    batch[1, : len(speech) + len(lead)] = np.concatenate([lead, speech])
    # One piece per recording (a tiny model's training limit would cut many).
    transcriber = _transcriber(SPEECH_DECODE_HPARAMS + ",segment_seconds=30")
    assert transcriber.timed_words
    (text, _, words), (shifted_text, _, shifted) = transcriber.timed(batch, [32000, 40000])
    assert text[0] == shifted_text[0] and [w.word for w in words] == [w.word for w in shifted]
    assert " ".join(w.word for w in words) == " ".join(text[0].split())
    assert any(w.start >= 0 for w in words), "no word aligned: nothing to check"
    for word, moved in zip(words, shifted, strict=True):
        if word.start < 0:
            assert moved.start == moved.end == -1.0
            continue
        assert abs(moved.start - word.start - 0.5) < 1e-5
        assert abs(moved.end - word.end - 0.5) < 1e-5 and moved.confidence == word.confidence
        if word.start >= 0:  # aligned (an untrained model's words may not fit)
            assert word.start <= word.end <= 2.0 + 0.2 and 0 < word.confidence <= 1


def test_degenerate_requests_have_no_words():
    transcriber = _transcriber()
    for name, waveform in DEGENERATE.items():
        lengths = np.full([len(waveform)], waveform.shape[1], np.int32)
        results = transcriber.timed(waveform.astype(np.float32), lengths)
        assert [words for _, _, words in results] == [[]] * len(waveform), name
