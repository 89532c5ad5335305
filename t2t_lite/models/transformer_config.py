"""Everything that shapes a `Transformer`, in one frozen object.

    config = TransformerConfig.from_hparams(hparams, input_modality="speech",
                                            target_vocab_size=256)
    model = Transformer(config)

Each field that shares its name with a T2T hparam is filled from that hparam;
the few that are computed (layer counts, broadcast dims, the CTC head, the
compute dtype) are written out in `from_hparams`. `MODEL_HPARAMS`, the
model's `get_config` and its constructor all come from the field list, so a
new model hparam is one field here.
"""

from __future__ import annotations

import dataclasses

from t2t_lite.data import phoneme_ctc_hparams
from t2t_lite.data.phoneme_ctc_hparams import phoneme_ctc_layer
from t2t_lite.data.word_boundary_weight import WEIGHT_HPARAM, word_boundaries_wanted
from t2t_lite.hparam import HParams

INPUT_MODALITIES = (None, "symbol", "speech")
SELF_ATTENTION_TYPES = ("dot_product", "dot_product_relative")
INITIALIZERS = ("uniform_unit_scaling", "normal_unit_scaling", "xavier", "orthogonal")
# U2++'s left-context draw (`use_dynamic_left_chunk`).
LEFT_CHUNK_HPARAM = "use_dynamic_left_chunk"
# Conformer's convolution module in each encoder layer.
CONV_MODULE_HPARAM = "conformer_conv_kernel"
# Model hparams added after runs were saved, and the value such a run
# trained with: read with it (decoding, export) and filled in before a
# resume compares hparams (`run_dir.save_or_check_hparams`).
MODEL_HPARAM_DEFAULTS = {
    LEFT_CHUNK_HPARAM: False,
    CONV_MODULE_HPARAM: 0,
    **phoneme_ctc_hparams.DEFAULTS,
}
# hparam `activation_dtype` -> Keras dtype policy (None: Keras' float32 default).
DTYPE_POLICIES = {"float32": None, "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}


def parse_broadcast_dims(text: str) -> tuple[int, ...]:
    """T2T's comma-separated broadcast dims ("0,1") as a tuple of ints."""
    return tuple(int(dim) for dim in text.split(",") if dim.strip())


@dataclasses.dataclass(frozen=True)
class TransformerConfig:
    """The Transformer's shape and numerics.

    Args:
        target_vocab_size: size of the target vocabulary (from the problem).
        input_modality: `"symbol"`, `"speech"` or None (decoder only).
        input_vocab_size: size of the input vocabulary (`"symbol"` only).
        hidden_size, filter_size, num_heads: model dimensions.
        num_encoder_layers, num_decoder_layers: stack depths (hparams of 0
            mean `num_hidden_layers`).
        attention_key_channels, attention_value_channels: 0 for hidden_size.
        ffn_layer, conv_first_kernel: feed-forward type and kernel.
        attention_dropout, relu_dropout, layer_prepostprocess_dropout: rates.
        *_broadcast_dims: dims sharing one dropout mask.
        layer_preprocess_sequence, layer_postprocess_sequence: e.g. "n", "da".
        norm_type, norm_epsilon: the norms.
        pos: "timing" (sinusoids) or "none".
        self_attention_type: "dot_product", or "dot_product_relative" for
            T2T's relative-position self-attention in every encoder and
            decoder layer (encoder-decoder attention stays plain).
        max_relative_position: clipping distance of relative attention.
        shared_embedding_and_softmax_weights: one matrix for the target
            embedding and the softmax (and the input embedding when the
            vocabularies are the same).
        multiply_embedding_mode: "sqrt_depth" or "none".
        initializer, initializer_gain: T2T's kernel initializer.
        speech_front_end_filters: channels of the speech front end's two
            strided convolutions (T2T: 128; they are most of a small
            model's compute).
        ctc_head: a projection of the encoder output to target logits for an
            auxiliary CTC loss; hparam `ctc_loss_weight > 0` turns it on.
        word_boundary_head: a `WordBoundaryHead` beside the encoder of a
            speech model, trained on a corpus's word times to place word
            boundaries on the 10 ms feature frames; hparam
            `word_boundary_loss_weight > 0` turns it on.
        phoneme_ctc_layer: 0, or the 1-based encoder layer a phoneme CTC
            head reads (`data/phoneme_ctc_hparams.py`: CMUdict's phonemes
            as an auxiliary target); hparam `phoneme_ctc_weight > 0` turns
            it on, on the layer hparam `phoneme_ctc_layer` names (0: the last).
        use_dynamic_chunk: U2's dynamic chunk training for streaming
            (`chunk_attention.py`): each training batch's encoder
            self-attention sees its own chunk and the chunks before it, at a
            drawn chunk size; the encoder's `conv_relu_conv` becomes causal
            (LEFT padding), so no encoder frame reads a later chunk.
        use_dynamic_left_chunk: with `use_dynamic_chunk`, U2++'s draw of
            the left context too (each batch's frames see a drawn number of
            chunks before their own, or all), so that one model streams
            with any `left_chunks` limit (hparam; a run saved before it
            existed trained without).
        conformer_conv_kernel: 0, or the odd kernel width of a Conformer
            convolution module in every encoder layer, between
            self-attention and the feed-forward
            (`layers/conformer_convolution.py`); not with streaming yet.

    Example:

    ```python
    config = TransformerConfig(target_vocab_size=256, input_modality="speech",
                               hidden_size=128, num_heads=4)
    config.num_heads  # 4
    ```
    """

    target_vocab_size: int
    input_modality: str | None = "symbol"
    input_vocab_size: int = 0
    hidden_size: int = 512
    filter_size: int = 2048
    num_heads: int = 8
    num_encoder_layers: int = 6
    num_decoder_layers: int = 6
    attention_key_channels: int = 0
    attention_value_channels: int = 0
    ffn_layer: str = "dense_relu_dense"
    conv_first_kernel: int = 3
    attention_dropout: float = 0.1
    relu_dropout: float = 0.1
    layer_prepostprocess_dropout: float = 0.1
    attention_dropout_broadcast_dims: tuple[int, ...] = ()
    relu_dropout_broadcast_dims: tuple[int, ...] = ()
    layer_prepostprocess_dropout_broadcast_dims: tuple[int, ...] = ()
    layer_preprocess_sequence: str = "n"
    layer_postprocess_sequence: str = "da"
    norm_type: str = "layer"
    norm_epsilon: float = 1e-6
    pos: str = "timing"
    self_attention_type: str = "dot_product"
    max_relative_position: int = 0
    shared_embedding_and_softmax_weights: bool = True
    multiply_embedding_mode: str = "sqrt_depth"
    initializer: str = "uniform_unit_scaling"
    initializer_gain: float = 1.0
    speech_front_end_filters: int = 128
    use_dynamic_chunk: bool = False
    use_dynamic_left_chunk: bool = False
    conformer_conv_kernel: int = 0
    ctc_head: bool = False
    word_boundary_head: bool = False
    phoneme_ctc_layer: int = 0

    def __post_init__(self):
        # Lists (from a JSON config) become tuples: the config stays hashable.
        for field in _BROADCAST_FIELDS:
            object.__setattr__(self, field, tuple(getattr(self, field)))
        _check(self)

    @classmethod
    def from_hparams(
        cls,
        hparams: HParams,
        *,
        input_modality: str | None,
        target_vocab_size: int,
        input_vocab_size: int = 0,
    ) -> TransformerConfig:
        """The config T2T's hparams describe (reads exactly `MODEL_HPARAMS`)."""
        values = {name: getattr(hparams, name) for name in _HPARAM_FIELDS}
        layers = hparams.num_hidden_layers
        values["num_encoder_layers"] = hparams.num_encoder_layers or layers
        values["num_decoder_layers"] = hparams.num_decoder_layers or layers
        for field in _BROADCAST_FIELDS:
            values[field] = parse_broadcast_dims(getattr(hparams, field))
        return cls(
            target_vocab_size=target_vocab_size,
            input_modality=input_modality,
            input_vocab_size=input_vocab_size,
            ctc_head=hparams.ctc_loss_weight > 0,
            # A run saved before the head existed trained without one.
            word_boundary_head=word_boundaries_wanted(hparams),
            use_dynamic_left_chunk=bool(
                hparams.get(LEFT_CHUNK_HPARAM, MODEL_HPARAM_DEFAULTS[LEFT_CHUNK_HPARAM])
            ),
            conformer_conv_kernel=int(
                hparams.get(CONV_MODULE_HPARAM, MODEL_HPARAM_DEFAULTS[CONV_MODULE_HPARAM])
            ),
            phoneme_ctc_layer=phoneme_ctc_layer(hparams, values["num_encoder_layers"]),
            **values,
        )

    def to_dict(self) -> dict:
        """JSON-ready fields (tuples as lists), for `get_config`."""
        return {
            key: list(value) if isinstance(value, tuple) else value
            for key, value in dataclasses.asdict(self).items()
        }


_BROADCAST_FIELDS = (
    "attention_dropout_broadcast_dims",
    "relu_dropout_broadcast_dims",
    "layer_prepostprocess_dropout_broadcast_dims",
)
# Fields the problem supplies, the ones computed from other hparams, and the
# ones read with a default (`MODEL_HPARAM_DEFAULTS`).
_NON_HPARAM_FIELDS = (
    "target_vocab_size",
    "input_modality",
    "input_vocab_size",
    "ctc_head",
    "word_boundary_head",
    "use_dynamic_left_chunk",
    "conformer_conv_kernel",
    "phoneme_ctc_layer",
)
_COMPUTED_FIELDS = ("num_encoder_layers", "num_decoder_layers", *_BROADCAST_FIELDS)
_HPARAM_FIELDS = tuple(
    field.name
    for field in dataclasses.fields(TransformerConfig)
    if field.name not in _NON_HPARAM_FIELDS + _COMPUTED_FIELDS
)

# Every hparam that shapes the model: the fields, plus what the computed ones
# read and `activation_dtype` (the dtype policy, which Keras keeps itself).
MODEL_HPARAMS = (
    *_HPARAM_FIELDS,
    *_COMPUTED_FIELDS,
    "num_hidden_layers",
    "ctc_loss_weight",
    WEIGHT_HPARAM,
    LEFT_CHUNK_HPARAM,
    CONV_MODULE_HPARAM,
    *phoneme_ctc_hparams.DEFAULTS,
    "activation_dtype",
)


def dtype_policy(hparams: HParams) -> str | None:
    """The Keras dtype policy for hparam `activation_dtype` (None: float32)."""
    if hparams.activation_dtype not in DTYPE_POLICIES:
        raise ValueError(
            f"hparam 'activation_dtype' must be one of {', '.join(DTYPE_POLICIES)}, "
            f"got {hparams.activation_dtype!r}."
        )
    return DTYPE_POLICIES[hparams.activation_dtype]


def _check(config: TransformerConfig) -> None:
    if config.input_modality not in INPUT_MODALITIES:
        raise ValueError(f"unknown input_modality {config.input_modality!r}; use symbol or speech.")
    if config.input_modality == "symbol" and config.input_vocab_size < 1:
        raise ValueError("input_modality 'symbol' needs input_vocab_size >= 1.")
    if config.ctc_head and config.input_modality is None:
        raise ValueError("ctc_head needs inputs: a decoder-only model has no encoder.")
    if not 0 <= config.phoneme_ctc_layer <= config.num_encoder_layers:
        raise ValueError(
            f"phoneme_ctc_layer must be 0 (none) or an encoder layer from 1 to "
            f"{config.num_encoder_layers}, got {config.phoneme_ctc_layer}."
        )
    if config.phoneme_ctc_layer and config.input_modality != "speech":
        raise ValueError(
            f"a phoneme CTC head (hparam {phoneme_ctc_hparams.WEIGHT_HPARAM} > 0) needs "
            "speech inputs."
        )
    if config.word_boundary_head and config.input_modality != "speech":
        raise ValueError(
            f"word_boundary_head needs speech inputs (hparam {WEIGHT_HPARAM} > 0 "
            "is for speech models trained on a corpus with word times)."
        )
    if config.pos not in ("timing", "none"):
        raise ValueError(f"unknown pos {config.pos!r}; use timing or none.")
    if config.self_attention_type not in SELF_ATTENTION_TYPES:
        raise ValueError(
            f"unknown self_attention_type {config.self_attention_type!r}; use "
            f"{' or '.join(SELF_ATTENTION_TYPES)}."
        )
    if config.self_attention_type == "dot_product_relative" and config.max_relative_position < 1:
        raise ValueError(
            "self_attention_type 'dot_product_relative' needs max_relative_position "
            f">= 1, got {config.max_relative_position}."
        )
    if config.use_dynamic_chunk and config.input_modality != "speech":
        raise ValueError("use_dynamic_chunk (streaming) is for speech inputs.")
    if config.use_dynamic_left_chunk and not config.use_dynamic_chunk:
        raise ValueError(
            "use_dynamic_left_chunk draws the left context of use_dynamic_chunk's "
            "chunks: set use_dynamic_chunk=True too."
        )
    if config.use_dynamic_chunk and config.self_attention_type != "dot_product":
        raise ValueError(
            "use_dynamic_chunk (streaming) needs self_attention_type 'dot_product': the "
            "streaming encoder's caches do not carry relative positions."
        )
    if config.conformer_conv_kernel and (
        config.conformer_conv_kernel < 0 or config.conformer_conv_kernel % 2 == 0
    ):
        raise ValueError(
            f"{CONV_MODULE_HPARAM} must be 0 (none) or an odd kernel width, "
            f"got {config.conformer_conv_kernel}."
        )
    if config.conformer_conv_kernel and config.input_modality is None:
        raise ValueError(f"{CONV_MODULE_HPARAM} needs inputs: a decoder-only model has no encoder.")
    if config.conformer_conv_kernel and config.use_dynamic_chunk:
        raise ValueError(
            f"{CONV_MODULE_HPARAM}={config.conformer_conv_kernel} with use_dynamic_chunk: "
            "the convolution module does not stream yet; set "
            f"{CONV_MODULE_HPARAM}=0 or use_dynamic_chunk=False."
        )
    if config.multiply_embedding_mode not in ("sqrt_depth", "none"):
        raise ValueError(
            f"unknown multiply_embedding_mode {config.multiply_embedding_mode!r}; "
            "use sqrt_depth or none."
        )
    if config.initializer not in INITIALIZERS:
        raise ValueError(
            f"unknown initializer {config.initializer!r}; use {', '.join(INITIALIZERS)}."
        )
