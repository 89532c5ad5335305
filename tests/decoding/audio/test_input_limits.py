"""The input-limit rule: how long an input a model takes, and how long a piece is."""

from t2t_lite.data.feature_config import AUDIO_HPARAMS
from t2t_lite.decoding.audio.input_limits import input_tokens, segment_seconds
from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.decoding.run_config import DEFAULT_MAX_INPUT_FRAMES, RunConfig
from t2t_lite.hparam import HParams


def test_input_limits_follow_the_training_limits():
    speech = HParams(max_input_seq_length=0, max_length=0, **AUDIO_HPARAMS)  # 80 bins, 10 ms
    assert RunConfig.from_hparams(speech).max_input_frames == DEFAULT_MAX_INPUT_FRAMES
    speech.max_length = 1650 * 80  # T2T's frames x mel bins
    assert RunConfig.from_hparams(speech).max_input_frames == 1650
    speech.max_input_seq_length = 1550
    limits = RunConfig.from_hparams(speech)
    assert limits.max_input_frames == 1550
    # Long recordings are split into pieces of the training limit, unless told.
    assert segment_seconds(limits, DecodeConfig()) == 15.5
    assert segment_seconds(limits, DecodeConfig.parse("segment_seconds=6")) == 6.0
    text = HParams(max_input_seq_length=0, max_length=256)
    assert RunConfig.from_hparams(text).max_input_tokens == 256
    text.max_input_seq_length = 12
    assert RunConfig.from_hparams(text).max_input_tokens == 12
    # The output cap's hparam, and none.
    assert RunConfig.from_hparams(HParams(max_target_seq_length=24)).max_target_length == 24
    assert RunConfig.from_hparams(HParams()).max_target_length == 0


def test_a_text_input_counts_its_eos():
    text = RunConfig.from_hparams(HParams(max_input_seq_length=12, max_length=0))
    assert input_tokens(11) == text.max_input_tokens  # 11 ids + EOS fit
    assert input_tokens(12) > text.max_input_tokens
