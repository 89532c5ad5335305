"""Speech recognition hparams sets with Tensor2Tensor's values, except lengths.

T2T's LibriSpeech sets plus `transformer_speech_small`, which t2t-lite adds
so that the built-in spoken corpus trains on two CPU cores in minutes.

What `batch_size` means differs between the sets, as it did in T2T (README,
"What batch_size means"): v1 counts frames x mel bins per replica (T2T's
length of a 3-D feature); the v2 and TPU sets count utterances per replica
(`use_fixed_batch_size`), because T2T only ever used their value 16 as
examples per TPU core.
"""

from t2t_lite import registry
from t2t_lite.hparam import HParams
from t2t_lite.hparams.transformer import (
    T2T_DROPOUT,
    set_dropout,
    transformer_base,
    update_hparams_for_tpu,
)

# LibriSpeech's utterances run to about 35 s (train-other-500 and the test
# sets; the mean is 12.3 s). T2T's limits (1550 or 1650 frames, 15.5-16.5 s)
# made its input pipeline drop every longer utterance, a large share of the
# corpus's hours. These limits cover every utterance instead (README, "Long
# utterances"): 36 s of frames at T2T's 10 ms frame step (Lingvo's
# LibriSpeech limit too) and byte targets up to 900, the most a CTC head can
# align on 3600 frames after the front end's 4x time reduction (25
# characters a second; read speech is about 15).
LIBRISPEECH_MAX_FRAMES = 3600
LIBRISPEECH_MAX_TARGETS = 900
# What T2T's fixed-size sets needed at most: 16 utterances at its 15.5 s
# limit, in frames x mel bins. Their buckets of longer utterances get fewer
# of them (6 at 36 s), so memory stays where T2T's recipe had it.
T2T_FIXED_BATCH_LENGTH_BUDGET = 16 * 1550 * 80


# Kaldi's and ESPnet's speed perturbation, on the fly in training
# (data/audio_augment/speed.py): it moves pitch and formants as a new speaker
# would. T2T had none. On the built-in corpus it was the one augmentation
# that helped an unheard voice (`docs/benchmarks.md`, "Augmentation"). The LibriSpeech sets
# leave it off for now: at 0.9 an utterance grows by a ninth, and
# LibriSpeech's longest (35 s) would pass their 36 s limit and be dropped,
# where every utterance is kept today.
SPEED_FACTORS = [0.9, 1.0, 1.1]


def add_speed_perturbation(hparams: HParams) -> HParams:
    """Turns on `SPEED_FACTORS` (the problem would add them switched off)."""
    hparams.add_hparam("aug_speed_factors", list(SPEED_FACTORS))
    return hparams


# A room and a microphone, on the fly in training (`data/audio_augment/`;
# docs/benchmarks.md, "In a room"): a model that has only heard digital
# silence reads a second of a quiet room's floor as words. Every utterance
# gets a noise floor of -90 to -50 dBFS under and around it; 30% start up to
# a second after the recording does; 20% hear generated noise (white, pink,
# brown, mains hum, or knocks and beeps) at 5-25 dB SNR and 20% babble of
# 3-6 other training utterances at 5-20 dB (babble at 10 dB was the hardest
# condition: docs/benchmarks.md, "The middle babble setting"); 10% a
# synthetic room and 10% a cheap microphone's band; half of them a gain of
# -10 to +6 dB. A second of lead keeps LibriSpeech's longest utterance (35 s)
# within its sets' 36 s.
ROOM_AUGMENTATION = {
    "aug_floor_prob": 1.0,
    "aug_floor_dbfs": [-90.0, -50.0],
    "aug_lead_prob": 0.3,
    "aug_lead_seconds": [0.1, 1.0],
    "aug_noise_prob": 0.2,
    "aug_noise_snr_db": [5.0, 25.0],
    "aug_babble_prob": 0.2,
    "aug_babble_snr_db": [5.0, 20.0],
    "aug_reverb_prob": 0.1,
    "aug_band_prob": 0.1,
    "aug_volume_db": [-10.0, 6.0],
    "aug_volume_prob": 0.5,
}


def add_room_augmentation(hparams: HParams) -> HParams:
    """Turns on `ROOM_AUGMENTATION` (the problem would add it switched off)."""
    for name, value in ROOM_AUGMENTATION.items():
        hparams.add_hparam(name, value)
    return hparams


