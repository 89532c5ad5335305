"""The decode settings (`--decode_hparams`), typed and checked once.

`DecodeConfig.parse("beam_size=4,alpha=0.6")` reads T2T's override text
over the defaults below; `config.for_model(model)` settles what depends on
the model (the CTC share) and refuses what the model cannot do. Every
decode path (the decoder, the trainer's eval decoding, the transcriber,
streaming, the SavedModel and the `.tflite`) takes the resulting config
whole, as the model takes its `TransformerConfig`.
"""

from __future__ import annotations

import dataclasses

from t2t_lite.decoding.endpoint_hparams import ENDPOINT_RULES
from t2t_lite.hparam import HParams

# The CTC share of joint decoding for a model with a CTC head, unless the
# decode settings say otherwise: ESPnet's LibriSpeech recipes decode with 0.3.
DEFAULT_CTC_WEIGHT = 0.3
MODEL_CTC_WEIGHT = -1.0  # ctc_weight's "the model's default" (see `for_model`)
RUN_CALIBRATION = 0.0  # word_confidence_exponent's "the run's calibration"
STREAM_FINALS = ("search", "rescore")
# A hotword's bonus per matched byte (`hotword_boost`): on speechocean762's
# test speakers 0.5 leaves the WER of utterances without a listed word within
# 0.05 points; 0.75 is at the edge (+0.19) with 2.6 times the false alarms
# (docs/benchmarks.md, "Hotwords").
DEFAULT_BOOST = 0.5
# The endpoint rules' seconds by decode hparam (`streaming/endpoint.py` applies them).
_ENDPOINT_DEFAULTS = {hparam: default for hparam, _, default in ENDPOINT_RULES}


def has_ctc_head(model) -> bool:
    """Whether `model` was built with a CTC head (joint decoding, word times)."""
    return getattr(model, "ctc_projection", None) is not None


