"""Transformer language models for shallow fusion (`languagemodel_*` problems).

A decoder-only `Transformer` (the problem has no inputs), byte targets
shared with the recognizer it is fused with.
"""

from __future__ import annotations

from t2t_lite import registry
from t2t_lite.hparam import HParams
from t2t_lite.hparams.transformer import transformer_base


@registry.register_hparams
def transformer_lm_small() -> HParams:
    """A 3-layer, 256-wide LM for a few thousand transcripts on two CPU cores.

    Heavier dropout than T2T's sets (a small corpus's LM overfits first), and
    no label smoothing: fusion adds the LM's log probabilities, which label
    smoothing would flatten towards uniform.
    """
    hparams = transformer_base()
    return hparams.parse(
        "num_hidden_layers=3,hidden_size=256,filter_size=1024,num_heads=4,batch_size=2048,"
        "layer_prepostprocess_dropout=0.3,label_smoothing=0.0,learning_rate_warmup_steps=1000"
    )