def set_librispeech_length_hparams(hparams: HParams) -> HParams:
    """Limits that keep every LibriSpeech utterance (see above)."""
    hparams.max_length = LIBRISPEECH_MAX_FRAMES * 80  # frames x mel bins
    hparams.max_input_seq_length = LIBRISPEECH_MAX_FRAMES
    hparams.max_target_seq_length = LIBRISPEECH_MAX_TARGETS
    if hparams.use_fixed_batch_size:
        hparams.fixed_batch_length_budget = T2T_FIXED_BATCH_LENGTH_BUDGET
    return hparams


@registry.register_hparams
def transformer_librispeech_v1() -> HParams:
    hparams = transformer_base()
    hparams.num_heads = 4
    hparams.filter_size = 1024
    hparams.hidden_size = 256
    hparams.num_encoder_layers = 5
    hparams.num_decoder_layers = 3
    hparams.learning_rate = 0.15
    hparams.batch_size = 6000000
    add_room_augmentation(hparams)
    return set_librispeech_length_hparams(hparams)


@registry.register_hparams
def transformer_librispeech_v2() -> HParams:
    hparams = transformer_base()
    hparams.batch_size = 16
    hparams.use_fixed_batch_size = True  # 16 utterances per replica (see above)
    hparams.num_decoder_layers = 4
    hparams.num_encoder_layers = 6
    hparams.hidden_size = 384
    hparams.learning_rate = 0.15
    hparams.filter_size = 1536
    hparams.num_heads = 2
    hparams.ffn_layer = "conv_relu_conv"
    hparams.conv_first_kernel = 9
    hparams.weight_decay = 0.0
    hparams.layer_prepostprocess_dropout = 0.2
    hparams.relu_dropout = 0.2
    add_room_augmentation(hparams)
    return set_librispeech_length_hparams(hparams)


@registry.register_hparams
def transformer_librispeech() -> HParams:
    """T2T's transformer_librispeech = transformer_librispeech_v2."""
    return transformer_librispeech_v2()


@registry.register_hparams
def transformer_librispeech_tpu_v1() -> HParams:
    hparams = update_hparams_for_tpu(transformer_librispeech_v1())
    hparams.batch_size = 16
    hparams.use_fixed_batch_size = True
    return set_librispeech_length_hparams(hparams)


@registry.register_hparams
def transformer_librispeech_tpu_v2() -> HParams:
    hparams = update_hparams_for_tpu(transformer_librispeech_v2())
    hparams.batch_size = 16
    return set_librispeech_length_hparams(hparams)


@registry.register_hparams
def transformer_librispeech_tpu() -> HParams:
    """T2T's transformer_librispeech_tpu = transformer_librispeech_tpu_v2."""
    return transformer_librispeech_tpu_v2()


