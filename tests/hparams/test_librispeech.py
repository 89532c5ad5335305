"""The speech hparams sets carry Tensor2Tensor's values, except the length
limits, which cover every LibriSpeech utterance (up to 35 s)."""

import pytest

from t2t_lite import registry
from t2t_lite.hparams.librispeech import ROOM_AUGMENTATION
from t2t_lite.hparams.real_speech import ADDED_TO_RECORDINGS

LENGTHS = {"max_length": 3600 * 80, "max_input_seq_length": 3600, "max_target_seq_length": 900}
# Fixed-size sets: long buckets get fewer than 16 utterances (T2T's 16 x 15.5 s).
BUDGET = {"fixed_batch_length_budget": 16 * 1550 * 80}
TPU = {
    "optimizer": "Adafactor",
    "learning_rate_schedule": "rsqrt_decay",
    "learning_rate_warmup_steps": 10000,
    "attention_dropout_broadcast_dims": "0,1",
    "relu_dropout_broadcast_dims": "1",
    "layer_prepostprocess_dropout_broadcast_dims": "1",
}
V1 = {
    "num_heads": 4,
    "filter_size": 1024,
    "hidden_size": 256,
    "num_encoder_layers": 5,
    "num_decoder_layers": 3,
    "learning_rate": 0.15,
    "batch_size": 6000000,
    **LENGTHS,
    **ROOM_AUGMENTATION,  # t2t-lite's: T2T's speech sets had heard no room
}
V2 = {
    **LENGTHS,
    **BUDGET,
    "batch_size": 16,
    "use_fixed_batch_size": True,  # t2t-lite's reading of T2T's 16 (README)
    "num_decoder_layers": 4,
    "num_encoder_layers": 6,
    "hidden_size": 384,
    "learning_rate": 0.15,
    "filter_size": 1536,
    "num_heads": 2,
    "ffn_layer": "conv_relu_conv",
    "conv_first_kernel": 9,
    "layer_prepostprocess_dropout": 0.2,
    "relu_dropout": 0.2,
    **ROOM_AUGMENTATION,
}
EXPECTED = {
    "transformer_librispeech_v1": V1,
    "transformer_librispeech_v2": V2,
    "transformer_librispeech": V2,
    "transformer_librispeech_tpu_v1": {
        **V1,
        **TPU,
        "batch_size": 16,
        "use_fixed_batch_size": True,
        **LENGTHS,
        **BUDGET,
    },
    "transformer_librispeech_tpu_v2": {**V2, **TPU, "batch_size": 16, **LENGTHS},
    "transformer_librispeech_tpu": {**V2, **TPU, "batch_size": 16, **LENGTHS},
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_librispeech_sets_differ_from_base_exactly_as_in_t2t(name):
    base = registry.hparams("transformer_base")
    hparams = registry.hparams(name)
    expected = EXPECTED[name]
    assert hparams.differences(base) == sorted(expected)
    for key, value in expected.items():
        assert hparams.get(key) == value, key


def test_aliases_equal_their_versions():
    assert registry.hparams("transformer_librispeech") == registry.hparams(
        "transformer_librispeech_v2"
    )
    assert registry.hparams("transformer_librispeech_tpu") == registry.hparams(
        "transformer_librispeech_tpu_v2"
    )


def test_speech_small_is_small():
    hparams = registry.hparams("transformer_speech_small")
    assert hparams.hidden_size <= 256
    assert hparams.num_encoder_layers + hparams.num_decoder_layers <= 8
    assert hparams.hidden_size % hparams.num_heads == 0


SPEECH_SETS = [
    n
    for n in registry.list_hparams()
    if n.startswith(("transformer_speech", "transformer_librispeech"))
]


REAL_SPEECH_SETS = [n for n in SPEECH_SETS if "_real" in n]


@pytest.mark.parametrize("name", SPEECH_SETS)
def test_every_speech_set_trains_in_a_room(name):
    """The real-speech sets: the room's floor, lead and gain, not what it
    adds to recordings that bring a room of their own."""
    hparams = registry.hparams(name)
    assert len(SPEECH_SETS) >= 10 and len(REAL_SPEECH_SETS) >= 2
    for key, value in ROOM_AUGMENTATION.items():
        expected = 0.0 if name in REAL_SPEECH_SETS and key in ADDED_TO_RECORDINGS else value
        assert hparams.get(key) == expected, key
    assert hparams.aug_floor_prob == 1.0 and hparams.aug_lead_prob > 0
