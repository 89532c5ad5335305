"""Whether a run trains a phoneme CTC head, on which encoder layer, and its weight.

The one owner of hparams `phoneme_ctc_weight` and `phoneme_ctc_layer` and
of the phoneme inventory, read by the model's config (`TransformerConfig`:
the head is built), the train step (its loss is added) and the speech
input pipeline (`phoneme_targets`: the targets are looked up). No
TensorFlow here: the model's config is read without it.

The targets are CMUdict's 39 ARPAbet phonemes, stress dropped, and
Kaldi's spoken noise (`SPN`: one for each word outside the lexicon, as
Kaldi's recipes map `<UNK>`), after T2T's reserved ids: blank is the
padding id, as the character CTC head's is.
Phonemes as an auxiliary CTC target (Toshniwal et al., 2017: "Multitask
Learning with Low-Level Auxiliary Tasks for Encoder-Decoder Based Speech
Recognition") tell the encoder which sounds a word is made of, which byte
targets spell only through English orthography.
"""

from __future__ import annotations

from t2t_lite.data.reserved_ids import NUM_RESERVED_IDS
from t2t_lite.hparam import HParams

WEIGHT_HPARAM = "phoneme_ctc_weight"
LAYER_HPARAM = "phoneme_ctc_layer"
# Added after runs were saved: such a run trained no phoneme head.
DEFAULTS = {WEIGHT_HPARAM: 0.0, LAYER_HPARAM: 0}

# CMUdict's phoneme set (its cmudict.phones), stress marks dropped.
ARPABET = (
    "AA AE AH AO AW AY B CH D DH EH ER EY F G HH IH IY JH K "
    "L M N NG OW OY P R S SH T TH UH UW V W Y Z ZH"
).split()
SPOKEN_NOISE = "SPN"  # a word the lexicon does not know
PHONEMES = (*ARPABET, SPOKEN_NOISE)
PHONEME_VOCAB_SIZE = NUM_RESERVED_IDS + len(PHONEMES)


def phoneme_id(phoneme: str) -> int:
    """A CMUdict phoneme's (or `SPOKEN_NOISE`'s) target id; its stress digit, if any, is dropped.

    Example:
    >>> phoneme_id("AA1"), phoneme_id("ZH"), phoneme_id("SPN")
    (2, 40, 41)
    """
    return NUM_RESERVED_IDS + PHONEMES.index(phoneme.rstrip("012"))


def phoneme_ctc_weight(hparams: HParams) -> float:
    """The phoneme CTC loss's weight (0: no head)."""
    return float(hparams.get(WEIGHT_HPARAM, DEFAULTS[WEIGHT_HPARAM]))


def phoneme_ctc_wanted(hparams: HParams) -> bool:
    """Whether the run trains a phoneme CTC head (and its input pipeline makes targets)."""
    return phoneme_ctc_weight(hparams) > 0


def phoneme_ctc_layer(hparams: HParams, encoder_layers: int) -> int:
    """The 1-based encoder layer the phoneme head reads; 0: no head.

    Hparam `phoneme_ctc_layer` 0 means the last layer.

    Raises:
        ValueError: a layer outside the encoder, or a layer without a weight.
    """
    weight = phoneme_ctc_weight(hparams)
    layer = int(hparams.get(LAYER_HPARAM, DEFAULTS[LAYER_HPARAM]))
    if weight < 0 or not 0 <= layer <= encoder_layers:
        raise ValueError(
            f"{LAYER_HPARAM} must be an encoder layer from 1 to {encoder_layers} (0: the "
            f"last) and {WEIGHT_HPARAM} >= 0, got {layer} and {weight:g}."
        )
    if layer and not weight:
        raise ValueError(
            f"{LAYER_HPARAM}={layer} places a phoneme CTC head that nothing trains: "
            f"set {WEIGHT_HPARAM} > 0 too, or {LAYER_HPARAM}=0."
        )
    if not weight:
        return 0
    return layer or encoder_layers
