"""Named listening conditions and the noisy test splits made of them: each
condition changes what it names (level, SNR, reverberation time, measured on
the output) and only that, the same way every time."""

from __future__ import annotations

import os

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.data import shards
from t2t_lite.data.audio_augment.conditions import (
    CONDITIONS,
    NOISE_KINDS,
    Condition,
    apply_condition,
)
from t2t_lite.data.audio_augment.noise import _active_power, mains_hum
from t2t_lite.data.noisy_splits import condition_split, write_noisy_splits
from t2t_lite.data.problem import EVAL, TEST, TRAIN, DataError
from t2t_lite.problems import mini_librispeech
from tests.helpers import generate_from_tree, run_command

RATE = 16000


def _speech_like(seconds=1.0, level=0.1):
    """Harmonics under a syllable-rate envelope, with an exact-zero pause."""
    t = np.arange(int(seconds * RATE)) / RATE
    voiced = sum(np.sin(2 * np.pi * f * t) for f in (180, 360, 1100, 2400))
    waveform = level * voiced * (0.6 + 0.4 * np.sin(2 * np.pi * 4 * t)) / 2
    waveform[len(t) // 3 : len(t) // 3 + RATE // 10] = 0.0
    return waveform.astype(np.float32)


def _db(power):
    return 10 * np.log10(power)


def test_a_floor_plays_alone_before_and_after_at_its_level_and_under_the_speech():
    speech = _speech_like()
    condition = CONDITIONS["floor60_lead1"]
    out = apply_condition(speech, condition, seed=1)
    lead, tail = RATE, RATE // 2
    assert out.shape == (lead + speech.size + tail,)
    alone = np.concatenate([out[:lead], out[-tail:]])
    assert abs(_db(np.mean(alone.astype(np.float64) ** 2)) - (-60.0)) < 0.3
    under = out[lead : lead + speech.size] - speech
    assert abs(_db(np.mean(under.astype(np.float64) ** 2)) - (-60.0)) < 0.3
    # Nothing else changed: the difference is the floor's white noise.
    assert abs(np.corrcoef(under[:-1], under[1:])[0, 1]) < 0.05


@pytest.mark.parametrize("kind", [k for k in NOISE_KINDS if k != "babble"] + ["babble"])
@pytest.mark.parametrize("snr_db", [20.0, 10.0])
def test_each_noise_kind_is_added_at_its_snr(kind, snr_db):
    speech = _speech_like(level=0.2)
    voices = [_speech_like(1.3, 0.1), _speech_like(0.7, 0.3), _speech_like(0.9, 0.05)]
    out = apply_condition(
        speech, CONDITIONS[f"{kind}_{int(snr_db)}db"], seed=2, babble_voices=voices
    )
    lead = RATE // 2
    padded = np.pad(speech, (lead, lead))
    noise = out.astype(np.float64) - padded
    speech_power = float(_active_power(tf.constant(speech), RATE // 100))
    measured = _db(speech_power / np.mean(noise**2))
    assert abs(measured - snr_db) < 0.1, (kind, measured)


def test_hum_is_mains_frequency_and_its_harmonics():
    hum = mains_hum(RATE, seed=[3, 4]).numpy()
    spectrum = np.abs(np.fft.rfft(hum))
    hertz = np.fft.rfftfreq(RATE, 1 / RATE)
    fundamental = hertz[np.argmax(spectrum)]
    assert fundamental in (50.0, 60.0)
    on_harmonics = np.isclose(hertz % fundamental, 0) & (hertz > 0)
    assert np.sum(spectrum[on_harmonics] ** 2) / np.sum(spectrum**2) > 0.999
    assert abs(np.mean(hum**2) - 1.0) < 1e-3


def test_a_babble_condition_needs_other_utterances():
    with pytest.raises(ValueError, match="babble_voices"):
        apply_condition(_speech_like(1.0, 0.5), CONDITIONS["babble_20db"], seed=1)


def test_reverberation_decays_in_the_rooms_rt60():
    impulse = np.zeros(RATE, np.float32)
    impulse[0] = 0.5
    out = apply_condition(impulse, CONDITIONS["reverb_rt05"], seed=5).astype(np.float64)
    assert out.shape == impulse.shape
    # Schroeder's backward integral; T60 from its -5 to -25 dB fall (T20 x 3).
    decay = _db(np.cumsum(out[::-1] ** 2)[::-1] / np.sum(out**2))
    t5, t25 = np.argmax(decay < -5) / RATE, np.argmax(decay < -25) / RATE
    assert abs(3 * (t25 - t5) - 0.5) < 0.06, 3 * (t25 - t5)


def test_the_same_seed_renders_the_same_recording_and_another_differs():
    speech = _speech_like()
    condition = CONDITIONS["pink_10db"]
    first = apply_condition(speech, condition, seed=9)
    np.testing.assert_array_equal(first, apply_condition(speech, condition, seed=9))
    assert not np.array_equal(first, apply_condition(speech, condition, seed=10))


def test_conditions_refuse_what_they_cannot_mean():
    with pytest.raises(ValueError, match="noise must be one of"):
        Condition(noise="rain", snr_db=5.0)
    with pytest.raises(ValueError, match="go together"):
        Condition(noise="white")
    with pytest.raises(ValueError, match=">= 0"):
        Condition(lead_seconds=-1.0)


class SmallMini(mini_librispeech.MiniLibrispeech):
    num_shards = {TRAIN: 1, EVAL: 1, TEST: 1}
    workers = 2


@pytest.fixture(scope="module")
def mini_data(tmp_path_factory, mini_librispeech_mini):
    problem = SmallMini()
    root = tmp_path_factory.mktemp("noisy")
    return problem, generate_from_tree(problem, root, mini_librispeech_mini), root


def _records(problem, data_dir, split):
    paths = shards.existing_shards(data_dir, problem.name, split)
    return [problem.decode_example(r) for r in tf.data.TFRecordDataset(paths)]


def test_noisy_splits_hold_the_test_utterances_under_each_condition(mini_data):
    problem, data_dir, _ = mini_data
    reports = write_noisy_splits(problem, data_dir)
    assert sorted(reports) == sorted(condition_split(name) for name in CONDITIONS)
    clean = {r["utterance_id"].numpy(): r for r in _records(problem, data_dir, TEST)}
    for name, condition in CONDITIONS.items():
        noisy = _records(problem, data_dir, condition_split(name))
        assert reports[condition_split(name)].written == len(noisy) == len(clean) == 6
        extra = round((condition.lead_seconds + condition.tail_seconds) * RATE)
        for record in noisy:
            original = clean[record["utterance_id"].numpy()]
            for field in ("transcript", "speaker_id", "speaker_gender"):
                assert record[field].numpy() == original[field].numpy()
            np.testing.assert_array_equal(record["targets"], original["targets"])
            assert record["waveform"].shape[0] == original["waveform"].shape[0] + extra
            assert not np.array_equal(record["waveform"].numpy()[: original["waveform"].shape[0]],
                                      original["waveform"].numpy())  # fmt: skip
    # Kept when they exist; written the same again when they do not.
    first = open(shards.existing_shards(data_dir, problem.name, "test_babble_10db")[0], "rb").read()
    assert all(r.reused for r in write_noisy_splits(problem, data_dir).values())
    for path in shards.existing_shards(data_dir, problem.name, "test_babble_10db"):
        os.remove(path)
    write_noisy_splits(problem, data_dir)
    again = open(shards.existing_shards(data_dir, problem.name, "test_babble_10db")[0], "rb").read()
    assert again == first


def test_noisy_splits_need_speech(tmp_path):
    from tests.data.conftest import SmallReverse

    with pytest.raises(DataError, match="for speech problems"):
        write_noisy_splits(SmallReverse(), str(tmp_path))


def test_datagen_writes_the_noisy_splits_the_decoder_reads(mini_data):
    _, _, root = mini_data
    data_dir = root / "cli_data"
    result = run_command(
        "t2t-lite-datagen", "--problem=mini_librispeech", f"--data_dir={data_dir}",
        f"--tmp_dir={root / 'raw'}", "--noisy_test",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert "test_floor60_lead1: 6 examples written" in result.stdout
    assert shards.existing_shards(str(data_dir), "mini_librispeech", "test_reverb_rt05")
