"""In-process transcription of waveforms (`WaveformTranscriber`): the
SavedModel's speech path, run by the decoder CLI and scripts."""

from __future__ import annotations

import keras
import numpy as np

from t2t_lite import registry
from t2t_lite.decoding.audio.transcriber import WaveformTranscriber
from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.decoding.run_config import RunConfig
from t2t_lite.decoding.search.model_search import decode_cap
from t2t_lite.hparam import create_hparams
from t2t_lite.models.build_model import build_model
from tests.helpers import CTC_BEAM_DECODE, DEGENERATE_WAVEFORMS, TINY_CTC_SPEECH, full_lengths


def _transcriber(decode=CTC_BEAM_DECODE):
    """A transcriber over an untrained tiny speech model with a CTC head."""
    problem = registry.problem("librispeech")
    hparams = create_hparams("transformer_tiny", TINY_CTC_SPEECH, problem)
    model = build_model(problem, hparams, "transformer", None)
    decode_config = DecodeConfig.parse(decode)
    run_config = RunConfig.from_hparams(hparams)
    return WaveformTranscriber(
        model, run_config, decode_config, decode_cap(run_config, decode_config),
        problem.feature_encoders(None)["targets"],
    )  # fmt: skip


def test_degenerate_requests_return_empty_text_in_process():
    transcriber = _transcriber()
    for name, waveform in DEGENERATE_WAVEFORMS.items():
        results = transcriber(waveform.astype(np.float32), full_lengths(waveform))
        assert [result.text for result in results] == [""] * len(waveform), name
        assert [result.scores for result in results] == [(0.0, 0.0)] * len(waveform), name


def test_word_times_are_in_the_recordings_clock(librispeech_flac):
    from t2t_lite.data.audio_io import read_audio

    speech = read_audio(librispeech_flac)[:32000]
    lead = np.zeros(8000, np.float32)  # 0.5 s of exact zeros: cut, then added back
    batch = np.zeros([2, 40000], np.float32)
    batch[0, : len(speech)] = speech
    batch[1, : len(speech) + len(lead)] = np.concatenate([lead, speech])
    # One piece per recording (a tiny model's training limit would cut many);
    # seeded weights, so every worker decodes the same bytes.
    keras.utils.set_random_seed(0)
    transcriber = _transcriber(CTC_BEAM_DECODE + ",segment_seconds=30")
    assert transcriber.timed_words
    first, second = transcriber.timed(batch, [32000, 40000])
    text, words, shifted = first.beams, first.words, second.words
    assert first.text == second.text and [w.word for w in words] == [w.word for w in shifted]
    # Words are split at ASCII spaces only (an untrained model writes any byte).
    assert [w.word for w in words] == [w for w in text[0].split(" ") if w]
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
    for name, waveform in DEGENERATE_WAVEFORMS.items():
        results = transcriber.timed(waveform.astype(np.float32), full_lengths(waveform))
        assert [result.words for result in results] == [()] * len(waveform), name