@dataclasses.dataclass(frozen=True)
class DecodeConfig:
    """How to decode: T2T's decode hparams and t2t-lite's additions.

    Attributes:
        beam_size: beams kept (1: greedy).
        alpha: T2T's length penalty exponent.
        extra_length: decode steps past the encoder's length (T2T's).
        batch_size: examples decoded at once by the decoder command.
        return_beams: write every beam, not only the best.
        max_decode_length: the longest output; 0: the model's
            `max_target_seq_length`, else 256.
        ctc_weight: the CTC share of each extension's score: 0 attention
            only, 1 CTC greedy, between them joint CTC/attention search;
            `MODEL_CTC_WEIGHT` until `for_model` makes it the model's.
        silence_dbfs: audio quieter than this RMS level (dB full scale) is
            silence and decodes to "".
        segment_seconds: a longer recording is split at pauses into pieces
            this long at most; 0: the training limit.
        chunk_frames: > 0: streaming, in chunks of this many 40 ms encoder
            frames (the decoder simulates it over whole recordings).
        left_chunks: > 0: a streamed encoder frame sees at most this many
            chunks before its own (WeNet's `num_decoding_left_chunks`), so
            the encoder's caches stop growing; 0: every one.
        stream_final: a streamed utterance's final: "search", the joint
            beam search over the streamed encoder output, or "rescore", U2's
            attention rescoring of the CTC prefix search's n-best.
        lm_dir: a language model for shallow fusion: a t2t-lite-trainer
            output_dir, or a word n-gram's t2t-lite-ngram output_dir
            (`search/language_model.py`).
        lm_weight: the LM's share: `lm_weight * log P_LM` is added to each
            extension's score; 0 leaves the search as it is without an LM.
        phoneme_weight: > 0: the beams are re-ranked by their score plus this
            times the phoneme CTC head's log probability of their words'
            CMUdict pronunciations (`pronunciation_rescorer.py`); needs a
            model with a phoneme head on its last encoder layer, and CMUdict.
        hotwords_file: a phrase list to bias the search towards, one phrase
            per line, `PHRASE :BOOST` to set one's boost (`phrase_bias.py`).
        hotword_boost: the bonus per matched token of a phrase without one.
        endpoint_no_speech_seconds, endpoint_silence_seconds,
            endpoint_max_utterance_seconds: where a stream's utterances end
            (`streaming/endpoint.py`, WeNet's rules).
        word_confidence_exponent: word confidences are raised to this power
            (`timing/word_confidence.py`); `RUN_CALIBRATION` (0): the run's
            calibration for its checkpoint, 1 (raw) where it has none.

    Example:
    >>> config = DecodeConfig.parse("beam_size=2,ctc_weight=0.5")
    >>> config.beam_size, config.ctc_weight, config.alpha
    (2, 0.5, 0.6)
    """

    beam_size: int = 4
    alpha: float = 0.6
    extra_length: int = 50
    batch_size: int = 16
    return_beams: bool = False
    max_decode_length: int = 0
    ctc_weight: float = MODEL_CTC_WEIGHT
    silence_dbfs: float = -60.0
    segment_seconds: float = 0.0
    chunk_frames: int = 0
    left_chunks: int = 0
    stream_final: str = "search"
    lm_dir: str = ""
    lm_weight: float = 0.0
    phoneme_weight: float = 0.0
    hotwords_file: str = ""
    hotword_boost: float = DEFAULT_BOOST
    word_confidence_exponent: float = RUN_CALIBRATION
    endpoint_no_speech_seconds: float = _ENDPOINT_DEFAULTS["endpoint_no_speech_seconds"]
    endpoint_silence_seconds: float = _ENDPOINT_DEFAULTS["endpoint_silence_seconds"]
    endpoint_max_utterance_seconds: float = _ENDPOINT_DEFAULTS["endpoint_max_utterance_seconds"]

    def __post_init__(self):
        at_least = {
            "beam_size": 1,
            "batch_size": 1,
            "extra_length": 0,
            "max_decode_length": 0,
            "segment_seconds": 0,
            "chunk_frames": 0,
            "left_chunks": 0,
        }
        for name, low in at_least.items():
            if getattr(self, name) < low:
                raise ValueError(
                    f"decode hparam {name} must be >= {low}, got {getattr(self, name)}."
                )
        if self.ctc_weight != MODEL_CTC_WEIGHT and not 0.0 <= self.ctc_weight <= 1.0:
            raise ValueError(f"decode hparam ctc_weight must be in [0, 1], got {self.ctc_weight}.")
        if self.lm_weight < 0:
            raise ValueError(f"decode hparam lm_weight must be >= 0, got {self.lm_weight}.")
        if self.lm_weight > 0 and not self.lm_dir:
            raise ValueError(
                f"decode hparam lm_weight={self.lm_weight} needs lm_dir, the output_dir of "
                "a trained language model (t2t-lite-trainer --problem=languagemodel_...)."
            )
        if self.phoneme_weight < 0:
            raise ValueError(
                f"decode hparam phoneme_weight must be >= 0, got {self.phoneme_weight}."
            )
        if self.word_confidence_exponent < 0:
            raise ValueError(
                "decode hparam word_confidence_exponent must be > 0 (or 0: the run's "
                f"calibration), got {self.word_confidence_exponent}."
            )
        for name in _ENDPOINT_DEFAULTS:
            if not getattr(self, name) > 0:
                raise ValueError(
                    f"decode hparam {name} must be > 0 seconds, got {getattr(self, name)}."
                )
        if not self.hotword_boost > 0:
            raise ValueError(f"decode hparam hotword_boost must be > 0, got {self.hotword_boost}.")
        if self.stream_final not in STREAM_FINALS:
            raise ValueError(
                f"decode hparam stream_final must be one of {', '.join(STREAM_FINALS)}, "
                f"got {self.stream_final!r}."
            )

    @classmethod
    def parse(cls, overrides: str = "", base: DecodeConfig | None = None) -> DecodeConfig:
        """`base` (else the defaults) with T2T's override text ("a=1,b=2") applied.

        Raises:
            ValueError: an unknown name, a value of the wrong type, or a
                value out of range (one sentence naming it).
        """
        return cls(**HParams(**(base or cls()).values()).parse(overrides).values())

    @property
    def confidence_exponent(self) -> float:
        """The power word confidences are raised to.

        1 (raw) while the run's calibration is not resolved
        (`word_confidence.with_run_calibration`).
        """
        return self.word_confidence_exponent if self.word_confidence_exponent > 0 else 1.0

    def replace(self, **changes) -> DecodeConfig:
        """A copy with `changes` applied (and checked)."""
        return dataclasses.replace(self, **changes)

    def values(self) -> dict:
        """The settings as a plain dict (an export's metadata)."""
        return dataclasses.asdict(self)

    def for_model(self, model) -> DecodeConfig:
        """The settings for `model`, checked against what the model can do.

        An unset `ctc_weight` is made the model's (`DEFAULT_CTC_WEIGHT` with a
        CTC head, 0 without).

        Raises:
            ValueError: settings the model cannot honour.
        """
        if model.input_modality is None:
            raise ValueError("decoding needs a problem with inputs (a language model has none).")
        config = self
        if config.ctc_weight == MODEL_CTC_WEIGHT:
            config = config.replace(ctc_weight=DEFAULT_CTC_WEIGHT if has_ctc_head(model) else 0.0)
        if config.ctc_weight > 0 and not has_ctc_head(model):
            raise ValueError(
                f"decode hparam ctc_weight={config.ctc_weight} needs a model with a CTC head; "
                "this one was trained without one (train with hparam ctc_loss_weight > 0), "
                "so decode with ctc_weight=0."
            )
        for name in ("lm_weight", "phoneme_weight"):
            if getattr(config, name) > 0 and config.ctc_weight >= 1.0:
                raise ValueError(
                    f"decode hparam {name} needs a beam search; ctc_weight=1 is CTC greedy "
                    "decoding, which has none (use ctc_weight < 1)."
                )
        if config.phoneme_weight > 0 and not model.hears_phonemes_at_the_end():
            raise ValueError(
                f"decode hparam phoneme_weight={config.phoneme_weight} needs a model with a "
                "phoneme CTC head on its last encoder layer (trained with hparams "
                "phoneme_ctc_weight > 0 and phoneme_ctc_layer=0); decode this one with "
                "phoneme_weight=0."
            )
        return config
