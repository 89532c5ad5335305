"""Transformer hparams sets with Tensor2Tensor's values.

`transformer_base` is T2T's `transformer_base` (= its `transformer_base_v3`)
restricted to the hparams t2t-lite implements: T2T's `basic_params1` carries
dozens of keys for models t2t-lite does not have (video, MoE, ...), and a key
nothing reads is a trap (docs/design.md, "Deliberate differences from T2T").
"""

from t2t_lite import registry
from t2t_lite.hparam import HParams

# T2T's residual, attention and FFN dropout in transformer_base.
T2T_DROPOUT = 0.1


def set_dropout(hparams: HParams, rate: float) -> HParams:
    """One rate for the residual, attention and FFN dropouts."""
    hparams.layer_prepostprocess_dropout = rate
    hparams.attention_dropout = rate
    hparams.relu_dropout = rate
    return hparams


@registry.register_hparams
def transformer_base() -> HParams:
    """T2T's transformer_base: 6+6 layers, 512 hidden, 8 heads, pre-norm."""
    return HParams(
        # Batching. `batch_size` is a per-replica budget in length units
        # (tokens; frames x mel bins for speech, T2T's rule), or examples
        # per replica when `use_fixed_batch_size` (README: "batch_size").
        batch_size=4096,
        use_fixed_batch_size=False,
        max_length=256,
        min_length_bucket=8,
        length_bucket_step=1.1,
        max_input_seq_length=0,
        max_target_seq_length=0,
        eval_drop_long_sequences=False,
        # t2t-lite addition (not in T2T): with static shapes (XLA, TPU) the
        # lengths up to max_length are cut into this many equal-width
        # buckets, each one compiled program (README, "Cloud TPU"); 1 is
        # T2T's TPU input (all padded to max_length), 0 T2T's buckets.
        static_length_buckets=4,
        # t2t-lite addition: with use_fixed_batch_size, a bucket of examples
        # up to L long gets min(batch_size, this // L) of them; 0 is off
        # (T2T). Lets long examples be trained on in smaller batches.
        fixed_batch_length_budget=0,
        # Network.
        hidden_size=512,
        filter_size=2048,
        num_heads=8,
        num_hidden_layers=6,
        num_encoder_layers=0,  # 0: fall back to num_hidden_layers
        num_decoder_layers=0,
        attention_key_channels=0,  # 0: hidden_size
        attention_value_channels=0,
        ffn_layer="dense_relu_dense",
        conv_first_kernel=3,
        pos="timing",
        self_attention_type="dot_product",
        max_relative_position=0,
        layer_preprocess_sequence="n",
        layer_postprocess_sequence="da",
        layer_prepostprocess_dropout=T2T_DROPOUT,
        layer_prepostprocess_dropout_broadcast_dims="",
        attention_dropout=T2T_DROPOUT,
        attention_dropout_broadcast_dims="",
        relu_dropout=T2T_DROPOUT,
        relu_dropout_broadcast_dims="",
        norm_type="layer",
        norm_epsilon=1e-6,
        shared_embedding_and_softmax_weights=True,
        multiply_embedding_mode="sqrt_depth",
        initializer="uniform_unit_scaling",  # variance scaling, fan_avg, uniform
        initializer_gain=1.0,
        label_smoothing=0.1,
        # t2t-lite addition: channels of the speech front end's two strided
        # convolutions (T2T's speech_recognition_bottom fixes them at 128).
        speech_front_end_filters=128,
        # t2t-lite addition (not in T2T): weight of an auxiliary CTC loss on
        # the encoder output, mixed with the decoder's cross-entropy as
        # (1 - w) * xent + w * ctc. 0 is T2T's pure attention training.
        ctc_loss_weight=0.0,
        # t2t-lite addition: intermediate CTC (Lee & Watanabe 2021, as in
        # ESPnet): the CTC head also reads encoder layer intermediate_ctc_layer
        # (1-based, below the last; 0: none), whose CTC loss takes
        # intermediate_ctc_weight of the CTC term. Training only: nothing new
        # to save or export.
        intermediate_ctc_layer=0,
        intermediate_ctc_weight=0.0,
        # t2t-lite addition: a phoneme CTC head (CMUdict's phonemes of the
        # transcript's words; t2t_lite/data/phoneme_ctc_hparams.py) on encoder
        # layer phoneme_ctc_layer (1-based; 0: the last), its loss added at
        # phoneme_ctc_weight (0: no head). Speech only.
        phoneme_ctc_weight=0.0,
        phoneme_ctc_layer=0,
        # t2t-lite addition: weight of the word boundary head's loss (a
        # speech corpus with word times; t2t_lite/layers/word_boundary_head.py).
        # 0: no head. The head reads the encoder through stop_gradient, so
        # the weight only scales the head's own gradient.
        word_boundary_loss_weight=0.0,
        # t2t-lite addition: U2's dynamic chunk training, for streaming
        # recognition (t2t_lite/models/chunk_attention.py).
        use_dynamic_chunk=False,
        # t2t-lite addition: with use_dynamic_chunk, U2++'s draw of the left
        # context too, so one model streams with any left_chunks limit.
        use_dynamic_left_chunk=False,
        # t2t-lite addition: 0, or the kernel width of Conformer's convolution
        # module in every encoder layer (t2t_lite/layers/conformer_convolution.py).
        conformer_conv_kernel=0,
        activation_dtype="float32",
        # Optimization.
        optimizer="adam",
        optimizer_adam_beta1=0.9,
        optimizer_adam_beta2=0.997,
        optimizer_adam_epsilon=1e-9,
        optimizer_momentum_momentum=0.9,
        optimizer_momentum_nesterov=False,
        optimizer_adafactor_beta1=0.0,
        optimizer_adafactor_beta2=0.999,  # read with decay_type "Adam"
        optimizer_adafactor_decay_type="pow",
        optimizer_adafactor_memory_exponent=0.8,  # read with decay_type "pow"
        optimizer_adafactor_clipping_threshold=1.0,
        optimizer_adafactor_multiply_by_parameter_scale=True,
        optimizer_adafactor_factored=True,
        optimizer_multistep_accumulate_steps=0,
        weight_decay=0.0,
        clip_grad_norm=0.0,  # 0: no clipping
        learning_rate_schedule="constant*linear_warmup*rsqrt_decay*rsqrt_hidden_size",
        learning_rate_constant=2.0,
        learning_rate_warmup_steps=8000,
        learning_rate_decay_steps=5000,
        learning_rate_decay_rate=1.0,
        # Read only by T2T's "legacy" schedule, which t2t-lite does not have;
        # kept so T2T's sets mean the same, and reported when overridden.
        learning_rate=0.2,
    )


