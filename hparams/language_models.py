"""Transformer language models for shallow fusion (`languagemodel_*` problems).

A decoder-only `Transformer` (the problem has no inputs), byte targets
shared with the recognizer it is fused with.
"""

from __future__ import annotations

from t2t_lite import registry
from t2t_lite.data.book_lm_problem import MAX_LINE_BYTES
from t2t_lite.hparam import HParams
from t2t_lite.hparams.transformer import set_dropout, transformer_base


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


@registry.register_hparams
def transformer_lm_books() -> HParams:
    """`transformer_lm_small` for book text: millions of sentences, each seen about once.

    No dropout (a few thousand steps see a fraction of the text once, so
    there is nothing to overfit yet), 4,096 tokens a batch, and lines up to
    the problem's `MAX_LINE_BYTES` plus EOS.
    """
    hparams = transformer_lm_small()
    set_dropout(hparams, 0.0)
    hparams.batch_size = 4096
    hparams.max_length = MAX_LINE_BYTES + 1
    return hparams
