"""How a recognizer's target ids spell the word n-gram's words.

The n-gram knows words as hashes of their UTF-8 bytes (`t2t-lite-ngram`
counts byte targets: `word_hash` over byte ids). A recognizer's ids may be
bytes or pieces of words: each id's text (`TextEncoder.token_surfaces`)
says what it adds. A text beginning with a space starts a word (the byte
space itself, or SentencePiece's `▁the`), ending the one before; the rest
of the text, its body, is spelled in bytes into the word under way. So a
word has one hash however its pieces split it ("▁th" + "e" or "▁the"),
and one n-gram serves byte and SentencePiece recognizers alike.

Ids with no text (padding, unknown) spell `UNSPELLABLE`, which no word
contains: the word becomes out of vocabulary. So does a text with a
space after its start (a word boundary inside an id).

    spelling = TokenSpelling.of(encoder.token_surfaces())
    spelling.starts_word[i], spelling.body[i, : spelling.body_length[i]]
"""

from __future__ import annotations

import dataclasses

import numpy as np

from t2t_lite.data.reserved_ids import NUM_RESERVED_IDS
from t2t_lite.ngram import word_hash

# An id no word is spelled with (bytes are >= NUM_RESERVED_IDS; BOS -1, EOS -2).
UNSPELLABLE = -3
SPACE = b" "


def byte_ids(text: bytes) -> list[int]:
    """The n-gram's ids of `text`: its bytes as `ByteTextEncoder` writes them."""
    return [byte + NUM_RESERVED_IDS for byte in text]


@dataclasses.dataclass(frozen=True)
class TokenSpelling:
    """Per target id: whether it starts a word, and the bytes it spells.

    Attributes:
        starts_word: bool `[vocab]`, the id's text begins with a space.
        body: int64 `[vocab, longest]`, the n-gram ids of the text after
            that space (`UNSPELLABLE` for an id with none to give), padded.
        body_length: int64 `[vocab]`.
        start_prefix: int64 `[vocab]`, the hash of the word an id starting
            one has spelled so far (`word_hash.WORD_SEED` for a bare space).
        spaces_lead: whether words carry their space in their first id
            (pieces), so a sentence's first id starts a word with no word
            before it; with a bare space id (bytes), a leading space is an
            empty word.
    """

    starts_word: np.ndarray
    body: np.ndarray
    body_length: np.ndarray
    start_prefix: np.ndarray
    spaces_lead: bool

    @classmethod
    def of(cls, surfaces: list[bytes]) -> TokenSpelling:
        """The spelling of a vocabulary with these `token_surfaces()`."""
        starts = np.array([s.startswith(SPACE) for s in surfaces])
        bodies = []
        for surface in surfaces:
            body = surface.lstrip(SPACE)
            if SPACE in body or not surface:  # a boundary inside, or no text
                bodies.append([UNSPELLABLE])
            else:
                bodies.append(byte_ids(body))
        lengths = np.array([len(b) for b in bodies], np.int64)
        body = np.zeros([len(bodies), max(1, lengths.max(initial=0))], np.int64)
        for i, ids in enumerate(bodies):
            body[i, : len(ids)] = ids
        start_prefix = np.full(len(bodies), word_hash.WORD_SEED, np.int64)
        for depth in range(body.shape[1]):
            more = depth < lengths
            start_prefix = np.where(
                more, word_hash.extend_np(start_prefix, body[:, depth]), start_prefix
            )
        return cls(
            starts_word=starts,
            body=body,
            body_length=lengths,
            start_prefix=start_prefix,
            spaces_lead=bool(np.any(starts & (lengths > 0))),
        )

    def spellable(self, letters) -> np.ndarray:
        """bool `[vocab]`: the id spells only bytes some known word has (`letters`)."""
        known = np.isin(self.body, np.asarray(letters, np.int64))
        inside = np.arange(self.body.shape[1])[None, :] < self.body_length[:, None]
        return np.all(known | ~inside, axis=1)
