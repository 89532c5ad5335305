"""Tests for t2t_lite.data.spoken_synth.plan: what the spoken corpus holds, before audio."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

from t2t_lite.data.spoken_synth import plan as spoken_plan


def test_plan_is_deterministic_and_seeded():
    config = spoken_plan.CorpusConfig(split_sizes={"train": 300, "dev": 30, "test": 30})
    assert spoken_plan.plan_corpus(config) == spoken_plan.plan_corpus(config)
    other = spoken_plan.plan_corpus(dataclasses.replace(config, seed=config.seed + 1))
    texts = [plan.text for plan in spoken_plan.plan_corpus(config)["train"]]
    assert texts != [plan.text for plan in other["train"]]


def test_default_plan_holds_the_test_voice_out_and_uses_new_sentences():
    config = spoken_plan.CorpusConfig()
    plans = spoken_plan.plan_corpus(config)
    assert {split: len(plans[split]) for split in plans} == dict(config.split_sizes)
    train_voices = {plan.voice for plan in plans["train"]}
    assert train_voices == set(config.train_voices) == {plan.voice for plan in plans["dev"]}
    assert {plan.voice for plan in plans["test"]} == {"en-us-nyc+f3"}
    heard = {plan.voice.split("+")[0] for plan in plans["train"]}
    heard_variants = {plan.voice.partition("+")[2] for plan in plans["train"]}
    assert "en-us-nyc" not in heard and "f3" not in heard_variants  # unseen accent and variant
    train_speakers = {plan.speaker_id for plan in plans["train"] + plans["dev"]}
    assert not train_speakers & {plan.speaker_id for plan in plans["test"]}
    train_texts = {plan.text for plan in plans["train"]}
    assert not train_texts & {plan.text for plan in plans["dev"] + plans["test"]}
    for plan in plans["train"]:
        assert 140 <= plan.rate_wpm <= 200 and 35 <= plan.pitch <= 65
        assert plan.snr_db is None or 10 <= plan.snr_db <= 30
    assert all(25 <= plan.snr_db <= 35 for plan in plans["test"])
    ids = [plan.utterance_id for split_plans in plans.values() for plan in split_plans]
    assert len(set(ids)) == len(ids)


def test_config_rejects_a_test_voice_heard_in_training():
    with pytest.raises(ValueError, match="unheard in training"):
        spoken_plan.CorpusConfig(test_voices=("en-gb+f2",))


# -- long recordings -------------------------------------------------------------------


def test_partition_long_cuts_every_utterance_in_order_into_runs_within_bounds():
    spreads = []
    for case in range(300):  # pure Python on sample counts: fast
        rng = random.Random(case)
        durations = [rng.randint(16000, 5 * 16000) for _ in range(rng.randint(1, 150))]
        config = spoken_plan.CorpusConfig(seed=case)  # 20-120 s, 0.5 s pauses
        runs = spoken_plan.partition_long(durations, config)
        assert [i for run in runs for i in run] == list(range(len(durations)))
        assert runs == spoken_plan.partition_long(durations, config)  # seeded
        lengths = [(sum(durations[i] for i in run) + 8000 * (len(run) - 1)) / 16000 for run in runs]
        if sum(durations) < 20 * 16000:
            assert len(runs) == 1
        else:
            assert all(20 <= length <= 120 for length in lengths), (case, lengths)
        if len(runs) > 3:
            spreads.append(max(lengths) - min(lengths))
    assert np.median(spreads) > 40  # targets drawn across the range, not all alike


def test_partition_long_keeps_a_short_split_whole_and_checks_its_bounds():
    config = spoken_plan.CorpusConfig()
    assert spoken_plan.partition_long([16000] * 5, config) == [[0, 1, 2, 3, 4]]
    assert spoken_plan.partition_long([], config) == []
    with pytest.raises(ValueError, match="2 \\* min <= max"):
        spoken_plan.CorpusConfig(long_duration_s=(20.0, 30.0))
