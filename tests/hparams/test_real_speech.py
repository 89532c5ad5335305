"""The real-speech sets are the runs that were measured, with nothing else changed."""

from t2t_lite import registry

# The command-line overrides the medium sets were measured with
# (docs/benchmarks.md, "Conformer's convolution module in the wider encoder"
# and "Phonemes as a second CTC target in the whole recipe").
MEASURED_WIDE = (
    "hidden_size=192,filter_size=768,num_encoder_layers=6,conformer_conv_kernel=15,"
    "phoneme_ctc_weight=0.3"
)
MEASURED_COOLDOWN = (
    "learning_rate_schedule=constant*linear_warmup*rsqrt_decay*rsqrt_hidden_size*linear_decay,"
    "learning_rate_decay_steps=3000"
)


def test_medium_pretraining_set_is_the_measured_wide_run():
    medium = registry.hparams("transformer_speech_medium_real")
    small = registry.hparams("transformer_speech_small_real")
    assert medium.differences(small) == [
        "conformer_conv_kernel",
        "filter_size",
        "hidden_size",
        "num_encoder_layers",
        "phoneme_ctc_weight",
    ]
    assert medium == small.parse(MEASURED_WIDE)


def test_medium_mix_set_is_the_measured_wide_run_with_its_cooldown():
    medium = registry.hparams("transformer_speech_medium_real_mix")
    small = registry.hparams("transformer_speech_small_real_mix")
    assert medium == small.parse(f"{MEASURED_COOLDOWN},{MEASURED_WIDE}")
    assert medium.learning_rate_schedule.endswith("*linear_decay")


def test_mix_sets_differ_from_their_pretraining_sets_only_in_batch_targets_and_schedule():
    for size in ("small", "medium"):
        mix = registry.hparams(f"transformer_speech_{size}_real_mix")
        pre = registry.hparams(f"transformer_speech_{size}_real")
        assert mix.batch_size == 2 * pre.batch_size
        assert mix.max_target_seq_length == 400 > pre.max_target_seq_length
        assert set(mix.differences(pre)) <= {
            "batch_size",
            "max_target_seq_length",
            "learning_rate_schedule",
            "learning_rate_decay_steps",
        }
