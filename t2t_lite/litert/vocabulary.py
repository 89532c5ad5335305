"""Ids -> text without TensorFlow: the vocabulary asset written beside a `.tflite`.

The asset is JSON: `surfaces`, the UTF-8 bytes each id stands for (hex, one
entry per id, "" for reserved ids), as the target encoder's
`token_surfaces()` gives them, and `strip_first_space` (SentencePiece and
integer symbols carry a word's space before it, and their decoders drop the
first).

Example:
>>> vocab = Vocabulary([b"", b"", b"h", b"i"], strip_first_space=False)
>>> vocab.decode([2, 3, 1, 0, 3])  # stops at EOS (1), skips padding (0)
'hi'
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from t2t_lite.data.reserved_ids import ids_before_eos


class Vocabulary:
    """Turns token ids into text as the problem's target encoder does.

    Args:
        surfaces: the UTF-8 bytes of each id (`TextEncoder.token_surfaces()`).
        strip_first_space: drop the text's leading spaces (`TextEncoder.surfaces_lead_with_space`).
    """

    def __init__(self, surfaces: list[bytes], strip_first_space: bool):
        self.surfaces = list(surfaces)
        self.strip_first_space = strip_first_space

    @classmethod
    def from_encoder(cls, encoder) -> Vocabulary:
        """The vocabulary of a t2t-lite `TextEncoder` with `token_surfaces()`."""
        return cls(encoder.token_surfaces(), strip_first_space=encoder.surfaces_lead_with_space)

    def to_json(self) -> str:
        surfaces = [surface.hex() for surface in self.surfaces]
        return json.dumps({"surfaces": surfaces, "strip_first_space": self.strip_first_space})

    @classmethod
    def from_json(cls, text: str) -> Vocabulary:
        values = json.loads(text)
        return cls([bytes.fromhex(s) for s in values["surfaces"]], values["strip_first_space"])

    @classmethod
    def load(cls, path: str) -> Vocabulary:
        with open(path, encoding="utf-8") as handle:
            return cls.from_json(handle.read())

    def decode(self, ids: Iterable[int]) -> str:
        """Text of `ids` up to the first EOS, padding skipped.

        Invalid UTF-8 becomes U+FFFD, as the SavedModel's detokenizer does.
        """
        pieces = [self.surfaces[token] for token in ids_before_eos(ids)]
        text = b"".join(pieces).decode("utf-8", errors="replace")
        return text.lstrip(" ") if self.strip_first_space else text
