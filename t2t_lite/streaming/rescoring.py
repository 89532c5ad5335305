"""U2's second pass: the CTC n-best rescored by the attention decoder.

At the end of an utterance, each of the CTC prefix search's hypotheses is
read by the attention decoder over the whole encoder output (teacher
forced, one batch) and ranked by the joint score of t2t-lite's beam search
(`decoding/search/beam_search.py`): `((1 - w) * attention + w * CTC) / ((5 + n) /
6) ** alpha`, with `n` the tokens plus EOS and `w` the decode hparam
`ctc_weight`.
"""

from __future__ import annotations

import numpy as np
from keras import ops

from t2t_lite.data.reserved_ids import EOS_ID
from t2t_lite.decoding.search.beam_search import length_penalty


def attention_log_probs(model, memory, hypotheses: list[list[int]]) -> np.ndarray:
    """log P(hypothesis, EOS | audio) under the attention decoder, one per hypothesis.

    Args:
        model: the `Transformer`.
        memory: float32 `[1, frames, hidden]`, the encoder output.
        hypotheses: token ids without EOS.
    """
    rows = [list(h) + [EOS_ID] for h in hypotheses]
    width = max(len(row) for row in rows)
    targets = np.zeros((len(rows), width), np.int32)
    for i, row in enumerate(rows):
        targets[i, : len(row)] = row
    tiled = ops.repeat(memory, len(rows), axis=0)
    mask = ops.ones(ops.shape(tiled)[:2])
    log_probs = np.asarray(ops.log_softmax(model.decode(targets, tiled, mask), axis=-1))
    picked = np.take_along_axis(log_probs, targets[:, :, None], axis=2)[:, :, 0]
    return np.sum(np.where(targets > 0, picked, 0.0), axis=1)


def rescore(
    model, memory, nbest: list[tuple[list[int], float]], ctc_weight: float, alpha: float
) -> tuple[list[int], float]:
    """The best of `nbest` by the joint score, and that score.

    `nbest` holds `(ids, CTC log probability)` pairs; `([], 0.0)` when there
    is nothing to rescore.
    """
    if not nbest or int(memory.shape[1]) == 0:
        return [], 0.0
    attention = attention_log_probs(model, memory, [ids for ids, _ in nbest])
    scores = [
        ((1.0 - ctc_weight) * att + ctc_weight * ctc) / float(length_penalty(len(ids) + 1, alpha))
        for (ids, ctc), att in zip(nbest, attention, strict=True)
    ]
    best = int(np.argmax(scores))
    return nbest[best][0], float(scores[best])
