"""CTC prefix beam search, one frame at a time, carrying its beams.

    search = CtcPrefixBeamSearch(beam_size=4)
    search.advance(log_probs)          # [frames, vocab] CTC log posteriors, blank = 0
    search.best()                      # the partial transcript's ids so far
    search.nbest()                     # [(ids, log probability)], best first

The classic prefix search (Hannun et al. 2014; WeNet's streaming first
pass): each prefix keeps the log probability of the frames so far ending in
blank (`blank`) and ending in its last token (`token`); a frame extends
every prefix by blank, by a repeat of its last token (which collapses) and
by each of the frame's `beam_size` likeliest tokens, prefixes reached twice
are merged, and the `beam_size` best are kept. A prefix's score,
`logaddexp(blank, token)`, is the CTC probability of its labelling over the
frames so far, so at the end it is the full CTC score the attention
rescoring combines with.
"""

from __future__ import annotations

import numpy as np

from t2t_lite.data.reserved_ids import PAD_ID

BLANK_ID = PAD_ID  # the CTC head's blank (model.ctc_log_probs)
_NEG_INF = -np.inf


class CtcPrefixBeamSearch:
    """Incremental CTC prefix beam search (NumPy).

    Args:
        beam_size: prefixes kept after each frame, and tokens tried per frame.
    """

    def __init__(self, beam_size: int):
        if beam_size < 1:
            raise ValueError(f"beam_size must be >= 1, got {beam_size}.")
        self.beam_size = beam_size
        # prefix (a tuple of ids) -> [log P(.. blank), log P(.. its last token)]
        self.beams: dict[tuple, list] = {(): [0.0, _NEG_INF]}
        self.frames = 0

    def advance(self, log_probs: np.ndarray) -> None:
        """Takes `[frames, vocab]` CTC log posteriors (blank = `BLANK_ID`)."""
        for frame in np.asarray(log_probs, np.float64):
            self._step(frame)
            self.frames += 1

    def _step(self, frame: np.ndarray) -> None:
        merged: dict[tuple, list] = {}

        def add(prefix, slot, value):
            if value == _NEG_INF:  # a path that cannot exist (a repeat with no blank yet)
                return
            scores = merged.setdefault(prefix, [_NEG_INF, _NEG_INF])
            scores[slot] = np.logaddexp(scores[slot], value)

        tokens = [int(t) for t in np.argsort(frame)[::-1][: self.beam_size] if t != BLANK_ID]
        for prefix, (blank, token) in self.beams.items():
            total = np.logaddexp(blank, token)
            add(prefix, 0, total + frame[BLANK_ID])
            last = prefix[-1] if prefix else None
            if last is not None:  # the last token again, with no blank between: collapses
                add(prefix, 1, token + frame[last])
            for t in tokens:
                # A repeat needs a blank between (the blank path); else either path.
                source = blank if t == last else total
                add(prefix + (t,), 1, source + frame[t])
        ranked = sorted(merged.items(), key=lambda item: -np.logaddexp(*item[1]))
        self.beams = dict(ranked[: self.beam_size])

    def nbest(self) -> list[tuple[list[int], float]]:
        """Every kept prefix and its CTC log probability, best first."""
        scored = [(list(prefix), float(np.logaddexp(*s))) for prefix, s in self.beams.items()]
        return sorted(scored, key=lambda item: -item[1])

    def best(self) -> list[int]:
        """The best prefix's ids (the partial transcript)."""
        return self.nbest()[0][0]
