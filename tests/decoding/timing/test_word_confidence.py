"""Word confidence calibration: fitted to which words are right, stored for
one checkpoint, applied by decode hparam `word_confidence_exponent` unless
given, and left raw (with a sentence saying why) for another checkpoint."""

import json

import numpy as np
import pytest

from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.decoding.timing.word_confidence import (
    CALIBRATION_FILE,
    calibration_exponent,
    fit_exponent,
    reliability_table,
    right_words,
    save_calibration,
    with_run_calibration,
)


def test_right_words_are_those_where_hypothesis_and_reference_agree():
    right = right_words("the cat sat on the mat".split(), "the cat sat in a mat now".split())
    assert right.tolist() == [True, True, True, False, False, True, False]


def test_the_fitted_exponent_calibrates_and_keeps_the_order():
    rng = np.random.default_rng(1)
    raw = rng.uniform(0.01, 1.0, 50000)
    right = rng.uniform(size=raw.size) < raw**0.1  # raw is under-confident
    exponent = fit_exponent(raw, right)
    assert exponent == pytest.approx(0.1, rel=0.1)
    _, raw_error = reliability_table(raw, right)
    rows, error = reliability_table(raw**exponent, right)
    assert raw_error > 0.2 and error < 0.02
    assert sum(row["words"] for row in rows) == raw.size
    assert fit_exponent([0.2, 0.5], [True, True]) == 1.0  # nothing to fit


def test_a_stored_calibration_applies_to_its_checkpoint_only(tmp_path):
    config = DecodeConfig()
    assert with_run_calibration(config, str(tmp_path), "ckpt-5") == (
        config.replace(word_confidence_exponent=1.0),
        None,
    )
    path = save_calibration(str(tmp_path), 0.08, str(tmp_path / "ckpt-5"), split="dev")
    assert json.loads((tmp_path / CALIBRATION_FILE).read_text())["checkpoint"] == "ckpt-5"
    assert path == str(tmp_path / CALIBRATION_FILE)
    resolved, note = with_run_calibration(config, str(tmp_path), str(tmp_path / "ckpt-5"))
    assert resolved.word_confidence_exponent == 0.08 and note is None
    assert resolved.confidence_exponent == 0.08
    # Trained on since: raw confidences, and a sentence naming both checkpoints.
    exponent, note = calibration_exponent(str(tmp_path), "ckpt-9")
    assert exponent == 1.0 and "ckpt-5" in note and "ckpt-9" in note and "\n" not in note
    # Given explicitly, the decode hparam wins.
    given = DecodeConfig.parse("word_confidence_exponent=0.5")
    assert with_run_calibration(given, str(tmp_path), "ckpt-5") == (given, None)
    # A file that is not a calibration is refused with a sentence naming it.
    for text in ("{not json", "[0.5]", '{"checkpoint": "ckpt-5"}'):
        (tmp_path / CALIBRATION_FILE).write_text(text)
        with pytest.raises(ValueError, match=CALIBRATION_FILE):
            with_run_calibration(config, str(tmp_path), "ckpt-5")


def test_unresolved_means_raw_and_a_negative_exponent_is_refused():
    assert DecodeConfig().confidence_exponent == 1.0
    with pytest.raises(ValueError, match="word_confidence_exponent"):
        DecodeConfig.parse("word_confidence_exponent=-1")
