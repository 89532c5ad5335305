"""Tests for the t2t_lite.data.audio_augment package: properties checked against NumPy."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import soundfile
import tensorflow as tf

from t2t_lite.data.audio_augment import (
    AUGMENT_HPARAMS,
    AugmentConfig,
    augment_waveform,
    microphone,
    pause_after,
    pause_before,
)
from t2t_lite.data.audio_augment.band import band_limit
from t2t_lite.data.audio_augment.floor import add_floor
from t2t_lite.data.audio_augment.noise import add_noise, colored_noise, load_noise_bank
from t2t_lite.data.audio_augment.pause import append_pause, prepend_pause
from t2t_lite.data.audio_augment.reverb import load_rir_bank, reverberate, synthetic_rir
from t2t_lite.data.audio_augment.sound_events import EVENT_SECONDS, sound_events
from t2t_lite.data.audio_augment.speed import speed_perturb
from t2t_lite.data.audio_augment.volume import volume_perturb
from t2t_lite.data.audio_augment.waveform import next_fast_length
from t2t_lite.hparam import HParams

RATE = 16000
ALL_ON = AugmentConfig(
    speed_factors=(0.9, 1.0, 1.1),
    volume_db=(-6.0, 6.0),
    noise_prob=1.0,
    noise_snr_db=(5.0, 20.0),
    reverb_prob=1.0,
)


def _sine(hertz, samples, amplitude=0.5, rate=RATE):
    return (amplitude * np.sin(2 * np.pi * hertz * np.arange(samples) / rate)).astype(np.float32)


def _speech_like(samples=4000):
    """A few harmonics with an exact-zero gap: something to augment."""
    waveform = sum(_sine(f, samples, 0.1) for f in (220, 440, 1250))
    waveform[samples // 3 : samples // 2] = 0.0
    return waveform.astype(np.float32)


def _spectrum(waveform, rate=RATE, zero_pad=8):
    windowed = waveform * np.hanning(len(waveform))
    magnitudes = np.abs(np.fft.rfft(windowed, zero_pad * len(waveform)))
    return np.fft.rfftfreq(zero_pad * len(waveform), 1 / rate), magnitudes


def _power_db(waveform):
    return 10 * np.log10(np.mean(np.square(np.asarray(waveform, np.float64))))


# ------------------------------------------------------------------ determinism


@pytest.mark.parametrize(
    "augment",
    [
        lambda x, s: speed_perturb(x, [0.9, 1.1], s),
        lambda x, s: volume_perturb(x, -6.0, 6.0, s),
        lambda x, s: add_noise(x, None, 0.0, 20.0, s),
        lambda x, s: add_noise(x, np.random.RandomState(1).randn(3, 999), 0.0, 20.0, s),
        lambda x, s: reverberate(x, None, s),
        lambda x, s: augment_waveform(x, ALL_ON, s),
    ],
    ids=["speed", "volume", "noise", "noise_bank", "reverb", "all"],
)
def test_same_seed_same_output_other_seeds_differ(augment):
    waveform = _speech_like()
    first = augment(waveform, tf.constant([3, 4], tf.int64)).numpy()
    again = augment(waveform, tf.constant([3, 4], tf.int64)).numpy()
    np.testing.assert_array_equal(first, again)
    # Speed has only two outcomes, so look for a difference among several seeds.
    others = [augment(waveform, tf.constant([s, 4], tf.int64)).numpy() for s in range(5, 11)]
    assert any(o.shape != first.shape or not np.array_equal(o, first) for o in others)


def test_seeds_past_32_bits_are_reduced_as_xla_reads_them():
    waveform = _speech_like()
    high = tf.constant([3 + (1 << 32), 4], tf.int64)
    np.testing.assert_array_equal(
        augment_waveform(waveform, ALL_ON, high), augment_waveform(waveform, ALL_ON, [3, 4])
    )


# ------------------------------------------------------------------------ speed


@pytest.mark.parametrize("factor", [0.9, 1.1, 0.95, 1.05, 1.5])
@pytest.mark.parametrize("samples", [1000, 1001, 4799])
def test_speed_length_is_samples_over_factor(factor, samples):
    output = speed_perturb(_sine(300, samples), [factor], seed=1)
    assert abs(output.shape[0] - samples / factor) <= 1


def test_speed_factor_one_is_the_input_bit_for_bit():
    waveform = np.random.RandomState(0).uniform(-1, 1, 3001).astype(np.float32)
    np.testing.assert_array_equal(speed_perturb(waveform, [1.0], seed=1), waveform)
    # Drawn from a list: find seeds that pick 1.0 (same length) and check them.
    picked_one = 0
    for seed in range(12):
        output = speed_perturb(waveform, [0.9, 1.0, 1.1], seed=[seed, 0]).numpy()
        if output.shape == waveform.shape:
            np.testing.assert_array_equal(output, waveform)
            picked_one += 1
    assert 0 < picked_one < 12


@pytest.mark.parametrize("factor", [1.1, 0.9])
def test_speed_scales_a_sine_without_spurious_peaks(factor):
    output = speed_perturb(_sine(1000, 8000), [factor], seed=1).numpy()
    hertz, magnitudes = _spectrum(output)
    peak = hertz[np.argmax(magnitudes)]
    assert abs(peak - 1000 * factor) < 3, peak
    far = np.abs(hertz - peak) > 50
    assert 20 * np.log10(magnitudes[far].max() / magnitudes.max()) < -60
    # The amplitude is kept.
    assert abs(np.sqrt(np.mean(output**2)) - 0.5 / np.sqrt(2)) < 0.005


def test_speed_up_removes_what_would_pass_nyquist_instead_of_aliasing():
    # 7.8 kHz at 1.1x would be 8.58 kHz: above 8 kHz, so it must go, not fold
    # back to 7.42 kHz (which plain interpolation does).
    output = speed_perturb(_sine(7800, 8000), [1.1], seed=1).numpy()
    assert _power_db(output) - _power_db(_sine(7800, 8000)) < -40


# ----------------------------------------------------------------------- volume


def test_volume_gain_within_range_and_clipped():
    waveform = _sine(440, 2000, amplitude=0.1)
    gains = []
    for seed in range(20):
        output = volume_perturb(waveform, -6.0, 3.0, seed=[seed, 1]).numpy()
        ratio = output / np.where(waveform == 0, 1, waveform)
        nonzero = waveform != 0
        assert np.allclose(ratio[nonzero], ratio[nonzero][0], rtol=1e-5)
        gains.append(20 * np.log10(ratio[nonzero][0]))
    assert min(gains) >= -6.0 - 1e-4 and max(gains) <= 3.0 + 1e-4
    assert max(gains) - min(gains) > 3  # really drawn, not constant
    loud = volume_perturb(_sine(440, 2000, amplitude=0.9), 6.0, 6.0, seed=1).numpy()
    assert loud.max() == 1.0 and loud.min() == -1.0


# ------------------------------------------------------------------------ noise


@pytest.mark.parametrize("bank", [None, "bank"])
@pytest.mark.parametrize("snr_db", [0.0, 12.5])
def test_noise_snr_is_relative_to_the_non_silent_samples(bank, snr_db):
    # Half the utterance is exact zeros: an SNR over all samples would be 3 dB off.
    sound = _sine(500, 4000, amplitude=0.2)
    waveform = np.concatenate([sound, np.zeros(4000, np.float32)])
    noise_bank = np.random.RandomState(2).randn(2, 3000).astype(np.float32) if bank else None
    for seed in range(3):
        noisy = add_noise(waveform, noise_bank, snr_db, snr_db, seed=[seed, 7]).numpy()
        added = noisy - waveform
        assert abs(_power_db(sound) - _power_db(added) - snr_db) < 0.5
        # Noise lands in the digital silence too.
        assert np.mean(np.abs(added[4000:])) > 0


def test_noise_snr_is_drawn_in_range():
    waveform = _sine(500, 4000, amplitude=0.2)
    snrs = [
        _power_db(waveform)
        - _power_db(add_noise(waveform, None, 5.0, 15.0, seed=[s, 0]).numpy() - waveform)
        for s in range(12)
    ]
    assert 5.0 - 0.5 < min(snrs) and max(snrs) < 15.0 + 0.5
    assert max(snrs) - min(snrs) > 3


def test_noise_on_silence_adds_nothing():
    silence = np.zeros(1000, np.float32)
    np.testing.assert_array_equal(add_noise(silence, None, 5.0, 5.0, seed=1), silence)


def _log_slope(noise, rate=RATE):
    """Least-squares slope of log power over log frequency, 100 Hz .. 6 kHz."""
    segments = noise[: len(noise) // 512 * 512].reshape(-1, 512)
    power = np.mean(np.abs(np.fft.rfft(segments * np.hanning(512), axis=1)) ** 2, axis=0)
    hertz = np.fft.rfftfreq(512, 1 / rate)
    band = (hertz >= 100) & (hertz <= 6000)
    return np.polyfit(np.log10(hertz[band]), np.log10(power[band]), 1)[0]


def test_colored_noise_spectra_slope_as_asked():
    white, pink, brown = (colored_noise(32000, beta, seed=[1, 2]).numpy() for beta in (0, 1, 2))
    for noise in (white, pink, brown):
        assert abs(np.mean(noise**2) - 1.0) < 1e-3
    slopes = [_log_slope(noise) for noise in (white, pink, brown)]
    assert abs(slopes[0]) < 0.2 and abs(slopes[1] + 1) < 0.25 and abs(slopes[2] + 2) < 0.25, slopes

    def low_share(noise):
        hertz, magnitudes = _spectrum(noise, zero_pad=1)
        return np.sum(magnitudes[hertz < 500] ** 2) / np.sum(magnitudes**2)

    assert low_share(white) < low_share(pink) < low_share(brown)


def _kind(noise) -> str:
    """ "events" when silent between sounds or its power comes in bursts (steady
    noise's kurtosis is 3 or less), "hum" when nearly all the power is at
    multiples of 50 or 60 Hz, else the slope."""
    if np.mean(np.abs(noise) < 1e-7) > 0.05 or np.mean(noise**4) / np.mean(noise**2) ** 2 > 6:
        return "events"
    spectrum = np.abs(np.fft.rfft(noise)) ** 2
    hertz = np.fft.rfftfreq(len(noise), 1 / RATE)
    for mains in (50, 60):
        if np.sum(spectrum[(hertz % mains == 0) & (hertz > 0)]) > 0.99 * np.sum(spectrum):
            return "hum"
    return str(round(_log_slope(noise)))


def test_generated_noise_varies_its_kind_with_the_seed():
    waveform = _sine(500, 8000, amplitude=0.2)
    kinds = {
        _kind(add_noise(waveform, None, 0.0, 0.0, seed=[s, 3]).numpy() - waveform)
        for s in range(24)
    }
    assert kinds == {"0", "-1", "-2", "hum", "events"}


def test_sound_events_are_sparse_short_sounds_at_unit_rms():
    sound = sound_events(10 * RATE, seed=[7, 8]).numpy()
    assert np.mean(np.square(sound)) == pytest.approx(1.0, rel=1e-4)
    np.testing.assert_array_equal(sound, sound_events(10 * RATE, seed=[7, 8]).numpy())
    assert not np.array_equal(sound, sound_events(10 * RATE, seed=[7, 9]).numpy())
    # Runs of sound no longer than an event's window (overlaps aside), silence between.
    block = RATE // 100  # 10 ms
    sounding = np.abs(sound).reshape(-1, block).max(axis=1) > 1e-4
    edges = np.flatnonzero(np.diff(np.concatenate([[0], sounding.astype(int), [0]])))
    runs = (edges[1::2] - edges[::2]) / 100
    assert 0.2 < 1 - sounding.mean() < 0.98
    assert 1 <= len(runs) <= 64 and np.median(runs) <= EVENT_SECONDS
    assert sound_events(0, seed=[1, 1]).shape == (0,)


# ----------------------------------------------------------------------- reverb


@pytest.mark.parametrize("bank", [None, "bank"])
def test_reverb_keeps_length_and_level_and_adds_a_tail(bank):
    rir_bank = None
    if bank:
        decay = np.exp(-np.arange(2000) / 300.0) * np.random.RandomState(3).randn(2, 2000)
        decay[:, 0] = 3.0
        rir_bank = decay.astype(np.float32)
    waveform = _speech_like(4001)
    output = reverberate(waveform, rir_bank, seed=5).numpy()
    assert output.shape == waveform.shape and np.all(np.isfinite(output))
    assert abs(_power_db(output) - _power_db(waveform)) < 0.1
    # The exact-zero gap is filled by the room's tail.
    gap = slice(4001 // 3 + 50, 4001 // 3 + 150)
    assert np.mean(np.abs(output[gap])) > 1e-3 and np.all(waveform[gap] == 0)
    # The direct path stays at t=0: an impulse comes out where it went in.
    impulse = np.zeros(3000, np.float32)
    impulse[100] = 0.5
    assert np.argmax(np.abs(reverberate(impulse, rir_bank, seed=5).numpy())) == 100


def test_synthetic_rir_decays_with_direct_path_first():
    for seed in range(4):
        rir = synthetic_rir(seed=[seed, 1]).numpy()
        assert rir[0] == 1.0 and np.argmax(np.abs(rir)) == 0
        drr_db = 10 * np.log10(1.0 / np.sum(rir[1:] ** 2))
        assert -0.01 <= drr_db <= 10.01
        early, late = np.sum(rir[1:1600] ** 2), np.sum(rir[6400:8000] ** 2)
        assert late < early * 1e-2  # -60 dB by 0.8 s at the slowest


# ------------------------------------------------------------------- file banks


def test_load_noise_bank_from_a_directory(tmp_path):
    rng = np.random.RandomState(4)
    soundfile.write(tmp_path / "long.wav", 0.1 * rng.randn(2 * RATE + RATE // 2), RATE)
    soundfile.write(tmp_path / "short.wav", 0.1 * rng.randn(4000), 8000)  # 0.5 s
    soundfile.write(tmp_path / "silent.wav", np.zeros(RATE), RATE)
    soundfile.write(tmp_path / "notes.txt.bak", np.zeros(10), RATE, format="WAV")
    (tmp_path / "sub").mkdir()
    soundfile.write(tmp_path / "sub" / "deep.FLAC", 0.1 * rng.randn(RATE), RATE, format="FLAC")
    bank = load_noise_bank(str(tmp_path), RATE, clip_seconds=1.0)
    # long: 2 full clips (the half-second end dropped), short: 1 tiled, deep: 1.
    assert bank.shape == (4, RATE) and bank.dtype == np.float32
    assert np.all(np.mean(bank**2, axis=1) > 1e-4)
    short = bank[2]  # sorted: long.wav, short.wav, sub/deep.FLAC
    np.testing.assert_array_equal(short[:8000], short[8000:])  # tiled from 0.5 s
    assert load_noise_bank(str(tmp_path), RATE, clip_seconds=1.0, max_seconds=2.0).shape[0] == 2
    noisy = add_noise(_sine(300, 3000, 0.2), bank, 10.0, 10.0, seed=1)
    assert noisy.shape == (3000,)


def test_load_banks_refuse_empty_or_silent_directories(tmp_path):
    with pytest.raises(ValueError, match="No .wav or .flac"):
        load_noise_bank(str(tmp_path))
    with pytest.raises(ValueError, match="does not exist"):
        load_rir_bank(str(tmp_path / "missing"))
    soundfile.write(tmp_path / "silent.wav", np.zeros(RATE), RATE)
    with pytest.raises(ValueError, match="silent"):
        load_noise_bank(str(tmp_path))


def test_load_rir_bank_starts_at_the_direct_path(tmp_path):
    rir = np.zeros(3000)
    rir[100] = 0.8  # 100 samples of pre-delay
    rir[101:] = 0.2 * np.exp(-np.arange(2899) / 200.0)
    soundfile.write(tmp_path / "a.wav", rir, RATE, subtype="FLOAT")
    soundfile.write(tmp_path / "b.wav", rir[:1000], RATE, subtype="FLOAT")
    bank = load_rir_bank(str(tmp_path), RATE, max_seconds=0.1)
    assert bank.shape == (2, 1600)
    assert np.all(np.argmax(np.abs(bank), axis=1) == 0)
    np.testing.assert_allclose(np.sum(bank.astype(np.float64) ** 2, axis=1), 1.0, rtol=1e-5)
    assert np.all(bank[1, 900:] == 0)  # the shorter one is zero-padded


# ------------------------------------------------------- graphs and edge cases


def test_in_tf_function_and_tf_data_with_unknown_lengths(tmp_path):
    (tmp_path / "noise").mkdir()
    (tmp_path / "rirs").mkdir()
    noise = 0.1 * np.random.RandomState(5).randn(RATE)
    soundfile.write(tmp_path / "noise" / "n.wav", noise, RATE)
    soundfile.write(tmp_path / "rirs" / "r.wav", np.exp(-np.arange(800) / 100.0), RATE)
    config = AugmentConfig(
        speed_factors=(0.9, 1.1),
        volume_db=(-3.0, 3.0),
        noise_prob=1.0,
        noise_dir=str(tmp_path / "noise"),
        reverb_prob=1.0,
        rir_dir=str(tmp_path / "rirs"),
    )
    lengths = [0, 1, 2, 159, 3000, 4801]

    @tf.function(input_signature=[tf.TensorSpec([None]), tf.TensorSpec([2], tf.int64)])
    def augment(waveform, seed):
        return augment_waveform(waveform, config, seed)

    dataset = tf.data.Dataset.from_generator(
        lambda: (_speech_like(n) if n > 2 else np.full(n, 0.3, np.float32) for n in lengths),
        output_signature=tf.TensorSpec([None], tf.float32),
    )
    seeds = tf.data.Dataset.random(seed=1).batch(2)
    mapped = tf.data.Dataset.zip((dataset, seeds)).map(
        lambda x, s: (augment_waveform(x, config, s), tf.shape(x)[0])
    )
    for (output, length), original in zip(mapped, lengths, strict=True):
        assert int(length) == original
        assert (
            abs(output.shape[0] - original / 0.9) <= 1 or abs(output.shape[0] - original / 1.1) <= 1
        )
        assert np.all(np.isfinite(output)) and np.all(np.abs(output) <= 1)
    eager = augment_waveform(_speech_like(3000), config, tf.constant([1, 2], tf.int64))
    np.testing.assert_allclose(augment(_speech_like(3000), [1, 2]), eager, atol=1e-6)


@pytest.mark.parametrize("samples", [0, 1])
def test_empty_and_one_sample_waveforms(samples):
    waveform = np.full(samples, 0.5, np.float32)
    for output in (
        speed_perturb(waveform, [0.9, 1.1], seed=1),
        volume_perturb(waveform, -3.0, 3.0, seed=1),
        add_noise(waveform, None, 5.0, 5.0, seed=1),
        add_noise(waveform, np.ones([1, 10], np.float32), 5.0, 5.0, seed=1),
        reverberate(waveform, None, seed=1),
        augment_waveform(waveform, ALL_ON, seed=1),
    ):
        assert output.shape[0] in (0, 1) and output.shape[0] <= samples
        assert np.all(np.isfinite(output))


# ----------------------------------------------------------------------- pause


def test_a_pause_follows_the_utterance_quieter_by_the_drawn_level():
    waveform = _speech_like(8000)
    for seed in range(4):
        paused = append_pause(waveform, (0.1, 0.3), (30.0, 40.0), RATE, seed=[seed, 1]).numpy()
        np.testing.assert_array_equal(paused[: len(waveform)], waveform)  # kept exactly
        pause = paused[len(waveform) :]
        assert 0.1 * RATE - 1 <= len(pause) <= 0.3 * RATE + 1
        assert 30.0 - 1.0 <= _power_db(waveform) - _power_db(pause) <= 40.0 + 1.0


def test_pause_after_applies_with_its_probability_from_its_own_stream():
    waveform = _speech_like()
    config = AugmentConfig(pause_prob=0.5)
    assert config.pause_enabled and not config.enabled  # not augment_waveform's
    lengths = [int(tf.size(pause_after(waveform, config, [s, 3]))) for s in range(16)]
    assert 2 <= sum(n > len(waveform) for n in lengths) <= 14
    assert lengths == [int(tf.size(pause_after(waveform, config, [s, 3]))) for s in range(16)]
    assert pause_after(waveform, AugmentConfig(), 1).shape == waveform.shape  # off


def test_a_pause_before_the_utterance_says_how_long_it_is():
    waveform = _speech_like(8000)
    for seed in range(4):
        paused, lead = prepend_pause(waveform, (0.2, 1.5), (30.0, 40.0), RATE, seed=[seed, 1])
        paused, lead = paused.numpy(), int(lead)
        np.testing.assert_array_equal(paused[lead:], waveform)  # kept exactly, after it
        assert 0.2 * RATE - 1 <= lead <= 1.5 * RATE + 1
        assert 30.0 - 1.0 <= _power_db(waveform) - _power_db(paused[:lead]) <= 40.0 + 1.0
    config = AugmentConfig(lead_prob=0.5)
    assert config.lead_enabled and not config.enabled and not config.pause_enabled
    leads = [int(pause_before(waveform, config, [s, 3])[1]) for s in range(16)]
    assert 2 <= sum(n > 0 for n in leads) <= 14
    assert leads == [int(pause_before(waveform, config, [s, 3])[1]) for s in range(16)]
    unchanged, none = pause_before(waveform, AugmentConfig(), 1)  # off
    assert unchanged.shape == waveform.shape and int(none) == 0


# ------------------------------------------------------------- config, hparams


def test_default_hparams_turn_everything_off():
    hparams = HParams(**AUGMENT_HPARAMS)
    config = AugmentConfig.from_hparams(hparams)
    assert not config.enabled
    waveform = _speech_like()
    assert augment_waveform(waveform, config, seed=1) is not None
    np.testing.assert_array_equal(augment_waveform(waveform, config, seed=1), waveform)
    # An hparams object without any aug_* hparam is off as well.
    assert not AugmentConfig.from_hparams(HParams(audio_sample_rate=RATE)).enabled


def test_hparams_overrides_and_json_round_trip():
    hparams = HParams(**AUGMENT_HPARAMS).parse(
        "aug_speed_factors=[0.9,1.0,1.1],aug_volume_db=[-6,6],aug_noise_prob=0.5,"
        "aug_noise_snr_db=[10,30],aug_noise_dir='/tmp/noise',aug_reverb_prob=0.25"
    )
    restored = HParams.from_json(hparams.to_json())
    for source in (hparams, restored):
        config = AugmentConfig.from_hparams(source)
        assert config.speed_factors == (0.9, 1.0, 1.1)
        assert config.volume_db == (-6.0, 6.0)
        assert config.noise_snr_db == (10.0, 30.0)
        assert config.noise_dir == "/tmp/noise" and config.rir_dir == ""
        assert (config.noise_prob, config.reverb_prob) == (0.5, 0.25)
        assert config.speed_enabled and config.volume_enabled and config.reverb_enabled
    # An empty list (JSON's "list of str") means off.
    assert AugmentConfig(speed_factors=()).speed_factors == (1.0,)


@pytest.mark.parametrize(
    "bad",
    [
        {"speed_factors": (0.0,)},
        {"volume_db": (6.0, -6.0)},
        {"noise_snr_db": (1.0,)},
        {"noise_prob": 1.5},
        {"reverb_prob": -0.1},
        {"pause_prob": 2.0},
        {"pause_seconds": (0.4, 0.1)},
    ],
)
def test_config_rejects_bad_values(bad):
    with pytest.raises(ValueError):
        AugmentConfig(**bad)


def test_probabilities_apply_to_some_utterances_only():
    config = AugmentConfig(noise_prob=0.5)
    waveform = _speech_like()
    changed = [
        not np.array_equal(augment_waveform(waveform, config, [s, 9]).numpy(), waveform)
        for s in range(16)
    ]
    assert 2 <= sum(changed) <= 14


def test_next_fast_length_is_five_smooth_and_not_smaller():
    for length in [1, 7, 48000, 48017, 60799, 2**20 + 1]:
        fast = int(next_fast_length(tf.constant(length)))
        assert fast >= length and fast < length * 1.1 + 2
        for prime in (2, 3, 5):
            while fast % prime == 0:
                fast //= prime
        assert fast == 1


# ------------------------------------------------------- the room and the microphone


def test_a_floor_is_at_its_absolute_level_whatever_the_speech():
    for level in (0.01, 0.15):  # no clipping: the difference is the floor alone
        speech = _speech_like(16000) * level / 0.1
        out = add_floor(speech, (-60.0, -60.0), seed=[4, 5]).numpy()
        assert abs(_power_db(out - speech) - (-60.0)) < 0.2
    levels = [_power_db(add_floor(np.zeros(8000, np.float32), (-75.0, -45.0), [s, 1]))
              for s in range(20)]  # fmt: skip
    assert -75.2 < min(levels) < -65 and -55 < max(levels) < -44.8


def test_a_band_limit_cuts_outside_the_band_and_keeps_inside():
    tones = {hz: _sine(hz, RATE, amplitude=0.1) for hz in (60, 150, 1000, 3000, 6000)}
    kept = {
        hz: _power_db(band_limit(tone, (300.0, 300.0), (3400.0, 3400.0), seed=1)) - _power_db(tone)
        for hz, tone in tones.items()
    }
    assert abs(kept[1000]) < 0.1 and abs(kept[3000]) < 0.1, kept  # inside the band
    assert kept[60] < -40 and kept[6000] < -40, kept  # over half an octave outside
    assert kept[150] < -3  # on the skirt, half an octave... one under the edge


def test_microphone_adds_the_floor_over_the_pauses_and_is_off_by_default():
    speech = _speech_like(8000)
    assert not AugmentConfig().microphone_enabled
    np.testing.assert_array_equal(microphone(speech, AugmentConfig(), [1, 2]), speech)
    config = AugmentConfig(floor_prob=1.0, floor_dbfs=(-50.0, -50.0), lead_prob=1.0,
                           lead_seconds=(0.5, 0.5), pause_db=(200.0, 200.0))  # fmt: skip
    with_lead, lead = pause_before(speech, config, seed=[3, 4])
    out = microphone(with_lead, config, seed=[3, 4]).numpy()
    assert int(lead) == 8000 and abs(_power_db(out[:8000]) - (-50.0)) < 0.3
    np.testing.assert_array_equal(out, microphone(with_lead, config, seed=[3, 4]))
    with pytest.raises(ValueError, match="must lie under"):
        AugmentConfig(band_low_hz=(100.0, 5000.0), band_high_hz=(3400.0, 8000.0))


def test_featurization_hears_the_floor_in_training_only():
    from t2t_lite.data.feature_config import FeatureConfig
    from t2t_lite.data.speech_features import featurize
    from t2t_lite.hparam import HParams as _HParams

    hparams = _HParams(**AUGMENT_HPARAMS, audio_sample_rate=RATE)
    quiet = np.zeros(16000, np.float32)
    quiet[4000:12000] = _speech_like(8000)
    plain = FeatureConfig.from_hparams(hparams)
    floored = FeatureConfig.from_hparams(
        hparams.parse("aug_floor_prob=1.0,aug_floor_dbfs=[-40,-40]")
    )
    np.testing.assert_allclose(
        featurize(quiet, floored, training=False), featurize(quiet, plain, training=False)
    )
    # In training the floor fills the digital silence at the ends, so none
    # of the second is trimmed away as silence any more.
    assert featurize(quiet, plain, training=True, seed=[1, 2]).shape[0] == 50
    assert featurize(quiet, floored, training=True, seed=[1, 2]).shape[0] == 100


def test_a_recording_has_the_room_noise_over_its_lead_and_the_floor_over_all():
    from t2t_lite.data.audio_augment import augment_recording

    # The noise plays over the lead as over the speech, as the noisy test
    # conditions have it; added before the lead, it would leave the lead at
    # the pause's level (here 200 dB under the speech: digital silence), and
    # a model would learn that speech starts where the noise starts.
    speech = _speech_like(8000)
    config = AugmentConfig(lead_prob=1.0, lead_seconds=(0.5, 0.5), pause_db=(200.0, 200.0),
                           noise_prob=1.0, noise_snr_db=(10.0, 10.0),
                           floor_prob=1.0, floor_dbfs=(-90.0, -90.0))  # fmt: skip
    out, stretch, lead = augment_recording(speech, config, [1, 2])
    out = out.numpy()
    assert int(lead) == 8000 and float(stretch) == 1.0 and out.size == 16000
    lead_db, speech_db = _power_db(out[:8000]), _power_db(speech[speech != 0])  # active
    assert abs(lead_db - (speech_db - 10.0)) < 1.5, (lead_db, speech_db)
    np.testing.assert_array_equal(out, augment_recording(speech, config, [1, 2])[0])
    # Without noise the lead is the floor alone, at its absolute level.
    quiet = dataclasses.replace(config, noise_prob=0.0)
    quiet_out = augment_recording(speech, quiet, [1, 2])[0].numpy()
    assert abs(_power_db(quiet_out[:8000]) - (-90.0)) < 0.5
