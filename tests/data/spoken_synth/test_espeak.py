"""Tests for t2t_lite.data.spoken_synth.espeak: offline eSpeak NG synthesis (no network)."""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

from t2t_lite.data.spoken_synth import espeak


@pytest.fixture(scope="module")
def synthesizer():
    with espeak.EspeakSynthesizer() as shared:
        yield shared


def _seconds(synthesizer, text, **kwargs):
    waveform, sample_rate = synthesizer.synthesize(text, **kwargs)
    return len(waveform) / sample_rate


def _rms(waveform):
    return float(np.sqrt(np.mean(np.square(waveform))))


def test_hello_world_is_audible_speech(synthesizer):
    waveform, sample_rate = synthesizer.synthesize("hello world")
    assert sample_rate == synthesizer.sample_rate == 22050
    assert waveform.dtype == np.float32 and waveform.ndim == 1
    assert np.abs(waveform).max() <= 1.0
    assert _rms(waveform) > 0.02  # measured about 0.08
    assert 0.3 < len(waveform) / sample_rate < 3.0


def test_duration_grows_with_words_and_shrinks_with_rate(synthesizer):
    two = _seconds(synthesizer, "hello world")
    six = _seconds(synthesizer, "hello world how are you today")
    twelve = _seconds(synthesizer, "hello world how are you today my friend I hope so")
    assert two < six < twelve
    slow = _seconds(synthesizer, "hello world how are you today", rate_wpm=120)
    fast = _seconds(synthesizer, "hello world how are you today", rate_wpm=350)
    assert fast < six < slow
    assert fast < 0.7 * slow


@pytest.mark.parametrize("voice", ["en-us", "en-gb+f3", "en-us+klatt"])
def test_same_arguments_give_identical_samples(synthesizer, voice):
    first, _ = synthesizer.synthesize("the same words again", voice=voice)
    second, _ = synthesizer.synthesize("the same words again", voice=voice)
    np.testing.assert_array_equal(first, second)


def test_samples_do_not_depend_on_history_or_process(synthesizer):
    # In-process eSpeak carries state from one utterance to the next, and
    # breathy variants (f3) draw libc rand(); neither may leak into the output.
    expected, _ = synthesizer.synthesize("seven clever bakers", voice="en-us+f3")
    with espeak.EspeakSynthesizer() as fresh:  # a new helper process
        fresh.synthesize("something else entirely first", voice="en-gb-scotland")
        again, _ = fresh.synthesize("seven clever bakers", voice="en-us+f3")
    np.testing.assert_array_equal(again, expected)


def test_concurrent_threads_get_the_same_samples(synthesizer):
    expected, _ = synthesizer.synthesize("thread safety", voice="en-us")
    results = [None] * 4

    def speak(index):
        results[index] = synthesizer.synthesize("thread safety", voice="en-us")[0]

    threads = [threading.Thread(target=speak, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for result in results:
        np.testing.assert_array_equal(result, expected)


def test_several_distinct_english_voices_and_variants(synthesizer):
    voices = synthesizer.list_voices("en")
    languages = {voice.language for voice in voices}
    assert {"en-us", "en-gb", "en-gb-scotland", "en-029"} <= languages
    assert all(v.language.startswith("en") for v in voices)
    variants = synthesizer.list_variants()
    assert {"m1", "m3", "f1", "f3", "klatt"} <= set(variants)

    # Four voice/variant pairs a corpus could use; all must sound different.
    text = "four different speakers"
    waveforms = {
        name: synthesizer.synthesize(text, voice=name)[0]
        for name in ["en-us", "en-gb-scotland+m3", "en-029+f2", "en-gb+klatt"]
    }
    names = sorted(waveforms)
    for i, first in enumerate(names):
        for second in names[i + 1 :]:
            a, b = waveforms[first], waveforms[second]
            assert len(a) != len(b) or not np.allclose(a, b, atol=1e-3), (first, second)


def test_variant_argument_and_identifier_forms_agree(synthesizer):
    plus_form, _ = synthesizer.synthesize("hi there", voice="en-us+f1")
    argument_form, _ = synthesizer.synthesize("hi there", voice="en-us", variant="f1")
    identifier_form, _ = synthesizer.synthesize("hi there", voice="gmw/en-US+f1")
    np.testing.assert_array_equal(plus_form, argument_form)
    np.testing.assert_array_equal(plus_form, identifier_form)
    # "en" is eSpeak's preferred English voice, British English.
    np.testing.assert_array_equal(
        synthesizer.synthesize("hi there", voice="en")[0],
        synthesizer.synthesize("hi there", voice="en-gb")[0],
    )


def test_unknown_voice_and_variant_name_the_choices(synthesizer):
    with pytest.raises(espeak.UnknownVoiceError, match="en-gb-scotland"):
        synthesizer.synthesize("hello", voice="en-mars")
    with pytest.raises(espeak.UnknownVoiceError, match="f3"):
        synthesizer.synthesize("hello", voice="en-us", variant="no-such-variant")
    with pytest.raises(ValueError):  # UnknownVoiceError is a ValueError too
        synthesizer.synthesize("hello", voice="xx-unknown")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"text": "  "}, "empty"),
        ({"text": "hi", "rate_wpm": 20}, "rate_wpm"),
        ({"text": "hi", "pitch": 101}, "pitch"),
        ({"text": "hi", "voice": "en-us+f1", "variant": "f2"}, "not both"),
    ],
)
def test_bad_arguments_raise_value_error(synthesizer, kwargs, message):
    with pytest.raises(ValueError, match=message):
        synthesizer.synthesize(**kwargs)


