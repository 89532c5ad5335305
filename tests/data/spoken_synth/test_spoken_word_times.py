"""Tests for t2t_lite.data.spoken_synth.spoken_word_times: when each corpus word is said."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from t2t_lite.data.spoken_synth import audio as spoken_audio
from t2t_lite.data.spoken_synth import grammar, spoken_word_times
from t2t_lite.data.spoken_synth import plan as spoken_plan
from t2t_lite.data.spoken_synth.espeak import EspeakSynthesizer, WordEvent
from t2t_lite.data.spoken_synth.spoken_word_times import WordMismatchError, WordTime

ALL_VOICES = spoken_plan.TRAIN_VOICES + spoken_plan.TEST_VOICES


@pytest.fixture(scope="module")
def synthesizer():
    with EspeakSynthesizer() as shared:
        yield shared


def _test_plan(**changes) -> spoken_plan.UtterancePlan:
    config = spoken_plan.CorpusConfig(split_sizes={"test": 3})
    # "the cat is in the bag": eSpeak NG merges "in the" into one word.
    plan = spoken_plan.plan_corpus(config)["test"][0]
    return dataclasses.replace(plan, **changes)


@pytest.mark.parametrize("voice", ALL_VOICES)
def test_every_vocabulary_word_is_one_espeak_word(synthesizer, voice):
    # Alphabetical order forms none of the multi-word entries (tested below).
    words = grammar.vocabulary()
    text = " ".join(words)
    _, _, events = synthesizer.synthesize_words(text, voice=voice, rate_wpm=200)
    starts = spoken_word_times.word_starts(text, events, first_phoneme=None)
    assert [word for word, _ in starts] == words == text.split(" ")
    samples = [sample for _, sample in starts]
    assert samples == sorted(set(samples))


@pytest.mark.parametrize("voice", ALL_VOICES)
def test_multi_word_entries_are_split_at_the_next_words_first_phoneme(synthesizer, voice):
    text = "there are two cups in the kitchen on the desk"
    _, _, events = synthesizer.synthesize_words(text, voice=voice)
    assert len(events) == len(text.split()) - 3  # "there are", "in the", "on the"

    def first_phoneme(word):
        return synthesizer.synthesize_words(word, voice=voice)[2][0].phonemes[0][0]

    starts = spoken_word_times.word_starts(text, events, first_phoneme)
    assert [word for word, _ in starts] == text.split(" ")
    samples = [sample for _, sample in starts]
    assert samples == sorted(set(samples))
    # A merged word starts at one of its entry's phonemes, after the entry's start.
    the = dict(zip(text.split(" ")[4:6], samples[4:6], strict=True))["the"]
    assert the in [sample for _, sample in events[3].phonemes[1:]]


def test_words_that_do_not_match_fail_loudly():
    phonemes = (("I", 10), ("n", 20), ("D", 30), ("@", 40))
    with pytest.raises(WordMismatchError, match="start and span"):  # a word split in two
        spoken_word_times.word_starts("seventy two", [WordEvent(0, 5, 0), WordEvent(5, 2, 9)], None)
    with pytest.raises(WordMismatchError, match="start and span"):  # a word with no event
        spoken_word_times.word_starts("in the", [WordEvent(3, 3, 0)], None)
    with pytest.raises(WordMismatchError, match="'x' is not among"):
        spoken_word_times.word_starts("in the", [WordEvent(0, 2, 0, phonemes)], lambda word: "x")
    starts = spoken_word_times.word_starts("in the", [WordEvent(0, 2, 0, phonemes)], lambda w: "'D")
    assert starts == [("in", 10), ("the", 30)]


def test_locate_words_trims_silence_inside_each_window():
    speech = np.zeros(3200)
    speech[400:1000] = 0.8  # word one, after a pause
    speech[1000:1100] = 0.004  # below 1% of the peak: not sounding
    speech[1600:2500] = -0.5  # word two
    starts = [("one", 0), ("two", 1500 * 22050 // 16000)]  # at eSpeak NG's rate
    located = spoken_word_times.locate_words(starts, 22050, speech, lead_samples=16)
    first_block = 5 * 80  # tiled from the window's start, 80-sample blocks
    assert located[0] == WordTime("one", (16 + first_block) / 16000, (16 + 1040) / 16000)
    assert located[1].start_s == (16 + 1500 + 80) / 16000  # 2067 samples at 22.05 kHz: 1500
    assert located[1].end_s == (16 + 1500 + 13 * 80) / 16000


def test_real_utterance_words_are_ordered_inside_the_audio_and_sound(synthesizer):
    plan = _test_plan()
    assert " in the " in f" {plan.text} " and plan.snr_db is not None
    waveform, words = spoken_audio.render_utterance(plan, synthesizer)
    assert [word.word for word in words] == plan.text.split(" ")
    lead = round(plan.lead_silence_s * 16000)
    noise_rms = np.sqrt(np.mean(np.square(waveform[:lead].astype(np.float64))))
    previous_end = plan.lead_silence_s
    for word in words:
        assert previous_end <= word.start_s < word.end_s <= waveform.size / 16000, words
        assert 0.04 <= word.end_s - word.start_s <= 0.8, word
        span = waveform[round(word.start_s * 16000) : round(word.end_s * 16000)]
        assert np.sqrt(np.mean(np.square(span.astype(np.float64)))) > 5 * noise_rms, word
        previous_end = word.end_s
    assert words[-1].end_s <= (waveform.size - round(plan.tail_silence_s * 16000)) / 16000


def test_lead_silence_shifts_word_times_exactly(synthesizer):
    short = spoken_audio.render_utterance(_test_plan(lead_silence_s=0.05), synthesizer)[1]
    long = spoken_audio.render_utterance(_test_plan(lead_silence_s=0.2), synthesizer)[1]
    assert long == spoken_word_times.shift_word_times(short, 3200 - 800)
    assert long != short


def test_word_times_file_round_trips(tmp_path):
    table = {
        "901-3-0000": [WordTime("go", 0.1, 0.25), WordTime("left", 0.3125, 0.5)],
        "901-4-0000": [WordTime("go", 1e-4, 2.0)],
    }
    path = str(tmp_path / "word_times.json")
    spoken_word_times.write_word_times(path, table)
    assert spoken_word_times.load_word_times(path) == table
    assert len(open(path, encoding="utf-8").read().splitlines()) == 2 + len(table)