@registry.register_hparams
def transformer_speech_small() -> HParams:
    """A small speech model that trains on two CPU cores in minutes.

    Sized for the built-in spoken corpus (utterances of 2-12 words): 128
    hidden, 4 encoder and 2 decoder layers, conv_relu_conv FFNs as in v2, a
    front end of 64 channels, and mild SpecAugment for unheard voices.
    Two departures from T2T's recipe make it learn in a few thousand steps
    (measured on `spoken_synth`; `docs/benchmarks.md`): a lower peak
    learning rate (constant 0.5: 2e-3 at step 500, where T2T's 2.0 gives
    8e-3, at which the decoder settled on the transcripts' language model
    and never used the audio), and an auxiliary CTC loss on the encoder
    (weight 0.3), which makes the encoder align audio to characters so the
    decoder's attention has something to find.
    """
    hparams = transformer_base()
    hparams.hidden_size = 128
    hparams.filter_size = 512
    hparams.num_heads = 4
    hparams.num_encoder_layers = 4
    hparams.num_decoder_layers = 2
    hparams.ffn_layer = "conv_relu_conv"
    hparams.conv_first_kernel = 3
    # 64 front-end channels instead of T2T's 128: the front end's second
    # convolution was most of the step; this halves the step's time
    # (`docs/benchmarks.md` has the WER).
    hparams.speech_front_end_filters = 64
    # 160,000 frames x mel bins ~ 20 s of audio per batch.
    hparams.batch_size = 160000
    hparams.max_length = 1000 * 80
    hparams.max_input_seq_length = 1000
    hparams.max_target_seq_length = 200
    hparams.learning_rate_warmup_steps = 500
    hparams.learning_rate_constant = 0.5
    # No dropout: a few thousand steps are about five passes over the corpus,
    # each utterance at a new speed and under new masks, so the model is
    # still underfitting when it stops, and dropout only slows it down
    # (`docs/benchmarks.md`, "Quick start runs").
    set_dropout(hparams, 0.0)
    hparams.ctc_loss_weight = 0.3
    # A word boundary head (t2t_lite/layers/word_boundary_head.py), trained on
    # the built-in corpus's word times: word times to 10 ms instead of the
    # CTC head's 40 ms frames (docs/benchmarks.md, "Word timestamps").
    hparams.word_boundary_loss_weight = 1.0
    # A pause of quieter noise after 30% of the utterances
    # (`data/audio_augment/pause.py`): without it the head read the change of
    # background where a long recording's pause begins as a word ending.
    hparams.add_hparam("aug_pause_prob", 0.3)
    # Mild SpecAugment (Park et al. 2019; its LibriSpeech policies use 2 masks
    # of up to 27 bins and 100 frames): 2 frequency masks of up to 15 of the
    # 80 bins and 2 time masks of up to 20 frames (at most 20% of the
    # utterance). It slows the dev loss but carries over to an unheard voice
    # (`docs/benchmarks.md`, "The built-in small recipes").
    for name, value in (
        ("specaugment_freq_masks", 2),
        ("specaugment_freq_mask_width", 15),
        ("specaugment_time_masks", 2),
        ("specaugment_time_mask_width", 20),
        ("specaugment_time_mask_max_fraction", 0.2),
    ):
        hparams.add_hparam(name, value)
    # Per-utterance statistics leave out frames 20 dB under the utterance's
    # loud frames (`data/utterance_level.py`): a second of a room's floor
    # before the first word otherwise moves every frame's features by half a
    # standard deviation (docs/benchmarks.md, "In a room").
    hparams.add_hparam("audio_statistics_floor_db", 20.0)
    # Speed perturbation (see SPEED_FACTORS), in a room (ROOM_AUGMENTATION).
    return add_room_augmentation(add_speed_perturbation(hparams))


@registry.register_hparams
def transformer_speech_small_streaming() -> HParams:
    """`transformer_speech_small` for streaming recognition (U2).

    Dynamic chunk training (`use_dynamic_chunk`: each batch's encoder
    self-attention sees its own chunk and the chunks before it, the chunk
    drawn per batch, full context half of the time; the encoder's
    conv_relu_conv made causal) and causal featurization
    (`audio_causal_normalization`: running statistics instead of the whole
    utterance's, started from the training set's worth 100 frames, one
    second: `audio_normalization_prior_frames`), and envelope augmentation
    (`aug_envelope_db`, 4 dB), which teaches the model to ignore the
    spectral shape of a voice that causal statistics cannot normalize away
    (docs/benchmarks.md, "Streaming"). A stream's endpointed utterances
    begin with what is left of a pause, which the corpus's tightly cut
    utterances never do: the room's lead before 30% of the training
    utterances (`ROOM_AUGMENTATION`) teaches the model that, and the
    running statistics leave out frames 20 dB under the training set's level
    (`audio_statistics_floor_db`), so the quiet does not set them
    (docs/benchmarks.md, "Silence before speech"). One model then decodes at
    full context and in chunks (`t2t_lite/streaming/`). U2++'s left-context
    draw (`use_dynamic_left_chunk`) lets it stream with any `left_chunks`
    limit, for streams of any length.
    """
    hparams = transformer_speech_small()
    # T2T's dropout, with which its chunk and streaming results were measured.
    set_dropout(hparams, T2T_DROPOUT)
    hparams.use_dynamic_chunk = True
    hparams.use_dynamic_left_chunk = True
    hparams.add_hparam("audio_causal_normalization", True)
    hparams.add_hparam("audio_normalization_prior_frames", 100)
    hparams.audio_statistics_floor_db = 20.0  # under the prior's level here
    hparams.add_hparam("aug_envelope_db", 4.0)
    return hparams