@registry.register_hparams
def transformer_tiny() -> HParams:
    """T2T's transformer_tiny: 2 layers of 128; fast tests and smoke runs."""
    hparams = transformer_base()
    hparams.num_hidden_layers = 2
    hparams.hidden_size = 128
    hparams.filter_size = 512
    hparams.num_heads = 4
    return hparams


@registry.register_hparams
def transformer_small() -> HParams:
    """T2T's transformer_small: 2 layers of 256."""
    hparams = transformer_base()
    hparams.num_hidden_layers = 2
    hparams.hidden_size = 256
    hparams.filter_size = 1024
    hparams.num_heads = 4
    return hparams


@registry.register_hparams
def transformer_big() -> HParams:
    """T2T's transformer_big: 1024 hidden, 16 heads."""
    hparams = transformer_base()
    hparams.hidden_size = 1024
    hparams.filter_size = 4096
    # T2T: "Reduce batch size to 2048 from 4096 to be able to train the model
    # on a GPU with 12 GB memory."
    hparams.batch_size = 2048
    hparams.num_heads = 16
    hparams.layer_prepostprocess_dropout = 0.3
    return hparams


def use_relative_self_attention(hparams: HParams) -> HParams:
    """T2T's relative variant of a set: relative self-attention, no timing signal."""
    hparams.pos = "none"  # T2T: pos = None
    hparams.self_attention_type = "dot_product_relative"
    hparams.max_relative_position = 20
    return hparams


@registry.register_hparams
def transformer_relative() -> HParams:
    """T2T's transformer_relative: relative self-attention (Shaw et al. 2018)."""
    return use_relative_self_attention(transformer_base())


@registry.register_hparams
def transformer_relative_tiny() -> HParams:
    """T2T's transformer_relative_tiny: transformer_relative at transformer_tiny's size."""
    return use_relative_self_attention(transformer_tiny())


@registry.register_hparams
def transformer_relative_big() -> HParams:
    """T2T's transformer_relative_big: transformer_big with relative self-attention."""
    return use_relative_self_attention(transformer_big())


def update_hparams_for_tpu(hparams: HParams) -> HParams:
    """T2T's update_hparams_for_tpu: Adafactor, fixed lengths, broadcast dropout."""
    hparams.optimizer = "Adafactor"
    hparams.learning_rate_schedule = "rsqrt_decay"
    hparams.learning_rate_warmup_steps = 10000
    hparams.max_length = 64
    if hparams.batch_size > 2048:
        hparams.batch_size = 2048
    # Dropout noise broadcast over these dims saves memory on TPU.
    hparams.attention_dropout_broadcast_dims = "0,1"  # batch, heads
    hparams.relu_dropout_broadcast_dims = "1"  # length
    hparams.layer_prepostprocess_dropout_broadcast_dims = "1"  # length
    return hparams


@registry.register_hparams
def transformer_tpu() -> HParams:
    """T2T's transformer_tpu: transformer_base updated for TPU."""
    return update_hparams_for_tpu(transformer_base())
