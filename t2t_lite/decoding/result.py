"""What every decode returns: one typed result per input.

Text search, speech transcription (whole or split at pauses), and the
streaming simulation all give a `Decoded` per input, as WeNet's searches
return one result type; the decoder command writes every output (the
hypothesis lines, beams with scores, references, word times, subtitles)
from it.
"""

from __future__ import annotations

import dataclasses

from t2t_lite.decoding.timing.subtitles import TimedWord


@dataclasses.dataclass(frozen=True)
class Decoded:
    """One input's decode.

    Attributes:
        beams: every beam's text, best first (empty for a blank input line).
        scores: each beam's score.
        words: the best beam's words with times and confidence, where the
            model can time them (a CTC head), else None.
        reference: the reference transcript or translation, where there is one.
        source: what was decoded: an audio path, an utterance id, input text.

    Example:
    >>> Decoded(("hello world", "hello word"), (-0.5, -2.0)).text
    'hello world'
    """

    beams: tuple[str, ...]
    scores: tuple[float, ...]
    words: tuple[TimedWord, ...] | None = None
    reference: str | None = None
    source: str | None = None

    @property
    def text(self) -> str:
        """The best beam's text ("" when there is none)."""
        return self.beams[0] if self.beams else ""

    @property
    def score(self) -> float:
        """The best beam's score (0 when there is none)."""
        return self.scores[0] if self.scores else 0.0

    def with_context(self, reference: str | None, source: str | None) -> Decoded:
        """A copy that names its reference and source."""
        return dataclasses.replace(self, reference=reference, source=source)


BLANK = Decoded(beams=(), scores=(), words=())  # a blank input line's answer