def test_missing_package_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "espeakng_loader", None)  # import fails
    with pytest.raises(espeak.EspeakError, match="pip install espeakng-loader"):
        espeak.EspeakSynthesizer()


def test_unloadable_library_is_a_clear_error(tmp_path):
    fake_library = tmp_path / "libespeak-ng.so"
    fake_library.write_bytes(b"not a shared library")
    with pytest.raises(espeak.EspeakError, match="Cannot load eSpeak NG"):
        espeak.EspeakSynthesizer(library_path=str(fake_library), data_path=str(tmp_path))


def test_missing_voice_data_is_a_clear_error(tmp_path):
    with pytest.raises(espeak.EspeakError, match="failed to initialize"):
        espeak.EspeakSynthesizer(library_path=espeak._find_espeak()[0], data_path=str(tmp_path))


def test_word_events_give_each_word_and_where_it_starts(synthesizer):
    text = "ben will pull the map tomorrow"
    waveform, rate, words = synthesizer.synthesize_words(text)
    np.testing.assert_array_equal(waveform, synthesizer.synthesize(text)[0])
    assert rate == synthesizer.sample_rate
    assert [(w.text_start, w.text_length) for w in words] == [
        (0, 3), (4, 4), (9, 4), (14, 3), (18, 3), (22, 8)
    ]  # fmt: skip
    samples = [word.sample for word in words]
    assert samples[0] == 0 and samples == sorted(set(samples)) and samples[-1] < waveform.size
    # Measured: "tomorrow" starts at 23054 of 33895 samples (en-us, 175 wpm).
    assert 0.6 < samples[-1] / waveform.size < 0.8
    # Each word's phonemes, in order, start at or after its event (which can
    # be the previous word's last phoneme: "pull" at the "l" of "will").
    assert all(word.phonemes and word.phonemes[0][1] >= word.sample for word in words)
    phoneme_samples = [sample for word in words for _, sample in word.phonemes]
    assert phoneme_samples == sorted(phoneme_samples) and phoneme_samples[-1] < waveform.size
    assert words[2].phonemes[0][1] > words[1].phonemes[-1][1] == words[2].sample


def test_a_multi_word_entry_is_one_word_with_all_their_phonemes(synthesizer):
    # eSpeak NG's dictionary reads "in the" as one entry: one event, both words' phonemes.
    _, _, words = synthesizer.synthesize_words("go in the yard")
    assert [(w.text_start, w.text_length) for w in words] == [(0, 2), (3, 2), (10, 4)]
    assert [name for name, _ in words[1].phonemes][-2:][0] == "D"  # the "th" of "the"
